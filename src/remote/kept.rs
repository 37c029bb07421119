//! The kept answers under idempotency keys (docs/remote.md): a write
//! made across the link (send, ack, status append, board claim) carries a
//! key, and the far tool keeps, per task, each key it served with the
//! answer it printed. A call whose key is already held prints that answer
//! again and writes nothing, so a retry after a dropped connection costs
//! nothing but the round trip.
//!
//! `state/<id>.seen` holds one line per key: `<key> <exit code>
//! <request> <stdout as a JSON string>`, `<request>` being the
//! fingerprint of what the call asked for ([`Request`]: the tool, the task
//! and the request's content, SHA-256 in hex). A key is bound to its
//! request: the same key with the same request prints the kept answer
//! again; the same key with another request is refused (exit 2) and does
//! nothing. A line kept without a fingerprint (by an older release) cannot
//! be matched to any request and is refused the same way; a line whose
//! exit code is not a documented one (docs/spec/cli.md#exit-codes), whose fingerprint or
//! answer does not parse, is a corrupt record: refused with exit 3, the
//! call not redone (it may have written already). The check, the write
//! and the line are made under `state/.seen-<id>.lock`, so two attempts
//! with one key never both write. The board, which is the home's and no
//! task's, keeps its keys the same way in `state/.board.seen` under
//! `state/.seen-board.lock` (dot files: no task id starts with a dot, so
//! neither is a task's). The file is kept small: past [`MAX_BYTES`] its
//! older half is dropped (a retry comes seconds after its first attempt,
//! not thousands of writes later).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::fsx::{self, LockGuard};
use crate::home::Home;
use crate::task_id::TaskId;

/// Longest key accepted.
pub const MAX_KEY: usize = 128;

/// Size past which the older half of the keys is dropped.
const MAX_BYTES: usize = 64 * 1024;

/// Refuses (exit 2) a key that is not 1–128 bytes of `[A-Za-z0-9._-]`;
/// the error quotes a bounded prefix of it.
pub fn validate(key: &str) -> Result<()> {
    let ok = !key.is_empty()
        && key.len() <= MAX_KEY
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "malformed idempotency key {} (1-{MAX_KEY} letters, digits, '.', '_', '-')",
            crate::error::quoted(key)
        )))
    }
}

/// What a keyed call asks for, as a fingerprint kept beside its answer:
/// the tool, the task (or `board`) and the request's content (body,
/// record numbers, line, verb, flags that change what is done or printed),
/// each part length-prefixed, hashed with SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request(String);

impl Request {
    /// The fingerprint of `tool` acting on `subject` with `parts`.
    pub fn new(tool: &str, subject: &str, parts: &[&[u8]]) -> Request {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        for p in [tool.as_bytes(), subject.as_bytes()]
            .into_iter()
            .chain(parts.iter().copied())
        {
            h.update((p.len() as u64).to_be_bytes());
            h.update(p);
        }
        let mut hex = String::with_capacity(64);
        for b in h.finalize() {
            hex.push_str(&format!("{b:02x}"));
        }
        Request(hex)
    }

    fn hex(&self) -> &str {
        &self.0
    }
}

/// What a key lookup found.
pub enum Lookup {
    /// The key was served before for this same request: its answer, to
    /// give again.
    Seen(Answer),
    /// A new key: do the write, then [`Fresh::remember`] its answer. The
    /// lock is held until then.
    Fresh(Fresh),
}

/// What a write printed on stdout, and its exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub code: u8,
    pub stdout: String,
}

/// A key not yet served, with the task's key lock held.
pub struct Fresh {
    _guard: LockGuard,
    path: PathBuf,
    lock: PathBuf,
    key: String,
    request: Request,
}

/// Looks `key` up for task `id`, taking the task's key lock. A key kept
/// for another request is refused (exit 2), a corrupt kept answer too
/// (exit 3).
pub fn lookup(home: &Home, id: &TaskId, key: &str, request: &Request) -> Result<Lookup> {
    lookup_at(home, home.seen_lock(id), home.seen_keys(id), key, request)
}

/// Looks `key` up among the board's keys, taking the board's key lock
/// (taken before the board lock, never after it).
pub fn lookup_board(home: &Home, key: &str, request: &Request) -> Result<Lookup> {
    lookup_at(
        home,
        home.board_seen_lock(),
        home.board_seen_keys(),
        key,
        request,
    )
}

fn lookup_at(
    home: &Home,
    lock: PathBuf,
    path: PathBuf,
    key: &str,
    request: &Request,
) -> Result<Lookup> {
    validate(key)?;
    fsx::ensure_dir(&home.state_dir())?;
    let guard = fsx::lock(&lock, fsx::LOCK_WAIT)?;
    if let Some(answer) = find_in(&path, key, request)? {
        return Ok(Lookup::Seen(answer));
    }
    Ok(Lookup::Fresh(Fresh {
        _guard: guard,
        path,
        lock,
        key: key.to_string(),
        request: request.clone(),
    }))
}

/// The answer recorded for `key` in the key file at `path` (another
/// task's, or an archived one), if any, checked against `request` as a
/// lookup checks it; takes no lock.
pub fn find_in(path: &Path, key: &str, request: &Request) -> Result<Option<Answer>> {
    fsx::refuse_symlink(path)?;
    let Some(bytes) = fsx::read_optional(path)? else {
        return Ok(None);
    };
    let Some(kept) = find(&bytes, key).map_err(|why| corrupt(path, key, &why))? else {
        return Ok(None);
    };
    match kept.request.as_deref() {
        Some(h) if h == request.hex() => Ok(Some(kept.answer)),
        Some(_) => Err(Error::usage(format!(
            "idempotency key {} was used for another request; nothing was done",
            crate::error::quoted(key)
        ))),
        None => Err(Error::usage(format!(
            "idempotency key {} was kept by an older release without its request, so this call cannot be matched to it; nothing was done (use a new key)",
            crate::error::quoted(key)
        ))),
    }
}

/// Exit 3 for a kept answer that does not parse.
fn corrupt(path: &Path, key: &str, why: &str) -> Error {
    Error::io(
        "replay of an idempotency key",
        path,
        std::io::Error::other(format!(
            "the answer kept for key {} is corrupt ({why}); nothing was done",
            crate::error::quoted(key)
        )),
    )
}

/// One kept line: the request's fingerprint (none on a line an older
/// release wrote) and the answer.
struct Kept {
    request: Option<String>,
    answer: Answer,
}

/// The last complete line holding `key`, parsed; a line that holds it
/// but does not parse is `Err(why)`.
fn find(bytes: &[u8], key: &str) -> std::result::Result<Option<Kept>, String> {
    for line in fsx::complete_lines(bytes).split(|&b| b == b'\n').rev() {
        let Some(rest) = line
            .strip_prefix(key.as_bytes())
            .and_then(|r| r.strip_prefix(b" "))
        else {
            continue;
        };
        let rest = std::str::from_utf8(rest).map_err(|_| "not UTF-8".to_string())?;
        return parse(rest).map(Some);
    }
    Ok(None)
}

/// `<code> [<request>] <stdout as JSON>`.
fn parse(rest: &str) -> std::result::Result<Kept, String> {
    let (code, rest) = rest.split_once(' ').ok_or("no answer")?;
    let code: u8 = code
        .parse()
        .map_err(|_| format!("exit code {}", crate::error::quoted(code)))?;
    if !super::documented_exit(i32::from(code)) {
        return Err(format!("exit code {code}, which no tool of ours gives"));
    }
    let (request, json) = if rest.starts_with('"') {
        (None, rest)
    } else {
        let (h, json) = rest.split_once(' ').ok_or("no answer")?;
        if h.len() != 64 || !h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err("a malformed request fingerprint".into());
        }
        (Some(h.to_string()), json)
    };
    let stdout: String =
        serde_json::from_str(json).map_err(|_| "an answer that is not a JSON string")?;
    Ok(Kept {
        request,
        answer: Answer { code, stdout },
    })
}

impl Fresh {
    /// Records the key with the answer the write printed; then releases
    /// the lock.
    pub fn remember(self, answer: &Answer) -> Result<()> {
        let path = self.path.clone();
        self.remember_at(&path, answer)
    }

    /// [`Fresh::remember`] into the key file at `path` instead of the
    /// task's own (a teardown's, which has just archived that file).
    pub fn remember_at(self, path: &Path, answer: &Answer) -> Result<()> {
        keep(path, &self.key, &self.request, answer)
    }

    /// What the write noted under `sub` beside this key (a keyed
    /// dispatch's note of one task), if anything. Sub-keys are
    /// `<key>#<sub>`: `#` is no key's, so no caller's key is one. A note
    /// another request made under this key is refused as the key is.
    pub fn noted(&self, sub: &str) -> Result<Option<Answer>> {
        find_in(&self.path, &format!("{}#{sub}", self.key), &self.request)
    }

    /// Notes `answer` under `sub` beside this key, the lock still held
    /// (the last note of a sub-key is the one [`Fresh::noted`] gives).
    pub fn note(&self, sub: &str, answer: &Answer) -> Result<()> {
        keep(
            &self.path,
            &format!("{}#{sub}", self.key),
            &self.request,
            answer,
        )
    }

    /// Records the key with a provisional answer (the record is written,
    /// a slow part is still to come) and releases the lock, so a retry
    /// arriving meanwhile gets that answer at once instead of waiting
    /// for the lock. [`Held::remember`] then records the final answer.
    pub fn hold(self, provisional: &Answer) -> Result<Held> {
        keep(&self.path, &self.key, &self.request, provisional)?;
        Ok(Held {
            path: self.path,
            lock: self.lock,
            key: self.key,
            request: self.request,
        })
    }
}

/// A key whose provisional answer is recorded, the lock released.
pub struct Held {
    path: PathBuf,
    lock: PathBuf,
    key: String,
    request: Request,
}

impl Held {
    /// Records the final answer under the key lock it was looked up
    /// under; the last line of a key is the one a lookup gives.
    pub fn remember(self, _home: &Home, _id: &TaskId, answer: &Answer) -> Result<()> {
        self.finish(answer)
    }

    /// [`Held::remember`] for a key that is no task's (the board's).
    pub fn finish(self, answer: &Answer) -> Result<()> {
        let _guard = fsx::lock(&self.lock, fsx::LOCK_WAIT)?;
        keep(&self.path, &self.key, &self.request, answer)
    }
}

/// Appends `<key> <code> <request> <stdout as JSON>` to `path`, dropping
/// the older half of the file first when the line would take it past
/// [`MAX_BYTES`].
fn keep(path: &Path, key: &str, request: &Request, answer: &Answer) -> Result<()> {
    let json = serde_json::to_string(&answer.stdout).map_err(|e| Error::External {
        program: "serde_json".into(),
        msg: e.to_string(),
    })?;
    let line = format!("{key} {} {} {json}\n", answer.code, request.hex());
    let old = fsx::read_optional(path)?.unwrap_or_default();
    if old.len() + line.len() > MAX_BYTES {
        let kept = fsx::complete_lines(&old);
        let half = kept.len() / 2;
        let cut = kept[half..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(kept.len(), |i| half + i + 1);
        let mut bytes = kept[cut..].to_vec();
        bytes.extend_from_slice(line.as_bytes());
        return fsx::atomic_write(path, &bytes);
    }
    fsx::append_line(path, line.as_bytes())
}

#[cfg(test)]
#[path = "kept_tests.rs"]
mod tests;

//! The far side's memory of idempotency keys (docs/remote.md): a write
//! made across the link (send, ack, status append, board claim) carries a
//! key, and the far tool keeps, per task, each key it served with the
//! answer it printed. A call whose key is already held prints that answer
//! again and writes nothing, so a retry after a dropped connection costs
//! nothing but the round trip.
//!
//! `state/<id>.seen` holds one line per key: `<key> <exit code> <stdout
//! as a JSON string>`. The check, the write and the line are made under
//! `state/.seen-<id>.lock`, so two attempts with one key never both
//! write. The board, which is the home's and no task's, keeps its keys
//! the same way in `state/.board.seen` under `state/.seen-board.lock`
//! (dot files: no task id starts with a dot, so neither is a task's). The file is kept small: past [`MAX_BYTES`] its older half is
//! dropped (a retry comes seconds after its first attempt, not thousands
//! of writes later).

use crate::error::{Error, Result};
use crate::fsx::{self, LockGuard};
use crate::home::Home;
use crate::task_id::TaskId;

/// Longest key accepted.
pub const MAX_KEY: usize = 128;

/// Size past which the older half of the keys is dropped.
const MAX_BYTES: usize = 64 * 1024;

/// Refuses (exit 2) a key that is not 1–128 bytes of `[A-Za-z0-9._-]`.
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
            "malformed idempotency key {key:?} (1-{MAX_KEY} letters, digits, '.', '_', '-')"
        )))
    }
}

/// What a key lookup found.
pub enum Lookup {
    /// The key was served before: its answer, to give again.
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

impl Answer {
    /// Prints the answer again; its exit code is the caller's.
    pub fn replay(&self) -> Result<u8> {
        if !self.stdout.is_empty() {
            crate::output::out_block(&self.stdout)?;
        }
        Ok(self.code)
    }
}

/// A key not yet served, with the task's key lock held.
pub struct Fresh {
    _guard: LockGuard,
    path: std::path::PathBuf,
    lock: std::path::PathBuf,
    key: String,
}

/// Looks `key` up for task `id`, taking the task's key lock.
pub fn lookup(home: &Home, id: &TaskId, key: &str) -> Result<Lookup> {
    lookup_at(home, home.seen_lock(id), home.seen_keys(id), key)
}

/// Looks `key` up among the board's keys, taking the board's key lock
/// (taken before the board lock, never after it).
pub fn lookup_board(home: &Home, key: &str) -> Result<Lookup> {
    lookup_at(home, home.board_seen_lock(), home.board_seen_keys(), key)
}

fn lookup_at(
    home: &Home,
    lock: std::path::PathBuf,
    path: std::path::PathBuf,
    key: &str,
) -> Result<Lookup> {
    validate(key)?;
    fsx::ensure_dir(&home.state_dir())?;
    let guard = fsx::lock(&lock, fsx::LOCK_WAIT)?;
    fsx::refuse_symlink(&path)?;
    let bytes = fsx::read_optional(&path)?.unwrap_or_default();
    if let Some(answer) = find(&bytes, key) {
        return Ok(Lookup::Seen(answer));
    }
    Ok(Lookup::Fresh(Fresh {
        _guard: guard,
        path,
        lock,
        key: key.to_string(),
    }))
}

/// The answer recorded for `key` in the key file at `path` (another
/// task's, or an archived one), if any; takes no lock.
pub fn find_in(path: &std::path::Path, key: &str) -> Result<Option<Answer>> {
    fsx::refuse_symlink(path)?;
    Ok(fsx::read_optional(path)?.and_then(|b| find(&b, key)))
}

/// The answer recorded for `key`, if a complete line holds it.
fn find(bytes: &[u8], key: &str) -> Option<Answer> {
    fsx::complete_lines(bytes)
        .split(|&b| b == b'\n')
        .rev()
        .find_map(|line| {
            let line = std::str::from_utf8(line).ok()?;
            let (k, rest) = line.split_once(' ')?;
            if k != key {
                return None;
            }
            let (code, stdout) = rest.split_once(' ')?;
            Some(Answer {
                code: code.parse().ok()?,
                stdout: serde_json::from_str(stdout).ok()?,
            })
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
    pub fn remember_at(self, path: &std::path::Path, answer: &Answer) -> Result<()> {
        keep(path, &self.key, answer)
    }

    /// What the write noted under `sub` beside this key (a keyed
    /// dispatch's note of one task), if anything. Sub-keys are
    /// `<key>#<sub>`: `#` is no key's, so no caller's key is one.
    pub fn noted(&self, sub: &str) -> Result<Option<Answer>> {
        find_in(&self.path, &format!("{}#{sub}", self.key))
    }

    /// Notes `answer` under `sub` beside this key, the lock still held
    /// (the last note of a sub-key is the one [`Fresh::noted`] gives).
    pub fn note(&self, sub: &str, answer: &Answer) -> Result<()> {
        keep(&self.path, &format!("{}#{sub}", self.key), answer)
    }

    /// Records the key with a provisional answer (the record is written,
    /// a slow part is still to come) and releases the lock, so a retry
    /// arriving meanwhile gets that answer at once instead of waiting
    /// for the lock. [`Held::remember`] then records the final answer.
    pub fn hold(self, provisional: &Answer) -> Result<Held> {
        keep(&self.path, &self.key, provisional)?;
        Ok(Held {
            path: self.path,
            lock: self.lock,
            key: self.key,
        })
    }
}

/// A key whose provisional answer is recorded, the lock released.
pub struct Held {
    path: std::path::PathBuf,
    lock: std::path::PathBuf,
    key: String,
}

impl Held {
    /// Records the final answer under the key lock it was looked up
    /// under; the last line of a key is the one a lookup gives.
    pub fn remember(self, _home: &Home, _id: &TaskId, answer: &Answer) -> Result<()> {
        let _guard = fsx::lock(&self.lock, fsx::LOCK_WAIT)?;
        keep(&self.path, &self.key, answer)
    }
}

impl Held {
    /// [`Held::remember`] for a key that is no task's (the board's).
    pub fn finish(self, answer: &Answer) -> Result<()> {
        let _guard = fsx::lock(&self.lock, fsx::LOCK_WAIT)?;
        keep(&self.path, &self.key, answer)
    }
}

/// Appends `<key> <code> <stdout as JSON>` to `path`, dropping the older
/// half of the file first when the line would take it past [`MAX_BYTES`].
fn keep(path: &std::path::Path, key: &str, answer: &Answer) -> Result<()> {
    let json = serde_json::to_string(&answer.stdout).map_err(|e| Error::External {
        program: "serde_json".into(),
        msg: e.to_string(),
    })?;
    let line = format!("{key} {} {json}\n", answer.code);
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
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Home, TaskId) {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        (d, home, TaskId::parse("t").unwrap())
    }

    #[test]
    fn a_key_is_fresh_once_then_returns_its_answer() {
        let (_d, home, id) = setup();
        let Lookup::Fresh(f) = lookup(&home, &id, "cap-t-1-2-0").unwrap() else {
            panic!("a new key is fresh");
        };
        let a = Answer {
            code: 1,
            stdout: "queued t 001.msg\n\"x\" y\n".into(),
        };
        f.remember(&a).unwrap();
        match lookup(&home, &id, "cap-t-1-2-0").unwrap() {
            Lookup::Seen(got) => assert_eq!(got, a),
            Lookup::Fresh(_) => panic!("a served key is seen"),
        }
        // An unanswered lookup leaves nothing behind: the key stays fresh.
        assert!(matches!(
            lookup(&home, &id, "other").unwrap(),
            Lookup::Fresh(_)
        ));
        assert!(matches!(
            lookup(&home, &id, "other").unwrap(),
            Lookup::Fresh(_)
        ));
    }

    #[test]
    fn a_held_key_answers_provisionally_without_its_lock_then_finally() {
        let (_d, home, id) = setup();
        let Lookup::Fresh(f) = lookup(&home, &id, "k").unwrap() else {
            panic!("a new key is fresh");
        };
        let first = Answer {
            code: 0,
            stdout: "queued t 001.msg \u{b7} doorbell ringing\n".into(),
        };
        let held = f.hold(&first).unwrap();
        // The lock is free: a retry gets the provisional answer at once.
        drop(fsx::lock(&home.seen_lock(&id), std::time::Duration::ZERO).unwrap());
        match lookup(&home, &id, "k").unwrap() {
            Lookup::Seen(got) => assert_eq!(got, first),
            Lookup::Fresh(_) => panic!("a held key is seen"),
        }
        let last = Answer {
            code: 0,
            stdout: "queued t 001.msg \u{b7} doorbell rang\n".into(),
        };
        held.remember(&home, &id, &last).unwrap();
        match lookup(&home, &id, "k").unwrap() {
            Lookup::Seen(got) => assert_eq!(got, last),
            Lookup::Fresh(_) => panic!("a served key is seen"),
        }
    }

    #[test]
    fn the_boards_keys_are_not_a_tasks() {
        let (_d, home, id) = setup();
        let Lookup::Fresh(f) = lookup_board(&home, "k").unwrap() else {
            panic!("a new key is fresh");
        };
        let a = Answer {
            code: 0,
            stdout: "T-001 in_progress\n".into(),
        };
        f.remember(&a).unwrap();
        match lookup_board(&home, "k").unwrap() {
            Lookup::Seen(got) => assert_eq!(got, a),
            Lookup::Fresh(_) => panic!("a served key is seen"),
        }
        // A task's keys are its own.
        assert!(matches!(lookup(&home, &id, "k").unwrap(), Lookup::Fresh(_)));
        assert!(home.state_dir().join(".board.seen").is_file());
    }

    #[test]
    fn notes_beside_a_key_are_its_own_and_the_last_one_counts() {
        let (_d, home, _id) = setup();
        let Lookup::Fresh(f) = lookup_board(&home, "k").unwrap() else {
            panic!("a new key is fresh");
        };
        assert_eq!(f.noted("T-001").unwrap(), None);
        let note = |s: &str| Answer {
            code: 0,
            stdout: s.into(),
        };
        f.note("T-001", &note("one")).unwrap();
        f.note("T-001", &note("two")).unwrap();
        assert_eq!(f.noted("T-001").unwrap(), Some(note("two")));
        assert_eq!(f.noted("T-002").unwrap(), None);
        // A note is not the key's answer: the key is still fresh.
        drop(f);
        let Lookup::Fresh(f) = lookup_board(&home, "k").unwrap() else {
            panic!("a noted key is still fresh");
        };
        assert_eq!(f.noted("T-001").unwrap(), Some(note("two")));
        let held = f.hold(&note("ringing")).unwrap();
        held.finish(&note("rang")).unwrap();
        match lookup_board(&home, "k").unwrap() {
            Lookup::Seen(got) => assert_eq!(got, note("rang")),
            Lookup::Fresh(_) => panic!("a served key is seen"),
        }
    }

    #[test]
    fn malformed_keys_are_usage_errors() {
        let (_d, home, id) = setup();
        for bad in ["", "a b", "a/b", "k\n", &"x".repeat(129)] {
            let Err(e) = lookup(&home, &id, bad) else {
                panic!("{bad:?} accepted");
            };
            assert_eq!(e.exit_code(), 2, "{bad:?}");
        }
        validate(&"x".repeat(128)).unwrap();
    }

    #[test]
    fn the_file_stays_bounded_and_keeps_the_newest_keys() {
        let (_d, home, id) = setup();
        let answer = Answer {
            code: 0,
            stdout: "a".repeat(200),
        };
        for n in 0..1000 {
            let Lookup::Fresh(f) = lookup(&home, &id, &format!("k{n}")).unwrap() else {
                panic!("k{n} seen before");
            };
            f.remember(&answer).unwrap();
        }
        let len = std::fs::metadata(home.seen_keys(&id)).unwrap().len();
        assert!(len <= MAX_BYTES as u64, "{len}");
        assert!(matches!(
            lookup(&home, &id, "k999").unwrap(),
            Lookup::Seen(_)
        ));
        assert!(matches!(
            lookup(&home, &id, "k0").unwrap(),
            Lookup::Fresh(_)
        ));
    }
}

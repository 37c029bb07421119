//! The idempotency-key dance, written once: a keyed write looks its key
//! up (a key served before gives the kept report again and writes
//! nothing), does the write, and keeps its *report* under the key
//! ([`crate::remote::kept`] holds the file, the lock and the request's
//! fingerprint). A write whose slow part comes after the record (a
//! doorbell) keeps a provisional report first and releases the key's
//! lock, so a retry arriving meanwhile is answered at once.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};
use crate::home::Home;
use crate::remote::kept::{self, Answer, Fresh, Held, Lookup, Request};
use crate::task_id::TaskId;

pub use crate::remote::kept::validate;

/// Whose keys a write is kept under.
#[derive(Debug, Clone, Copy)]
pub enum Keys<'a> {
    /// A task's (`state/<id>.seen`).
    Task(&'a TaskId),
    /// The home's board's (`state/.board.seen`).
    Board,
}

/// The keeping of one keyed write's report, handed to the write.
pub struct Keeper {
    state: State,
}

enum State {
    None,
    Fresh(Fresh),
    Held(Held),
    Spent,
}

impl Keeper {
    /// Keeps `report` as the provisional answer and releases the key's
    /// lock; the final report replaces it. A keeper without a key keeps
    /// nothing. A report that cannot be kept is returned as an error for
    /// the caller to warn about: the write stands.
    pub fn provisional(&mut self, report: &impl Serialize) -> Result<()> {
        let State::Fresh(f) = std::mem::replace(&mut self.state, State::Spent) else {
            return Ok(());
        };
        self.state = State::Held(f.hold(&answer(report)?)?);
        Ok(())
    }

    /// The note kept beside the key under `sub` by an earlier run of the
    /// same write (a step of a write acting on many things); none without
    /// a key, or once the provisional report is kept.
    pub fn noted(&self, sub: &str) -> Result<Option<String>> {
        match &self.state {
            State::Fresh(f) => Ok(f.noted(sub)?.map(|a| a.stdout)),
            _ => Ok(None),
        }
    }

    /// Keeps `note` beside the key under `sub`, for a retry under the same
    /// key to read ([`Keeper::noted`]); nothing without a key.
    pub fn note(&self, sub: &str, note: String) -> Result<()> {
        match &self.state {
            State::Fresh(f) => f.note(
                sub,
                &Answer {
                    code: 0,
                    stdout: note,
                },
            ),
            _ => Ok(()),
        }
    }

    /// Whether the write runs under a key.
    pub fn is_keyed(&self) -> bool {
        !matches!(self.state, State::None)
    }

    fn keep(self, report: &impl Serialize) -> Result<()> {
        match self.state {
            State::None | State::Spent => Ok(()),
            State::Fresh(f) => f.remember(&answer(report)?),
            State::Held(h) => h.finish(&answer(report)?),
        }
    }
}

fn answer(report: &impl Serialize) -> Result<Answer> {
    let stdout = serde_json::to_string(report).map_err(|e| Error::External {
        program: "serde_json".into(),
        msg: e.to_string(),
    })?;
    Ok(Answer { code: 0, stdout })
}

/// What a keyed write came to: its report, and why the key could not be
/// kept, if it could not (the write stands; the caller warns).
pub struct Kept<R> {
    pub report: R,
    pub not_kept: Option<Error>,
}

/// The warning for a key that could not be kept after `done` was done:
/// the write stands, a retry under the key would make it again.
pub(crate) fn not_kept(done: &str, e: &Error) -> String {
    format!("{done}, but its idempotency key was not kept: {e}")
}

/// Runs `write` under `key` (none: just runs it): a key served before
/// for the same request gives its kept report and `write` is not run; the
/// same key for another request is refused (exit 2). `op` and `parts`
/// make the request's fingerprint.
pub fn keyed<R: Serialize + DeserializeOwned>(
    home: &Home,
    keys: Keys,
    key: Option<&str>,
    op: &str,
    parts: &[&[u8]],
    write: impl FnOnce(&mut Keeper) -> Result<R>,
) -> Result<Kept<R>> {
    let Some(key) = key else {
        let mut k = Keeper { state: State::None };
        return write(&mut k).map(|report| Kept {
            report,
            not_kept: None,
        });
    };
    let (subject, looked) = match keys {
        Keys::Task(id) => {
            let request = Request::new(op, id.as_str(), parts);
            (id.as_str(), kept::lookup(home, id, key, &request)?)
        }
        Keys::Board => {
            let request = Request::new(op, "board", parts);
            ("board", kept::lookup_board(home, key, &request)?)
        }
    };
    let fresh = match looked {
        Lookup::Seen(kept) => {
            return Ok(Kept {
                report: parse(subject, key, &kept.stdout)?,
                not_kept: None,
            });
        }
        Lookup::Fresh(f) => f,
    };
    let mut keeper = Keeper {
        state: State::Fresh(fresh),
    };
    let report = write(&mut keeper)?;
    let not_kept = keeper.keep(&report).err();
    Ok(Kept { report, not_kept })
}

/// The report kept under `key` for this request in `keys`' file, if any,
/// without taking the key's lock (a broadcast's retry of a task that is
/// no longer live); another request's key is refused as a lookup refuses
/// it.
pub fn find_kept<R: DeserializeOwned>(
    home: &Home,
    keys: Keys,
    key: &str,
    op: &str,
    parts: &[&[u8]],
) -> Result<Option<R>> {
    let (subject, path) = match keys {
        Keys::Task(id) => (id.as_str(), home.seen_keys(id)),
        Keys::Board => ("board", home.board_seen_keys()),
    };
    let request = Request::new(op, subject, parts);
    let Some(kept) = kept::find_in(&path, key, &request)? else {
        return Ok(None);
    };
    parse(subject, key, &kept.stdout).map(Some)
}

fn parse<R: DeserializeOwned>(subject: &str, key: &str, kept: &str) -> Result<R> {
    serde_json::from_str(kept).map_err(|e| {
        Error::io(
            "replay of an idempotency key",
            subject,
            std::io::Error::other(format!(
                "the report kept for key {} does not parse ({e}); nothing was done",
                crate::error::quoted(key)
            )),
        )
    })
}

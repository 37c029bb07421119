//! The steering inbox's records (docs/spec/inbox.md#record): `state/<id>.inbox/NNN.msg`.
//!
//! A record is a few `key=value` headers, a line that is exactly `--`, then
//! the body byte-exact. Records are created only by [`queue`] — numbered
//! under the inbox lock counting `handled/` too, written to a dot-temp file
//! and renamed into place without clobbering — so a reader sees a complete
//! record or none, and a number is never reused. Readers sort numerically
//! and ignore every other name (dot-temps, ladder files, `handled/`).
//! Acknowledging (the move into `handled/`) lives in [`ack`]; the record
//! format in `record`, the send use case (queue, ring, event) in `send`.

mod ack;
pub mod ladder_files;
mod record;
mod send;

pub use ack::{AckOutcome, ack, acknowledge, parse_seq};
pub use record::{EXT, Record, SCHEMA, parse, record_name, render};
pub(crate) use send::{Ring, Sent, send, send_then, sent_line};

use std::path::PathBuf;

use serde::Serialize;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::fsx;
use crate::home::Home;
use crate::task_id::TaskId;

/// Refuses an inbox or `handled/` that is a symlink (exit 1).
fn check_dirs(home: &Home, id: &TaskId) -> Result<()> {
    fsx::refuse_symlink(&home.inbox(id))?;
    fsx::refuse_symlink(&home.inbox_handled(id))
}

/// Pending record numbers, ascending.
pub fn pending(home: &Home, id: &TaskId) -> Result<Vec<u64>> {
    check_dirs(home, id)?;
    fsx::list_numbered(&home.inbox(id), EXT)
}

/// Handled (acknowledged) record numbers, ascending.
pub(crate) fn handled(home: &Home, id: &TaskId) -> Result<Vec<u64>> {
    check_dirs(home, id)?;
    fsx::list_numbered(&home.inbox_handled(id), EXT)
}

/// Loads pending record `seq`; `None` if it is not pending (or unreadable as a record).
pub(crate) fn load_pending(home: &Home, id: &TaskId, seq: u64) -> Result<Option<Record>> {
    Ok(fsx::read_optional(&home.inbox_record(id, seq))?.and_then(|b| parse(seq, &b)))
}

/// Whether the task has an inbox directory (a symlink there is refused).
pub(crate) fn has_inbox(home: &Home, id: &TaskId) -> Result<bool> {
    check_dirs(home, id)?;
    fsx::is_dir(&home.inbox(id))
}

/// Pending record `seq` for a reader that must say why it cannot read it:
/// `None` if it is not pending; refused (exit 1) when it is a symlink or
/// has no `--` line ending its headers; an I/O failure otherwise.
pub(crate) fn load_record(home: &Home, id: &TaskId, seq: u64) -> Result<Option<Record>> {
    let path = home.inbox_record(id, seq);
    fsx::refuse_symlink(&path)?;
    let Some(bytes) = fsx::read_optional(&path)? else {
        return Ok(None);
    };
    match parse(seq, &bytes) {
        Some(r) => Ok(Some(r)),
        None => Err(Error::refused(format!(
            "{} is not a record: no line `--` ends its headers ({})",
            fsx::numbered_name(seq, EXT),
            path.display()
        ))),
    }
}

/// The pending records that read, and why each other one did not.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    /// Readable records, in numeric order.
    pub(crate) records: Vec<Record>,
    /// Pending names that are not readable records (symlink, no `--`, I/O).
    pub(crate) bad: Vec<(u64, Error)>,
}

/// Every pending record, in numeric order. One bad record never hides the
/// others: it lands in [`Listing::bad`]. Only a refused or unreadable
/// inbox directory is an error.
pub(crate) fn list(home: &Home, id: &TaskId) -> Result<Listing> {
    let mut out = Listing::default();
    for seq in pending(home, id)? {
        match load_record(home, id, seq) {
            Ok(Some(r)) => out.records.push(r),
            Ok(None) => {}
            Err(e) => out.bad.push((seq, e)),
        }
    }
    Ok(out)
}

/// A message to queue.
#[derive(Debug, Clone)]
pub struct Outgoing<'a> {
    pub from: &'a str,
    pub body: &'a [u8],
    pub fire_and_forget: bool,
    /// Return an existing record with the identical body instead of writing.
    pub dedupe: bool,
}

/// Where an identical body already sits (`--dedupe`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Existing {
    Pending,
    Handled,
}

/// Where a queued record landed (or, for a dedupe hit, already was).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queued {
    pub seq: u64,
    pub(crate) path: PathBuf,
    pub(crate) duplicate: Option<Existing>,
}

/// Validates a body against docs/spec/send.md (exit 2 on refusal).
pub(crate) fn validate_body(cfg: &Config, body: &[u8]) -> Result<()> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::usage("empty message body"));
    }
    if body.len() as u64 > cfg.send.max_body_bytes {
        return Err(Error::usage(format!(
            "message body is {} bytes; the limit is {} (send.max_body_bytes)",
            body.len(),
            cfg.send.max_body_bytes
        )));
    }
    Ok(())
}

/// Validates a sender name (one line, no `=` surprises in the header).
fn validate_from(from: &str) -> Result<()> {
    if from.is_empty() || from.contains(['\n', '\r']) || from.len() > 200 {
        return Err(Error::usage(format!(
            "invalid sender name {}",
            crate::error::quoted(from)
        )));
    }
    Ok(())
}

/// Writes a new record (numbered create, docs/spec/files.md#numbered-create). Validates the body
/// and
/// sender, refuses an unknown task (exit 1) and symlinked directories.
pub fn queue(home: &Home, cfg: &Config, id: &TaskId, msg: &Outgoing, now: u64) -> Result<Queued> {
    validate_body(cfg, msg.body)?;
    validate_from(msg.from)?;
    if !crate::meta::task_known(home, id)? {
        return Err(Error::UnknownTask {
            id: id.to_string(),
            lacks: "no meta and no brief",
        });
    }
    check_dirs(home, id)?;
    fsx::ensure_dir(&home.inbox_handled(id))?;
    let bytes = render(
        &crate::clock::rfc3339(now),
        msg.from,
        msg.fire_and_forget,
        msg.body,
    );
    let handled = home.inbox_handled(id);
    // Write and fsync before taking the lock: the lock covers only the
    // duplicate check, the directory scan and one rename.
    let staged = fsx::stage(&home.inbox(id), &bytes)?;
    let guard = fsx::lock(&home.inbox_lock(id), fsx::LOCK_WAIT)?;
    if msg.dedupe
        && let Some(dup) = find_body(home, id, msg.body)?
    {
        return Ok(dup);
    }
    let (seq, path) = staged.commit_numbered(&[&handled], EXT, &guard)?;
    drop(guard);
    fsx::sync_dir(&home.inbox(id))?;
    Ok(Queued {
        seq,
        path,
        duplicate: None,
    })
}

/// The highest record number the inbox ever gave (pending or handled),
/// 0 for none: every record queued later has a higher one.
pub(crate) fn last_seq(home: &Home, id: &TaskId) -> Result<u64> {
    let top = |v: Vec<u64>| v.last().copied().unwrap_or(0);
    Ok(top(pending(home, id)?).max(top(handled(home, id)?)))
}

/// The first record numbered above `after` (pending or handled) sent by
/// `from` with the body `body`, if any.
pub(crate) fn find_since(
    home: &Home,
    id: &TaskId,
    after: u64,
    from: &str,
    body: &[u8],
) -> Result<Option<u64>> {
    let mut seqs: Vec<(u64, PathBuf)> = Vec::new();
    for seq in pending(home, id)?.into_iter().filter(|&s| s > after) {
        seqs.push((seq, home.inbox_record(id, seq)));
    }
    for seq in handled(home, id)?.into_iter().filter(|&s| s > after) {
        seqs.push((seq, home.handled_record(id, seq)));
    }
    seqs.sort_unstable();
    for (seq, path) in seqs {
        let same = fsx::read_optional(&path)?
            .and_then(|b| parse(seq, &b))
            .is_some_and(|r| r.from == from && r.body == body);
        if same {
            return Ok(Some(seq));
        }
    }
    Ok(None)
}

/// The newest record (pending first, then handled) whose body is `body`.
fn find_body(home: &Home, id: &TaskId, body: &[u8]) -> Result<Option<Queued>> {
    let places = [
        (Existing::Pending, pending(home, id)?),
        (Existing::Handled, handled(home, id)?),
    ];
    for (place, seqs) in places {
        for seq in seqs.into_iter().rev() {
            let path = match place {
                Existing::Pending => home.inbox_record(id, seq),
                Existing::Handled => home.handled_record(id, seq),
            };
            let same = fsx::read_optional(&path)?
                .and_then(|b| parse(seq, &b))
                .is_some_and(|r| r.body == body);
            if same {
                return Ok(Some(Queued {
                    seq,
                    path,
                    duplicate: Some(place),
                }));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_numbers_and_refuses() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let cfg = Config::default();
        let id = TaskId::parse("t").unwrap();
        let msg = Outgoing {
            from: "captain",
            body: b"hi",
            fire_and_forget: false,
            dedupe: false,
        };
        assert_eq!(queue(&home, &cfg, &id, &msg, 0).unwrap_err().exit_code(), 1);
        crate::meta::update(&home, &id, |m| m.set("kind", "ship")).unwrap();
        assert_eq!(queue(&home, &cfg, &id, &msg, 0).unwrap().seq, 1);
        assert_eq!(queue(&home, &cfg, &id, &msg, 0).unwrap().seq, 2);
        let empty = Outgoing {
            body: b" \n\t",
            ..msg.clone()
        };
        assert_eq!(
            queue(&home, &cfg, &id, &empty, 0).unwrap_err().exit_code(),
            2
        );
        assert_eq!(pending(&home, &id).unwrap(), vec![1, 2]);
        let r = load_pending(&home, &id, 2).unwrap().unwrap();
        assert_eq!(r.body, b"hi");
        let again = Outgoing {
            dedupe: true,
            ..msg.clone()
        };
        let q = queue(&home, &cfg, &id, &again, 0).unwrap();
        assert_eq!((q.seq, q.duplicate), (2, Some(Existing::Pending)));
        assert_eq!(ack(&home, &id, 1).unwrap(), AckOutcome::Handled);
        assert_eq!(ack(&home, &id, 2).unwrap(), AckOutcome::Handled);
        let q = queue(&home, &cfg, &id, &again, 0).unwrap();
        assert_eq!((q.seq, q.duplicate), (2, Some(Existing::Handled)));
        let other = Outgoing {
            body: b"new",
            ..again
        };
        let q = queue(&home, &cfg, &id, &other, 0).unwrap();
        assert_eq!((q.seq, q.duplicate), (3, None));
    }
}

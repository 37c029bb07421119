//! Acknowledging a record (docs/spec/inbox.md#fm-ack): moving `NNN.msg` into `handled/`.
//!
//! The move is a no-clobber rename under the inbox lock, so it never
//! overwrites a handled copy and never races a numbered create. A record
//! already in `handled/` is success (`already`), but a handled copy with
//! other bytes is refused and both files are left alone. Acknowledging the
//! record the re-ring ladder tracks clears `.ring-state`/`.escalated`.

use crate::clock;
use crate::error::{Error, Result};
use crate::events::{Entry, Event, Tool};
use crate::fsx;
use crate::home::Home;
use crate::inbox::ladder_files;
use crate::task_id::TaskId;

/// What acknowledging one sequence number did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckOutcome {
    /// Moved into `handled/` now.
    Handled,
    /// Was already in `handled/` (an identical pending copy, if any, is removed).
    Already,
    /// Neither pending nor handled.
    Missing,
}

/// Parses a sequence as written by hand: `2`, `002`, `2.msg`, `002.msg`.
/// Zero and anything else are usage errors (exit 2).
pub fn parse_seq(raw: &str) -> Result<u64> {
    let stem = raw.strip_suffix(".msg").unwrap_or(raw);
    match stem.parse::<u64>() {
        Ok(n) if n > 0 && stem.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => Err(Error::usage(format!(
            "bad message number {} (expected e.g. 2, 002, 2.msg or 002.msg)",
            crate::error::quoted(raw)
        ))),
    }
}

/// [`ack`] as `fm-ack` runs it: a record moved now records the
/// `inbox.acked` event, by `actor`.
pub fn acknowledge(home: &Home, id: &TaskId, seq: u64, actor: &str) -> Result<AckOutcome> {
    let outcome = ack(home, id, seq)?;
    if outcome == AckOutcome::Handled {
        Entry::new(
            clock::now(),
            Tool::Ack,
            id.as_str(),
            Event::InboxAcked { seq },
        )
        .by(actor)
        .record(home);
    }
    Ok(outcome)
}

/// Moves pending record `seq` into `handled/` (docs/spec/inbox.md#fm-ack).
///
/// Refused (exit 1): no inbox; the inbox, `handled/` or either copy of the
/// record is a symlink; `handled/NNN.msg` exists with other bytes.
pub fn ack(home: &Home, id: &TaskId, seq: u64) -> Result<AckOutcome> {
    if !super::has_inbox(home, id)? {
        return Err(Error::NoInbox { id: id.to_string() });
    }
    let _guard = fsx::lock(&home.inbox_lock(id), fsx::LOCK_WAIT)?;
    let src = home.inbox_record(id, seq);
    let dst = home.handled_record(id, seq);
    fsx::refuse_symlink(&src)?;
    fsx::refuse_symlink(&dst)?;
    let name = super::record_name(seq);
    let outcome = if fsx::exists(&src)? {
        fsx::ensure_dir(&home.inbox_handled(id))?;
        if fsx::rename_noclobber(&src, &dst)? {
            fsx::sync_dir(&home.inbox_handled(id))?;
            fsx::sync_dir(&home.inbox(id))?;
            AckOutcome::Handled
        } else if fsx::read(&src)? == fsx::read(&dst)? {
            fsx::remove_optional(&src)?;
            AckOutcome::Already
        } else {
            return Err(Error::refused(format!(
                "handled/{name} already exists with other bytes; not overwritten ({})",
                dst.display()
            )));
        }
    } else if fsx::exists(&dst)? {
        AckOutcome::Already
    } else {
        return Ok(AckOutcome::Missing);
    };
    ladder_files::clear_if_names(home, id, &name)?;
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::inbox::{Outgoing, queue};

    #[test]
    fn seq_forms() {
        for ok in ["2", "002", "2.msg", "002.msg"] {
            assert_eq!(parse_seq(ok).unwrap(), 2, "{ok}");
        }
        assert_eq!(parse_seq("1000").unwrap(), 1000);
        for bad in ["", "0", "x", "-1", "+2", "2.md", ".msg", "2.msg.msg", " 2"] {
            assert_eq!(parse_seq(bad).unwrap_err().exit_code(), 2, "{bad}");
        }
    }

    fn setup() -> (tempfile::TempDir, Home, TaskId) {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let id = TaskId::parse("t").unwrap();
        crate::meta::update(&home, &id, |m| m.set("kind", "ship")).unwrap();
        (d, home, id)
    }

    fn send(home: &Home, id: &TaskId, body: &[u8]) -> u64 {
        let msg = Outgoing {
            from: "captain",
            body,
            fire_and_forget: false,
            dedupe: false,
        };
        queue(home, &Config::default(), id, &msg, 0).unwrap().seq
    }

    #[test]
    fn ack_moves_then_reports_already_and_clears_the_ladder() {
        let (_d, home, id) = setup();
        assert_eq!(ack(&home, &id, 1).unwrap_err().exit_code(), 1);
        send(&home, &id, b"one");
        send(&home, &id, b"two");
        let st = ladder_files::RingState {
            seq: 1,
            count: 2,
            last: 9,
        };
        ladder_files::write_ring_state(&home, &id, &st).unwrap();
        ladder_files::write_escalated(&home, &id, 2).unwrap();
        assert_eq!(ack(&home, &id, 1).unwrap(), AckOutcome::Handled);
        assert!(!home.ring_state(&id).exists());
        assert!(home.escalated(&id).exists());
        assert_eq!(ack(&home, &id, 1).unwrap(), AckOutcome::Already);
        assert_eq!(ack(&home, &id, 7).unwrap(), AckOutcome::Missing);
        assert!(
            fsx::read(&home.handled_record(&id, 1))
                .unwrap()
                .ends_with(b"one")
        );
        assert_eq!(ack(&home, &id, 2).unwrap(), AckOutcome::Handled);
        assert!(!home.escalated(&id).exists());
    }

    #[test]
    fn a_handled_copy_with_other_bytes_is_never_overwritten() {
        let (_d, home, id) = setup();
        send(&home, &id, b"mine");
        std::fs::write(home.handled_record(&id, 1), b"theirs").unwrap();
        assert_eq!(ack(&home, &id, 1).unwrap_err().exit_code(), 1);
        assert_eq!(fsx::read(&home.handled_record(&id, 1)).unwrap(), b"theirs");
        assert!(home.inbox_record(&id, 1).exists());
        // An identical handled copy: the pending duplicate goes, `already`.
        let bytes = fsx::read(&home.inbox_record(&id, 1)).unwrap();
        std::fs::write(home.handled_record(&id, 1), &bytes).unwrap();
        assert_eq!(ack(&home, &id, 1).unwrap(), AckOutcome::Already);
        assert!(!home.inbox_record(&id, 1).exists());
    }

    #[test]
    fn symlinked_records_are_refused() {
        let (d, home, id) = setup();
        send(&home, &id, b"x");
        let outside = d.path().join("outside.msg");
        std::fs::write(&outside, b"x").unwrap();
        std::os::unix::fs::symlink(&outside, home.inbox_record(&id, 2)).unwrap();
        assert_eq!(ack(&home, &id, 2).unwrap_err().exit_code(), 1);
        assert!(home.inbox_record(&id, 2).symlink_metadata().is_ok());
        assert!(!home.handled_record(&id, 2).exists());
    }
}

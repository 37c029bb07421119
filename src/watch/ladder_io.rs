//! The watcher's side of the ladder files: reads `.ring-state` and
//! `.escalated` through the shared [`crate::inbox::ladder_files`] format into the
//! pure ladder's [`LadderFiles`], and writes them back.
//!
//! `.ring-state` is replaced without a per-file fsync: one pass may ring
//! many tasks and flushes the filesystem once at its end, when the old
//! files the replaces left over are removed too (off the daemon's loop,
//! see [`super::flusher`]).

use crate::error::Result;
use crate::fsx;
use crate::home::Home;
use crate::inbox;
use crate::inbox::ladder_files as shared;
use crate::inbox::record_name;
use crate::task_id::TaskId;

use super::ladder::{LadderFiles, RingState};

fn seq_of(name: &str) -> Option<u64> {
    fsx::parse_numbered(name.trim(), inbox::EXT)
}

/// Reads both files. A file that cannot be read counts as absent; the
/// error is returned beside so the caller can report it.
pub(crate) fn load(home: &Home, id: &TaskId) -> (LadderFiles, Option<crate::Error>) {
    let mut err = None;
    let ring = match shared::read_ring_state(home, id) {
        Ok(r) => r.and_then(|r| {
            Some(RingState {
                seq: seq_of(&r.record)?,
                count: r.count,
                last: r.last,
            })
        }),
        Err(e) => {
            err = Some(e);
            None
        }
    };
    let escalated = match shared::read_escalated(home, id) {
        Ok(e) => e.and_then(|name| seq_of(name.split_whitespace().next()?)),
        Err(e) => {
            err.get_or_insert(e);
            None
        }
    };
    let owed = match shared::read_owed(home, id) {
        Ok(o) => o,
        Err(e) => {
            err.get_or_insert(e);
            None
        }
    };
    (
        LadderFiles {
            ring,
            escalated,
            owed,
        },
        err,
    )
}

/// The ladder files from their bytes (`None`: the file is missing), as
/// [`load`] reads them: for a reader that opened them itself.
pub(crate) fn parse(
    ring: Option<&[u8]>,
    escalated: Option<&[u8]>,
    owed: Option<&[u8]>,
) -> LadderFiles {
    LadderFiles {
        ring: ring.and_then(shared::RingState::parse).and_then(|r| {
            Some(RingState {
                seq: seq_of(&r.record)?,
                count: r.count,
                last: r.last,
            })
        }),
        escalated: escalated.and_then(|b| {
            let name = String::from_utf8_lossy(b);
            seq_of(name.split_whitespace().next()?)
        }),
        owed: owed.and_then(shared::Owed::parse),
    }
}

/// Records a ring attempt (not fsynced here; see the module doc). The
/// file it replaced, if any, is handed back to remove when convenient.
pub(crate) fn write_ring_state(
    home: &Home,
    id: &TaskId,
    r: &RingState,
) -> Result<Option<fsx::Leftover>> {
    let state = shared::RingState {
        record: record_name(r.seq),
        count: r.count,
        last: r.last,
    };
    fsx::atomic_write_unsynced(&home.ring_state(id), &state.render())
}

pub(crate) fn write_escalated(home: &Home, id: &TaskId, seq: u64) -> Result<()> {
    shared::write_escalated(home, id, &record_name(seq))
}

/// Records (or, with `None`, clears) an owed doorbell.
pub(crate) fn set_owed(home: &Home, id: &TaskId, owed: Option<u64>) -> Result<()> {
    match owed {
        Some(now) => shared::write_owed(home, id, now),
        None => shared::clear_owed(home, id),
    }
}

/// Removes `.ring-owed` (and `.ring-state`, `.escalated`), leaving the
/// marks of a dialog or a dead agent seen.
pub(crate) fn clear(home: &Home, id: &TaskId) -> Result<()> {
    shared::clear_ladder(home, id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_the_shared_format() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let id = TaskId::parse("t").unwrap();
        fsx::ensure_dir(&home.inbox(&id)).unwrap();
        let r = RingState {
            seq: 1000,
            count: 2,
            last: 7,
        };
        write_ring_state(&home, &id, &r).unwrap();
        write_escalated(&home, &id, 3).unwrap();
        assert_eq!(
            std::fs::read(home.ring_state(&id)).unwrap(),
            b"1000.msg\t2\t7\n"
        );
        let (files, err) = load(&home, &id);
        assert!(err.is_none());
        assert_eq!(files.ring, Some(r));
        assert_eq!(files.escalated, Some(3));
        let bytes = |p: std::path::PathBuf| std::fs::read(p).ok();
        let parsed = parse(
            bytes(home.ring_state(&id)).as_deref(),
            bytes(home.escalated(&id)).as_deref(),
            bytes(home.ring_owed(&id)).as_deref(),
        );
        assert_eq!(parsed, files);
        std::fs::write(home.inbox(&id).join("007.msg"), b"x").unwrap();
        set_owed(&home, &id, Some(42)).unwrap();
        let parsed = parse(None, None, bytes(home.ring_owed(&id)).as_deref());
        assert_eq!(parsed.owed.map(|o| (o.at, o.through)), Some((42, Some(7))));
        assert_eq!(parsed.owed, load(&home, &id).0.owed);
        clear(&home, &id).unwrap();
        assert!(load(&home, &id).0.is_empty());
    }
}

//! The ladder's bookkeeping in the inbox (SPEC §6.2):
//! `.ring-state` = `<NNN.msg>\t<count>\t<last_epoch>` and `.escalated`
//! naming a record. They live beside the records so a restarted watcher
//! continues the count; `fm-ack` clears them when it acknowledges the
//! record they name. Written by atomic replace only.

use crate::error::Result;
use crate::fsx;
use crate::home::Home;
use crate::inbox;
use crate::task_id::TaskId;

use super::ladder::{LadderFiles, RingState};

fn record_seq(name: &str) -> Option<u64> {
    fsx::parse_numbered(name.trim(), inbox::EXT)
}

/// Parses `.ring-state`; anything unreadable is no state (a fresh ladder).
pub fn parse_ring_state(bytes: &[u8]) -> Option<RingState> {
    let text = String::from_utf8_lossy(bytes);
    let mut f = text.trim().split('\t');
    Some(RingState {
        seq: record_seq(f.next()?)?,
        count: f.next()?.trim().parse().ok()?,
        last: f.next()?.trim().parse().ok()?,
    })
}

pub fn render_ring_state(r: &RingState) -> String {
    format!(
        "{}\t{}\t{}\n",
        fsx::numbered_name(r.seq, inbox::EXT),
        r.count,
        r.last
    )
}

/// Parses `.escalated`: the record named by its first field.
pub fn parse_escalated(bytes: &[u8]) -> Option<u64> {
    let text = String::from_utf8_lossy(bytes);
    record_seq(text.split_whitespace().next()?)
}

/// Reads both files. A file that cannot be read counts as absent; the
/// error is returned beside so the caller can report it.
pub fn load(home: &Home, id: &TaskId) -> (LadderFiles, Option<crate::Error>) {
    let mut err = None;
    let mut read = |p: std::path::PathBuf| match fsx::read_optional(&p) {
        Ok(b) => b,
        Err(e) => {
            err.get_or_insert(e);
            None
        }
    };
    let ring = read(home.ring_state(id)).and_then(|b| parse_ring_state(&b));
    let escalated = read(home.escalated(id)).and_then(|b| parse_escalated(&b));
    (LadderFiles { ring, escalated }, err)
}

/// Records a ring attempt. Not fsynced here: a pass may ring many tasks,
/// and it flushes the filesystem once at its end.
pub fn write_ring_state(home: &Home, id: &TaskId, r: &RingState) -> Result<()> {
    fsx::atomic_write_unsynced(&home.ring_state(id), render_ring_state(r).as_bytes())
}

pub fn write_escalated(home: &Home, id: &TaskId, seq: u64) -> Result<()> {
    let line = format!("{}\n", fsx::numbered_name(seq, inbox::EXT));
    fsx::atomic_write(&home.escalated(id), line.as_bytes())
}

/// Removes both files (missing ones are fine).
pub fn clear(home: &Home, id: &TaskId) -> Result<()> {
    fsx::remove_optional(&home.ring_state(id))?;
    fsx::remove_optional(&home.escalated(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_state_round_trips_and_rejects_junk() {
        let r = RingState {
            seq: 1000,
            count: 2,
            last: 1_700_000_000,
        };
        assert_eq!(render_ring_state(&r), "1000.msg\t2\t1700000000\n");
        assert_eq!(parse_ring_state(render_ring_state(&r).as_bytes()), Some(r));
        for bad in ["", "x.msg\t1\t2", "001.msg\t1", "001.msg\tx\t2"] {
            assert_eq!(parse_ring_state(bad.as_bytes()), None, "{bad}");
        }
        assert_eq!(parse_escalated(b"007.msg\n"), Some(7));
        assert_eq!(parse_escalated(b"007.msg\t123\n"), Some(7));
        assert_eq!(parse_escalated(b""), None);
    }

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..100)) {
            let _ = parse_ring_state(&bytes);
            let _ = parse_escalated(&bytes);
        }
    }
}

//! The busy record (docs/spec/crew-state.md#busy-record): `state/<id>.busy`, one line
//! `busy|idle <epoch> <source>`, written atomically by `fm-status
//! --busy|--idle` from harness hooks so turns are reported exactly.
//!
//! One parser and one rule for every reader (delivery, the watcher,
//! crew-state, lifecycle): a record counts as busy only when it says `busy`
//! and is not older than the status log's latest line.

use crate::error::Result;
use crate::events::{Entry, Event, Tool};
use crate::fsx;
use crate::home::Home;
use crate::task_id::TaskId;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BusyRecord {
    pub busy: bool,
    pub at: u64,
    pub source: String,
}

impl BusyRecord {
    /// `None` for anything that is not a well-formed record.
    pub fn parse(bytes: &[u8]) -> Option<BusyRecord> {
        let text = String::from_utf8_lossy(bytes);
        let mut f = text.lines().next()?.split_whitespace();
        let busy = match f.next()? {
            "busy" => true,
            "idle" => false,
            _ => return None,
        };
        let at = f.next()?.parse().ok()?;
        let source = f.collect::<Vec<_>>().join(" ");
        let source = if source.is_empty() {
            "hook".into()
        } else {
            source
        };
        Some(BusyRecord { busy, at, source })
    }

    /// Says busy and is not older than `since` (the status log's latest
    /// line, Unix seconds; `None` when there is none).
    pub fn busy_since(&self, since: Option<u64>) -> bool {
        self.busy && since.is_none_or(|t| self.at >= t)
    }
}

/// The record's one line. Whitespace inside `source` becomes `-` so the
/// record stays three fields; an empty source is `hook`.
pub fn render(busy: bool, at: u64, source: &str) -> String {
    let source = source.split_whitespace().collect::<Vec<_>>().join("-");
    let source = if source.is_empty() { "hook" } else { &source };
    let word = if busy { "busy" } else { "idle" };
    format!("{word} {at} {source}\n")
}

/// Writes the record (atomic replace) and records `status.busy` or
/// `status.idle` by `actor` (`fm-status --busy|--idle`, docs/spec/crew-state.md#busy-record).
pub(crate) fn write(
    home: &Home,
    id: &TaskId,
    busy: bool,
    now: u64,
    source: &str,
    actor: &str,
) -> Result<()> {
    fsx::ensure_dir(&home.state_dir())?;
    fsx::atomic_write(&home.busy(id), render(busy, now, source).as_bytes())?;
    let source = source.to_string();
    let event = if busy {
        Event::StatusBusy { source }
    } else {
        Event::StatusIdle { source }
    };
    Entry::new(now, Tool::Status, id.as_str(), event)
        .by(actor)
        .record(home);
    Ok(())
}

/// When the busy record that counts was written, Unix seconds: the
/// record against the status log's mtime ([`BusyRecord::busy_since`]).
/// With no record that counts, the turn the agent's own session log
/// reports running ([`crate::agent_report`]), by the same rule and
/// [`log_turn_counts`]. `None` when neither says busy; an unreadable or
/// malformed record is not busy.
pub(crate) fn busy_at(home: &Home, id: &TaskId) -> Option<u64> {
    busy_at_from(home, id).map(|(at, _)| at)
}

/// [`busy_at`], and whether the session log (not a record) said so.
pub(crate) fn busy_at_from(home: &Home, id: &TaskId) -> Option<(u64, bool)> {
    let record = match fsx::read_optional(&home.busy(id)) {
        Ok(Some(bytes)) => BusyRecord::parse(&bytes),
        _ => None,
    };
    let log_mtime = fsx::stat(&home.status(id))
        .ok()
        .flatten()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs());
    if let Some(r) = record.as_ref().filter(|b| b.busy_since(log_mtime)) {
        return Some((r.at, false));
    }
    let at = crate::agent_report::turn_running(home, id)?;
    busy_from_log(at, log_mtime, record.as_ref()).map(|at| (at, true))
}

/// Whether a turn the session log reports running since `started` still
/// counts against the busy record: an idle record the agent's own hook
/// wrote at or after the turn began has ended it — Codex runs its `Stop`
/// and `Interrupt` hooks just before it writes the turn's end to the log.
pub(crate) fn log_turn_counts(record: Option<&BusyRecord>, started: u64) -> bool {
    !record.is_some_and(|r| !r.busy && r.source == "hook" && r.at >= started)
}

/// A turn the session log reports running since `at` counts as busy the
/// way a record written at `at` does (not older than the status log), and
/// unless the record ended it ([`log_turn_counts`]).
pub(crate) fn busy_from_log(
    at: u64,
    log_mtime: Option<u64>,
    record: Option<&BusyRecord>,
) -> Option<u64> {
    (log_mtime.is_none_or(|t| at >= t) && log_turn_counts(record, at)).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_render() {
        assert_eq!(
            BusyRecord::parse(b"busy 17 prompt-hook\n"),
            Some(BusyRecord {
                busy: true,
                at: 17,
                source: "prompt-hook".into()
            })
        );
        assert_eq!(BusyRecord::parse(b"idle 3\n").unwrap().source, "hook");
        for bad in [&b"maybe 3 x\n"[..], b"busy soon x\n", b"busy\n", b""] {
            assert_eq!(BusyRecord::parse(bad), None);
        }
        assert_eq!(render(true, 5, "a b"), "busy 5 a-b\n");
        assert_eq!(
            BusyRecord::parse(render(false, 5, "").as_bytes())
                .unwrap()
                .source,
            "hook"
        );
    }

    #[test]
    fn a_hooks_idle_record_ends_the_turn_the_session_log_still_shows() {
        let rec = |line: &str| BusyRecord::parse(line.as_bytes()).unwrap();
        // The Stop hook's record, a moment before Codex logs the turn's end.
        assert_eq!(busy_from_log(100, None, Some(&rec("idle 100 hook"))), None);
        assert_eq!(busy_from_log(100, None, Some(&rec("idle 101 hook"))), None);
        // A record from before the turn, or not the agent's own, does not.
        assert_eq!(
            busy_from_log(100, None, Some(&rec("idle 99 hook"))),
            Some(100)
        );
        assert_eq!(
            busy_from_log(100, None, Some(&rec("idle 100 fm-control"))),
            Some(100)
        );
        assert_eq!(busy_from_log(100, None, None), Some(100));
        // Older than the status log's latest line: not busy, as a record.
        assert_eq!(busy_from_log(100, Some(101), None), None);
        assert_eq!(busy_from_log(100, Some(100), None), Some(100));
    }

    #[test]
    fn busy_must_not_be_older_than_the_log() {
        let b = BusyRecord::parse(b"busy 100 hook\n").unwrap();
        assert!(b.busy_since(None));
        assert!(b.busy_since(Some(100)));
        assert!(!b.busy_since(Some(101)));
        assert!(
            !BusyRecord::parse(b"idle 100 hook\n")
                .unwrap()
                .busy_since(None)
        );
    }
}

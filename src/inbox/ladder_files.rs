//! The re-ring ladder's bookkeeping files (docs/spec/watch.md#ladder-files), shared by the
//! watcher (which writes them) and `fm-ack` (which clears them when the
//! record they name is acknowledged).
//!
//! - `state/<id>.inbox/.ring-state`: one line `<NNN.msg>\t<count>\t<last_epoch>`.
//! - `state/<id>.inbox/.escalated`: the record name the ladder escalated.
//! - `state/<id>.inbox/.ring-owed`: `<epoch>\t<NNN.msg>` — a ring found the
//!   agent busy (or its composer not up yet) and typed nothing; the
//!   doorbell is owed as soon as the agent is idle, whatever the grace
//!   period says. It belongs to the records pending when it was written:
//!   the record named is the newest of them. Once every one of those is
//!   acknowledged it is stale: the watcher ignores and removes it, and
//!   `fm-ack` removes it when nothing is left pending. Written by whoever
//!   rang (`fm-send`, the watcher), removed by the next ring that was not
//!   held back. A bare `<epoch>` (written before records were named)
//!   belongs to whatever is pending.
//! - `state/<id>.agent-dead`: `<epoch>\t<pane>\t<spawned_at>` — the
//!   `dead-agent` wake for this agent (pane and spawn) was raised; removed
//!   when a look finds the agent alive. A relaunch is another agent.
//! - `state/<id>.inbox/.dialog`: `<name>` — the dialog the watcher raised
//!   its one `dialog` wake for; removed when a look finds no dialog. A key
//!   pressed in the pane since (`fm-send --key`) makes it
//!   `<name>\t<epoch>`: the captain acted on that dialog, so one found
//!   after that is another.
//!
//! All are written by atomic replace with a trailing newline; readers
//! accept them with or without it and treat anything unreadable as absent
//! (a fresh ladder), never as an error.

use crate::error::Result;
use crate::fsx;
use crate::home::Home;
use crate::task_id::TaskId;

/// `.ring-state`: which record the ladder tracks, how many rings it spent,
/// and when it last rang (Unix seconds). The one type for the file: the
/// watcher's ladder, `fm-ack` and the fleet view all read it through
/// [`RingState::parse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingState {
    /// The record's number (`007.msg` is 7).
    pub seq: u64,
    pub count: u64,
    pub last: u64,
}

impl RingState {
    /// One line `<NNN.msg>\t<count>\t<last>`; anything else (a record
    /// name that is not a record's) is `None`: a fresh ladder.
    pub fn parse(bytes: &[u8]) -> Option<RingState> {
        let text = std::str::from_utf8(bytes).ok()?;
        let line = text.lines().next()?;
        let mut f = line.split('\t');
        let seq = seq_of(f.next()?)?;
        let count = f.next()?.trim().parse().ok()?;
        let last = f.next()?.trim().parse().ok()?;
        if f.next().is_some() {
            return None;
        }
        Some(RingState { seq, count, last })
    }

    pub fn render(&self) -> Vec<u8> {
        format!(
            "{}\t{}\t{}\n",
            crate::inbox::record_name(self.seq),
            self.count,
            self.last
        )
        .into_bytes()
    }
}

/// A record's number from its name as a ladder file holds it.
fn seq_of(name: &str) -> Option<u64> {
    fsx::parse_numbered(name.trim(), crate::inbox::EXT)
}

/// Reads `.ring-state`; `None` when missing or unreadable.
pub(crate) fn read_ring_state(home: &Home, id: &TaskId) -> Result<Option<RingState>> {
    Ok(fsx::read_optional(&home.ring_state(id))?.and_then(|b| RingState::parse(&b)))
}

/// Records a ring attempt without a per-file fsync: one watcher pass may
/// ring many tasks and flushes the filesystem once at its end, when the
/// old files the replaces left over are removed too. The file replaced,
/// if any, is handed back to remove when convenient.
pub(crate) fn write_ring_state(
    home: &Home,
    id: &TaskId,
    state: &RingState,
) -> Result<Option<fsx::Leftover>> {
    fsx::atomic_write_unsynced(&home.ring_state(id), &state.render())
}

/// The contents of a task's ladder files, as the ladder reads them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LadderFiles {
    pub(crate) ring: Option<RingState>,
    /// The record `.escalated` names.
    pub(crate) escalated: Option<u64>,
    /// `.ring-owed`: when a ring was held back by a busy agent, and the
    /// newest record pending then.
    pub(crate) owed: Option<Owed>,
}

impl LadderFiles {
    pub(crate) fn is_empty(&self) -> bool {
        self.ring.is_none() && self.escalated.is_none() && self.owed.is_none()
    }

    /// The files from their bytes (`None`: the file is missing), as
    /// [`load`] reads them: for a reader that opened them itself.
    pub(crate) fn parse(
        ring: Option<&[u8]>,
        escalated: Option<&[u8]>,
        owed: Option<&[u8]>,
    ) -> LadderFiles {
        LadderFiles {
            ring: ring.and_then(RingState::parse),
            escalated: escalated.and_then(|b| {
                let name = String::from_utf8_lossy(b);
                seq_of(name.split_whitespace().next()?)
            }),
            owed: owed.and_then(Owed::parse),
        }
    }

    /// Reads the three files. A file that cannot be read counts as absent;
    /// the error is returned beside so the caller can report it.
    pub(crate) fn load(home: &Home, id: &TaskId) -> (LadderFiles, Option<crate::Error>) {
        fn keep<T>(err: &mut Option<crate::Error>, r: Result<Option<T>>) -> Option<T> {
            r.unwrap_or_else(|e| {
                err.get_or_insert(e);
                None
            })
        }
        let mut err = None;
        let ring = keep(&mut err, read_ring_state(home, id));
        let escalated = read_escalated(home, id)
            .map(|e| e.and_then(|name| seq_of(name.split_whitespace().next()?)));
        let escalated = keep(&mut err, escalated);
        let owed = keep(&mut err, read_owed(home, id));
        (
            LadderFiles {
                ring,
                escalated,
                owed,
            },
            err,
        )
    }
}

/// Reads `.escalated` (the record name, trimmed); `None` when missing or empty.
pub(crate) fn read_escalated(home: &Home, id: &TaskId) -> Result<Option<String>> {
    Ok(fsx::read_optional(&home.escalated(id))?
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .filter(|s| !s.is_empty()))
}

/// Records that the ladder escalated record `seq`.
pub(crate) fn write_escalated(home: &Home, id: &TaskId, seq: u64) -> Result<()> {
    let line = format!("{}\n", crate::inbox::record_name(seq));
    fsx::atomic_write(&home.escalated(id), line.as_bytes())
}

/// `.ring-owed`: when a doorbell was held back, and the newest record
/// pending then (`None`: a file that names none, owed to whatever is
/// pending).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owed {
    pub(crate) at: u64,
    pub(crate) through: Option<u64>,
}

impl Owed {
    pub(crate) fn parse(bytes: &[u8]) -> Option<Owed> {
        let text = String::from_utf8_lossy(bytes);
        let line = text.lines().next()?.trim();
        let (at, through) = match line.split_once('\t') {
            Some((at, name)) => (
                at,
                Some(fsx::parse_numbered(name.trim(), crate::inbox::EXT)?),
            ),
            None => (line, None),
        };
        Some(Owed {
            at: at.trim().parse().ok()?,
            through,
        })
    }

    /// Whether it is owed to a record that is still pending, `lowest`
    /// being the lowest pending record the ladder tracks: every record
    /// pending when the ring was held back is numbered up to `through`.
    pub(crate) fn covers(&self, lowest: u64) -> bool {
        self.through.is_none_or(|t| lowest <= t)
    }
}

/// Reads `.ring-owed`; `None` when missing or unreadable.
pub(crate) fn read_owed(home: &Home, id: &TaskId) -> Result<Option<Owed>> {
    Ok(fsx::read_optional(&home.ring_owed(id))?.and_then(|b| Owed::parse(&b)))
}

/// Records that a doorbell is owed (held back at `now`) to the records
/// pending now: names the newest of them. Nothing pending, nothing owed.
pub(crate) fn write_owed(home: &Home, id: &TaskId, now: u64) -> Result<()> {
    match newest_pending(home, id)? {
        Some(seq) => write_owed_through(home, id, now, seq),
        None => clear_owed(home, id),
    }
}

/// [`write_owed`] for a caller that knows the newest pending record.
pub(crate) fn write_owed_through(home: &Home, id: &TaskId, now: u64, seq: u64) -> Result<()> {
    let line = format!("{now}\t{}\n", crate::inbox::record_name(seq));
    fsx::atomic_write(&home.ring_owed(id), line.as_bytes())
}

/// Records (or, with `None`, clears) an owed doorbell.
pub(crate) fn set_owed(home: &Home, id: &TaskId, owed: Option<u64>) -> Result<()> {
    match owed {
        Some(now) => write_owed(home, id, now),
        None => clear_owed(home, id),
    }
}

/// The highest-numbered record pending in the inbox.
fn newest_pending(home: &Home, id: &TaskId) -> Result<Option<u64>> {
    let dir = home.inbox(id);
    let names = match fsx::list_dir(&dir) {
        Ok(n) => n,
        Err(e) if fsx::is_not_found(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(names
        .iter()
        .filter_map(|n| fsx::parse_numbered(n.to_str()?, crate::inbox::EXT))
        .max())
}

/// `.agent-dead`: the agent whose `dead-agent` wake was raised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeadSeen {
    pub(crate) pane: String,
    pub(crate) spawned_at: Option<u64>,
}

/// `state/<id>.agent-dead`: beside the meta, not in the inbox, so a task
/// with no mail gets no inbox directory for it (`fm-ack` tells "no
/// inbox" from an empty one).
pub(crate) fn agent_dead_path(home: &Home, id: &TaskId) -> std::path::PathBuf {
    home.state_dir().join(format!("{id}.agent-dead"))
}

/// Reads `.agent-dead`; `None` when missing or unreadable.
pub(crate) fn read_agent_dead(home: &Home, id: &TaskId) -> Result<Option<DeadSeen>> {
    Ok(
        fsx::read_optional(&agent_dead_path(home, id))?.and_then(|b| {
            let text = String::from_utf8_lossy(&b);
            let mut f = text.lines().next()?.split('\t');
            let _at = f.next()?;
            let pane = f.next()?.trim().to_string();
            let spawned_at = f.next().and_then(|s| s.trim().parse().ok());
            Some(DeadSeen { pane, spawned_at })
        }),
    )
}

/// Records that the `dead-agent` wake for this agent was raised.
pub(crate) fn write_agent_dead(home: &Home, id: &TaskId, now: u64, seen: &DeadSeen) -> Result<()> {
    let spawned = seen.spawned_at.map_or("-".to_string(), |s| s.to_string());
    let line = format!("{now}\t{}\t{spawned}\n", seen.pane);
    fsx::atomic_write(&agent_dead_path(home, id), line.as_bytes())
}

/// Records that the captain stopped this agent (`fm-control exit`): the
/// `.agent-dead` line with a fourth field `stopped`, so the watcher
/// hears no death and `fm restore` does not bring the agent back.
pub(crate) fn write_agent_stopped(
    home: &Home,
    id: &TaskId,
    now: u64,
    seen: &DeadSeen,
) -> Result<()> {
    let spawned = seen.spawned_at.map_or("-".to_string(), |s| s.to_string());
    let line = format!("{now}\t{}\t{spawned}\tstopped\n", seen.pane);
    fsx::atomic_write(&agent_dead_path(home, id), line.as_bytes())
}

/// The agent the captain stopped, when `.agent-dead` says so.
pub(crate) fn agent_stopped(home: &Home, id: &TaskId) -> Result<Option<DeadSeen>> {
    let Some(bytes) = fsx::read_optional(&agent_dead_path(home, id))? else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&bytes);
    let first = text.lines().next().unwrap_or("");
    if first.split('\t').nth(3).map(str::trim) != Some("stopped") {
        return Ok(None);
    }
    read_agent_dead(home, id)
}

/// The agent is alive: a later death is another episode. Reports whether
/// there was a mark to remove.
pub(crate) fn clear_agent_dead(home: &Home, id: &TaskId) -> Result<bool> {
    fsx::remove_optional(&agent_dead_path(home, id))
}

/// The doorbell is no longer owed.
pub(crate) fn clear_owed(home: &Home, id: &TaskId) -> Result<()> {
    fsx::remove_optional(&home.ring_owed(id)).map(drop)
}

/// `.dialog`: the dialog a wake was raised for, and when a key was
/// pressed in the pane since (the captain acted on it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DialogSeen {
    pub(crate) name: String,
    pub(crate) acted: Option<u64>,
}

impl DialogSeen {
    fn parse(bytes: &[u8]) -> Option<DialogSeen> {
        let text = String::from_utf8_lossy(bytes);
        let line = text.lines().next()?.trim();
        let (name, acted) = match line.split_once('\t') {
            Some((n, a)) => (n.trim(), a.trim().parse().ok()),
            None => (line, None),
        };
        (!name.is_empty()).then(|| DialogSeen {
            name: name.to_string(),
            acted,
        })
    }

    fn render(&self) -> String {
        match self.acted {
            Some(at) => format!("{}\t{at}\n", self.name),
            None => format!("{}\n", self.name),
        }
    }
}

/// Reads `.dialog`; `None` when missing or empty.
pub(crate) fn read_dialog(home: &Home, id: &TaskId) -> Result<Option<DialogSeen>> {
    Ok(fsx::read_optional(&home.dialog_seen(id))?.and_then(|b| DialogSeen::parse(&b)))
}

/// Records that the `dialog` wake for `name` was raised.
pub(crate) fn write_dialog(home: &Home, id: &TaskId, name: &str) -> Result<()> {
    fsx::ensure_dir(&home.inbox(id))?;
    let seen = DialogSeen {
        name: name.to_string(),
        acted: None,
    };
    fsx::atomic_write(&home.dialog_seen(id), seen.render().as_bytes())
}

/// A key was pressed in the task's pane at `now`: the dialog a wake was
/// raised for (if any) has had the captain's answer. Nothing without one.
pub(crate) fn mark_dialog_acted(home: &Home, id: &TaskId, now: u64) -> Result<()> {
    if let Some(mut seen) = read_dialog(home, id)? {
        seen.acted = Some(now);
        fsx::atomic_write(&home.dialog_seen(id), seen.render().as_bytes())?;
    }
    Ok(())
}

/// No dialog is up any more.
pub(crate) fn clear_dialog(home: &Home, id: &TaskId) -> Result<()> {
    fsx::remove_optional(&home.dialog_seen(id)).map(drop)
}

/// Removes every ladder file, and the marks of a dialog or a dead agent
/// seen (a spawn or relaunch: another agent).
pub(crate) fn clear(home: &Home, id: &TaskId) -> Result<()> {
    clear_ladder(home, id)?;
    fsx::remove_optional(&home.dialog_seen(id))?;
    fsx::remove_optional(&agent_dead_path(home, id))?;
    Ok(())
}

/// Removes the ladder's own files (ladder rule 1: nothing pending). The
/// marks of what the screen showed (`.dialog`, `.agent-dead`) stay: they
/// end when the screen changes, not with the mail.
pub(crate) fn clear_ladder(home: &Home, id: &TaskId) -> Result<()> {
    fsx::remove_optional(&home.ring_state(id))?;
    fsx::remove_optional(&home.escalated(id))?;
    fsx::remove_optional(&home.ring_owed(id))?;
    Ok(())
}

/// Removes whichever of the two files names `record` (after an ack), and
/// an owed ring once no record is left pending.
pub(crate) fn clear_if_names(home: &Home, id: &TaskId, record: &str) -> Result<()> {
    if read_ring_state(home, id)?.is_some_and(|s| Some(s.seq) == seq_of(record)) {
        fsx::remove_optional(&home.ring_state(id))?;
    }
    if read_escalated(home, id)?.as_deref() == Some(record) {
        fsx::remove_optional(&home.escalated(id))?;
    }
    if newest_pending(home, id)?.is_none() {
        clear_owed(home, id)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_state_round_trips_and_rejects_junk() {
        let s = RingState {
            seq: 7,
            count: 2,
            last: 1_700_000_000,
        };
        assert_eq!(s.render(), b"007.msg\t2\t1700000000\n");
        assert_eq!(RingState::parse(&s.render()), Some(s));
        assert_eq!(RingState::parse(b"007.msg\t2\t1700000000"), Some(s));
        for bad in [
            &b""[..],
            b"007.msg 2 3",
            b"007.msg\tx\t3",
            b"\t1\t2",
            b"a\t1\t2\t3",
            b"a\t1\t2",
        ] {
            assert_eq!(RingState::parse(bad), None);
        }
    }

    #[test]
    fn clearing_only_touches_files_naming_the_record() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let id = TaskId::parse("t").unwrap();
        fsx::ensure_dir(&home.inbox(&id)).unwrap();
        let st = RingState {
            seq: 1,
            count: 1,
            last: 5,
        };
        write_ring_state(&home, &id, &st).unwrap();
        write_escalated(&home, &id, 2).unwrap();
        clear_if_names(&home, &id, "001.msg").unwrap();
        assert_eq!(read_ring_state(&home, &id).unwrap(), None);
        assert_eq!(
            read_escalated(&home, &id).unwrap().as_deref(),
            Some("002.msg")
        );
        clear_if_names(&home, &id, "002.msg").unwrap();
        assert_eq!(read_escalated(&home, &id).unwrap(), None);
        write_ring_state(&home, &id, &st).unwrap();
        write_owed(&home, &id, 9).unwrap();
        assert_eq!(read_owed(&home, &id).unwrap(), None, "nothing pending");
        write_owed_through(&home, &id, 9, 4).unwrap();
        let owed = read_owed(&home, &id).unwrap().unwrap();
        assert_eq!(std::fs::read(home.ring_owed(&id)).unwrap(), b"9\t004.msg\n");
        assert_eq!((owed.at, owed.through), (9, Some(4)));
        assert!(owed.covers(4) && owed.covers(1) && !owed.covers(5));
        let bare = Owed::parse(b"12\n").unwrap();
        assert!(bare.through.is_none() && bare.covers(1000));
        mark_dialog_acted(&home, &id, 7).unwrap();
        assert_eq!(read_dialog(&home, &id).unwrap(), None, "no dialog, no mark");
        write_dialog(&home, &id, "trust").unwrap();
        let seen = |acted| DialogSeen {
            name: "trust".into(),
            acted,
        };
        assert_eq!(read_dialog(&home, &id).unwrap(), Some(seen(None)));
        mark_dialog_acted(&home, &id, 7).unwrap();
        assert_eq!(std::fs::read(home.dialog_seen(&id)).unwrap(), b"trust\t7\n");
        assert_eq!(read_dialog(&home, &id).unwrap(), Some(seen(Some(7))));
        write_dialog(&home, &id, "trust").unwrap();
        assert_eq!(read_dialog(&home, &id).unwrap(), Some(seen(None)));
        clear(&home, &id).unwrap();
        assert!(!home.ring_state(&id).exists());
        assert_eq!(read_owed(&home, &id).unwrap(), None);
        assert_eq!(read_dialog(&home, &id).unwrap(), None);
    }

    #[test]
    fn ladder_files_round_trip_by_path_and_by_bytes() {
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
        let (files, err) = LadderFiles::load(&home, &id);
        assert!(err.is_none());
        assert_eq!(files.ring, Some(r));
        assert_eq!(files.escalated, Some(3));
        let bytes = |p: std::path::PathBuf| std::fs::read(p).ok();
        let parsed = LadderFiles::parse(
            bytes(home.ring_state(&id)).as_deref(),
            bytes(home.escalated(&id)).as_deref(),
            bytes(home.ring_owed(&id)).as_deref(),
        );
        assert_eq!(parsed, files);
        std::fs::write(home.inbox(&id).join("007.msg"), b"x").unwrap();
        set_owed(&home, &id, Some(42)).unwrap();
        let parsed = LadderFiles::parse(None, None, bytes(home.ring_owed(&id)).as_deref());
        assert_eq!(parsed.owed.map(|o| (o.at, o.through)), Some((42, Some(7))));
        assert_eq!(parsed.owed, LadderFiles::load(&home, &id).0.owed);
        clear_ladder(&home, &id).unwrap();
        assert!(LadderFiles::load(&home, &id).0.is_empty());
    }
}

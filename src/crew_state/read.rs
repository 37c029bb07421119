//! Reading a task's own files, each once (SPEC §9.2, §9.3, §4): meta, the
//! status log's fold, the busy record, the run record, the pending inbox
//! count, whether the worktree meta names exists, the brief's `kind` when
//! meta has none, and the harness profile. No tmux, no git.
//!
//! A fleet read starts from one listing of `state/` ([`Listing`]): the
//! tasks (every `<id>.meta`, sorted) and which of their other files exist,
//! so absent ones are never opened. A [`Stamps`] of the files read lets a
//! reader that keeps the [`Facts`] between frames re-read only what
//! changed: a file whose inode, size and modification time are as they
//! were, and whose modification time is older than the read that produced
//! the facts by more than [`SETTLED_SECS`], has not changed since (a write
//! after that read would have given it a later modification time).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::facts::{Escalation, Facts, RunRecord, WorktreeFact};
use crate::config::Config;
use crate::error::Result;
use crate::home::Home;
use crate::meta::TaskMeta;
use crate::status::busy::BusyRecord;
use crate::status::{self};
use crate::task_id::TaskId;
use crate::{fsx, harness, inbox};

/// Which of a task's files the listing saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Present(u8);

impl Present {
    const META: u8 = 1;
    const STATUS: u8 = 2;
    const BUSY: u8 = 4;
    const RUN: u8 = 8;
    const INBOX: u8 = 16;

    /// Unknown: every file may exist (a single task, no listing).
    pub(crate) const ALL: Present = Present(31);

    fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }
}

/// One task of the listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    pub(crate) id: TaskId,
    pub(crate) present: Present,
}

/// The tasks of `state/`, from one directory listing.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    /// Every task with a meta, sorted by id.
    pub(crate) tasks: Vec<Listed>,
}

impl Listing {
    /// Lists `state/` once. A home without `state/` has no tasks.
    pub(crate) fn read(home: &Home) -> Result<Listing> {
        let dir = home.state_dir();
        let mut seen: HashMap<String, u8> = HashMap::new();
        for name in fsx::list_dir(&dir)? {
            let Some(name) = name.to_str() else { continue };
            let Some((stem, bit)) = [
                (".meta", Present::META),
                (".status", Present::STATUS),
                (".busy", Present::BUSY),
                (".run", Present::RUN),
                (".inbox", Present::INBOX),
            ]
            .iter()
            .find_map(|(suffix, bit)| name.strip_suffix(suffix).map(|s| (s, *bit))) else {
                continue;
            };
            if stem.is_empty() {
                continue;
            }
            *seen.entry(stem.to_string()).or_default() |= bit;
        }
        let mut tasks: Vec<Listed> = seen
            .into_iter()
            .filter(|(_, bits)| bits & Present::META != 0)
            .filter_map(|(stem, bits)| {
                Some(Listed {
                    id: TaskId::parse(&stem).ok()?,
                    present: Present(bits),
                })
            })
            .collect();
        tasks.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        Ok(Listing { tasks })
    }
}

/// Identity of one file as last read: inode, size, modification time (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

/// A file changed less than this long before it was read is read again
/// next time, whatever its stamp says (modification times are coarse).
pub(crate) const SETTLED_SECS: i128 = 1;

impl Stamp {
    /// The stamp of `path` (not following a symlink); `None` when it
    /// cannot be taken.
    fn of(path: &Path) -> Option<Stamp> {
        let md = fsx::stat(path).ok()??;
        Some(Stamp {
            ino: md.ino(),
            size: md.size(),
            mtime_ns: i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec()),
        })
    }

    /// Whether a file with this stamp, read at `read_at` (Unix seconds),
    /// can have changed without changing its stamp.
    fn settled(self, read_at: u64) -> bool {
        self.mtime_ns < (i128::from(read_at) - SETTLED_SECS) * 1_000_000_000
    }
}

/// The stamps of a task's files, taken before they were read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Stamps {
    present: Present,
    meta: Option<Stamp>,
    status: Option<Stamp>,
    busy: Option<Stamp>,
    run: Option<Stamp>,
    inbox: Option<Stamp>,
    /// The inbox's `.escalated` and `.ring-state` (files inside it: a
    /// rewrite in place need not change the inbox's own stamp).
    escalated: Option<Stamp>,
    ring_state: Option<Stamp>,
    /// The brief (read only when meta has no `kind`); `None` when not
    /// taken because the facts do not depend on it.
    brief: Option<Option<Stamp>>,
    /// When the files were read (Unix seconds, wall clock).
    read_at: u64,
}

impl Stamps {
    /// Takes the stamps of the task's present files, and of its brief when
    /// `brief` (the facts may depend on it).
    pub(crate) fn take(
        home: &Home,
        id: &TaskId,
        present: Present,
        now: u64,
        brief: bool,
    ) -> Stamps {
        let take = |bit: u8, path: &Path| present.has(bit).then(|| Stamp::of(path)).flatten();
        Stamps {
            present,
            meta: take(Present::META, &home.meta(id)),
            status: take(Present::STATUS, &home.status(id)),
            busy: take(Present::BUSY, &home.busy(id)),
            run: take(Present::RUN, &home.run(id)),
            inbox: take(Present::INBOX, &home.inbox(id)),
            escalated: take(Present::INBOX, &home.escalated(id)),
            ring_state: take(Present::INBOX, &home.ring_state(id)),
            brief: brief.then(|| Stamp::of(&home.brief(id))),
            read_at: now,
        }
    }

    /// Whether facts read with `self` still hold for files stamped `now`:
    /// the same files exist, every stamp is equal and settled.
    pub(crate) fn still(&self, now: &Stamps) -> bool {
        let same = |a: Option<Stamp>, b: Option<Stamp>| match (a, b) {
            (Some(a), Some(b)) => a == b && a.settled(self.read_at),
            (None, None) => true,
            _ => false,
        };
        self.present == now.present
            && same(self.meta, now.meta)
            && same(self.status, now.status)
            && same(self.busy, now.busy)
            && same(self.run, now.run)
            && same(self.inbox, now.inbox)
            && same(self.escalated, now.escalated)
            && same(self.ring_state, now.ring_state)
            && match (self.brief, now.brief) {
                (Some(a), Some(b)) => same(a, b),
                (_, None) => true,
                (None, Some(_)) => false,
            }
    }

    /// Whether facts read with these stamps depend on the brief.
    pub(crate) fn needs_brief(f: &Facts) -> bool {
        f.meta.as_ref().is_some_and(|m| m.kind.is_none())
    }
}

fn read_if(present: Present, bit: u8, path: &Path) -> Result<Option<(Vec<u8>, Option<u64>)>> {
    if !present.has(bit) {
        return Ok(None);
    }
    fsx::read_optional_mtime(path)
}

/// Reads the task's own files into facts; a file that cannot be read makes
/// the task's facts say so ([`Facts::error`]).
pub(crate) fn task(home: &Home, cfg: &Config, id: &TaskId, present: Present, now: u64) -> Facts {
    files(home, cfg, id, present, now).unwrap_or_else(|e| {
        let mut f = Facts::empty(id.clone(), now);
        f.error = Some(e.to_string());
        f
    })
}

fn files(home: &Home, cfg: &Config, id: &TaskId, present: Present, now: u64) -> Result<Facts> {
    let mut f = Facts::empty(id.clone(), now);
    f.meta = read_if(present, Present::META, &home.meta(id))?
        .map(|(b, _)| TaskMeta::parse_checked(&b))
        .transpose()?;
    if let Some((bytes, mtime)) = read_if(present, Present::STATUS, &home.status(id))? {
        f.log_mtime = mtime;
        f.fold = status::Fold::from_bytes(&bytes, &cfg.brief.paused_verb);
        if f.fold.lines > 0 {
            f.last_line_at = f.fold.last_at.or(f.log_mtime);
        }
    }
    f.busy =
        read_if(present, Present::BUSY, &home.busy(id))?.and_then(|(b, _)| BusyRecord::parse(&b));
    f.run = read_if(present, Present::RUN, &home.run(id))?.map(|(b, m)| RunRecord::parse(&b, m));
    if present.has(Present::INBOX) {
        let pending = fsx::list_numbered(&home.inbox(id), inbox::EXT)?;
        f.inbox_pending = pending.len();
        if !pending.is_empty() {
            f.escalated = escalation(home, id, &pending)?;
        }
    }
    if let Some(meta) = &f.meta {
        if meta.kind.is_none() {
            f.brief_kind = crate::dod::gate::brief_kind(home, id);
        }
        if let Some(name) = &meta.harness {
            f.profile = harness::profile(&cfg.harness, name);
        }
    }
    check_worktree(&mut f);
    Ok(f)
}

/// `.escalated` when it names one of the `pending` records, with the
/// rings `.ring-state` counted for it (0 when it tracks another record).
fn escalation(home: &Home, id: &TaskId, pending: &[u64]) -> Result<Option<Escalation>> {
    let Some((bytes, at)) = fsx::read_optional_mtime(&home.escalated(id))? else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&bytes);
    let Some(record) = text.split_whitespace().next() else {
        return Ok(None);
    };
    if !fsx::parse_numbered(record, inbox::EXT).is_some_and(|n| pending.contains(&n)) {
        return Ok(None);
    }
    let rings = inbox::ladder_files::read_ring_state(home, id)?
        .filter(|r| r.record == record)
        .map_or(0, |r| r.count);
    Ok(Some(Escalation {
        record: record.to_string(),
        rings,
        at,
    }))
}

/// Rule 1's look at the worktree meta names (asked on every read: it can
/// be torn down while its task's files stay as they were).
pub(crate) fn check_worktree(f: &mut Facts) {
    f.worktree = WorktreeFact::Unchecked;
    if let Some(meta) = &f.meta
        && f.kind().has_worktree()
        && let Some(wt) = &meta.worktree
    {
        f.worktree = if wt.is_dir() {
            WorktreeFact::Present
        } else {
            WorktreeFact::Missing
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_finds_tasks_by_their_meta_and_notes_their_files() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let state = home.state_dir();
        std::fs::create_dir_all(state.join("b.inbox")).unwrap();
        for name in [
            "b.meta",
            "b.status",
            "a.x.status.meta",
            "a.x.status.status",
            "a.x.status.run",
            "orphan.status",
            ".meta",
            "wakes.log",
            "events.jsonl",
            "..meta",
        ] {
            std::fs::write(state.join(name), "").unwrap();
        }
        let l = Listing::read(&home).unwrap();
        let got: Vec<(&str, u8)> = l
            .tasks
            .iter()
            .map(|t| (t.id.as_str(), t.present.0))
            .collect();
        assert_eq!(
            got,
            [
                ("a.x.status", Present::META | Present::STATUS | Present::RUN),
                ("b", Present::META | Present::STATUS | Present::INBOX),
            ]
        );
    }

    #[test]
    fn stamps_trust_only_settled_unchanged_files() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        std::fs::create_dir_all(home.state_dir()).unwrap();
        let id = TaskId::parse("t").unwrap();
        std::fs::write(home.meta(&id), "kind=ship\n").unwrap();
        let present = Present(Present::META);
        let now = crate::clock::now();
        let take = |present, at| Stamps::take(&home, &id, present, at, true);
        let before = take(present, now);
        // Just written: not settled, so read again.
        assert!(!before.still(&take(present, now)));
        // Read long after it was written: settled and unchanged.
        let later = take(present, now + 5);
        assert!(later.still(&take(present, now + 5)));
        // A brief appearing matters only when the facts depend on it.
        std::fs::create_dir_all(home.task_data(&id)).unwrap();
        std::fs::write(home.brief(&id), "---\nkind: scout\n---\n").unwrap();
        assert!(!later.still(&take(present, now + 5)));
        assert!(later.still(&Stamps::take(&home, &id, present, now + 5, false)));
        // Replaced (a new inode), appended to, or a new file appearing.
        std::fs::write(home.meta(&id), "kind=ship\nx=1\n").unwrap();
        assert!(!later.still(&take(present, now + 5)));
        let more = Present(Present::META | Present::STATUS);
        assert!(!later.still(&take(more, now + 5)));
    }
}

//! One listing of `state/`, for every reader of it: the tasks (sorted) and
//! which of their files exist (`.meta`, `.status`, `.busy`, `.run`,
//! `.inbox`, `.usage`), so absent ones are never opened. The fleet view lists the
//! tasks with a meta ([`Listing::read`]); the watcher every task with a
//! meta, an inbox or a status log ([`Listing::any_of`]).

use std::hash::BuildHasher;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;

use rustix::fs::RawDir;

use crate::error::Result;
use crate::fsx;
use crate::home::Home;
use crate::task_id::TaskId;

/// Which of a task's files the listing saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Present(pub(crate) u8);

impl Present {
    pub(crate) const META: u8 = 1;
    pub(crate) const STATUS: u8 = 2;
    pub(crate) const BUSY: u8 = 4;
    pub(crate) const RUN: u8 = 8;
    pub(crate) const INBOX: u8 = 16;
    pub(crate) const USAGE: u8 = 32;
    /// `.agent-home`: where the agent writes its own reports.
    pub(crate) const AGENT_HOME: u8 = 64;

    /// Unknown: every file may exist (a single task, no listing).
    pub(crate) const ALL: Present = Present(127);

    pub(crate) fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }

    /// The task has an inbox directory.
    pub(crate) fn inbox(self) -> bool {
        self.has(Present::INBOX)
    }

    /// The task has a status log.
    pub(crate) fn status(self) -> bool {
        self.has(Present::STATUS)
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
    /// Every task listed, sorted by id.
    pub(crate) tasks: Vec<Listed>,
    /// `state/`, opened by the checked walk for the listing, and kept for
    /// the view's reads (`crew_state`'s `StateDir::listed`).
    pub(crate) dir: Option<OwnedFd>,
}

/// The task file a name is, by its suffix: the stem's length and the bit.
fn task_file(name: &[u8]) -> Option<(usize, u8)> {
    // By the last byte first: one suffix to compare.
    let (suffix, bit): (&[u8], u8) = match name.last()? {
        b'a' => (b".meta", Present::META),
        b's' => (b".status", Present::STATUS),
        b'y' => (b".busy", Present::BUSY),
        b'n' => (b".run", Present::RUN),
        b'x' => (b".inbox", Present::INBOX),
        // `.usage` and `.agent-home` share their last byte.
        b'e' if name.ends_with(b".usage") => (b".usage", Present::USAGE),
        b'e' => (b".agent-home", Present::AGENT_HOME),
        _ => return None,
    };
    name.ends_with(suffix)
        .then(|| (name.len() - suffix.len(), bit))
}

impl Listing {
    /// Lists `state/` once: every task with a meta. A home without
    /// `state/` has no tasks.
    pub(crate) fn read(home: &Home) -> Result<Listing> {
        Listing::any_of(home, Present::META)
    }

    /// Lists `state/` once: every task with any of the files `bits`.
    pub(crate) fn any_of(home: &Home, bits: u8) -> Result<Listing> {
        let path = home.state_dir();
        let dir = match fsx::open_dir(&path, "read directory", &path, false) {
            Ok(d) => OwnedFd::from(d),
            Err(e) if fsx::is_not_found(&e) => return Ok(Listing::default()),
            Err(e) => return Err(e),
        };
        // Each task's stem once, one after another, and a table of them:
        // no allocation per name, and a few bytes a task (a name is at
        // most 255 bytes; a name that does not fit is no task's).
        let mut stems: Vec<u8> = Vec::new();
        let mut seen: hashbrown::HashTable<(u32, u8, u8)> = hashbrown::HashTable::new();
        let hasher = foldhash::fast::RandomState::default();
        let stem_of = |(at, len, _): (u32, u8, u8)| at as usize..at as usize + usize::from(len);
        let mut buf = vec![MaybeUninit::<u8>::uninit(); 64 << 10];
        let mut entries = RawDir::new(&dir, &mut buf);
        while let Some(entry) = entries.next() {
            let entry = entry.map_err(|e| crate::Error::io("read directory", &path, e.into()))?;
            let name = entry.file_name().to_bytes();
            let Some((stem, bit)) = task_file(name) else {
                continue;
            };
            let (Ok(at), Ok(len)) = (u32::try_from(stems.len()), u8::try_from(stem)) else {
                continue;
            };
            if len == 0 {
                continue;
            }
            let key = &name[..stem];
            let hash = hasher.hash_one(key);
            let same = |e: &(u32, u8, u8)| stems.get(stem_of(*e)) == Some(key);
            if let Some(e) = seen.find_mut(hash, same) {
                e.2 |= bit;
                continue;
            }
            seen.insert_unique(hash, (at, len, bit), |e| {
                hasher.hash_one(stems.get(stem_of(*e)).unwrap_or_default())
            });
            stems.extend_from_slice(key);
        }
        let mut tasks: Vec<Listed> = seen
            .iter()
            .filter(|e| e.2 & bits != 0)
            .filter_map(|&e| {
                let bits = e.2;
                // A name that is not UTF-8 names no task.
                let stem = std::str::from_utf8(stems.get(stem_of(e))?).ok()?;
                Some(Listed {
                    id: TaskId::parse(stem).ok()?,
                    present: Present(bits),
                })
            })
            .collect();
        tasks.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        Ok(Listing {
            tasks,
            dir: Some(dir),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_file_is_told_by_its_suffix() {
        for (name, stem, bit) in [
            (&b"t1.meta"[..], 2, Present::META),
            (b"t1.status", 2, Present::STATUS),
            (b"t1.busy", 2, Present::BUSY),
            (b"t1.run", 2, Present::RUN),
            (b"t1.inbox", 2, Present::INBOX),
            (b"t1.usage", 2, Present::USAGE),
            (b"t1.agent-home", 2, Present::AGENT_HOME),
        ] {
            assert_eq!(task_file(name), Some((stem, bit)), "{name:?}");
        }
        assert_eq!(task_file(b"t1.note"), None);
        assert_eq!(task_file(b"t1.home"), None);
        let all = [
            Present::META,
            Present::STATUS,
            Present::BUSY,
            Present::RUN,
            Present::INBOX,
            Present::USAGE,
            Present::AGENT_HOME,
        ];
        assert_eq!(all.iter().fold(0, |a, b| a | b), Present::ALL.0);
    }
}

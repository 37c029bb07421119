//! Which tasks a pass looks at: one listing of `state/`, each task with
//! what the listing saw of its files.

use crate::error::Result;
use crate::fsx;
use crate::home::Home;
use crate::listing::{Listing, Present};
use crate::task_id::TaskId;

/// What the one listing of `state/` showed of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(super) inbox: bool,
    pub(super) status: bool,
}

impl Seen {
    /// Not listed: look for everything.
    pub(crate) const ANY: Seen = Seen {
        inbox: true,
        status: true,
    };
}

/// Every task with a meta, inbox or status log, from one listing of
/// `state/` (the fleet view's, [`Listing`]), with which of its inbox and
/// status log the listing showed.
pub(crate) fn scan(home: &Home) -> Result<Vec<(TaskId, Seen)>> {
    let listing = Listing::any_of(home, Present::META | Present::INBOX | Present::STATUS)?;
    Ok(listing
        .tasks
        .into_iter()
        .map(|t| {
            let seen = Seen {
                inbox: t.present.inbox(),
                status: t.present.status(),
            };
            (t.id, seen)
        })
        .collect())
}

/// Ids of every task with a meta, inbox or status log, from one listing
/// of `state/`.
pub(crate) fn scan_tasks(home: &Home) -> Result<Vec<TaskId>> {
    Ok(scan(home)?.into_iter().map(|(id, _)| id).collect())
}

pub(super) fn mtime_secs(path: &std::path::Path) -> Option<u64> {
    let t = fsx::stat(path).ok()??.modified().ok()?;
    t.duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task is one with a meta, an inbox or a status log (a busy or run
    /// record alone is none), with what the listing showed of the two.
    #[test]
    fn the_scan_lists_tasks_with_a_meta_inbox_or_log() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let state = home.state_dir();
        std::fs::create_dir_all(state.join("b.inbox")).unwrap();
        for name in [
            "a.meta", "c.status", "c.busy", "d.busy", "e.run", "poke", ".meta", "-x.meta",
        ] {
            std::fs::write(state.join(name), "").unwrap();
        }
        let seen = |inbox, status| Seen { inbox, status };
        let got = scan(&home).unwrap();
        let got: Vec<(&str, Seen)> = got.iter().map(|(id, s)| (id.as_str(), *s)).collect();
        assert_eq!(
            got,
            [
                ("a", seen(false, false)),
                ("b", seen(true, false)),
                ("c", seen(false, true)),
            ]
        );
        let empty = tempfile::tempdir().unwrap();
        assert!(scan(&Home::at(empty.path()).unwrap()).unwrap().is_empty());
    }
}

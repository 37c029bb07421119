//! Which tasks a pass looks at: one listing of `state/`, each task with
//! what the listing saw of its files.

use std::mem::MaybeUninit;
use std::os::fd::AsFd;

use rustix::fs::RawDir;

use crate::error::Result;
use crate::fsx;
use crate::home::Home;
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
/// `state/`, with which of its inbox and status log the listing showed.
pub(crate) fn scan(home: &Home) -> Result<Vec<(TaskId, Seen)>> {
    let path = home.state_dir();
    let dir = match fsx::open_dir(&path, "read directory", &path, false) {
        Ok(d) => d,
        Err(e) if fsx::is_not_found(&e) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    // One large buffer: `state/` holds about three names per task.
    let mut buf = vec![MaybeUninit::<u8>::uninit(); 256 * 1024];
    let mut entries = RawDir::new(dir.as_fd(), &mut buf);
    let mut found: Vec<(TaskId, u8)> = Vec::new();
    while let Some(entry) = entries.next() {
        let entry = entry.map_err(|e| crate::Error::io("read directory", &path, e.into()))?;
        let Ok(name) = entry.file_name().to_str() else {
            continue;
        };
        let Some((stem, what)) = [".meta", ".inbox", ".status"]
            .iter()
            .enumerate()
            .find_map(|(i, s)| name.strip_suffix(s).map(|stem| (stem, i)))
        else {
            continue;
        };
        if let Ok(id) = TaskId::parse(stem) {
            found.push((id, 1 << what));
        }
    }
    found.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut out: Vec<(TaskId, Seen)> = Vec::with_capacity(found.len() / 2);
    for (id, bit) in found {
        let seen = match out.last_mut() {
            Some((last, seen)) if *last == id => seen,
            _ => {
                out.push((
                    id,
                    Seen {
                        inbox: false,
                        status: false,
                    },
                ));
                &mut out.last_mut().expect("just pushed").1
            }
        };
        seen.inbox |= bit == 2;
        seen.status |= bit == 4;
    }
    Ok(out)
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

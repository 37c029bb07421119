//! Reading every task's files for a pass: relative to one open `state/`,
//! on every core, each task's inbox answered from its memo while it is
//! unchanged, and anything unusual read again by its path (see
//! [`super::pass`] for why).

use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir};
use rustix::io::Errno;

use super::TOOL;
use super::act::TaskIn;
use super::ladder::{self, LadderFiles, Pending};

use super::memo::InboxMemo;
use super::scan::{Seen, mtime_secs};
use super::status_wakes::LogFacts;
use crate::error::Result;
use crate::home::Home;
use crate::inbox::{self, Record};
use crate::meta::TaskMeta;
use crate::stamp::Stamp;
use crate::task_id::TaskId;
use crate::{clock, fsx};

pub use super::state::State;

/// How a pass reads the tasks' files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Read {
    /// Relative to one open `state/`, on every core.
    Fast,
    /// Every file by its path, one task after another (what the fast
    /// path falls back to, and the answer it must give).
    ByPath,
}

/// Where a task's warnings go while tasks are read in parallel: kept in
/// order and printed (through [`State::warn`], once per process) after.
#[derive(Debug, Default)]
pub(super) struct Notes {
    /// `(deduplicated, text)`: `true` goes through [`State::warn`], `false`
    /// is printed as is.
    lines: Vec<(bool, String)>,
}

impl Notes {
    fn warn(&mut self, msg: String) {
        self.lines.push((true, msg));
    }

    pub(super) fn flush(self, state: &mut State) {
        for (dedup, line) in self.lines {
            if dedup {
                state.warn(line);
            } else {
                crate::output::err_line(&line);
            }
        }
    }
}

/// Pending records in order up to and including the first one that is
/// not fire-and-forget (all the ladder needs). A record that cannot be
/// read (a symlink, no `--` line, an I/O error) is skipped with a warning
/// (once per process) naming it, so it never hides the records after it.
fn load_pending(
    home: &Home,
    id: &TaskId,
    seqs: &[u64],
    now: u64,
    notes: &mut Notes,
    mut load: impl FnMut(u64) -> Result<Option<Record>>,
) -> (Vec<Pending>, Option<Record>, bool) {
    let mut out = Vec::new();
    let mut stamped = true;
    for &seq in seqs {
        let rec = match load(seq) {
            Ok(Some(rec)) => rec,
            Ok(None) => continue,
            Err(e) => {
                let name = fsx::numbered_name(seq, inbox::EXT);
                notes.warn(format!("{id}: skipping {name}: {e}"));
                continue;
            }
        };
        let at = if let Some(at) = clock::parse_rfc3339(&rec.at) {
            at
        } else {
            stamped = false;
            mtime_secs(&home.inbox_record(id, seq)).unwrap_or(now)
        };
        out.push(Pending {
            seq,
            at,
            fire_and_forget: rec.fire_and_forget,
        });
        if !rec.fire_and_forget {
            return (out, Some(rec), stamped);
        }
    }
    (out, None, stamped)
}

/// One task as read: its ladder inputs (or why they could not be read),
/// whether it has an inbox directory, its status log, and the warnings.
pub(super) struct Gathered {
    pub(super) task: Result<TaskIn>,
    pub(super) inbox_dir: bool,
    pub(super) status: Result<Option<LogFacts>>,
    pub(super) notes: Notes,
    pub(super) memo: Memo,
}

/// What a task's read does to its [`InboxMemo`].
pub(super) enum Memo {
    /// Keep it (it answered, or there is none to keep).
    Keep,
    /// The inbox was read and may be answered from memory next time.
    Set(Box<InboxMemo>),
    /// Forget it (the inbox changed in a way not to remember).
    Drop,
}

/// Fewer tasks than this are read on one thread.
const PARALLEL_FROM: usize = 256;

/// Reads every task of `ids`, in their order.
pub(super) fn gather_all(
    home: &Home,
    ids: &[(TaskId, Seen)],
    now: u64,
    cfg: &crate::config::WatchCfg,
    how: Read,
    memo: &HashMap<TaskId, InboxMemo>,
    sweep: bool,
) -> Result<Vec<Gathered>> {
    if how == Read::ByPath {
        return Ok(ids
            .iter()
            .map(|(id, _)| gather_by_path(home, id, now, cfg, sweep))
            .collect());
    }
    // `state/` itself is reached by the checked walk, once.
    let state = OwnedFd::from(fsx::open_dir(
        &home.state_dir(),
        "open directory",
        &home.state_dir(),
        false,
    )?);
    let read_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let sh = Shared {
        home,
        state: &state,
        now,
        cfg,
        memo,
        read_at,
        sweep,
    };
    // Not asked of the system for a few tasks (it reads cgroup files).
    let threads = if ids.len() < PARALLEL_FROM {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, std::num::NonZero::get)
            .min(8)
            .min(ids.len() / (PARALLEL_FROM / 2).max(1))
            .max(1)
    };
    if threads < 2 {
        let mut r = Reader::new(sh);
        return Ok(ids.iter().map(|(id, seen)| r.gather(id, *seen)).collect());
    }
    let chunk = ids.len().div_ceil(threads);
    let parts: Vec<Vec<Gathered>> = std::thread::scope(|s| {
        let handles: Vec<_> = ids
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    let mut r = Reader::new(sh);
                    part.iter()
                        .map(|(id, seen)| r.gather(id, *seen))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a reader thread panicked"))
            .collect()
    });
    Ok(parts.into_iter().flatten().collect())
}

/// One task's files, each by its path (the way every file was read before
/// the fast path, and its fallback).
pub(super) fn gather_by_path(
    home: &Home,
    id: &TaskId,
    now: u64,
    cfg: &crate::config::WatchCfg,
    sweep: bool,
) -> Gathered {
    let mut notes = Notes::default();
    let task = list_inbox(home, id).and_then(|listing| {
        let (pending, target, _) = load_pending(home, id, &listing.seqs, now, &mut notes, |seq| {
            inbox::load_record(home, id, seq)
        });
        let files = if listing.ladder_files {
            ladder_files_by_path(home, id, target.is_some(), &mut notes)
        } else {
            LadderFiles::default()
        };
        finish(home, id, pending, target, files, now, cfg, sweep)
    });
    Gathered {
        task,
        inbox_dir: fsx::is_dir(&home.inbox(id)).unwrap_or(false),
        status: super::status_wakes::log_facts(home, id),
        notes,
        memo: Memo::Drop,
    }
}

fn ladder_files_by_path(home: &Home, id: &TaskId, tracked: bool, notes: &mut Notes) -> LadderFiles {
    let (files, err) = LadderFiles::load(home, id);
    if let Some(e) = err
        && tracked
    {
        notes
            .lines
            .push((false, format!("{TOOL}: warning: {id}: {e}")));
    }
    files
}

/// The task's ladder inputs once its records and ladder files are read:
/// the meta only when the ladder may look at the pane, or the pass looks
/// at every pane (`sweep`).
#[allow(clippy::too_many_arguments)]
fn finish(
    home: &Home,
    id: &TaskId,
    pending: Vec<Pending>,
    target: Option<Record>,
    files: LadderFiles,
    now: u64,
    cfg: &crate::config::WatchCfg,
    sweep: bool,
) -> Result<TaskIn> {
    let meta = if sweep || ladder::needs_pane(&pending, &files, now, cfg) {
        TaskMeta::load(home, id)?
    } else {
        None
    };
    Ok(TaskIn {
        id: id.clone(),
        pending,
        target,
        files,
        meta,
    })
}

/// What every reader of one pass shares.
#[derive(Clone, Copy)]
struct Shared<'a> {
    home: &'a Home,
    state: &'a OwnedFd,
    now: u64,
    cfg: &'a crate::config::WatchCfg,
    memo: &'a HashMap<TaskId, InboxMemo>,
    /// Wall-clock seconds when the pass began reading.
    read_at: u64,
    /// Every task's meta is read (the pass looks at every pane).
    sweep: bool,
}

/// Reads tasks relative to an open `state/`, with buffers reused from one
/// task to the next.
struct Reader<'a> {
    sh: Shared<'a>,
    buf: Vec<u8>,
    dirbuf: Vec<MaybeUninit<u8>>,
}

/// What the fast path met where it does not decide: read by path.
struct Unusual;

impl<'a> Reader<'a> {
    fn new(sh: Shared<'a>) -> Reader<'a> {
        Reader {
            sh,
            buf: vec![0; 16 * 1024],
            dirbuf: vec![MaybeUninit::uninit(); 16 * 1024],
        }
    }

    fn gather(&mut self, id: &TaskId, seen: Seen) -> Gathered {
        let status = if seen.status {
            self.log_facts(id)
        } else {
            Ok(None)
        };
        let mut notes = Notes::default();
        let read = if seen.inbox {
            self.read_inbox(id, &mut notes)
        } else {
            Ok((None, Memo::Drop))
        };
        let Ok((found, memo)) = read else {
            let mut g = gather_by_path(self.sh.home, id, self.sh.now, self.sh.cfg, self.sh.sweep);
            g.status = status;
            return g;
        };
        let inbox_dir = found.is_some();
        let (pending, target, files) = found.unwrap_or_default();
        let task = finish(
            self.sh.home,
            id,
            pending,
            target,
            files,
            self.sh.now,
            self.sh.cfg,
            self.sh.sweep,
        );
        Gathered {
            task,
            inbox_dir,
            status,
            notes,
            memo,
        }
    }

    /// The status log's facts by one `fstatat`; by path when it is
    /// anything but there or missing.
    fn log_facts(&self, id: &TaskId) -> Result<Option<LogFacts>> {
        let name = format!("{id}.status");
        match rustix::fs::statat(self.sh.state, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile => {
                Ok(Some(LogFacts {
                    ino: st.st_ino,
                    len: u64::try_from(st.st_size).unwrap_or(0),
                }))
            }
            Ok(_) | Err(Errno::NOENT) => Ok(None),
            Err(_) => super::status_wakes::log_facts(self.sh.home, id),
        }
    }

    /// The inbox's pending records (up to the tracked one) and ladder
    /// files (`None` when the task has no inbox), from memory when its
    /// directory is as it was at a settled earlier read, with what to do
    /// with the memory.
    #[allow(clippy::type_complexity)]
    fn read_inbox(
        &mut self,
        id: &TaskId,
        notes: &mut Notes,
    ) -> std::result::Result<(Option<(Vec<Pending>, Option<Record>, LadderFiles)>, Memo), Unusual>
    {
        let name = format!("{id}.inbox");
        if let Some(m) = self.sh.memo.get(id) {
            match rustix::fs::statat(self.sh.state, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st)
                    if FileType::from_raw_mode(st.st_mode) == FileType::Directory
                        && Stamp::of_stat(&st) == m.key
                        && m.key.settled(self.sh.read_at) =>
                {
                    let found = (m.pending.clone(), m.target.clone(), m.files);
                    return Ok((Some(found), Memo::Keep));
                }
                Err(Errno::NOENT) => return Ok((None, Memo::Drop)),
                _ => {}
            }
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let dir = match rustix::fs::openat(self.sh.state, name.as_str(), flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok((None, Memo::Drop)),
            Err(_) => return Err(Unusual),
        };
        // Taken before the listing: a change after it moves the times.
        let key = rustix::fs::fstat(&dir).ok().map(|st| Stamp::of_stat(&st));
        let quiet = notes.lines.len();
        let (listing, present) = self.list(&dir)?;
        let (home, now) = (self.sh.home, self.sh.now);
        let buf = &mut self.buf;
        // A record the fast read cannot take (a symlink, a FIFO, no `--`
        // line, an I/O error) is read again by path, which says why.
        let (pending, target, stamped) = load_pending(home, id, &listing.seqs, now, notes, |seq| {
            let name = fsx::numbered_name(seq, inbox::EXT);
            match fsx::read_small_at(&dir, &name, buf) {
                Ok(None) => Ok(None),
                Ok(Some(len)) => match inbox::parse(seq, &buf[..len]) {
                    Some(r) => Ok(Some(r)),
                    None => inbox::load_record(home, id, seq),
                },
                Err(_) => inbox::load_record(home, id, seq),
            }
        });
        let files = if listing.ladder_files {
            match self.ladder_files(&dir, present) {
                Some(f) => f,
                None => ladder_files_by_path(home, id, target.is_some(), notes),
            }
        } else {
            LadderFiles::default()
        };
        // Remembered only when nothing about it needed a word or the clock.
        let memo = match key {
            Some(key) if stamped && notes.lines.len() == quiet && key.settled(self.sh.read_at) => {
                Memo::Set(Box::new(InboxMemo {
                    key,
                    pending: pending.clone(),
                    target: target.clone(),
                    files,
                }))
            }
            _ => Memo::Drop,
        };
        Ok((Some((pending, target, files)), memo))
    }

    /// One listing of an open inbox, with which of the three ladder files
    /// it showed (those not listed are not opened).
    fn list(&mut self, dir: &OwnedFd) -> std::result::Result<(InboxListing, [bool; 3]), Unusual> {
        let mut out = InboxListing {
            seqs: Vec::new(),
            ladder_files: false,
        };
        let mut present = [false; 3];
        let mut entries = RawDir::new(dir.as_fd(), &mut self.dirbuf);
        while let Some(entry) = entries.next() {
            let entry = entry.map_err(|_| Unusual)?;
            let Ok(name) = entry.file_name().to_str() else {
                continue;
            };
            if let Some(i) = LADDER_NAMES.iter().position(|n| *n == name) {
                out.ladder_files = true;
                if let Some(p) = present.get_mut(i) {
                    *p = true;
                }
            } else if let Some(n) = fsx::parse_numbered(name, inbox::EXT) {
                out.seqs.push(n);
            }
        }
        out.seqs.sort_unstable();
        Ok((out, present))
    }

    /// The ladder files relative to the open inbox; `None` when one of
    /// them is anything but a readable file or missing.
    fn ladder_files(&mut self, dir: &OwnedFd, present: [bool; 3]) -> Option<LadderFiles> {
        let mut read = |i: usize| -> Option<Option<Vec<u8>>> {
            if !present[i] {
                return Some(None);
            }
            match fsx::read_small_at(dir, LADDER_NAMES[i], &mut self.buf) {
                Ok(None) => Some(None),
                Ok(Some(len)) => Some(Some(self.buf[..len].to_vec())),
                Err(_) => None,
            }
        };
        let ring = read(0)?;
        let escalated = read(1)?;
        let owed = read(2)?;
        Some(LadderFiles::parse(
            ring.as_deref(),
            escalated.as_deref(),
            owed.as_deref(),
        ))
    }
}

/// The ladder files' names in an inbox, the three read first (`.dialog`
/// only says a dialog was seen).
const LADDER_NAMES: [&str; 4] = [".ring-state", ".escalated", ".ring-owed", ".dialog"];

/// One listing of an inbox: pending record numbers (ascending) and
/// whether any ladder file is present (so absent ones are not opened).
struct InboxListing {
    seqs: Vec<u64>,
    ladder_files: bool,
}

fn list_inbox(home: &Home, id: &TaskId) -> Result<InboxListing> {
    let dir = home.inbox(id);
    fsx::refuse_symlink(&dir)?;
    let mut out = InboxListing {
        seqs: Vec::new(),
        ladder_files: false,
    };
    let (ring, esc, owed) = (home.ring_state(id), home.escalated(id), home.ring_owed(id));
    let dialog = home.dialog_seen(id);
    let ladder_names = [
        ring.file_name(),
        esc.file_name(),
        owed.file_name(),
        dialog.file_name(),
    ];
    for name in fsx::list_dir(&dir)? {
        if ladder_names.contains(&Some(name.as_os_str())) {
            out.ladder_files = true;
        } else if let Some(n) = name
            .to_str()
            .and_then(|s| fsx::parse_numbered(s, inbox::EXT))
        {
            out.seqs.push(n);
        }
    }
    out.seqs.sort_unstable();
    Ok(out)
}

//! One watcher pass over every task: gather each task's files, ask tmux
//! once per socket (and only when some task's ladder needs pane facts),
//! let [`ladder::decide`] choose, carry the action out (`act`), then surface new
//! status lines as wakes and touch the heartbeat.
//!
//! Order of writes, chosen so a crash never loses anything and never rings
//! twice: a ring first records the attempt in `.ring-state` and only then
//! types (a ladder file that cannot be written means no ring at all, and
//! one wake saying so); an escalation appends its wake *then* writes
//! `.escalated`, and skips the wake if this episode (the record's queue
//! time onwards) already logged that exact wake. A status wake that cannot
//! be appended rewinds its log's offset so the next pass retries it.
//! One task's trouble is reported and never stops the pass, and one bad
//! record (a symlink, say) never stops its task: it is skipped with a
//! warning and the ladder works on the task's other records.
//!
//! Reading is the cost of a steady pass, so it is done once and relative:
//! `state/` is opened once (the checked walk) and listed once; each task's
//! inbox is opened relative to it and listed once, its records and ladder
//! files are read relative to the inbox, its status log is looked at with
//! one `fstatat` (only when the listing of `state/` showed one). Anything
//! unusual on that fast path (a symlink, a FIFO, an unreadable file, a
//! record that does not parse) is read again the plain way, by path, so the
//! warning and the outcome are exactly those of a by-path read. Tasks are
//! read on every core (the reading has no side effects; its warnings are
//! printed in task order afterwards); ringing, escalating and the status
//! wakes then run one task after another, as before.

use std::collections::{BTreeMap, HashMap};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir};
use rustix::io::Errno;

use super::TOOL;
use super::act::{Exec, TaskIn};
use super::ladder::{self, LadderFiles, Pending};
use super::ladder_io;
use super::memo::InboxMemo;
use super::status_feed::LogFacts;
use crate::config::Config;
use crate::error::Result;
use crate::home::Home;
use crate::inbox::{self, Record};
use crate::meta::TaskMeta;
use crate::stamp::Stamp;
use crate::task_id::TaskId;
use crate::tmux::pane::{Pane, PaneInfo};
use crate::{clock, fsx};

pub use super::state::{PaneFactory, Report, Ring, State};

/// What the one listing of `state/` showed of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seen {
    inbox: bool,
    status: bool,
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

fn mtime_secs(path: &std::path::Path) -> Option<u64> {
    let t = fsx::stat(path).ok()??.modified().ok()?;
    t.duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs())
}

/// Where a task's warnings go while tasks are read in parallel: kept in
/// order and printed (through [`State::warn`], once per process) after.
#[derive(Debug, Default)]
struct Notes {
    /// `(deduplicated, text)`: `true` goes through [`State::warn`], `false`
    /// is printed as is.
    lines: Vec<(bool, String)>,
}

impl Notes {
    fn warn(&mut self, msg: String) {
        self.lines.push((true, msg));
    }

    fn flush(self, state: &mut State) {
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

/// How a pass reads the tasks' files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Read {
    /// Relative to one open `state/`, on every core.
    Fast,
    /// Every file by its path, one task after another (what the fast
    /// path falls back to, and the answer it must give).
    ByPath,
}

/// One task as read: its ladder inputs (or why they could not be read),
/// whether it has an inbox directory, its status log, and the warnings.
struct Gathered {
    task: Result<TaskIn>,
    inbox_dir: bool,
    status: Result<Option<LogFacts>>,
    notes: Notes,
    memo: Memo,
}

/// What a task's read does to its [`InboxMemo`].
enum Memo {
    /// Keep it (it answered, or there is none to keep).
    Keep,
    /// The inbox was read and may be answered from memory next time.
    Set(Box<InboxMemo>),
    /// Forget it (the inbox changed in a way not to remember).
    Drop,
}

/// Runs one pass over every task at `now`.
pub fn run(
    home: &Home,
    cfg: &Config,
    panes: PaneFactory,
    sleep: &dyn Fn(Duration),
    state: &mut State,
    now: u64,
) -> Result<Report> {
    let tasks = scan(home)?;
    run_over(home, cfg, panes, sleep, state, now, &tasks, Read::Fast)
}

/// Runs one pass over the tasks `ids` only (the daemon's answer to a
/// file event or a ladder coming due).
pub(crate) fn run_tasks(
    home: &Home,
    cfg: &Config,
    panes: PaneFactory,
    sleep: &dyn Fn(Duration),
    state: &mut State,
    now: u64,
    ids: &[TaskId],
) -> Result<Report> {
    let tasks: Vec<(TaskId, Seen)> = ids.iter().map(|id| (id.clone(), Seen::ANY)).collect();
    run_over(home, cfg, panes, sleep, state, now, &tasks, Read::Fast)
}

/// One pass over `ids`, reading their files as `how` says.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_over(
    home: &Home,
    cfg: &Config,
    panes: PaneFactory,
    sleep: &dyn Fn(Duration),
    state: &mut State,
    now: u64,
    ids: &[(TaskId, Seen)],
    how: Read,
) -> Result<Report> {
    let mut report = Report {
        tasks: ids.len(),
        ..Report::default()
    };
    let gathered = gather_all(home, ids, now, &cfg.watch, how, &state.inboxes, state.sweep)?;
    let mut ex = Exec {
        home,
        cfg,
        sleep,
        state,
        report: &mut report,
        now,
    };
    let mut tasks = Vec::new();
    let mut logs = Vec::with_capacity(ids.len());
    for ((id, _), g) in ids.iter().zip(gathered) {
        g.notes.flush(ex.state);
        match g.memo {
            Memo::Keep => ex.report.memo_hits += 1,
            Memo::Set(m) => {
                ex.state.inboxes.insert(id.clone(), *m);
            }
            Memo::Drop => {
                ex.state.inboxes.remove(id);
            }
        }
        match g.task {
            // A pass that looks at every pane read every meta with the
            // task's other files.
            Ok(t) => tasks.push(t),
            Err(e) => ex.state.warn(format!("{id}: {e}")),
        }
        if g.inbox_dir {
            ex.report.inboxes.push(home.inbox(id));
        }
        logs.push(g.status);
    }
    // One `list-panes -a` per socket, only for sockets some ladder needs.
    let mut backends: HashMap<String, Box<dyn Pane>> = HashMap::new();
    let mut lists: BTreeMap<String, Option<Vec<PaneInfo>>> = BTreeMap::new();
    for t in &tasks {
        let Some(m) = &t.meta else { continue };
        if m.pane.is_some() && m.host_name().is_none() {
            ex.report.paned.push(t.id.clone());
        }
        // A task on another host is looked at by that host's watcher.
        let sweep = ex.state.sweep && m.host_name().is_none();
        if m.pane.is_none() || !(sweep || ladder::needs_pane(&t.pending, &t.files, now, &cfg.watch))
        {
            continue;
        }
        let socket = m.socket(cfg).to_string();
        if lists.contains_key(&socket) {
            continue;
        }
        let be = backends
            .entry(socket.clone())
            .or_insert_with(|| panes(&socket));
        let list = match be.list() {
            Ok(l) => Some(l),
            Err(e) => {
                ex.state.warn(format!("tmux socket {socket:?}: {e}"));
                None
            }
        };
        lists.insert(socket, list);
    }
    for t in &tasks {
        // Each task's own next due second, for a daemon that wakes per
        // task; the pass's earliest is kept beside.
        let before = ex.report.next_due.take();
        ex.task(t, &lists, &mut backends, panes);
        let mine = ex.report.next_due;
        ex.report.next_due = match (before, mine) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        ex.report.dues.push((t.id.clone(), mine));
    }
    for ((id, _), log) in ids.iter().zip(logs) {
        let paused = &cfg.brief.paused_verb;
        let found = log.and_then(|facts| match facts {
            Some(f) => super::status_feed::new_wakes_at(home, id, f, &mut ex.state.offsets, paused),
            None => Ok(Vec::new()),
        });
        match found {
            Ok(found) => {
                for w in found {
                    if !ex.wake(id, "status", &w.text) {
                        // Not surfaced: the next pass starts again here.
                        ex.state.offsets.rewind(id.as_str(), w.start);
                        break;
                    }
                }
            }
            Err(e) => ex.state.warn(format!("{id}: {e}")),
        }
    }
    let rang = !ex.report.rings.is_empty();
    ex.state.settle(home, rang);
    if let Err(e) = ex.state.offsets.save(home) {
        ex.state.warn(e.to_string());
    }
    if let Err(e) = fsx::touch(&home.watch_beat()) {
        ex.state.warn(e.to_string());
    }
    Ok(report)
}

/// Fewer tasks than this are read on one thread.
const PARALLEL_FROM: usize = 256;

/// Reads every task of `ids`, in their order.
fn gather_all(
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
fn gather_by_path(
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
        status: super::status_feed::log_facts(home, id),
        notes,
        memo: Memo::Drop,
    }
}

fn ladder_files_by_path(home: &Home, id: &TaskId, tracked: bool, notes: &mut Notes) -> LadderFiles {
    let (files, err) = ladder_io::load(home, id);
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
            Err(_) => super::status_feed::log_facts(self.sh.home, id),
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
        Some(ladder_io::parse(
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

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::os::unix::fs::symlink;
    use std::path::Path;

    use super::*;
    use crate::tmux::pane::FakePane;

    const TASKS: usize = 300;

    fn fake(_socket: &str) -> Box<dyn Pane> {
        Box::new(FakePane::default())
    }

    fn record(at: u64, fire_and_forget: bool) -> Vec<u8> {
        inbox::render(&clock::rfc3339(at), "captain", fire_and_forget, b"hello")
    }

    /// A fleet with every shape a pass meets, the same in every home made
    /// with the same `base`: due and waiting records, fire-and-forget
    /// ones, ladder files, records that are symlinks, FIFOs or unreadable,
    /// an inbox that is a symlink, status logs with wakes, and tasks with
    /// a status log only.
    fn fleet(root: &Path, base: u64) -> Home {
        for sub in ["config", "data", "state"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        let home = Home::at(root).unwrap();
        let state = home.state_dir();
        for i in 0..TASKS {
            let id = TaskId::parse(&format!("t-{i:03}")).unwrap();
            let inbox = home.inbox(&id);
            let kind = i % 14;
            if kind != 10 {
                std::fs::write(state.join(format!("{id}.meta")), "kind=ship\n").unwrap();
            }
            if kind == 9 {
                std::fs::create_dir_all(root.join("elsewhere").join(id.as_str())).unwrap();
                symlink(root.join("elsewhere").join(id.as_str()), &inbox).unwrap();
            } else if kind != 10 {
                std::fs::create_dir_all(inbox.join("handled")).unwrap();
            }
            let put = |name: &str, bytes: &[u8]| std::fs::write(inbox.join(name), bytes).unwrap();
            match kind {
                0 => put("001.msg", &record(base - 1000, false)),
                1 => put("001.msg", &record(base - 5, false)),
                2 => {
                    put("001.msg", &record(base - 1000, true));
                    put("002.msg", &record(base - 1000, false));
                }
                3 => {
                    symlink("/dev/null", inbox.join("001.msg")).unwrap();
                    put("002.msg", &record(base - 1000, false));
                }
                4 => {
                    rustix::fs::mknodat(
                        rustix::fs::CWD,
                        inbox.join("001.msg"),
                        FileType::Fifo,
                        Mode::from_raw_mode(0o600),
                        0,
                    )
                    .unwrap();
                    put("002.msg", &record(base - 1000, false));
                }
                5 => put("001.msg", b"schema=1\nat=never\nno separator"),
                6 => {
                    put("003.msg", &record(base - 1000, false));
                    put(".ring-state", b"003.msg\t1\t1\n");
                }
                7 => {
                    put("001.msg", &record(base - 5000, false));
                    put(
                        ".ring-state",
                        format!("001.msg\t3\t{}\n", base - 4000).as_bytes(),
                    );
                    put(".escalated", b"001.msg\n");
                }
                8 => {
                    put("001.msg", &record(base - 5, false));
                    put(".ring-owed", format!("{}\n", base - 100).as_bytes());
                }
                11 => {
                    put("001.msg", &record(base - 1000, false));
                    symlink("/dev/null", inbox.join(".ring-state")).unwrap();
                }
                12 => {
                    // Its time is the file's: the same in every home.
                    put(
                        "001.msg",
                        b"schema=1\nat=not a time\nfrom=captain\n--\nhello\n",
                    );
                    let at = std::time::UNIX_EPOCH + Duration::from_secs(base - 1000);
                    let f = File::options()
                        .write(true)
                        .open(inbox.join("001.msg"))
                        .unwrap();
                    f.set_modified(at).unwrap();
                }
                13 => put("handled/001.msg", &record(base - 1000, false)),
                _ => {}
            }
            let status = match kind {
                0 | 10 => "working: on it\nneeds-decision: which way?\n",
                2 => "done: shipped\n",
                _ => "working: on it\n",
            };
            if kind == 11 {
                symlink("/dev/null", home.status(&id)).unwrap();
            } else {
                std::fs::write(home.status(&id), status).unwrap();
            }
        }
        home
    }

    /// What a pass answered, without the wall-clock parts.
    fn answer(r: &Report, home: &Home) -> String {
        let root = home.state_dir().display().to_string();
        let rings: Vec<String> = r
            .rings
            .iter()
            .map(|g| format!("{} {} {} {:?}", g.task, g.seq, g.count, g.outcome))
            .collect();
        let wakes: Vec<String> = r
            .wakes
            .iter()
            .map(|w| format!("{} {} {}", w.task, w.kind, w.text.replace(&root, "<state>")))
            .collect();
        let dues: Vec<String> = r.dues.iter().map(|(id, d)| format!("{id} {d:?}")).collect();
        format!(
            "tasks {}\nrings {rings:#?}\nwakes {wakes:#?}\nnext {:?}\ndues {dues:#?}\ninboxes {}",
            r.tasks,
            r.next_due,
            r.inboxes.len()
        )
    }

    /// Every regular file under `state/` with its bytes, but the
    /// watcher's own files (its offsets name inodes) and the wakes.
    fn files(home: &Home) -> Vec<String> {
        let root = home.state_dir();
        let mut out = Vec::new();
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let e = e.unwrap();
                let t = e.file_type().unwrap();
                let name = e.path().strip_prefix(&root).unwrap().display().to_string();
                if t.is_dir() {
                    stack.push(e.path());
                } else if t.is_file() && !name.starts_with(".watch") && !name.contains("wakes") {
                    let bytes = std::fs::read(e.path()).unwrap();
                    out.push(format!("{name}: {}", String::from_utf8_lossy(&bytes)));
                }
            }
        }
        out.sort();
        out
    }

    /// The same change in both homes.
    fn change(home: &Home, base: u64) {
        let id = |i: usize| TaskId::parse(&format!("t-{i:03}")).unwrap();
        // A new record behind a waiting one, an ack, a new ring state, an
        // inbox gone, a record edited by hand through a rename.
        std::fs::write(home.inbox(&id(1)).join("002.msg"), record(base, false)).unwrap();
        std::fs::rename(
            home.inbox(&id(15)).join("001.msg"),
            home.inbox(&id(15)).join("handled/001.msg"),
        )
        .unwrap();
        std::fs::write(home.inbox(&id(20)).join(".ring-state"), b"003.msg\t2\t1\n").unwrap();
        std::fs::remove_dir_all(home.inbox(&id(28))).unwrap();
        let p = home.inbox(&id(29)).join("001.msg");
        std::fs::write(p.with_extension("new"), record(base - 10, true)).unwrap();
        std::fs::rename(p.with_extension("new"), p).unwrap();
        fsx::append_line(&home.status(&id(30)), b"blocked: stuck\n").unwrap();
    }

    #[test]
    fn the_fast_read_answers_as_the_read_by_path_does_and_remembers_only_what_is_unchanged() {
        let base = clock::now();
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (fast, slow) = (fleet(a.path(), base), fleet(b.path(), base));
        let cfg = Config::default();
        let (mut sf, mut ss) = (State::load(&fast).unwrap(), State::load(&slow).unwrap());
        let pass = |home: &Home, state: &mut State, now: u64, how: Read| {
            let tasks = scan(home).unwrap();
            run_over(home, &cfg, &fake, &|_| {}, state, now, &tasks, how).unwrap()
        };
        let mut hits = Vec::new();
        // Passes right after the fleet was written (nothing settled), a
        // pass that re-rings once the inboxes settled, passes once the
        // re-rung ones settled too (the first remembers, the second
        // answers from memory), and one after the same changes in both.
        let steps = [
            (base, 0),
            (base + 1, 3),
            (base + 200, 3),
            (base + 201, 0),
            (base + 202, 0),
            (base + 203, 0),
        ];
        for (step, (now, sleep)) in steps.into_iter().enumerate() {
            if step == 5 {
                change(&fast, base);
                change(&slow, base);
            }
            let rf = pass(&fast, &mut sf, now, Read::Fast);
            let rs = pass(&slow, &mut ss, now, Read::ByPath);
            let (af, as_) = (answer(&rf, &fast), answer(&rs, &slow));
            if af != as_ {
                let diff: Vec<_> = af
                    .lines()
                    .zip(as_.lines())
                    .filter(|(x, y)| x != y)
                    .take(5)
                    .collect();
                panic!("step {step}: the fast read answered differently: {diff:?}");
            }
            let (ff, fs) = (files(&fast), files(&slow));
            let diff: Vec<_> = ff.iter().zip(&fs).filter(|(x, y)| x != y).take(5).collect();
            assert!(
                diff.is_empty() && ff.len() == fs.len(),
                "step {step}: {diff:?}"
            );
            assert_eq!(rs.memo_hits, 0);
            hits.push(rf.memo_hits);
            std::thread::sleep(Duration::from_secs(sleep));
        }
        // The clean inboxes (7 shapes of 14: 150 of 300) are answered from
        // memory once settled, but for the 21 whose third ring escalated at
        // step 3; of the changed ones, four were remembered and are read
        // again.
        assert_eq!(hits[4], 129, "{hits:?}");
        assert_eq!(hits[5], 125, "{hits:?}");
        // What is remembered is what a read by path finds now.
        let now = base + 203;
        for (id, m) in &sf.inboxes {
            let g = gather_by_path(&fast, id, now, &cfg.watch, false);
            let t = g.task.unwrap();
            assert_eq!(
                (&t.pending, t.target.as_ref().map(|r| r.seq), t.files),
                (&m.pending, m.target.as_ref().map(|r| r.seq), m.files),
                "{id}"
            );
        }
        assert!(!sf.inboxes.contains_key(&TaskId::parse("t-028").unwrap()));
    }
}

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
//! the facts by more than [`crate::stamp::SETTLE_SECS`], has not changed since (a write
//! after that read would have given it a later modification time).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir};
use rustix::io::Errno;

use super::facts::{Escalation, Facts, RunRecord, WorktreeFact};
use crate::config::Config;
use crate::error::Result;
use crate::gitfiles::GitFiles;
use crate::harness::HarnessProfile;
use crate::home::Home;
use crate::meta::TaskMeta;
use crate::stamp::Stamp;
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

    /// The task has an inbox directory.
    pub(crate) fn inbox(self) -> bool {
        self.has(Present::INBOX)
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
    /// `state/`, opened by the checked walk for the listing, and kept for
    /// the view's reads ([`StateDir::listed`]).
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
        _ => return None,
    };
    name.ends_with(suffix)
        .then(|| (name.len() - suffix.len(), bit))
}

impl Listing {
    /// Lists `state/` once. A home without `state/` has no tasks.
    pub(crate) fn read(home: &Home) -> Result<Listing> {
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
            .filter(|e| e.2 & Present::META != 0)
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
    /// Takes the stamps of the task's present files (relative to `dir`),
    /// and of its brief when `brief` (the facts may depend on it).
    ///
    /// With the stamps `prev` of the last read: a file that was not in the
    /// inbox then is not there now if the inbox's own stamp is unchanged
    /// and had settled (adding a name to a directory changes its
    /// modification time), so it is not looked for.
    pub(crate) fn take(
        home: &Home,
        dir: &StateDir,
        id: &TaskId,
        present: Present,
        now: u64,
        brief: bool,
        prev: Option<&Stamps>,
    ) -> Stamps {
        let take = |bit: u8, suffix: &str| {
            present
                .has(bit)
                .then(|| dir.stamp(home, id, suffix))
                .flatten()
        };
        let inbox = take(Present::INBOX, "inbox");
        let same_inbox = prev.is_some_and(|p| {
            p.inbox
                .is_some_and(|s| Some(s) == inbox && s.settled(p.read_at))
        });
        let inside = |was: Option<Option<Stamp>>, suffix: &str| match was {
            Some(None) if same_inbox => None,
            _ => take(Present::INBOX, suffix),
        };
        Stamps {
            present,
            meta: take(Present::META, "meta"),
            status: take(Present::STATUS, "status"),
            busy: take(Present::BUSY, "busy"),
            run: take(Present::RUN, "run"),
            inbox,
            escalated: inside(prev.map(|p| p.escalated), "inbox/.escalated"),
            ring_state: inside(prev.map(|p| p.ring_state), "inbox/.ring-state"),
            brief: brief.then(|| Stamp::of_path(&home.brief(id))),
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

    /// Which files the listing saw.
    pub(crate) fn present(&self) -> Present {
        self.present
    }

    /// Whether facts read with these stamps depend on the brief.
    pub(crate) fn needs_brief(f: &Facts) -> bool {
        f.meta.as_ref().is_some_and(|m| m.kind.is_none())
    }
}

/// `state/`, opened once for a view: a task's files are opened relative to
/// it (no walk of the home's path per file), each read with the fewest
/// system calls — open, `fstat`, one `read` when the file fits the buffer
/// its size gave, close; an inbox is opened and listed without a `stat`.
/// Anything unusual (a file that does not open or is not a regular file,
/// an inbox that is not a plain directory) is read again the ordinary way
/// ([`fsx`]), so it fails or is refused with the same error.
pub(crate) struct StateDir {
    /// `None` when `state/` did not open: every file is then opened by its
    /// whole path.
    fd: Option<OwnedFd>,
    /// The harness profiles of the view, by name: built once and shared
    /// by every task naming them.
    profiles: Mutex<HashMap<String, Option<Arc<HarnessProfile>>>>,
    /// The directories holding the view's worktrees.
    pub(crate) dirs: Dirs,
}

/// The directories a view looks into, each opened once for the view: a
/// worktree is looked at relative to its parent, not by walking its whole
/// path again. What a look says is what the whole path says (the parent
/// opened now is the directory that path names now); a path that does not
/// end in a plain name, or whose parent does not open, is looked at by its
/// whole path.
#[derive(Debug, Default)]
pub(crate) struct Dirs {
    /// Opened parents, and their physical path when asked.
    open: Mutex<HashMap<PathBuf, Option<Arc<Parent>>>>,
    /// What a look of the view found at a path that is no symlink: the
    /// worktree is looked at by its presence, its physical path and the
    /// gate, and one look answers all three.
    looked: Mutex<HashMap<PathBuf, rustix::fs::Stat>>,
}

#[derive(Debug)]
struct Parent {
    fd: OwnedFd,
    physical: std::sync::OnceLock<Option<PathBuf>>,
}

impl Dirs {
    /// The parent of `path` opened, and the name in it.
    fn split<'p>(&self, path: &'p Path) -> Option<(Arc<Parent>, &'p std::ffi::OsStr)> {
        use std::os::unix::ffi::OsStrExt;
        let name = path.file_name()?;
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty())?;
        // Only a path ending in the name itself (no trailing `/` or `/.`).
        let bytes = path.as_os_str().as_bytes();
        if !bytes.ends_with(name.as_bytes()) || bytes.len() == name.len() {
            return None;
        }
        if bytes[bytes.len() - name.len() - 1] != b'/' {
            return None;
        }
        let mut open = self.open.lock().expect("dirs");
        if let Some(p) = open.get(parent) {
            return p.clone().map(|p| (p, name));
        }
        let fd = rustix::fs::open(
            parent,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()
        .map(|fd| {
            Arc::new(Parent {
                fd,
                physical: std::sync::OnceLock::new(),
            })
        });
        open.insert(parent.to_path_buf(), fd.clone());
        fd.map(|p| (p, name))
    }

    /// A kept reader's `git` keeps the answer across frames while file
    /// events vouch for it ([`GitFiles::kept_stat`]).
    fn stat(
        &self,
        path: &Path,
        follow: bool,
        git: Option<&GitFiles>,
    ) -> Option<rustix::io::Result<rustix::fs::Stat>> {
        // The path itself is looked at without following it: what is no
        // symlink answers a look that follows as well, and is kept for
        // the view's next look; a symlink followed costs a second look.
        let take = || {
            if let Some(st) = self.looked.lock().expect("dirs").get(path) {
                return Some(Ok(*st));
            }
            let (parent, name) = self.split(path)?;
            let r = rustix::fs::statat(&parent.fd, name, AtFlags::SYMLINK_NOFOLLOW);
            match r {
                Ok(st) if FileType::from_raw_mode(st.st_mode) != FileType::Symlink => {
                    self.looked
                        .lock()
                        .expect("dirs")
                        .insert(path.to_path_buf(), st);
                    Some(Ok(st))
                }
                Ok(_) if follow => Some(rustix::fs::statat(&parent.fd, name, AtFlags::empty())),
                r => Some(r),
            }
        };
        match git {
            Some(g) => g.kept_stat(path, follow, take),
            None => take(),
        }
    }

    /// [`Path::is_dir`].
    pub(crate) fn is_dir(&self, path: &Path, git: Option<&GitFiles>) -> bool {
        match self.stat(path, true, git) {
            Some(r) => r.is_ok_and(|st| FileType::from_raw_mode(st.st_mode).is_dir()),
            None => path.is_dir(),
        }
    }

    /// [`fsx::is_dir`] (a symlink is refused). Below a home that walk
    /// also refuses a symlink on the way: there it is taken as is.
    pub(crate) fn is_dir_nofollow(&self, path: &Path, git: Option<&GitFiles>) -> Result<bool> {
        if fsx::is_below_home(path) {
            return fsx::is_dir(path);
        }
        match self.stat(path, false, git) {
            Some(Ok(st)) if FileType::from_raw_mode(st.st_mode) != FileType::Symlink => {
                Ok(FileType::from_raw_mode(st.st_mode).is_dir())
            }
            Some(Err(Errno::NOENT)) => Ok(false),
            _ => fsx::is_dir(path),
        }
    }

    /// [`crate::home::physical`]: for a path that exists and is no
    /// symlink, its parent's physical path (found once per view) and its
    /// name.
    pub(crate) fn physical(&self, path: &Path, git: Option<&GitFiles>) -> PathBuf {
        let slow = || crate::home::physical(path);
        if !path.is_absolute() {
            return slow();
        }
        let Some((parent, name)) = self.split(path) else {
            return slow();
        };
        match self.stat(path, false, git) {
            Some(Ok(st)) if FileType::from_raw_mode(st.st_mode) != FileType::Symlink => {}
            _ => return slow(),
        }
        let real = parent.physical.get_or_init(|| {
            let p = path.parent()?;
            p.canonicalize().ok()
        });
        match real {
            Some(r) => r.join(name),
            None => slow(),
        }
    }
}

/// A task's file name `<id>.<suffix>` as the C string a system call
/// takes, made on the stack (a view names three files a task).
struct FileName([u8; FileName::MAX]);

impl Default for FileName {
    fn default() -> FileName {
        FileName([0; FileName::MAX])
    }
}

impl FileName {
    /// Room for the longest id, a dot, the longest suffix and the NUL.
    const MAX: usize = crate::task_id::MAX_LEN + 32;

    /// `<id>.<suffix>`; `NAMETOOLONG` when it does not fit (no suffix
    /// here is that long), `INVAL` for a NUL (no id holds one).
    fn of(&mut self, id: &TaskId, suffix: &str) -> rustix::io::Result<&std::ffi::CStr> {
        let (id, suffix) = (id.as_str().as_bytes(), suffix.as_bytes());
        let len = id.len() + 1 + suffix.len();
        if len >= FileName::MAX {
            return Err(Errno::NAMETOOLONG);
        }
        self.0[..id.len()].copy_from_slice(id);
        self.0[id.len()] = b'.';
        self.0[id.len() + 1..len].copy_from_slice(suffix);
        self.0[len] = 0;
        std::ffi::CStr::from_bytes_with_nul(&self.0[..=len]).map_err(|_| Errno::INVAL)
    }
}

thread_local! {
    /// The buffer a reader thread reads task files into.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    /// The list a reader thread lists a task's pending records into.
    static PENDING: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A file read the ordinary (checked) way, handed to `with`; it fails or
/// refuses with that reader's errors.
fn read_ordinary<T>(path: &Path, with: impl FnOnce(&[u8], Option<u64>) -> T) -> Result<Option<T>> {
    Ok(fsx::read_optional_mtime(path)?.map(|(bytes, mtime)| with(&bytes, mtime)))
}

/// The largest buffer a reader thread keeps between files.
const SCRATCH_KEEP: usize = 1 << 20;

/// Whether a task file is read for its mtime too ([`StateDir::read_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stat {
    /// Its bytes and its mtime (`fstat` first).
    Mtime,
    /// Its bytes only (read first, `fstat` only when the read is not a
    /// whole regular file's).
    Plain,
}

/// The buffer a file read for its bytes only is read into at once: a
/// file that fills it is left to the ordinary reader.
const READ_FIRST: usize = 16 * 1024;

/// One `pread` of `fd` from its start into `buf` (retried when
/// interrupted); `None` when it fails. Not `read`: a FIFO (even one with a
/// writer, which would read short like a regular file) fails a `pread`
/// with `ESPIPE` before a byte is taken from it.
fn read_once(fd: &OwnedFd, buf: &mut [u8]) -> Option<usize> {
    loop {
        match rustix::io::pread(fd, &mut *buf, 0) {
            Ok(n) => return Some(n),
            Err(Errno::INTR) => {}
            Err(_) => return None,
        }
    }
}

/// The bytes `fill` reads into the reader thread's kept buffer (how many,
/// or `None` when they are not the whole file), handed to `with` with
/// `mtime`; `with` back when it was not called, for the ordinary reader.
fn in_scratch<T, W: FnOnce(&[u8], Option<u64>) -> T>(
    fill: impl FnOnce(&mut Vec<u8>) -> Option<usize>,
    mtime: Option<u64>,
    with: W,
) -> std::result::Result<T, W> {
    SCRATCH.with(|scratch| {
        // Taken out while in use: a reader called from `with` gets a
        // fresh one.
        let mut buf = scratch.take();
        let answer = match fill(&mut buf) {
            Some(n) => Ok(with(&buf[..n], mtime)),
            None => Err(with),
        };
        // A buffer grown for a large file is not kept.
        if buf.len() <= SCRATCH_KEEP {
            scratch.replace(buf);
        }
        answer
    })
}

/// Reads the whole regular file `fd` of `size` bytes (as its `fstat` said)
/// into `buf`; how many bytes it holds, `None` when it could not be read
/// or grew past the whole-read limit while being read.
fn read_into(fd: &OwnedFd, buf: &mut Vec<u8>, size: usize) -> Option<usize> {
    // One byte more than the size: a read that fills it all means the
    // file grew.
    if buf.len() < size + 1 {
        buf.resize(size + 1, 0);
    }
    let mut filled = 0;
    loop {
        match rustix::io::read(fd, &mut buf[filled..]) {
            Ok(0) => return Some(filled),
            Ok(n) => filled += n,
            Err(Errno::INTR) => continue,
            Err(_) => return None,
        }
        // A regular file reads short only at its end.
        if filled < buf.len() {
            return Some(filled);
        }
        // Grown past the whole-read limit while being read: fsx refuses it.
        if filled as u64 > fsx::MAX_FILE {
            return None;
        }
        buf.resize(buf.len() * 2, 0);
    }
}

impl StateDir {
    pub(crate) fn open(home: &Home) -> StateDir {
        // Reached by the checked walk: a symlink on the way to `state/`
        // leaves no descriptor, and every file then takes the ordinary
        // (checked) path, which refuses it.
        let state = home.state_dir();
        StateDir::listed(
            fsx::open_dir(&state, "read directory", &state, false)
                .ok()
                .map(OwnedFd::from),
        )
    }

    /// `state/` as the listing opened it ([`Listing::dir`]), by the same
    /// checked walk as [`StateDir::open`].
    pub(crate) fn listed(fd: Option<OwnedFd>) -> StateDir {
        StateDir {
            fd,
            profiles: Mutex::default(),
            dirs: Dirs::default(),
        }
    }

    /// The profile `name` as the config makes it, built once per view.
    fn profile(&self, cfg: &Config, name: &str) -> Option<Arc<HarnessProfile>> {
        let mut memo = self.profiles.lock().expect("profile memo");
        if let Some(p) = memo.get(name) {
            return p.clone();
        }
        let p = harness::profile(&cfg.harness, name).map(Arc::new);
        memo.insert(name.to_string(), p.clone());
        p
    }

    /// Opens `<id>.<suffix>` relative to `state/`; without a descriptor it
    /// fails, and the caller reads the ordinary (checked) way.
    fn open_at(&self, id: &TaskId, suffix: &str, flags: OFlags) -> rustix::io::Result<OwnedFd> {
        let dir = self.fd.as_ref().ok_or(Errno::IO)?;
        let mut name = FileName::default();
        rustix::fs::openat(
            dir,
            name.of(id, suffix)?,
            flags | OFlags::CLOEXEC,
            Mode::empty(),
        )
    }

    /// The stamp of `<id>.<suffix>` (not following a symlink), as
    /// [`Stamp::of_path`] takes it.
    fn stamp(&self, home: &Home, id: &TaskId, suffix: &str) -> Option<Stamp> {
        let st = match &self.fd {
            Some(dir) => {
                let mut name = FileName::default();
                rustix::fs::statat(dir, name.of(id, suffix).ok()?, AtFlags::SYMLINK_NOFOLLOW)
            }
            None => return Stamp::of_path(&home.state_dir().join(format!("{id}.{suffix}"))),
        }
        .ok()?;
        Some(Stamp::of_stat(&st))
    }

    /// The file `<id>.<suffix>` and its mtime (Unix seconds), as
    /// [`fsx::read_optional_mtime`] reads it, handed to `with`: read into
    /// the thread's buffer, kept from file to file (no allocation, no
    /// zeroing, per file).
    ///
    /// Without `Stat::Mtime` the file is read before anything else and
    /// `with` gets no mtime: a `pread` from its start that comes back with
    /// some bytes and room to spare is a whole regular file (a FIFO, with
    /// or without a writer, fails it with `ESPIPE`, a directory with
    /// `EISDIR`; a device that reads fills the buffer or nothing), so its
    /// type is checked only when the read says otherwise — by the ordinary
    /// reader, which refuses what is no regular file — and a regular file
    /// costs no `fstat` (as [`fsx::read_small_at`]).
    fn read_with<T, W: FnOnce(&[u8], Option<u64>) -> T>(
        &self,
        id: &TaskId,
        suffix: &str,
        stat: Stat,
        path: impl Fn() -> PathBuf,
        with: W,
    ) -> Result<Option<T>> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK;
        let fd = match self.open_at(id, suffix, flags) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(_) => return read_ordinary(&path(), with),
        };
        let read = if stat == Stat::Plain {
            in_scratch(
                |buf| {
                    if buf.len() < READ_FIRST {
                        buf.resize(READ_FIRST, 0);
                    }
                    read_once(&fd, buf).filter(|&n| n > 0 && n < buf.len())
                },
                None,
                with,
            )
        } else {
            let Ok(st) = rustix::fs::fstat(&fd) else {
                return read_ordinary(&path(), with);
            };
            // Anything but a regular file, or one too big to read whole, is
            // refused by the ordinary reader with its own error.
            if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile
                || u64::try_from(st.st_size).map_or(true, |n| n > fsx::MAX_FILE)
            {
                return read_ordinary(&path(), with);
            }
            let size = usize::try_from(st.st_size).unwrap_or(0);
            in_scratch(
                |buf| read_into(&fd, buf, size),
                u64::try_from(st.st_mtime).ok(),
                with,
            )
        };
        match read {
            Ok(answer) => Ok(Some(answer)),
            Err(with) => read_ordinary(&path(), with),
        }
    }

    fn read_if<T>(
        &self,
        id: &TaskId,
        present: Present,
        (bit, suffix, stat): (u8, &str, Stat),
        path: impl Fn() -> PathBuf,
        with: impl FnOnce(&[u8], Option<u64>) -> T,
    ) -> Result<Option<T>> {
        if !present.has(bit) {
            return Ok(None);
        }
        self.read_with(id, suffix, stat, path, with)
    }

    /// The pending records of the task's inbox, as [`fsx::list_numbered`]
    /// lists them (sorted), and whether `.escalated` is there, handed to
    /// `with`: listed into the thread's kept list (no allocation a task).
    fn inbox<T>(
        &self,
        home: &Home,
        id: &TaskId,
        with: impl FnOnce(&[u64], bool) -> T,
    ) -> Result<T> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW;
        let fd = match self.open_at(id, "inbox", flags) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(with(&[], false)),
            Err(_) => {
                let pending = fsx::list_numbered(&home.inbox(id), inbox::EXT)?;
                let escalated = !pending.is_empty();
                return Ok(with(&pending, escalated));
            }
        };
        let listed = PENDING.with(|kept| {
            // Taken out while in use, as `SCRATCH` is.
            let mut pending = kept.take();
            pending.clear();
            let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
            let mut dir = RawDir::new(&fd, &mut buf);
            let mut escalated = false;
            while let Some(entry) = dir.next() {
                let Ok(entry) = entry else {
                    kept.replace(pending);
                    return None;
                };
                let name = entry.file_name().to_bytes();
                if name == b".escalated" {
                    escalated = true;
                } else if let Some(n) = fsx::parse_numbered_bytes(name, inbox::EXT) {
                    pending.push(n);
                }
            }
            pending.sort_unstable();
            Some((pending, escalated))
        });
        let Some((pending, escalated)) = listed else {
            let pending = fsx::list_numbered(&home.inbox(id), inbox::EXT)?;
            let escalated = !pending.is_empty();
            return Ok(with(&pending, escalated));
        };
        let answer = with(&pending, escalated);
        PENDING.with(|kept| kept.replace(pending));
        Ok(answer)
    }
}

/// When the turn the agent's session log reports running began, unless a
/// busy record already counts ([`crate::agent_report`]).
pub(crate) fn agent_turn(home: &Home, f: &Facts) -> Option<u64> {
    if f.busy
        .as_ref()
        .is_some_and(|b| b.busy_since(f.last_line_at))
    {
        return None;
    }
    let at = crate::agent_report::turn_running_with(home, &f.id, f.meta.as_ref()?)?;
    crate::status::busy::busy_from_log(at, f.last_line_at, f.busy.as_ref())
}

/// Whether the meta names a host (the row's `host`, `Row::with`).
pub(crate) fn is_remote(m: &TaskMeta) -> bool {
    m.host_name().is_some()
}

/// Reads the task's own files into facts; a file that cannot be read makes
/// the task's facts say so ([`Facts::error`]).
pub(crate) fn task(
    home: &Home,
    cfg: &Config,
    dir: &StateDir,
    id: &TaskId,
    present: Present,
    now: u64,
) -> Facts {
    // Filled in place: the facts are large, and each move copies them.
    let mut f = Facts::empty(id.clone(), now);
    if let Err(e) = files(home, cfg, dir, id, present, &mut f) {
        f = Facts::empty(id.clone(), now);
        f.error = Some(e.to_string());
    }
    f
}

fn files(
    home: &Home,
    cfg: &Config,
    dir: &StateDir,
    id: &TaskId,
    present: Present,
    f: &mut Facts,
) -> Result<()> {
    dir.read_if(
        id,
        present,
        (Present::META, "meta", Stat::Plain),
        || home.meta(id),
        |b, _| TaskMeta::parse_fields_into(b, &mut f.meta),
    )?
    .transpose()?;
    // A remote task's row comes from its host (`remote::fleet`): its files
    // here, if any, would be read for nothing.
    if f.meta.as_ref().is_some_and(is_remote) {
        return Ok(());
    }
    let paused = &cfg.brief.paused_verb;
    let fold = &mut f.fold;
    if let Some(mtime) = dir.read_if(
        id,
        present,
        (Present::STATUS, "status", Stat::Mtime),
        || home.status(id),
        |b, mtime| {
            *fold = status::Fold::for_view(b, paused);
            mtime
        },
    )? {
        f.log_mtime = mtime;
        if f.fold.any_line {
            f.last_line_at = f.fold.last_at.or(f.log_mtime);
        }
    }
    f.busy = dir
        .read_if(
            id,
            present,
            (Present::BUSY, "busy", Stat::Plain),
            || home.busy(id),
            |b, _| BusyRecord::parse(b),
        )?
        .flatten();
    f.run = dir.read_if(
        id,
        present,
        (Present::RUN, "run", Stat::Mtime),
        || home.run(id),
        RunRecord::parse,
    )?;
    if present.has(Present::INBOX) {
        let escalated;
        (f.inbox_pending, escalated) = dir.inbox(home, id, |pending, escalated| {
            let marker = (!pending.is_empty() && escalated)
                .then(|| escalation(home, id, pending))
                .transpose();
            (pending.len(), marker)
        })?;
        f.escalated = escalated?.flatten();
    }
    if let Some(meta) = &f.meta {
        if meta.kind.is_none() {
            f.brief_kind = crate::dod::gate::brief_kind(home, id);
        }
        if let Some(name) = &meta.harness {
            f.profile = dir.profile(cfg, name);
        }
    }
    check_worktree(f, &dir.dirs, None);
    Ok(())
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
pub(crate) fn check_worktree(f: &mut Facts, dirs: &Dirs, git: Option<&GitFiles>) {
    f.worktree = WorktreeFact::Unchecked;
    if let Some(meta) = &f.meta
        && f.kind().has_worktree()
        && let Some(wt) = &meta.worktree
    {
        f.worktree = if dirs.is_dir(wt, git) {
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
            "b.busy",
            "c.busy.x",
            "stat.us",
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
                (
                    "b",
                    Present::META | Present::STATUS | Present::BUSY | Present::INBOX
                ),
            ]
        );
    }

    #[test]
    fn a_remote_tasks_files_here_are_not_read() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let state = home.state_dir();
        std::fs::create_dir_all(state.join("r.inbox")).unwrap();
        std::fs::write(state.join("r.inbox/001.msg"), "x").unwrap();
        std::fs::write(state.join("r.status"), "working [at=1]: here\n").unwrap();
        std::fs::write(state.join("r.meta"), "kind=ship\nhost=far\n").unwrap();
        let (f, _) = both(&home, "r");
        assert_eq!(
            (f.fold.any_line, f.inbox_pending, f.error),
            (false, 0, None)
        );
        assert_eq!(f.meta.and_then(|m| m.host).as_deref(), Some("far"));
        // The same files of a local task are read.
        std::fs::write(state.join("r.meta"), "kind=ship\nhost= \n").unwrap();
        let (f, _) = both(&home, "r");
        assert_eq!((f.fold.any_line, f.inbox_pending), (true, 1));
    }

    /// Reads `id` through `state/` opened, and by whole paths.
    fn both(home: &Home, id: &str) -> (Facts, Facts) {
        let cfg = Config::default();
        let id = TaskId::parse(id).unwrap();
        let open = StateDir::open(home);
        assert!(open.fd.is_some(), "state/ opens");
        let by_path = StateDir {
            fd: None,
            profiles: Mutex::default(),
            dirs: Dirs::default(),
        };
        (
            task(home, &cfg, &open, &id, Present::ALL, 1),
            task(home, &cfg, &by_path, &id, Present::ALL, 1),
        )
    }

    #[test]
    fn a_tasks_files_read_through_state_as_by_their_paths() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let state = home.state_dir();
        std::fs::create_dir_all(state.join("t1.inbox/handled")).unwrap();
        std::fs::write(state.join("t1.meta"), "kind=secondmate\nrepo=r\n").unwrap();
        let mut log = "working [at=5]: a\n".repeat(3_000);
        log.push_str("needs-decision [at=6] [key=k]: the last line\n");
        std::fs::write(state.join("t1.status"), &log).unwrap();
        for name in ["001.msg", "002.msg", "handled/000.msg", "x.tmp"] {
            std::fs::write(state.join("t1.inbox").join(name), "m\n").unwrap();
        }
        std::fs::write(state.join("t1.inbox/.escalated"), "002.msg\n").unwrap();
        let (a, b) = both(&home, "t1");
        for f in [&a, &b] {
            assert_eq!(f.error, None);
            assert_eq!(f.meta.as_ref().and_then(|m| m.repo.as_deref()), Some("r"));
            // Read to its end: the last line is the current one.
            let current = f.fold.current().unwrap();
            assert_eq!(
                (current.text.as_str(), f.fold.last_at),
                ("the last line", Some(6))
            );
            assert!(f.log_mtime.is_some());
            assert_eq!(f.inbox_pending, 2);
            assert_eq!(
                f.escalated.as_ref().map(|e| e.record.as_str()),
                Some("002.msg")
            );
        }
        assert_eq!(format!("{a:?}"), format!("{b:?}"));

        // A meta read for its bytes only, at every size about the buffer
        // it is read into first, reads as by its path.
        for len in [
            0,
            1,
            READ_FIRST - 1,
            READ_FIRST,
            READ_FIRST + 1,
            3 * READ_FIRST,
        ] {
            let line = "repo=r\n";
            let pad = "#".repeat(len.saturating_sub(line.len() + 1));
            let meta = if len == 0 {
                String::new()
            } else if len <= line.len() {
                "\n".repeat(len)
            } else {
                format!("{pad}\n{line}")
            };
            assert_eq!(meta.len(), len);
            std::fs::write(state.join("t1.meta"), &meta).unwrap();
            let (a, b) = both(&home, "t1");
            assert_eq!(a.error, None, "{len}");
            let repo = a.meta.as_ref().and_then(|m| m.repo.as_deref());
            assert_eq!(repo, (len > line.len()).then_some("r"), "{len}");
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{len}");
        }

        // Without `.escalated` nothing is escalated; a missing task has
        // empty facts.
        std::fs::remove_file(state.join("t1.inbox/.escalated")).unwrap();
        assert_eq!(both(&home, "t1").0.escalated, None);
        let (a, _) = both(&home, "absent");
        assert!(a.meta.is_none() && a.error.is_none() && a.inbox_pending == 0);
    }

    #[test]
    fn unusual_files_fail_with_the_ordinary_readers_errors() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let state = home.state_dir();
        std::fs::create_dir_all(state.join("elsewhere")).unwrap();
        // A FIFO meta, a directory status log, a symlinked inbox, a file
        // where the inbox should be.
        fsx::test_fifo::make(&state.join("f.meta"));
        std::fs::create_dir_all(state.join("d.status")).unwrap();
        // A meta read for its bytes only that is a directory, a FIFO busy
        // record beside a meta.
        std::fs::create_dir_all(state.join("m.meta")).unwrap();
        std::fs::write(state.join("b.meta"), "repo=r\n").unwrap();
        fsx::test_fifo::make(&state.join("b.busy"));
        std::os::unix::fs::symlink("elsewhere", state.join("l.inbox")).unwrap();
        std::fs::write(state.join("p.inbox"), "").unwrap();
        let err = |id: &str| -> String {
            let id = TaskId::parse(id).unwrap();
            match id.as_str() {
                "f" | "m" => fsx::read_optional_mtime(&home.meta(&id)).unwrap_err(),
                "b" => fsx::read_optional_mtime(&home.busy(&id)).unwrap_err(),
                "d" => fsx::read_optional_mtime(&home.status(&id)).unwrap_err(),
                _ => fsx::list_numbered(&home.inbox(&id), inbox::EXT).unwrap_err(),
            }
            .to_string()
        };
        for id in ["f", "m", "b", "d", "l", "p"] {
            let (a, b) = both(&home, id);
            let want = err(id);
            assert_eq!(a.error.as_deref(), Some(want.as_str()), "{id}");
            assert_eq!(b.error.as_deref(), Some(want.as_str()), "{id}");
        }
        assert!(err("f").contains("FIFO"), "{}", err("f"));

        // A FIFO meta, and a FIFO busy record, that a writer holds open
        // with bytes waiting: refused as any FIFO, the bytes left unread.
        let mut writers = Vec::new();
        std::fs::write(state.join("v.meta"), "repo=r\n").unwrap();
        for name in ["w.meta", "v.busy"] {
            writers.push(fsx::test_fifo::with_writer(
                &state.join(name),
                b"repo=pipe\n",
            ));
        }
        let id = |s: &str| TaskId::parse(s).unwrap();
        for (t, want) in [
            ("w", fsx::read_optional_mtime(&home.meta(&id("w")))),
            ("v", fsx::read_optional_mtime(&home.busy(&id("v")))),
        ] {
            let want = want.unwrap_err().to_string();
            assert!(want.contains("FIFO"), "{want}");
            let (a, b) = both(&home, t);
            assert_eq!(a.error.as_deref(), Some(want.as_str()), "{t}");
            assert_eq!(b.error.as_deref(), Some(want.as_str()), "{t}");
        }
        for mut w in writers {
            let mut back = [0u8; 10];
            std::io::Read::read_exact(&mut w, &mut back).unwrap();
            assert_eq!(&back, b"repo=pipe\n");
        }
    }

    #[test]
    fn a_file_appearing_in_an_unchanged_inbox_is_seen() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let id = TaskId::parse("t").unwrap();
        std::fs::create_dir_all(home.inbox(&id)).unwrap();
        std::fs::write(home.meta(&id), "kind=ship\n").unwrap();
        let present = Present(Present::META | Present::INBOX);
        let now = crate::clock::now() + 5;
        let dir = StateDir::open(&home);
        let take = |prev| Stamps::take(&home, &dir, &id, present, now, true, prev);
        let first = take(None);
        assert_eq!((first.escalated, first.ring_state), (None, None));
        assert!(first.still(&take(Some(&first))));
        for name in [".escalated", ".ring-state"] {
            let p = home.inbox(&id).join(name);
            std::fs::write(&p, "001.msg\n").unwrap();
            let next = take(Some(&first));
            assert!(!first.still(&next), "{name} appearing is seen");
            assert!(next.escalated.is_some() || next.ring_state.is_some());
            std::fs::remove_file(&p).unwrap();
        }
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
        let dir = StateDir::open(&home);
        let take = |present, at| Stamps::take(&home, &dir, &id, present, at, true, None);
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
        assert!(later.still(&Stamps::take(
            &home,
            &dir,
            &id,
            present,
            now + 5,
            false,
            None
        )));
        // Replaced (a new inode), appended to, or a new file appearing.
        std::fs::write(home.meta(&id), "kind=ship\nx=1\n").unwrap();
        assert!(!later.still(&take(present, now + 5)));
        let more = Present(Present::META | Present::STATUS);
        assert!(!later.still(&take(more, now + 5)));
    }
}

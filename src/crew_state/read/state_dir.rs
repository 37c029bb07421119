//! `state/` opened once for a view, and a task's files read relative to
//! it with the fewest system calls.

use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir};
use rustix::io::Errno;

use crate::config::Config;
use crate::error::Result;
use crate::harness::HarnessProfile;
use crate::home::Home;
use crate::stamp::Stamp;
use crate::task_id::TaskId;
use crate::{fsx, harness, inbox};

use super::{Dirs, Present};

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
    pub(super) fd: Option<OwnedFd>,
    /// The harness profiles of the view, by name: built once and shared
    /// by every task naming them.
    pub(super) profiles: Mutex<HashMap<String, Option<Arc<HarnessProfile>>>>,
    /// The directories holding the view's worktrees.
    pub(crate) dirs: Dirs,
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
pub(super) enum Stat {
    /// Its bytes and its mtime (`fstat` first).
    Mtime,
    /// Its bytes only (read first, `fstat` only when the read is not a
    /// whole regular file's).
    Plain,
}

/// The buffer a file read for its bytes only is read into at once: a
/// file that fills it is left to the ordinary reader.
pub(super) const READ_FIRST: usize = 16 * 1024;

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
    pub(super) fn profile(&self, cfg: &Config, name: &str) -> Option<Arc<HarnessProfile>> {
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
    pub(super) fn stamp(&self, home: &Home, id: &TaskId, suffix: &str) -> Option<Stamp> {
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

    pub(super) fn read_if<T>(
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
    pub(super) fn inbox<T>(
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

//! File primitives (SPEC §2): the only module that creates, replaces,
//! appends to or renames files. Every other module asks it to.
//!
//! Guarantees:
//! - **Atomic replace**: readers see the old bytes or the new bytes, never a
//!   mix; after return the data and the directory entry are on disk.
//! - **Append**: a record is one `write_all` of a complete `\n`-terminated
//!   line on an `O_APPEND` descriptor under an exclusive lock on the file;
//!   a fragment left by a writer killed mid-write is ended with `\n` before
//!   the next record, never glued to it. Readers ignore a final line
//!   without `\n`.
//! - **Locks**: a dedicated lock file, never deleted, locked with
//!   `File::lock`; waits are bounded and a timeout writes nothing.
//! - **Numbered create**: the next number is one more than the highest
//!   present in every scanned directory; the file appears complete or not
//!   at all, and an existing file is never clobbered.
//! - Files are created 0600 and directories 0700; a symlink where a file or
//!   directory is expected is refused, never followed.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Default bound on lock waits (SPEC §2).
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> Error + 'a {
    move |e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            Error::Symlink(path.to_path_buf())
        } else {
            Error::io(op, path, e)
        }
    }
}

/// Refuses `path` if it is a symlink. A missing path is fine.
pub fn refuse_symlink(path: &Path) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(Error::Symlink(path.to_path_buf())),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("stat", path, e)),
    }
}

/// True if `path` exists as a directory (not through a symlink).
pub fn is_dir(path: &Path) -> Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(Error::Symlink(path.to_path_buf())),
        Ok(m) => Ok(m.is_dir()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io("stat", path, e)),
    }
}

/// Creates `path` (and missing parents) with mode 0700. An existing
/// directory is fine; a symlink or a file in its place is refused.
pub fn ensure_dir(path: &Path) -> Result<()> {
    if is_dir(path)? {
        return Ok(());
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(io_err("create directory", path))?;
    if !is_dir(path)? {
        return Err(Error::io(
            "create directory",
            path,
            io::ErrorKind::AlreadyExists.into(),
        ));
    }
    Ok(())
}

/// Reads a whole file, refusing a symlink. `Ok(None)` when it does not exist.
pub fn read_optional(path: &Path) -> Result<Option<Vec<u8>>> {
    let mut f = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("open", path)(e)),
    };
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).map_err(io_err("read", path))?;
    Ok(Some(buf))
}

/// [`read_optional`] plus the file's mtime (Unix seconds) from the same
/// open file, so a reader of many small files pays no extra `stat`.
pub fn read_optional_mtime(path: &Path) -> Result<Option<(Vec<u8>, Option<u64>)>> {
    let mut f = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("open", path)(e)),
    };
    let md = f.metadata().map_err(io_err("stat", path))?;
    let mtime = md
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs());
    // A plain read loop sized from the stat: `read_to_end` would stat and
    // seek again to size its buffer.
    let mut buf = vec![0u8; md.len() as usize + 1];
    let mut filled = 0;
    loop {
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match f.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_err("read", path)(e)),
        }
    }
    buf.truncate(filled);
    Ok(Some((buf, mtime)))
}

/// Opens directory `dir` once and reads each named file in it (relative
/// `openat`, `O_NOFOLLOW`), calling `f(index, bytes)` with a buffer reused
/// across files. Files that vanished are skipped; other failures are passed
/// as `Err`. Meant for many small files that are only ever replaced by
/// rename (never written in place): one `read` shorter than the buffer is
/// taken as end of file, so a small file costs open, read and close only.
pub fn read_each_in(
    dir: &Path,
    names: &[String],
    mut f: impl FnMut(usize, io::Result<&[u8]>),
) -> Result<()> {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd, FromRawFd};
    use std::os::unix::ffi::OsStrExt;
    refuse_symlink(dir)?;
    let d = File::open(dir).map_err(io_err("open directory", dir))?;
    let mut buf = vec![0u8; 64 * 1024];
    for (i, name) in names.iter().enumerate() {
        let Ok(c) = CString::new(std::ffi::OsStr::new(name).as_bytes()) else {
            f(i, Err(io::ErrorKind::InvalidInput.into()));
            continue;
        };
        // SAFETY: `d` is an open directory descriptor and `c` a valid C string.
        let fd = unsafe {
            libc::openat(
                d.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::NotFound {
                f(i, Err(e));
            }
            continue;
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let mut file = unsafe { File::from_raw_fd(fd) };
        let mut len = 0;
        let res = loop {
            match file.read(&mut buf[len..]) {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    len += n;
                    if len < buf.len() {
                        break Ok(());
                    }
                    buf.resize(buf.len() * 2, 0);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        match res {
            Ok(()) => f(i, Ok(&buf[..len])),
            Err(e) => f(i, Err(e)),
        }
    }
    Ok(())
}

/// Reads a whole file, refusing a symlink; a missing file is an error.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    read_optional(path)?.ok_or_else(|| Error::io("read", path, io::ErrorKind::NotFound.into()))
}

/// Sets `path`'s modification time to now, creating it empty (0600) if
/// missing; a symlink is refused. Cheaper than a replace for heartbeats.
pub fn touch(path: &Path) -> Result<()> {
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(io_err("open", path))?;
    f.set_modified(std::time::SystemTime::now())
        .map_err(io_err("touch", path))
}

/// The prefix of `bytes` up to and including the last `\n`: what a reader
/// may trust of a file someone may be appending to.
pub fn complete_lines(bytes: &[u8]) -> &[u8] {
    match bytes.iter().rposition(|&b| b == b'\n') {
        Some(i) => &bytes[..=i],
        None => &[],
    }
}

fn temp_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    target.with_file_name(format!(".{name}.tmp.{}.{n}", std::process::id()))
}

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Flushes a directory entry to disk.
pub fn sync_dir(dir: &Path) -> Result<()> {
    let f = File::open(dir).map_err(io_err("open directory", dir))?;
    f.sync_all().map_err(io_err("fsync directory", dir))
}

/// Writes `bytes` to a fresh dot-temp file beside `target` and fsyncs it.
fn write_temp(target: &Path, bytes: &[u8]) -> Result<PathBuf> {
    let tmp = temp_path(target);
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
            .map_err(io_err("create temp file for", target))?;
        // Errors name the file the user asked for, not the temp beside it.
        f.write_all(bytes).map_err(io_err("write", target))?;
        f.sync_all().map_err(io_err("fsync", target))
    })();
    match result {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Atomic replace: temp file, write, fsync, rename over `target`, fsync the
/// directory. A symlink at `target` is refused.
pub fn atomic_write(target: &Path, bytes: &[u8]) -> Result<()> {
    refuse_symlink(target)?;
    let tmp = write_temp(target, bytes)?;
    if let Err(e) = fs::rename(&tmp, target) {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io("rename", target, e));
    }
    sync_dir(parent_of(target))
}

/// Atomic replace without the fsyncs, for bookkeeping written in bulk:
/// readers still see old or new bytes, never a mix; durability comes from
/// a later [`sync_filesystem`] by the caller.
pub fn atomic_write_unsynced(target: &Path, bytes: &[u8]) -> Result<()> {
    refuse_symlink(target)?;
    let tmp = temp_path(target);
    let res = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .map_err(io_err("create temp file", &tmp))
        .and_then(|mut f| f.write_all(bytes).map_err(io_err("write", &tmp)))
        .and_then(|()| fs::rename(&tmp, target).map_err(|e| Error::io("rename", target, e)));
    if res.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    res
}

/// Flushes the filesystem holding `dir` (one `syncfs` for many writes).
pub fn sync_filesystem(dir: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let f = File::open(dir).map_err(io_err("open directory", dir))?;
    // SAFETY: a valid open descriptor for the duration of the call.
    if unsafe { libc::syncfs(f.as_raw_fd()) } != 0 {
        return Err(Error::io("syncfs", dir, io::Error::last_os_error()));
    }
    Ok(())
}

/// Renames `from` to `to` unless `to` exists. Returns `Ok(false)` (and
/// leaves both alone) when `to` already exists.
pub fn rename_noclobber(from: &Path, to: &Path) -> Result<bool> {
    match rename_noreplace(from, to) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::io("rename", to, e)),
    }
}

#[cfg(target_os = "linux")]
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(io::Error::other);
    let (f, t) = (c(from)?, c(to)?);
    // SAFETY: both pointers are valid NUL-terminated strings for the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            f.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        // Filesystems without RENAME_NOREPLACE: fall back to link + unlink.
        Some(libc::EINVAL) | Some(libc::ENOSYS) => link_then_unlink(from, to),
        _ => Err(err),
    }
}

#[cfg(not(target_os = "linux"))]
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    link_then_unlink(from, to)
}

fn link_then_unlink(from: &Path, to: &Path) -> io::Result<()> {
    fs::hard_link(from, to)?;
    fs::remove_file(from)
}

/// Removes a file (never a directory, never through a symlink's target).
/// Returns whether it existed.
pub fn remove_optional(path: &Path) -> Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io("remove", path, e)),
    }
}

/// Appends one complete record. `line` must end with `\n`; it is written
/// with a single `write_all` on an append descriptor, under an exclusive
/// lock on the file.
///
/// A writer SIGKILLed inside `write` can leave a fragment: Linux copies an
/// append page by page and stops between pages when a fatal signal is
/// pending, so a record crossing a 4 KiB boundary may be cut there. Under
/// the lock the file's last byte is checked, and a torn tail is ended with
/// a `\n` first, so the fragment stays one line of its own and never
/// swallows the start of this record.
pub fn append_line(path: &Path, line: &[u8]) -> Result<()> {
    use std::os::unix::fs::FileExt;
    debug_assert!(line.ends_with(b"\n"));
    let f = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(io_err("open for append", path))?;
    f.lock().map_err(io_err("lock", path))?;
    let res = (|| {
        let len = f.metadata().map_err(io_err("stat", path))?.len();
        let mut last = [b'\n'];
        if len > 0 {
            f.read_exact_at(&mut last, len - 1)
                .map_err(io_err("read", path))?;
        }
        if last[0] == b'\n' {
            append_whole(&f, line).map_err(io_err("append", path))
        } else {
            let mut fixed = Vec::with_capacity(line.len() + 1);
            fixed.push(b'\n');
            fixed.extend_from_slice(line);
            append_whole(&f, &fixed).map_err(io_err("append", path))
        }
    })();
    let _ = f.unlock();
    res
}

/// Writes `line` at the end of `f`, all of it or (as far as this process
/// can tell) none of it. A full disk must not leave a torn record that the
/// next appender's line would be glued onto: the space is reserved first
/// where the filesystem supports it, so `ENOSPC` comes before any byte is
/// written; if a write still stops short, the torn bytes are cut off again
/// while they are the file's tail.
fn append_whole(mut f: &File, line: &[u8]) -> io::Result<()> {
    reserve(f, line.len())?;
    let mut written = 0;
    let err = loop {
        if written == line.len() {
            return Ok(());
        }
        match f.write(&line[written..]) {
            Ok(0) => break io::Error::from(io::ErrorKind::WriteZero),
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break e,
        }
    };
    if written > 0 {
        untear(f, &line[..written]);
    }
    Err(err)
}

/// Reserves `len` bytes past the end of `f` without changing its size.
/// Only a definite "no space" is an error; a filesystem that cannot
/// preallocate falls back to the write and [`untear`].
#[cfg(target_os = "linux")]
fn reserve(f: &File, len: usize) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let size = f.metadata()?.len();
    let (Ok(off), Ok(len)) = (libc::off_t::try_from(size), libc::off_t::try_from(len)) else {
        return Ok(());
    };
    // SAFETY: the descriptor is open for writing for the whole call.
    let rc = unsafe { libc::fallocate(f.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, off, len) };
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => Err(e),
        _ => Ok(()),
    }
}

#[cfg(not(target_os = "linux"))]
fn reserve(_f: &File, _len: usize) -> io::Result<()> {
    Ok(())
}

/// Cuts `ours` (the start of a record whose write failed) off the end of
/// `f` if it is still the file's tail; an append descriptor's offset sits
/// just past the bytes it wrote. Best effort: if another appender has
/// written since, the file is left alone.
fn untear(mut f: &File, ours: &[u8]) {
    use std::io::Seek;
    use std::os::unix::fs::FileExt;
    let Ok(end) = f.stream_position() else { return };
    let Some(start) = end.checked_sub(ours.len() as u64) else {
        return;
    };
    let mut tail = vec![0; ours.len()];
    let still_tail = f.metadata().is_ok_and(|m| m.len() == end)
        && f.read_exact_at(&mut tail, start).is_ok()
        && tail == ours;
    if still_tail {
        let _ = f.set_len(start);
    }
}

/// An exclusive lock on a dedicated lock file; released on drop. The lock
/// file is never deleted, so two processes always contend on one inode.
#[derive(Debug)]
pub struct LockGuard {
    file: File,
    path: PathBuf,
}

impl LockGuard {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the lock file's contents (e.g. with the holder's pid).
    pub fn write_contents(&mut self, bytes: &[u8]) -> Result<()> {
        use std::io::Seek;
        self.file
            .set_len(0)
            .map_err(io_err("truncate", &self.path))?;
        self.file
            .seek(io::SeekFrom::Start(0))
            .map_err(io_err("seek", &self.path))?;
        self.file
            .write_all(bytes)
            .map_err(io_err("write", &self.path))?;
        self.file.sync_data().map_err(io_err("fsync", &self.path))
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

fn open_lock_file(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(io_err("open lock", path))
}

/// Takes the lock if it is free right now.
pub fn try_lock(path: &Path) -> Result<Option<LockGuard>> {
    let file = open_lock_file(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(LockGuard {
            file,
            path: path.to_path_buf(),
        })),
        Err(fs::TryLockError::WouldBlock) => Ok(None),
        Err(fs::TryLockError::Error(e)) => Err(Error::io("lock", path, e)),
    }
}

/// Waits at most `wait` for the lock; a timeout is [`Error::LockTimeout`].
pub fn lock(path: &Path, wait: Duration) -> Result<LockGuard> {
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_micros(200);
    loop {
        if let Some(g) = try_lock(path)? {
            return Ok(g);
        }
        if Instant::now() >= deadline {
            return Err(Error::LockTimeout {
                path: path.to_path_buf(),
                secs: wait.as_secs(),
            });
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// `NNN.<ext>` with at least three digits (SPEC §5.1).
pub fn numbered_name(n: u64, ext: &str) -> String {
    format!("{n:03}.{ext}")
}

/// The number in a `NNN.<ext>` name; `None` for any other name. Only the
/// canonical spelling counts (the one [`numbered_name`] gives, numbers
/// from 1): every reader opens a record by its canonical name, so a
/// hand-written `1.msg` or `0007.msg` is ignored rather than listed as
/// pending and then never found (SPEC §5.1: readers ignore other names).
pub fn parse_numbered(name: &str, ext: &str) -> Option<u64> {
    let stem = name.strip_suffix(ext)?.strip_suffix('.')?;
    if stem.is_empty() || stem.len() > 19 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = stem.parse().ok()?;
    (n > 0 && numbered_name(n, ext) == name).then_some(n)
}

/// Numbers of the `NNN.<ext>` files in `dir`, sorted; a missing dir is empty.
pub fn list_numbered(dir: &Path, ext: &str) -> Result<Vec<u64>> {
    refuse_symlink(dir)?;
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("read directory", dir, e)),
    };
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| Error::io("read directory", dir, e))?;
        if let Some(n) = entry
            .file_name()
            .to_str()
            .and_then(|s| parse_numbered(s, ext))
        {
            out.push(n);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// A complete, fsynced dot-temp file waiting to become a numbered file.
/// Writing and syncing happen before the directory lock is taken, so the
/// lock is held only for a directory scan and one rename. Dropping an
/// uncommitted `Staged` removes the temp file.
#[derive(Debug)]
pub struct Staged {
    tmp: Option<PathBuf>,
    dir: PathBuf,
}

/// Writes `bytes` to a fresh dot-temp file in `dir` and fsyncs it.
pub fn stage(dir: &Path, bytes: &[u8]) -> Result<Staged> {
    let tmp = write_temp(&dir.join("staged"), bytes)?;
    Ok(Staged {
        tmp: Some(tmp),
        dir: dir.to_path_buf(),
    })
}

impl Staged {
    /// Under the caller's lock on the directory: picks one more than the
    /// highest `NNN.<ext>` in the directory and every dir of `also_scan`
    /// and renames the staged file there without clobbering. The caller
    /// fsyncs the directory (after releasing the lock) with [`sync_dir`].
    pub fn commit_numbered(
        mut self,
        also_scan: &[&Path],
        ext: &str,
        _held: &LockGuard,
    ) -> Result<(u64, PathBuf)> {
        let tmp = self.tmp.take().expect("staged file present until commit");
        let result = (|| {
            let mut highest = list_numbered(&self.dir, ext)?.last().copied().unwrap_or(0);
            for d in also_scan {
                highest = highest.max(list_numbered(d, ext)?.last().copied().unwrap_or(0));
            }
            let mut n = highest + 1;
            loop {
                let target = self.dir.join(numbered_name(n, ext));
                // A name taken outside the lock (a human?) is never clobbered.
                if rename_noclobber(&tmp, &target)? {
                    return Ok((n, target));
                }
                n += 1;
            }
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let _ = fs::remove_file(tmp);
        }
    }
}

/// Numbered create (SPEC §2): stages `bytes` in `dir`, then under the lock at
/// `lock_path` renames it to one more than the highest `NNN.<ext>` in `dir`
/// and every dir of `also_scan`, never clobbering; fsyncs the directory.
/// Returns the number and the final path.
pub fn create_numbered(
    dir: &Path,
    also_scan: &[&Path],
    ext: &str,
    lock_path: &Path,
    bytes: &[u8],
) -> Result<(u64, PathBuf)> {
    let staged = stage(dir, bytes)?;
    let guard = lock(lock_path, LOCK_WAIT)?;
    let done = staged.commit_numbered(also_scan, ext, &guard)?;
    drop(guard);
    sync_dir(dir)?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        atomic_write(&p, b"one").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn symlinks_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real");
        fs::write(&real, b"x").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(matches!(atomic_write(&link, b"y"), Err(Error::Symlink(_))));
        assert!(matches!(append_line(&link, b"y\n"), Err(Error::Symlink(_))));
        assert!(matches!(read_optional(&link), Err(Error::Symlink(_))));
        assert_eq!(fs::read(&real).unwrap(), b"x");
    }

    #[test]
    fn numbered_names_round_trip_past_999() {
        assert_eq!(numbered_name(7, "msg"), "007.msg");
        assert_eq!(numbered_name(1000, "msg"), "1000.msg");
        assert_eq!(parse_numbered("1000.msg", "msg"), Some(1000));
        assert_eq!(parse_numbered("002.msg", "msg"), Some(2));
        for bad in [
            ".002.msg",
            "002.msg.tmp",
            "x.msg",
            ".msg",
            "002.md",
            "-1.msg",
            "1.msg",
            "12.msg",
            "0007.msg",
            "01000.msg",
            "000.msg",
        ] {
            assert_eq!(parse_numbered(bad, "msg"), None, "{bad}");
        }
    }

    #[test]
    fn numbered_create_counts_other_dirs_and_never_clobbers() {
        let d = tempfile::tempdir().unwrap();
        let handled = d.path().join("handled");
        fs::create_dir(&handled).unwrap();
        fs::write(handled.join("004.msg"), b"old").unwrap();
        let lock = d.path().join(".lock");
        let (n, p) = create_numbered(d.path(), &[&handled], "msg", &lock, b"hello").unwrap();
        assert_eq!(n, 5);
        assert_eq!(fs::read(p).unwrap(), b"hello");
        let (n, _) = create_numbered(d.path(), &[&handled], "msg", &lock, b"again").unwrap();
        assert_eq!(n, 6);
    }

    #[test]
    fn lock_wait_is_bounded() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".lock");
        let _held = lock(&p, LOCK_WAIT).unwrap();
        let err = lock(&p, Duration::from_millis(50)).unwrap_err();
        assert_eq!(err.exit_code(), 3);
    }

    #[test]
    fn a_torn_append_is_cut_back_off_only_while_it_is_the_tail() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("log");
        fs::write(&p, b"one\n").unwrap();
        let mut f = OpenOptions::new().read(true).append(true).open(&p).unwrap();
        f.write_all(b"tw").unwrap();
        untear(&f, b"tw");
        assert_eq!(fs::read(&p).unwrap(), b"one\n");
        f.write_all(b"tw").unwrap();
        let mut other = OpenOptions::new().append(true).open(&p).unwrap();
        other.write_all(b"x\n").unwrap();
        untear(&f, b"tw");
        assert_eq!(fs::read(&p).unwrap(), b"one\ntwx\n");
    }

    #[test]
    fn read_each_in_reads_small_and_large_files_and_skips_missing() {
        let d = tempfile::tempdir().unwrap();
        let big = vec![b'x'; 200_000];
        fs::write(d.path().join("a"), b"small").unwrap();
        fs::write(d.path().join("b"), &big).unwrap();
        std::os::unix::fs::symlink(d.path().join("a"), d.path().join("l")).unwrap();
        let names: Vec<String> = ["a", "gone", "b", "l"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut seen = Vec::new();
        read_each_in(d.path(), &names, |i, r| {
            seen.push((i, r.map(|b| b.len()).map_err(|_| ())))
        })
        .unwrap();
        assert_eq!(seen, vec![(0, Ok(5)), (2, Ok(200_000)), (3, Err(()))]);
    }

    #[test]
    fn append_ends_a_torn_fragment_instead_of_gluing_to_it() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("log");
        append_line(&p, b"one\n").unwrap();
        fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .and_then(|mut f| f.write_all(b"frag"))
            .unwrap();
        append_line(&p, b"two\n").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"one\nfrag\ntwo\n");
    }

    #[test]
    fn complete_lines_drops_a_torn_tail() {
        assert_eq!(complete_lines(b"a\nb\npart"), b"a\nb\n");
        assert_eq!(complete_lines(b"part"), b"");
    }
}

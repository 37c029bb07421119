//! Atomic replace, no-clobber renames and removals: a file is either its
//! old bytes or its new bytes, and a temp file never takes a real name.

use super::*;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Sets `path`'s modification time to now, creating it empty (0600) if
/// missing; a symlink is refused. Cheaper than a replace for heartbeats.
pub fn touch(path: &Path) -> Result<()> {
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(NOFOLLOW)
        .open(path)
        .map_err(io_err("open", path))?;
    f.set_modified(std::time::SystemTime::now())
        .map_err(io_err("touch", path))
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
pub(super) fn write_temp(target: &Path, bytes: &[u8]) -> Result<PathBuf> {
    let tmp = temp_path(target);
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(NOFOLLOW)
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
        .custom_flags(NOFOLLOW)
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
    let f = File::open(dir).map_err(io_err("open directory", dir))?;
    rustix::fs::syncfs(&f).map_err(|e| Error::io("syncfs", dir, e.into()))
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
    use rustix::fs::{CWD, RenameFlags};
    use rustix::io::Errno;
    match rustix::fs::renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        // Filesystems without RENAME_NOREPLACE: fall back to link + unlink.
        Err(Errno::INVAL | Errno::NOSYS) => link_then_unlink(from, to),
        Err(e) => Err(e.into()),
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

//! Atomic replace, no-clobber renames and removals: a file is either its
//! old bytes or its new bytes, and a temp file never takes a real name.

use std::ffi::{OsStr, OsString};

use super::*;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Sets `path`'s modification time to now, creating it empty (0600) if
/// missing; a symlink is refused. Cheaper than a replace for heartbeats.
pub fn touch(path: &Path) -> Result<()> {
    use rustix::fs::OFlags;
    let (dir, name) = open_parent(path, "open", false)?;
    let f = open_at(
        &dir,
        name,
        OFlags::WRONLY | OFlags::CREATE,
        0o600,
        "open",
        path,
    )?;
    f.set_modified(std::time::SystemTime::now())
        .map_err(io_err("touch", path))
}

fn temp_name(target: &OsStr) -> OsString {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut name = OsString::from(".");
    name.push(target);
    name.push(format!(".tmp.{}.{n}", std::process::id()));
    name
}

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Flushes a directory entry to disk.
pub fn sync_dir(dir: &Path) -> Result<()> {
    let f = open_dir(dir, "open directory", dir, false)?;
    f.sync_all().map_err(io_err("fsync directory", dir))
}

/// A dot-temp file in an open directory, removed on drop unless it was
/// renamed to a real name.
pub(super) struct Temp {
    pub(super) dir: File,
    pub(super) name: Option<OsString>,
}

impl Temp {
    /// Swaps the temp file with `to` in the same directory (both must
    /// exist): `to` then holds the new bytes, and the temp's name the old
    /// ones. `false`, with nothing changed, where the swap failed (`to` is
    /// gone, or the filesystem has no such swap): the caller renames
    /// instead.
    fn exchange(&self, to: &OsStr) -> bool {
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::RenameFlags;
            let name = self.name.as_ref().expect("temp present until renamed");
            rustix::fs::renameat_with(&self.dir, name, &self.dir, to, RenameFlags::EXCHANGE).is_ok()
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = to;
            false
        }
    }

    /// Renames the temp file to `to` in the same directory, replacing it.
    fn rename_over(mut self, to: &OsStr) -> io::Result<()> {
        let name = self.name.take().expect("temp present until renamed");
        let res = rustix::fs::renameat(&self.dir, &name, &self.dir, to).map_err(io::Error::from);
        if res.is_err() {
            let _ = rustix::fs::unlinkat(&self.dir, &name, rustix::fs::AtFlags::empty());
        }
        res
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if let Some(name) = self.name.take() {
            let _ = rustix::fs::unlinkat(&self.dir, &name, rustix::fs::AtFlags::empty());
        }
    }
}

impl std::fmt::Debug for Temp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Temp")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Writes `bytes` to a fresh dot-temp file beside `target`, fsynced unless
/// `unsynced`. Errors name `target`, the file the user asked for, not the
/// temp beside it.
pub(super) fn write_temp<'a>(
    target: &'a Path,
    bytes: &[u8],
    unsynced: bool,
) -> Result<(Temp, &'a OsStr)> {
    use rustix::fs::OFlags;
    let (dir, real) = open_parent(target, "create temp file for", false)?;
    let name = temp_name(real);
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL;
    let mut f = open_at(&dir, &name, flags, 0o600, "create temp file for", target)?;
    let temp = Temp {
        dir,
        name: Some(name),
    };
    f.write_all(bytes).map_err(io_err("write", target))?;
    if !unsynced {
        f.sync_all().map_err(io_err("fsync", target))?;
    }
    Ok((temp, real))
}

/// What `name` in `dir` is, not following a symlink (`None`: nothing
/// there, or it cannot be looked at).
fn file_type_at(dir: &File, name: &OsStr) -> Option<rustix::fs::FileType> {
    rustix::fs::statat(dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
        .ok()
        .map(|st| rustix::fs::FileType::from_raw_mode(st.st_mode))
}

/// Refuses a symlink at `name` in `dir` (the entry a replace would take).
fn refuse_symlink_at(dir: &File, name: &OsStr, target: &Path) -> Result<()> {
    match file_type_at(dir, name) {
        Some(rustix::fs::FileType::Symlink) => Err(Error::Symlink(target.to_path_buf())),
        _ => Ok(()),
    }
}

/// Atomic replace: temp file, write, fsync, rename over `target`, fsync the
/// directory. A symlink at `target` is refused.
pub fn atomic_write(target: &Path, bytes: &[u8]) -> Result<()> {
    let (temp, name) = write_temp(target, bytes, false)?;
    refuse_symlink_at(&temp.dir, name, target)?;
    let dir = temp
        .dir
        .try_clone()
        .map_err(io_err("open directory", parent_of(target)))?;
    temp.rename_over(name)
        .map_err(|e| Error::io("rename", target, e))?;
    dir.sync_all()
        .map_err(io_err("fsync directory", parent_of(target)))
}

/// Atomic replace without the fsyncs, for bookkeeping written in bulk:
/// readers still see old or new bytes, never a mix; durability comes from
/// a later [`sync_filesystem`] by the caller.
///
/// An existing regular file is swapped with the temp file
/// (`renameat2(RENAME_EXCHANGE)`), and its old bytes, now under the
/// temp's dot-name, are handed back as a [`Leftover`], removed when the
/// caller drops it: at once, or after a batch of writes that should not
/// wait for the removals. A plain rename over an existing file makes ext4
/// (`auto_da_alloc`) start writing the new file's data out there and then,
/// 0.3–0.4 ms a file: the durability this function leaves to the caller's
/// one flush. Where the swap is not to be had (no such file, a filesystem
/// without it), it is the plain rename, and nothing is left over.
pub fn atomic_write_unsynced(target: &Path, bytes: &[u8]) -> Result<Option<Leftover>> {
    let (temp, name) = write_temp(target, bytes, true)?;
    match file_type_at(&temp.dir, name) {
        Some(rustix::fs::FileType::Symlink) => Err(Error::Symlink(target.to_path_buf())),
        Some(rustix::fs::FileType::RegularFile) if temp.exchange(name) => {
            let mut temp = temp;
            let old = temp.name.clone().expect("temp present until renamed");
            if file_type_at(&temp.dir, &old) == Some(rustix::fs::FileType::Directory) {
                // A directory took the name between the look and the swap:
                // swapped back, as a rename over it would have failed.
                if !temp.exchange(name) {
                    // Not swapped back: our bytes stay in place, and the
                    // directory under the temp's name.
                    temp.name = None;
                }
                return Err(Error::io("rename", target, rustix::io::Errno::ISDIR.into()));
            }
            temp.name = None;
            Ok(Some(Leftover {
                path: parent_of(target).join(old),
            }))
        }
        _ => temp
            .rename_over(name)
            .map(|()| None)
            .map_err(|e| Error::io("rename", target, e)),
    }
}

/// A replaced file's old bytes under a dot-temp name (see
/// [`atomic_write_unsynced`]), removed on drop, through the checked walk
/// (it holds no open directory: a pass may leave thousands). A process
/// that dies first leaves it as debris, cleared like any other temp file.
#[derive(Debug)]
pub struct Leftover {
    path: PathBuf,
}

impl Drop for Leftover {
    fn drop(&mut self) {
        let _ = remove_optional(&self.path);
    }
}

/// Flushes the filesystem holding `dir` (one `syncfs` for many writes).
pub fn sync_filesystem(dir: &Path) -> Result<()> {
    let f = open_dir(dir, "open directory", dir, false)?;
    rustix::fs::syncfs(&f).map_err(|e| Error::io("syncfs", dir, e.into()))
}

/// Renames `from` to `to` unless `to` exists. Returns `Ok(false)` (and
/// leaves both alone) when `to` already exists. Both are reached by the
/// checked walk; a directory may be moved too.
pub fn rename_noclobber(from: &Path, to: &Path) -> Result<bool> {
    let (from_dir, from_name) = open_parent(from, "rename", false)?;
    let (to_dir, to_name) = open_parent(to, "rename", false)?;
    match rename_noreplace_at(&from_dir, from_name, &to_dir, to_name) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::io("rename", to, e)),
    }
}

/// `renameat2(RENAME_NOREPLACE)`; where a filesystem lacks it, a hard
/// link then an unlink (files only).
pub(super) fn rename_noreplace_at(
    from_dir: &File,
    from: &OsStr,
    to_dir: &File,
    to: &OsStr,
) -> io::Result<()> {
    use rustix::fs::AtFlags;
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::RenameFlags;
        use rustix::io::Errno;
        match rustix::fs::renameat_with(from_dir, from, to_dir, to, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            Err(Errno::INVAL | Errno::NOSYS) => {}
            Err(e) => return Err(e.into()),
        }
    }
    rustix::fs::linkat(from_dir, from, to_dir, to, AtFlags::empty())?;
    rustix::fs::unlinkat(from_dir, from, AtFlags::empty())?;
    Ok(())
}

/// Removes an empty directory (never a file, never through a symlink).
/// Returns whether it was removed: a missing or non-empty one is left.
pub fn remove_empty_dir(path: &Path) -> Result<bool> {
    let (dir, name) = match open_parent(path, "remove", false) {
        Ok(x) => x,
        Err(e) if is_not_found(&e) => return Ok(false),
        Err(e) => return Err(e),
    };
    match rustix::fs::unlinkat(&dir, name, rustix::fs::AtFlags::REMOVEDIR) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTEMPTY | rustix::io::Errno::EXIST) => {
            Ok(false)
        }
        Err(e) => Err(Error::io("remove", path, e.into())),
    }
}

/// Removes a file (never a directory, never through a symlink's target).
/// Returns whether it existed.
pub fn remove_optional(path: &Path) -> Result<bool> {
    let (dir, name) = match open_parent(path, "remove", false) {
        Ok(x) => x,
        Err(e) if is_not_found(&e) => return Ok(false),
        Err(e) => return Err(e),
    };
    match rustix::fs::unlinkat(&dir, name, rustix::fs::AtFlags::empty()) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::NOENT) => Ok(false),
        Err(e) => Err(Error::io("remove", path, e.into())),
    }
}

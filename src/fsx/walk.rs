//! The checked walk (docs/spec/home.md#permissions): every file below a home is reached from a
//! descriptor of the home's root, one directory at a time, each opened
//! `O_NOFOLLOW | O_DIRECTORY`. A symlink anywhere below the root — `data`,
//! `state`, `state/archive`, a task's directory, the inbox — is refused
//! naming that component; nothing is created, written, moved or read
//! through it. The operation itself then runs on the last directory's
//! descriptor (`openat`, `renameat`, `unlinkat`, …), so a directory swapped
//! for a symlink after the walk is not followed either.
//!
//! Which paths are "below a home": the homes this process resolved
//! ([`register_root`], called by every `Home` constructor). A path below
//! none of them (a worktree, a file named on the command line, a test's
//! temporary directory) is opened as given, with only its last component
//! refused when it is a symlink.

use super::*;

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::Component;
use std::sync::RwLock;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// The roots of the homes this process resolved.
static ROOTS: RwLock<Vec<PathBuf>> = RwLock::new(Vec::new());

/// Makes every path below `root` reachable only through the checked walk.
/// Called by every `Home` constructor; registering a root twice is harmless.
pub fn register_root(root: &Path) {
    let mut roots = ROOTS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !roots.iter().any(|r| r == root) {
        roots.push(root.to_path_buf());
    }
}

/// The registered root `path` lies below (the longest one), and the rest
/// of `path` relative to it.
fn split_root(path: &Path) -> Option<(PathBuf, &Path)> {
    let roots = ROOTS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    roots
        .iter()
        .filter(|r| path.starts_with(r))
        .max_by_key(|r| r.as_os_str().len())
        .map(|r| (r.clone(), path.strip_prefix(r).unwrap_or(Path::new(""))))
}

/// Whether `path` lies below a home this process resolved (or is its root).
pub fn is_below_home(path: &Path) -> bool {
    split_root(path).is_some()
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// The error for `errno` met while walking to `component` on behalf of an
/// operation `op` on `target`: a symlink is [`Error::Symlink`] naming the
/// component, anything else is [`Error::Io`] naming the target.
fn walk_err(op: &'static str, target: &Path, component: &Path, errno: Errno) -> Error {
    if errno == Errno::LOOP {
        Error::Symlink(component.to_path_buf())
    } else {
        Error::io(op, target, errno.into())
    }
}

/// Whether `name` in `dir` is a symlink (not following it).
fn is_symlink_at(dir: &OwnedFd, name: &OsStr) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink)
}

/// Opens directory `path` for `op` on `target`, refusing a symlink in every
/// component below the home's root; with `create`, missing directories are
/// made (0700) on the way. Outside a home, `path` is opened as given (and
/// made with its parents when `create`), refusing only a symlink at its
/// last component.
pub(crate) fn open_dir(path: &Path, op: &'static str, target: &Path, create: bool) -> Result<File> {
    walk_dir(path, op, target, create, false)
}

/// [`open_dir`]; `parent_outside` says `path` is the parent of a file the
/// caller names, which outside a home is followed like any path the user
/// gives.
fn walk_dir(
    path: &Path,
    op: &'static str,
    target: &Path,
    create: bool,
    parent_outside: bool,
) -> Result<File> {
    let Some((root, rel)) = split_root(path) else {
        return open_dir_outside(path, op, target, create, parent_outside);
    };
    let root_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut cur = match rustix::fs::open(&root, root_flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) if create => {
            // `fm init`: the home itself does not exist yet.
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&root)
                .map_err(io_err(op, target))?;
            rustix::fs::open(&root, root_flags, Mode::empty())
                .map_err(|e| Error::io(op, target, e.into()))?
        }
        Err(e) => return Err(Error::io(op, target, e.into())),
    };
    let mut walked = root;
    for c in rel.components() {
        let Component::Normal(name) = c else {
            // Home paths are built from checked names: `..` or `.` here
            // would be a path that could leave the home.
            return Err(Error::refused(format!(
                "refusing {} (not a plain path below the home)",
                target.display()
            )));
        };
        walked.push(name);
        let next = match rustix::fs::openat(&cur, name, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) if create => {
                match rustix::fs::mkdirat(&cur, name, Mode::from_raw_mode(0o700)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(walk_err(op, target, &walked, e)),
                }
                rustix::fs::openat(&cur, name, DIR_FLAGS, Mode::empty())
                    .map_err(|e| walk_err(op, target, &walked, e))?
            }
            // A symlink opened `O_NOFOLLOW | O_DIRECTORY` fails with
            // `ENOTDIR` or `ELOOP` depending on the kernel: look.
            Err(e @ (Errno::NOTDIR | Errno::LOOP)) => {
                if is_symlink_at(&cur, name) {
                    return Err(Error::Symlink(walked));
                }
                return Err(walk_err(op, target, &walked, e));
            }
            Err(e) => return Err(walk_err(op, target, &walked, e)),
        };
        cur = next;
    }
    Ok(File::from(cur))
}

fn open_dir_outside(
    path: &Path,
    op: &'static str,
    target: &Path,
    create: bool,
    follow: bool,
) -> Result<File> {
    let path = if path.as_os_str().is_empty() {
        Path::new(".")
    } else {
        path
    };
    let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    let open = || rustix::fs::open(path, flags, Mode::empty());
    let fd = match open() {
        Ok(fd) => fd,
        Err(Errno::NOENT) if create => {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(path)
                .map_err(io_err(op, target))?;
            open().map_err(|e| outside_err(path, op, target, e, follow))?
        }
        Err(e) => return Err(outside_err(path, op, target, e, follow)),
    };
    Ok(File::from(fd))
}

fn outside_err(path: &Path, op: &'static str, target: &Path, e: Errno, follow: bool) -> Error {
    let link = !follow && fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if link {
        Error::Symlink(path.to_path_buf())
    } else {
        Error::io(op, target, e.into())
    }
}

/// The directory holding `target` (reached by [`open_dir`]) and `target`'s
/// last component, for an `*at` call on it.
pub(crate) fn open_parent<'a>(
    target: &'a Path,
    op: &'static str,
    create: bool,
) -> Result<(File, &'a OsStr)> {
    let Some(Component::Normal(name)) = target.components().next_back() else {
        return Err(Error::io(
            op,
            target,
            io::Error::new(io::ErrorKind::InvalidInput, "not a file name"),
        ));
    };
    let parent = target.parent().unwrap_or(Path::new(""));
    Ok((walk_dir(parent, op, target, create, true)?, name))
}

/// Whether `e` says the file (or a directory on its way) does not exist.
pub(crate) fn is_not_found(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
}

/// Opens `name` in `dir` with `flags` (plus `O_NOFOLLOW | O_CLOEXEC`); a
/// symlink is [`Error::Symlink`] naming `target`.
pub(crate) fn open_at(
    dir: &File,
    name: &OsStr,
    flags: OFlags,
    mode: u32,
    op: &'static str,
    target: &Path,
) -> Result<File> {
    let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(mode))
        .map(File::from)
        .map_err(|e| io_err(op, target)(e.into()))
}

/// The metadata of `path` itself (a symlink is reported as one, not
/// followed), reached by the checked walk; `None` when it does not exist.
pub fn stat(path: &Path) -> Result<Option<fs::Metadata>> {
    let (dir, name) = match open_parent(path, "stat", false) {
        Ok(x) => x,
        Err(e) if is_not_found(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(&dir, name, flags, Mode::empty()) {
        Ok(fd) => File::from(fd)
            .metadata()
            .map(Some)
            .map_err(io_err("stat", path)),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(Error::io("stat", path, e.into())),
    }
}

/// Whether `path` exists (a symlink counts as existing, and is not
/// followed), reached by the checked walk.
pub fn exists(path: &Path) -> Result<bool> {
    stat(path).map(|m| m.is_some())
}

/// Opens `path` for reading through the checked walk, without blocking and
/// without following a symlink, and refuses anything but a regular file
/// (docs/spec/home.md#permissions). `None` when it (or a directory on its way) does not exist.
/// For readers that stream, seek or bound what they read.
pub fn open_read(path: &Path) -> Result<Option<(File, fs::Metadata)>> {
    let (dir, name) = match open_parent(path, "open", false) {
        Ok(x) => x,
        Err(e) if is_not_found(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let f = match open_at(
        &dir,
        name,
        OFlags::RDONLY | OFlags::NONBLOCK,
        0,
        "open",
        path,
    ) {
        Ok(f) => f,
        Err(e) if is_not_found(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let md = regular(&f, path)?;
    Ok(Some((f, md)))
}

/// The names in directory `dir` (without `.` and `..`), unsorted, reached
/// by the checked walk; a missing directory is empty.
pub fn list_dir(dir: &Path) -> Result<Vec<std::ffi::OsString>> {
    use std::os::unix::ffi::OsStrExt;
    let d = match open_dir(dir, "read directory", dir, false) {
        Ok(d) => d,
        Err(e) if is_not_found(&e) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let entries =
        rustix::fs::Dir::read_from(&d).map_err(|e| Error::io("read directory", dir, e.into()))?;
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("read directory", dir, e.into()))?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            out.push(OsStr::from_bytes(name).to_os_string());
        }
    }
    Ok(out)
}

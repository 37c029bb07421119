//! The directories a view looks into (the worktrees' parents), each
//! opened once for the view.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::error::Result;
use crate::fsx;
use crate::gitfiles::GitFiles;

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
    #[expect(
        clippy::disallowed_methods,
        reason = "outside the home: a worktree or project path meta names"
    )]
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
    #[expect(
        clippy::disallowed_methods,
        reason = "outside the home: a worktree or project path meta names"
    )]
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

//! Dedicated lock files, never deleted, with bounded waits.

use super::*;

/// Default bound on lock waits (docs/spec/files.md#locks).
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

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
    use rustix::fs::OFlags;
    let (dir, name) = open_parent(path, "open lock", false)?;
    open_at(
        &dir,
        name,
        OFlags::RDWR | OFlags::CREATE,
        0o600,
        "open lock",
        path,
    )
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
    wait_bounded(path, wait, || try_lock(path))
}

/// Calls `attempt` until it yields a value, for at most `wait`; a timeout
/// is [`Error::LockTimeout`] naming `path`. The one wait loop of every
/// lock, on a lock file or on an append target.
pub(super) fn wait_bounded<T>(
    path: &Path,
    wait: Duration,
    mut attempt: impl FnMut() -> Result<Option<T>>,
) -> Result<T> {
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_micros(200);
    loop {
        if let Some(v) = attempt()? {
            return Ok(v);
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

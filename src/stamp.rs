//! The one "file changed" stamp every kept reader compares: the fleet
//! view's task files, the watcher's inbox memo, `fm top`'s source and the
//! git file reader all ask [`Stamp::settled`] with the same
//! [`SETTLE_SECS`] (docs/fast-paths.md says why that margin).
//!
//! A stamp is what one `stat` shows of a file: inode, size, modification
//! and change times. Two equal stamps mean the same file with the same
//! contents only when the later of its times lies far enough before the
//! read that took the first one: a write in the same tick of the file
//! system's clock as that read would leave every time as it was.

use std::fs;
use std::os::unix::fs::MetadataExt;

/// A file changed less than this long (seconds) before a read is read
/// again next time, whatever its stamp says.
pub(crate) const SETTLE_SECS: u64 = 2;

/// What one `stat` shows of a file, as far as its contents can change
/// without the stamp changing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct Stamp {
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

fn ns(secs: i64, nsecs: i64) -> i128 {
    i128::from(secs) * 1_000_000_000 + i128::from(nsecs)
}

impl Stamp {
    /// The stamp of a `stat` the caller already took.
    pub(crate) fn of_stat(st: &rustix::fs::Stat) -> Stamp {
        Stamp {
            ino: st.st_ino,
            size: u64::try_from(st.st_size).unwrap_or(0),
            mtime_ns: i128::from(st.st_mtime) * 1_000_000_000 + i128::from(st.st_mtime_nsec),
            ctime_ns: i128::from(st.st_ctime) * 1_000_000_000 + i128::from(st.st_ctime_nsec),
        }
    }

    /// The stamp of metadata the caller already read.
    pub(crate) fn of_metadata(md: &fs::Metadata) -> Stamp {
        Stamp {
            ino: md.ino(),
            size: md.size(),
            mtime_ns: ns(md.mtime(), md.mtime_nsec()),
            ctime_ns: ns(md.ctime(), md.ctime_nsec()),
        }
    }

    /// The stamp of `path` (not following a symlink); `None` when it
    /// cannot be taken.
    pub(crate) fn of_path(path: &std::path::Path) -> Option<Stamp> {
        let md = crate::fsx::stat(path).ok()??;
        Some(Stamp::of_metadata(&md))
    }

    /// The file's inode number.
    pub(crate) fn ino(self) -> u64 {
        self.ino
    }

    /// Whether a file with this stamp, read at `read_at` (Unix seconds,
    /// wall clock), can no longer change without changing its stamp: its
    /// last change lies more than [`SETTLE_SECS`] before the read.
    pub(crate) fn settled(self, read_at: u64) -> bool {
        let before = (i128::from(read_at) - i128::from(SETTLE_SECS)) * 1_000_000_000;
        self.mtime_ns.max(self.ctime_ns) < before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_within_the_margin_is_not_settled() {
        let s = Stamp {
            mtime_ns: 100 * 1_000_000_000,
            ctime_ns: 100 * 1_000_000_000,
            ..Stamp::default()
        };
        assert!(!s.settled(100));
        assert!(!s.settled(100 + SETTLE_SECS));
        assert!(s.settled(101 + SETTLE_SECS));
        // The later of the two times counts (a chmod moves only ctime).
        let chmod = Stamp {
            ctime_ns: 200 * 1_000_000_000,
            ..s
        };
        assert!(!chmod.settled(101 + SETTLE_SECS));
    }
}

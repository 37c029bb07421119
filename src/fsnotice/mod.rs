//! Filesystem notices: the one inotify layer of the crate. Every reader
//! that learns from the kernel what changed takes its notices here:
//!
//! - [`state`]: `state/` and every inbox directory, each notice turned
//!   into the task it concerns (the watcher daemon, the kept fleet reader
//!   and `fm top`'s refresh).
//! - [`dirs`]: the directories holding the files kept answers came from,
//!   per name and frame (the live view's git answers).
//!
//! Both sit on [`Inotify`]: one non-blocking, close-on-exec instance, its
//! watches and one drain of its queue. Nothing here follows a symlink at a
//! watched path's end; a queue overflow is reported as lost notices and
//! the callers then read everything.

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;

pub(crate) mod dirs;
pub(crate) mod state;

/// The longest a look is trusted on the events' word (seconds): past it,
/// the file is looked at by its stat again.
pub(crate) const RECHECK_SECS: u64 = 30;

/// How many watches one kind of kept reader's watching may take: a
/// quarter of the system's per-user inotify limit (the watcher daemon and
/// other programs need the rest), at most 4,096.
pub(crate) fn watch_budget() -> usize {
    static BUDGET: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BUDGET.get_or_init(|| {
        crate::fsx::read_optional(Path::new("/proc/sys/fs/inotify/max_user_watches"))
            .ok()
            .flatten()
            .and_then(|b| String::from_utf8_lossy(&b).trim().parse::<usize>().ok())
            .map_or(1024, |limit| limit / 4)
            .min(4096)
    })
}

/// One inotify instance and the buffer its queue is read into.
pub(crate) struct Inotify {
    fd: OwnedFd,
    buf: Vec<MaybeUninit<u8>>,
}

impl Inotify {
    /// A new instance (non-blocking, closed on exec).
    pub(crate) fn new() -> std::io::Result<Inotify> {
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)?;
        Ok(Inotify {
            fd,
            buf: vec![MaybeUninit::uninit(); 64 * 1024],
        })
    }

    /// Watches `dir` for `mask`; the watch descriptor.
    pub(crate) fn add_watch(&self, dir: &Path, mask: WatchFlags) -> std::io::Result<i32> {
        Ok(inotify::add_watch(&self.fd, dir, mask)?)
    }

    /// The descriptor to poll for readability.
    pub(crate) fn fd(&self) -> impl AsFd + '_ {
        self.fd.as_fd()
    }

    /// Reads every notice queued now (without blocking), handing each to
    /// `each` with its watch descriptor and name; `false` when some were
    /// lost (the queue overflowed, or could not be read).
    pub(crate) fn drain(
        &mut self,
        mut each: impl FnMut(ReadFlags, i32, Option<&std::ffi::CStr>),
    ) -> bool {
        let mut complete = true;
        let mut reader = inotify::Reader::new(&self.fd, &mut self.buf);
        loop {
            let ev = match reader.next() {
                Ok(ev) => ev,
                Err(Errno::AGAIN | Errno::INTR) => break,
                Err(_) => {
                    complete = false;
                    break;
                }
            };
            let flags = ev.events();
            if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                complete = false;
                continue;
            }
            each(flags, ev.wd(), ev.file_name());
        }
        complete
    }
}

#[cfg(test)]
mod tests {
    /// The budget is a quarter of the system's limit, at most 4,096.
    #[test]
    fn the_watch_budget_is_a_share_of_the_systems_limit() {
        let limit: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(super::watch_budget(), (limit / 4).min(4096));
    }
}

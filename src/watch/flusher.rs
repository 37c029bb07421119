//! The daemon's flushes off its loop: a pass that rang (or replaced a
//! ring state) asks for one `syncfs` of `state/`, hands over the old ring
//! states its replaces left over, and goes on; a thread of its own runs
//! the flush and then removes those, folding the requests that came while
//! it ran into one more.
//!
//! A `syncfs` waits for everything written on the filesystem, its own
//! writes and anyone else's (milliseconds, or more on a busy disk), and
//! removing a file that was written costs a few tenths of a millisecond.
//! Done in the loop, a record that comes due meanwhile waits for them
//! before it is rung; here it does not. What the pass wrote (ring states,
//! the events log) is flushed as soon as the thread gets to it, and what
//! is asked for is always done, also when the flusher is dropped (the
//! daemon ending).

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use crate::fsx::{self, Leftover};

#[derive(Default)]
struct Shared {
    /// A flush is asked for and not yet begun.
    wanted: bool,
    /// Files to remove after that flush.
    leftovers: Vec<Leftover>,
    /// The flusher is being dropped: run what is asked, then end.
    closing: bool,
    /// The last flush's error, until a request collects it.
    failed: Option<String>,
    /// Flushes run.
    runs: u64,
}

/// A thread flushing the filesystem of one directory on request.
pub(crate) struct Flusher {
    shared: Arc<(Mutex<Shared>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Flusher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Flusher").finish_non_exhaustive()
    }
}

impl Flusher {
    /// Starts the thread for `dir`'s filesystem. `None` where no thread
    /// can be started (the caller then flushes itself).
    pub(crate) fn start(dir: PathBuf) -> Option<Flusher> {
        let shared: Arc<(Mutex<Shared>, Condvar)> = Arc::default();
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("fm-watch-flush".into())
            .spawn(move || run(&dir, &theirs))
            .ok()?;
        Some(Flusher {
            shared,
            thread: Some(thread),
        })
    }

    /// Asks for a flush, then the removal of `leftovers`; returns at
    /// once. The error of an earlier flush, if one failed since the last
    /// request, is handed back to report.
    pub(crate) fn request(&self, leftovers: Vec<Leftover>) -> Option<String> {
        let (lock, cv) = &*self.shared;
        let mut s = lock.lock().unwrap_or_else(PoisonError::into_inner);
        s.wanted = true;
        s.leftovers.extend(leftovers);
        cv.notify_one();
        s.failed.take()
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        {
            let (lock, cv) = &*self.shared;
            let mut s = lock.lock().unwrap_or_else(PoisonError::into_inner);
            s.closing = true;
            cv.notify_one();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let s = self.shared.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(e) = &s.failed {
            crate::output::err_line(&format!("{}: warning: {e}", super::TOOL));
        }
    }
}

fn run(dir: &std::path::Path, shared: &(Mutex<Shared>, Condvar)) {
    let (lock, cv) = shared;
    loop {
        let leftovers = {
            let mut s = lock.lock().unwrap_or_else(PoisonError::into_inner);
            while !s.wanted && !s.closing {
                s = cv.wait(s).unwrap_or_else(PoisonError::into_inner);
            }
            if !s.wanted {
                return;
            }
            s.wanted = false;
            std::mem::take(&mut s.leftovers)
        };
        let res = fsx::sync_filesystem(dir);
        {
            let mut s = lock.lock().unwrap_or_else(PoisonError::into_inner);
            s.runs += 1;
            if let Err(e) = res {
                s.failed = Some(e.to_string());
            }
        }
        // Removed by dropping, once what replaced them is on disk.
        drop(leftovers);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(shared: &(Mutex<Shared>, Condvar)) -> u64 {
        shared.0.lock().unwrap().runs
    }

    #[test]
    fn requests_are_flushed_and_folded_and_the_last_runs_before_the_end() {
        let d = tempfile::tempdir().unwrap();
        let f = Flusher::start(d.path().to_path_buf()).unwrap();
        let shared = Arc::clone(&f.shared);
        for _ in 0..50 {
            assert_eq!(f.request(Vec::new()), None);
        }
        drop(f);
        let s = shared.0.lock().unwrap();
        assert!(!s.wanted, "a flush asked for was left unrun");
        assert!(
            (1..=50).contains(&s.runs),
            "{} flushes for 50 requests",
            s.runs
        );
        assert!(s.failed.is_none());
    }

    #[test]
    fn a_failed_flush_is_handed_back_by_the_next_request() {
        let d = tempfile::tempdir().unwrap();
        let gone = d.path().join("gone");
        let f = Flusher::start(gone).unwrap();
        assert_eq!(f.request(Vec::new()), None);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while runs(&f.shared) == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the flush asked for never ran"
            );
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let err = f.request(Vec::new()).expect("the failure is reported");
        assert!(err.contains("gone"), "{err}");
        // The request that collected it asked for a flush too, run before
        // the drop returns.
        let shared = Arc::clone(&f.shared);
        drop(f);
        assert!(shared.0.lock().unwrap().runs >= 2);
    }
}

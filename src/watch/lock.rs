//! The watcher's singleton lock (`state/.watch.lock`): taken once, its
//! holder's pid recorded, checked for being still the file it locked.

use std::time::{Duration, Instant};

use crate::config::Config;
use crate::error::Result;
use crate::fsx::{self, LockGuard};
use crate::home::Home;
use crate::wakes::{self, Wake};

/// The held singleton lock.
#[derive(Debug)]
pub struct Lock {
    guard: LockGuard,
    /// A pid a previous holder left behind (it did not exit cleanly).
    pub previous: Option<u32>,
    /// The lock file's device and inode when it was taken: `state/`
    /// replaced under the watcher (moved away and made again) leaves the
    /// lock on the old file, and the path names another.
    ident: Option<(u64, u64)>,
}

impl Lock {
    /// Records this process's pid in the lock file. Called after the
    /// `watcher-recovered` wake, so a crash in between repeats that wake
    /// (the next watcher still finds the old pid) instead of losing it.
    pub fn record_pid(&mut self) -> Result<()> {
        self.guard
            .write_contents(format!("{}\n", std::process::id()).as_bytes())
    }

    /// Clears the recorded pid; dropping then releases the lock.
    pub fn release(mut self) {
        let _ = self.guard.write_contents(b"");
    }
}

pub(super) fn parse_pid(bytes: &[u8]) -> Option<u32> {
    String::from_utf8_lossy(bytes).trim().parse().ok()
}

/// The pid recorded in the lock file, if any.
pub fn recorded_pid(home: &Home) -> Option<u32> {
    fsx::read_optional(&home.watch_lock())
        .ok()
        .flatten()
        .and_then(|b| parse_pid(&b))
}

/// Takes the singleton lock if it is free right now. The caller raises
/// [`recovered_wake`] and then calls [`Lock::record_pid`].
pub fn try_acquire(home: &Home) -> Result<Option<Lock>> {
    fsx::ensure_dir(&home.state_dir())?;
    Ok(fsx::try_lock(&home.watch_lock())?.map(|guard| {
        let previous = recorded_pid(home).filter(|&p| p != std::process::id());
        let ident = lock_ident(home);
        Lock {
            guard,
            previous,
            ident,
        }
    }))
}

/// The device and inode the lock file's path names now.
pub(super) fn lock_ident(home: &Home) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    fsx::stat(&home.watch_lock())
        .ok()
        .flatten()
        .map(|m| (m.dev(), m.ino()))
}

/// Whether the held lock is still the home's.
pub(super) enum LockCheck {
    /// The lock file's path still names the file this watcher holds.
    Held,
    /// `state/` was replaced and this watcher took the new lock.
    Retaken,
    /// `state/` is gone (moved away, not made again yet).
    Away,
    /// `state/` was replaced and another watcher holds its lock.
    Lost(Option<u32>),
}

/// Compares the held lock file with the one the path names now: one
/// watcher per home, always. The lock of a replaced `state/` is taken
/// again (its pid recorded) when it is free; held by another watcher,
/// this one must stop. A missing `state/` is not made again here.
pub(super) fn check_lock(home: &Home, lock: &mut Lock) -> LockCheck {
    let now = lock_ident(home);
    if now.is_some() && now == lock.ident {
        return LockCheck::Held;
    }
    let state = home.state_dir();
    if !fsx::stat(&state).is_ok_and(|m| m.is_some_and(|m| m.is_dir())) {
        return LockCheck::Away;
    }
    match try_acquire(home) {
        Ok(Some(mut new)) => {
            if let Err(e) = new.record_pid() {
                crate::output::err_line(&format!("fm-watch: warning: {e}"));
            }
            std::mem::replace(lock, new).release();
            LockCheck::Retaken
        }
        Ok(None) => LockCheck::Lost(recorded_pid(home)),
        // Cannot be told now: looked at again on the next wake.
        Err(_) => LockCheck::Away,
    }
}

/// Takes the singleton lock, or returns the holder's pid (`Err`). The
/// caller raises [`recovered_wake`] and then calls [`Lock::record_pid`].
pub fn acquire(home: &Home) -> Result<std::result::Result<Lock, Option<u32>>> {
    if let Some(lock) = try_acquire(home)? {
        Ok(Ok(lock))
    } else {
        // The holder may not have written its pid yet.
        let deadline = Instant::now() + Duration::from_millis(500);
        let mut pid = recorded_pid(home);
        while pid.is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            pid = recorded_pid(home);
        }
        Ok(Err(pid))
    }
}

/// Raises the `watcher-recovered` wake when the lock had a pid left in it.
pub fn recovered_wake(home: &Home, cfg: &Config, lock: &Lock) -> Option<Wake> {
    let pid = lock.previous?;
    let text = format!("previous watcher (pid {pid}) stopped without releasing the lock");
    let now = crate::clock::now();
    match wakes::append(home, "-", "watcher-recovered", &text, now) {
        Ok(wake) => {
            super::hook::spawn(&cfg.watch.on_wake, &wake);
            Some(wake)
        }
        Err(e) => {
            crate::output::err_line(&format!("fm-watch: warning: cannot append wake: {e}"));
            None
        }
    }
}

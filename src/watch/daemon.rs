//! The long-running watcher (SPEC §6.1): a singleton holding
//! `state/.watch.lock` for its lifetime, running a pass whenever something
//! under `state/` or an inbox changes (filesystem events, debounced), when
//! a ladder comes due, and at least every `poll_secs`.
//!
//! Guarantees: at most one watcher acts per home (a second one reports the
//! holder's pid and leaves); the lock file records the holder's pid and a
//! clean exit clears it, so a watcher that finds a pid left behind raises
//! one `watcher-recovered` wake; SIGTERM/SIGINT end the loop between
//! passes; without filesystem events (inotify limit, NFS) it warns once
//! and keeps working by polling. `--until-wake` started while another
//! watcher holds the lock follows that watcher's wakes ([`follow`]) and
//! retries the lock every second, so when the holder dies it takes over
//! as the watcher instead of waiting for wakes nobody will write.
//! Dot-files (temp files, ladder files, the heartbeat) and the logs the
//! watcher itself appends never trigger a pass.

use std::collections::HashSet;

use notify::Watcher;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::pass::{self, Report, State};
use crate::config::Config;
use crate::error::Result;
use crate::fsx::{self, LockGuard};
use crate::home::Home;
use crate::tmux::pane::{Pane, Tmux};
use crate::wakes::{self, Wake};

/// The signal that asked us to stop (0 = none yet).
static STOP: AtomicUsize = AtomicUsize::new(0);

/// Routes SIGTERM and SIGINT to a flag the loop checks (the signal's
/// number is stored), instead of ending the process mid-pass.
pub fn install_signals() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    for sig in [SIGTERM, SIGINT] {
        if let Err(e) = signal_hook::flag::register_usize(sig, &STOP, sig.unsigned_abs() as usize) {
            crate::output::err_line(&format!(
                "fm-watch: warning: cannot catch signal {sig}: {e}"
            ));
        }
    }
}

/// The signal received, if any.
pub fn stop_signal() -> Option<i32> {
    match STOP.load(Ordering::SeqCst) {
        0 => None,
        s => i32::try_from(s).ok(),
    }
}

/// The held singleton lock.
#[derive(Debug)]
pub struct Lock {
    guard: LockGuard,
    /// A pid a previous holder left behind (it did not exit cleanly).
    pub previous: Option<u32>,
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

fn parse_pid(bytes: &[u8]) -> Option<u32> {
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
        Lock { guard, previous }
    }))
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

/// The real tmux for a socket.
pub fn tmux_for(socket: &str) -> Box<dyn Pane> {
    Box::new(Tmux::new(socket))
}

/// Whether a changed path should trigger a pass.
pub fn relevant(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    !(name.starts_with('.') || name == "wakes.log" || name == "events.jsonl")
}

/// How the loop ends.
#[derive(Debug)]
pub enum End {
    Signal(i32),
    /// `--until-wake`: every wake past the starting offset at the moment
    /// the first one was noticed (empty when a host's wakes ended it:
    /// `Options::hosts` holds those).
    Wakes(Vec<Wake>),
}

/// Options of the loop.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Return once the wakes log has wakes past this byte offset, with all
    /// of them.
    pub until_wake: Option<u64>,
    /// Do not use filesystem events (poll only).
    pub no_notify: bool,
    /// `--until-wake`: the hosts' wakes, read in the background; one ends the loop.
    pub hosts: Option<std::sync::Arc<crate::remote::wakes::Feed>>,
}

fn wall_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Runs passes until a signal (or, with `until_wake`, a new wake).
/// `show` is called with each pass's report.
pub fn run(
    home: &Home,
    cfg: &Config,
    opts: &Options,
    show: &mut dyn FnMut(&Report),
) -> Result<End> {
    let (tx, rx) = mpsc::channel::<()>();
    if let Some(f) = &opts.hosts {
        f.ping(tx.clone());
    }
    let mut watcher = if opts.no_notify {
        crate::output::err_line(&format!(
            "fm-watch: warning: filesystem events disabled; polling every {}s",
            cfg.watch.poll_secs.max(1)
        ));
        None
    } else {
        start_notify(home, tx)
    };
    let mut watched: HashSet<PathBuf> = HashSet::new();
    let mut state = State::load(home)?;
    let poll = Duration::from_secs(cfg.watch.poll_secs.max(1));
    loop {
        if let Some(sig) = stop_signal() {
            return Ok(End::Signal(sig));
        }
        let now = crate::clock::now();
        let report = match pass::run(home, cfg, &tmux_for, &std::thread::sleep, &mut state, now) {
            Ok(r) => r,
            Err(e) => {
                crate::output::err_line(&format!("fm-watch: warning: pass failed: {e}"));
                Report::default()
            }
        };
        show(&report);
        if let Some(w) = watcher.as_mut() {
            watched.retain(|p| fsx::is_dir(p).unwrap_or(false));
            for dir in &report.inboxes {
                if !watched.contains(dir)
                    && w.watch(dir, notify::RecursiveMode::NonRecursive).is_ok()
                {
                    watched.insert(dir.clone());
                }
            }
        }
        if let Some(start) = opts.until_wake {
            let (found, _) = wakes::read_since(home, start)?;
            if !found.is_empty() || opts.hosts.as_ref().is_some_and(|f| f.any()) {
                return Ok(End::Wakes(found));
            }
        }
        let mut wait = poll;
        if let Some(due) = report.next_due {
            let secs = (due as f64 - wall_secs()).max(0.0) + 0.005;
            wait = wait.min(Duration::from_secs_f64(secs));
        }
        let deadline = Instant::now() + wait;
        loop {
            if stop_signal().is_some() {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let slice = left.min(Duration::from_millis(250));
            match rx.recv_timeout(slice) {
                Ok(()) => {
                    // Debounce: let a burst of changes settle into one pass.
                    std::thread::sleep(Duration::from_millis(30));
                    while rx.try_recv().is_ok() {}
                    break;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => std::thread::sleep(slice),
            }
        }
    }
}

fn start_notify(home: &Home, tx: mpsc::Sender<()>) -> Option<notify::RecommendedWatcher> {
    let handler = move |res: notify::Result<notify::Event>| match res {
        // Reads (our own included) are not changes.
        Ok(ev) if ev.kind.is_access() => {}
        Ok(ev) if ev.paths.iter().any(|p| relevant(p)) => {
            let _ = tx.send(());
        }
        Ok(_) => {}
        // Overflow or similar: a pass sorts it out.
        Err(_) => {
            let _ = tx.send(());
        }
    };
    let started = notify::recommended_watcher(handler).and_then(|mut w| {
        w.watch(&home.state_dir(), notify::RecursiveMode::NonRecursive)?;
        Ok(w)
    });
    match started {
        Ok(w) => Some(w),
        Err(e) => {
            crate::output::err_line(&format!(
                "fm-watch: warning: filesystem events unavailable ({e}); polling instead"
            ));
            None
        }
    }
}

/// How often a follower tries to take the lock over.
const TAKEOVER_EVERY: Duration = Duration::from_secs(1);

/// A follower's pause after noticing a wake, so the rest of the running
/// watcher's pass (appended one wake at a time) lands in the same batch.
const BATCH_SETTLE: Duration = Duration::from_millis(100);

/// How [`follow`] ends.
#[derive(Debug)]
pub enum Followed {
    /// The running watcher logged wakes (or a signal came).
    End(End),
    /// The running watcher went away and this process now holds the lock:
    /// the caller carries on as the watcher.
    Lock(Lock),
}

/// `--until-wake` while another watcher holds the lock: waits, without
/// acting, for wakes past `start`, and tries to take the lock over every
/// [`TAKEOVER_EVERY`], so a watcher that dies (even by SIGKILL) does not
/// leave the home unwatched.
pub fn follow(
    home: &Home,
    start: u64,
    hosts: Option<&crate::remote::wakes::Feed>,
) -> Result<Followed> {
    let mut next_try = Instant::now() + TAKEOVER_EVERY;
    loop {
        if let Some(sig) = stop_signal() {
            return Ok(Followed::End(End::Signal(sig)));
        }
        if !wakes::read_since(home, start)?.0.is_empty()
            || hosts.is_some_and(crate::remote::wakes::Feed::any)
        {
            std::thread::sleep(BATCH_SETTLE);
            let (found, _) = wakes::read_since(home, start)?;
            return Ok(Followed::End(End::Wakes(found)));
        }
        if Instant::now() >= next_try {
            if let Some(lock) = try_acquire(home)? {
                return Ok(Followed::Lock(lock));
            }
            next_try = Instant::now() + TAKEOVER_EVERY;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_writes_and_temp_files_do_not_trigger() {
        for p in [
            "/h/state/.ring-state",
            "/h/state/.x.tmp.1.2",
            "/h/state/wakes.log",
            "/h/state/events.jsonl",
            "/h/state/.watch.beat",
        ] {
            assert!(!relevant(Path::new(p)), "{p}");
        }
        for p in [
            "/h/state/t.inbox/001.msg",
            "/h/state/t.status",
            "/h/state/t.busy",
        ] {
            assert!(relevant(Path::new(p)), "{p}");
        }
    }
}

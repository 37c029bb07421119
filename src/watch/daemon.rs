//! The long-running watcher (docs/spec/watch.md#modes): a singleton holding
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

use std::collections::{BTreeSet, HashMap};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::pass::{self, Report, State};
use crate::config::Config;
use crate::error::Result;
use crate::fsnotice::state::StateNotices;
use crate::fsx::{self};
use crate::home::Home;
use crate::task_id::TaskId;
use crate::tmux::pane::{Pane, Tmux};
use crate::wakes::{self, Wake};

pub use super::lock::{Lock, acquire, recorded_pid, recovered_wake, try_acquire};
use super::lock::{LockCheck, check_lock};

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

/// The real tmux for a socket.
pub fn tmux_for(socket: &str) -> Box<dyn Pane> {
    Box::new(Tmux::new(socket))
}

/// How the loop ends.
#[derive(Debug)]
pub enum End {
    Signal(i32),
    /// `state/` was replaced under this watcher and another one holds the
    /// new lock (its pid, when recorded): this one stops.
    Superseded(Option<u32>),
    /// `--until-wake`: every wake past the starting offset at the moment
    /// the first one was noticed (empty when a host's wakes ended it:
    /// `Options::hosts` holds those).
    Wakes(Vec<Wake>),
    /// [`Options::deadline`] passed first.
    Deadline,
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
    /// End the loop at this instant (`fm wake --wait --timeout`).
    pub deadline: Option<Instant>,
}

fn wall_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A pipe SIGTERM and SIGINT write a byte to, so a wait on file events
/// ends the moment a signal comes (the flag of [`install_signals`] still
/// says which one).
struct SignalPipe {
    read: std::os::unix::net::UnixStream,
    write: std::os::unix::net::UnixStream,
    ids: Vec<signal_hook::SigId>,
}

impl SignalPipe {
    fn new() -> Option<SignalPipe> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let (read, write) = std::os::unix::net::UnixStream::pair().ok()?;
        read.set_nonblocking(true).ok()?;
        write.set_nonblocking(true).ok()?;
        let mut ids = Vec::new();
        for sig in [SIGTERM, SIGINT] {
            let w = write.try_clone().ok()?;
            ids.push(signal_hook::low_level::pipe::register(sig, w).ok()?);
        }
        Some(SignalPipe { read, write, ids })
    }

    /// Ends the current wait from another thread (a host's new wake).
    fn waker(&self) -> Option<Box<dyn Fn() + Send>> {
        let w = self.write.try_clone().ok()?;
        Some(Box::new(move || {
            use std::io::Write;
            let _ = (&w).write(&[1]);
        }))
    }

    fn drain(&self) {
        use std::io::Read;
        let mut buf = [0u8; 64];
        while matches!((&self.read).read(&mut buf), Ok(n) if n > 0) {}
    }
}

impl Drop for SignalPipe {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// An on-time wait longer than this is split in two (see [`wait_for`]);
/// a shorter one's poll slack is within the timer slack.
const ON_TIME_SPLIT: Duration = Duration::from_millis(10);

/// What ended a wait.
enum Woken {
    Notices,
    Time,
}

/// Waits up to `wait` for a file event or a signal; `on_time` when the
/// wait must not end late (a ladder's due second).
fn wait_for(
    notices: Option<&StateNotices>,
    signals: Option<&SignalPipe>,
    wait: Duration,
    on_time: bool,
) -> Woken {
    use rustix::event::{PollFd, PollFlags, Timespec};
    // Without the signal pipe a signal is noticed within a second.
    let wait = if signals.is_some() {
        wait
    } else {
        wait.min(Duration::from_secs(1))
    };
    // A poll may end late by its own slack, 0.1 % of the timeout (0.5 %
    // when niced; at most 100 ms): a whole millisecond on a second's wait
    // for a ladder to come due. Waiting that much less ends it by the
    // deadline; the loop waits the rest, a few milliseconds whose slack is
    // the timer slack (50 µs). Other waits (the heartbeat, the rescan) end
    // when they end, in one wake.
    let wait = if on_time && wait > ON_TIME_SPLIT {
        wait.saturating_sub(wait / 200)
    } else {
        wait
    };
    let timeout = Timespec {
        tv_sec: i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(wait.subsec_nanos()),
    };
    let efd = notices.map(StateNotices::fd);
    let sfd = signals.map(|s| s.read.as_fd());
    let mut fds = Vec::with_capacity(2);
    if let Some(fd) = &efd {
        fds.push(PollFd::new(fd, PollFlags::IN));
    }
    if let Some(fd) = &sfd {
        fds.push(PollFd::new(fd, PollFlags::IN));
    }
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        // A signal: the loop looks again.
        Ok(0) | Err(rustix::io::Errno::INTR) => Woken::Time,
        // An odd error: waited out by sleeping, so the loop does not spin.
        Err(_) => {
            std::thread::sleep(wait.min(Duration::from_secs(1)));
            Woken::Time
        }
        Ok(_) => {
            let evs = efd.is_some() && fds[0].revents().contains(PollFlags::IN);
            if let Some(s) = signals {
                s.drain();
            }
            if evs { Woken::Notices } else { Woken::Time }
        }
    }
}

/// Runs passes until a signal (or, with `until_wake`, a new wake).
/// `show` is called with each pass's report.
///
/// With filesystem events, a pass covers only the tasks an event named
/// or whose ladder came due (each task's own due second, so the wait ends
/// on time); every task is passed over at the start, after an event queue
/// overflow or a name that is no task's, and every `rescan_secs` as a
/// safety net, which also forgets what the passes remember of each inbox.
/// The heartbeat is touched every `poll_secs` whether or not a pass ran.
/// Without events (disabled, unavailable, or an inbox beyond the inotify
/// limit) every task is passed over at least every `poll_secs`.
pub fn run(
    home: &Home,
    cfg: &Config,
    opts: &Options,
    lock: &mut Lock,
    show: &mut dyn FnMut(&Report),
) -> Result<End> {
    let poll = Duration::from_secs(cfg.watch.poll_secs.max(1));
    let mut notices = if opts.no_notify {
        crate::output::err_line(&format!(
            "fm-watch: warning: filesystem events disabled; polling every {}s",
            poll.as_secs()
        ));
        None
    } else {
        match StateNotices::start(home) {
            Ok(e) => Some(e),
            Err(e) => {
                crate::output::err_line(&format!(
                    "fm-watch: warning: filesystem events unavailable ({e}); polling instead"
                ));
                None
            }
        }
    };
    let signals = SignalPipe::new();
    if let (Some(f), Some(wake)) = (&opts.hosts, signals.as_ref().and_then(SignalPipe::waker)) {
        f.ping(wake);
    }
    let mut state = State::load(home)?;
    state.flush_in_background(home);
    let mut dues: HashMap<TaskId, u64> = HashMap::new();
    let mut todo: BTreeSet<TaskId> = BTreeSet::new();
    let mut all = true;
    let mut first = true;
    let mut next_rescan = Instant::now();
    let mut next_beat = Instant::now() + poll;
    let mut next_sweep = Instant::now() + poll;
    // The tasks whose meta records a local pane, as the passes found them.
    let mut paned: BTreeSet<TaskId> = BTreeSet::new();
    let mut warned_limit = false;
    loop {
        if let Some(sig) = stop_signal() {
            return Ok(End::Signal(sig));
        }
        if opts.deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(End::Deadline);
        }
        // `state/` replaced under this watcher: its lock and its events
        // are the old directory's.
        let away = match check_lock(home, lock) {
            LockCheck::Held => false,
            LockCheck::Away => true,
            LockCheck::Lost(pid) => return Ok(End::Superseded(pid)),
            LockCheck::Retaken => {
                if !opts.no_notify {
                    notices = StateNotices::start(home).ok();
                }
                all = true;
                false
            }
        };
        let now = crate::clock::now();
        let degraded = notices.as_ref().is_none_or(|e| e.incomplete);
        if degraded && notices.is_some() && !warned_limit {
            warned_limit = true;
            crate::output::err_line(&format!(
                "fm-watch: warning: some inboxes cannot be watched (inotify limit); \
                 passing over every task every {}s",
                poll.as_secs()
            ));
        }
        if Instant::now() >= next_rescan {
            all = true;
        }
        let sweep = Instant::now() >= next_sweep;
        todo.extend(
            dues.iter()
                .filter(|&(_, &d)| d <= now)
                .map(|(id, _)| id.clone()),
        );
        if away {
            // Nothing to pass over until `state/` is back (the dues come
            // back into `todo` then).
            todo.clear();
        } else if all || sweep || !todo.is_empty() {
            // Every task's pane is looked at every `poll_secs` (a dead
            // agent, a dialog with no mail waiting): the first pass reads
            // every meta and learns which tasks record a local pane; a
            // pass over a few tasks (an event, a due ladder, the sweep)
            // reads theirs; a later rescan reads only the metas its
            // ladders need, as before, and the sweep covers the panes.
            state.sweep = !all || first;
            if all || sweep {
                next_sweep = Instant::now() + poll;
            }
            // A sweep between rescans passes over the tasks known to record
            // a local pane, and the due ones: a pane-less fleet costs
            // nothing between rescans.
            let swept_only = sweep && !all;
            if swept_only {
                todo.extend(paned.iter().cloned());
            }
            let ran = if all {
                // The safety net reads every inbox afresh.
                state.forget_inboxes();
                pass::run(home, cfg, &tmux_for, &std::thread::sleep, &mut state, now)
            } else if todo.is_empty() {
                Ok(Report::default())
            } else {
                let ids: Vec<TaskId> = todo.iter().cloned().collect();
                pass::run_tasks(
                    home,
                    cfg,
                    &tmux_for,
                    &std::thread::sleep,
                    &mut state,
                    now,
                    &ids,
                )
            };
            let passed = ran.is_ok();
            let report = ran.unwrap_or_else(|e| {
                crate::output::err_line(&format!("fm-watch: warning: pass failed: {e}"));
                Report::default()
            });
            if all {
                // Every task was passed over: each says its own due.
                dues.clear();
                if passed && first {
                    paned = report.paned.iter().cloned().collect();
                } else if passed {
                    // Tasks no longer in the home leave the sweep.
                    let here: BTreeSet<&TaskId> = report.dues.iter().map(|(id, _)| id).collect();
                    paned.retain(|id| here.contains(id));
                }
                first = false;
            } else {
                for id in &todo {
                    dues.remove(id);
                    if passed {
                        paned.remove(id);
                    }
                }
            }
            // Every meta read said whether its task records a local pane.
            paned.extend(report.paned.iter().cloned());
            if all {
                let every = if degraded {
                    poll
                } else {
                    Duration::from_secs(cfg.watch.rescan_secs.max(cfg.watch.poll_secs).max(1))
                };
                next_rescan = Instant::now() + every;
            }
            for (id, due) in &report.dues {
                match due {
                    Some(d) => dues.insert(id.clone(), *d),
                    None => dues.remove(id),
                };
            }
            all = false;
            todo.clear();
            next_beat = Instant::now() + poll;
            show(&report);
            if let Some(e) = notices.as_mut() {
                // What landed in a new inbox before its watch: once more.
                todo.extend(e.watch_inboxes(home, &report.inboxes));
            }
        }
        if let Some(start) = opts.until_wake {
            let (found, _) = wakes::read_since(home, start)?;
            if !found.is_empty() || opts.hosts.as_ref().is_some_and(|f| f.any()) {
                return Ok(End::Wakes(found));
            }
        }
        if !todo.is_empty() {
            continue;
        }
        let mut until = if away {
            // Looked for again every second, so a `state/` made again is
            // taken back before another watcher starts on it.
            Instant::now() + AWAY_RECHECK
        } else {
            next_beat.min(next_rescan).min(next_sweep)
        };
        if let Some(d) = opts.deadline {
            until = until.min(d);
        }
        let mut on_time = false;
        if let Some(&due) = dues.values().min().filter(|_| !away) {
            // Just past the second: the pass's clock reads it as due.
            let secs = (due as f64 - wall_secs()).max(0.0) + 0.000_1;
            let at = Instant::now() + Duration::from_secs_f64(secs);
            on_time = at < until;
            until = until.min(at);
        }
        let wait = until.saturating_duration_since(Instant::now());
        if let Woken::Notices = wait_for(notices.as_ref(), signals.as_ref(), wait, on_time)
            && let Some(e) = notices.as_mut()
        {
            let changed = e.drain();
            if changed.lost {
                crate::output::err_line(
                    "fm-watch: warning: state/ can no longer be watched; polling instead",
                );
                notices = None;
                all = true;
            }
            all |= changed.all;
            let soon = crate::clock::now() + CREATED_WAIT_SECS;
            for id in changed.later {
                state.forget_inbox(&id);
                let due = dues.entry(id).or_insert(soon);
                *due = (*due).min(soon);
            }
            for id in changed.tasks {
                // A changed inbox is read afresh.
                state.forget_inbox(&id);
                todo.insert(id);
            }
        }
        if Instant::now() >= next_beat && !away {
            if let Err(e) = fsx::touch(&home.watch_beat()) {
                crate::output::err_line(&format!("fm-watch: warning: {e}"));
            }
            next_beat = Instant::now() + poll;
        }
    }
}

/// How long after a file is created, with no close-write since, the
/// daemon passes over its task anyway (whole seconds, so between one and
/// two): a writer's close-write normally comes well before.
const CREATED_WAIT_SECS: u64 = 2;

/// How often a watcher whose `state/` went away looks for it again.
const AWAY_RECHECK: Duration = Duration::from_secs(1);

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
    deadline: Option<Instant>,
) -> Result<Followed> {
    let mut next_try = Instant::now() + TAKEOVER_EVERY;
    loop {
        if let Some(sig) = stop_signal() {
            return Ok(Followed::End(End::Signal(sig)));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(Followed::End(End::Deadline));
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

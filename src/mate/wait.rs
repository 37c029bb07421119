//! `fm wake --wait` (docs/spec/mate.md#wait): blocks, printing nothing,
//! until a packet is due, then hands it over.
//!
//! While it waits it is the home's watcher when none runs (as
//! `fm-watch --until-wake` is), else it follows the running one's wakes;
//! either way it notices a new wake through the same filesystem events,
//! and a configured host's through the hosts' feed. One waiter per home
//! counts: each writes itself into `state/.mate.waiter`, and an older one
//! that finds another there ends without a packet (a harness that starts
//! a waiter at every turn's end leaves no two of them answering one wake).

use std::time::{Duration, Instant};

use super::{Ask, Packet};
use crate::config::Config;
use crate::error::Result;
use crate::fsx;
use crate::home::Home;
use crate::watch::daemon::{self, End, Followed, Options};

/// How a wait ended.
#[derive(Debug)]
pub enum Waited {
    Packet(Box<Packet>),
    /// The timeout passed with nothing due.
    Timeout,
    /// A newer waiter took over.
    Superseded,
    /// SIGINT or SIGTERM (the signal's number).
    Signal(i32),
}

/// This waiter's line in `state/.mate.waiter`.
fn me() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{}\t{nanos}", std::process::id())
}

/// Whether `mine` is still the home's waiter.
pub(super) fn is_current(home: &Home, mine: &str) -> bool {
    fsx::read_optional(&home.mate_waiter())
        .ok()
        .flatten()
        .is_some_and(|b| String::from_utf8_lossy(&b).trim_end() == mine)
}

/// Waits until a packet is due (or `timeout` passes, a newer waiter
/// starts, or a signal comes). `transcript`, the lead's conversation as
/// its harness keeps it, is where a packet shown before to the same
/// `session` must appear to be shown again ([`Ask::Due`]). The caller installs the signal handlers
/// (`daemon::install_signals`).
pub fn wait(
    home: &Home,
    cfg: &Config,
    timeout: Option<Duration>,
    transcript: Option<&std::path::Path>,
    session: Option<&str>,
) -> Result<Waited> {
    let deadline = timeout.map(|t| Instant::now() + t);
    fsx::ensure_dir(&home.state_dir())?;
    let mine = me();
    fsx::atomic_write(&home.mate_waiter(), format!("{mine}\n").as_bytes())?;
    let since = super::newest(home)?;
    loop {
        let start = crate::wakes::end_offset(home)?;
        let ask = Ask::Due {
            since,
            waiter: Some(mine.clone()),
            transcript: transcript.map(std::path::Path::to_path_buf),
            session: session.map(str::to_string),
        };
        if let Some(p) = super::take(home, cfg, ask, crate::clock::now())? {
            return Ok(Waited::Packet(Box::new(p)));
        }
        if !is_current(home, &mine) {
            return Ok(Waited::Superseded);
        }
        match block(home, cfg, start, deadline)? {
            End::Wakes(_) | End::Superseded(_) => {}
            End::Deadline => return Ok(Waited::Timeout),
            End::Signal(s) => return Ok(Waited::Signal(s)),
        }
    }
}

/// Blocks until a wake lands past `start` (locally or on a host), running
/// the watcher's passes meanwhile when no watcher runs.
fn block(home: &Home, cfg: &Config, start: u64, deadline: Option<Instant>) -> Result<End> {
    // A fresh feed each time, from where the lead's packets reach in each
    // host's log: a host's wake logged since, even before the feed's first
    // answer (or while the host was down), ends the wait.
    let covered = super::ledger::Ledger::load(home)?.covered();
    let hosts = crate::remote::wakes::Feed::start(
        home,
        cfg,
        crate::remote::wakes::From::At(covered.hosts),
        crate::remote::wakes::FEED_EVERY,
    )
    .map(std::sync::Arc::new);
    let mut lock = match daemon::acquire(home)? {
        Ok(lock) => lock,
        Err(_) => match daemon::follow(home, start, hosts.as_deref(), deadline)? {
            Followed::End(end) => return Ok(end),
            Followed::Lock(lock) => lock,
        },
    };
    let notifier = crate::notify::Notifier::start(home, cfg);
    let _ = daemon::recovered_wake(home, cfg, &lock);
    lock.record_pid()?;
    let opts = Options {
        until_wake: Some(start),
        no_notify: false,
        hosts,
        deadline,
    };
    let mut show = |r: &crate::watch::pass::Report| {
        if !r.wakes.is_empty() {
            notifier.poke();
        }
    };
    let end = daemon::run(home, cfg, &opts, &mut lock, &mut show);
    notifier.finish();
    lock.release();
    crate::watch::hook::wait_all();
    end
}

/// `Duration` of a `--timeout` in seconds (fractions allowed).
pub fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.clamp(0.0, 7.0 * 86_400.0))
}

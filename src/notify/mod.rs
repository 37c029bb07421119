//! Notifications (`[notify]`): the wakes the captain must act on reach
//! them through the channels they chose — a message and bell in their tmux
//! client, a desktop notification, an HTTP POST, a command.
//!
//! Each channel is a [`Lane`] on its own thread, reading `state/wakes.log`
//! from its own cursor (`state/.notify-<channel>.cursor`, `<offset> <seq>`)
//! and moving it only past wakes it delivered, or passed over because
//! their event is not wanted or they grew older than `max_age_secs` (a
//! skip that is logged). So:
//! - the watcher's pass never waits for a channel: it appends wakes, the
//!   lanes read them ([`Notifier::poke`] only shortens their wait);
//! - each wake is notified once per channel (a crash between a delivery
//!   and the cursor's write repeats that one notification, never more);
//! - a failed delivery is logged on stderr and retried with backoff, the
//!   wakes kept; wakes that wait (rate limit, backoff, a burst) go out
//!   together in one notification;
//! - a tmux notification that finds no client attached is not a failure:
//!   it is said once, and the lane looks for a client every
//!   [`CLIENT_POLL`], so the wakes reach a captain who attaches later
//!   within about a second, never after a backoff;
//! - a channel's first run starts at the log's end: turning notifications
//!   on does not replay the history.
//!
//! Only the watcher holding the singleton lock runs lanes, so one process
//! moves each cursor.

pub mod channel;
pub mod http;
pub mod note;
pub mod pacer;

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use channel::{CLIENT_POLL, Channel, Miss};
pub use note::{Note, event_of};
pub use pacer::Pacer;

use crate::config::Config;
use crate::fsx;
use crate::home::Home;
use crate::wakes;

/// Longest a lane sleeps without looking at the log (wakes appended by
/// other writers, `fm-board`, arrive without a poke).
const POLL: Duration = Duration::from_secs(2);

/// A channel's cursor: the byte offset after, and the sequence number of,
/// the last wake it is done with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cursor {
    pub offset: u64,
    pub seq: u64,
}

impl Cursor {
    pub fn load(home: &Home, channel: &str) -> Option<Cursor> {
        let bytes = fsx::read_optional(&home.notify_cursor(channel)).ok()??;
        let text = String::from_utf8_lossy(&bytes);
        let mut f = text.split_whitespace();
        Some(Cursor {
            offset: f.next()?.parse().ok()?,
            seq: f.next()?.parse().ok()?,
        })
    }

    fn save(self, home: &Home, channel: &str) {
        let text = format!("{} {}\n", self.offset, self.seq);
        if let Err(e) = fsx::atomic_write(&home.notify_cursor(channel), text.as_bytes()) {
            crate::output::warn(
                "fm-watch",
                &format!("notify {channel}: cannot save its cursor: {e}"),
            );
        }
    }
}

/// One channel's delivery state.
pub struct Lane {
    home: Home,
    channel: Channel,
    events: Vec<String>,
    max_age: u64,
    /// `[serve] public_url`: a decision's wake carries its page's link.
    link_base: Option<String>,
    cursor: Cursor,
    pacer: Pacer,
    /// The last try found no tmux client (said once, until one attaches).
    nobody: bool,
}

impl Lane {
    /// A lane at its saved cursor, or at the log's end on its first run.
    pub fn new(home: &Home, cfg: &Config, channel: Channel) -> Lane {
        let name = channel.name();
        let cursor = Cursor::load(home, name).unwrap_or_else(|| {
            let (all, end) = wakes::read_since(home, 0).unwrap_or_default();
            let c = Cursor {
                offset: end,
                seq: all.last().map_or(0, |w| w.seq),
            };
            c.save(home, name);
            c
        });
        let n = &cfg.notify;
        Lane {
            home: home.clone(),
            channel,
            events: n.events.clone(),
            max_age: n.max_age_secs,
            link_base: Some(cfg.serve.public_url.clone()).filter(|u| !u.is_empty()),
            cursor,
            pacer: Pacer::new(
                n.per_minute,
                Duration::from_secs(n.retry_secs),
                Duration::from_secs(n.retry_max_secs),
            ),
            nobody: false,
        }
    }

    pub fn cursor(&self) -> Cursor {
        self.cursor
    }

    /// Delivers what is pending, if the pacer lets it; the moment to come
    /// back at the latest (a retry, the rate limit), `None` for "when
    /// something new arrives".
    pub fn step(&mut self, now: Instant, epoch: u64) -> Option<Instant> {
        let name = self.channel.name();
        if let Some(t) = self.pacer.wait_until(now) {
            return Some(t);
        }
        let (found, end) = match wakes::read_since(&self.home, self.cursor.offset) {
            Ok(r) => r,
            Err(e) => {
                crate::output::warn(
                    "fm-watch",
                    &format!("notify {name}: cannot read the wakes: {e}"),
                );
                return Some(now + POLL);
            }
        };
        if end == self.cursor.offset && found.is_empty() {
            return None;
        }
        let last = found.last().map_or(self.cursor.seq, |w| w.seq);
        let (stale, fresh): (Vec<_>, Vec<_>) = found
            .into_iter()
            .filter(|w| w.seq > self.cursor.seq || end < self.cursor.offset)
            .filter(|w| self.events.iter().any(|e| e == event_of(w)))
            .partition(|w| w.epoch.saturating_add(self.max_age) < epoch);
        if !stale.is_empty() {
            crate::output::warn(
                "fm-watch",
                &format!(
                    "notify {name}: {} wake(s) older than {}s not sent (seq {})",
                    stale.len(),
                    self.max_age,
                    stale
                        .iter()
                        .map(|w| w.seq.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            );
        }
        let done = Cursor {
            offset: end,
            seq: last,
        };
        if fresh.is_empty() {
            // Nothing waits for a client any more: a later wait is said again.
            self.nobody = false;
            self.cursor = done;
            done.save(&self.home, name);
            return None;
        }
        let n = fresh.len();
        let mut fresh = fresh;
        if let Some(base) = &self.link_base {
            for w in &mut fresh {
                if let Some(link) = note::decision_link(base, w) {
                    w.text = format!("{} {link}", w.text);
                }
            }
        }
        let note = Note { wakes: fresh };
        match self.channel.send(&note) {
            Ok(()) => {
                self.nobody = false;
                self.pacer.sent(now);
                self.cursor = done;
                done.save(&self.home, name);
                // The rate limit may hold wakes that arrive meanwhile.
                self.pacer.wait_until(now)
            }
            Err(Miss::Nobody) => {
                // Not a failure: no backoff, and one `list-clients` a
                // pass until a client attaches (then the wakes go at once).
                if !self.nobody {
                    self.nobody = true;
                    crate::output::warn(
                        "fm-watch",
                        &format!(
                            "notify {name}: {}; {n} wake(s) kept until one attaches",
                            Miss::Nobody
                        ),
                    );
                }
                Some(now + CLIENT_POLL)
            }
            Err(Miss::Failed(e)) => {
                let delay = self.pacer.failed(now);
                crate::output::warn(
                    "fm-watch",
                    &format!(
                        "notify {name} failed (attempt {}): {e}; {n} wake(s) kept, retrying in {}s",
                        self.pacer.failures,
                        delay.as_secs_f64()
                    ),
                );
                Some(now + delay)
            }
        }
    }
}

enum Msg {
    Poke,
    Finish,
}

/// The running lanes of one watcher.
pub struct Notifier {
    lanes: Vec<(mpsc::Sender<Msg>, JoinHandle<()>)>,
}

impl Notifier {
    /// Starts a lane per configured channel (none: nothing runs), warning
    /// about channels that cannot work here.
    pub fn start(home: &Home, cfg: &Config) -> Notifier {
        let (channels, warnings) = channel::configured(cfg, std::env::var_os("PATH").as_deref());
        for w in warnings {
            crate::output::warn("fm-watch", &w);
        }
        let lanes = channels
            .into_iter()
            .map(|c| {
                let lane = Lane::new(home, cfg, c);
                let (tx, rx) = mpsc::channel();
                (tx, std::thread::spawn(move || run_lane(lane, &rx)))
            })
            .collect();
        Notifier { lanes }
    }

    /// New wakes may be in the log: look now.
    pub fn poke(&self) {
        for (tx, _) in &self.lanes {
            let _ = tx.send(Msg::Poke);
        }
    }

    /// Lets each lane deliver what is pending (unless it is waiting out a
    /// backoff or the rate limit: those wakes stay for the next watcher)
    /// and waits for them.
    pub fn finish(self) {
        for (tx, _) in &self.lanes {
            let _ = tx.send(Msg::Finish);
        }
        for (_, h) in self.lanes {
            let _ = h.join();
        }
    }
}

fn run_lane(mut lane: Lane, rx: &mpsc::Receiver<Msg>) {
    let mut next = lane.step(Instant::now(), crate::clock::now());
    loop {
        let now = Instant::now();
        let wait = next.map_or(POLL, |t| t.saturating_duration_since(now).min(POLL));
        match rx.recv_timeout(wait) {
            Ok(Msg::Poke) | Err(RecvTimeoutError::Timeout) => {}
            Ok(Msg::Finish) | Err(RecvTimeoutError::Disconnected) => {
                lane.step(Instant::now(), crate::clock::now());
                return;
            }
        }
        next = lane.step(Instant::now(), crate::clock::now());
    }
}

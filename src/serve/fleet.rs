//! The fleet as the cockpit shows it: one thread drives `fm top`'s own
//! [`Source`] (its reader thread and its inotify notice thread, untouched)
//! and publishes each read that changes what a page shows as a
//! [`Snapshot`] on a `watch` channel. A page reads the latest snapshot; an
//! event stream waits for the next. A slow stream simply skips versions:
//! the channel holds one value, never a queue.
//!
//! The loop is `fm top`'s: a change under `state/` asks for a read after
//! [`DEBOUNCE`]; a read is also asked every `poll` (a pane that died writes
//! no file). The version grows only when the rendered fragments change,
//! so an idle fleet sends nothing.

use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::pages;
use crate::config::Config;
use crate::crew_state::{Row, sort_by_urgency};
use crate::home::Home;
use crate::remote::wakes::{Feed, From, Merged};
use crate::top::seen::{self, FeedLine};
use crate::top::source::{Msg, Source};

/// How long a burst of file changes may settle before one read.
pub const DEBOUNCE: Duration = Duration::from_millis(100);
/// Most wakes a page lists.
pub const WAKES: usize = 50;
/// How often the hosts' wakes are asked for, at most (as `fm top`).
pub const HOSTS_EVERY: Duration = Duration::from_secs(3);

/// One read of the fleet, rendered.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Grows by one with each change a page would show; 0 before the
    /// first read.
    pub version: u64,
    /// Attention first.
    pub rows: Vec<Row>,
    pub unseen: usize,
    pub rows_html: String,
    pub wakes_html: String,
    pub warning: Option<String>,
    /// What the feed shows, for the "Mark wakes seen" form.
    pub shown: Shown,
}

/// What a page's feed showed, as its "Mark wakes seen" form sends it
/// back: the local log's end and each host's highest sequence number.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Shown {
    pub upto: u64,
    pub hosts: std::collections::BTreeMap<String, u64>,
}

impl Shown {
    /// `<host>:<seq>` pairs, space-separated (a form field).
    pub fn hosts_field(&self) -> String {
        let pairs: Vec<String> = self.hosts.iter().map(|(h, s)| format!("{h}:{s}")).collect();
        pairs.join(" ")
    }

    /// Reads [`Shown::hosts_field`] back; malformed pairs are left out.
    pub fn parse_hosts(field: &str) -> std::collections::BTreeMap<String, u64> {
        field
            .split_whitespace()
            .filter_map(|p| {
                let (h, s) = p.rsplit_once(':')?;
                Some((h.to_string(), s.parse().ok()?))
            })
            .collect()
    }

    fn of(end: u64, far: &[Merged]) -> Shown {
        let mut hosts = std::collections::BTreeMap::new();
        for m in far {
            if let Some(h) = &m.host {
                let s = hosts.entry(h.clone()).or_insert(0);
                *s = m.wake.seq.max(*s);
            }
        }
        Shown { upto: end, hosts }
    }
}

/// The latest snapshot, and a way to ask for a fresh read.
#[derive(Clone)]
pub struct Fleet {
    pub latest: watch::Receiver<Arc<Snapshot>>,
    kick: Sender<Msg>,
    /// The hosts' wakes, read in the background as `fm top` reads them.
    hosts: Arc<Option<Feed>>,
}

impl Fleet {
    /// Starts the reader; it ends when every receiver is gone.
    pub fn start(home: &Home, cfg: &Config, poll: Duration, events: bool) -> Fleet {
        let (wtx, latest) = watch::channel(Arc::new(Snapshot::default()));
        let (tx, rx) = mpsc::channel();
        let source = Source::start(home, cfg, &tx, events);
        let kick = tx.clone();
        let hosts = Arc::new(Feed::start(home, cfg, From::Start, HOSTS_EVERY));
        let feed = Arc::clone(&hosts);
        let home = home.clone();
        std::thread::spawn(move || {
            let _tx = tx;
            source.refresh();
            let mut next_poll = Instant::now() + poll;
            let mut read_due: Option<Instant> = None;
            let mut version = 0;
            loop {
                let now = Instant::now();
                let until = read_due.map_or(next_poll, |t| t.min(next_poll));
                match rx.recv_timeout(until.saturating_duration_since(now)) {
                    Ok(Msg::Rows { rows, .. }) => {
                        let far = feed.as_ref().as_ref().map(Feed::wakes).unwrap_or_default();
                        let next = snapshot(&home, rows, &far, version + 1);
                        let old = latest_of(&wtx);
                        if old.version == 0
                            || old.rows_html != next.rows_html
                            || old.wakes_html != next.wakes_html
                            || old.unseen != next.unseen
                        {
                            version += 1;
                            wtx.send_replace(Arc::new(next));
                        }
                    }
                    Ok(Msg::Changed) => {
                        read_due.get_or_insert(Instant::now() + DEBOUNCE);
                    }
                    Ok(Msg::Done { .. } | Msg::Review { .. }) | Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
                if wtx.is_closed() {
                    return;
                }
                let now = Instant::now();
                if read_due.is_some_and(|t| now >= t) || now >= next_poll {
                    read_due = None;
                    next_poll = now + poll;
                    source.refresh();
                }
            }
        });
        Fleet {
            latest,
            kick,
            hosts,
        }
    }

    /// Moves `fm top`'s seen cursors past what a page showed (`shown`,
    /// from its form), never past a wake that arrived after it rendered;
    /// how many wakes became seen.
    pub fn mark_seen(&self, home: &Home, shown: &Shown) -> crate::error::Result<usize> {
        let far = self
            .hosts
            .as_ref()
            .as_ref()
            .map(Feed::wakes)
            .unwrap_or_default();
        seen::mark_shown(home, &far, shown.upto, &shown.hosts)
    }

    /// Asks for a fresh read soon (after an action).
    pub fn kick(&self) {
        let _ = self.kick.send(Msg::Changed);
    }

    /// The latest snapshot, waiting at most `wait` for the first read.
    pub async fn current(&self, wait: Duration) -> Arc<Snapshot> {
        let mut rx = self.latest.clone();
        let _ = tokio::time::timeout(wait, rx.wait_for(|s| s.version > 0)).await;
        rx.borrow().clone()
    }
}

fn latest_of(w: &watch::Sender<Arc<Snapshot>>) -> Arc<Snapshot> {
    w.borrow().clone()
}

fn snapshot(home: &Home, mut rows: Vec<Row>, far: &[Merged], version: u64) -> Snapshot {
    sort_by_urgency(&mut rows);
    let (mut feed, end, warning) = match seen::read(home, far) {
        Ok((lines, end)) => (lines, end, None),
        Err(e) => (
            Vec::new(),
            0,
            Some(format!("cannot read the wakes feed: {e}")),
        ),
    };
    let shown = Shown::of(end, far);
    let unseen = feed.iter().filter(|l| l.new).count();
    let skip = feed.len().saturating_sub(WAKES);
    let feed: Vec<FeedLine> = feed.drain(skip..).collect();
    Snapshot {
        version,
        rows_html: pages::rows(&rows).into_string(),
        wakes_html: pages::wakes(&feed, &shown).into_string(),
        shown,
        rows,
        unseen,
        warning,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_a_page_showed_read_back() {
        let mut hosts = std::collections::BTreeMap::new();
        hosts.insert("far".to_string(), 3);
        hosts.insert("box:2".to_string(), 17);
        let shown = Shown { upto: 9, hosts };
        assert_eq!(shown.hosts_field(), "box:2:17 far:3");
        assert_eq!(Shown::parse_hosts(&shown.hosts_field()), shown.hosts);
        assert!(Shown::parse_hosts("far:x nohost :").is_empty());
    }
}

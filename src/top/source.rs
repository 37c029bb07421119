//! Where the dashboard's rows come from, off the drawing thread: a reader
//! thread gathers the fleet (a kept [`crate::crew_state::FleetReader`],
//! the same rows as `fm-crew-state`) whenever it is asked, and a
//! notice thread (the crate's one inotify layer, [`crate::fsnotice`],
//! over `state/` and every inbox) says when something changed.
//!
//! Asking is coalesced: requests that arrive while a read runs make one
//! more read, not many. Changes the dashboard does not show never ask:
//! temp files of atomic writes, locks, cursors, the heartbeat and the
//! event log (every command appends to it; what it records shows up in the
//! files it names). The ladder's `.escalated` and `.ring-state` do ask.
//! Without filesystem events (inotify limit, NFS) the dashboard keeps
//! working on its polling tick.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};

use rustix::event::{EventfdFlags, PollFd, PollFlags};

use super::seen;
use crate::config::Config;
use crate::crew_state::{FleetReader, Row};
use crate::fsnotice::state::StateNotices;
use crate::home::Home;
use crate::{clock, fsx};

/// What reaches the dashboard's loop from its helpers.
#[derive(Debug)]
pub enum Msg {
    /// A fresh read of the fleet.
    Rows {
        rows: Vec<Row>,
        warnings: Vec<String>,
        new_wakes: usize,
    },
    /// Something under `state/` changed.
    Changed,
    /// A background action finished: what to tell the captain.
    Done { text: String, error: bool },
    /// Task `id`'s review, loaded off the drawing thread (`d`).
    Review {
        id: String,
        review: std::result::Result<Box<crate::route::review::Review>, String>,
    },
}

/// Whether a change to `path` can change what the dashboard shows.
pub fn relevant(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    match name {
        ".escalated" | ".ring-state" => true,
        "events.jsonl" => false,
        n => !n.starts_with('.'),
    }
}

/// The reader thread and the notice thread.
pub struct Source {
    ask: Sender<()>,
    /// Written when the source is dropped: the notice thread ends.
    stop: Option<OwnedFd>,
    /// Why filesystem events are off, if they are.
    pub events_off: Option<String>,
}

impl Source {
    /// Starts both; every result goes to `tx`.
    pub fn start(home: &Home, cfg: &Config, tx: &Sender<Msg>, events: bool) -> Source {
        let (ask, asked) = mpsc::channel();
        {
            let (home, cfg, tx) = (home.clone(), cfg.clone(), tx.clone());
            std::thread::spawn(move || reader(&home, &cfg, &asked, &tx));
        }
        let (stop, events_off) = if events {
            match watch(home, tx.clone()) {
                Ok(stop) => (Some(stop), None),
                Err(e) => (None, Some(e.to_string())),
            }
        } else {
            (None, Some("turned off".to_string()))
        };
        Source {
            ask,
            stop,
            events_off,
        }
    }

    /// Asks for a fresh read.
    pub fn refresh(&self) {
        let _ = self.ask.send(());
    }
}

fn reader(home: &Home, cfg: &Config, asked: &Receiver<()>, tx: &Sender<Msg>) {
    // Held across reads: each re-reads only what changed.
    let mut fleet = FleetReader::kept();
    let mut counted: Option<std::time::Instant> = None;
    let mut counter = crate::usage::Counter::default();
    while asked.recv().is_ok() {
        while asked.try_recv().is_ok() {}
        // Usage per worker, counted here too (at most every period): the
        // dashboard is current without a watcher (docs/crew-state.md).
        if counted.is_none_or(|t| t.elapsed() >= crate::usage::every()) {
            counted = Some(std::time::Instant::now());
            counter.count(home, cfg);
        }
        // Remote tasks' rows come from their hosts, asked while the local
        // fleet is read.
        let mut hosts = crate::remote::fleet::start(home, cfg);
        let mut rows = Vec::new();
        let read = fleet.fleet(home, cfg, clock::now(), &mut |r| {
            rows.push(r);
            Ok(())
        });
        hosts.overlay(&mut rows);
        let msg = match read {
            Ok(warnings) => Msg::Rows {
                rows,
                warnings,
                new_wakes: seen::unseen(home).unwrap_or(0),
            },
            Err(e) => Msg::Done {
                text: format!("cannot read the fleet: {e}"),
                error: true,
            },
        };
        if tx.send(msg).is_err() {
            return;
        }
    }
}

impl Drop for Source {
    fn drop(&mut self) {
        if let Some(stop) = &self.stop {
            let _ = rustix::io::write(stop, &1u64.to_ne_bytes());
        }
    }
}

/// Every inbox directory in `state/` now.
fn inbox_dirs(home: &Home) -> Vec<PathBuf> {
    let state = home.state_dir();
    fsx::list_dir(&state)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| {
            n.to_str()
                .is_some_and(|n| n.strip_suffix(".inbox").is_some())
        })
        .map(|n| state.join(n))
        .collect()
}

/// Starts the notice thread: `state/` and every inbox watched, a
/// [`Msg::Changed`] for each batch of notices one of which is
/// [`relevant`], or when some were lost. Returns the descriptor that
/// stops it.
fn watch(home: &Home, tx: Sender<Msg>) -> std::io::Result<OwnedFd> {
    let mut notices = StateNotices::start_with(home, true)?;
    notices.watch_inboxes(home, &inbox_dirs(home));
    let stop = rustix::event::eventfd(0, EventfdFlags::CLOEXEC)?;
    let woken = stop.try_clone()?;
    let home = home.clone();
    std::thread::spawn(move || {
        loop {
            let ready = {
                let fd = notices.fd();
                let mut fds = [
                    PollFd::new(&fd, PollFlags::IN),
                    PollFd::new(&woken, PollFlags::IN),
                ];
                match rustix::event::poll(&mut fds, None) {
                    Ok(_) => {}
                    Err(rustix::io::Errno::INTR) => continue,
                    // The dashboard keeps working on its polling tick.
                    Err(_) => return,
                }
                if !fds[1].revents().is_empty() {
                    return;
                }
                !fds[0].revents().is_empty()
            };
            if !ready {
                continue;
            }
            let (mut ask, mut inbox) = (false, false);
            let complete = notices.drain_names(|name| {
                ask |= relevant(Path::new(name));
                inbox |= name.strip_suffix(".inbox").is_some();
            });
            if inbox || !complete {
                notices.watch_inboxes(&home, &inbox_dirs(&home));
            }
            if (ask || !complete) && tx.send(Msg::Changed).is_err() {
                return;
            }
        }
    });
    Ok(stop)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// The notice thread asks for a read on a change the dashboard shows
    /// (in `state/` and in an inbox made after it started), not on its
    /// own cursor, and ends when its stop is written.
    #[test]
    fn the_notice_thread_asks_for_shown_changes_and_stops() {
        let d = tempfile::tempdir().unwrap();
        let state = d.path().join("state");
        std::fs::create_dir_all(&state).unwrap();
        let home = Home::at(d.path()).unwrap();
        let (tx, rx) = mpsc::channel();
        let stop = watch(&home, tx).unwrap();
        let changed = |what: &str| match rx.recv_timeout(Duration::from_secs(5)) {
            Ok(Msg::Changed) => {}
            other => panic!("{what}: {other:?}"),
        };
        let quiet = |what: &str| {
            assert!(
                rx.recv_timeout(Duration::from_millis(300)).is_err(),
                "{what}"
            );
        };
        std::fs::write(state.join(".top.cursor"), "1\n").unwrap();
        quiet("the cursor");
        std::fs::write(state.join("t.status"), "working: x\n").unwrap();
        changed("a status line");
        while rx.recv_timeout(Duration::from_millis(200)).is_ok() {}
        std::fs::create_dir_all(state.join("t.inbox")).unwrap();
        changed("a new inbox");
        while rx.recv_timeout(Duration::from_millis(200)).is_ok() {}
        std::fs::write(state.join("t.inbox/001.msg"), "m\n").unwrap();
        changed("a record in the new inbox");
        while rx.recv_timeout(Duration::from_millis(200)).is_ok() {}
        rustix::io::write(&stop, &1u64.to_ne_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        std::fs::write(state.join("t.status"), "working: y\n").unwrap();
        // The thread ended: its sender is dropped.
        assert!(matches!(
            rx.recv_timeout(Duration::from_secs(2)),
            Err(mpsc::RecvTimeoutError::Disconnected)
        ));
    }

    #[test]
    fn only_changes_the_dashboard_shows_ask_for_a_read() {
        for p in [
            "/h/state/t.status",
            "/h/state/t.meta",
            "/h/state/t.inbox/002.msg",
            "/h/state/t.inbox/.escalated",
            "/h/state/t.inbox/.ring-state",
            "/h/state/wakes.log",
            "/h/state/t.run",
        ] {
            assert!(relevant(Path::new(p)), "{p}");
        }
        for p in [
            "/h/state/.t.meta.tmp.12.0",
            "/h/state/events.jsonl",
            "/h/state/.watch.beat",
            "/h/state/.top.cursor",
            "/h/state/.meta-t.lock",
        ] {
            assert!(!relevant(Path::new(p)), "{p}");
        }
    }
}

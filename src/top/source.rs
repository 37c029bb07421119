//! Where the dashboard's rows come from, off the drawing thread: a reader
//! thread gathers the fleet (a kept [`crate::crew_state::FleetReader`],
//! the same rows as `fm-crew-state`) whenever it is asked, and a
//! filesystem watcher (`notify`, recursive over `state/`) says when
//! something changed.
//!
//! Asking is coalesced: requests that arrive while a read runs make one
//! more read, not many. Changes the dashboard does not show never ask:
//! temp files of atomic writes, locks, cursors, the heartbeat and the
//! event log (every command appends to it; what it records shows up in the
//! files it names). The ladder's `.escalated` and `.ring-state` do ask.
//! Without filesystem events (inotify limit, NFS) the dashboard keeps
//! working on its polling tick.

use std::path::Path;
use std::sync::mpsc::{self, Receiver, Sender};

use notify::Watcher;

use super::seen;
use crate::clock;
use crate::config::Config;
use crate::crew_state::{FleetReader, Row};
use crate::home::Home;

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

/// The reader thread and the filesystem watcher.
pub struct Source {
    ask: Sender<()>,
    _watcher: Option<notify::RecommendedWatcher>,
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
        let (watcher, events_off) = if events {
            match watch(home, tx.clone()) {
                Ok(w) => (Some(w), None),
                Err(e) => (None, Some(e.to_string())),
            }
        } else {
            (None, Some("turned off".to_string()))
        };
        Source {
            ask,
            _watcher: watcher,
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
    while asked.recv().is_ok() {
        while asked.try_recv().is_ok() {}
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

fn watch(home: &Home, tx: Sender<Msg>) -> notify::Result<notify::RecommendedWatcher> {
    let handler = move |res: notify::Result<notify::Event>| match res {
        Ok(ev) if ev.kind.is_access() => {}
        Ok(ev) if ev.paths.iter().any(|p| relevant(p)) => {
            let _ = tx.send(Msg::Changed);
        }
        Ok(_) => {}
        Err(_) => {
            let _ = tx.send(Msg::Changed);
        }
    };
    let mut w = notify::recommended_watcher(handler)?;
    w.watch(&home.state_dir(), notify::RecursiveMode::Recursive)?;
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

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

//! The captain's feed across hosts: `fm-watch --drain` prints the wakes of
//! every configured host with its own, merged in time order, each once.
//!
//! Each host runs its own watcher, so its wakes are in its own
//! `state/wakes.log`. The captain keeps one cursor per host (a byte
//! offset into that log, as the local cursor is) in
//! `state/.wakes-hosts.cursor` (`<host>\t<offset>` lines), and asks each
//! host, in parallel, for the wakes past it with `fm-watch --wakes-from
//! <offset>`, which reads and changes nothing there. A host's cursor moves
//! only after its wakes were printed; a host that gives no answer keeps
//! its cursor and its wakes come with the next drain that reaches it.
//!
//! [`Feed`] reads the hosts in the background for the readers that must
//! never wait on a host (`fm-watch --until-wake`, `fm top`), moving no
//! cursor.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ssh::Ssh;
use crate::config::Config;
use crate::error::Result;
use crate::fsx;
use crate::home::Home;
use crate::wakes::Wake;

/// The far side's answer to `--wakes-from`.
#[derive(Debug, Serialize, Deserialize)]
pub struct FarWakes {
    pub wakes: Vec<FarWake>,
    /// The offset past the last complete line read.
    pub end: u64,
}

/// A wake as it travels (the fields of [`Wake`]).
#[derive(Debug, Serialize, Deserialize)]
pub struct FarWake {
    pub seq: u64,
    pub epoch: u64,
    pub task: String,
    pub kind: String,
    pub text: String,
}

/// The far side of `--wakes-from <offset>`: the wakes past `offset` and
/// the new end, as one JSON line.
pub fn answer(home: &Home, offset: u64) -> Result<u8> {
    let (wakes, end) = crate::wakes::read_since(home, offset)?;
    let out = FarWakes {
        wakes: wakes
            .into_iter()
            .map(|w| FarWake {
                seq: w.seq,
                epoch: w.epoch,
                task: w.task,
                kind: w.kind,
                text: w.text,
            })
            .collect(),
        end,
    };
    crate::output::out_json(&out)?;
    Ok(0)
}

/// One wake of the merged feed: a local one, or one of a host's.
#[derive(Debug, Serialize)]
pub struct Merged {
    #[serde(flatten)]
    pub wake: Wake,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// What the hosts gave: their wakes, the cursors to write once printed,
/// and a warning per host that gave none.
pub struct Gathered {
    pub wakes: Vec<Merged>,
    cursors: BTreeMap<String, u64>,
    pub warnings: Vec<String>,
}

fn read_cursors(home: &Home) -> Result<BTreeMap<String, u64>> {
    let bytes = fsx::read_optional(&home.wakes_hosts_cursor())?.unwrap_or_default();
    Ok(String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| {
            let (name, off) = l.split_once('\t')?;
            Some((name.to_string(), off.trim().parse().ok()?))
        })
        .collect())
}

/// Asks every configured host for its wakes past its cursor, in
/// parallel; `None` when no host is configured.
pub fn gather(home: &Home, cfg: &Config) -> Result<Option<Gathered>> {
    if cfg.hosts.is_empty() {
        return Ok(None);
    }
    Ok(gather_past(home, cfg, read_cursors(home)?))
}

/// As [`gather`], from the given per-host offsets (a host not named
/// there from its log's start) instead of `--drain`'s cursors; `None`
/// when no host is configured. [`Gathered::cursors`] then says where
/// each host's wakes end.
pub fn gather_past(
    home: &Home,
    cfg: &Config,
    mut cursors: BTreeMap<String, u64>,
) -> Option<Gathered> {
    if cfg.hosts.is_empty() {
        return None;
    }
    let answers = ask_all(home, &cfg.hosts, |name| {
        cursors.get(name).copied().unwrap_or(0)
    });
    let mut wakes = Vec::new();
    let mut warnings = Vec::new();
    for (name, got) in answers {
        match got {
            Ok(far) => {
                cursors.insert(name.clone(), far.end);
                wakes.extend(far.wakes.into_iter().map(|w| Merged {
                    wake: Wake {
                        seq: w.seq,
                        epoch: w.epoch,
                        task: w.task,
                        kind: w.kind,
                        text: w.text,
                    },
                    host: Some(name.clone()),
                }));
            }
            Err(why) => warnings.push(format!(
                "host {name}: no wakes this time ({why}); they come with a later drain"
            )),
        }
    }
    Some(Gathered {
        wakes,
        cursors,
        warnings,
    })
}

/// Asks every host of `hosts` in parallel for its wakes past `from` of
/// its name, in the hosts' order.
fn ask_all(
    home: &Home,
    hosts: &super::Hosts,
    from: impl Fn(&str) -> u64,
) -> Vec<(String, std::result::Result<FarWakes, String>)> {
    std::thread::scope(|s| {
        let running: Vec<_> = hosts
            .iter()
            .map(|(name, host)| {
                let at = from(name);
                (name, s.spawn(move || ask(home, name, host, at)))
            })
            .collect();
        running
            .into_iter()
            .map(|(name, h)| {
                let got = h
                    .join()
                    .unwrap_or_else(|_| Err("the query panicked".into()));
                (name.clone(), got)
            })
            .collect()
    })
}

fn ask(
    home: &Home,
    name: &str,
    host: &super::HostCfg,
    from: u64,
) -> std::result::Result<FarWakes, String> {
    let ssh = Ssh::new(home, name, host).map_err(|e| e.to_string())?;
    let from = from.to_string();
    let reply = ssh
        .tool("fm-watch", &["--wakes-from", &from], None)
        .map_err(|u| format!("unreachable: {u}"))?;
    if reply.code != 0 {
        let why = reply.stderr.lines().rfind(|l| !l.trim().is_empty());
        return Err(format!(
            "fm-watch exit {}: {}",
            reply.code,
            why.unwrap_or("").trim()
        ));
    }
    serde_json::from_str(reply.stdout.trim()).map_err(|e| format!("unreadable answer: {e}"))
}

impl Gathered {
    /// The local wakes and the hosts', in time order (a local wake first
    /// on a tie, then the hosts in name order; each host's in its order).
    pub fn merge(&mut self, local: Vec<Wake>) -> Vec<Merged> {
        let mut all: Vec<Merged> = local
            .into_iter()
            .map(|wake| Merged { wake, host: None })
            .collect();
        all.append(&mut self.wakes);
        all.sort_by_key(|m| m.wake.epoch);
        all
    }

    /// Where each host's wakes end after this read (a host that gave no
    /// answer keeps the offset it was asked from).
    pub fn cursors(&self) -> &BTreeMap<String, u64> {
        &self.cursors
    }

    /// Writes the hosts' cursors (after their wakes were printed).
    pub fn commit(&self, home: &Home) -> Result<()> {
        let mut text = String::new();
        for (name, off) in &self.cursors {
            text.push_str(&format!("{name}\t{off}\n"));
        }
        fsx::atomic_write(&home.wakes_hosts_cursor(), text.as_bytes())
    }
}

/// Where a [`Feed`] starts reading each host's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum From {
    /// At the log's end when the host first answers: only wakes appended
    /// after that count (`fm-watch --until-wake`).
    Now,
    /// At the log's start, keeping the last [`FEED_KEEP`] wakes of each
    /// host (`fm top`'s feed).
    Start,
    /// At these offsets (a host not named: as [`From::Now`]): the wakes
    /// past what a reader already saw count, also those logged before
    /// the host first answers (`fm wake --wait`).
    At(BTreeMap<String, u64>),
}

/// Most wakes a [`Feed`] keeps per host (the newest).
pub const FEED_KEEP: usize = 500;

/// How often a [`Feed`] asks the hosts, at most.
pub const FEED_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// A host as a [`Feed`] knows it.
#[derive(Debug, Default, Clone)]
struct FeedHost {
    /// The offset the next ask starts from; `None` before the first answer.
    next: Option<u64>,
    wakes: std::collections::VecDeque<Wake>,
    /// Why the last ask got no answer.
    why: Option<String>,
}

#[derive(Default)]
struct FeedShared {
    hosts: BTreeMap<String, FeedHost>,
    /// Told (once per round that found wakes) that there are new ones.
    ping: Option<Box<dyn Fn() + Send>>,
}

/// Every configured host's wakes, read in the background: a thread asks
/// each host (in parallel, each bounded by its `timeout_ms`) for the wakes
/// past what it has read, at most every [`FEED_EVERY`], so a reader never
/// waits on a slow or unreachable host. It reads no cursor and moves none:
/// `--drain`'s per-host cursors are the drain's alone.
pub struct Feed {
    shared: std::sync::Arc<std::sync::Mutex<FeedShared>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed").finish_non_exhaustive()
    }
}

impl Feed {
    /// Starts reading every configured host, from `from`, asking at most
    /// every `every`; `None` when no host is configured.
    pub fn start(
        home: &Home,
        cfg: &Config,
        from: From,
        every: std::time::Duration,
    ) -> Option<Feed> {
        if cfg.hosts.is_empty() {
            return None;
        }
        let shared = std::sync::Arc::new(std::sync::Mutex::new(FeedShared {
            hosts: cfg
                .hosts
                .keys()
                .map(|n| {
                    let next = match &from {
                        From::At(at) => at.get(n).copied(),
                        _ => None,
                    };
                    (
                        n.clone(),
                        FeedHost {
                            next,
                            ..FeedHost::default()
                        },
                    )
                })
                .collect(),
            ping: None,
        }));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (home, hosts) = (home.clone(), cfg.hosts.clone());
        let (sh, st) = (shared.clone(), stop.clone());
        std::thread::spawn(move || feed_loop(&home, &hosts, from, every, &sh, &st));
        Some(Feed { shared, stop })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FeedShared> {
        self.shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Calls `wake` whenever a round finds new wakes (a waiting loop
    /// wakes up at once instead of at its next poll).
    pub fn ping(&self, wake: Box<dyn Fn() + Send>) {
        self.lock().ping = Some(wake);
    }

    /// Whether any host has a wake.
    pub fn any(&self) -> bool {
        self.lock().hosts.values().any(|h| !h.wakes.is_empty())
    }

    /// Every host's wakes read so far, each host's in its order, with its
    /// host.
    pub fn wakes(&self) -> Vec<Merged> {
        self.lock()
            .hosts
            .iter()
            .flat_map(|(name, h)| {
                h.wakes.iter().map(|w| Merged {
                    wake: w.clone(),
                    host: Some(name.clone()),
                })
            })
            .collect()
    }

    /// The hosts whose last ask got no answer, with why.
    pub fn unreachable(&self) -> Vec<(String, String)> {
        self.lock()
            .hosts
            .iter()
            .filter_map(|(n, h)| h.why.clone().map(|w| (n.clone(), w)))
            .collect()
    }

    /// The local wakes and the hosts' read so far, in time order (a local
    /// wake first on a tie, then the hosts in name order), as `--drain`
    /// merges them.
    pub fn merge(&self, local: Vec<Wake>) -> Vec<Merged> {
        let mut all: Vec<Merged> = local
            .into_iter()
            .map(|wake| Merged { wake, host: None })
            .collect();
        all.extend(self.wakes());
        all.sort_by_key(|m| m.wake.epoch);
        all
    }
}

impl Drop for Feed {
    /// Tells the thread to end; it is not waited for (it may be inside an
    /// ask, bounded by the host's `timeout_ms`).
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

fn feed_loop(
    home: &Home,
    hosts: &BTreeMap<String, super::HostCfg>,
    from: From,
    every: std::time::Duration,
    shared: &std::sync::Mutex<FeedShared>,
    stop: &std::sync::atomic::AtomicBool,
) {
    use std::sync::atomic::Ordering;
    let lock = || {
        shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    while !stop.load(Ordering::Relaxed) {
        let began = std::time::Instant::now();
        let next: BTreeMap<String, Option<u64>> = lock()
            .hosts
            .iter()
            .map(|(n, h)| (n.clone(), h.next))
            .collect();
        let answers = ask_all(home, hosts, |name| {
            next.get(name).copied().flatten().unwrap_or(0)
        });
        let mut found = false;
        {
            let mut sh = lock();
            for (name, got) in answers {
                let Some(h) = sh.hosts.get_mut(&name) else {
                    continue;
                };
                match got {
                    Ok(far) => {
                        let first = h.next.is_none();
                        h.next = Some(far.end);
                        h.why = None;
                        if first && matches!(from, From::Now | From::At(_)) {
                            continue;
                        }
                        found |= !far.wakes.is_empty();
                        h.wakes.extend(far.wakes.into_iter().map(|w| Wake {
                            seq: w.seq,
                            epoch: w.epoch,
                            task: w.task,
                            kind: w.kind,
                            text: w.text,
                        }));
                        while h.wakes.len() > FEED_KEEP {
                            h.wakes.pop_front();
                        }
                    }
                    Err(why) => h.why = Some(why),
                }
            }
            if found && let Some(wake) = &sh.ping {
                wake();
            }
        }
        while !stop.load(Ordering::Relaxed) && began.elapsed() < every {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

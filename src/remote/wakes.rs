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
    let mut cursors = read_cursors(home)?;
    let answers: Vec<(String, std::result::Result<FarWakes, String>)> = std::thread::scope(|s| {
        let running: Vec<_> = cfg
            .hosts
            .iter()
            .map(|(name, host)| {
                let from = cursors.get(name).copied().unwrap_or(0);
                (name, s.spawn(move || ask(home, name, host, from)))
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
    Ok(Some(Gathered {
        wakes,
        cursors,
        warnings,
    }))
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

    /// Writes the hosts' cursors (after their wakes were printed).
    pub fn commit(&self, home: &Home) -> Result<()> {
        let mut text = String::new();
        for (name, off) in &self.cursors {
            text.push_str(&format!("{name}\t{off}\n"));
        }
        fsx::atomic_write(&home.wakes_hosts_cursor(), text.as_bytes())
    }
}

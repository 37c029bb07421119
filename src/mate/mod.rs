//! The first mate (docs/spec/mate.md): an AI lead started in the home
//! that runs the fleet for the captain. This module is what the lead
//! calls: one wake packet per wake ([`take`]), its acknowledgement
//! ([`ack`]), and the wait that costs nothing until the fleet needs the
//! lead ([`wait`]); [`pack`] writes the lead's workplace (`fm mate init`)
//! and [`hook`] speaks each harness's hook protocol.

pub mod hook;
pub mod ledger;
pub mod pack;
pub mod packet;
pub mod wait;

use crate::config::Config;
use crate::error::Result;
use crate::home::Home;
use crate::remote::wakes::Merged;
use ledger::{Acked, Ledger, Position};
pub use packet::Packet;

/// Most local wakes one packet holds; the rest come in the next one.
pub const MAX_WAKES: usize = 40;

/// Whether a packet is wanted whatever the ledger says, or only when one
/// is due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask {
    /// `fm wake`: always a packet (with no news, the open decisions and
    /// the fleet's numbers).
    Show,
    /// `fm wake --wait`: a packet only when there is news, or when the
    /// newest packet was shown once before `since`, never acknowledged,
    /// and — when `transcript` names the lead's conversation and the
    /// packet was shown to this same `session` — reached the lead there;
    /// and only while `waiter` (when given) is still the home's waiter.
    Due {
        since: Option<(u64, u32)>,
        waiter: Option<String>,
        transcript: Option<std::path::PathBuf>,
        /// The harness session the waiter serves, when it is a hook's.
        session: Option<String>,
    },
}

/// Longest packet text (bytes) when it holds more than one local wake:
/// past it, fewer wakes go in and the rest come in the next packet
/// (Codex cuts the middle of a hook's prompt past about 10 KB).
pub const BUDGET: usize = 8 * 1024;

/// Local wakes read from an offset (at most [`MAX_WAKES`], each with the
/// offset past it).
struct Local {
    wakes: Vec<(crate::wakes::Wake, u64)>,
    /// Where the read started.
    start: u64,
    /// Where they end: past the last one kept, else the log's end.
    end: u64,
    /// Wakes past the [`MAX_WAKES`] kept.
    beyond: usize,
    /// The log was shorter than the offset asked (replaced): read from 0.
    reset: bool,
}

fn read_local(home: &Home, from: u64) -> Result<Local> {
    let crate::wakes::ReadEach {
        wakes: mut local,
        started,
        end,
    } = crate::wakes::read_since_each(home, from)?;
    let beyond = local.len().saturating_sub(MAX_WAKES);
    let end = if beyond > 0 {
        local[MAX_WAKES - 1].1
    } else {
        end
    };
    local.truncate(MAX_WAKES);
    Ok(Local {
        wakes: local,
        start: started,
        end,
        beyond,
        reset: started < from,
    })
}

/// Every host's wakes past the cursor, and where each host's log ends.
struct Hosts {
    wakes: Vec<Merged>,
    ends: std::collections::BTreeMap<String, u64>,
    warnings: Vec<String>,
}

fn read_hosts(home: &Home, cfg: &Config, from: &Position) -> Hosts {
    match crate::remote::wakes::gather_past(home, cfg, from.hosts.clone()) {
        Some(mut g) => Hosts {
            warnings: std::mem::take(&mut g.warnings),
            ends: g.cursors().clone(),
            wakes: g.merge(Vec::new()),
        },
        None => Hosts {
            wakes: Vec::new(),
            ends: from.hosts.clone(),
            warnings: Vec::new(),
        },
    }
}

/// Whether `end` (of a candidate packet holding `wakes`) reaches past
/// `covered` in a feed that has wakes in it.
fn fresh(wakes: &[Merged], end: &Position, covered: &Position) -> bool {
    wakes.iter().any(|m| match &m.host {
        None => end.local > covered.local,
        Some(h) => {
            end.hosts.get(h).copied().unwrap_or(0) > covered.hosts.get(h).copied().unwrap_or(0)
        }
    })
}

/// Whether `ask` is a waiter's that is no longer the home's waiter.
fn superseded(home: &Home, ask: &Ask) -> bool {
    matches!(ask, Ask::Due { waiter: Some(w), .. } if !wait::is_current(home, w))
}

/// How many times [`take`] reads the feeds and the fleet outside the
/// ledger's lock before it reads them under it.
const OPTIMISTIC: usize = 3;

/// Presents a packet when one is due (always, for [`Ask::Show`]):
/// records it in the ledger and builds it over the fleet as it is now.
/// `None` when [`Ask::Due`] finds nothing due.
///
/// The slow reads — the hosts' feeds and the fleet's rows, each up to a
/// host's timeout — run outside `state/.mate.lock`, so an ack never waits
/// on them; the decision is taken under the lock against the ledger read
/// again, and when that changed meanwhile (an ack, another waiter) the
/// reads are made again, the last time under the lock.
pub fn take(home: &Home, cfg: &Config, ask: Ask, now: u64) -> Result<Option<Packet>> {
    let waiting = matches!(ask, Ask::Due { .. });
    for attempt in 0..=OPTIMISTIC {
        let early = if attempt == OPTIMISTIC {
            Some(ledger::lock(home)?)
        } else {
            None
        };
        if superseded(home, &ask) {
            return Ok(None);
        }
        let seen = Ledger::load(home)?;
        let hosts = read_hosts(home, cfg, &seen.cursor);
        if waiting && hosts.wakes.is_empty() {
            let local = read_local(home, seen.cursor.local)?;
            if local.wakes.is_empty() && !local.reset {
                return Ok(None);
            }
        }
        let rows = crate::route::fleet::fleet(home, cfg, now)?;
        let guard = match early {
            Some(g) => g,
            None => ledger::lock(home)?,
        };
        if superseded(home, &ask) {
            return Ok(None);
        }
        let ledger = Ledger::load(home)?;
        if ledger.cursor != seen.cursor || ledger.packets != seen.packets {
            drop(guard);
            continue;
        }
        let got = decide(home, cfg, ledger, hosts, rows, &ask, now);
        drop(guard);
        return got;
    }
    Ok(None)
}

/// A packet built over some wakes, and where they end.
struct Candidate {
    packet: Packet,
    end: Position,
    wakes: Vec<Merged>,
    /// Local wakes left for later.
    more: usize,
}

/// The packet over `local`'s first wakes (as many as keep the text
/// within [`BUDGET`], at least one) and every host's, notes included.
fn budgeted(
    home: &Home,
    cfg: &Config,
    local: &Local,
    hosts: &Hosts,
    rows: &[crate::crew_state::Row],
    notes_since: u64,
    now: u64,
) -> Candidate {
    let mut k = local.wakes.len();
    loop {
        let c = candidate(home, cfg, local, k, hosts, rows, notes_since, now);
        if k <= 1 || c.packet.text().len() <= BUDGET {
            return c;
        }
        k = k * 3 / 4;
    }
}

/// The packet over `local`'s first `k` wakes and every host's.
#[allow(clippy::too_many_arguments)]
fn candidate(
    home: &Home,
    cfg: &Config,
    local: &Local,
    k: usize,
    hosts: &Hosts,
    rows: &[crate::crew_state::Row],
    notes_since: u64,
    now: u64,
) -> Candidate {
    let k = k.min(local.wakes.len());
    let local_end = match k {
        k if k == local.wakes.len() => local.end,
        0 => local.start,
        k => local.wakes[k - 1].1,
    };
    let mut wakes: Vec<Merged> = local.wakes[..k]
        .iter()
        .map(|(w, _)| Merged {
            wake: w.clone(),
            host: None,
        })
        .collect();
    wakes.extend(hosts.wakes.iter().map(|m| Merged {
        wake: m.wake.clone(),
        host: m.host.clone(),
    }));
    wakes.sort_by_key(|m| m.wake.epoch);
    let mut packet = packet::build(rows, &wakes, now);
    for it in packet.items.iter_mut().filter(|it| it.host.is_none()) {
        it.notes = notes(home, cfg, &it.task, notes_since, &it.events);
    }
    Candidate {
        packet,
        end: Position {
            local: local_end,
            hosts: hosts.ends.clone(),
        },
        wakes,
        more: local.wakes.len() - k + local.beyond,
    }
}

/// [`take`]'s decision, under the ledger's lock, over what was read.
fn decide(
    home: &Home,
    cfg: &Config,
    mut ledger: Ledger,
    mut hosts: Hosts,
    (rows, mut row_warnings): (Vec<crate::crew_state::Row>, Vec<String>),
    ask: &Ask,
    now: u64,
) -> Result<Option<Packet>> {
    let waiting = matches!(ask, Ask::Due { .. });
    // The local log is read here, under the lock (it is fast).
    let local = read_local(home, ledger.cursor.local)?;
    let mut changed = false;
    if local.reset {
        // The log was replaced: what the ledger knew of it is void.
        ledger.cursor.local = 0;
        for p in &mut ledger.packets {
            p.acked = true;
        }
        changed = true;
    }
    for (h, &end) in &hosts.ends {
        match ledger.cursor.hosts.get(h).copied() {
            // A host's log shorter than the cursor was replaced: its
            // wakes count again from its start.
            Some(c) if end < c => {
                ledger.cursor.hosts.insert(h.clone(), 0);
                for p in &mut ledger.packets {
                    p.end.hosts.remove(h);
                }
                changed = true;
            }
            // A host never read before starts at its end: its history
            // is not news (as a new ledger starts at the local end).
            None if !ledger.packets.iter().any(|p| p.end.hosts.contains_key(h)) => {
                ledger.cursor.hosts.insert(h.clone(), end);
                hosts
                    .wakes
                    .retain(|m| m.host.as_deref() != Some(h.as_str()));
                changed = true;
            }
            _ => {}
        }
    }
    if changed {
        ledger.save(home)?;
    }
    if waiting && local.wakes.is_empty() && hosts.wakes.is_empty() {
        return Ok(None);
    }
    let notes_since = ledger
        .packets
        .iter()
        .rev()
        .find(|q| q.acked)
        .map_or(0, |q| q.epoch);
    let covered = ledger.covered();
    let mut cand = budgeted(home, cfg, &local, &hosts, &rows, notes_since, now);
    let given_up = ledger.last().is_some_and(|p| !p.acked && p.shown >= 2);
    if given_up && !fresh(&cand.wakes, &cand.end, &covered) && covered.local > ledger.cursor.local {
        // The packet shown twice and not acknowledged was cut by the
        // budget, and this one would stop where it stops: the wakes past
        // it come now.
        let past = read_local(home, covered.local)?;
        if !past.wakes.is_empty() {
            cand = budgeted(home, cfg, &past, &hosts, &rows, notes_since, now);
        }
    }
    let last = ledger.last().cloned();
    let session = match ask {
        Ask::Due { session, .. } => session.clone(),
        Ask::Show => None,
    };
    let (presented, mut p, more) = if fresh(&cand.wakes, &cand.end, &covered) {
        let pr = ledger.present_new(cand.end, now, session);
        (Some(pr), cand.packet, cand.more)
    } else {
        let again = match (&last, ask) {
            (Some(p), _) if p.acked || (local.wakes.is_empty() && hosts.wakes.is_empty()) => None,
            (Some(_), Ask::Show) => ledger.present_again(),
            (
                Some(p),
                Ask::Due {
                    since,
                    transcript,
                    session,
                    ..
                },
            ) => {
                // Shown once, before this waiter began, and left unacknowledged:
                // the lead stopped mid-wake. Once more, then only news. A
                // packet handed over while the lead's turn ran reaches it
                // only after that turn: not yet in its conversation, it is
                // on its way, not abandoned.
                let same_session = session.is_some() && p.session == *session;
                (p.shown < 2
                    && *since == Some((p.n, p.shown))
                    && (!same_session
                        || transcript
                            .as_deref()
                            .is_none_or(|t| hook::mentions(t, &p.token()))))
                .then(|| ledger.present_again())
                .flatten()
            }
            (None, _) => None,
        };
        match again {
            Some(pr) => {
                // Exactly the wakes its token acknowledges.
                let k = local
                    .wakes
                    .iter()
                    .take_while(|(_, e)| *e <= pr.end.local)
                    .count();
                let c = candidate(home, cfg, &local, k, &hosts, &rows, notes_since, now);
                (Some(pr), c.packet, c.more)
            }
            None if waiting => return Ok(None),
            None => (None, packet::build(&rows, &[], now), 0),
        }
    };
    ledger.save(home)?;
    if let Some(pr) = presented {
        p.token = Some(pr.token());
        p.shown = pr.shown;
        p.ack = Some(format!("fm wake --ack {}", pr.token()));
        p.more_wakes = more;
    }
    p.warnings.append(&mut hosts.warnings);
    p.warnings.append(&mut row_warnings);
    Ok(Some(p))
}

/// The status lines `task` wrote at or after `since` (by their `at=`)
/// that none of `events` shows, the newest [`packet::NOTES_MAX`], read
/// from the log's last 16 KiB.
fn notes(
    home: &Home,
    cfg: &Config,
    task: &str,
    since: u64,
    events: &[packet::Event],
) -> Vec<String> {
    let Ok(id) = crate::task_id::TaskId::parse(task) else {
        return Vec::new();
    };
    let Ok(Some((bytes, _, _))) = crate::fsx::read_from(
        &home.status(&id),
        crate::fsx::Start::Tail(16 * 1024),
        16 * 1024,
    ) else {
        return Vec::new();
    };
    let paused = &cfg.brief.paused_verb;
    let mut out: Vec<String> = crate::fsx::complete_lines(&bytes)
        .split(|&b| b == b'\n')
        .filter_map(|raw| match crate::status::parse_line(raw, paused) {
            crate::status::Parsed::Line(l) if l.at.is_some_and(|at| at >= since) => {
                let text = packet::one_line(&l.text);
                (!events.iter().any(|e| e.text == text)).then(|| format!("{}: {text}", l.verb))
            }
            _ => None,
        })
        .collect();
    let extra = out.len().saturating_sub(packet::NOTES_MAX);
    out.drain(..extra);
    out
}

/// The newest packet's number and showings, for [`Ask::Due`]'s `since`.
pub fn newest(home: &Home) -> Result<Option<(u64, u32)>> {
    Ok(Ledger::load(home)?.last().map(|p| (p.n, p.shown)))
}

/// Acknowledges the packet `token` names (`fm wake --ack`).
pub fn ack(home: &Home, token: &str) -> Result<Acked> {
    let Some(n) = ledger::parse_token(token) else {
        return Err(crate::Error::Usage(format!(
            "not a wake token: {:?} (a token reads w<number>, as the packet's ack line gives it)",
            crate::output::sanitize(token)
        )));
    };
    let _guard = ledger::lock(home)?;
    let mut ledger = Ledger::load(home)?;
    let got = ledger.ack(n);
    if matches!(got, Acked::Moved(_)) {
        ledger.save(home)?;
    }
    Ok(got)
}

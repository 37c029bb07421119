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
use ledger::{Acked, Ledger, Position, Presented};
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

/// The wakes past a position: the local ones (at most [`MAX_WAKES`],
/// each with the offset past it) and every host's, with where they end.
struct News {
    local: Vec<(crate::wakes::Wake, u64)>,
    /// Where the local log's complete lines end.
    local_end: u64,
    /// Local wakes past [`MAX_WAKES`].
    beyond: usize,
    hosts: Vec<Merged>,
    host_ends: std::collections::BTreeMap<String, u64>,
    /// The local log was shorter than the cursor (replaced): read from 0.
    reset: bool,
    warnings: Vec<String>,
}

impl News {
    fn is_empty(&self) -> bool {
        self.local.is_empty() && self.hosts.is_empty()
    }

    /// The first `k` local wakes and every host's, in time order, where
    /// they end, and how many local wakes are left for later.
    fn take(&self, k: usize) -> (Vec<Merged>, Position, usize) {
        let k = k.min(self.local.len());
        let local_end = if k < self.local.len() {
            self.local[k - 1].1
        } else {
            self.local_end
        };
        let mut all: Vec<Merged> = self.local[..k]
            .iter()
            .map(|(w, _)| Merged {
                wake: w.clone(),
                host: None,
            })
            .collect();
        all.extend(self.hosts.iter().map(|m| Merged {
            wake: m.wake.clone(),
            host: m.host.clone(),
        }));
        all.sort_by_key(|m| m.wake.epoch);
        let end = Position {
            local: local_end,
            hosts: self.host_ends.clone(),
        };
        (all, end, self.local.len() - k + self.beyond)
    }
}

fn news(home: &Home, cfg: &Config, from: &Position) -> Result<News> {
    let crate::wakes::ReadEach {
        wakes: mut local,
        started,
        end: local_end,
    } = crate::wakes::read_since_each(home, from.local)?;
    let beyond = local.len().saturating_sub(MAX_WAKES);
    let local_end = if beyond > 0 {
        local[MAX_WAKES - 1].1
    } else {
        local_end
    };
    local.truncate(MAX_WAKES);
    let mut warnings = Vec::new();
    let (hosts, host_ends) = match crate::remote::wakes::gather_past(home, cfg, from.hosts.clone())
    {
        Some(mut g) => {
            warnings.append(&mut g.warnings);
            let ends = g.cursors().clone();
            (g.merge(Vec::new()), ends)
        }
        None => (Vec::new(), from.hosts.clone()),
    };
    Ok(News {
        local,
        local_end,
        beyond,
        hosts,
        host_ends,
        reset: started < from.local,
        warnings,
    })
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
        let last_try = attempt == OPTIMISTIC;
        let early = if last_try {
            Some(ledger::lock(home)?)
        } else {
            None
        };
        if superseded(home, &ask) {
            return Ok(None);
        }
        let seen = Ledger::load(home)?;
        let news = news(home, cfg, &seen.cursor)?;
        if waiting && news.is_empty() && !news.reset {
            return Ok(None);
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
        let got = decide(home, cfg, ledger, news, rows, &ask, now);
        drop(guard);
        return got;
    }
    Ok(None)
}

/// [`take`]'s decision, under the ledger's lock, over what was read.
fn decide(
    home: &Home,
    cfg: &Config,
    mut ledger: Ledger,
    mut news: News,
    (rows, mut row_warnings): (Vec<crate::crew_state::Row>, Vec<String>),
    ask: &Ask,
    now: u64,
) -> Result<Option<Packet>> {
    let waiting = matches!(ask, Ask::Due { .. });
    if news.reset {
        // The log was replaced: what the ledger knew of it is void.
        ledger.cursor.local = 0;
        for p in &mut ledger.packets {
            p.acked = true;
        }
        ledger.save(home)?;
    }
    if waiting && news.is_empty() {
        return Ok(None);
    }
    // As many local wakes as fit the budget (at least one).
    let mut k = news.local.len();
    let (mut wakes, mut end, mut more) = news.take(k);
    let mut p = packet::build(&rows, &wakes, now);
    while k > 1 && p.text().len() > BUDGET {
        k = k * 3 / 4;
        (wakes, end, more) = news.take(k);
        p = packet::build(&rows, &wakes, now);
    }
    let covered = ledger.covered();
    let last = ledger.last().cloned();
    let session = match ask {
        Ask::Due { session, .. } => session.clone(),
        Ask::Show => None,
    };
    let presented: Option<Presented> = if fresh(&wakes, &end, &covered) {
        Some(ledger.present_new(end, now, session))
    } else {
        match (&last, ask) {
            (Some(p), _) if p.acked || wakes.is_empty() => None,
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
        }
    };
    if presented.is_none() && waiting {
        return Ok(None);
    }
    ledger.save(home)?;
    let mut p = match &presented {
        Some(_) => p,
        None => packet::build(&rows, &[], now),
    };
    let since = ledger
        .packets
        .iter()
        .rev()
        .find(|q| q.acked)
        .map_or(0, |q| q.epoch);
    for it in p.items.iter_mut().filter(|it| it.host.is_none()) {
        it.notes = notes(home, cfg, &it.task, since, &it.events);
    }
    if let Some(pr) = presented {
        p.token = Some(pr.token());
        p.shown = pr.shown;
        p.ack = Some(format!("fm wake --ack {}", pr.token()));
        p.more_wakes = more;
    }
    p.warnings.append(&mut news.warnings);
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

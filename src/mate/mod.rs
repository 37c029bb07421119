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
    /// newest packet was shown once before `since` and never acknowledged;
    /// and only while `waiter` (when given) is still the home's waiter.
    Due {
        since: Option<(u64, u32)>,
        waiter: Option<String>,
    },
}

/// The wakes past a position: the local ones (at most [`MAX_WAKES`]) and
/// every host's, merged in time order, with where they end.
struct News {
    wakes: Vec<Merged>,
    end: Position,
    more: usize,
    /// The local log was shorter than the cursor (replaced): read from 0.
    reset: bool,
    warnings: Vec<String>,
}

fn news(home: &Home, cfg: &Config, from: &Position) -> Result<News> {
    let crate::wakes::ReadEach {
        wakes: each,
        started,
        end: read_end,
    } = crate::wakes::read_since_each(home, from.local)?;
    let more = each.len().saturating_sub(MAX_WAKES);
    let local_end = if more > 0 {
        each[MAX_WAKES - 1].1
    } else {
        read_end
    };
    let local: Vec<_> = each.into_iter().take(MAX_WAKES).map(|(w, _)| w).collect();
    let mut end = Position {
        local: local_end,
        hosts: from.hosts.clone(),
    };
    let mut warnings = Vec::new();
    let wakes = match crate::remote::wakes::gather_past(home, cfg, from.hosts.clone()) {
        Some(mut g) => {
            warnings.append(&mut g.warnings);
            end.hosts.clone_from(g.cursors());
            g.merge(local)
        }
        None => local
            .into_iter()
            .map(|wake| Merged { wake, host: None })
            .collect(),
    };
    Ok(News {
        wakes,
        end,
        more,
        reset: started < from.local,
        warnings,
    })
}

/// Whether `news` holds a wake past `covered` (a feed's end beyond it
/// with wakes in that feed).
fn fresh(news: &News, covered: &Position) -> bool {
    news.wakes.iter().any(|m| match &m.host {
        None => news.end.local > covered.local,
        Some(h) => {
            news.end.hosts.get(h).copied().unwrap_or(0) > covered.hosts.get(h).copied().unwrap_or(0)
        }
    })
}

/// Presents a packet when one is due (always, for [`Ask::Show`]):
/// records it in the ledger and builds it over the fleet as it is now.
/// `None` when [`Ask::Due`] finds nothing due.
pub fn take(home: &Home, cfg: &Config, ask: Ask, now: u64) -> Result<Option<Packet>> {
    let guard = ledger::lock(home)?;
    if let Ask::Due {
        waiter: Some(w), ..
    } = &ask
        && !wait::is_current(home, w)
    {
        return Ok(None);
    }
    let mut ledger = Ledger::load(home)?;
    let mut news = news(home, cfg, &ledger.cursor)?;
    if news.reset {
        // The log was replaced: what the ledger knew of it is void.
        ledger.cursor.local = 0;
        for p in &mut ledger.packets {
            p.acked = true;
        }
    }
    let covered = ledger.covered();
    let last = ledger.last().cloned();
    let presented: Option<Presented> = if fresh(&news, &covered) {
        Some(ledger.present_new(news.end.clone(), now))
    } else {
        match (&last, &ask) {
            (Some(p), _) if p.acked || news.wakes.is_empty() => None,
            (Some(_), Ask::Show) => ledger.present_again(),
            (Some(p), Ask::Due { since, .. }) => {
                // Shown once, before this waiter began, and left unacknowledged:
                // the lead stopped mid-wake. Once more, then only news.
                (p.shown < 2 && *since == Some((p.n, p.shown)))
                    .then(|| ledger.present_again())
                    .flatten()
            }
            (None, _) => None,
        }
    };
    if presented.is_none() && matches!(ask, Ask::Due { .. }) {
        if news.reset {
            ledger.save(home)?;
        }
        return Ok(None);
    }
    ledger.save(home)?;
    drop(guard);
    let (rows, mut row_warnings) = crate::route::fleet::fleet(home, cfg, now)?;
    let wakes = if presented.is_some() {
        std::mem::take(&mut news.wakes)
    } else {
        Vec::new()
    };
    let mut p = packet::build(&rows, &wakes, now);
    if let Some(pr) = presented {
        p.token = Some(pr.token());
        p.shown = pr.shown;
        p.ack = Some(format!("fm wake --ack {}", pr.token()));
        p.more_wakes = news.more;
    }
    p.warnings.append(&mut news.warnings);
    p.warnings.append(&mut row_warnings);
    Ok(Some(p))
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

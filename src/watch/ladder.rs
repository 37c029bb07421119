//! The re-ring ladder (docs/spec/watch.md#ladder) as a pure function: given a task's
//! pending records, its ladder files, what tmux says about its pane, the
//! time and the config, [`decide`] returns the one thing to do next.
//!
//! Only the lowest-numbered pending record that is not fire-and-forget is
//! tracked; fire-and-forget records before it are skipped, never hide it.
//! The ladder always ends: every ring attempt counts whatever its outcome,
//! and after `max_rings` of them comes one escalation, then quiet.
//!
//! A doorbell held back because the agent was busy (`.ring-owed`) is rung
//! as soon as the agent is idle, grace or no grace: the message was queued
//! during a turn and the turn's end is when the agent can read it. That
//! ring is not one of the ladder's (it spends no count): it is the ring the
//! send could not make.

use serde::Serialize;

use crate::config::WatchCfg;
#[cfg(test)]
use crate::inbox::ladder_files::Owed;
pub(crate) use crate::inbox::ladder_files::{LadderFiles, RingState};

/// A pending record as the ladder sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pending {
    pub seq: u64,
    /// When it was queued (Unix seconds).
    pub at: u64,
    pub fire_and_forget: bool,
}

/// What tmux and the busy record say about the task's pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PaneFacts {
    /// Meta records no pane: rings are attempted (outcome `no-pane`) and
    /// counted like any other.
    NoPane,
    /// Meta names a pane tmux no longer has.
    Gone,
    /// The pane exists but its agent is not alive (docs/spec/harness.md#liveness).
    Dead,
    Alive {
        busy: bool,
    },
}

/// The next step for one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub(crate) enum Action {
    /// Nothing is pending: remove the ladder files.
    Clear,
    /// Nothing to do now; `until` is when something may become due.
    Wait { until: Option<u64> },
    /// Ring the doorbell; this is attempt `count`.
    Ring { seq: u64, count: u64 },
    /// Ring the doorbell a busy agent was owed (spends no count).
    RingOwed { seq: u64 },
    /// `max_rings` attempts went unanswered: one `escalation` wake.
    Escalate { seq: u64, rings: u64 },
    /// Busy too long: one `overdue` wake.
    Overdue { seq: u64, age: u64 },
    /// The agent is gone: one `dead-agent` wake, nothing typed.
    DeadAgent { seq: u64, gone: bool },
    /// Already escalated for this record.
    Quiet { seq: u64 },
    /// The record is stamped in the future (a clock stepped back, a
    /// hand-made stamp): note now as the ladder's start in `.ring-state`
    /// (keeping the rings already spent), so its grace counts from now.
    Restamp { seq: u64, count: u64 },
}

/// The record the ladder tracks: the lowest pending one that is not
/// fire-and-forget.
pub(crate) fn target(pending: &[Pending]) -> Option<&Pending> {
    pending
        .iter()
        .filter(|p| !p.fire_and_forget)
        .min_by_key(|p| p.seq)
}

/// When the ladder counts `t` as queued. Its stamp, unless that lies more
/// than a grace period in the future (a clock stepped back, a hand-made
/// stamp): taken at its word, such a stamp would hold every ring back
/// until the clock reached it. Then it counts from when the ladder first
/// saw it, which [`Action::Restamp`] keeps in `.ring-state` (`None` until
/// that is noted); once rings were spent, from one grace period per ring
/// before the last. A nearer stamp is waited out, as the ladder always
/// did (at most two grace periods).
fn queued_at(t: &Pending, files: &LadderFiles, now: u64, cfg: &WatchCfg) -> Option<u64> {
    if t.at <= now.saturating_add(cfg.grace_secs) {
        return Some(t.at);
    }
    files
        .ring
        .filter(|r| r.seq == t.seq && r.last <= now)
        .map(|r| {
            r.last
                .saturating_sub(cfg.grace_secs.saturating_mul(r.count))
        })
}

/// Whether [`decide`] could depend on the pane: lets a pass ask tmux only
/// when some task needs it.
pub(crate) fn needs_pane(
    pending: &[Pending],
    files: &LadderFiles,
    now: u64,
    cfg: &WatchCfg,
) -> bool {
    target(pending).is_some_and(|t| {
        let Some(at) = queued_at(t, files, now, cfg) else {
            return false;
        };
        let (count, last) = files
            .ring
            .filter(|r| r.seq == t.seq)
            .map_or((0, 0), |r| (r.count, r.last));
        let ladder_due = now.saturating_sub(at) >= cfg.grace_secs
            && (count >= cfg.max_rings || now.saturating_sub(last) >= cfg.grace_secs || last > now);
        files.escalated != Some(t.seq) && (owed_to(files, t) || ladder_due)
    })
}

/// Whether the owed ring belongs to `t`: it was held back while `t` (or a
/// record after it) was pending. One held back for records acknowledged
/// since is stale: the next message waits for its grace as any does.
pub(crate) fn owed_to(files: &LadderFiles, t: &Pending) -> bool {
    files.owed.is_some_and(|o| o.covers(t.seq))
}

/// The ladder (docs/spec/watch.md#ladder).
pub(crate) fn decide(
    pending: &[Pending],
    files: &LadderFiles,
    pane: PaneFacts,
    now: u64,
    cfg: &WatchCfg,
) -> Action {
    let Some(t) = target(pending) else {
        return if files.is_empty() {
            Action::Wait { until: None }
        } else {
            Action::Clear
        };
    };
    if files.escalated == Some(t.seq) {
        return Action::Quiet { seq: t.seq };
    }
    let Some(at) = queued_at(t, files, now, cfg) else {
        return Action::Restamp {
            seq: t.seq,
            count: files.ring.filter(|r| r.seq == t.seq).map_or(0, |r| r.count),
        };
    };
    let age = now.saturating_sub(at);
    if owed_to(files, t) {
        match pane {
            PaneFacts::Alive { busy: false } => return Action::RingOwed { seq: t.seq },
            PaneFacts::Alive { busy: true } if age <= cfg.unhandled_max_secs => {
                return Action::Wait {
                    until: Some(at + cfg.unhandled_max_secs + 1),
                };
            }
            // Busy too long, or no agent to owe it to: the ladder's rules.
            _ => {}
        }
    }
    if age < cfg.grace_secs {
        return Action::Wait {
            until: Some(at + cfg.grace_secs),
        };
    }
    match pane {
        PaneFacts::Gone => {
            return Action::DeadAgent {
                seq: t.seq,
                gone: true,
            };
        }
        PaneFacts::Dead => {
            return Action::DeadAgent {
                seq: t.seq,
                gone: false,
            };
        }
        PaneFacts::Alive { busy: true } if age > cfg.unhandled_max_secs => {
            return Action::Overdue { seq: t.seq, age };
        }
        PaneFacts::Alive { busy: true } => {
            return Action::Wait {
                until: Some(at + cfg.unhandled_max_secs + 1),
            };
        }
        PaneFacts::Alive { busy: false } | PaneFacts::NoPane => {}
    }
    let (count, last) = match files.ring {
        Some(r) if r.seq == t.seq => (r.count, r.last),
        _ => (0, 0),
    };
    // docs/spec/watch.md#ladder: the count check (step 7) precedes the grace wait (step 8),
    // so the escalation comes at the first pass after the last ring.
    if count >= cfg.max_rings {
        return Action::Escalate {
            seq: t.seq,
            rings: count,
        };
    }
    if now.saturating_sub(last) < cfg.grace_secs && last <= now {
        return Action::Wait {
            until: Some(last + cfg.grace_secs),
        };
    }
    Action::Ring {
        seq: t.seq,
        count: count + 1,
    }
}

#[cfg(test)]
#[path = "ladder_tests.rs"]
mod tests;

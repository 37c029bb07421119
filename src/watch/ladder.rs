//! The re-ring ladder (SPEC §6.2) as a pure function: given a task's
//! pending records, its ladder files, what tmux says about its pane, the
//! time and the config, [`decide`] returns the one thing to do next.
//!
//! Only the lowest-numbered pending record that is not fire-and-forget is
//! tracked; fire-and-forget records before it are skipped, never hide it.
//! The ladder always ends: every ring attempt counts whatever its outcome,
//! and after `max_rings` of them comes one escalation, then quiet.

use serde::Serialize;

use crate::config::WatchCfg;

/// A pending record as the ladder sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pending {
    pub seq: u64,
    /// When it was queued (Unix seconds).
    pub at: u64,
    pub fire_and_forget: bool,
}

/// `.ring-state`: `<NNN.msg>\t<count>\t<last_epoch>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingState {
    pub seq: u64,
    pub count: u64,
    pub last: u64,
}

/// The contents of a task's ladder files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LadderFiles {
    pub(crate) ring: Option<RingState>,
    /// The record `.escalated` names.
    pub(crate) escalated: Option<u64>,
}

impl LadderFiles {
    pub(crate) fn is_empty(&self) -> bool {
        self.ring.is_none() && self.escalated.is_none()
    }
}

/// What tmux and the busy record say about the task's pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PaneFacts {
    /// Meta records no pane: rings are attempted (outcome `no-pane`) and
    /// counted like any other.
    NoPane,
    /// Meta names a pane tmux no longer has.
    Gone,
    /// The pane exists but its agent is not alive (SPEC §10.2).
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
    /// `max_rings` attempts went unanswered: one `escalation` wake.
    Escalate { seq: u64, rings: u64 },
    /// Busy too long: one `overdue` wake.
    Overdue { seq: u64, age: u64 },
    /// The agent is gone: one `dead-agent` wake, nothing typed.
    DeadAgent { seq: u64, gone: bool },
    /// Already escalated for this record.
    Quiet { seq: u64 },
}

/// The record the ladder tracks: the lowest pending one that is not
/// fire-and-forget.
pub(crate) fn target(pending: &[Pending]) -> Option<&Pending> {
    pending
        .iter()
        .filter(|p| !p.fire_and_forget)
        .min_by_key(|p| p.seq)
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
        let (count, last) = files
            .ring
            .filter(|r| r.seq == t.seq)
            .map_or((0, 0), |r| (r.count, r.last));
        files.escalated != Some(t.seq)
            && now.saturating_sub(t.at) >= cfg.grace_secs
            && (count >= cfg.max_rings || now.saturating_sub(last) >= cfg.grace_secs || last > now)
    })
}

/// The ladder (SPEC §6.2).
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
    let age = now.saturating_sub(t.at);
    if age < cfg.grace_secs {
        return Action::Wait {
            until: Some(t.at + cfg.grace_secs),
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
                until: Some(t.at + cfg.unhandled_max_secs + 1),
            };
        }
        PaneFacts::Alive { busy: false } | PaneFacts::NoPane => {}
    }
    let (count, last) = match files.ring {
        Some(r) if r.seq == t.seq => (r.count, r.last),
        _ => (0, 0),
    };
    // SPEC §6.2: the count check (step 5) precedes the grace wait (step 6),
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
mod tests {
    use super::*;

    fn cfg() -> WatchCfg {
        crate::config::Config::default().watch
    }

    fn rec(seq: u64, at: u64) -> Pending {
        Pending {
            seq,
            at,
            fire_and_forget: false,
        }
    }

    const ALIVE: PaneFacts = PaneFacts::Alive { busy: false };

    /// Runs the ladder forward second by second, applying its actions the
    /// way the executor does, and returns what happened.
    fn simulate(pending: &[Pending], pane: PaneFacts, until: u64) -> Vec<(u64, Action)> {
        let cfg = cfg();
        let mut files = LadderFiles::default();
        let mut out = Vec::new();
        for now in 0..until {
            let a = decide(pending, &files, pane, now, &cfg);
            match a {
                Action::Ring { seq, count } => {
                    files.ring = Some(RingState {
                        seq,
                        count,
                        last: now,
                    });
                }
                Action::Escalate { seq, .. }
                | Action::Overdue { seq, .. }
                | Action::DeadAgent { seq, .. } => files.escalated = Some(seq),
                Action::Clear => files = LadderFiles::default(),
                Action::Wait { .. } | Action::Quiet { .. } => continue,
            }
            out.push((now, a));
        }
        out
    }

    #[test]
    fn defaults_ring_at_90_180_270_then_escalate_at_the_next_pass() {
        // One pass per second: the escalation follows the third ring at
        // the very next pass (count check before the grace wait).
        let got = simulate(&[rec(1, 0)], ALIVE, 2000);
        let times: Vec<u64> = got.iter().map(|(t, _)| *t).collect();
        assert_eq!(times, vec![90, 180, 270, 271]);
        assert!(matches!(got[3].1, Action::Escalate { seq: 1, rings: 3 }));
    }

    #[test]
    fn escalation_needs_no_further_grace_after_the_last_ring() {
        let files = LadderFiles {
            ring: Some(RingState {
                seq: 1,
                count: 3,
                last: 270,
            }),
            escalated: None,
        };
        let cfg = cfg();
        assert!(needs_pane(&[rec(1, 0)], &files, 285, &cfg));
        assert_eq!(
            decide(&[rec(1, 0)], &files, ALIVE, 285, &cfg),
            Action::Escalate { seq: 1, rings: 3 }
        );
        // A busy worker is still not escalated before unhandled_max_secs.
        assert_eq!(
            decide(
                &[rec(1, 0)],
                &files,
                PaneFacts::Alive { busy: true },
                285,
                &cfg
            ),
            Action::Wait { until: Some(901) }
        );
    }

    #[test]
    fn fire_and_forget_never_rings_and_never_hides_the_next() {
        let ff = Pending {
            fire_and_forget: true,
            ..rec(1, 0)
        };
        assert!(simulate(&[ff], ALIVE, 2000).is_empty());
        let got = simulate(&[ff, rec(2, 10)], ALIVE, 2000);
        assert!(matches!(got[0].1, Action::Ring { seq: 2, count: 1 }));
        assert_eq!(got.len(), 4);
    }

    #[test]
    fn busy_spends_nothing_then_is_overdue_once() {
        let got = simulate(&[rec(1, 0)], PaneFacts::Alive { busy: true }, 5000);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0], (901, Action::Overdue { seq: 1, age: 901 }));
    }

    #[test]
    fn dead_or_gone_agent_wakes_once_without_ringing() {
        for (pane, gone) in [(PaneFacts::Dead, false), (PaneFacts::Gone, true)] {
            let got = simulate(&[rec(1, 0)], pane, 5000);
            assert_eq!(got, vec![(90, Action::DeadAgent { seq: 1, gone })]);
        }
    }

    #[test]
    fn another_records_state_starts_a_fresh_ladder() {
        let files = LadderFiles {
            ring: Some(RingState {
                seq: 1,
                count: 3,
                last: 50,
            }),
            escalated: Some(1),
        };
        let a = decide(&[rec(2, 0)], &files, ALIVE, 100, &cfg());
        assert_eq!(a, Action::Ring { seq: 2, count: 1 });
        assert_eq!(decide(&[], &files, ALIVE, 100, &cfg()), Action::Clear);
        assert_eq!(
            decide(&[], &LadderFiles::default(), ALIVE, 100, &cfg()),
            Action::Wait { until: None }
        );
    }

    #[test]
    fn a_restart_continues_the_count() {
        let files = LadderFiles {
            ring: Some(RingState {
                seq: 1,
                count: 2,
                last: 180,
            }),
            escalated: None,
        };
        assert_eq!(
            decide(&[rec(1, 0)], &files, ALIVE, 200, &cfg()),
            Action::Wait { until: Some(270) }
        );
        assert_eq!(
            decide(&[rec(1, 0)], &files, ALIVE, 270, &cfg()),
            Action::Ring { seq: 1, count: 3 }
        );
    }

    proptest::proptest! {
        #[test]
        fn the_ladder_always_ends(grace in 0u64..50, max in 0u64..6, busy: bool, n in 1usize..4) {
            let cfg = WatchCfg { grace_secs: grace, max_rings: max, unhandled_max_secs: 300, ..cfg() };
            let pending: Vec<Pending> = (1..=n as u64).map(|s| rec(s, 0)).collect();
            let mut files = LadderFiles::default();
            let mut rings = 0;
            let mut wakes = 0;
            for now in 0..(grace + 1) * (max + 2) + 400 {
                match decide(&pending, &files, PaneFacts::Alive { busy }, now, &cfg) {
                    Action::Ring { seq, count } => {
                        rings += 1;
                        files.ring = Some(RingState { seq, count, last: now });
                    }
                    Action::Escalate { seq, .. } | Action::Overdue { seq, .. } | Action::DeadAgent { seq, .. } => {
                        wakes += 1;
                        files.escalated = Some(seq);
                    }
                    _ => {}
                }
            }
            proptest::prop_assert_eq!(wakes, 1);
            proptest::prop_assert_eq!(rings, if busy { 0 } else { max });
        }
    }
}

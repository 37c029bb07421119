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
            Action::Ring { seq, count } | Action::Restamp { seq, count } => {
                files.ring = Some(RingState {
                    seq,
                    count,
                    last: now,
                });
            }
            Action::RingOwed { .. } => files.owed = None,
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

/// A record stamped in the future (the clock stepped back) is taken as
/// queued when the ladder first sees it: the whole ladder follows, it
/// is never held back until the clock reaches the stamp.
#[test]
fn a_future_stamp_counts_from_when_the_ladder_first_sees_it() {
    let got = simulate(&[rec(1, 1_000_000)], ALIVE, 2000);
    let times: Vec<u64> = got.iter().map(|(t, _)| *t).collect();
    assert_eq!(times, vec![0, 90, 180, 270, 271], "{got:?}");
    assert_eq!(got[0].1, Action::Restamp { seq: 1, count: 0 });
    assert!(matches!(got[4].1, Action::Escalate { seq: 1, rings: 3 }));
    // A busy agent is still found overdue, counted from then.
    let busy = PaneFacts::Alive { busy: true };
    let got = simulate(&[rec(1, u64::MAX)], busy, 2000);
    assert!(
        matches!(
            got.last(),
            Some((901, Action::Overdue { seq: 1, age: 901 }))
        ),
        "{got:?}"
    );
    // Rings already spent are kept when a clock step makes their
    // ring state lie in the future too.
    let files = LadderFiles {
        ring: Some(RingState {
            seq: 1,
            count: 2,
            last: 5_000,
        }),
        ..LadderFiles::default()
    };
    let a = decide(&[rec(1, 4_000)], &files, ALIVE, 100, &cfg());
    assert_eq!(a, Action::Restamp { seq: 1, count: 2 });
    assert!(!needs_pane(&[rec(1, 4_000)], &files, 100, &cfg()));
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
        owed: None,
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
        owed: None,
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
        owed: None,
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

#[test]
fn an_owed_ring_waits_for_the_turn_to_end_then_rings_at_once() {
    let cfg = cfg();
    let owed = LadderFiles {
        owed: Some(Owed {
            at: 5,
            through: Some(1),
        }),
        ..LadderFiles::default()
    };
    let busy = PaneFacts::Alive { busy: true };
    // Younger than grace and busy: nothing to do yet, but tmux is asked.
    assert!(needs_pane(&[rec(1, 5)], &owed, 10, &cfg));
    assert_eq!(
        decide(&[rec(1, 5)], &owed, busy, 10, &cfg),
        Action::Wait { until: Some(906) }
    );
    // Idle again: rung now, not 90 s after the send.
    assert_eq!(
        decide(&[rec(1, 5)], &owed, ALIVE, 11, &cfg),
        Action::RingOwed { seq: 1 }
    );
    // The count it spends is none: the ladder's own rings follow.
    let got = simulate(&[rec(1, 0)], ALIVE, 2000);
    assert_eq!(got.len(), 4);
    // Busy too long is overdue as ever; a dead agent is a dead agent.
    assert_eq!(
        decide(&[rec(1, 0)], &owed, busy, 901, &cfg),
        Action::Overdue { seq: 1, age: 901 }
    );
    assert_eq!(
        decide(&[rec(1, 0)], &owed, PaneFacts::Dead, 90, &cfg),
        Action::DeadAgent {
            seq: 1,
            gone: false
        }
    );
    // Escalated stays quiet; nothing pending clears the owed ring too.
    let esc = LadderFiles {
        escalated: Some(1),
        ..owed
    };
    assert_eq!(
        decide(&[rec(1, 0)], &esc, ALIVE, 95, &cfg),
        Action::Quiet { seq: 1 }
    );
    assert_eq!(decide(&[], &owed, ALIVE, 95, &cfg), Action::Clear);
}

/// An owed ring belongs to the records pending when it was held back:
/// once they are acknowledged, the next message waits for its grace
/// and is rung by the ladder (attempt 1), not at once as attempt 0.
#[test]
fn an_owed_ring_for_acknowledged_records_is_stale() {
    let cfg = cfg();
    let owed = LadderFiles {
        owed: Some(Owed {
            at: 5,
            through: Some(9),
        }),
        ..LadderFiles::default()
    };
    // 010.msg came after: not owed; within its grace, nothing to do.
    assert!(!needs_pane(&[rec(10, 100)], &owed, 101, &cfg));
    assert_eq!(
        decide(&[rec(10, 100)], &owed, ALIVE, 101, &cfg),
        Action::Wait { until: Some(190) }
    );
    assert_eq!(
        decide(&[rec(10, 100)], &owed, ALIVE, 190, &cfg),
        Action::Ring { seq: 10, count: 1 }
    );
    // 009.msg still pending: owed.
    assert_eq!(
        decide(&[rec(9, 100)], &owed, ALIVE, 101, &cfg),
        Action::RingOwed { seq: 9 }
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

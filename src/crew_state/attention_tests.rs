//! The attention model on pure facts: which reason wins, its words, its
//! JSON, and the fleet order.

use super::*;
use crate::crew_state::facts::{Escalation, Gate, RunRecord, WorktreeFact};
use crate::crew_state::{Row, resolve};
use crate::harness::builtin;
use crate::meta::TaskMeta;
use crate::status::Fold;
use crate::task_id::TaskId;

const NOW: u64 = 10_000;

fn live(id: &str) -> Facts {
    let mut f = Facts::empty(TaskId::parse(id).unwrap(), NOW);
    f.meta = Some(TaskMeta::parse(
        b"kind=ship\nworktree=/w\nharness=claude\npane=%1\nrepo=shop\n",
    ));
    f.worktree = WorktreeFact::Present;
    f.profile = builtin("claude").map(std::sync::Arc::new);
    f.pane = PaneFact::Present {
        dead: false,
        command: "claude".into(),
    };
    f.screen = Some("> \n".into());
    f
}

fn log(f: &mut Facts, text: &str) {
    f.fold = Fold::from_bytes(text.as_bytes(), "paused");
    f.log_mtime = Some(NOW - 5);
    f.last_line_at = Some(NOW - 5);
}

fn att(f: &Facts) -> Option<Attention> {
    of(f, &resolve(f))
}

fn reason(f: &Facts) -> String {
    att(f).map(|a| a.reason()).unwrap_or_default()
}

#[test]
fn a_decision_names_its_key_and_question() {
    let mut f = live("t1");
    log(
        &mut f,
        "needs-decision [at=9000] [key=schema]: postgres or sqlite?\n",
    );
    assert_eq!(
        reason(&f),
        "needs decision: schema \u{2014} postgres or sqlite?"
    );
    assert_eq!(att(&f).unwrap().since(), Some(9000));
    log(&mut f, "needs-decision: which?\n");
    assert_eq!(
        reason(&f),
        "needs decision: which?",
        "no key word for default"
    );
    log(&mut f, "blocked [key=net]: no network\n");
    assert_eq!(reason(&f), "blocked: net \u{2014} no network");
    log(
        &mut f,
        "needs-decision [key=db]: which db?\nresolved [key=db]: sqlite\nworking: on it\n",
    );
    assert_eq!(att(&f), None, "a resolved decision needs nobody");
}

#[test]
fn an_escalated_message_on_an_idle_worker() {
    let mut f = live("t1");
    f.inbox_pending = 1;
    assert_eq!(att(&f), None, "pending but not escalated");
    f.escalated = Some(Escalation {
        record: "001.msg".into(),
        rings: 3,
        at: Some(9500),
    });
    assert_eq!(resolve(&f).state.as_str(), "idle");
    assert_eq!(reason(&f), "1 message unread after 3 rings");
    f.inbox_pending = 2;
    f.escalated.as_mut().unwrap().rings = 1;
    assert_eq!(reason(&f), "2 messages unread after 1 ring");
    // A decision is more pressing than the escalation.
    log(&mut f, "needs-decision [key=k]: q\n");
    assert_eq!(att(&f).unwrap().kind(), "decision");
}

#[test]
fn a_dead_agent_wins_over_everything_else() {
    let mut f = live("t1");
    log(&mut f, "needs-decision [key=k]: q\n");
    f.pane = PaneFact::Gone;
    assert_eq!(reason(&f), "dead agent: pane gone");
    f.pane = PaneFact::Present {
        dead: false,
        command: "bash".into(),
    };
    f.inbox_pending = 2;
    assert_eq!(reason(&f), "dead agent: agent exited, 2 messages unread");
    // A dead agent that said done is done, not dead.
    log(&mut f, "done [at=9990]: shipped\n");
    f.gate = Some(Gate::Accepted);
    assert_eq!(att(&f), None);
}

#[test]
fn a_dialog_comes_before_a_decision() {
    let mut f = live("t1");
    log(&mut f, "needs-decision [key=k]: q\n");
    f.dialog = Some("trust this folder?".into());
    assert_eq!(reason(&f), "waiting in a dialog: trust this folder?");
    assert_eq!(att(&f).unwrap().kind(), "dialog");
}

#[test]
fn refused_gates_parked_runs_and_failures() {
    let mut f = live("t1");
    log(&mut f, "done [at=9990]: ready\n");
    f.gate = Some(Gate::Refused("head abc is not pushed".into()));
    assert_eq!(reason(&f), "blocked: head abc is not pushed");
    assert_eq!(att(&f).unwrap().label(), "blocked (gate)");
    let mut f = live("t1");
    log(&mut f, "failed [at=9000]: gave up\n");
    assert_eq!(reason(&f), "failed: gave up");
    assert_eq!(att(&f).unwrap().since(), Some(9000));
    let mut f = live("t1");
    f.run = Some(RunRecord::parse(
        b"status=awaiting_approval\nbranch=fm/t1\nhead=aaaa\ngate=review\nfindings=2\n",
        Some(NOW - 1),
    ));
    f.git = Some(crate::crew_state::facts::GitFacts {
        branch: Some("fm/t1".into()),
        head: "aaaa".into(),
    });
    assert_eq!(
        reason(&f),
        "awaiting approval: parked at review: 2 findings"
    );
    // The run moved past an older decision: the run speaks, not the log.
    log(&mut f, "needs-decision [at=9000] [key=db]: which db?\n");
    assert_eq!(att(&f).unwrap().kind(), "approval");
    // A decision raised after the run was written stands.
    log(&mut f, "needs-decision [at=9999] [key=db]: which db?\n");
    assert_eq!(att(&f).unwrap().kind(), "decision");
}

#[test]
fn nobody_is_needed_for_unknown_working_or_done() {
    let f = Facts::empty(TaskId::parse("ghost").unwrap(), NOW);
    assert_eq!(att(&f), None);
    let mut f = live("t1");
    log(&mut f, "working: typing\n");
    assert_eq!(att(&f), None);
    f.error = Some("unreadable".into());
    assert_eq!(att(&f), None);
    // A torn-down task's leftovers ask nothing.
    let mut f = live("t1");
    f.worktree = WorktreeFact::Missing;
    f.inbox_pending = 1;
    f.escalated = Some(Escalation {
        record: "001.msg".into(),
        rings: 3,
        at: None,
    });
    assert_eq!(att(&f), None);
    // Rule 7 (no pane, no log) still shows an escalated message.
    let mut f = Facts::empty(TaskId::parse("t2").unwrap(), NOW);
    f.meta = Some(TaskMeta::parse(b"kind=secondmate\n"));
    f.inbox_pending = 1;
    f.escalated = Some(Escalation {
        record: "001.msg".into(),
        rings: 2,
        at: None,
    });
    assert_eq!(resolve(&f).state.as_str(), "unknown");
    assert_eq!(reason(&f), "1 message unread after 2 rings");
}

#[test]
fn json_carries_kind_reason_iso_time_and_fields() {
    let a = Attention::Decision {
        key: "db".into(),
        text: "which?".into(),
        at: Some(1_796_030_102),
    };
    assert_eq!(
        serde_json::to_value(&a).unwrap(),
        serde_json::json!({
            "kind": "decision",
            "reason": "needs decision: db \u{2014} which?",
            "since": "2026-11-30T09:15:02Z",
            "key": "db",
            "text": "which?",
        })
    );
    let a = Attention::Escalated {
        record: "002.msg".into(),
        unread: 1,
        rings: 3,
        at: None,
    };
    let v = serde_json::to_value(&a).unwrap();
    assert_eq!(v["since"], serde_json::Value::Null);
    assert_eq!(
        (v["rings"].as_u64(), v["unread"].as_u64()),
        (Some(3), Some(1))
    );
}

#[test]
fn the_fleet_sorts_attention_first_then_by_wait() {
    let cfg = crate::config::Config::default();
    let mut rows = Vec::new();
    let mut add = |id: &str, edit: &dyn Fn(&mut Facts)| {
        let mut f = live(id);
        edit(&mut f);
        rows.push(Row::from_facts(&f, &cfg));
    };
    add("a-working", &|f| log(f, "working [at=9990]: typing\n"));
    add("b-done", &|f| {
        log(f, "done [at=9000]: ok\n");
        f.gate = Some(Gate::Accepted);
    });
    add("c-failed", &|f| log(f, "failed [at=9000]: no\n"));
    add("d-new-decision", &|f| {
        log(f, "needs-decision [at=9900] [key=x]: x?\n");
    });
    add("e-old-decision", &|f| {
        log(f, "needs-decision [at=9100] [key=y]: y?\n");
    });
    add("f-dead", &|f| f.pane = PaneFact::Gone);
    add("g-idle", &|_| {});
    add("h-escalated", &|f| {
        f.inbox_pending = 1;
        f.escalated = Some(Escalation {
            record: "001.msg".into(),
            rings: 3,
            at: Some(9800),
        });
    });
    crate::crew_state::sort_by_urgency(&mut rows);
    let order: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        order,
        [
            "e-old-decision",
            "d-new-decision",
            "h-escalated",
            "f-dead",
            "c-failed",
            "a-working",
            "g-idle",
            "b-done"
        ]
    );
    assert!(rows[4].urgency().needs_captain());
    assert!(!rows[5].urgency().needs_captain());
    assert_eq!(rows[0].project.as_deref(), Some("shop"));
}

//! Every rule of docs/spec/crew-state.md#resolution on the pure resolver.

use super::*;
use crate::crew_state::facts::{GitFacts, RunRecord, WorktreeFact};
use crate::harness::builtin;
use crate::meta::{Kind, TaskMeta};
use crate::status::Fold;
use crate::status::busy::BusyRecord;
use crate::task_id::TaskId;

const NOW: u64 = 10_000;

fn task(meta: &str) -> Facts {
    let mut f = Facts::empty(TaskId::parse("t1").unwrap(), NOW);
    f.meta = Some(TaskMeta::parse(meta.as_bytes()));
    f.worktree = WorktreeFact::Present;
    f
}

/// A ship with a live claude pane.
fn live() -> Facts {
    let mut f = task("kind=ship\nworktree=/w\nharness=claude\npane=%1\n");
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

fn with_run(f: &mut Facts, run: &str) {
    f.run = Some(RunRecord::parse(run.as_bytes(), Some(NOW - 1)));
    f.git = Some(GitFacts {
        branch: Some("fm/t1".into()),
        head: "aaaa".into(),
    });
}

fn says(f: &Facts) -> String {
    let r = resolve(f);
    let mut s = format!("{} \u{b7} {}", r.state.as_str(), r.source.as_str());
    if !r.detail.is_empty() {
        s.push_str(&format!(" \u{b7} {}", r.detail));
    }
    s
}

#[test]
fn rule1_no_meta_and_worktree_gone() {
    let f = Facts::empty(TaskId::parse("ghost").unwrap(), NOW);
    assert_eq!(says(&f), "unknown \u{b7} none \u{b7} no metadata for ghost");
    for kind in ["kind=ship\n", "\n", "kind=scout\n"] {
        let mut f = task(kind);
        f.worktree = WorktreeFact::Missing;
        assert_eq!(
            says(&f),
            "unknown \u{b7} none \u{b7} worktree gone (torn down?)"
        );
    }
    let mut f = task("kind=secondmate\n");
    f.worktree = WorktreeFact::Missing;
    assert_eq!(
        says(&f),
        "unknown \u{b7} none \u{b7} no current-state source available"
    );
}

#[test]
fn rule1_a_meta_without_a_worktree_was_never_spawned() {
    // A sub-brief's meta: only `parent=`, no worktree, no pane, no kind.
    let mut f = task("parent=P\n");
    f.worktree = WorktreeFact::Unchecked;
    assert_eq!(
        says(&f),
        "unknown \u{b7} none \u{b7} no current-state source available"
    );
    log(&mut f, "working: reading the brief\n");
    assert_eq!(
        says(&f),
        "working \u{b7} status-log \u{b7} reading the brief"
    );
}

#[test]
fn kind_falls_back_to_the_brief() {
    let mut f = task("parent=P\n");
    f.worktree = WorktreeFact::Unchecked;
    log(&mut f, "done: found the cause\n");
    // Without a kind anywhere it is a ship, whose done needs the gate.
    assert_eq!(f.kind(), Kind::Ship);
    assert_eq!(step(&f), Err(Need::Gate));
    f.brief_kind = Some(Kind::Scout);
    assert_eq!(f.kind(), Kind::Scout);
    assert_eq!(says(&f), "done \u{b7} status-log \u{b7} found the cause");
    // Meta's own kind wins over the brief's.
    f.meta = Some(TaskMeta::parse(b"kind=ship\nparent=P\n"));
    assert_eq!(step(&f), Err(Need::Gate));
    // A scout whose recorded worktree is gone is still rule 1.
    f.meta = Some(TaskMeta::parse(b"parent=P\nworktree=/w\n"));
    f.worktree = WorktreeFact::Missing;
    assert_eq!(
        says(&f),
        "unknown \u{b7} none \u{b7} worktree gone (torn down?)"
    );
}

#[test]
fn rule2_run_statuses() {
    let cases = [
        ("running", "working \u{b7} run \u{b7} validating (running)"),
        ("fixing", "working \u{b7} run \u{b7} validating (fixing)"),
        ("pending", "working \u{b7} run \u{b7} validating (pending)"),
        ("ci", "working \u{b7} run \u{b7} ci running"),
        (
            "awaiting_approval",
            "parked \u{b7} run \u{b7} parked at review: 2 findings",
        ),
        (
            "fix_review",
            "parked \u{b7} run \u{b7} parked at review: 2 findings",
        ),
        ("passed", "done \u{b7} run \u{b7} run passed"),
        ("checks-passed", "done \u{b7} run \u{b7} run checks-passed"),
        ("failed", "failed \u{b7} run \u{b7} run failed"),
        ("cancelled", "failed \u{b7} run \u{b7} run cancelled"),
    ];
    for (status, want) in cases {
        let mut f = live();
        with_run(
            &mut f,
            &format!("status={status}\nbranch=fm/t1\nhead=aaaa\ngate=review\nfindings=2\n"),
        );
        assert_eq!(says(&f), want, "{status}");
    }
    let mut f = live();
    with_run(
        &mut f,
        "status=awaiting_approval\nbranch=fm/t1\nhead=aaaa\ngate=tests\nfindings=1\n",
    );
    assert_eq!(
        says(&f),
        "parked \u{b7} run \u{b7} parked at tests: 1 finding"
    );
    with_run(
        &mut f,
        "status=passed\nbranch=fm/t1\nhead=aaaa\npr=https://x/pull/1\n",
    );
    assert_eq!(
        says(&f),
        "done \u{b7} run \u{b7} run passed \u{b7} PR https://x/pull/1"
    );
}

#[test]
fn rule2_attribution() {
    let run = "status=running\nbranch=fm/t1\nhead=bbbb\n";
    // HEAD differs and is not an ancestor: ignored.
    let mut f = live();
    with_run(&mut f, run);
    log(&mut f, "working [at=9990]: typing\n");
    assert_eq!(says(&f), "working \u{b7} status-log \u{b7} typing");
    // HEAD is an ancestor of the run's head: attributed.
    f.run_contains_head = true;
    assert_eq!(says(&f), "working \u{b7} run \u{b7} validating (running)");
    // Another branch: ignored.
    f.git.as_mut().unwrap().branch = Some("fm/other".into());
    assert_eq!(says(&f), "working \u{b7} status-log \u{b7} typing");
    // Detached HEAD: ignored.
    f.git.as_mut().unwrap().branch = None;
    assert_eq!(says(&f), "working \u{b7} status-log \u{b7} typing");
    // Unknown status: ignored.
    let mut f = live();
    with_run(&mut f, "status=weird\nbranch=fm/t1\nhead=aaaa\n");
    assert_eq!(
        says(&f),
        "idle \u{b7} pane \u{b7} agent alive, no status yet"
    );
}

#[test]
fn rule2_status_log_superseded() {
    let mut f = live();
    with_run(&mut f, "status=running\nbranch=fm/t1\nhead=aaaa\n");
    log(&mut f, "needs-decision [at=9000] [key=db]: which db?\n");
    assert_eq!(
        says(&f),
        "working \u{b7} run \u{b7} validating (running) \u{b7} status-log superseded"
    );
    // A decision raised after the run record was written is not superseded.
    log(&mut f, "needs-decision [at=9999] [key=db]: which db?\n");
    assert_eq!(says(&f), "working \u{b7} run \u{b7} validating (running)");
}

#[test]
fn rule3_pane_gone_or_agent_exited() {
    let mut f = live();
    f.pane = PaneFact::Gone;
    log(&mut f, "working [at=9990]: typing\n");
    assert_eq!(says(&f), "exited \u{b7} pane \u{b7} pane gone");
    f.pane = PaneFact::Present {
        dead: false,
        command: "bash".into(),
    };
    assert_eq!(says(&f), "exited \u{b7} pane \u{b7} agent exited");
    f.pane = PaneFact::Present {
        dead: true,
        command: "claude".into(),
    };
    assert_eq!(says(&f), "exited \u{b7} pane \u{b7} agent exited");
    log(&mut f, "failed [at=9990]: gave up\n");
    assert_eq!(says(&f), "failed \u{b7} status-log \u{b7} gave up");
    log(&mut f, "needs-decision [at=9990]: hmm\n");
    assert_eq!(says(&f), "exited \u{b7} pane \u{b7} agent exited");
}

#[test]
fn rule3_done_after_pane_gone_is_gated() {
    let mut f = live();
    f.pane = PaneFact::Gone;
    log(&mut f, "done [at=9990]: ready in branch fm/t1\n");
    assert_eq!(step(&f), Err(Need::Gate));
    f.gate = Some(Gate::Accepted);
    assert_eq!(
        says(&f),
        "done \u{b7} status-log \u{b7} ready in branch fm/t1"
    );
    f.gate = Some(Gate::Refused(
        "named head abc is unreachable outside the worker copy".into(),
    ));
    assert_eq!(
        says(&f),
        "blocked \u{b7} status-log \u{b7} named head abc is unreachable outside the worker copy"
    );
    f.gate = None;
    assert_eq!(
        says(&f),
        "blocked \u{b7} status-log \u{b7} done not verified (gate not run)"
    );
}

#[test]
fn rule3_4_skipped_without_a_pane_key_or_tmux() {
    let mut f = task("kind=ship\nworktree=/w\n");
    log(&mut f, "working [at=9990]: typing\n");
    assert_eq!(says(&f), "working \u{b7} status-log \u{b7} typing");
    f.pane = PaneFact::Unknown;
    assert_eq!(says(&f), "working \u{b7} status-log \u{b7} typing");
    f.fold = Fold::default();
    assert_eq!(
        says(&f),
        "unknown \u{b7} none \u{b7} no current-state source available"
    );
}

#[test]
fn rule4_busy_record_and_screen() {
    let mut f = live();
    log(&mut f, "done [at=9990]: shipped\n");
    f.busy = Some(BusyRecord {
        busy: true,
        at: NOW - 1,
        source: "prompt-hook".into(),
    });
    assert_eq!(says(&f), "working \u{b7} pane \u{b7} busy (prompt-hook)");
    // Older than the last status line: ignored.
    f.busy.as_mut().unwrap().at = NOW - 10;
    f.gate = Some(Gate::Accepted);
    assert_eq!(says(&f), "done \u{b7} status-log \u{b7} shipped");
    // Idle record: ignored; the screen decides.
    f.busy = Some(BusyRecord {
        busy: false,
        at: NOW,
        source: "stop-hook".into(),
    });
    f.screen = Some("output\n\n✻ Thinking… (esc to interrupt)\n> \n".into());
    assert_eq!(says(&f), "working \u{b7} pane \u{b7} busy (screen)");
    f.screen = None;
    assert_eq!(step(&f), Err(Need::Screen));
    // No profile: nothing reads busy from the screen.
    f.profile = None;
    f.screen = Some("esc to interrupt\n".into());
    assert_eq!(says(&f), "done \u{b7} status-log \u{b7} shipped");
}

#[test]
fn rule5_log_states_and_gate() {
    let cases = [
        ("working: a", "working \u{b7} status-log \u{b7} a"),
        (
            "needs-decision [key=k]: b",
            "parked \u{b7} status-log \u{b7} b",
        ),
        ("blocked: c", "blocked \u{b7} status-log \u{b7} c"),
        (
            "paused: until 2030-01-01",
            "paused \u{b7} status-log \u{b7} until 2030-01-01",
        ),
        ("failed: e", "failed \u{b7} status-log \u{b7} e"),
    ];
    for (line, want) in cases {
        let mut f = live();
        log(&mut f, &format!("{line}\n"));
        assert_eq!(says(&f), want);
    }
    // An open needs-decision stays current after a later done.
    let mut f = live();
    log(&mut f, "needs-decision [key=db]: which?\ndone: all done\n");
    assert_eq!(says(&f), "parked \u{b7} status-log \u{b7} which?");
    // Scout done is never gated.
    let mut f = task("kind=scout\nworktree=/w\n");
    log(&mut f, "done: report written\n");
    assert_eq!(step(&f).unwrap().detail, "report written");
    // Ship done: gate verdicts.
    let mut f = live();
    log(&mut f, "done: PR https://x/pull/2\n");
    f.gate = Some(Gate::NotGated);
    assert_eq!(
        says(&f),
        "done \u{b7} status-log \u{b7} PR https://x/pull/2"
    );
    f.gate = Some(Gate::Refused("worktree has no HEAD (/w)".into()));
    assert_eq!(
        says(&f),
        "blocked \u{b7} status-log \u{b7} worktree has no HEAD (/w)"
    );
}

#[test]
fn rule6_and_7() {
    let f = live();
    assert_eq!(
        says(&f),
        "idle \u{b7} pane \u{b7} agent alive, no status yet"
    );
    let f = task("kind=secondmate\n");
    assert_eq!(
        says(&f),
        "unknown \u{b7} none \u{b7} no current-state source available"
    );
}

#[test]
fn unreadable_state_reads_unknown() {
    let mut f = live();
    f.error = Some("refusing to follow symlink (x)".into());
    assert_eq!(
        says(&f),
        "unknown \u{b7} none \u{b7} unreadable: refusing to follow symlink (x)"
    );
}

#[test]
fn rule4_a_dialog_reads_blocked_even_mid_turn() {
    let mut f = live();
    f.busy = Some(BusyRecord {
        busy: true,
        at: NOW - 1,
        source: "prompt-hook".into(),
    });
    f.screen = None;
    assert_eq!(step(&f), Err(Need::Screen));
    f.screen = Some(" Bash command\n Do you want to proceed?\n \u{276f} 1. Yes\n   4. No\n".into());
    assert_eq!(
        says(&f),
        "blocked \u{b7} pane \u{b7} waiting in a dialog: permission"
    );
    f.screen = Some("done\n".into());
    assert_eq!(says(&f), "working \u{b7} pane \u{b7} busy (prompt-hook)");
}

/// A captured screen of the real agents (`tests/fixtures/screens/`).
fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/screens")
        .join(format!("{name}.ansi.txt"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Claude Code runs no hook when a turn is interrupted from the keyboard,
/// so the prompt hook's busy record stays: its screen, which shows every
/// turn, reads idle then and says so. A busy screen, a fresh record (the
/// turn not drawn yet) with the prompt still in the composer, and Codex
/// (nothing on its screen while it streams) keep the record.
#[test]
fn rule4_a_claude_screen_that_reads_idle_overrules_the_busy_record() {
    let mut f = live();
    f.busy = Some(BusyRecord {
        busy: true,
        at: NOW - 30,
        source: "hook".into(),
    });
    let idle = "idle \u{b7} pane \u{b7} agent alive, no status yet";
    let working = "working \u{b7} pane \u{b7} busy (hook)";
    for (screen, want) in [
        ("claude/after-interrupt-streaming", idle),
        ("claude/permission-denied", idle),
        ("claude/idle-after-turn", idle),
        // The prompt put back into the composer, 30 s after the hook.
        ("claude/after-interrupt", idle),
        ("claude/busy-streaming", working),
        ("claude/busy-silent", working),
        ("claude/busy-tool", working),
        ("claude/busy-prompt-hook", working),
    ] {
        f.screen = Some(fixture(screen));
        assert_eq!(says(&f), want, "{screen}");
    }
    // The screen is needed to decide.
    f.screen = None;
    assert_eq!(step(&f), Err(Need::Screen));
    assert_eq!(says(&f), working);
    // Just written: the agent may not show the turn yet.
    f.busy.as_mut().unwrap().at = NOW - 1;
    f.screen = Some(fixture("claude/after-interrupt"));
    assert_eq!(says(&f), working);
    f.screen = Some(fixture("claude/after-interrupt-streaming"));
    assert_eq!(says(&f), idle);
    // A status line newer than the record still decides as before.
    log(&mut f, "working: on it\n");
    f.busy.as_mut().unwrap().at = NOW;
    assert_eq!(says(&f), "working \u{b7} status-log \u{b7} on it");
    // Codex: an idle-looking screen while it streams; the record stands.
    let mut f = live();
    f.profile = builtin("codex").map(std::sync::Arc::new);
    f.pane = PaneFact::Present {
        dead: false,
        command: "codex".into(),
    };
    f.busy = Some(BusyRecord {
        busy: true,
        at: NOW - 30,
        source: "hook".into(),
    });
    f.screen = Some(fixture("codex/busy-streaming"));
    assert_eq!(says(&f), working);
}

/// A row built from facts kept for the next frame and one that takes what
/// it can from facts it consumes say the same.
#[test]
fn a_row_moved_out_of_its_facts_is_the_row_copied_from_them() {
    let cfg = crate::config::Config::default();
    let metas = [
        "kind=ship\nworktree=/w\nrepo=shop\npane=%3\ntmux_socket=s\n",
        "kind=scout\nproject=/src/app\nhost= far \n",
        "kind=secondmate\nhost= \n",
        "\n",
    ];
    for meta in metas {
        for text in [
            "needs-decision [key=db]: which?\nblocked [at=9000]: creds\n",
            "working [at=9990]: on it\n",
            "",
        ] {
            let mut f = task(meta);
            log(&mut f, text);
            f.inbox_pending = 2;
            let r = resolve(&f);
            let copied = crate::crew_state::Row::with(&f, r.clone(), &cfg);
            let moved = crate::crew_state::Row::from_owned(f, r, &cfg);
            assert_eq!(copied, moved, "{meta:?} {text:?}");
        }
    }
    let f = Facts::empty(TaskId::parse("ghost").unwrap(), NOW);
    let r = resolve(&f);
    let copied = crate::crew_state::Row::with(&f, r.clone(), &cfg);
    assert_eq!(copied, crate::crew_state::Row::from_owned(f, r, &cfg));
}

/// Claude Code's own session file decides busy, idle and waiting ahead of
/// the busy record and the screen.
#[test]
fn rule4_the_agent_session_file_comes_before_the_screen() {
    use crate::crew_state::agent_session::{Session, Status};
    let session = |status, at| Some(Session { status, at });
    let mut f = live();
    // The screen says busy; the session file says idle.
    f.screen = Some(fixture("claude/busy-streaming"));
    f.agent_session = session(Status::Idle, NOW - 2);
    assert_eq!(
        says(&f),
        "idle \u{b7} agent-session \u{b7} idle (agent-session), no status yet"
    );
    // The agent's status line still says what it does.
    log(&mut f, "working: tests\n");
    assert_eq!(says(&f), "working \u{b7} status-log \u{b7} tests");
    let mut f = live();
    f.screen = None;
    f.agent_session = session(Status::Busy, NOW - 2);
    assert_eq!(
        says(&f),
        "working \u{b7} agent-session \u{b7} busy (agent-session)"
    );
    f.agent_session = session(Status::Waiting, NOW - 2);
    assert_eq!(step(&f), Err(Need::Screen), "the screen names the dialog");
    f.screen = Some(" Bash command\n Do you want to proceed?\n \u{276f} 1. Yes\n   4. No\n".into());
    assert_eq!(
        says(&f),
        "blocked \u{b7} agent-session \u{b7} waiting in a dialog: permission"
    );
    // Not drawn yet: waiting all the same.
    f.screen = Some("> \n".into());
    assert_eq!(
        says(&f),
        "blocked \u{b7} agent-session \u{b7} waiting in a dialog: input"
    );
    // Idle by the session file; a dialog the screen shows still counts.
    f.agent_session = session(Status::Idle, NOW - 2);
    f.screen = Some(" Bash command\n Do you want to proceed?\n \u{276f} 1. Yes\n   4. No\n".into());
    assert_eq!(
        says(&f),
        "blocked \u{b7} pane \u{b7} waiting in a dialog: permission"
    );
    // Over a busy record, even a newer one (a turn interrupted from the
    // keyboard leaves it behind); without the file the record decides.
    f.screen = Some("> \n".into());
    f.busy = Some(BusyRecord {
        busy: true,
        at: NOW - 1,
        source: "hook".into(),
    });
    assert_eq!(
        says(&f),
        "idle \u{b7} agent-session \u{b7} idle (agent-session), no status yet"
    );
    f.agent_session = None;
    assert_eq!(says(&f), "working \u{b7} pane \u{b7} busy (hook)");
    // A dead pane: the session file is not asked.
    f.pane = PaneFact::Present {
        dead: true,
        command: "claude".into(),
    };
    f.agent_session = session(Status::Busy, NOW);
    assert_eq!(says(&f), "exited \u{b7} pane \u{b7} agent exited");
}

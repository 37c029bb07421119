//! The scenarios, each run against both harnesses (see `main.rs`).

use std::time::Instant;

use crate::Harness;
use crate::world::{ID, Opts, Reply, World};

const IDLE: &str = "state: idle · source: pane · agent alive, no status yet";

/// Idle as crew state reads it: Claude Code's from its own session file.
fn idle(h: Harness) -> &'static str {
    match h {
        Harness::Claude => {
            "state: idle · source: agent-session · idle (agent-session), no status yet"
        }
        Harness::Codex => IDLE,
    }
}

/// Working as crew state reads it: Claude Code's from its own session
/// file; Codex's from its hooks, its session log or the screen.
fn working(h: Harness) -> &'static str {
    match h {
        Harness::Claude => "state: working · source: agent-session · busy (agent-session)",
        Harness::Codex => "state: working · source: pane · busy (",
    }
}

fn world(h: Harness) -> Option<World> {
    World::new(h, Opts::default())
}

/// Spawn: one window in a new session, the kickoff prompt is the model's
/// first user turn, the worktree stays clean, and the agent reads idle —
/// and stays idle. (The agent's own hooks: [`hooks_report_the_turn`].)
pub fn spawn_to_prompt_then_idle(h: Harness) {
    let Some(mut w) = world(h) else { return };
    w.spawn_ready();
    assert_eq!(
        w.tmux(&["list-windows", "-t", "=fm", "-F", "#{window_name}"]),
        format!("fm-{ID}\n"),
        "the session holds the worker's window only"
    );
    let turns = w.model.user_turns();
    let brief = w.home.path(&format!("data/{ID}/brief.md"));
    assert_eq!(
        turns.first().map(|t| t.join("")),
        Some(format!(
            "Read the brief at {} and follow it.",
            brief.display()
        )),
        "{turns:?}"
    );
    assert_eq!(
        crate::harness::git(&w.worktree(), &["status", "--porcelain"]),
        "",
        "the launch left the worktree clean"
    );
    w.crew_holds("reading idle", 3.0, |c| c == idle(h));
}

/// The hooks spawn installs feed the busy record (docs/spec/crew-state.md#busy-record) from the
/// agent itself: an idle record when the kickoff turn ended, and the
/// launch left the worktree clean.
pub fn hooks_report_the_turn(h: Harness) {
    let Some(mut w) = world(h) else { return };
    w.spawn_ready();
    w.wait_for("an idle record from the agent's hook", 10.0, |w| {
        let rec = w.home.read_string(&format!("state/{ID}.busy"));
        rec.starts_with("idle ") && rec.trim_end().ends_with(" hook")
    });
    assert_eq!(
        crate::harness::git(&w.worktree(), &["status", "--porcelain"]),
        "",
        "the hooks left the worktree clean"
    );
}

/// One send: rung at once, one user turn holding exactly the doorbell.
pub fn one_send(h: Harness) {
    let Some(mut w) = world(h) else { return };
    w.spawn_ready();
    w.sends("hello there", "rang");
    w.wait_for("the doorbell to reach the model", 20.0, |w| {
        w.doorbells_received() == 1
    });
    assert!(w.last_turn_is_the_doorbell(), "{:#?}", w.model.user_turns());
    w.wait_idle(20.0);
    w.holds_for("one doorbell only", 2.0, |w| w.doorbells_received() == 1);
    assert!(w.home.exists(&format!("state/{ID}.inbox/001.msg")));
}

/// Three sends in a row: each rung or held for the turn's end, never two
/// doorbells in one block, and every message read in the end.
pub fn three_quick_sends(h: Harness) {
    let Some(mut w) = world(h) else { return };
    w.spawn_ready();
    w.reply(Reply::Ack);
    w.start_watcher();
    let mut rang = 0;
    for n in 1..=3 {
        match w.send(&format!("message {n}")).as_str() {
            "rang" => rang += 1,
            "queued" => {}
            other => panic!("send {n}: doorbell {other}"),
        }
    }
    assert!(rang >= 1);
    w.wait_for("all three messages acknowledged", 60.0, |w| {
        (1..=3).all(|n| {
            w.home
                .exists(&format!("state/{ID}.inbox/handled/{n:03}.msg"))
        })
    });
    w.wait_idle(20.0);
    let got = w.doorbells_received();
    assert!((1..=3).contains(&got), "{got} doorbells for 3 sends");
}

/// The captain's half-typed text: the doorbell is skipped, the text is
/// left exactly as it was and never submitted; once the captain clears it,
/// the watcher rings.
pub fn half_typed_text_is_never_sent(h: Harness) {
    let Some(mut w) = World::new(
        h,
        Opts {
            grace_secs: 2,
            ..Opts::default()
        },
    ) else {
        return;
    };
    w.spawn_ready();
    w.type_text("half typed text");
    w.wait_for("the text in the composer", 5.0, |w| {
        w.screen().contains("half typed text")
    });
    if w.leg {
        // The leg types nothing: the doorbell reaches the model while the
        // captain's text stays in the composer, never sent.
        w.sends("ring while the captain types", "rang");
        w.wait_for("the doorbell through the leg", 30.0, |w| {
            w.doorbells_received() == 1
        });
        w.wait_for("the answer on the screen", 30.0, |w| {
            w.screen().contains("noted")
        });
        w.holds_for("the captain's text untouched", 3.0, |w| {
            w.screen().contains("half typed text")
        });
        assert!(
            w.model
                .requests()
                .iter()
                .all(|r| !r.to_string().contains("half typed")),
            "the captain's text reached the model"
        );
        return;
    }
    w.sends("ring while the captain types", "skipped");
    w.start_watcher();
    w.holds_for("the captain's text untouched", 4.0, |w| {
        let s = w.screen();
        s.contains("half typed text") && !s.contains("firstmate inbox")
    });
    assert_eq!(w.doorbells_received(), 0);
    w.keys(&["C-u"]);
    w.wait_for("the watcher's ring to reach the model", 30.0, |w| {
        w.doorbells_received() == 1
    });
    assert!(
        w.model
            .requests()
            .iter()
            .all(|r| !r.to_string().contains("half typed")),
        "the captain's text reached the model"
    );
}

/// The ack loop: the model reads the doorbell and acknowledges with
/// `fm-ack`; the record moves to handled/ and the ladder is cleared.
pub fn ack_loop(h: Harness) {
    let Some(mut w) = world(h) else { return };
    w.spawn_ready();
    w.reply(Reply::Ack);
    w.sends("please acknowledge", "rang");
    w.wait_for("the model to acknowledge", 30.0, |w| {
        w.home.exists(&format!("state/{ID}.inbox/handled/001.msg"))
    });
    assert!(!w.home.exists(&format!("state/{ID}.inbox/001.msg")));
    assert_eq!(w.doorbells_received(), 1);
    w.fm("ack")
        .args([ID, "--list", "--json"])
        .stdout("[]\n")
        .run();
}

fn busy_during(w: &mut World, reply: Reply) {
    let h = w.h;
    w.spawn_ready();
    w.reply(reply);
    w.sends("take your time", "rang");
    w.wait_for("the doorbell to reach the model", 20.0, |w| {
        w.doorbells_received() == 1
    });
    w.wait_working(10.0);
    w.crew_holds("reading working during the turn", 4.0, |c| {
        c.starts_with(working(h))
    });
    // A send now is held for the turn's end, never typed into it.
    w.sends("while you work", "queued");
    w.wait_idle(30.0);
    assert_eq!(w.doorbells_received(), 1);
}

/// Busy while the answer streams (Codex shows nothing on screen then).
pub fn busy_while_streaming(h: Harness) {
    let Some(mut w) = world(h) else { return };
    busy_during(&mut w, Reply::Stream(8));
}

/// Busy while the answer streams with the agent's hooks off (`hooks =
/// false`): no busy record is ever written, so what the agent itself shows
/// or writes as the turn runs must say busy — Claude Code's screen, which
/// shows every turn; Codex's session log, as its screen says nothing then.
pub fn busy_while_streaming_without_hooks(h: Harness) {
    let Some(mut w) = World::new(
        h,
        Opts {
            hooks: false,
            ..Opts::default()
        },
    ) else {
        return;
    };
    busy_during(&mut w, Reply::Stream(8));
    assert!(
        !w.home.exists(&format!("state/{ID}.hooks.json")),
        "hooks were installed"
    );
}

/// Busy while the model is silent before its first token.
pub fn busy_while_silent(h: Harness) {
    let Some(mut w) = world(h) else { return };
    busy_during(&mut w, Reply::Silent(8));
}

/// Busy while a tool call runs (the model silent, a shell command going).
pub fn busy_while_a_tool_runs(h: Harness) {
    let Some(mut w) = world(h) else { return };
    busy_during(&mut w, Reply::Tool(8));
}

/// The captain interrupts a streaming turn from the keyboard (no
/// `fm-control`): the agent reads idle at once and stays idle — Claude
/// Code runs no hook then, its screen says so; Codex runs its
/// `Interrupt` hook — and the next doorbell is rung, not held.
pub fn captain_interrupts_while_streaming(h: Harness) {
    let Some(mut w) = world(h) else { return };
    w.spawn_ready();
    w.reply(Reply::Stream(30));
    w.sends("a long answer", "rang");
    w.wait_for("the doorbell to reach the model", 20.0, |w| {
        w.doorbells_received() == 1
    });
    w.wait_working(10.0);
    w.crew_holds("reading working while it streams", 2.0, |c| {
        c.starts_with(working(h))
    });
    w.keys(&["Escape"]);
    w.wait_idle(10.0);
    w.crew_holds("reading idle after the interrupt", 3.0, |c| c == idle(h));
    w.reply(Reply::Text);
    w.sends("after your interrupt", "rang");
    w.wait_for("the next doorbell as its own turn", 20.0, |w| {
        w.last_turn_is_the_doorbell() && w.doorbells_received() == 2
    });
}

/// A send while busy is rung as soon as the turn ends (the hook's idle
/// record wakes the watcher), not a grace period later.
pub fn send_while_busy_rings_when_the_turn_ends(h: Harness) {
    let Some(mut w) = world(h) else { return };
    w.spawn_ready();
    w.start_watcher();
    w.reply(Reply::Silent(6));
    w.sends("first", "rang");
    w.wait_for("the first doorbell at the model", 20.0, |w| {
        w.doorbells_received() == 1
    });
    w.reply(Reply::Text);
    w.wait_working(10.0);
    w.sends("second, while busy", "queued");
    let busy_until = Instant::now();
    w.wait_for("the held doorbell rung after the turn", 30.0, |w| {
        w.doorbells_received() == 2
    });
    // The turn took ~6 s; grace_secs is an hour: this was the turn's end.
    assert!(busy_until.elapsed().as_secs() < 20);
    assert!(w.last_turn_is_the_doorbell(), "{:#?}", w.model.user_turns());
}

/// An unread message is re-rung by the watcher, then escalated once.
pub fn rering_then_escalation(h: Harness) {
    let Some(mut w) = World::new(
        h,
        Opts {
            grace_secs: 3,
            max_rings: 2,
            ..Opts::default()
        },
    ) else {
        return;
    };
    w.spawn_ready();
    w.sends("are you reading?", "rang");
    w.start_watcher();
    w.wait_for("one escalation wake", 60.0, |w| {
        w.wakes("escalation").len() == 1
    });
    // fm-send's ring and two re-rings (the last may still be landing).
    w.wait_for("three doorbells at the model", 15.0, |w| {
        w.doorbells_received() == 3
    });
    w.holds_for("no more rings after the escalation", 4.0, |w| {
        w.doorbells_received() == 3 && w.wakes("escalation").len() == 1
    });
}

/// Interrupting a busy agent: it stops, reads idle, its composer is
/// empty, and the next doorbell is its own turn.
pub fn interrupt_while_busy(h: Harness) {
    let Some(mut w) = world(h) else { return };
    w.spawn_ready();
    w.reply(Reply::Silent(60));
    w.sends("a long one", "rang");
    w.wait_for("the agent busy", 20.0, |w| {
        w.crew().starts_with("state: working")
    });
    w.fm("control")
        .args([ID, "interrupt"])
        .stdout(format!("interrupt-delivered {ID} harness={}\n", h.name()))
        .run();
    w.wait_idle(10.0);
    w.reply(Reply::Text);
    w.sends("after the interrupt", "rang");
    w.wait_for("the next doorbell as its own turn", 20.0, |w| {
        w.last_turn_is_the_doorbell() && w.model.main_requests().len() >= 3
    });
}

/// Interrupting an idle agent twice: nothing to stop, so nothing is
/// pressed — no exit, no dialog — and a doorbell still lands.
pub fn interrupt_twice_while_idle(h: Harness) {
    let Some(mut w) = world(h) else { return };
    w.spawn_ready();
    // Interrupt keys pressed on an idle agent would open its history
    // dialog (Escape twice): either nothing is pressed, or the agent
    // ends up where it was.
    for _ in 0..2 {
        w.fm("control")
            .args([ID, "interrupt"])
            .stdout_regex(&format!(
                "^interrupt-(delivered {ID} harness={0}|skipped {ID} harness={0} \\(not busy\\))\n$",
                h.name()
            ))
            .run();
    }
    w.crew_holds("the agent alive and idle", 2.0, |c| c == idle(h));
    w.sends("still there?", "rang");
    w.wait_for("the doorbell at the model", 20.0, |w| {
        w.doorbells_received() == 1
    });
}

/// Exit: the agent quits on its exit command within seconds, not killed.
pub fn exit(h: Harness) {
    let Some(mut w) = world(h) else { return };
    w.spawn_ready();
    let t = Instant::now();
    w.fm("control")
        .args([ID, "exit"])
        .stdout(format!("stopped {ID}\n"))
        .run();
    assert!(
        t.elapsed().as_secs_f64() < 5.0,
        "exit took {:?}",
        t.elapsed()
    );
    assert!(w.pane_state().starts_with('1'), "{}", w.pane_state());
    assert_eq!(w.crew(), "state: exited · source: pane · agent exited");
}

/// Relaunch, then a send right away: the new agent gets the doorbell
/// exactly once — never a false `rang` into a booting screen.
pub fn relaunch_then_send(h: Harness) {
    let Some(mut w) = world(h) else { return };
    let pane = w.spawn_ready();
    w.start_watcher();
    let t = Instant::now();
    w.fm("control")
        .args([ID, "relaunch", "--note", "carry on"])
        .stdout(format!("relaunched {ID} harness={0} from={0}\n", h.name()))
        .run();
    assert!(
        t.elapsed().as_secs_f64() < 8.0,
        "relaunch took {:?}",
        t.elapsed()
    );
    let outcome = w.send("right after the relaunch");
    // On the leg, an agent still starting gets nothing typed: owed
    // (`booting`) until its waiter is up, and the watcher rings then.
    assert!(
        outcome == "rang" || outcome == "queued" || (w.leg && outcome == "booting"),
        "doorbell {outcome}"
    );
    w.wait_for("the doorbell in the new session", 60.0, |w| {
        w.doorbells_received() == 1
    });
    w.wait_idle(30.0);
    assert_eq!(w.doorbells_received(), 1);
    let meta = w.home.read_string(&format!("state/{ID}.meta"));
    assert!(meta.contains(&format!("pane={pane}\n")), "{meta}");
}

/// What every dialog must get: a send reports `dialog` and types nothing,
/// crew state reads blocked naming it, two watcher passes type nothing
/// either, and the agent stays as it was. (The watcher's one wake for it
/// is [`dialog_raises_one_wake`].)
#[track_caller]
fn never_typed_into(w: &World, name: &str) {
    let requests = w.model.main_requests().len();
    // Doorbells already in the transcript (a permission prompt comes
    // during a rung turn); none may be added.
    let shown = w.screen().matches("firstmate inbox").count();
    // On the leg a live waiter takes the doorbell (`rang`): the harness
    // hands it over once the dialog is gone. Nothing is typed either way.
    let outcome = w.send("anyone there?");
    let want = if w.leg && outcome == "rang" {
        "rang"
    } else {
        "dialog"
    };
    assert_eq!(outcome, want, "{}", w.screen_escaped());
    // Claude Code's session file says `waiting` in its own dialogs (a
    // permission prompt, the rewind view); it is not written yet while
    // the trust dialog is open.
    let source = match (w.h, name) {
        (Harness::Claude, "trust") | (Harness::Codex, _) => "pane",
        (Harness::Claude, _) => "agent-session",
    };
    assert_eq!(
        w.crew(),
        format!("state: blocked · source: {source} · waiting in a dialog: {name}")
    );
    // Older than grace_secs (1 s), so the watcher would ring it.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    for _ in 0..2 {
        w.fm("watch").arg("--once").stdout_any().stderr_any().run();
    }
    assert_eq!(
        w.model.main_requests().len(),
        requests,
        "nothing reached the model"
    );
    assert_eq!(
        w.screen().matches("firstmate inbox").count(),
        shown,
        "a doorbell was typed:\n{}",
        w.screen()
    );
    assert!(
        w.pane_state().starts_with('0'),
        "the agent is still running"
    );
}

fn dialog_world(h: Harness, trusted: bool, prompts: bool) -> Option<World> {
    World::new(
        h,
        Opts {
            trusted,
            prompts,
            grace_secs: 1,
            // Every ring into the dialog counts on the ladder; the rings
            // after it closes must not find the message escalated.
            max_rings: 20,
            ..Opts::default()
        },
    )
}

/// The folder-trust dialog (its preselected answer exits Claude Code):
/// never answered by a doorbell; once the captain trusts, the watcher rings.
pub fn dialog_folder_trust(h: Harness) {
    let Some(mut w) = dialog_world(h, false, false) else {
        return;
    };
    w.spawn();
    w.wait_for("the trust dialog", 30.0, |w| {
        w.crew().ends_with("waiting in a dialog: trust")
    });
    never_typed_into(&w, "trust");
    match h {
        // "No, exit" is preselected.
        Harness::Claude => w.keys(&["Down", "Enter"]),
        Harness::Codex => w.keys(&["Enter"]),
    }
    w.start_watcher();
    w.wait_for("the doorbell after the captain trusted", 60.0, |w| {
        w.doorbells_received() == 1
    });
}

/// A permission (approval) prompt: the doorbell's Enter must never
/// approve it.
pub fn dialog_permission(h: Harness) {
    let Some(mut w) = dialog_world(h, true, true) else {
        return;
    };
    w.spawn_ready();
    let probe = w.worktree().join("approved.txt");
    let cmd: &'static str = Box::leak(format!("echo yes > {}", probe.display()).into_boxed_str());
    w.reply(Reply::Command(cmd));
    w.sends("run it", "rang");
    let name = match h {
        Harness::Claude => "permission",
        Harness::Codex => "approval",
    };
    w.wait_for("the permission prompt", 30.0, |w| {
        w.crew().ends_with(&format!("waiting in a dialog: {name}"))
    });
    // Claude Code's session file says `waiting` a moment before the
    // prompt is drawn; `fm-send` reads the screen.
    if h == Harness::Claude {
        w.wait_for("the permission prompt drawn", 10.0, |w| {
            w.screen().contains("Do you want to proceed?")
        });
    }
    w.reply(Reply::Text);
    never_typed_into(&w, name);
    assert!(!probe.exists(), "nobody approved the command");
    w.keys(&["Escape"]);
    w.wait_idle(20.0);
    assert!(!probe.exists(), "nobody approved the command");
}

/// History dialogs the keyboard can open on an idle agent: Claude Code's
/// rewind (Esc Esc) and transcript (Ctrl-O); Codex's backtrack (Esc Esc).
pub fn dialog_history(h: Harness) {
    let Some(mut w) = dialog_world(h, true, false) else {
        return;
    };
    w.spawn_ready();
    let (name, keys): (&str, &[&str]) = match h {
        Harness::Claude => ("rewind", &["Escape", "Escape"]),
        Harness::Codex => ("backtrack", &["Escape", "Escape"]),
    };
    w.crew_holds("reading idle", 2.0, |c| c.starts_with("state: idle"));
    w.keys(keys);
    w.wait_for("the dialog", 10.0, |w| {
        w.crew().ends_with(&format!("waiting in a dialog: {name}"))
    });
    never_typed_into(&w, name);
    w.keys(&["Escape"]);
    if h == Harness::Claude {
        w.wait_idle(10.0);
        w.keys(&["C-o"]);
        w.wait_for("the transcript", 10.0, |w| {
            w.crew().ends_with("waiting in a dialog: transcript")
        });
        let outcome = w.send("and now?");
        assert!(
            outcome == "dialog" || (w.leg && outcome == "rang"),
            "doorbell {outcome}"
        );
        w.keys(&["Escape"]);
    }
    w.wait_idle(10.0);
    w.start_watcher();
    w.wait_for("the doorbell once the dialog closed", 30.0, |w| {
        w.doorbells_received() >= 1
    });
}

/// Opens the history dialog of an idle agent (Esc Esc: Claude Code's
/// rewind, Codex's backtrack) and waits for crew state to name it;
/// returns its name.
fn open_history_dialog(w: &World, h: Harness) -> &'static str {
    let name = match h {
        Harness::Claude => "rewind",
        Harness::Codex => "backtrack",
    };
    // The kickoff turn may still be closing behind an idle-looking screen;
    // an Escape then interrupts it instead of opening the dialog.
    w.crew_holds("reading idle", 2.0, |c| c.starts_with("state: idle"));
    w.keys(&["Escape", "Escape"]);
    w.wait_for("the dialog", 10.0, |w| {
        w.crew().ends_with(&format!("waiting in a dialog: {name}"))
    });
    name
}

/// The watcher raises one `dialog` wake naming the dialog (not one per
/// pass) instead of ringing into it.
pub fn dialog_raises_one_wake(h: Harness) {
    let Some(mut w) = dialog_world(h, true, false) else {
        return;
    };
    w.spawn_ready();
    let name = open_history_dialog(&w, h);
    w.sends("anyone there?", "dialog");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    for _ in 0..2 {
        w.fm("watch").arg("--once").stdout_any().stderr_any().run();
    }
    let wakes = w.wakes("dialog");
    assert_eq!(wakes.len(), 1, "one dialog wake: {wakes:?}");
    assert!(wakes[0].contains(name), "{wakes:?}");
    assert_eq!(w.doorbells_received(), 0);
}

/// A send right after the spawn, before the agent took any input: either
/// the doorbell landed (`rang`, and the model gets it with no watcher
/// running) or it is owed (`booting`, or `queued` behind the kickoff turn)
/// and the watcher rings it once the composer shows — one doorbell, its
/// own turn, never a false `rang`.
pub fn send_while_booting(h: Harness) {
    let Some(mut w) = world(h) else { return };
    w.spawn();
    let outcome = w.send("right after the spawn");
    match outcome.as_str() {
        "rang" => {}
        "booting" | "queued" => {
            assert!(w.home.exists(&format!("state/{ID}.inbox/.ring-owed")));
            w.start_watcher();
        }
        other => panic!("doorbell {other}\n{}", w.screen_escaped()),
    }
    w.wait_for("the doorbell at the model", 60.0, |w| {
        w.doorbells_received() == 1
    });
    w.wait_idle(30.0);
    w.holds_for("one doorbell only", 2.0, |w| w.doorbells_received() == 1);
    assert!(
        w.model
            .user_blocks()
            .iter()
            .filter(|b| b.contains("firstmate inbox"))
            .all(|b| *b == w.doorbell()),
        "a doorbell glued to other text: {:#?}",
        w.model.user_turns()
    );
}

/// The captain stops a turn with his own Escape, then asks `fm-control`
/// to interrupt: there is no turn left, so nothing is pressed — a second
/// Escape would open the history dialog — and a doorbell still lands.
pub fn interrupt_after_the_captains_escape(h: Harness) {
    let Some(mut w) = world(h) else { return };
    w.spawn_ready();
    w.reply(Reply::Stream(30));
    w.sends("a long answer", "rang");
    w.wait_working(20.0);
    w.keys(&["Escape"]);
    w.wait_idle(10.0);
    w.fm("control")
        .args([ID, "interrupt"])
        .stdout(format!(
            "interrupt-skipped {ID} harness={} (not busy)\n",
            h.name()
        ))
        .run();
    w.crew_holds("idle, no dialog opened", 2.0, |c| c == idle(h));
    w.reply(Reply::Text);
    w.sends("still there?", "rang");
    w.wait_for("the doorbell as its own turn", 20.0, |w| {
        w.doorbells_received() == 2 && w.last_turn_is_the_doorbell()
    });
}

/// The captain's half-typed text refuses an exit (nothing typed, the text
/// kept); `--force` clears it and the agent quits on its exit command.
pub fn exit_force_over_half_typed_text(h: Harness) {
    let Some(mut w) = world(h) else { return };
    w.spawn_ready();
    w.type_text("half typed text");
    w.wait_for("the text in the composer", 5.0, |w| {
        w.screen().contains("half typed text")
    });
    w.fm("control")
        .args([ID, "exit"])
        .status(1)
        .stderr_has(&format!("exit-refused {ID}: the composer holds text"))
        .run();
    assert!(w.screen().contains("half typed text"), "{}", w.screen());
    assert!(w.pane_state().starts_with('0'), "{}", w.pane_state());
    w.fm("control")
        .args([ID, "exit", "--force"])
        .stdout(format!("stopped {ID}\n"))
        .run();
    assert!(w.pane_state().starts_with('1'), "{}", w.pane_state());
    assert!(
        w.model
            .requests()
            .iter()
            .all(|r| !r.to_string().contains("half typed")),
        "the captain's text reached the model"
    );
}

/// A dialog refuses an exit (no key pressed into it); `--force` cancels it
/// with Escape, then the agent quits on its exit command.
pub fn exit_force_over_a_dialog(h: Harness) {
    let Some(mut w) = dialog_world(h, true, false) else {
        return;
    };
    w.spawn_ready();
    let name = open_history_dialog(&w, h);
    w.fm("control")
        .args([ID, "exit"])
        .status(1)
        .stderr_has(&format!("exit-refused {ID}: waiting in a dialog: {name}"))
        .run();
    assert!(w.crew().ends_with(name), "{}", w.crew());
    w.fm("control")
        .args([ID, "exit", "--force"])
        .stdout(format!("stopped {ID}\n"))
        .run();
    assert!(w.pane_state().starts_with('1'), "{}", w.pane_state());
}

/// Relaunch over the captain's half-typed text: refused without `--force`;
/// with it the old agent quits, the new one boots in the same pane and a
/// send reaches it exactly once.
pub fn relaunch_force_over_half_typed_text(h: Harness) {
    let Some(mut w) = world(h) else { return };
    let pane = w.spawn_ready();
    w.type_text("half typed text");
    w.wait_for("the text in the composer", 5.0, |w| {
        w.screen().contains("half typed text")
    });
    w.fm("control")
        .args([ID, "relaunch", "--note", "carry on"])
        .status(1)
        .stderr_has(&format!("exit-refused {ID}: the composer holds text"))
        .run();
    assert!(w.screen().contains("half typed text"), "{}", w.screen());
    w.fm("control")
        .args([ID, "relaunch", "--note", "carry on", "--force"])
        .stdout(format!("relaunched {ID} harness={0} from={0}\n", h.name()))
        .run();
    w.start_watcher();
    let outcome = w.send("after the relaunch");
    assert!(
        ["rang", "queued", "booting"].contains(&outcome.as_str()),
        "doorbell {outcome}"
    );
    w.wait_for("the doorbell in the new session", 60.0, |w| {
        w.doorbells_received() == 1
    });
    w.wait_idle(30.0);
    assert_eq!(w.doorbells_received(), 1);
    let meta = w.home.read_string(&format!("state/{ID}.meta"));
    assert!(meta.contains(&format!("pane={pane}\n")), "{meta}");
}

/// `fm doctor` names the harness, finds its program and names the version
/// under test: the pinned one as what the profile is built for, another
/// one a suite run verified as verified, any other as not verified (a
/// warning).
pub fn doctor_knows_the_version_under_test(h: Harness) {
    let Some(w) = world(h) else { return };
    let out = crate::harness::Cmd::new(crate::harness::bin("fm"))
        .env("FM_HOME", w.home.root())
        .env("PATH", "/usr/bin:/bin")
        .arg("doctor")
        .status_any()
        .stdout_any()
        .stderr_any()
        .run()
        .stdout();
    let (v, pinned) = (h.version_under_test(), h.version());
    let versions = include_str!("../../scripts/agents.versions");
    let verified = versions
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("{}.verified=", h.name())))
        .any(|l| l.split_whitespace().any(|x| x == v));
    let (level, says) = if v == pinned {
        (
            "ok  ",
            format!("{v} (the version the profile is built for)"),
        )
    } else if verified {
        (
            "ok  ",
            format!("{v} (verified by the conformance suite; the profile is built for {pinned})"),
        )
    } else {
        (
            "warn",
            format!("{v}: not verified by the conformance suite (verified: "),
        )
    };
    let prefix = format!("{level} harness: {}: ", h.name());
    assert!(
        out.lines()
            .any(|l| l.starts_with(&prefix) && l.contains(&says)),
        "no line {prefix}… {says}:\n{out}"
    );
}

/// The time from `fm-send` to the model's request holding the doorbell,
/// on an idle agent, printed (docs/harnesses.md, "Conformance suite";
/// BENCHMARKS.md): through the leg under `claude_leg::`, typed under
/// `claude::` and `codex::`. Five sends, each acknowledged first.
pub fn leg_latency(h: Harness) {
    use std::io::Write as _;
    let Some(mut w) = world(h) else { return };
    w.spawn_ready();
    w.reply(Reply::Ack);
    let mut times = Vec::new();
    for n in 1..=5 {
        // Idle, and on the leg armed again by the last turn's end.
        w.wait_idle(30.0);
        if w.leg {
            w.wait_for("a waiter", 10.0, |w| {
                w.home.exists(&format!("state/{ID}.leg"))
            });
        }
        let before = w.model.requests().len();
        let t0 = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let (outcome, leg) = w.send_leg(&format!("latency probe {n}"));
        assert_eq!(outcome, "rang", "{}", w.screen_escaped());
        assert_eq!(leg, if w.leg { "hook" } else { "typed" });
        let mut at = None;
        let found = crate::harness::wait_until(30.0, || {
            at = w.model.requests()[before..]
                .iter()
                .find(|r| {
                    r["main"] == true
                        && r["raw_prompt"]
                            .as_str()
                            .is_some_and(|p| p.contains("firstmate inbox"))
                })
                .and_then(|r| r["t"].as_f64());
            at.is_some()
        });
        assert!(
            found,
            "probe {n}: no request with the doorbell; since the send: {:#?}\n--- screen\n{}\n--- events\n{}",
            w.model.requests()[before..]
                .iter()
                .map(|r| (
                    r["main"].clone(),
                    r["raw_prompt"].clone(),
                    r["rule"].clone()
                ))
                .collect::<Vec<_>>(),
            w.screen(),
            w.home.read_string("state/events.jsonl")
        );
        times.push(at.unwrap() - t0);
        w.wait_for("the acknowledgement", 30.0, |w| {
            w.home
                .exists(&format!("state/{ID}.inbox/handled/{n:03}.msg"))
        });
    }
    times.sort_by(f64::total_cmp);
    let _ = writeln!(
        std::io::stderr().lock(),
        "ring {} {} leg={}: fm-send to the model's request: median {:.3} s, min {:.3} s, max {:.3} s (5 sends)",
        h.name(),
        h.version_under_test(),
        if w.leg { "hook" } else { "typed" },
        times[2],
        times[0],
        times[4]
    );
}

/// Usage per worker: the tokens the loopback model reported for every
/// turn of the agent's main loop — as the agent itself wrote them into
/// its transcript (Claude Code's session JSONL, Codex's rollout) — are
/// what the counter (`fm-watch --once`) keeps and `fm-crew-state --json`
/// and `fm top`'s USAGE column show. The model server charges 100 input
/// tokens and a quarter of the answer's length in output tokens a
/// response, with nothing cached and no cost.
pub fn usage_shows_the_model_servers_tokens(h: Harness) {
    let Some(mut w) = world(h) else { return };
    w.spawn_ready();
    // A long answer: its output tokens are the final count, not the one
    // a stream starts with.
    w.reply(Reply::Stream(1));
    w.sends("hello there", "rang");
    w.wait_for("the doorbell to reach the model", 30.0, |w| {
        w.doorbells_received() == 1
    });
    w.wait_idle(30.0);
    let expected = || {
        let main = w.model.main_requests();
        let output: u64 = main
            .iter()
            .map(|r| {
                let text = r["reply"]["text"].as_str().unwrap_or("");
                (text.chars().count() as u64 / 4).max(1)
            })
            .sum();
        (100 * main.len() as u64, output)
    };
    let count = || {
        let mut c = w.fm("watch").arg("--once").stdout_any().stderr_any();
        for (k, v) in w.agent_env() {
            c = c.env(k, v);
        }
        c.run();
        w.fm("crew-state")
            .args([ID, "--json"])
            .stdout_json()
            .run()
            .json()["usage"]
            .clone()
    };
    // The transcript may trail the screen by a moment.
    let mut usage = serde_json::Value::Null;
    let ok = crate::harness::wait_until(20.0, || {
        usage = count();
        let (input, output) = expected();
        usage["input_tokens"] == input && usage["output_tokens"] == output
    });
    let (input, output) = expected();
    assert!(
        ok,
        "usage {usage} but the model server charged {input} in, {output} out over {} main requests",
        w.model.main_requests().len()
    );
    assert_eq!(usage["cache_read_tokens"], 0, "{usage}");
    assert_eq!(usage["cache_write_tokens"], 0, "{usage}");
    assert_eq!(usage["total_tokens"], input + output, "{usage}");
    assert!(
        usage.get("cost_usd").is_none(),
        "no cost was written: {usage}"
    );
    // The dashboard's column, counted by its own reader.
    let mut argv = vec![
        "env".to_string(),
        format!("FM_HOME={}", w.home.root().display()),
        "TERM=xterm-256color".into(),
    ];
    argv.extend(w.agent_env().into_iter().map(|(k, v)| format!("{k}={v}")));
    argv.push(crate::harness::bin("fm").display().to_string());
    argv.push("top".into());
    let mut args = vec![
        "new-window",
        "-d",
        "-P",
        "-F",
        "#{pane_id}",
        "-t",
        "=fm",
        "--",
    ];
    args.extend(argv.iter().map(String::as_str));
    let dash = w.tmux(&args).trim().to_string();
    let total = input + output;
    let shown = if total < 1000 {
        total.to_string()
    } else {
        format!("{:.1}k", total as f64 / 1e3)
    };
    let ok = crate::harness::wait_until(20.0, || {
        let screen = w.tmux(&["capture-pane", "-p", "-t", &dash]);
        screen.contains("USAGE") && screen.lines().any(|l| l.contains(ID) && l.contains(&shown))
    });
    assert!(
        ok,
        "the USAGE column never showed {shown}:\n{}",
        w.tmux(&["capture-pane", "-p", "-t", &dash])
    );
}

/// Claude Code's own session file (`<config dir>/sessions/<pid>.json`) is
/// what crew state reads busy, idle and waiting from, its hooks off: busy
/// while the answer streams, idle after, waiting on a permission prompt.
/// (Codex writes no such file: its session log is
/// [`busy_while_streaming_without_hooks`].)
pub fn agent_session_reports(h: Harness) {
    if h != Harness::Claude {
        return;
    }
    let Some(mut w) = World::new(
        h,
        Opts {
            hooks: false,
            prompts: true,
            ..Opts::default()
        },
    ) else {
        return;
    };
    w.spawn_ready();
    let sessions = w.agent_home.join(".claude/sessions");
    assert!(
        std::fs::read_dir(&sessions)
            .is_ok_and(|mut d| d
                .any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json")))),
        "no session file under {}",
        sessions.display()
    );
    w.crew_holds("idle from the session file", 2.0, |c| c == idle(h));
    w.reply(Reply::Stream(8));
    w.sends("take your time", "rang");
    w.wait_for("busy from the session file", 20.0, |w| {
        w.crew() == working(h)
    });
    w.crew_holds("busy while it streams", 3.0, |c| c == working(h));
    w.wait_for("idle after the turn", 30.0, |w| w.crew() == idle(h));
    let probe = w.worktree().join("approved.txt");
    let cmd: &'static str = Box::leak(format!("echo yes > {}", probe.display()).into_boxed_str());
    w.reply(Reply::Command(cmd));
    w.sends("run it", "rang");
    w.wait_for("waiting from the session file", 30.0, |w| {
        w.crew() == "state: blocked · source: agent-session · waiting in a dialog: permission"
    });
    w.reply(Reply::Text);
    w.keys(&["Escape"]);
    w.wait_for("idle once the prompt is gone", 30.0, |w| {
        w.crew() == idle(h)
    });
    assert!(!probe.exists(), "nobody approved the command");
}

//! The Codex delivery leg (docs/spec/ring.md#codex-queue) against the real
//! Codex: every doorbell of these scenarios goes through `codex queue`
//! once the thread is known — `fm-send` reports `leg queue`, nothing is
//! typed (the doorbell never sits in the composer, the event log has no
//! fallback), and the model receives it as a user message of its own. The
//! same scenarios with the legs switched off (`[send] legs = false`) type
//! it, as every scenario of `scenarios.rs` does.
//!
//! `leg_codex::queue::<scenario>` and `leg_codex::typed::<scenario>`. The
//! idle scenario prints the time from `fm-send` to the model's request
//! (the figure in BENCHMARKS.md).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::Harness;
use crate::world::{ID, Opts, Reply, World};

fn world(legs: bool, opts: Opts) -> Option<World> {
    World::new(Harness::Codex, Opts { legs, ..opts })
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// `fm-send t1 <text>`: the doorbell outcome and the leg its event
/// names (`typed` when none).
#[track_caller]
fn send(w: &World, text: &str) -> (String, String) {
    let out = w
        .fm("send")
        .args([ID, text])
        .stdout_regex(&format!(
            r"^queued {ID} \d{{3}}\.msg · doorbell [a-z-]+( · leg [a-z]+)?\n$"
        ))
        .stderr_any()
        .run()
        .stdout();
    let line = out.trim_end();
    let doorbell = line
        .split(" · doorbell ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .unwrap()
        .to_string();
    // The leg the send's event names (its output may name it too).
    let leg = events(w)
        .lines()
        .rev()
        .find(|l| l.contains(r#""action":"inbox.queued""#))
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .and_then(|v| v["leg"].as_str().map(str::to_string))
        .unwrap_or_else(|| "typed".into());
    (doorbell, leg)
}

/// What the leg's send must report: through the queue with the leg on;
/// with it off, the typed doorbell's outcome `typed`.
#[track_caller]
fn sends_through(w: &World, legs: bool, text: &str, typed: &[&str]) {
    let (doorbell, leg) = send(w, text);
    if legs {
        assert_eq!(
            (doorbell.as_str(), leg.as_str()),
            ("rang", "queue"),
            "fm-send {text:?}\n--- events\n{}",
            events(w)
        );
    } else {
        assert_eq!(leg, "typed");
        assert!(typed.contains(&doorbell.as_str()), "doorbell {doorbell}");
    }
}

fn events(w: &World) -> String {
    w.home.read_string("state/events.jsonl")
}

/// Nothing was typed for delivery: no leg fell back, and the composer
/// (the last `› ` line) never held the doorbell.
#[track_caller]
fn nothing_typed(w: &World) {
    let ev = events(w);
    assert!(!ev.contains("ring.leg-fallback"), "{ev}");
    assert!(ev.contains(r#""ring.leg""#), "{ev}");
}

/// The composer, i.e. the last `› ` line of the screen.
fn composer(w: &World) -> String {
    w.screen()
        .lines()
        .rev()
        .find(|l| l.starts_with("› "))
        .unwrap_or("")
        .to_string()
}

/// The second at which the model got the first request whose last user
/// turn is exactly the doorbell, after `since`.
fn doorbell_request_at(w: &World, since: f64) -> Option<f64> {
    let door = w.doorbell();
    w.model.main_requests().iter().find_map(|r| {
        let t = r["t"].as_f64()?;
        let last = r["user_turns"].as_array()?.last()?.as_array()?.clone();
        (t >= since && last.len() == 1 && last[0].as_str()?.trim() == door).then_some(t)
    })
}

/// Idle agent: the doorbell reaches the model as its own user turn, the
/// composer never holds it. Prints the latency per leg.
pub fn idle(legs: bool) {
    let Some(mut w) = world(legs, Opts::default()) else {
        return;
    };
    w.spawn_ready();
    let t0 = now();
    sends_through(&w, legs, "hello there", &["rang"]);
    if legs {
        assert!(
            !composer(&w).contains("firstmate inbox"),
            "typed into the composer: {}",
            w.screen()
        );
    }
    w.wait_for("the doorbell to reach the model", 30.0, |w| {
        w.doorbells_received() == 1
    });
    let at = doorbell_request_at(&w, t0).expect("the doorbell's request");
    eprintln!(
        "leg codex {} ({}): fm-send to the model's request in {:.2} s",
        if legs { "queue" } else { "typed" },
        Harness::Codex.version_under_test(),
        at - t0
    );
    assert!(w.last_turn_is_the_doorbell(), "{:#?}", w.model.user_turns());
    w.wait_idle(20.0);
    w.holds_for("one doorbell only", 2.0, |w| w.doorbells_received() == 1);
    if legs {
        nothing_typed(&w);
    }
}

/// Busy while the answer streams (or before its first token): the second
/// doorbell is queued at once, runs after the turn, aborts nothing.
fn busy(legs: bool, reply: Reply) {
    let Some(mut w) = world(legs, Opts::default()) else {
        return;
    };
    w.spawn_ready();
    w.reply(reply);
    sends_through(&w, legs, "a long answer", &["rang"]);
    w.wait_working(30.0);
    w.reply(Reply::Text);
    // The typed doorbell is held for the turn's end and the watcher rings it.
    w.start_watcher();
    sends_through(&w, legs, "while it works", &["queued"]);
    w.wait_for("the second doorbell at the model", 60.0, |w| {
        w.doorbells_received() == 2
    });
    let turns = w.model.user_turns();
    let door = w.doorbell();
    assert_eq!(
        turns
            .iter()
            .filter(|t| t.len() == 1 && t[0].trim() == door)
            .count(),
        2,
        "each doorbell its own turn: {turns:#?}"
    );
    // The first turn's answer was not cut short: no interrupt.
    assert!(
        !w.screen().contains("Conversation interrupted"),
        "{}",
        w.screen()
    );
    w.wait_idle(30.0);
    if legs {
        nothing_typed(&w);
    }
}

pub fn busy_while_streaming(legs: bool) {
    busy(legs, Reply::Stream(8));
}

pub fn busy_while_silent(legs: bool) {
    busy(legs, Reply::Silent(8));
}

/// Three sends in a row: one queued doorbell covers them (no copies
/// stacked); every message is read in the end.
pub fn three_quick_sends(legs: bool) {
    let Some(mut w) = world(legs, Opts::default()) else {
        return;
    };
    w.spawn_ready();
    w.reply(Reply::Ack);
    w.start_watcher();
    for n in 1..=3 {
        sends_through(&w, legs, &format!("message {n}"), &["rang", "queued"]);
    }
    w.wait_for("all three messages acknowledged", 60.0, |w| {
        (1..=3).all(|n| {
            w.home
                .exists(&format!("state/{ID}.inbox/handled/{n:03}.msg"))
        })
    });
    w.wait_idle(20.0);
    // Long enough for a stacked copy to show up.
    std::thread::sleep(Duration::from_secs(if legs { 12 } else { 2 }));
    let got = w.doorbells_received();
    if legs {
        assert_eq!(
            got,
            1,
            "one queued doorbell for 3 sends\n{:#?}\n--- events\n{}",
            w.model.user_turns(),
            events(&w)
        );
        let queued = events(&w).matches(r#""detail":"queued for thread"#).count();
        assert_eq!(queued, 1, "{}", events(&w));
        nothing_typed(&w);
    } else {
        assert!((1..=3).contains(&got), "{got} doorbells for 3 sends");
    }
}

/// The captain's half-typed text: through the queue the doorbell still
/// arrives and the text stays in the composer, never submitted.
pub fn half_typed_text(legs: bool) {
    let Some(mut w) = world(
        legs,
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
    sends_through(&w, legs, "ring while the captain types", &["skipped"]);
    if !legs {
        // Typed: nothing until the captain clears the composer.
        w.start_watcher();
        w.holds_for("the captain's text untouched", 4.0, |w| {
            w.screen().contains("half typed text") && w.doorbells_received() == 0
        });
        w.keys(&["C-u"]);
    }
    w.wait_for("the doorbell to reach the model", 40.0, |w| {
        w.doorbells_received() == 1
    });
    assert!(
        !w.model
            .user_blocks()
            .iter()
            .any(|b| b.contains("half typed")),
        "the captain's text was submitted: {:#?}",
        w.model.user_turns()
    );
    if legs {
        w.wait_idle(20.0);
        assert!(
            composer(&w).contains("half typed text"),
            "the captain's text is gone: {}",
            w.screen()
        );
        nothing_typed(&w);
    }
}

/// A dialog (Codex's approval prompt) is left alone: through the queue
/// nothing is pressed, the doorbell waits in the queue and runs once the
/// captain closed the dialog.
pub fn dialog_approval(legs: bool) {
    let Some(mut w) = world(
        legs,
        Opts {
            prompts: true,
            grace_secs: 1,
            ..Opts::default()
        },
    ) else {
        return;
    };
    w.spawn_ready();
    let probe = w.worktree().join("approved.txt");
    let cmd: &'static str = Box::leak(format!("echo yes > {}", probe.display()).into_boxed_str());
    w.reply(Reply::Command(cmd));
    sends_through(&w, legs, "run it", &["rang"]);
    w.wait_for("the approval prompt", 30.0, |w| {
        w.crew().ends_with("waiting in a dialog: approval")
    });
    w.reply(Reply::Text);
    sends_through(&w, legs, "anyone there?", &["dialog"]);
    let requests = w.model.main_requests().len();
    w.holds_for("the dialog left alone", 10.0, |w| {
        w.crew().ends_with("waiting in a dialog: approval")
            && w.model.main_requests().len() == requests
    });
    assert!(!probe.exists(), "nobody approved the command");
    if legs {
        // The captain approves: the turn goes on, and the queued doorbell
        // runs after it.
        w.keys(&["y"]);
        w.wait_for("the queued doorbell after the dialog", 40.0, |w| {
            w.doorbells_received() == 2
        });
        assert!(probe.exists(), "the captain approved the command");
        nothing_typed(&w);
    } else {
        w.keys(&["Escape"]);
        assert!(!probe.exists(), "nobody approved the command");
    }
}

/// The captain answers the dialog with Escape: the turn is interrupted,
/// and Codex runs no queued message until its next turn. Through the leg
/// the watcher's re-ring finds the queued doorbell stuck and types it;
/// either way it arrives.
pub fn dialog_escaped(legs: bool) {
    let Some(mut w) = world(
        legs,
        Opts {
            prompts: true,
            grace_secs: 1,
            ..Opts::default()
        },
    ) else {
        return;
    };
    w.spawn_ready();
    let probe = w.worktree().join("approved.txt");
    let cmd: &'static str = Box::leak(format!("echo yes > {}", probe.display()).into_boxed_str());
    w.reply(Reply::Command(cmd));
    sends_through(&w, legs, "run it", &["rang"]);
    w.wait_for("the approval prompt", 30.0, |w| {
        w.crew().ends_with("waiting in a dialog: approval")
    });
    w.reply(Reply::Text);
    sends_through(&w, legs, "anyone there?", &["dialog"]);
    w.keys(&["Escape"]);
    w.start_watcher();
    w.wait_for("the second doorbell", 90.0, |w| w.doorbells_received() == 2);
    assert!(!probe.exists(), "nobody approved the command");
    if legs {
        let ev = events(&w);
        assert!(ev.contains("not taken and the agent is idle"), "{ev}");
    }
}

/// Right after the spawn the thread does not exist yet: the ring falls
/// back to typing (or owes it), and the doorbell arrives once.
pub fn booting(legs: bool) {
    let Some(mut w) = world(legs, Opts::default()) else {
        return;
    };
    w.spawn();
    let (doorbell, leg) = send(&w, "right after the spawn");
    assert_eq!(leg, "typed", "no thread before the first turn");
    if legs {
        let ev = events(&w);
        assert!(ev.contains("ring.leg-fallback"), "{ev}");
        assert!(ev.contains("not known yet"), "{ev}");
    }
    match doorbell.as_str() {
        "rang" => {}
        "booting" | "queued" => w.start_watcher(),
        other => panic!("doorbell {other}\n{}", w.screen_escaped()),
    }
    w.wait_for("the doorbell at the model", 60.0, |w| {
        w.doorbells_received() == 1
    });
    w.wait_idle(30.0);
    w.holds_for("one doorbell only", 3.0, |w| w.doorbells_received() == 1);
}

/// A relaunch is a new agent with a new thread: the old thread is not
/// rung; once the new one reported its thread the queue takes it.
pub fn relaunch(legs: bool) {
    let Some(mut w) = world(legs, Opts::default()) else {
        return;
    };
    w.spawn_ready();
    let old = session(&w);
    // Relaunched in the agent's environment, as it was spawned: spawn
    // and relaunch note the Codex home the launch sees.
    let mut relaunch = w.fm("control");
    for (k, v) in w.agent_env() {
        relaunch = relaunch.env(k, v);
    }
    relaunch
        .args([ID, "relaunch", "--note", "carry on"])
        .stdout(format!("relaunched {ID} harness=codex from=codex\n"))
        .run();
    w.wait_for("the new agent's thread in meta", 60.0, |w| {
        !session(w).is_empty() && session(w) != old
    });
    w.wait_idle(30.0);
    sends_through(&w, legs, "after the relaunch", &["rang"]);
    w.wait_for("the doorbell in the new thread", 40.0, |w| {
        w.doorbells_received() == 1
    });
    if legs {
        let state = w.home.read_string(&format!("state/{ID}.codex-queue"));
        assert!(
            state.contains(&format!("thread={}\n", session(&w))),
            "{state}"
        );
        nothing_typed(&w);
    }
}

/// Durable: a doorbell queued while the tmux server (and the TUI with
/// it) is gone runs once `fm restore` resumed the thread — one doorbell,
/// queued once, nothing typed.
pub fn restore(legs: bool) {
    let Some(mut w) = world(legs, Opts::default()) else {
        return;
    };
    w.spawn_ready();
    w.wait_for("the hooks to record the thread", 30.0, |w| {
        !session(w).is_empty()
    });
    let thread = session(&w);
    w.tmux(&["kill-server"]);
    if legs {
        sends_through(&w, legs, "after the restart", &[]);
    } else {
        assert_eq!(send(&w, "after the restart").0, "dead");
    }
    let mut restore = crate::harness::Cmd::new(crate::harness::bin("fm"))
        .env("FM_HOME", w.home.root())
        .env("PATH", World::path());
    for (k, v) in w.agent_env() {
        restore = restore.env(k, v);
    }
    let out = restore
        .arg("restore")
        .stdout_regex(&format!(
            "restored {ID} pane=%\\d+ harness=codex resumed={thread} doorbell=(rang|queued)\n\
             restored 1 \\(resumed 1, fresh 0\\), skipped 0, failed 0\n"
        ))
        .run()
        .stdout();
    w.pane = out
        .split("pane=")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .unwrap()
        .to_string();
    // A resumed Codex can read busy past restore's ring bound on a loaded
    // machine: the ring is then owed (`queued`), which is the watcher's to
    // ring once the agent reads idle — as in a real fleet.
    if out.contains("doorbell=queued") {
        w.start_watcher();
    }
    w.wait_for("the doorbell in the resumed thread", 60.0, |w| {
        w.doorbells_received() == 1
    });
    w.wait_idle(30.0);
    w.holds_for("one doorbell only", 12.0, |w| w.doorbells_received() == 1);
    if legs {
        let ev = events(&w);
        assert_eq!(
            ev.matches(r#""detail":"queued for thread"#).count(),
            1,
            "{ev}"
        );
        nothing_typed(&w);
    }
}

fn session(w: &World) -> String {
    w.home
        .read_string(&format!("state/{ID}.meta"))
        .lines()
        .find_map(|l| l.strip_prefix("session="))
        .unwrap_or("")
        .to_string()
}

/// One `#[test]` per scenario and leg setting.
macro_rules! leg_codex {
    ($($scenario:ident),* $(,)?) => {
        pub mod queue {
            $(#[test] fn $scenario() { super::$scenario(true) })*
        }
        pub mod typed {
            $(#[test] fn $scenario() { super::$scenario(false) })*
        }
    };
}

leg_codex!(
    idle,
    busy_while_streaming,
    busy_while_silent,
    three_quick_sends,
    half_typed_text,
    dialog_approval,
    dialog_escaped,
    booting,
    relaunch,
    restore,
);

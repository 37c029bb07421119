//! Delivery legs (docs/spec/ring.md#legs) with the stand-in agent running
//! the hook leg's waiter as Claude Code's `asyncRewake` hooks do
//! (`fm-stand-in --leg`): a ring through the leg types nothing, the
//! waiter's exit starts the agent's turn, the watcher's re-ring goes the
//! same way, the legs switched off type the doorbell as before, and
//! teardown ends the waiter.

use std::path::Path;

use crate::control::{briefed, pane_of, project};
use crate::harness::{Cmd, TestHome, Tmux, bin, wait_until};

/// `legged`: the stand-in with its waiter and the hook leg.
const LEGGED: &str = r#"
[harness.legged]
launch = ["fm-stand-in", "--leg", "--home", "{home}", "{id}"]
exit = "/exit"
busy_regex = "^stand-in: busy"
agent_commands = ["fm-stand-in"]
composer_regex = "^stand-in> ?(.*)$"
leg = "hook"
"#;

fn spawn(h: &TestHome, t: &Tmux, project: &Path, id: &str) -> String {
    briefed(h, id);
    pane_of(
        &Cmd::new(bin("fm-control"))
            .env("FM_HOME", h.root())
            .env("FM_TMUX_SOCKET", &t.socket)
            .args([id, "spawn", "--project"])
            .arg(project)
            .args(["--harness", "legged"])
            .stdout_any()
            .run()
            .stdout(),
    )
}

fn send(h: &TestHome, t: &Tmux, id: &str, body: &str) -> Cmd {
    Cmd::new(bin("fm-send"))
        .env("FM_HOME", h.root())
        .env("FM_TMUX_SOCKET", &t.socket)
        .args([id, body])
}

/// The waiter's pid as `state/<id>.leg` names it.
fn waiter_pid(h: &TestHome, id: &str) -> Option<i32> {
    let p = h.root().join(format!("state/{id}.leg"));
    let s = std::fs::read_to_string(p).ok()?;
    s.split('\t').next()?.parse().ok()
}

fn alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

fn legged(t: &Tmux, id: &str) -> (TestHome, String) {
    let h = TestHome::new();
    h.write("config/firstmate.toml", LEGGED);
    let proj = project(&h);
    let pane = spawn(&h, t, &proj, id);
    assert!(
        wait_until(15.0, || t.capture(&pane).contains("stand-in>")
            && waiter_pid(&h, id).is_some()),
        "no waiter: {}",
        t.capture(&pane)
    );
    (h, pane)
}

#[test]
fn a_ring_through_the_hook_leg_types_nothing_and_starts_a_turn() {
    let Some(t) = Tmux::start() else { return };
    let (h, pane) = legged(&t, "l1");
    let first = waiter_pid(&h, "l1").unwrap();
    send(&h, &t, "l1", "hello there")
        .stdout("queued l1 001.msg \u{b7} doorbell rang \u{b7} leg hook\n")
        .run();
    assert!(
        wait_until(10.0, || h.exists("state/l1.inbox/handled/001.msg")),
        "not acknowledged: {}",
        t.capture(&pane)
    );
    let screen = t.capture(&pane);
    assert!(screen.contains("hook: firstmate inbox"), "{screen}");
    assert_eq!(screen.matches("firstmate inbox").count(), 1, "{screen}");
    assert!(!screen.contains("submitted:"), "nothing typed: {screen}");
    // The turn's end starts a new waiter; the old one is gone.
    assert!(
        wait_until(10.0, || waiter_pid(&h, "l1").is_some_and(|p| p != first)),
        "no new waiter"
    );
    assert!(wait_until(5.0, || !alive(first)), "old waiter still runs");
    send(&h, &t, "l1", "again")
        .stdout("queued l1 002.msg \u{b7} doorbell rang \u{b7} leg hook\n")
        .run();
    assert!(wait_until(10.0, || h.exists("state/l1.inbox/handled/002.msg")));
    let screen = t.capture(&pane);
    assert_eq!(
        screen.matches("hook: firstmate inbox").count(),
        2,
        "{screen}"
    );
    assert!(!screen.contains("submitted:"), "nothing typed: {screen}");
    let events = h.read_string("state/events.jsonl");
    assert_eq!(
        events.matches(r#""action":"ring.leg""#).count(),
        2,
        "{events}"
    );
    assert!(
        events.contains(r#""doorbell":"rang","leg":"hook""#),
        "{events}"
    );
    // fm-send --json names the leg too (once the turn's end armed a
    // new waiter: between a wake and the turn's end none listens).
    assert!(wait_until(10.0, || waiter_pid(&h, "l1").is_some_and(alive)));
    Cmd::new(bin("fm-send"))
        .env("FM_HOME", h.root())
        .env("FM_TMUX_SOCKET", &t.socket)
        .args(["--json", "l1", "third"])
        .stdout_has(r#""doorbell":"rang","leg":"hook""#)
        .run();
}

/// With the legs switched off (`FM_SEND_LEGS=false`) the doorbell is
/// typed as before, and the report names no leg; a leg whose waiter is
/// gone falls back to typing, and the event log says why.
#[test]
fn without_the_leg_the_doorbell_is_typed() {
    let Some(t) = Tmux::start() else { return };
    let (h, pane) = legged(&t, "l2");
    send(&h, &t, "l2", "typed please")
        .env("FM_SEND_LEGS", "false")
        .stdout("queued l2 001.msg \u{b7} doorbell rang\n")
        .run();
    assert!(
        wait_until(10.0, || h.exists("state/l2.inbox/handled/001.msg")),
        "{}",
        t.capture(&pane)
    );
    let screen = t.capture(&pane);
    assert!(screen.contains("submitted: : 'firstmate inbox"), "{screen}");
    assert!(!screen.contains("hook:"), "{screen}");
    // The waiter ended (a stand-in's Enter is a turn: a new one started);
    // one that is gone is not rung through.
    assert!(wait_until(10.0, || waiter_pid(&h, "l2").is_some()));
    let pid = waiter_pid(&h, "l2").unwrap();
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    assert!(wait_until(5.0, || !alive(pid)));
    // Past the boot window: a booting agent's leg arms itself, and its
    // ring would be owed rather than typed.
    let meta = h.read_string("state/l2.meta");
    let old = firstmate::clock::now() - 120;
    let meta: String = meta
        .lines()
        .map(|l| {
            if l.starts_with("spawned_at=") {
                format!("spawned_at={old}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    h.write("state/l2.meta", meta);
    send(&h, &t, "l2", "and now")
        .stdout("queued l2 002.msg \u{b7} doorbell rang\n")
        .run();
    assert!(wait_until(10.0, || h.exists("state/l2.inbox/handled/002.msg")));
    let events = h.read_string("state/events.jsonl");
    assert!(
        events.contains(r#""action":"ring.leg-fallback","#)
            && events.contains(r#""why":"the waiter is gone""#),
        "{events}"
    );
}

/// A doorbell through the leg that is never acknowledged is rung again
/// by the watcher's ladder — through the leg again — and escalated like
/// any other; teardown ends the waiter and removes its record.
#[test]
fn the_watcher_rerings_through_the_leg_and_teardown_ends_the_waiter() {
    let Some(t) = Tmux::start() else { return };
    let (h, pane) = legged(&t, "l3");
    send(&h, &t, "l3", "deaf")
        .stdout_has("doorbell rang \u{b7} leg hook")
        .run();
    assert!(
        wait_until(10.0, || t.capture(&pane).contains("going deaf")),
        "{}",
        t.capture(&pane)
    );
    assert!(wait_until(10.0, || waiter_pid(&h, "l3").is_some()));
    let watch = || {
        h.fm("watch")
            .env("FM_TMUX_SOCKET", &t.socket)
            .env("FM_WATCH_GRACE_SECS", "1")
            .arg("--once")
            .stdout_any()
            .stderr_any()
            .run();
    };
    assert!(
        wait_until(20.0, || {
            watch();
            let events = h.read_string("state/events.jsonl");
            events.contains(r#""action":"watch.rang""#)
        }),
        "never rung again"
    );
    let events = h.read_string("state/events.jsonl");
    let rang = events
        .lines()
        .find(|l| l.contains(r#""action":"watch.rang""#))
        .unwrap();
    assert!(rang.contains(r#""leg":"hook""#), "{rang}");
    assert!(
        wait_until(10.0, || t
            .capture(&pane)
            .matches("hook: firstmate inbox")
            .count()
            == 2),
        "{}",
        t.capture(&pane)
    );
    assert!(!t.capture(&pane).contains("submitted:"));
    assert!(wait_until(10.0, || waiter_pid(&h, "l3").is_some()));
    let pid = waiter_pid(&h, "l3").unwrap();
    Cmd::new(bin("fm-control"))
        .env("FM_HOME", h.root())
        .env("FM_TMUX_SOCKET", &t.socket)
        .args(["l3", "teardown", "--force"])
        .stdout_any()
        .run();
    assert!(
        wait_until(5.0, || !alive(pid)),
        "the waiter outlived teardown"
    );
    assert!(!h.exists("state/l3.leg"));
}

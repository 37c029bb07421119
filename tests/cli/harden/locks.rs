//! Class 5: every wait is bounded, the lock on an append target included
//! (docs/spec/files.md#locks: 5 s, then exit 3 naming what was locked). An action that
//! succeeded is never reported failed, or left hanging, because its event
//! append could not get a lock: it says so in a warning and exits 0.

use std::fs::{File, OpenOptions};

use crate::harness::TestHome;

/// A foreign `flock` on `rel`, as a hostile process holds it; released on
/// drop.
fn hold(h: &TestHome, rel: &str) -> File {
    let f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(h.path(rel))
        .unwrap();
    f.lock().unwrap();
    f
}

/// Longest any of these runs may take: the 5 s bound and some slack.
const BOUND: f64 = 12.0;

#[test]
fn a_locked_event_log_delays_but_never_fails_a_send_an_ack_or_a_claim() {
    let h = TestHome::new();
    h.write("state/t1.meta", "kind=ship\n");
    h.fm("board")
        .args(["add", "x"])
        .stdout("T-001 pending\n")
        .run();
    let held = hold(&h, "state/events.jsonl");
    let warned = "event";
    h.fm("send")
        .args(["t1", "--quiet", "hello"])
        .status(0)
        .stdout("queued t1 001.msg \u{b7} doorbell quiet\n")
        .stderr_has(warned)
        .stderr_has("events.jsonl")
        .stderr_has("timed out after 5s")
        .start()
        .wait(BOUND);
    assert!(h.exists("state/t1.inbox/001.msg"));
    assert!(
        !h.exists("state/t1.inbox/002.msg"),
        "the message was sent twice"
    );
    h.fm("ack")
        .args(["t1", "1"])
        .status(0)
        .stdout_any()
        .stderr_has("events.jsonl")
        .start()
        .wait(BOUND);
    assert!(h.exists("state/t1.inbox/handled/001.msg"));
    h.fm("board")
        .args(["claim", "T-1", "--as", "w1"])
        .status(0)
        .stdout_any()
        .stderr_has("events.jsonl")
        .start()
        .wait(BOUND);
    drop(held);
    h.fm("board").args(["show", "T-1"]).stdout_has("w1").run();
}

#[test]
fn a_locked_status_log_is_exit_3_naming_it_and_nothing_written() {
    let h = TestHome::new();
    h.write("state/t1.status", "working: before\n");
    let held = hold(&h, "state/t1.status");
    h.fm("status")
        .args(["t1", "done", "after"])
        .status(3)
        .stdout("")
        .stderr_has("timed out after 5s waiting for lock")
        .stderr_has("t1.status")
        .start()
        .wait(BOUND);
    drop(held);
    assert_eq!(h.read_string("state/t1.status"), "working: before\n");
}

#[test]
fn a_locked_wakes_log_never_hangs_the_watcher_and_loses_no_wake() {
    let h = TestHome::new();
    h.write("state/t1.status", "done: shipped\n");
    let held = hold(&h, "state/wakes.log");
    h.fm("watch")
        .arg("--once")
        .status_any()
        .stdout_any()
        .stderr_has("wakes.log")
        .start()
        .wait(BOUND);
    drop(held);
    h.fm("watch")
        .arg("--once")
        .stdout_has("done: shipped")
        .run();
}

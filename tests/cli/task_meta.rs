//! One reading of a task's meta for every tool (docs/spec/meta.md): a hand-edited
//! value with stray whitespace names the same pane on the same tmux server
//! for `fm-send` and for the watcher.

use crate::harness::{TestHome, Tmux};

#[test]
fn send_and_the_watcher_pick_the_same_socket_for_a_padded_tmux_socket() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let pane = t.window("w", &["cat"]);
    // A trailing space after the socket, as a hand edit leaves it.
    h.write(
        "state/t1.meta",
        format!("kind=ship\npane={pane}\ntmux_socket={} \n", t.socket),
    );
    h.fm("send")
        .args(["--quiet", "t1", "first"])
        .stdout("queued t1 001.msg \u{b7} doorbell quiet\n")
        .run();
    // The watcher rings that record in the pane: it found the pane alive on
    // the task's server, not gone from a server named "<socket> ".
    let run = h
        .fm("watch")
        .args(["--once", "--json"])
        .env("FM_WATCH_GRACE_SECS", "0")
        .stdout_json()
        .run();
    let report = run.json();
    let rings = report["rings"].as_array().expect("rings");
    assert_eq!(rings.len(), 1, "{report}");
    assert_eq!(
        (rings[0]["task"].as_str(), rings[0]["outcome"].as_str()),
        (Some("t1"), Some("rang")),
        "{report}"
    );
    assert_eq!(
        report["wakes"].as_array().map(Vec::len),
        Some(0),
        "{report}"
    );
    // fm-send rings the very same pane.
    h.fm("send")
        .args(["t1", "second"])
        .stdout("queued t1 002.msg \u{b7} doorbell rang\n")
        .run();
    let screen = t.capture(&pane);
    assert!(
        screen.matches("firstmate inbox: new mail in").count() >= 2,
        "two doorbells in the pane:\n{screen}"
    );
}

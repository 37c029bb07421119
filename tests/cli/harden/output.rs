//! Class 4: workers' text never drives the captain's terminal. Status
//! lines, board text, message bodies and file names holding escape
//! sequences come out with every control character made visible from
//! every human-readable output; `--json` keeps the exact text, escaped.

use crate::harness::{Output, TestHome};

/// An OSC 52 clipboard write, a clear-screen, an 8-bit CSI and a bidi
/// override: what a hostile worker would type.
const EVIL: &str = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\u{9b}31m\u{202e}gotcha";
/// The same, as the captain sees it.
const SHOWN: &str = "\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[2J\\u{9b}31m\\u{202e}gotcha";

/// Fails if a stream holds a byte or character that acts on a terminal.
#[track_caller]
fn assert_inert(what: &str, out: &Output) {
    for (name, s) in [("stdout", out.stdout()), ("stderr", out.stderr())] {
        let bad: Vec<char> = s
            .chars()
            .filter(|&c| {
                (c.is_control() && c != '\n' && c != '\t') || ('\u{202a}'..='\u{202e}').contains(&c)
            })
            .collect();
        assert!(bad.is_empty(), "{what}: {name} holds {bad:?}: {s:?}");
    }
}

/// A home where task `t1`'s status log, inbox and the board hold [`EVIL`].
fn hostile_home() -> TestHome {
    let h = TestHome::new();
    h.write("state/t1.meta", "kind=ship\n");
    h.write(
        "state/t1.status",
        format!("working: {EVIL}\nneeds-decision [key=k]: {EVIL}\nnote: {EVIL}\n"),
    );
    h.fm("send")
        .args(["t1", "--quiet", &format!("{EVIL}\nsecond line")])
        .stdout("queued t1 001.msg \u{b7} doorbell quiet\n")
        .run();
    h.fm("board")
        .args(["add", &format!("subject {EVIL}")])
        .args(["--description", &format!("line one\n{EVIL}")])
        .stdout("T-001 pending\n")
        .run();
    h.fm("board")
        .args(["comment", "T-1", "--as", "w1", EVIL])
        .stdout_any()
        .run();
    h
}

#[test]
fn human_output_of_every_reader_makes_escapes_visible() {
    let h = hostile_home();
    let reads: &[(&str, &[&str])] = &[
        ("crew-state", &[]),
        ("crew-state", &["t1"]),
        ("status", &["t1"]),
        ("status", &["t1", "--log"]),
        ("board", &["list"]),
        ("board", &["show", "T-1"]),
        ("ack", &["t1", "--list"]),
    ];
    for (tool, args) in reads {
        let out = h.fm(tool).args(*args).stdout_has(SHOWN).run();
        assert_inert(&format!("{tool} {args:?}"), &out);
    }
}

#[test]
fn the_wakes_feed_and_the_watcher_print_escapes_visibly() {
    let h = hostile_home();
    h.fm("watch").arg("--once").stdout_any().run();
    let out = h.fm("watch").arg("--drain").stdout_any().run();
    assert!(out.stdout().contains("gotcha"), "{}", out.stdout());
    assert_inert("watch --drain", &out);
}

#[test]
fn json_keeps_the_exact_text_escaped() {
    let h = hostile_home();
    let exact = |v: &serde_json::Value, path: &str| {
        assert_eq!(
            v.pointer(path).and_then(|s| s.as_str()),
            Some(EVIL),
            "{path} in {v}"
        );
    };
    let out = h.fm("status").args(["t1", "--json"]).stdout_json().run();
    assert_inert("status --json", &out);
    exact(&out.json(), "/open/0/text");
    let out = h
        .fm("crew-state")
        .args(["t1", "--json"])
        .stdout_json()
        .run();
    assert_inert("crew-state --json", &out);
    exact(&out.json(), "/open_decisions/0/text");
    let out = h.fm("crew-state").arg("--json").stdout_json().run();
    assert_inert("crew-state --json (fleet)", &out);
    exact(&out.json(), "/0/open_decisions/0/text");
    let out = h
        .fm("board")
        .args(["show", "T-1", "--json"])
        .stdout_json()
        .run();
    assert_inert("board show --json", &out);
    exact(&out.json(), "/comments/0/text");
    let out = h.fm("board").args(["list", "--json"]).stdout_json().run();
    assert_inert("board list --json", &out);
    exact(&out.json(), "/0/comments/0/text");
}

#[test]
fn a_file_name_in_a_warning_cannot_drive_the_terminal() {
    let h = TestHome::new();
    h.fm("board")
        .args(["add", "x"])
        .stdout("T-001 pending\n")
        .run();
    // A record whose headers never end, under a name nothing can list.
    h.write("state/t1.meta", "kind=ship\n");
    h.write(
        "state/t1.inbox/001.msg",
        format!("schema=fm-inbox.v1\nfrom={EVIL}\n"),
    );
    let out = h
        .fm("ack")
        .args(["t1", "--list"])
        .status(1)
        .stdout_any()
        .stderr_has("001.msg not listed")
        .run();
    assert_inert("ack --list warning", &out);
    // A usage error quotes the argument it refuses.
    let out = h
        .fm("status")
        .args(["t1", "--bogus", EVIL])
        .status(2)
        .stderr_any()
        .run();
    assert_inert("usage error", &out);
    let out = h
        .fm("status")
        .args([EVIL, "working", "x"])
        .status(2)
        .stderr_has("invalid task id")
        .run();
    assert_inert("invalid id", &out);
}

#[test]
fn the_message_body_stays_byte_exact_for_the_worker() {
    let h = hostile_home();
    h.fm("ack")
        .args(["t1", "--read", "1"])
        .stdout(format!("{EVIL}\nsecond line"))
        .run();
}

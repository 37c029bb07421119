//! Class 12: an idempotency key is bound to its request. The same key
//! with the same request replays the kept answer; the same key with
//! another request (another body, other records, another line, another
//! board task, a teardown under a spawn's key) is refused, exit 2, and
//! does nothing. A kept answer whose exit code no tool of ours gives (a
//! forged 255) is a corrupt record: exit 3, nothing replayed, nothing
//! redone. Errors quote user input as a bounded, escaped prefix.

use crate::harness::{TestHome, Tmux, bin};

const REFUSED: &str = "was used for another request; nothing was done\n";

/// The home's files but for lock files (a lookup takes its lock).
fn tree(h: &TestHome) -> Vec<String> {
    let mut t = h.tree();
    t.retain(|p| !p.ends_with(".lock"));
    t
}

fn task(h: &TestHome) {
    h.write("state/t1.meta", "kind=ship\n");
}

fn send(h: &TestHome, key: &str, body: &str) -> crate::harness::Cmd {
    h.fm("send")
        .args(["--quiet", "--idempotency-key", key, "t1", body])
}

#[test]
fn a_send_key_reused_for_another_body_is_refused() {
    let h = TestHome::new();
    task(&h);
    send(&h, "k1", "one")
        .stdout("queued t1 001.msg \u{b7} doorbell quiet\n")
        .stderr("")
        .run();
    let before = h.tree();
    send(&h, "k1", "two")
        .status(2)
        .stdout("")
        .stderr(format!("fm-send: error: idempotency key \"k1\" {REFUSED}"))
        .run();
    assert_eq!(h.tree(), before);
    // The same request replays its answer and writes nothing.
    send(&h, "k1", "one")
        .stdout("queued t1 001.msg \u{b7} doorbell quiet\n")
        .stderr("")
        .run();
    assert_eq!(h.tree(), before);
    // Another sender or flag is another request too.
    h.fm("send")
        .args([
            "--idempotency-key",
            "k1",
            "--from",
            "ops",
            "--quiet",
            "t1",
            "one",
        ])
        .status(2)
        .stderr_has(REFUSED)
        .run();
    assert_eq!(h.tree(), before);
}

#[test]
fn an_ack_key_reused_for_other_records_is_refused() {
    let h = TestHome::new();
    task(&h);
    for body in ["one", "two"] {
        h.fm("send")
            .args(["--quiet", "t1", body])
            .stdout_any()
            .run();
    }
    let ack = |seq: &str| h.fm("ack").args(["--idempotency-key", "k2", "t1", seq]);
    ack("1").stdout("handled 001.msg\n").stderr("").run();
    ack("2")
        .status(2)
        .stdout("")
        .stderr(format!("fm-ack: error: idempotency key \"k2\" {REFUSED}"))
        .run();
    assert!(h.exists("state/t1.inbox/002.msg"), "{:?}", h.tree());
    ack("1").stdout("handled 001.msg\n").stderr("").run();
    assert!(h.exists("state/t1.inbox/002.msg"));
}

#[test]
fn a_status_key_reused_for_another_line_is_refused() {
    let h = TestHome::new();
    task(&h);
    let status = |text: &str| {
        h.fm("status")
            .args(["--idempotency-key", "k3", "t1", "working", text])
    };
    status("one").stdout("").stderr("").run();
    status("two")
        .status(2)
        .stdout("")
        .stderr(format!(
            "fm-status: error: idempotency key \"k3\" {REFUSED}"
        ))
        .run();
    h.fm("status")
        .args(["--idempotency-key", "k3", "t1", "blocked", "one"])
        .status(2)
        .stderr_has(REFUSED)
        .run();
    status("one").stdout("").stderr("").run();
    assert_eq!(h.read_string("state/t1.status").lines().count(), 1);
}

#[test]
fn a_board_key_reused_for_another_task_is_refused() {
    let h = TestHome::new();
    for subject in ["A", "B"] {
        h.fm("board").args(["add", subject]).stdout_any().run();
    }
    let cancel = |task: &str| {
        h.fm("board").args([
            "--idempotency-key",
            "k4",
            "cancel",
            task,
            "--reason",
            "not needed",
        ])
    };
    cancel("T-001").stdout("T-001 cancelled\n").stderr("").run();
    cancel("T-002")
        .status(2)
        .stdout("")
        .stderr(format!("fm-board: error: idempotency key \"k4\" {REFUSED}"))
        .run();
    h.fm("board")
        .args(["show", "T-002", "--json"])
        .stdout_has(r#""status":"pending""#)
        .run();
    // A dispatch under a change's key is another request too.
    h.fm("board")
        .args(["--idempotency-key", "k4", "dispatch"])
        .status(2)
        .stderr_has(REFUSED)
        .run();
    cancel("T-001").stdout("T-001 cancelled\n").stderr("").run();
}

#[test]
fn a_teardown_under_a_spawns_key_is_refused_and_kills_nothing() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let proj = crate::control::project(&h);
    h.fm("brief")
        .args(["s1", "demo", "--mode", "local-only"])
        .args(["--intent", "make it so", "--spec", "one commit"])
        .stdout_any()
        .run();
    let ctl = |args: &[&str]| {
        crate::harness::Cmd::new(bin("fm-control"))
            .env("FM_HOME", h.root())
            .env("FM_TMUX_SOCKET", &t.socket)
            .env("FM_CONTROL_EXIT_WAIT_SECS", "1")
            .args(args)
    };
    let project = proj.to_str().unwrap();
    let spawn = ["s1", "spawn", "--project", project, "--harness", "stand-in"];
    let out = ctl(&spawn)
        .args(["--idempotency-key", "ks"])
        .stdout_has("spawned s1 pane=%")
        .run();
    let before = h.tree();
    ctl(&["s1", "teardown", "--force", "--idempotency-key", "ks"])
        .status(2)
        .stdout("")
        .stderr(format!(
            "fm-control: error: idempotency key \"ks\" {REFUSED}"
        ))
        .run();
    assert_eq!(h.tree(), before);
    assert!(h.exists("state/s1.meta"));
    assert!(h.exists("worktrees/s1"));
    let windows = t.run(["list-panes", "-a", "-F", "#{pane_id}"]);
    let pane = out
        .stdout()
        .split("pane=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    assert!(windows.lines().any(|p| p == pane), "{windows}");
    // The spawn itself, retried, replays its answer.
    ctl(&spawn)
        .args(["--idempotency-key", "ks"])
        .stdout(out.stdout())
        .run();
    // Under a key of its own the teardown runs.
    ctl(&["s1", "teardown", "--force", "--idempotency-key", "kt"])
        .stdout_has("torn-down s1")
        .run();
}

#[test]
fn a_kept_answer_with_a_code_no_tool_gives_is_corrupt_not_replayed() {
    let h = TestHome::new();
    task(&h);
    for line in [
        "k5 255 \"forged\\n\"\n",
        "k5 255 0000000000000000000000000000000000000000000000000000000000000000 \"forged\\n\"\n",
        "k5 127 \"forged\\n\"\n",
    ] {
        h.write("state/t1.seen", line);
        let before = tree(&h);
        send(&h, "k5", "x")
            .status(3)
            .stdout("")
            .stderr_has("fm-send: error: replay of an idempotency key failed (")
            .stderr_has("the answer kept for key \"k5\" is corrupt (exit code")
            .stderr_has("which no tool of ours gives); nothing was done\n")
            .run();
        assert_eq!(tree(&h), before, "{line:?}");
        assert!(!h.exists("state/t1.inbox/001.msg"));
    }
    // A line an older release kept, without its request: refused, exit 2.
    h.write("state/t1.seen", "k6 0 \"queued t1 001.msg\\n\"\n");
    send(&h, "k6", "x")
        .status(2)
        .stdout("")
        .stderr_has("idempotency key \"k6\" was kept by an older release without its request")
        .run();
    assert!(!h.exists("state/t1.inbox/001.msg"));
}

#[test]
fn a_huge_malformed_argument_is_quoted_as_a_bounded_prefix() {
    let h = TestHome::new();
    task(&h);
    let huge = format!("\u{1b}[2J{}", "k".repeat(100 * 1024));
    let total = huge.len();
    let short = |out: crate::harness::Output, what: &str| {
        let err = out.stderr();
        assert!(err.len() < 400, "{what}: {} bytes of stderr", err.len());
        assert!(!err.contains('\u{1b}'), "{what}: a raw escape: {err:?}");
        err
    };
    let err = short(
        send(&h, &huge, "x").status(2).stdout("").stderr_any().run(),
        "--idempotency-key",
    );
    assert!(
        err.starts_with("fm-send: error: malformed idempotency key \"\\u{1b}[2Jkkk"),
        "{err}"
    );
    assert!(err.contains(&format!("\u{2026} ({total} bytes)")), "{err}");
    let err = short(
        h.fm("send")
            .args([&huge, "x"])
            .status(2)
            .stdout("")
            .stderr_any()
            .run(),
        "task id",
    );
    assert!(
        err.starts_with("fm-send: error: invalid task id \"\\u{1b}"),
        "{err}"
    );
    let err = short(
        h.fm("ack")
            .args(["t1", &huge])
            .status(2)
            .stdout("")
            .stderr_any()
            .run(),
        "message number",
    );
    assert!(err.contains(&format!("({total} bytes)")), "{err}");
    let err = short(
        h.fm("status")
            .args(["t1", "working", "--key", &huge, "x"])
            .status(2)
            .stdout("")
            .stderr_any()
            .run(),
        "status key",
    );
    assert!(err.contains(&format!("({total} bytes)")), "{err}");
    let err = short(
        h.fm("board")
            .args(["show", &huge])
            .status(2)
            .stdout("")
            .stderr_any()
            .run(),
        "board id",
    );
    assert!(err.contains(&format!("({total} bytes)")), "{err}");
    // clap's own usage errors are bounded line by line.
    let opt = format!("--{}", "z".repeat(100 * 1024));
    let out = h
        .fm("send")
        .args([&opt, "t1", "x"])
        .status(2)
        .stdout("")
        .stderr_any()
        .run();
    let err = out.stderr();
    assert!(err.len() < 2000, "{} bytes of stderr", err.len());
    assert!(err.starts_with("fm-send: error: "), "{err}");
}

#[test]
fn a_brief_key_replays_the_same_brief_a_second_later_and_refuses_another() {
    let h = TestHome::new();
    let brief = |spec: &str| {
        h.fm("brief")
            .args(["t1", "demo", "--mode", "local-only", "--intent", "x"])
            .args(["--spec", spec, "--idempotency-key", "kb"])
    };
    let first = brief("one commit").stdout_any().stderr("").run().stdout();
    assert!(first.starts_with("written: "), "{first}");
    // Rendered again a second later (another timestamp): the same request.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    brief("one commit").stdout(&first).stderr("").run();
    let before = h.read_string("data/t1/brief.md");
    brief("two commits")
        .status(2)
        .stdout("")
        .stderr(format!("fm-brief: error: idempotency key \"kb\" {REFUSED}"))
        .run();
    assert_eq!(h.read_string("data/t1/brief.md"), before);
}

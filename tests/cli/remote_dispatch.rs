//! `fm-board --host <name> dispatch` over a real sshd: one keyed write,
//! so a retry after a dropped answer returns the first answer and claims
//! no task, and queues no record, twice.

use super::harness::TestHome;
use super::remote_write::{drop_first_answer, entries, far_events, far_read, kill_after_the_write};
use super::sshd::Sshd;

/// A captain home with host `far`, whose workers `t1` and `t2` are known
/// there; `grace` is the far `watch.grace_secs` (0: a dispatch run again
/// re-sends every unacknowledged task at once).
fn setup(sshd: &Sshd, grace: Option<u64>) -> TestHome {
    let h = TestHome::new();
    h.write("config/firstmate.toml", sshd.host_toml("far", 5_000));
    for w in ["t1", "t2"] {
        sshd.far_write(&format!("state/{w}.meta"), "kind=ship\n");
    }
    if let Some(g) = grace {
        let cfg = far_read(sshd, "config/firstmate.toml");
        sshd.far_write(
            "config/firstmate.toml",
            format!("{cfg}\n[watch]\ngrace_secs = {g}\n"),
        );
    }
    h
}

/// Adds a task for each worker on board `board` (`--host far` or none).
fn add_tasks(h: &TestHome, host: &[&str], workers: &[&str]) {
    for (n, w) in workers.iter().enumerate() {
        h.fm("board")
            .args(host)
            .args(["add", &format!("Task {w}"), "--assignee", w])
            .stdout(format!("T-{:03} pending\n", n + 1))
            .stderr("")
            .run();
    }
}

/// The far records of worker `w`: pending names, then handled ones.
fn far_records(sshd: &Sshd, w: &str) -> (Vec<String>, Vec<String>) {
    let inbox = sshd.far_home.join(format!("state/{w}.inbox"));
    let pending = entries(&inbox)
        .into_iter()
        .filter(|n| n != "handled")
        .collect();
    (pending, entries(&inbox.join("handled")))
}

const DISPATCHED: &str = "dispatched T-001 t1 001.msg \u{b7} dispatch 1/3 \u{b7} doorbell no-pane\n\
                          dispatched T-002 t2 001.msg \u{b7} dispatch 1/3 \u{b7} doorbell no-pane\n";

#[test]
fn a_remote_dispatch_whose_answer_was_lost_claims_and_sends_once() {
    let Some(mut sshd) = Sshd::start() else {
        return;
    };
    let h = setup(&sshd, Some(0));
    add_tasks(&h, &["--host", "far"], &["t1", "t2"]);
    // A dispatch travels to the far entry, `fm far`.
    drop_first_answer(&sshd, "fm");
    let d = h
        .fm("board")
        .args(["--host", "far", "dispatch"])
        .stdout(DISPATCHED)
        .stderr("")
        .start();
    kill_after_the_write(&mut sshd);
    d.wait(30.0);

    // The first attempt dispatched both and printed that there; the retry
    // (with no grace, a dispatch run afresh would re-send both) gave the
    // same answer and did nothing.
    // Its report, rendered, is DISPATCHED.
    let first: serde_json::Value = serde_json::from_str(&far_read(&sshd, "first.out")).unwrap();
    let lines: Vec<String> = first["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            format!(
                "{} {} {} {:03}.msg \u{b7} dispatch {}/3 \u{b7} doorbell {}\n",
                o["action"].as_str().unwrap(),
                o["task"].as_str().unwrap(),
                o["assignee"].as_str().unwrap(),
                o["seq"].as_u64().unwrap(),
                o["dispatches"],
                o["doorbell"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(lines.concat(), DISPATCHED, "{first}");
    assert_eq!(far_read(&sshd, "first.code"), "0\n");
    for w in ["t1", "t2"] {
        assert_eq!(
            far_records(&sshd, w),
            (vec!["001.msg".to_string()], vec![]),
            "{w}"
        );
    }
    assert_eq!(far_events(&sshd, "board.dispatched"), 2);
    assert_eq!(far_events(&sshd, "board.resent"), 0);
    assert_eq!(far_events(&sshd, "inbox.queued"), 2);
    for n in ["1", "2"] {
        let t = h
            .fm("board")
            .args(["--host", "far", "show", n, "--json"])
            .stdout_json()
            .stderr("")
            .run()
            .json();
        assert_eq!(t["status"], "in_progress", "T-{n}");
        assert_eq!(t["dispatches"], 1, "T-{n}");
    }
    // Nothing of a board or an inbox on the captain's side.
    assert!(!h.exists("data/board"));
    assert!(!h.exists("state/t1.inbox"));
}

#[test]
fn a_remote_dispatch_prints_what_a_local_dispatch_prints() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let h = setup(&sshd, Some(0));
    // The twin: the same board and workers in a home of its own.
    let twin = TestHome::new();
    twin.write("config/firstmate.toml", "[watch]\ngrace_secs = 0\n");
    for w in ["t1", "t2"] {
        twin.write(&format!("state/{w}.meta"), "kind=ship\n");
    }
    // t9 is known nowhere: its task is an `error` line and exit 1.
    let workers = ["t1", "t2", "t9"];
    add_tasks(&h, &["--host", "far"], &workers);
    add_tasks(&twin, &[], &workers);

    let far = h
        .fm("board")
        .args(["--host", "far", "dispatch"])
        .status(1)
        .stdout_has("error T-003 t9 ")
        .stderr("")
        .run();
    let near = twin
        .fm("board")
        .arg("dispatch")
        .status(1)
        .stdout_has("error T-003 t9 ")
        .stderr("")
        .run();
    assert_eq!(far.stdout(), near.stdout());
    assert!(
        far.stdout().starts_with(DISPATCHED) && far.stdout().contains("error T-003 t9 "),
        "{}",
        far.stdout()
    );

    // Again, as JSON: both re-send (no grace) the same way.
    let far = h
        .fm("board")
        .args(["--host", "far", "dispatch", "--json"])
        .status(1)
        .stdout_has("\"resent\"")
        .stderr("")
        .run();
    let near = twin
        .fm("board")
        .args(["dispatch", "--json"])
        .status(1)
        .stdout_has("\"resent\"")
        .stderr("")
        .run();
    assert_eq!(far.stdout(), near.stdout());
    let j = far.json();
    assert_eq!(j[0]["action"], "resent");
    assert_eq!(j[0]["seq"], 2);
    assert_eq!(j[1]["dispatches"], 2);
    // Each call one key, kept with its answer.
    let keys = far_read(&sshd, "state/.board.seen");
    let answers = keys
        .lines()
        .filter(|l| !l.split(' ').next().unwrap_or("").contains('#'))
        .count();
    assert_eq!(answers, 3 + 2 * 2, "{keys}");
}

#[test]
fn a_remote_dispatch_to_a_host_down_is_exit_3_and_dispatches_once_after() {
    let Some(mut sshd) = Sshd::start() else {
        return;
    };
    let h = setup(&sshd, None);
    add_tasks(&h, &["--host", "far"], &["t1", "t2"]);
    sshd.kill();
    h.fm("board")
        .args(["--host", "far", "dispatch"])
        .status(3)
        .stdout("")
        .stderr_regex(
            r"^fm-board: error: ssh: host far unreachable: .*Connection refused \(3 attempts; the write may have landed there: key [A-Za-z0-9._-]+-board-\d+-\d+-0\)\n$",
        )
        .run();
    for w in ["t1", "t2"] {
        assert_eq!(far_records(&sshd, w), (vec![], vec![]), "{w}");
    }
    assert_eq!(far_events(&sshd, "board.dispatched"), 0);

    // Back up: the captain runs it again; once dispatched, a second run
    // within the grace period re-sends nothing.
    sshd.restart();
    h.fm("board")
        .args(["--host", "far", "dispatch"])
        .stdout(DISPATCHED)
        .stderr("")
        .run();
    h.fm("board")
        .args(["--host", "far", "dispatch"])
        .stdout("nothing to dispatch\n")
        .stderr("")
        .run();
    for w in ["t1", "t2"] {
        assert_eq!(
            far_records(&sshd, w),
            (vec!["001.msg".to_string()], vec![]),
            "{w}"
        );
    }
    assert_eq!(far_events(&sshd, "board.dispatched"), 2);
}

#[test]
fn a_remote_dispatch_gives_the_far_sides_warnings_on_stderr() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let h = setup(&sshd, None);
    add_tasks(&h, &["--host", "far"], &["t1", "t2"]);
    // A far task file that does not read: the far dispatch skips it and
    // says so; the warning travels in the report, not on a far stderr.
    sshd.far_write("data/board/T-009.task", "not a task\n");
    h.fm("board")
        .args(["--host", "far", "dispatch"])
        .stdout(DISPATCHED)
        .stderr_regex(r"^fm-board: warning: skipped \S*T-009\.task: .+\n$")
        .run();
}

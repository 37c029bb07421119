//! `fm-board`: claims under contention (real processes), dependency release,
//! refusals that write nothing, the approval flow, blocker wakes, and
//! dispatch into inboxes with the circuit breaker.

use std::process::{Command, Stdio};

use crate::harness::{TestHome, bin};

#[track_caller]
fn add(h: &TestHome, args: &[&str]) -> String {
    let out = h
        .fm("board")
        .arg("add")
        .args(args)
        .stdout_regex(r"T-\d{3,} (pending|blocked)\n")
        .run()
        .stdout();
    out.split_whitespace().next().unwrap().to_string()
}

#[track_caller]
fn status(h: &TestHome, id: &str) -> String {
    h.fm("board")
        .args(["show", id, "--json"])
        .stdout_json()
        .run()
        .json()["status"]
        .as_str()
        .unwrap()
        .to_string()
}

fn board_file(h: &TestHome, id: &str) -> Vec<u8> {
    h.read(&format!("data/board/{id}.task"))
}

#[test]
fn sixteen_processes_race_for_one_claim() {
    let h = TestHome::new();
    let id = add(&h, &["contended task"]);
    let children: Vec<_> = (0..16)
        .map(|i| {
            Command::new(bin("fm-board"))
                .env("FM_HOME", h.root())
                .args(["claim", "T-1", "--as", &format!("w{i}")])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let winners: Vec<_> = outs.iter().filter(|o| o.status.code() == Some(0)).collect();
    assert_eq!(winners.len(), 1, "exactly one claim succeeds");
    assert_eq!(
        String::from_utf8_lossy(&winners[0].stdout),
        format!("{id} in_progress\n")
    );
    assert!(winners[0].stderr.is_empty());
    for o in outs.iter().filter(|o| o.status.code() != Some(0)) {
        assert_eq!(o.status.code(), Some(1));
        assert!(o.stdout.is_empty());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("fm-board: error: T-001 is in_progress (owner w"),
            "{err}"
        );
    }
    let j = h
        .fm("board")
        .args(["show", "1", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(j["status"], "in_progress");
    assert!(j["owner"].as_str().unwrap().starts_with('w'));
    let events = String::from_utf8(h.read("state/events.jsonl")).unwrap();
    assert_eq!(events.matches("\"board.claimed\"").count(), 1);
    let dir: Vec<_> = std::fs::read_dir(h.path("data/board"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(dir.len(), 2, "only the task file and the lock: {dir:?}");
}

#[test]
fn chain_releases_only_when_every_blocker_finishes() {
    let h = TestHome::new();
    assert_eq!(add(&h, &["A"]), "T-001");
    assert_eq!(add(&h, &["B", "--blocked-by", "T-1"]), "T-002");
    h.fm("board")
        .args(["add", "C", "--blocked-by", "1,T-002"])
        .stdout("T-003 blocked\n")
        .run();
    h.fm("board")
        .args(["claim", "3", "--as", "w1"])
        .status(1)
        .stderr_has("T-003 is blocked")
        .run();
    h.fm("board")
        .args(["complete", "T-2", "--result", "early"])
        .status(1)
        .stderr_has("T-002 is blocked")
        .run();
    h.fm("board")
        .args(["complete", "T-001", "--result", "done A", "--as", "w1"])
        .stdout("T-001 completed\nreleased T-002 pending\nreleased T-003 blocked\n")
        .run();
    assert_eq!(status(&h, "T-3"), "blocked");
    let j = h
        .fm("board")
        .args(["show", "3", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(j["blocked_by"], serde_json::json!(["T-002"]));
    h.fm("board")
        .args(["claim", "2", "--as", "w2"])
        .stdout("T-002 in_progress\n")
        .run();
    h.fm("board")
        .args(["complete", "2", "--result", "done B"])
        .stdout("T-002 completed\nreleased T-003 pending\n")
        .run();
    assert_eq!(status(&h, "T-3"), "pending");
    let ev = String::from_utf8(h.read("state/events.jsonl")).unwrap();
    assert_eq!(ev.matches("\"board.released\"").count(), 3, "{ev}");
}

#[test]
fn cancelling_or_failing_a_blocker_releases_its_dependent() {
    let h = TestHome::new();
    add(&h, &["A"]);
    add(&h, &["B", "--blocked-by", "T-1"]);
    h.fm("board")
        .args(["cancel", "1", "--reason", "not needed"])
        .stdout_has("released T-002 pending")
        .run();
    assert_eq!(status(&h, "2"), "pending");
    add(&h, &["X"]);
    add(&h, &["Y", "--blocked-by", "T-3"]);
    h.fm("board")
        .args(["claim", "3", "--as", "w1"])
        .stdout("T-003 in_progress\n")
        .run();
    h.fm("board")
        .args(["fail", "3", "--reason", "broken"])
        .stdout("T-003 failed\nreleased T-004 pending\n")
        .run();
    assert_eq!(status(&h, "4"), "pending");
    // A blocker already finished at add time does not block.
    h.fm("board")
        .args(["add", "Z", "--blocked-by", "T-3"])
        .stdout("T-005 pending\n")
        .run();
}

#[test]
fn cycles_and_unknown_blockers_are_refused_with_nothing_written() {
    let h = TestHome::new();
    add(&h, &["A"]);
    add(&h, &["B", "--blocked-by", "T-1"]);
    let before = h.tree();
    let events = h.read("state/events.jsonl");
    h.fm("board")
        .args(["add", "X", "--blocked-by", "T-9"])
        .status(1)
        .stderr_has("unknown task in --blocked-by: T-009")
        .run();
    h.fm("board")
        .args(["add", "X", "--blocked-by", "T-3"])
        .status(1)
        .stderr_has("cycle")
        .run();
    h.fm("board")
        .args(["add", "X", "--blocked-by", "T-x"])
        .status(2)
        .stderr_has("invalid board task id")
        .run();
    // A cycle written by hand between T-1 and T-2 is refused for a newcomer.
    let one = String::from_utf8(board_file(&h, "T-001"))
        .unwrap()
        .replace("blocked_by=\n", "blocked_by=T-002\n");
    h.write("data/board/T-001.task", &one);
    h.fm("board")
        .args(["add", "X", "--blocked-by", "2"])
        .status(1)
        .stderr_has("dependency cycle: T-002 -> T-001 -> T-002")
        .run();
    assert_eq!(h.tree(), before);
    assert_eq!(h.read("state/events.jsonl"), events);
}

#[test]
fn illegal_transitions_exit_1_naming_status_and_leave_the_file_unchanged() {
    let h = TestHome::new();
    add(&h, &["plain"]); // T-001
    add(&h, &["gated", "--require-approval"]); // T-002
    add(&h, &["to cancel"]); // T-003
    h.fm("board")
        .args(["claim", "1", "--as", "w1"])
        .stdout("T-001 in_progress\n")
        .run();
    h.fm("board")
        .args(["claim", "2", "--as", "w1"])
        .stdout("T-002 in_progress\n")
        .run();
    h.fm("board")
        .args(["cancel", "3", "--reason", "dup"])
        .stdout("T-003 cancelled\n")
        .run();
    let cases: &[(&[&str], &str, &str)] = &[
        (&["approve", "2"], "T-002", "T-002 is in_progress"),
        (
            &["reject", "2", "--reason", "no"],
            "T-002",
            "T-002 is in_progress",
        ),
        (&["review", "1"], "T-001", "--require-approval"),
        (
            &["complete", "3", "--result", "x"],
            "T-003",
            "T-003 is cancelled",
        ),
        (
            &["claim", "1", "--as", "w2"],
            "T-001",
            "T-001 is in_progress (owner w1)",
        ),
        (&["retry", "1"], "T-001", "T-001 is in_progress"),
        (&["progress", "3", "50"], "T-003", "T-003 is cancelled"),
        (
            &["comment", "3", "--blocker", "late"],
            "T-003",
            "T-003 is cancelled",
        ),
        (
            &["cancel", "3", "--reason", "again"],
            "T-003",
            "T-003 is cancelled",
        ),
    ];
    for (args, id, msg) in cases {
        let before = board_file(&h, id);
        let ev = h.read("state/events.jsonl");
        h.fm("board").args(*args).status(1).stderr_has(msg).run();
        assert_eq!(board_file(&h, id), before, "{args:?} changed the file");
        assert_eq!(
            h.read("state/events.jsonl"),
            ev,
            "{args:?} recorded an event"
        );
    }
    h.fm("board")
        .args(["claim", "9", "--as", "w1"])
        .status(1)
        .stderr_has("no board task T-009")
        .run();
    for (bad, why) in [
        (
            &["claim", "x1", "--as", "w1"][..],
            "fm-board: error: invalid board task id \"x1\" (expected T-NNN, e.g. T-001 or 1)\n",
        ),
        (
            &["claim", "1", "--as", "../x"],
            "fm-board: error: invalid task id \"../x\": must start with a letter or digit\n",
        ),
        (
            &["progress", "1", "101"],
            "fm-board: error: invalid value '101' for '<PERCENT>': 101 is not in 0..=100\n\nFor more information, try '--help'.\n",
        ),
        (
            &["cancel", "1", "--reason", " "],
            "fm-board: error: --reason is empty\n",
        ),
    ] {
        h.fm("board").args(bad).status(2).stderr(why).run();
    }
}

#[test]
fn approval_flow_and_retry() {
    let h = TestHome::new();
    add(&h, &["gated", "--require-approval"]);
    h.fm("board")
        .args(["claim", "1", "--as", "w1"])
        .stdout("T-001 in_progress\n")
        .run();
    h.fm("board")
        .args(["progress", "1", "40", "--step", "tests"])
        .stdout("T-001 in_progress\n")
        .run();
    h.fm("board")
        .args(["complete", "1", "--result", "PR 7", "--as", "w1"])
        .stdout("T-001 in_review\n")
        .run();
    h.fm("board")
        .args(["approve", "1"])
        .stdout("T-001 completed\n")
        .run();
    add(&h, &["gated 2", "--require-approval"]);
    h.fm("board")
        .args(["claim", "2", "--as", "w1"])
        .stdout("T-002 in_progress\n")
        .run();
    h.fm("board")
        .args(["review", "2"])
        .stdout("T-002 in_review\n")
        .run();
    h.fm("board")
        .args(["reject", "2", "--reason", "wrong approach"])
        .stdout("T-002 cancelled\n")
        .run();
    h.fm("board")
        .args(["retry", "2"])
        .stdout("T-002 pending\n")
        .run();
    let j = h
        .fm("board")
        .args(["show", "1", "--json"])
        .stdout_json()
        .run()
        .json();
    let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
    for k in [
        "id",
        "subject",
        "description",
        "status",
        "assignee",
        "owner",
        "priority",
        "blocked_by",
        "require_approval",
        "dispatches",
        "result",
        "comments",
        "created_at",
        "updated_at",
    ] {
        assert!(keys.contains(&k), "missing {k} in {j}");
    }
    assert_eq!(j["result"], "PR 7");
    let list = h
        .fm("board")
        .args(["list", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(list.as_array().unwrap().len(), 2);
    let pending = h
        .fm("board")
        .args(["list", "--status", "pending", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(pending[0]["id"], "T-002");
    h.fm("board")
        .args(["list", "--status", "bogus"])
        .status(2)
        .stderr("fm-board: error: invalid value 'bogus' for '--status <S>'\n  [possible values: pending, blocked, in_progress, in_review, completed, failed, cancelled, stale]\n\nFor more information, try '--help'.\n").run();
}

#[test]
fn blocker_comment_fails_the_task_and_wakes_the_captain() {
    let h = TestHome::new();
    h.write("state/wakes.log", "41\t100\tother\tescalation\tx\n");
    add(&h, &["deploy"]);
    add(&h, &["after deploy", "--blocked-by", "1"]);
    h.fm("board")
        .args(["claim", "1", "--as", "w1"])
        .stdout("T-001 in_progress\n")
        .run();
    h.fm("board")
        .args(["comment", "1", "just", "a", "note"])
        .stdout("T-001 in_progress\n")
        .run();
    h.fm("board")
        .args([
            "comment",
            "1",
            "--blocker",
            "no staging credentials",
            "--as",
            "w1",
        ])
        .stdout("T-001 failed\nreleased T-002 pending\n")
        .run();
    let wakes = String::from_utf8(h.read("state/wakes.log")).unwrap();
    let last = wakes.lines().last().unwrap();
    let f: Vec<&str> = last.split('\t').collect();
    assert_eq!(f.len(), 5, "{last}");
    assert_eq!((f[0], f[2], f[3]), ("42", "T-001", "blocker"));
    assert!(f[1].parse::<u64>().is_ok());
    assert!(f[4].contains("no staging credentials"), "{last}");
    let j = h
        .fm("board")
        .args(["show", "1", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(j["comments"].as_array().unwrap().len(), 2);
    assert_eq!(j["comments"][1]["blocker"], true);
    assert_eq!(j["comments"][1]["author"], "w1");
}

#[test]
fn a_blocker_wake_runs_the_on_wake_hook() {
    let h = TestHome::new();
    let script = h.path("hook.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nprintf '%s|%s|%s\\n' \"$1\" \"$2\" \"$3\" >> \"$0.out\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    h.write(
        "config/firstmate.toml",
        format!(
            "[watch]\non_wake = [\"{}\", \"{{task}}\", \"{{kind}}\", \"{{text}}\"]\n",
            script.display()
        ),
    );
    add(&h, &["deploy"]);
    h.fm("board")
        .args(["comment", "1", "--blocker", "no creds; $(rm -rf /)"])
        .stdout("T-001 failed\n")
        .run();
    let got = std::fs::read_to_string(h.path("hook.sh.out")).unwrap_or_default();
    assert!(got.starts_with("T-001|blocker|T-001: deploy"), "{got:?}");
    assert!(got.contains("no creds; $(rm -rf /)"), "{got:?}");
}

fn worker(h: &TestHome, id: &str) {
    h.write(&format!("state/{id}.meta"), "kind=ship\n");
}

#[test]
fn dispatch_queues_an_inbox_record_for_the_assignee() {
    let h = TestHome::new();
    worker(&h, "w1");
    add(
        &h,
        &[
            "fix login",
            "--assignee",
            "w1",
            "--description",
            "the form drops the password",
        ],
    );
    add(&h, &["unassigned"]);
    h.fm("board")
        .arg("dispatch")
        .stdout("dispatched T-001 w1 001.msg \u{b7} dispatch 1/3 \u{b7} doorbell no-pane\n")
        .run();
    let rec = String::from_utf8(h.read("state/w1.inbox/001.msg")).unwrap();
    assert!(rec.starts_with("schema=fm-inbox.v1\n"), "{rec}");
    assert!(
        rec.contains("from=fm-board\n") && rec.contains("\n--\nBoard task T-001: fix login\n"),
        "{rec}"
    );
    assert!(rec.contains("the form drops the password"), "{rec}");
    let j = h
        .fm("board")
        .args(["show", "1", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(
        (
            j["status"].as_str(),
            j["owner"].as_str(),
            j["dispatches"].as_u64()
        ),
        (Some("in_progress"), Some("w1"), Some(1))
    );
    assert_eq!(status(&h, "2"), "pending");
    // Acknowledged: the next dispatch leaves it alone.
    std::fs::rename(
        h.path("state/w1.inbox/001.msg"),
        h.path("state/w1.inbox/handled/001.msg"),
    )
    .unwrap();
    h.fm("board")
        .arg("dispatch")
        .stdout("nothing to dispatch\n")
        .run();
    // An assignee with no meta and no brief is reported and left pending.
    add(&h, &["ghost work", "--assignee", "ghost"]);
    h.fm("board")
        .arg("dispatch")
        .status(1)
        .stdout_has("error T-003 ghost")
        .stdout_has("unknown task ghost")
        .run();
    assert_eq!(status(&h, "3"), "pending");
}

#[test]
fn three_unacknowledged_dispatches_trip_the_circuit_breaker() {
    let h = TestHome::new();
    worker(&h, "deaf");
    add(&h, &["never read", "--assignee", "deaf"]);
    add(&h, &["after", "--blocked-by", "1"]);
    h.fm("board")
        .arg("dispatch")
        .stdout_has("dispatched T-001 deaf 001.msg")
        .run();
    // Within the grace period (watch.grace_secs) nothing is re-sent.
    h.fm("board")
        .arg("dispatch")
        .stdout("nothing to dispatch\n")
        .run();
    let dispatch = || {
        h.fm("board")
            .arg("dispatch")
            .env("FM_WATCH_GRACE_SECS", "0")
    };
    dispatch()
        .stdout_has("resent T-001 deaf 002.msg \u{b7} dispatch 2/3")
        .run();
    dispatch()
        .stdout_has("resent T-001 deaf 003.msg \u{b7} dispatch 3/3")
        .run();
    let r = dispatch().arg("--json").stdout_json().run();
    let j = r.json();
    assert_eq!(j[0]["action"], "failed");
    assert_eq!(
        j[0]["detail"],
        "circuit breaker: 3 dispatches without acknowledgement"
    );
    let t = h
        .fm("board")
        .args(["show", "1", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(t["status"], "failed");
    assert_eq!(
        t["reason"],
        "circuit breaker: 3 dispatches without acknowledgement"
    );
    assert_eq!(t["dispatches"], 3);
    assert!(
        !h.exists("state/deaf.inbox/004.msg"),
        "the fourth dispatch is never sent"
    );
    assert_eq!(status(&h, "2"), "pending");
    let ev = String::from_utf8(h.read("state/events.jsonl")).unwrap();
    assert_eq!(ev.matches("\"board.resent\"").count(), 2);
    assert_eq!(ev.matches("\"board.failed\"").count(), 1);
}

#[test]
fn a_hand_broken_file_is_named_not_fatal_for_list() {
    let h = TestHome::new();
    add(&h, &["fine"]);
    h.write("data/board/T-002.task", b"\xff\xfe garbage\n");
    h.fm("board")
        .arg("list")
        .stdout_has("T-001")
        .stderr_has("T-002.task")
        .run();
    h.fm("board")
        .args(["claim", "2", "--as", "w1"])
        .status(1)
        .stderr_has("T-002 is unreadable")
        .run();
    // Numbering continues past the broken file.
    h.fm("board")
        .args(["add", "next"])
        .stdout("T-003 pending\n")
        .run();
    h.fm("fm")
        .args(["board", "show", "T-3"])
        .stdout_has("T-003 pending")
        .run();
}

/// Ringing panes takes seconds; a dispatch must not hold the board lock
/// meanwhile, or every other board command (the workers' own `complete`)
/// times out behind it.
#[test]
fn a_dispatch_rings_after_releasing_the_board_lock() {
    let Some(t) = crate::harness::Tmux::start() else {
        return;
    };
    let h = TestHome::new();
    let pane = t.window("w1", &["cat"]);
    h.write(
        "state/w1.meta",
        format!("kind=ship\npane={pane}\ntmux_socket={}\n", t.socket),
    );
    for i in 0..2 {
        add(&h, &[&format!("task {i}"), "--assignee", "w1"]);
    }
    // Each ring pauses half a second between typing the doorbell and Enter.
    let dispatch = h
        .fm("board")
        .env("FM_SEND_SETTLE_MS", "500")
        .env("FM_SEND_ENTER_WAIT_MS", "50")
        .arg("dispatch")
        .stdout_regex(
            r"dispatched T-001 w1 001\.msg . dispatch 1/3 . doorbell rang\ndispatched T-002 w1 002\.msg . dispatch 1/3 . doorbell rang\n",
        )
        .start();
    // The first doorbell is typed and its Enter not yet pressed: the
    // dispatch is ringing, and the board lock must be free.
    crate::harness::wait_for("the first doorbell typed", 10.0, || {
        t.capture(&pane).contains("firstmate inbox")
    });
    let lock = std::fs::File::open(h.path("data/board/.lock")).unwrap();
    assert!(
        lock.try_lock().is_ok(),
        "the board lock is held while a pane is rung"
    );
    drop(lock);
    h.fm("board")
        .args(["add", "meanwhile"])
        .stdout("T-003 pending\n")
        .run();
    dispatch.wait(30.0);
}

/// Hand edits can leave a task waiting for a blocker whose file is gone,
/// or blocked on nothing: retry drops what can never finish, and the next
/// release sweep unblocks what waits on nothing.
#[test]
fn a_blocker_whose_file_is_gone_never_holds_a_task_forever() {
    let h = TestHome::new();
    let a = add(&h, &["a"]);
    let b = add(&h, &["b", "--blocked-by", &a]);
    let c = add(&h, &["c"]);
    let d = add(&h, &["d", "--blocked-by", &c]);
    assert_eq!(
        (status(&h, &b), status(&h, &d)),
        ("blocked".into(), "blocked".into())
    );
    // a's file is deleted by hand; b is cancelled, then retried.
    std::fs::remove_file(h.path(&format!("data/board/{a}.task"))).unwrap();
    h.fm("board")
        .args(["cancel", &b, "--reason", "x"])
        .stdout("T-002 cancelled\nreleased T-002 cancelled\n")
        .run();
    h.fm("board")
        .args(["retry", &b])
        .stdout_has(&format!("{b} pending"))
        .run();
    // d is edited to wait on nothing; the next finished task releases it.
    let file = String::from_utf8(h.read(&format!("data/board/{d}.task"))).unwrap();
    h.write(
        &format!("data/board/{d}.task"),
        file.replace(&format!("blocked_by={c}\n"), "blocked_by=\n"),
    );
    assert_eq!(status(&h, &d), "blocked");
    h.fm("board")
        .args(["cancel", &c, "--reason", "x"])
        .stdout("T-003 cancelled\nreleased T-004 pending\n")
        .run();
    assert_eq!(status(&h, &d), "pending");
}

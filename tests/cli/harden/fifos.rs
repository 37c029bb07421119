//! Class 6: only regular files are read. A FIFO in place of a status log,
//! a record or a meta is refused at once, naming it; no tool waits for a
//! writer that never comes, and nothing is appended into the pipe.

use crate::harness::TestHome;

/// Longest a refusal may take; a tool that opens the FIFO blocking hangs
/// past it and fails the test.
const BOUND: f64 = 10.0;

fn mkfifo(h: &TestHome, rel: &str) {
    let p = h.path(rel);
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    let st = std::process::Command::new("mkfifo")
        .arg(&p)
        .status()
        .unwrap();
    assert!(st.success(), "mkfifo {}", p.display());
}

#[test]
fn a_fifo_status_log_is_refused_by_its_readers_and_writers() {
    let h = TestHome::new();
    h.write("state/t1.meta", "kind=ship\n");
    mkfifo(&h, "state/t1.status");
    h.fm("status")
        .arg("t1")
        .status(1)
        .stdout("")
        .stderr_has("t1.status (a FIFO where a regular file is expected)")
        .start()
        .wait(BOUND);
    h.fm("status")
        .args(["t1", "done", "x"])
        .status(1)
        .stdout("")
        .stderr_has("t1.status (a FIFO where a regular file is expected)")
        .start()
        .wait(BOUND);
    for args in [&["t1"][..], &[]] {
        h.fm("crew-state")
            .args(args)
            .status_any()
            .stdout_any()
            .stderr_any()
            .start()
            .wait(BOUND);
    }
}

#[test]
fn a_fifo_record_or_meta_never_hangs_a_reader() {
    let h = TestHome::new();
    h.write("state/t1.meta", "kind=ship\n");
    h.fm("send")
        .args(["t1", "--quiet", "one"])
        .stdout("queued t1 001.msg \u{b7} doorbell quiet\n")
        .run();
    mkfifo(&h, "state/t1.inbox/002.msg");
    h.fm("ack")
        .args(["t1", "--read", "2"])
        .status(1)
        .stdout("")
        .stderr_has("a FIFO where a regular file is expected")
        .start()
        .wait(BOUND);
    h.fm("ack")
        .args(["t1", "--list"])
        .status_any()
        .stdout_any()
        .stderr_has("002.msg")
        .start()
        .wait(BOUND);
    std::fs::remove_file(h.path("state/t1.meta")).unwrap();
    mkfifo(&h, "state/t1.meta");
    h.fm("send")
        .args(["t1", "--quiet", "two"])
        .status(1)
        .stdout("")
        .stderr_has("t1.meta (a FIFO where a regular file is expected)")
        .start()
        .wait(BOUND);
    h.fm("fm")
        .arg("doctor")
        .status_any()
        .stdout_any()
        .stderr_any()
        .start()
        .wait(BOUND);
}

/// `--dedupe` reads every pending record while it holds the inbox lock: a
/// FIFO among them is refused at once and the lock is let go, so the next
/// send is not kept waiting. A broadcast skips a task whose meta is a FIFO
/// and still reaches the others.
#[test]
fn a_fifo_record_never_holds_the_inbox_lock_and_a_fifo_meta_never_stops_a_broadcast() {
    let h = TestHome::new();
    h.write("state/t1.meta", "kind=ship\n");
    h.write("state/t2.meta", "kind=ship\n");
    h.fm("send")
        .args(["t1", "--quiet", "one"])
        .stdout("queued t1 001.msg \u{b7} doorbell quiet\n")
        .run();
    mkfifo(&h, "state/t1.inbox/002.msg");
    h.fm("send")
        .args(["t1", "--dedupe", "--quiet", "two"])
        .status(1)
        .stdout("")
        .stderr_has("002.msg (a FIFO where a regular file is expected)")
        .start()
        .wait(BOUND);
    // The lock was released: a plain send takes it at once (a held lock
    // would make it wait its 5 s and exit 3).
    h.fm("send")
        .args(["t1", "--quiet", "three"])
        .stdout("queued t1 003.msg \u{b7} doorbell quiet\n")
        .start()
        .wait(BOUND);
    // No task here has a live pane, so the broadcast has no one to reach;
    // what matters is that the FIFO meta is skipped, not waited on.
    mkfifo(&h, "state/t0.meta");
    h.fm("send")
        .args(["--all", "--quiet", "hello"])
        .status(1)
        .stdout("")
        .stderr_has("t0: skipped: refusing ")
        .stderr_has("t0.meta (a FIFO where a regular file is expected)")
        .stderr_has("no task has a live pane")
        .start()
        .wait(BOUND);
}

/// `fm-board dispatch` reads the board's task files and each assignee's
/// meta: a FIFO in either place is reported, never waited on.
#[test]
fn a_fifo_board_task_or_assignee_meta_never_hangs_dispatch() {
    let h = TestHome::new();
    h.write("state/w1.meta", "kind=ship\n");
    h.fm("board")
        .args(["add", "fix login", "--assignee", "w1"])
        .stdout_any()
        .run();
    h.fm("board")
        .args(["add", "other", "--assignee", "w2"])
        .stdout_any()
        .run();
    mkfifo(&h, "state/w2.meta");
    // The record is queued (the task exists); its doorbell cannot be
    // rung, and the warning says why.
    h.fm("board")
        .arg("dispatch")
        .stdout_has("dispatched T-001 w1 001.msg")
        .stdout_has("dispatched T-002 w2 001.msg \u{b7} dispatch 1/3 \u{b7} doorbell failed")
        .stderr_has("w2.meta (a FIFO where a regular file is expected)")
        .start()
        .wait(BOUND);
    mkfifo(&h, "data/board/T-003.task");
    for args in [&["dispatch"][..], &["list"], &["show", "3"]] {
        h.fm("board")
            .args(args)
            .status_any()
            .stdout_any()
            .stderr_has("T-003.task")
            .start()
            .wait(BOUND);
    }
}

/// `fm-brief` reads the task's meta, its brief and the standing include
/// file: a FIFO in any of them is refused, naming it.
#[test]
fn a_fifo_meta_brief_or_include_never_hangs_fm_brief() {
    let h = TestHome::new();
    let scaffold = |h: &TestHome, id: &str, why: &str| {
        h.fm("brief")
            .args([id, "webapp", "--mode", "local-only"])
            .status_any()
            .stdout_any()
            .stderr_has(why)
            .start()
            .wait(BOUND)
    };
    let fifo = "a FIFO where a regular file is expected";
    mkfifo(&h, "state/t1.meta");
    scaffold(&h, "t1", fifo);
    mkfifo(&h, "data/t2/brief.md");
    scaffold(&h, "t2", fifo);
    h.fm("brief")
        .args(["--check", "t2"])
        .status(1)
        .stdout("")
        .stderr_has("a FIFO where a regular file is expected")
        .start()
        .wait(BOUND);
    mkfifo(&h, "config/brief-include.md");
    scaffold(&h, "t3", "brief-include.md is not a regular file");
}

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

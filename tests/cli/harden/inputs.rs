//! Class 7: every input is bounded. A file or stdin named on the command
//! line is read up to its limit plus one byte and refused (exit 2, the
//! limit in the message); a file of the home too big to read whole is
//! refused (exit 1) before a byte of it is read. `/dev/zero` must never
//! grow a tool's memory.

use crate::harness::TestHome;

/// Longest a refusal may take: reading gigabytes of `/dev/zero` takes far
/// longer (and the tool's memory grows with it).
const BOUND: f64 = 10.0;

#[test]
fn endless_brief_inputs_are_refused_at_their_limit() {
    let h = TestHome::new();
    for (flag, limit) in [
        (
            "--intent-file",
            "the limit is 65536 bytes (brief.max_intent_bytes)",
        ),
        ("--spec-file", "the limit is 1048576 bytes"),
    ] {
        let before = h.tree();
        h.fm("brief")
            .args(["t1", "webapp", "--mode", "local-only", flag, "/dev/zero"])
            .status(2)
            .stdout("")
            .stderr_has("/dev/zero is over the limit: ")
            .stderr_has(limit)
            .start()
            .wait(BOUND);
        assert_eq!(h.tree(), before, "{flag}");
        // Stdin (`-`) is bounded the same way.
        h.fm("brief")
            .args(["t1", "webapp", "--mode", "local-only", flag, "-"])
            .stdin(vec![b'y'; 3 << 20])
            .status(2)
            .stdout("")
            .stderr_has("<stdin> is over the limit: ")
            .stderr_has(limit)
            .start()
            .wait(BOUND);
    }
    h.write("state/t.meta", "kind=scout\n");
    h.fm("brief")
        .args(["--respond", "t", "--status", "success", "--body-file"])
        .arg("/dev/zero")
        .status(2)
        .stdout("")
        .stderr(
            "fm-brief: error: body file /dev/zero is over the limit: the limit is 1048576 bytes\n",
        )
        .start()
        .wait(BOUND);
    assert!(!h.exists("data/t/response.md"));
}

/// A sparse file far larger than memory where a status log, meta or
/// record belongs is refused unread, naming the file and the limit.
#[test]
fn a_home_file_too_big_to_read_whole_is_refused_unread() {
    let h = TestHome::new();
    h.write("state/t1.meta", "kind=ship\n");
    let huge = |rel: &str| {
        let f = std::fs::File::create(h.path(rel)).unwrap();
        f.set_len(64 << 30).unwrap();
    };
    huge("state/t1.status");
    let limit = "the limit for a file read whole is 268435456 bytes";
    h.fm("status")
        .arg("t1")
        .status(1)
        .stdout("")
        .stderr_has("t1.status (68719476736 bytes; ")
        .stderr_has(limit)
        .start()
        .wait(BOUND);
    h.fm("crew-state")
        .arg("t1")
        .stdout_has("unreadable: refusing ")
        .stdout_has(limit)
        .start()
        .wait(BOUND);
    huge("state/t2.meta");
    h.fm("send")
        .args(["t2", "--quiet", "hi"])
        .status(1)
        .stdout("")
        .stderr_has("t2.meta (68719476736 bytes; ")
        .start()
        .wait(BOUND);
    h.fm("send")
        .args(["t1", "--quiet", "one"])
        .stdout("queued t1 001.msg \u{b7} doorbell quiet\n")
        .run();
    huge("state/t1.inbox/001.msg");
    h.fm("ack")
        .args(["t1", "--read", "1"])
        .status(1)
        .stdout("")
        .stderr_has("001.msg (68719476736 bytes; ")
        .start()
        .wait(BOUND);
    huge("config/firstmate.toml");
    h.fm("status")
        .arg("t1")
        .status(1)
        .stdout("")
        .stderr_has("firstmate.toml (68719476736 bytes; ")
        .start()
        .wait(BOUND);
}

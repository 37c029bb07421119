//! `fm-ack`: every seq form, `--through`, `--list`, `--read`, re-acks and
//! the refusals of docs/spec/inbox.md#fm-ack.

use crate::harness::TestHome;

/// A task with `n` pending records whose bodies are `body 1` … `body n`.
#[track_caller]
fn inbox_with(n: u64) -> TestHome {
    let h = TestHome::new();
    h.write("state/t1.meta", "kind=ship\n");
    for i in 1..=n {
        h.fm("send")
            .args([
                "t1",
                "--quiet",
                "--from",
                "lead",
                &format!("body {i}\nmore"),
            ])
            .stdout(format!("queued t1 {i:03}.msg \u{b7} doorbell quiet\n"))
            .run();
    }
    h
}

fn pending(h: &TestHome) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(h.path("state/t1.inbox"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".msg"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_seq_form_acks_and_a_re_ack_is_already() {
    let h = inbox_with(5);
    h.fm("ack")
        .args(["t1", "1", "002", "3.msg", "004.msg"])
        .stdout("handled 001.msg\nhandled 002.msg\nhandled 003.msg\nhandled 004.msg\n")
        .run();
    assert_eq!(pending(&h), vec!["005.msg"]);
    assert!(h.exists("state/t1.inbox/handled/004.msg"));
    h.fm("ack")
        .args(["t1", "2", "9", "5"])
        .status(1)
        .stdout("already 002.msg\nhandled 005.msg\n")
        .stderr_has("no message 9")
        .run();
    let events = String::from_utf8(h.read("state/events.jsonl")).unwrap();
    assert_eq!(events.matches("\"inbox.acked\"").count(), 5);
    for bad in ["0", "x", "2.md", "-1"] {
        h.fm("ack").args(["t1", "--", bad]).status(2).stderr(format!("fm-ack: error: bad message number \"{bad}\" (expected e.g. 2, 002, 2.msg or 002.msg)\n")).run();
    }
    h.fm("ack")
        .args(["../t", "1"])
        .status(2)
        .stderr("fm-ack: error: invalid task id \"../t\": must start with a letter or digit\n")
        .run();
    h.fm("ack")
        .args(["t1"])
        .status(2)
        .stderr(
            "fm-ack: error: nothing to do: give message numbers, --through N, --list or --read\n",
        )
        .run();
}

#[test]
fn through_list_and_read() {
    let h = inbox_with(4);
    let j = h
        .fm("ack")
        .args(["t1", "--list", "--json"])
        .stdout_json()
        .run()
        .json();
    let arr = j.as_array().unwrap();
    assert_eq!(arr.len(), 4);
    assert_eq!(arr[0]["seq"], 1);
    assert_eq!(arr[0]["from"], "lead");
    assert_eq!(arr[0]["first_line"], "body 1");
    assert_eq!(arr[0]["bytes"], 11);
    assert!(arr[0]["at"].as_str().unwrap().ends_with('Z'));
    h.fm("ack")
        .args(["t1", "--list"])
        .stdout_has("003.msg \u{b7} ")
        .stdout_has(" \u{b7} lead \u{b7} 11 bytes \u{b7} body 3\n")
        .run();
    h.fm("ack")
        .args(["t1", "--read"])
        .stdout("body 1\nmore")
        .run();
    h.fm("ack")
        .args(["t1", "--read", "3"])
        .stdout("body 3\nmore")
        .run();
    h.fm("ack")
        .args(["t1", "--read", "9"])
        .status(1)
        .stderr("fm-ack: error: no message 9\n")
        .run();
    h.fm("ack")
        .args(["t1", "--through", "3"])
        .stdout("handled 001.msg\nhandled 002.msg\nhandled 003.msg\n")
        .run();
    assert_eq!(pending(&h), vec!["004.msg"]);
    h.fm("ack")
        .args(["t1", "--read"])
        .stdout("body 4\nmore")
        .run();
    h.fm("ack")
        .args(["t1", "4"])
        .stdout("handled 004.msg\n")
        .run();
    h.fm("ack")
        .args(["t1", "--read"])
        .status(1)
        .stderr("fm-ack: error: no pending message for t1\n")
        .run();
    h.fm("ack")
        .args(["t1", "--list", "--json"])
        .stdout("[]\n")
        .run();
    // Numbers are never reused after acks.
    h.fm("send")
        .args(["t1", "--quiet", "next"])
        .stdout_has("005.msg")
        .run();
}

#[test]
fn read_is_byte_exact() {
    let h = TestHome::new();
    h.write("state/t1.meta", "kind=ship\n");
    let body = b"\xff bytes\r\n\x1b[0m\n\n".to_vec();
    h.fm("send")
        .args(["t1", "--quiet", "-"])
        .stdin(body.clone())
        .stdout("queued t1 001.msg \u{b7} doorbell quiet\n")
        .run();
    h.fm("ack")
        .args(["t1", "--read", "001.msg"])
        .stdout(&body)
        .run();
}

#[test]
fn a_handled_copy_with_other_bytes_is_never_overwritten() {
    let h = inbox_with(2);
    h.write("state/t1.inbox/handled/001.msg", "someone else's bytes");
    h.fm("ack")
        .args(["t1", "1", "2"])
        .status(1)
        .stdout("handled 002.msg\n")
        .stderr_has("already exists with other bytes")
        .run();
    assert_eq!(
        h.read("state/t1.inbox/handled/001.msg"),
        b"someone else's bytes"
    );
    assert!(h.exists("state/t1.inbox/001.msg"));
}

#[test]
fn symlinks_and_missing_inboxes_are_refused_and_nothing_moves() {
    let h = TestHome::new();
    h.write("state/t1.meta", "kind=ship\n");
    h.fm("ack")
        .args(["t1", "1"])
        .status(1)
        .stderr_has("no inbox")
        .run();
    h.fm("ack")
        .args(["t1", "--list"])
        .status(1)
        .stderr("fm-ack: error: task t1 has no inbox\n")
        .run();

    // handled/ is a symlink.
    let h = inbox_with(1);
    let outside = tempfile::tempdir().unwrap();
    std::fs::remove_dir(h.path("state/t1.inbox/handled")).unwrap();
    std::os::unix::fs::symlink(outside.path(), h.path("state/t1.inbox/handled")).unwrap();
    h.fm("ack")
        .args(["t1", "1"])
        .status(1)
        .stderr_has("symlink")
        .run();
    assert!(h.exists("state/t1.inbox/001.msg"));
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);

    // The inbox is a symlink.
    let h2 = inbox_with(1);
    let real = h2.path("real-inbox");
    std::fs::rename(h2.path("state/t1.inbox"), &real).unwrap();
    std::os::unix::fs::symlink(&real, h2.path("state/t1.inbox")).unwrap();
    h2.fm("ack")
        .args(["t1", "1"])
        .status(1)
        .stderr_has("fm-ack: error: refusing to follow symlink")
        .run();
    assert!(real.join("001.msg").exists());

    // The record is a symlink.
    let h3 = inbox_with(1);
    let target = h3.path("elsewhere.msg");
    std::fs::write(&target, "x").unwrap();
    std::os::unix::fs::symlink(&target, h3.path("state/t1.inbox/002.msg")).unwrap();
    h3.fm("ack")
        .args(["t1", "2"])
        .status(1)
        .stderr_has("fm-ack: error: refusing to follow symlink")
        .run();
    assert!(!h3.exists("state/t1.inbox/handled/002.msg"));
    assert!(h3.path("state/t1.inbox/002.msg").symlink_metadata().is_ok());
}

#[test]
fn acking_the_tracked_record_clears_the_ladder_files() {
    let h = inbox_with(2);
    h.write("state/t1.inbox/.ring-state", "002.msg\t1\t100\n");
    h.write("state/t1.inbox/.escalated", "002.msg\n");
    h.fm("ack")
        .args(["t1", "1"])
        .stdout("handled 001.msg\n")
        .run();
    assert!(h.exists("state/t1.inbox/.ring-state"));
    assert!(h.exists("state/t1.inbox/.escalated"));
    h.fm("ack")
        .args(["t1", "2"])
        .stdout("handled 002.msg\n")
        .run();
    assert!(!h.exists("state/t1.inbox/.ring-state"));
    assert!(!h.exists("state/t1.inbox/.escalated"));
}

#[test]
fn a_hand_written_short_name_is_ignored_and_never_blocks_read() {
    let h = TestHome::new();
    h.write("state/t1.meta", "kind=ship\n");
    h.write(
        "state/t1.inbox/1.msg",
        "schema=fm-inbox.v1\nat=2026-01-01T00:00:00Z\nfrom=me\n--\nhand made",
    );
    h.fm("send")
        .args(["t1", "--quiet", "real", "one"])
        .stdout("queued t1 001.msg \u{b7} doorbell quiet\n")
        .run();
    h.fm("ack").args(["t1", "--read"]).stdout("real one").run();
    let r = h
        .fm("ack")
        .args(["t1", "--list"])
        .stdout_regex(r"001\.msg · \S+Z · captain · 8 bytes · real one\n")
        .run();
    assert_eq!(r.stdout().lines().count(), 1, "{}", r.stdout());
    assert!(r.stdout().starts_with("001.msg"));
    h.fm("ack")
        .args(["t1", "--through", "9"])
        .stdout("handled 001.msg\n")
        .run();
    assert!(h.exists("state/t1.inbox/1.msg"));
    h.fm("ack")
        .args(["t1", "--read"])
        .status(1)
        .stderr_has("no pending message")
        .run();
}

#[test]
fn one_bad_record_never_hides_the_others_from_list() {
    let h = inbox_with(3);
    h.write(
        "state/t1.inbox/002.msg",
        "schema=fm-inbox.v1\nno separator\n",
    );
    h.write("outside.msg", "schema=fm-inbox.v1\n--\nelsewhere");
    std::os::unix::fs::symlink(h.path("outside.msg"), h.path("state/t1.inbox/004.msg")).unwrap();
    let r = h
        .fm("ack")
        .args(["t1", "--list"])
        .status(1)
        .stderr_has("fm-ack: warning: 002.msg not listed: 002.msg is not a record")
        .stderr_has("fm-ack: warning: 004.msg not listed: refusing to follow symlink")
        .stdout_any()
        .run();
    let out = r.stdout();
    let names: Vec<&str> = out.lines().map(|l| &l[..7]).collect();
    assert_eq!(names, ["001.msg", "003.msg"]);
    let r = h
        .fm("ack")
        .args(["t1", "--list", "--json"])
        .status(1)
        .stdout_json()
        .stderr_has("fm-ack: warning: 002.msg not listed: 002.msg is not a record")
        .stderr_has("fm-ack: warning: 004.msg not listed: refusing to follow symlink")
        .run();
    let seqs: Vec<u64> = r
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 3]);
    h.fm("ack")
        .args(["t1", "--read", "2"])
        .status(1)
        .stderr_has("002.msg is not a record")
        .run();
}

#[test]
fn the_acked_event_names_the_worker_or_from() {
    let h = inbox_with(2);
    h.fm("ack")
        .args(["t1", "1"])
        .stdout("handled 001.msg\n")
        .run();
    h.fm("ack")
        .args(["t1", "--from", "lead", "2"])
        .stdout("handled 002.msg\n")
        .run();
    let events = String::from_utf8(h.read("state/events.jsonl")).unwrap();
    let acked: Vec<&str> = events
        .lines()
        .filter(|l| l.contains("inbox.acked"))
        .collect();
    assert!(acked[0].contains("\"actor\":\"t1\""), "{}", acked[0]);
    assert!(acked[1].contains("\"actor\":\"lead\""), "{}", acked[1]);
}

//! The kept answers under idempotency keys: lookups, holds, notes, the
//! binding to a request, corrupt lines and the bound on the file.

use super::*;

fn req() -> Request {
    Request::new("fm-send", "t", &[b"hello"])
}

fn setup() -> (tempfile::TempDir, Home, TaskId) {
    let d = tempfile::tempdir().unwrap();
    let home = Home::at(d.path()).unwrap();
    (d, home, TaskId::parse("t").unwrap())
}

#[test]
fn a_key_is_fresh_once_then_returns_its_answer() {
    let (_d, home, id) = setup();
    let Lookup::Fresh(f) = lookup(&home, &id, "cap-t-1-2-0", &req()).unwrap() else {
        panic!("a new key is fresh");
    };
    let a = Answer {
        code: 1,
        stdout: "queued t 001.msg\n\"x\" y\n".into(),
    };
    f.remember(&a).unwrap();
    match lookup(&home, &id, "cap-t-1-2-0", &req()).unwrap() {
        Lookup::Seen(got) => assert_eq!(got, a),
        Lookup::Fresh(_) => panic!("a served key is seen"),
    }
    // An unanswered lookup leaves nothing behind: the key stays fresh.
    assert!(matches!(
        lookup(&home, &id, "other", &req()).unwrap(),
        Lookup::Fresh(_)
    ));
    assert!(matches!(
        lookup(&home, &id, "other", &req()).unwrap(),
        Lookup::Fresh(_)
    ));
}

#[test]
fn a_held_key_answers_provisionally_without_its_lock_then_finally() {
    let (_d, home, id) = setup();
    let Lookup::Fresh(f) = lookup(&home, &id, "k", &req()).unwrap() else {
        panic!("a new key is fresh");
    };
    let first = Answer {
        code: 0,
        stdout: "queued t 001.msg \u{b7} doorbell ringing\n".into(),
    };
    let held = f.hold(&first).unwrap();
    // The lock is free: a retry gets the provisional answer at once.
    drop(fsx::lock(&home.seen_lock(&id), std::time::Duration::ZERO).unwrap());
    match lookup(&home, &id, "k", &req()).unwrap() {
        Lookup::Seen(got) => assert_eq!(got, first),
        Lookup::Fresh(_) => panic!("a held key is seen"),
    }
    let last = Answer {
        code: 0,
        stdout: "queued t 001.msg \u{b7} doorbell rang\n".into(),
    };
    held.remember(&home, &id, &last).unwrap();
    match lookup(&home, &id, "k", &req()).unwrap() {
        Lookup::Seen(got) => assert_eq!(got, last),
        Lookup::Fresh(_) => panic!("a served key is seen"),
    }
}

#[test]
fn the_boards_keys_are_not_a_tasks() {
    let (_d, home, id) = setup();
    let Lookup::Fresh(f) = lookup_board(&home, "k", &req()).unwrap() else {
        panic!("a new key is fresh");
    };
    let a = Answer {
        code: 0,
        stdout: "T-001 in_progress\n".into(),
    };
    f.remember(&a).unwrap();
    match lookup_board(&home, "k", &req()).unwrap() {
        Lookup::Seen(got) => assert_eq!(got, a),
        Lookup::Fresh(_) => panic!("a served key is seen"),
    }
    // A task's keys are its own.
    assert!(matches!(
        lookup(&home, &id, "k", &req()).unwrap(),
        Lookup::Fresh(_)
    ));
    assert!(home.state_dir().join(".board.seen").is_file());
}

#[test]
fn notes_beside_a_key_are_its_own_and_the_last_one_counts() {
    let (_d, home, _id) = setup();
    let Lookup::Fresh(f) = lookup_board(&home, "k", &req()).unwrap() else {
        panic!("a new key is fresh");
    };
    assert_eq!(f.noted("T-001").unwrap(), None);
    let note = |s: &str| Answer {
        code: 0,
        stdout: s.into(),
    };
    f.note("T-001", &note("one")).unwrap();
    f.note("T-001", &note("two")).unwrap();
    assert_eq!(f.noted("T-001").unwrap(), Some(note("two")));
    assert_eq!(f.noted("T-002").unwrap(), None);
    // A note is not the key's answer: the key is still fresh.
    drop(f);
    let Lookup::Fresh(f) = lookup_board(&home, "k", &req()).unwrap() else {
        panic!("a noted key is still fresh");
    };
    assert_eq!(f.noted("T-001").unwrap(), Some(note("two")));
    let held = f.hold(&note("ringing")).unwrap();
    held.finish(&note("rang")).unwrap();
    match lookup_board(&home, "k", &req()).unwrap() {
        Lookup::Seen(got) => assert_eq!(got, note("rang")),
        Lookup::Fresh(_) => panic!("a served key is seen"),
    }
}

#[test]
fn a_key_is_bound_to_its_request() {
    let (_d, home, id) = setup();
    let Lookup::Fresh(f) = lookup(&home, &id, "k", &req()).unwrap() else {
        panic!("a new key is fresh");
    };
    let a = Answer {
        code: 0,
        stdout: "queued t 001.msg\n".into(),
    };
    f.remember(&a).unwrap();
    let before = std::fs::read(home.seen_keys(&id)).unwrap();
    // Another body, another tool, another task's parts: refused, exit 2.
    for other in [
        Request::new("fm-send", "t", &[b"other"]),
        Request::new("fm-ack", "t", &[b"hello"]),
        Request::new("fm-send", "u", &[b"hello"]),
        Request::new("fm-send", "t", &[b"hel", b"lo"]),
    ] {
        let Err(e) = lookup(&home, &id, "k", &other) else {
            panic!("{other:?} replayed another request's answer");
        };
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "idempotency key \"k\" was used for another request; nothing was done"
        );
    }
    assert_eq!(std::fs::read(home.seen_keys(&id)).unwrap(), before);
    // The same request still replays.
    assert!(matches!(lookup(&home, &id, "k", &req()).unwrap(), Lookup::Seen(g) if g == a));
}

#[test]
fn a_line_without_its_request_is_refused() {
    let (_d, home, id) = setup();
    std::fs::create_dir_all(home.state_dir()).unwrap();
    std::fs::write(home.seen_keys(&id), "k 0 \"queued t 001.msg\\n\"\n").unwrap();
    let Err(e) = lookup(&home, &id, "k", &req()) else {
        panic!("an old line was replayed");
    };
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("older release"), "{e}");
    // Another key of that file is still fresh.
    assert!(matches!(
        lookup(&home, &id, "j", &req()).unwrap(),
        Lookup::Fresh(_)
    ));
}

#[test]
fn a_kept_answer_with_a_code_of_no_tool_is_corrupt() {
    let (_d, home, id) = setup();
    std::fs::create_dir_all(home.state_dir()).unwrap();
    let h = req().0;
    for (line, why) in [
        (format!("k 255 {h} \"\"\n"), "exit code 255"),
        (format!("k 127 {h} \"\"\n"), "exit code 127"),
        (format!("k 4 {h} \"\"\n"), "exit code 4"),
        (format!("k 300 {h} \"\"\n"), "exit code \"300\""),
        (format!("k 0 {h} not-json\n"), "not a JSON string"),
        (format!("k 0 zz {h} \"\"\n"), "fingerprint"),
        ("k 0\n".to_string(), "no answer"),
    ] {
        std::fs::write(home.seen_keys(&id), &line).unwrap();
        let Err(e) = lookup(&home, &id, "k", &req()) else {
            panic!("{line:?} was replayed");
        };
        assert_eq!(e.exit_code(), 3, "{line:?}");
        let msg = crate::error::describe(&e);
        assert!(
            msg.contains(why) && msg.contains("corrupt"),
            "{line:?}: {msg}"
        );
    }
    // The documented codes replay.
    for code in [0u8, 1, 2, 3, 130] {
        std::fs::write(home.seen_keys(&id), format!("k {code} {h} \"x\"\n")).unwrap();
        assert!(
            matches!(lookup(&home, &id, "k", &req()).unwrap(), Lookup::Seen(a) if a.code == code)
        );
    }
}

#[test]
fn a_note_of_another_request_is_refused() {
    let (_d, home, _id) = setup();
    let Lookup::Fresh(f) = lookup_board(&home, "k", &req()).unwrap() else {
        panic!("a new key is fresh");
    };
    let note = Answer {
        code: 0,
        stdout: "{}".into(),
    };
    f.note("T-001", &note).unwrap();
    drop(f);
    let other = Request::new("fm-board", "board", &[b"dispatch", b"json"]);
    let Lookup::Fresh(f) = lookup_board(&home, "k", &other).unwrap() else {
        panic!("a noted key is still fresh");
    };
    assert_eq!(f.noted("T-001").unwrap_err().exit_code(), 2);
}

#[test]
fn malformed_keys_are_usage_errors() {
    let (_d, home, id) = setup();
    for bad in ["", "a b", "a/b", "k\n", &"x".repeat(129)] {
        let Err(e) = lookup(&home, &id, bad, &req()) else {
            panic!("{bad:?} accepted");
        };
        assert_eq!(e.exit_code(), 2, "{bad:?}");
    }
    validate(&"x".repeat(128)).unwrap();
    // A huge key is quoted as a bounded prefix.
    let e = validate(&format!("{}\n", "x".repeat(100 * 1024))).unwrap_err();
    let msg = e.to_string();
    assert!(msg.len() < 300, "{msg}");
    assert!(msg.contains("(102401 bytes)"), "{msg}");
}

#[test]
fn the_file_stays_bounded_and_keeps_the_newest_keys() {
    let (_d, home, id) = setup();
    let answer = Answer {
        code: 0,
        stdout: "a".repeat(200),
    };
    for n in 0..1000 {
        let Lookup::Fresh(f) = lookup(&home, &id, &format!("k{n}"), &req()).unwrap() else {
            panic!("k{n} seen before");
        };
        f.remember(&answer).unwrap();
    }
    let len = std::fs::metadata(home.seen_keys(&id)).unwrap().len();
    assert!(len <= MAX_BYTES as u64, "{len}");
    assert!(matches!(
        lookup(&home, &id, "k999", &req()).unwrap(),
        Lookup::Seen(_)
    ));
    assert!(matches!(
        lookup(&home, &id, "k0", &req()).unwrap(),
        Lookup::Fresh(_)
    ));
}

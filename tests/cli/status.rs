//! `fm-status`: appends, the fold as printed, refusals, and concurrency.

use std::process::Command;

use crate::harness::{Cmd, TestHome, bin};

const HOSTILE: &[&str] = &["../x", "a/b", ".hidden", "", "a b", "é", "x..y", "-rf"];

#[test]
fn hostile_ids_exit_2_and_create_nothing() {
    let h = TestHome::new();
    let before = h.tree();
    let long = "a".repeat(65);
    for id in HOSTILE.iter().copied().chain([long.as_str()]) {
        // One line naming the id and what is wrong with it.
        let refused = format!(
            r"fm-status: error: invalid task id {}: [^\n]+\n",
            regex::escape(&format!("{id:?}"))
        );
        h.fm("status")
            .args(["--", id, "done", "x"])
            .status(2)
            .stderr_has("error:")
            .stderr_regex(&refused)
            .run();
        h.fm("status")
            .args(["--busy", "--", id])
            .status(2)
            .stderr_regex(&refused)
            .run();
        h.fm("status")
            .args(["--", id])
            .status(2)
            .stderr_regex(&refused)
            .run();
    }
    assert_eq!(h.tree(), before);
}

#[test]
fn append_then_show_the_fold() {
    let h = TestHome::new();
    h.fm("status")
        .args(["t1", "working", "compiling", "the", "parser"])
        .run();
    h.fm("status")
        .args(["t1", "needs-decision", "--key", "db", "which database?"])
        .run();
    h.fm("status").args(["t1", "done", "finished"]).run();
    let log = String::from_utf8(h.read("state/t1.status")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(
        lines[0].starts_with("working [at=") && lines[0].ends_with("]: compiling the parser"),
        "{log}"
    );
    assert!(lines[1].contains("] [key=db]: which database?"), "{log}");
    let r = h.fm("status").arg("t1").stdout_regex(r"current: needs-decision key=db · which database\? · \d+s\nopen: db needs-decision · which database\?\n").run();
    let out = r.stdout();
    let mut it = out.lines();
    let current = it.next().unwrap();
    assert!(
        current.starts_with("current: needs-decision key=db \u{b7} which database? \u{b7} "),
        "{out}"
    );
    assert_eq!(
        it.next(),
        Some("open: db needs-decision \u{b7} which database?")
    );
    assert_eq!(it.next(), None);

    h.fm("status")
        .args(["t1", "resolved", "--key", "db", "postgres"])
        .run();
    let j = h
        .fm("status")
        .args(["t1", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(j["id"], "t1");
    assert_eq!(j["current"]["verb"], "done");
    assert_eq!(j["current"]["key"], "default");
    assert_eq!(j["current"]["text"], "finished");
    assert!(j["current"]["at"].is_u64());
    assert_eq!(j["open"], serde_json::json!([]));
    assert_eq!(j["lines"], 4);
    assert_eq!(j["malformed"], 0);
}

#[test]
fn hand_written_lines_are_tolerated() {
    let h = TestHome::new();
    h.write("state/t.status", b"just prose\n\xff\xfe garbage\nblocked [at=10:30] [key=k]: door stuck\nworking [key=bad key]: nope\npaused: until 2026-12-01 10:00 UTC\n");
    let j = h
        .fm("status")
        .args(["t", "--json", "--log"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(j["current"]["verb"], "blocked");
    assert_eq!(j["current"]["at"], serde_json::Value::Null);
    assert_eq!(j["open"][0]["key"], "k");
    assert_eq!(j["lines"], 2);
    assert_eq!(j["malformed"], 3);
    assert_eq!(j["log"].as_array().unwrap().len(), 5);
    h.fm("status")
        .args(["t", "--log"])
        .stdout_has("invalid")
        .stdout_has("prose")
        .run();
}

#[test]
fn unknown_task_shows_none() {
    let h = TestHome::new();
    h.fm("status").arg("nobody").stdout("current: none\n").run();
}

#[test]
fn refused_appends_write_nothing() {
    let h = TestHome::new();
    let big = "x".repeat(2001);
    for args in [
        vec!["t", "bogus", "text"],
        vec!["t", "done", "   "],
        vec!["t", "done"],
        vec!["t", "done", "two\nlines"],
        vec!["t", "done", big.as_str()],
        vec!["t", "blocked", "--key", "bad key", "x"],
    ] {
        h.fm("status")
            .args(&args)
            .status(2)
            .stderr_has("fm-status: error:")
            .run();
    }
    assert!(!h.exists("state/t.status"));
    assert!(!h.exists("state/events.jsonl"));
    h.fm("status").args(["t", "done", &"x".repeat(2000)]).run();
}

#[test]
fn busy_and_idle_records() {
    let h = TestHome::new();
    h.fm("status")
        .args(["t", "--busy", "--source", "prompt-hook"])
        .run();
    let rec = String::from_utf8(h.read("state/t.busy")).unwrap();
    let parts: Vec<&str> = rec.trim_end().split(' ').collect();
    assert_eq!(parts[0], "busy");
    assert!(parts[1].parse::<u64>().is_ok());
    assert_eq!(parts[2], "prompt-hook");
    h.fm("status").args(["t", "--idle"]).run();
    assert!(
        String::from_utf8(h.read("state/t.busy"))
            .unwrap()
            .starts_with("idle ")
    );
}

#[test]
fn appends_record_an_event() {
    let h = TestHome::new();
    h.fm("status")
        .args(["t", "blocked", "--key", "k", "x"])
        .run();
    let ev = String::from_utf8(h.read("state/events.jsonl")).unwrap();
    let v: serde_json::Value = serde_json::from_str(ev.trim()).unwrap();
    assert_eq!(v["action"], "status.appended");
    assert_eq!(v["task"], "t");
    assert_eq!(v["key"], "k");
}

#[test]
fn malformed_config_exits_3_naming_file_and_line() {
    let h = TestHome::new();
    h.write("config/firstmate.toml", "[watch]\ngrace_secs = \"soon\"\n");
    h.fm("status")
        .args(["t", "done", "x"])
        .status(3)
        .stderr_has("firstmate.toml:2:")
        .stderr_has("watch.grace_secs")
        .run();
    assert!(!h.exists("state/t.status"));
    h.write("config/firstmate.toml", "[watch\n");
    h.fm("status")
        .arg("t")
        .status(3)
        .stderr_has("firstmate.toml:1:")
        .run();
}

#[test]
fn bad_env_override_exits_3_naming_it() {
    let h = TestHome::new();
    h.fm("status")
        .arg("t")
        .env("FM_WATCH_GRACE_SECS", "soon")
        .status(3)
        .stderr_has("FM_WATCH_GRACE_SECS")
        .run();
}

#[test]
fn unknown_config_key_warns_but_works() {
    let h = TestHome::new();
    h.write("config/firstmate.toml", "[watch]\nbogus = 1\n");
    h.fm("status")
        .arg("t")
        .stderr_has("unknown key watch.bogus")
        .stdout("current: none\n")
        .run();
}

/// 16 processes × 250 appends, plus plain `echo >>` writers, all at once:
/// every line intact and parseable.
#[test]
fn concurrent_appends_never_tear() {
    let h = TestHome::new();
    let root = h.root();
    let status = root.join("state/race.status");
    let mut handles = Vec::new();
    for p in 0..16 {
        let root = root.clone();
        handles.push(std::thread::spawn(move || {
            for i in 0..250 {
                Cmd::new(bin("fm-status"))
                    .arg("--home")
                    .arg(&root)
                    .args([
                        "race",
                        "working",
                        &format!("writer {p} line {i} {}", "x".repeat(p * 7)),
                    ])
                    .run();
            }
        }));
    }
    let mut echoes = Vec::new();
    for p in 0..4 {
        let script = format!(
            "i=0; while [ $i -lt 250 ]; do echo \"note [at=1700000000]: echo {p} line $i\" >> '{}'; i=$((i+1)); done",
            status.display()
        );
        echoes.push(Command::new("sh").args(["-c", &script]).spawn().unwrap());
    }
    for h in handles {
        h.join().unwrap();
    }
    for mut e in echoes {
        assert!(e.wait().unwrap().success());
    }
    let log = std::fs::read(&status).unwrap();
    assert!(log.ends_with(b"\n"));
    // Lines of spaces are fm-status's page fillers (prose): each ends on a
    // 4 KiB boundary unless an `echo` was mid-write when it was measured.
    let lines: Vec<&[u8]> = log
        .split(|&b| b == b'\n')
        .filter(|l| !l.iter().all(|&b| b == b' '))
        .collect();
    assert_eq!(lines.len(), 5000);
    let mut fm_lines = 0;
    for l in &lines {
        match firstmate::status::parse_line(l, "paused") {
            firstmate::status::Parsed::Line(p) => {
                if p.verb == "working" {
                    fm_lines += 1;
                    assert!(
                        p.text.starts_with("writer "),
                        "torn: {}",
                        String::from_utf8_lossy(l)
                    );
                } else {
                    assert!(
                        p.text.starts_with("echo "),
                        "torn: {}",
                        String::from_utf8_lossy(l)
                    );
                }
            }
            other => panic!(
                "unparseable line {:?}: {other:?}",
                String::from_utf8_lossy(l)
            ),
        }
    }
    assert_eq!(fm_lines, 4000);
    let j = h
        .fm("status")
        .args(["race", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(j["lines"], 5000);
}

#[test]
fn an_option_word_in_the_text_is_refused_unless_after_a_separator() {
    let h = TestHome::new();
    let before = h.tree();
    for args in [
        vec!["q1", "needs-decision", "which", "database", "--key", "db"],
        vec!["q1", "working", "on", "it", "--json"],
        vec!["q1", "note", "a", "--from=me"],
        vec!["q1", "note", "a", "--home", "/tmp"],
    ] {
        h.fm("status")
            .args(&args)
            .status(2)
            .stderr_has("fm-status: error: \"--")
            .stderr_has("put options before the text")
            .run();
    }
    assert_eq!(h.tree(), before);
    h.fm("status")
        .args(["q1", "needs-decision", "--key", "db", "which", "database"])
        .run();
    h.fm("status")
        .args(["q1", "note", "--", "the", "--key", "flag", "is", "fine"])
        .run();
    let log = String::from_utf8(h.read("state/q1.status")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines[0].ends_with("[key=db]: which database"), "{log}");
    assert!(lines[1].ends_with("]: the --key flag is fine"), "{log}");
}

#[test]
fn refusals_name_the_task_and_busy_idle_are_events() {
    let h = TestHome::new();
    h.fm("status")
        .args(["q1", "bogus", "x"])
        .status(2)
        .stderr_has("fm-status: error: unknown verb \"bogus\"")
        .stderr_has("(q1)")
        .run();
    h.fm("status")
        .args(["q1", "working", " "])
        .status(2)
        .stderr_has("(q1)")
        .run();
    h.fm("status").args(["q1", "--busy"]).run();
    h.fm("status")
        .args(["q1", "--idle", "--source", "stop-hook", "--from", "hook"])
        .run();
    let events = String::from_utf8(h.read("state/events.jsonl")).unwrap();
    let v: Vec<serde_json::Value> = events
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(v.len(), 2, "{events}");
    assert_eq!(
        (v[0]["action"].as_str(), v[0]["actor"].as_str()),
        (Some("status.busy"), Some("q1"))
    );
    assert_eq!(v[0]["source"], "hook");
    assert_eq!(
        (v[1]["action"].as_str(), v[1]["actor"].as_str()),
        (Some("status.idle"), Some("hook"))
    );
    assert_eq!(v[1]["source"], "stop-hook");
}

#[test]
fn a_failed_event_append_warns_in_the_tools_name_and_the_line_stays() {
    let h = TestHome::new();
    std::fs::create_dir_all(h.path("state/events.jsonl")).unwrap();
    h.fm("status")
        .args(["q1", "working", "on", "it"])
        .stderr_has("fm-status: warning: event status.appended not recorded")
        .run();
    assert!(
        String::from_utf8(h.read("state/q1.status"))
            .unwrap()
            .contains("]: on it")
    );
}

#[test]
fn an_unclosed_tag_loses_its_time_not_the_line() {
    let h = TestHome::new();
    h.write(
        "state/q1.status",
        "working [at=1796000000]: a\ndone [at=1796000100: shipped it\n",
    );
    let r = h.fm("status").args(["q1", "--json"]).stdout_json().run();
    let j = r.json();
    assert_eq!(j["current"]["verb"], "done");
    assert_eq!(j["current"]["text"], "shipped it");
    assert!(j["current"]["at"].is_null());
    assert_eq!(
        (j["lines"].as_u64(), j["malformed"].as_u64()),
        (Some(2), Some(0))
    );
}

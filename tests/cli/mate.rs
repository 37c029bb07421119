//! `fm wake` and `fm mate`: the first mate's packet, its acknowledgement,
//! the wait that prints nothing until there is news, the pack `fm mate
//! init` writes and the hooks the harness runs. Workers here are task
//! metas and status logs written as a worker would; the real harnesses as
//! the lead are in the agents suite (tests/agents/mate.rs).

use std::path::Path;

use crate::harness::{Cmd, TestHome, wait_until};

fn task(h: &TestHome, id: &str, status: &str) {
    h.write(&format!("state/{id}.meta"), "kind=secondmate\n");
    h.write(&format!("state/{id}.status"), status);
}

fn append(h: &TestHome, id: &str, line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(h.path(&format!("state/{id}.status")))
        .unwrap();
    f.write_all(line.as_bytes()).unwrap();
}

/// One watcher pass: status lines become wakes.
fn pass(h: &TestHome) {
    h.fm("watch").arg("--once").stdout_any().run();
}

fn wake(h: &TestHome) -> Cmd {
    h.fm("fm").arg("wake")
}

/// Whether `state/.mate.waiter` names process `pid`.
fn waiter_is(h: &TestHome, pid: u32) -> bool {
    h.exists("state/.mate.waiter")
        && h.read_string("state/.mate.waiter")
            .starts_with(&format!("{pid}\t"))
}

fn token(out: &str) -> String {
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("when handled: fm wake --ack "))
        .unwrap_or_else(|| panic!("no ack line in:\n{out}"));
    line.trim().to_string()
}

#[test]
fn the_packet_names_each_event_its_command_and_the_ack() {
    let h = TestHome::new();
    task(
        &h,
        "fix-login",
        "working: on it\nneeds-decision [key=db]: postgres or sqlite?\n",
    );
    task(&h, "api-rate", "blocked: no network to staging\n");
    task(&h, "docs", "done: wrote the guide\n");
    task(&h, "quiet", "needs-decision [key=port]: which port?\n");
    pass(&h);
    let out = wake(&h).stdout_any().run().stdout();
    assert!(
        out.starts_with("wake w1: 4 workers with news \u{b7} fleet 4 workers"),
        "{out}"
    );
    for want in [
        "fix-login: ",
        "  decision db",
        ": postgres or sqlite?\n",
        "    $ fm send fix-login --resolve-key db -- '<answer>'\n",
        "api-rate: blocked",
        "    $ fm send api-rate --resolve-key default -- '<answer>'\n",
        "docs: ",
        "  done",
        "    $ fm dod --check docs\n",
        "    $ fm control docs teardown\n",
        "when handled: fm wake --ack w1\n",
    ] {
        assert!(out.contains(want), "lacks {want:?} in:\n{out}");
    }
    // Nothing said twice: the question once, the blocked reason once.
    assert_eq!(out.matches("postgres or sqlite?").count(), 1, "{out}");
    assert_eq!(out.matches("no network to staging").count(), 1, "{out}");
    assert!(out.ends_with("when handled: fm wake --ack w1\n"), "{out}");

    // Shown again until acknowledged; then no news, decisions still open.
    let again = wake(&h).stdout_any().run().stdout();
    assert!(again.starts_with("wake w1 (shown again"), "{again}");
    wake(&h)
        .args(["--ack", "w1"])
        .stdout("acknowledged w1\n")
        .run();
    wake(&h)
        .args(["--ack", "w1"])
        .stdout("already acknowledged w1\n")
        .run();
    let after = wake(&h).stdout_any().run().stdout();
    assert!(
        after.starts_with("no news \u{b7} fleet 4 workers"),
        "{after}"
    );
    assert!(!after.contains("--ack"), "{after}");
    assert!(after.contains("open decisions:\n"), "{after}");
    assert!(
        after.contains("$ fm send quiet --resolve-key port -- '<answer>'"),
        "{after}"
    );
    // A decision answered meanwhile leaves the open list.
    append(&h, "quiet", "resolved [key=port]: 8080\n");
    let later = wake(&h).stdout_any().run().stdout();
    assert!(!later.contains("which port?"), "{later}");
}

#[test]
fn tokens_unknown_or_malformed_are_refused_with_their_exit_codes() {
    let h = TestHome::new();
    wake(&h)
        .args(["--ack", "w4"])
        .status(1)
        .stderr_has("no wake packet \"w4\" (no packet was presented yet)")
        .run();
    for bad in ["4", "w", "wx", "w4;rm", "\u{1b}[31mw4"] {
        wake(&h)
            .args(["--ack", bad])
            .status(2)
            .stderr_has("not a wake token")
            .stderr_lacks("\u{1b}[")
            .run();
    }
    wake(&h)
        .args(["--ack", "w1", "--wait"])
        .status(2)
        .stderr_any()
        .run();
    wake(&h)
        .args(["--timeout", "3"])
        .status(2)
        .stderr_any()
        .run();
    wake(&h)
        .args(["--wait", "--timeout", "0"])
        .status(2)
        .stderr_has("--timeout")
        .run();
}

#[test]
fn the_json_packet_follows_the_documented_schema() {
    let h = TestHome::new();
    task(&h, "a", "needs-decision [at=1700000000] [key=db]: which?\n");
    task(&h, "b", "failed: compiler crashed\n");
    pass(&h);
    let v = wake(&h).arg("--json").stdout_json().run().json();
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/mate-wake-schema.json");
    let schema: serde_json::Value =
        serde_json::from_slice(&std::fs::read(schema_path).unwrap()).unwrap();
    crate::crew_state::check(&schema, &schema, &v, "$");
    assert_eq!(v["token"], "w1");
    assert_eq!(v["ack"], "fm wake --ack w1");
    assert_eq!(v["items"][0]["events"][0]["kind"], "decision");
    assert_eq!(v["items"][0]["events"][0]["key"], "db");
    assert_eq!(v["items"][1]["events"][0]["kind"], "failed");
    assert_eq!(v["fleet"]["workers"], 2);
    let mut bad = v.clone();
    bad["items"][0]["events"][0]["age_secs"] = "old".into();
    assert!(
        std::panic::catch_unwind(|| crate::crew_state::check(&schema, &schema, &bad, "$")).is_err()
    );
}

#[test]
fn worker_text_stays_one_inert_line() {
    let h = TestHome::new();
    let long = "x".repeat(5000);
    task(
        &h,
        "evil",
        &format!(
            "needs-decision [key=k]: \u{1b}]0;pwned\u{7}<script>alert(1)</script> $(rm -rf ~) {long}\n"
        ),
    );
    pass(&h);
    let out = wake(&h).stdout_any().run().stdout();
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    let line = out
        .lines()
        .find(|l| l.contains("<script>"))
        .expect("the question is shown as text");
    assert!(line.len() < 400, "cut: {} bytes", line.len());
    assert!(line.ends_with('\u{2026}'), "{line}");
    // The command never carries worker text.
    assert!(
        out.contains("$ fm send evil --resolve-key k -- '<answer>'\n"),
        "{out}"
    );
}

#[test]
fn wait_prints_nothing_until_news_then_the_packet() {
    let h = TestHome::new();
    task(&h, "a", "working: on it\n");
    // Nothing to say: the timeout passes silently.
    wake(&h).args(["--wait", "--timeout", "1"]).stdout("").run();
    let waiter = wake(&h).arg("--wait").stdout_any().start();
    // It is the home's watcher meanwhile (none runs).
    assert!(wait_until(10.0, || h.exists("state/.watch.lock")));
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(waiter.stdout_so_far(), "", "nothing printed while waiting");
    append(&h, "a", "needs-decision [key=db]: postgres or sqlite?\n");
    let out = waiter.wait(10.0).stdout();
    assert!(out.starts_with("wake w1: 1 worker with news"), "{out}");
    assert!(
        out.contains("$ fm send a --resolve-key db -- '<answer>'"),
        "{out}"
    );
    // Shown once before this waiter began and not acknowledged: once more.
    let again = wake(&h)
        .args(["--wait", "--timeout", "5"])
        .stdout_any()
        .run()
        .stdout();
    assert!(again.starts_with("wake w1 (shown again"), "{again}");
    // Twice is enough: only news now.
    wake(&h).args(["--wait", "--timeout", "1"]).stdout("").run();
    // News brings a new packet holding the old wake too.
    append(&h, "a", "blocked [key=net]: no network\n");
    let next = wake(&h)
        .args(["--wait", "--timeout", "10"])
        .stdout_any()
        .run()
        .stdout();
    assert!(next.starts_with("wake w2: 1 worker with news"), "{next}");
    assert!(
        next.contains("decision db") && next.contains("blocked net"),
        "{next}"
    );
    wake(&h).args(["--ack", &token(&next)]).stdout_any().run();
    wake(&h).args(["--wait", "--timeout", "1"]).stdout("").run();
}

#[test]
fn a_newer_waiter_supersedes_an_older_one() {
    let h = TestHome::new();
    task(&h, "a", "working: on it\n");
    let old = wake(&h).arg("--wait").stdout("").start();
    assert!(wait_until(10.0, || waiter_is(&h, old.pid())));
    let new = wake(&h).arg("--wait").stdout_any().start();
    assert!(wait_until(10.0, || waiter_is(&h, new.pid())));
    append(&h, "a", "needs-decision [key=db]: which?\n");
    let out = new.wait(10.0).stdout();
    assert!(out.starts_with("wake w1"), "{out}");
    // The old one ends without a packet.
    old.wait(10.0);
    let packets = h.read_string("state/.mate.packets");
    assert_eq!(packets.lines().count(), 1, "{packets}");
    assert!(packets.starts_with("1\t1\t0\t"), "shown once: {packets}");
}

#[test]
fn wake_runs_under_a_bare_environment() {
    let h = TestHome::new();
    task(&h, "a", "needs-decision [key=db]: which?\n");
    pass(&h);
    let out = Cmd::new("env")
        .arg("-i")
        .arg(format!("FM_HOME={}", h.root().display()))
        .arg(crate::harness::bin("fm"))
        .arg("wake")
        .stdout_any()
        .run()
        .stdout();
    assert!(
        out.contains("$ fm send a --resolve-key db -- '<answer>'"),
        "{out}"
    );
}

#[test]
fn mate_init_writes_the_pack_and_keeps_the_captains_edits() {
    let h = TestHome::new();
    let out = h
        .fm("fm")
        .args(["mate", "init"])
        .stdout_any()
        .run()
        .stdout();
    assert!(out.contains("wrote AGENTS.md\n"), "{out}");
    assert!(out.contains("wrote .claude/settings.json\n"), "{out}");
    for name in [
        "take-an-ask",
        "answer-a-decision",
        "recover-a-worker",
        "land-finished-work",
        "run-while-away",
    ] {
        for dir in [".agents/skills", ".claude/skills"] {
            let skill = h.read_string(&format!("{dir}/{name}/SKILL.md"));
            assert!(
                skill.starts_with(&format!("---\nname: {name}\ndescription: ")),
                "{skill}"
            );
        }
    }
    assert_eq!(h.read_string("CLAUDE.md"), "@AGENTS.md\n");
    let manual = h.read_string("AGENTS.md");
    assert!(
        manual.len() < 4096,
        "the manual stays small: {} bytes",
        manual.len()
    );
    let settings: serde_json::Value =
        serde_json::from_str(&h.read_string(".claude/settings.json")).unwrap();
    assert_eq!(settings["env"]["FM_MATE"], "1");
    let fm = crate::harness::bin("fm");
    let stop = settings["hooks"]["Stop"][0]["hooks"][0].clone();
    assert_eq!(stop["asyncRewake"], true);
    assert!(
        stop["command"].as_str().unwrap().starts_with(&format!(
            "'{}' mate hook stop --harness claude",
            fm.display()
        )),
        "{stop}"
    );
    // A re-run changes nothing.
    let again = h
        .fm("fm")
        .args(["mate", "init"])
        .stdout_any()
        .run()
        .stdout();
    assert_eq!(again.lines().count(), 1, "{again}");
    // An edit is kept and named; firstmate's text goes beside it.
    h.write("AGENTS.md", format!("{manual}\nMy own rule.\n"));
    let kept = h
        .fm("fm")
        .args(["mate", "init"])
        .stdout_any()
        .run()
        .stdout();
    assert!(
        kept.contains("kept your edit of AGENTS.md; firstmate's version is AGENTS.md.fm-new"),
        "{kept}"
    );
    assert!(h.read_string("AGENTS.md").ends_with("My own rule.\n"));
    assert_eq!(h.read_string("AGENTS.md.fm-new"), manual);
    // --force replaces it, the edit saved as .orig.
    let forced = h
        .fm("fm")
        .args(["mate", "init", "--force"])
        .stdout_any()
        .run()
        .stdout();
    assert!(
        forced.contains("replaced AGENTS.md; your edit is AGENTS.md.orig"),
        "{forced}"
    );
    assert_eq!(h.read_string("AGENTS.md"), manual);
    assert!(h.read_string("AGENTS.md.orig").ends_with("My own rule.\n"));
    // Codex: its hooks and the mark.
    let codex = h
        .fm("fm")
        .args(["mate", "init", "--harness", "codex"])
        .stdout_any()
        .run()
        .stdout();
    assert!(codex.contains("wrote .codex/hooks.json"), "{codex}");
    let hooks: serde_json::Value =
        serde_json::from_str(&h.read_string(".codex/hooks.json")).unwrap();
    assert!(
        hooks["hooks"]["Stop"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .contains("mate hook stop --harness codex")
    );
    assert!(
        h.read_string(".codex/config.toml")
            .contains("FM_MATE = \"1\"")
    );
}

#[test]
fn mate_init_refuses_a_symlinked_directory() {
    let h = TestHome::new();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), h.path(".claude")).unwrap();
    h.fm("fm")
        .args(["mate", "init"])
        .status(1)
        .stderr_has("symlink")
        .run();
    assert!(
        std::fs::read_dir(elsewhere.path())
            .unwrap()
            .next()
            .is_none(),
        "nothing written through the link"
    );
    assert!(!h.exists("AGENTS.md"), "nothing written at all");
    // A symlinked file is refused too, and not followed.
    std::fs::remove_file(h.path(".claude")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path().join("x"), h.path("CLAUDE.md")).unwrap();
    h.fm("fm")
        .args(["mate", "init"])
        .status(1)
        .stderr_has("symlink")
        .run();
    assert!(!elsewhere.path().join("x").exists());
    assert!(!h.exists("AGENTS.md"));
}

#[test]
fn the_hooks_hand_over_a_digest_and_a_packet() {
    let h = TestHome::new();
    task(&h, "a", "needs-decision [key=db]: which?\n");
    let digest = h
        .fm("fm")
        .args(["mate", "hook", "session-start"])
        .stdin("{\"session_id\":\"x\"}")
        .stdout_any()
        .run()
        .stdout();
    assert!(digest.starts_with("firstmate digest"), "{digest}");
    assert!(
        digest.contains("$ fm send a --resolve-key db -- '<answer>'"),
        "{digest}"
    );
    assert!(
        !digest.contains("--ack"),
        "a digest presents no packet: {digest}"
    );
    // The stop hook: exit 2, the packet on stderr, nothing on stdout (the
    // decision's line becomes a wake in the waiter's own watcher pass).
    let out = h
        .fm("fm")
        .args(["mate", "hook", "stop", "--timeout", "20"])
        .stdin("{}")
        .status(2)
        .stderr_any()
        .start()
        .wait(20.0);
    assert!(
        out.stderr().starts_with("wake w1: 1 worker"),
        "{}",
        out.stderr()
    );
    assert!(out.stderr().contains("decision db"), "{}", out.stderr());
    wake(&h).args(["--ack", "w1"]).stdout_any().run();
    // Superseded: exit 0, silent.
    let old = h
        .fm("fm")
        .args(["mate", "hook", "stop", "--timeout", "20"])
        .stdin("{}")
        .status(0)
        .start();
    assert!(wait_until(10.0, || waiter_is(&h, old.pid())));
    let new = h
        .fm("fm")
        .args(["mate", "hook", "stop", "--timeout", "20"])
        .stdin("{}")
        .status(2)
        .stderr_any()
        .start();
    assert!(wait_until(10.0, || waiter_is(&h, new.pid())));
    append(&h, "a", "blocked [key=net]: offline\n");
    new.wait(20.0);
    old.wait(20.0);
    // The hook's own timeout: a one-line note that re-arms the lead.
    wake(&h).args(["--ack", "w2"]).stdout_any().run();
    let quiet = h
        .fm("fm")
        .args(["mate", "hook", "stop", "--timeout", "1"])
        .stdin("{}")
        .status(2)
        .stderr_has("no news for a long while")
        .run();
    assert_eq!(quiet.stdout(), "");
}

/// A worker with 60 open decisions, each a wake: more than one packet
/// holds.
fn backlog(h: &TestHome) {
    let mut status = String::new();
    for i in 0..60 {
        status.push_str(&format!(
            "needs-decision [key=k{i}]: question {i} {}\n",
            "words ".repeat(30)
        ));
    }
    task(h, "busy", &status);
    pass(h);
}

#[test]
fn a_big_backlog_comes_in_packets_that_fit_the_budget() {
    let h = TestHome::new();
    backlog(&h);
    let mut seen = 0;
    let mut packets = 0;
    loop {
        let v = wake(&h).arg("--json").stdout_json().run().json();
        let text = wake(&h).stdout_any().run().stdout();
        let Some(token) = v["token"].as_str() else {
            break;
        };
        packets += 1;
        assert!(text.len() <= 8 * 1024 + 200, "{} bytes", text.len());
        let wakes = v["items"][0]["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["seq"].is_u64())
            .count();
        assert!(wakes > 0);
        seen += wakes;
        if seen < 60 {
            assert!(v["more_wakes"].as_u64().unwrap() > 0, "{v}");
            assert!(
                text.contains("more wakes come in the next packet"),
                "{text}"
            );
        }
        wake(&h).args(["--ack", token]).stdout_any().run();
        assert!(packets < 20, "the backlog ends");
    }
    assert_eq!(seen, 60, "every wake once, in {packets} packets");
    assert!(packets > 1);
}

#[test]
fn an_orphaned_stop_hook_ends_with_its_harness() {
    let h = TestHome::new();
    task(&h, "a", "working: on it\n");
    let fm = crate::harness::bin("fm");
    // The "harness" starts the hook and dies at once.
    let out = Cmd::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' mate hook stop --timeout 60 </dev/null >/dev/null 2>&1 & echo $!; sleep 1",
            fm.display()
        ))
        .env("FM_HOME", h.root())
        .stdout_any()
        .run()
        .stdout();
    let pid: i32 = out.trim().parse().unwrap();
    let alive = || unsafe { libc::kill(pid, 0) } == 0;
    assert!(
        wait_until(10.0, || !alive()),
        "the waiter outlived its harness"
    );
}

#[test]
fn doctor_says_how_the_first_mate_stands() {
    let h = TestHome::new();
    let before = h
        .fm("fm")
        .arg("doctor")
        .status_any()
        .stdout_any()
        .run()
        .stdout();
    assert!(!before.contains("first mate"), "no pack, no line: {before}");
    h.fm("fm").args(["mate", "init"]).stdout_any().run();
    let line = |h: &TestHome| {
        let out = h
            .fm("fm")
            .arg("doctor")
            .status_any()
            .stdout_any()
            .run()
            .stdout();
        out.lines()
            .find(|l| l.contains("first mate: "))
            .unwrap_or_else(|| panic!("no first mate line:\n{out}"))
            .to_string()
    };
    assert_eq!(
        line(&h),
        "ok   first mate: claude pack, 13 files; no waiter running (the lead is not waiting for wakes)"
    );
    h.write("AGENTS.md", "my own manual\n");
    assert!(
        line(&h).ends_with("; edited by you: AGENTS.md"),
        "{}",
        line(&h)
    );
    std::fs::remove_file(h.path(".claude/skills/run-while-away/SKILL.md")).unwrap();
    let l = line(&h);
    assert!(l.starts_with("warn first mate: "), "{l}");
    assert!(
        l.contains("missing: .claude/skills/run-while-away/SKILL.md"),
        "{l}"
    );
    // A waiter that runs is named.
    let waiter = wake(&h).arg("--wait").stdout_any().start();
    assert!(wait_until(10.0, || waiter_is(&h, waiter.pid())));
    assert!(
        line(&h).contains(&format!("waiter pid {}", waiter.pid())),
        "{}",
        line(&h)
    );
}

#[test]
fn a_workers_unread_status_lines_come_as_notes() {
    let h = TestHome::new();
    let now = firstmate::clock::now();
    task(
        &h,
        "a",
        &format!(
            "working [at={}]: old news\nworking [at={}]: tests pass\nworking [at={}]: now on docs\nworking: no time given\nneeds-decision [at={}] [key=db]: which?\n",
            now - 7200,
            now - 5,
            now - 4,
            now - 3
        ),
    );
    pass(&h);
    let out = wake(&h).stdout_any().run().stdout();
    assert!(
        out.contains("a: parked\n  note: working: old news\n  note: working: tests pass\n  note: working: now on docs\n  decision db"),
        "before any ack every timed line counts, the newest three: {out}"
    );
    assert!(!out.contains("no time given"), "{out}");
    assert_eq!(out.matches("which?").count(), 1, "{out}");
    wake(&h).args(["--ack", "w1"]).stdout_any().run();
    // Lines older than the acknowledged packet count as read (a line of
    // the very second it was shown counts as unread: shown twice rather
    // than lost).
    let later = firstmate::clock::now();
    append(
        &h,
        "a",
        &format!(
            "working [at={later}]: after the answer\nblocked [at={later}] [key=net]: offline\n"
        ),
    );
    pass(&h);
    let out = wake(&h).stdout_any().run().stdout();
    assert!(out.contains("  note: working: after the answer\n"), "{out}");
    assert!(!out.contains("tests pass"), "{out}");
}

#[test]
fn a_packet_on_its_way_is_not_shown_again_until_the_lead_had_it() {
    let h = TestHome::new();
    task(&h, "a", "needs-decision [key=db]: which?\n");
    pass(&h);
    let transcript = h.path("transcript.jsonl");
    std::fs::write(&transcript, "{\"type\":\"user\",\"text\":\"kickoff\"}\n").unwrap();
    let hook = |h: &TestHome, event: &str, session: &str| {
        h.fm("fm")
            .args(["mate", "hook", "stop", "--timeout", "1"])
            .stdin(format!(
                "{{\"hook_event_name\":\"{event}\",\"session_id\":\"{session}\",\"transcript_path\":\"{}\"}}",
                transcript.display()
            ))
            .status(2)
            .stderr_any()
            .run()
            .stderr()
    };
    // Session s1's start waiter shows w1 while the lead's first turn runs.
    assert!(hook(&h, "SessionStart", "s1").starts_with("wake w1: "));
    // That turn's end: the turn never had w1 (it comes after the turn), so
    // it is on its way, not shown again: the waiter's timeout note.
    assert!(hook(&h, "Stop", "s1").starts_with("firstmate: no news"));
    // Another session (the lead restarted) never had it: shown again.
    assert!(hook(&h, "Stop", "s2").starts_with("wake w1 (shown again"));
    assert!(
        hook(&h, "Stop", "s2").starts_with("firstmate: no news"),
        "twice is enough"
    );
    wake(&h).args(["--ack", "w1"]).stdout_any().run();
    // A packet the turn had (its transcript shows it) and left unacked
    // is shown once more at that turn's end.
    append(&h, "a", "blocked [key=net]: offline\n");
    pass(&h);
    assert!(hook(&h, "Stop", "s1").starts_with("wake w2: "));
    std::fs::write(
        &transcript,
        "{\"type\":\"user\",\"text\":\"Stop hook blocking error from command \\\"Stop\\\": wake w2: 1 worker with news\"}\n",
    )
    .unwrap();
    assert!(hook(&h, "Stop", "s1").starts_with("wake w2 (shown again"));
    let packets = h.read_string("state/.mate.packets");
    assert!(packets.lines().all(|l| l.ends_with("\ts1")), "{packets}");
}

/// Hostile state: a FIFO where the ledger should be is refused at once,
/// naming it; a lock held by another waits its bound and says so; many
/// racing acks and showings leave one consistent ledger.
#[test]
fn the_ledger_refuses_a_fifo_waits_out_a_held_lock_and_survives_races() {
    let h = TestHome::new();
    task(&h, "a", "needs-decision [key=db]: which?\n");
    pass(&h);
    let fifo = h.path("state/.mate.cursor");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    wake(&h)
        .status_any()
        .stdout_any()
        .stderr_has(".mate.cursor (a FIFO where a regular file is expected)")
        .start()
        .wait(10.0);
    std::fs::remove_file(&fifo).unwrap();

    // A lock held by another process: refused after the wait, not hung.
    let holder = Cmd::new("python3")
        .arg("-c")
        .arg(format!(
            "import fcntl,sys,time\nf=open({:?},'a')\nfcntl.flock(f,fcntl.LOCK_EX)\nprint('held',flush=True)\ntime.sleep(30)",
            h.path("state/.mate.lock").display().to_string()
        ))
        .stdout_any()
        .start();
    assert!(wait_until(10.0, || holder.stdout_so_far().contains("held")));
    wake(&h)
        .status(3)
        .stdout("")
        .stderr_has(".mate.lock")
        .start()
        .wait(20.0);
    drop(holder);

    // Racing: 6 processes each show and ack 5 times while the workers
    // keep raising wakes and watcher passes run.
    std::thread::scope(|s| {
        for t in 0..6 {
            let h = &h;
            s.spawn(move || {
                for i in 0..5 {
                    let out = wake(h).stdout_any().run().stdout();
                    if let Some(t) = out
                        .lines()
                        .find_map(|l| l.strip_prefix("when handled: fm wake --ack "))
                    {
                        wake(h).args(["--ack", t.trim()]).stdout_any().run();
                    }
                    append(h, "a", &format!("blocked [key=k{t}-{i}]: more\n"));
                    pass(h);
                }
            });
        }
    });
    // Then one more showing and its ack: nothing is left over, and every
    // wake was in some packet (the keys all open, in no wake again).
    pass(&h);
    loop {
        let v = wake(&h).arg("--json").stdout_json().run().json();
        let Some(t) = v["token"].as_str() else { break };
        wake(&h).args(["--ack", t]).stdout_any().run();
    }
    let wakes = h.read_string("state/wakes.log").lines().count();
    assert_eq!(wakes, 31, "one decision and 30 blocks became wakes");
    let cursor = h.read_string("state/.mate.cursor");
    let packets = h.read_string("state/.mate.packets");
    let ns: Vec<u64> = packets
        .lines()
        .map(|l| l.split('\t').next().unwrap().parse().unwrap())
        .collect();
    assert!(
        ns.windows(2).all(|w| w[0] < w[1]),
        "numbers rise: {packets}"
    );
    assert!(cursor.starts_with("-\t"), "{cursor}");
    let end = std::fs::metadata(h.path("state/wakes.log")).unwrap().len();
    let at: u64 = cursor.lines().next().unwrap()[2..].parse().unwrap();
    assert_eq!(
        at, end,
        "every wake acknowledged, the cursor at the log's end"
    );
}

/// A host that never answers holds a packet up to its timeout; an ack
/// meanwhile does not wait on it (the slow reads run outside the
/// ledger's lock, whose wait is shorter than that timeout).
#[test]
fn an_ack_never_waits_on_a_slow_host() {
    let h = TestHome::new();
    // A listener that accepts and never speaks: ssh waits for a banner.
    let silent = Cmd::new("python3")
        .arg("-c")
        .arg(
            "import socket,time\ns=socket.socket();s.bind(('127.0.0.1',0));s.listen(8)\nprint(s.getsockname()[1],flush=True)\nc=[]\ns.settimeout(0.2)\nt=time.time()\nwhile time.time()-t<60:\n  try: c.append(s.accept()[0])\n  except Exception: pass",
        )
        .stdout_any()
        .start();
    assert!(wait_until(10.0, || silent
        .stdout_so_far()
        .trim()
        .parse::<u16>()
        .is_ok()));
    let port = silent.stdout_so_far().trim().to_string();
    let cfg = h.read_string("config/firstmate.toml");
    h.write(
        "config/firstmate.toml",
        format!(
            "{cfg}\n[hosts.slow]\ndestination = \"127.0.0.1\"\nhome = \"/nonexistent\"\nssh_options = [\"-p\", \"{port}\", \"-o\", \"StrictHostKeyChecking=no\", \"-o\", \"UserKnownHostsFile=/dev/null\", \"-o\", \"BatchMode=yes\"]\ntimeout_ms = 12000\n"
        ),
    );
    task(&h, "a", "needs-decision [key=db]: which?\n");
    pass(&h);
    // w1 shown (after the host's timeout), then a second showing starts.
    let first = wake(&h).stdout_any().start().wait(40.0).stdout();
    assert!(
        first.contains("warning: host slow: no wakes this time"),
        "{first}"
    );
    let again = wake(&h).stdout_any().start();
    std::thread::sleep(std::time::Duration::from_millis(500));
    wake(&h)
        .args(["--ack", "w1"])
        .stdout("acknowledged w1\n")
        .start()
        .wait(8.0);
    drop(again);
    drop(silent);
}

/// A packet cut by the budget and left unacknowledged neither stalls the
/// feed nor lies: shown again it lists exactly the wakes its token
/// acknowledges, and once shown twice the wakes past it come in the next
/// packet, each wake in some packet.
#[test]
fn an_unacknowledged_cut_packet_neither_stalls_nor_shrinks() {
    let h = TestHome::new();
    backlog(&h);
    let seqs = |v: &serde_json::Value| -> Vec<u64> {
        v["items"][0]["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["seq"].as_u64())
            .collect()
    };
    // The packet a wait prints, or null when it timed out silently.
    let wait = |h: &TestHome| {
        let out = wake(h)
            .args(["--wait", "--timeout", "2", "--json"])
            .stdout_any()
            .run();
        if out.stdout().is_empty() {
            serde_json::Value::Null
        } else {
            out.json()
        }
    };
    let w1 = wake(&h).arg("--json").stdout_json().run().json();
    assert_eq!(w1["token"], "w1");
    let first = seqs(&w1);
    assert!(
        first.len() < 60 && w1["more_wakes"].as_u64().unwrap() > 0,
        "{w1}"
    );
    // Shown again: the very same wakes.
    let again = wait(&h);
    assert_eq!(again["token"], "w1");
    assert_eq!(again["shown"], 2);
    assert_eq!(
        seqs(&again),
        first,
        "a re-show lists what its token acknowledges"
    );
    // Shown twice and still unacknowledged: the wakes past it come now.
    let mut all = first.clone();
    let mut v = wait(&h);
    let mut n = 0;
    while let Some(t) = v["token"].as_str() {
        let got = seqs(&v);
        assert!(
            got.iter().all(|s| !all.contains(s)),
            "only wakes past the cut: {got:?}"
        );
        all.extend(got);
        wake(&h).args(["--ack", t]).stdout_any().run();
        v = wait(&h);
        n += 1;
        assert!(n < 10, "the backlog ends");
    }
    all.sort_unstable();
    assert_eq!(
        all,
        (1..=60).collect::<Vec<u64>>(),
        "every wake in some packet"
    );
}

#[test]
fn init_starts_at_the_feeds_end_and_a_fifo_transcript_never_holds_the_hook() {
    let h = TestHome::new();
    task(
        &h,
        "old",
        "needs-decision [key=db]: from before the first mate\n",
    );
    pass(&h);
    h.fm("fm").args(["mate", "init"]).stdout_any().run();
    let out = wake(&h).stdout_any().run().stdout();
    assert!(out.starts_with("no news"), "history is not news: {out}");
    assert!(
        out.contains("from before the first mate"),
        "still an open decision: {out}"
    );
    // A re-run keeps the cursor where the lead left it.
    append(&h, "old", "blocked [key=net]: new\n");
    pass(&h);
    h.fm("fm").args(["mate", "init"]).stdout_any().run();
    assert!(wake(&h).stdout_any().run().stdout().starts_with("wake w1"));
    // A FIFO given as the transcript is not read (nor waited on).
    let fifo = h.path("t.fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let out = h
        .fm("fm")
        .args(["mate", "hook", "stop", "--timeout", "2"])
        .stdin(format!(
            "{{\"hook_event_name\":\"Stop\",\"session_id\":\"s9\",\"transcript_path\":\"{}\"}}",
            fifo.display()
        ))
        .status(2)
        .stderr_any()
        .start()
        .wait(15.0);
    assert!(
        out.stderr().starts_with("wake w1 (shown again"),
        "{}",
        out.stderr()
    );
    // And a key that starts with a dash is joined to its option.
    append(&h, "old", "needs-decision [key=-x]: dashed\n");
    pass(&h);
    let out = wake(&h).stdout_any().run().stdout();
    assert!(
        out.contains("$ fm send old --resolve-key=-x -- '<answer>'"),
        "{out}"
    );
}

#[test]
fn a_wait_ends_on_sigint_with_130_and_on_sigterm_with_0() {
    let h = TestHome::new();
    task(&h, "a", "working: on it\n");
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 0)] {
        let w = wake(&h).arg("--wait").status(code).stdout("").start();
        assert!(wait_until(10.0, || waiter_is(&h, w.pid())));
        w.signal(sig);
        w.wait(10.0);
    }
}

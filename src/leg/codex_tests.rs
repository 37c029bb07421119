use std::os::unix::fs::PermissionsExt;

use super::rollout::last_start;
use super::*;

const THREAD: &str = "019b0d5e-1f2a-7c31-9a4e-2b6f8d1e3c57";

fn home() -> (tempfile::TempDir, Home, TaskId) {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("home")).unwrap();
    let home = Home::at(&d.path().join("home")).unwrap();
    std::fs::create_dir_all(home.state_dir()).unwrap();
    (d, home, TaskId::parse("t1").unwrap())
}

fn started(at: u64) -> String {
    format!(
        r#"{{"timestamp":"2026-12-06T15:37:15.739Z","type":"event_msg","payload":{{"type":"task_started","turn_id":"t","started_at":{at}}}}}"#
    )
}

const COMPLETE: &str = r#"{"timestamp":"2026-12-06T15:37:19.001Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t"}}"#;

/// A task whose agent (spawn `s1`, worktree `<d>/wt`) runs thread
/// [`THREAD`] of Codex `version`, learned in spawn `bound`.
fn world(version: &str, bound: Option<&str>) -> (tempfile::TempDir, Home, TaskId, TaskMeta) {
    let (d, home, id) = home();
    let wt = d.path().join("wt");
    let codex = d.path().join("agent/.codex");
    let day = codex.join("sessions/2026/12/06");
    std::fs::create_dir_all(&wt).unwrap();
    std::fs::create_dir_all(&day).unwrap();
    let meta_line = format!(
        r#"{{"timestamp":"2026-12-06T15:37:15Z","type":"session_meta","payload":{{"id":"{THREAD}","cwd":"{}","cli_version":"{version}"}}}}"#,
        wt.display()
    );
    std::fs::write(
        day.join(format!("rollout-2026-12-06T15-37-15-{THREAD}.jsonl")),
        format!("{meta_line}\n{}\n{COMPLETE}\n", started(1000)),
    )
    .unwrap();
    std::fs::write(
        crate::agent_report::agent_home_file(&home, &id),
        format!("codex {}\n", codex.display()),
    )
    .unwrap();
    let mut meta = format!(
        "harness=codex\nworktree={}\nspawn_id=s1\nspawned_at=0\nsession={THREAD}\n",
        wt.display()
    );
    if let Some(b) = bound {
        meta.push_str(&format!("session_spawn={b}\n"));
    }
    std::fs::write(home.meta(&id), meta).unwrap();
    let meta = TaskMeta::load(&home, &id).unwrap().unwrap();
    (d, home, id, meta)
}

#[test]
fn the_queue_command_is_an_argument_vector_as_the_agent() {
    let agent = AgentHome {
        codex_home: "/w/agent/.codex".into(),
        home: Some("/w/agent".into()),
    };
    let bell = ": 'firstmate inbox: it'\\''s $(touch x) mail'";
    let cmd = queue_cmd(Path::new("/opt/codex"), THREAD, bell, &agent);
    let shown = format!("{cmd:?}");
    // The doorbell is one argument, exactly as given: no shell between.
    assert!(
        shown.contains(r#""queue", "--thread", "019b0d5e"#),
        "{shown}"
    );
    assert!(shown.contains(&format!("{bell:?}")), "{shown}");
    assert!(
        shown.contains(r#""CODEX_HOME""#) && shown.contains(r#""/w/agent/.codex""#),
        "{shown}"
    );
    assert!(shown.contains(r#""HOME""#), "{shown}");
    assert!(
        !shown.contains("\"sh\"") && !shown.contains("\"-c\""),
        "{shown}"
    );
    assert!(shown.contains("/opt/codex"), "{shown}");
}

#[test]
fn the_program_must_be_codex() {
    assert_eq!(
        program_of("/opt/bin/codex").unwrap(),
        PathBuf::from("/opt/bin/codex")
    );
    assert_eq!(program_of("codex").unwrap(), PathBuf::from("codex"));
    assert!(program_of("/opt/bin/my-wrapper.sh").is_err());
    assert!(program_of("node").is_err());
}

#[test]
fn the_note_names_the_codex_home_and_the_agents_home() {
    let n = parse_note("codex /a/.codex\n").unwrap();
    assert_eq!(n.codex_home, PathBuf::from("/a/.codex"));
    assert_eq!(n.home, Some(PathBuf::from("/a")));
    assert_eq!(parse_note("codex /a/ch\n").unwrap().home, None);
    assert!(parse_note("codex rel\n").is_none());
    assert!(parse_note("other /x\n").is_none());
}

#[test]
fn available_only_with_this_spawns_thread_and_a_verified_version() {
    let (_d, home, id, meta) = world("0.169.0", Some("s1"));
    assert_eq!(available(&home, &id, &meta), Ok(()));
    // Remembered: version and rollout, for this spawn and thread.
    let s = QueueState::load(&home, &id).unwrap();
    assert_eq!((s.spawn_id.as_str(), s.thread.as_str()), ("s1", THREAD));
    assert_eq!(s.version.as_deref(), Some("0.169.0"));

    // Learned in another spawn (a relaunch since), or with no binding.
    for bound in [Some("s0"), None] {
        let (_d, home, id, meta) = world("0.169.0", bound);
        let why = available(&home, &id, &meta).unwrap_err();
        assert!(why.contains("not learned from this spawn"), "{why}");
    }
    // No thread yet (before the first turn).
    let (_d, home, id, mut meta) = world("0.169.0", Some("s1"));
    meta.raw.remove(session::KEY);
    let why = available(&home, &id, &meta).unwrap_err();
    assert!(why.contains("not known yet"), "{why}");
    // A version the suite never verified.
    let (_d, home, id, meta) = world("0.99.0", Some("s1"));
    let why = available(&home, &id, &meta).unwrap_err();
    assert!(why.contains("codex 0.99.0 is not verified"), "{why}");
    assert!(why.contains("0.169.0"), "{why}");
    // No agent home noted.
    let (_d, home, id, meta) = world("0.171.0", Some("s1"));
    assert_eq!(available(&home, &id, &meta), Ok(()));
    std::fs::remove_file(crate::agent_report::agent_home_file(&home, &id)).unwrap();
    assert!(
        available(&home, &id, &meta)
            .unwrap_err()
            .contains("no Codex home")
    );
}

#[test]
fn the_verified_versions_are_the_suites() {
    let v = verified_versions();
    assert!(v.contains(&"0.169.0") && v.contains(&"0.171.0"), "{v:?}");
}

#[test]
fn a_queued_doorbell_is_outstanding_until_a_turn_starts() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("r.jsonl");
    std::fs::write(
        &p,
        format!(
            "{{\"type\":\"session_meta\"}}\n{}\n{COMPLETE}\n",
            started(1000)
        ),
    )
    .unwrap();
    assert!(!taken_since(&p, 1001), "queued after the last turn began");
    assert!(
        !taken_since(&p, 1000),
        "a turn of the same second began before the queue was read"
    );
    assert!(taken_since(&p, 999));
    std::fs::write(
        &p,
        format!(
            "{{\"type\":\"session_meta\"}}\n{}\n{COMPLETE}\n{}\n",
            started(1000),
            started(1005)
        ),
    )
    .unwrap();
    assert!(taken_since(&p, 1001));
    assert!(
        taken_since(&d.path().join("gone.jsonl"), 1),
        "no log holds nothing back"
    );
    assert_eq!(last_start(b"partial\n{}\n", false), None);
}

#[test]
fn a_ring_queues_one_doorbell_per_pending_record_and_no_copy_more() {
    let (d, home, id, meta) = world("0.169.0", Some("s1"));
    // A stand-in `codex` that logs its argv, one line per call.
    let bin = d.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = d.path().join("calls");
    let prog = bin.join("codex");
    std::fs::write(
        &prog,
        format!(
            "#!/bin/sh\nprintf '%s|' \"$@\" >> {log}\nprintf 'home=%s codex_home=%s\\n' \"$HOME\" \"$CODEX_HOME\" >> {log}\necho \"Queued message m1 for thread $3.\"\n",
            log = log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let text = format!("[harness.codex]\nlaunch = [\"{}\"]\n", prog.display());
    let cfg = Config::from_parts(Path::new("firstmate.toml"), Some(&text), &[]).unwrap();
    let bell = ": 'firstmate inbox: new mail'";
    let first = ring(&home, &cfg, &id, &meta, bell).unwrap();
    assert_eq!(first.leg, Leg::Queue);
    assert!(first.detail.unwrap().contains("queued for thread"));
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(calls.lines().count(), 1, "{calls}");
    assert!(
        calls.starts_with(&format!("queue|--thread|{THREAD}|--message|{bell}|")),
        "{calls}"
    );
    assert!(
        calls.contains(&format!(
            "codex_home={}",
            d.path().join("agent/.codex").display()
        )),
        "{calls}"
    );
    assert!(
        calls.contains(&format!("home={} ", d.path().join("agent").display())),
        "{calls}"
    );
    // Rung again before the TUI took it: nothing more is queued.
    let again = ring(&home, &cfg, &id, &meta, bell).unwrap();
    assert!(again.detail.unwrap().contains("already queued"));
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 1);
    // The TUI took it (a turn started since): the next ring queues again.
    let rollout = QueueState::load(&home, &id).unwrap().rollout.unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&rollout)
        .unwrap();
    std::io::Write::write_all(
        &mut f,
        format!("{}\n", started(crate::clock::now() + 1)).as_bytes(),
    )
    .unwrap();
    ring(&home, &cfg, &id, &meta, bell).unwrap();
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 2);
    // The re-ring grace of this leg holds the watcher back meanwhile.
    let now = crate::clock::now();
    let until = rering_held_until(&home, &id, &meta, now).unwrap();
    assert!(until >= now + RERING_FLOOR_SECS - 1, "{until} {now}");
    let mut other = meta.clone();
    other.spawn_id = Some("s2".into());
    assert_eq!(rering_held_until(&home, &id, &other, now), None);
    // A failing `codex queue` is the ring's to fall back from.
    std::fs::write(
        &prog,
        "#!/bin/sh\necho 'error: unrecognized subcommand' >&2\nexit 2\n",
    )
    .unwrap();
    std::fs::remove_file(state_file(&home, &id)).unwrap();
    let why = ring(&home, &cfg, &id, &meta, bell).unwrap_err();
    assert!(
        why.contains("exit 2") && why.contains("unrecognized"),
        "{why}"
    );
}

#[test]
fn the_rering_floor_ends() {
    assert_eq!(held_until(None, 100), None);
    assert_eq!(held_until(Some(100), 100), Some(100 + RERING_FLOOR_SECS));
    assert_eq!(held_until(Some(100), 100 + RERING_FLOOR_SECS), None);
    assert_eq!(
        held_until(Some(200), 100),
        None,
        "a stamp from the future holds nothing"
    );
}

#[test]
fn the_state_file_round_trips() {
    let s = QueueState {
        spawn_id: "s1".into(),
        thread: THREAD.into(),
        rollout: Some("/r.jsonl".into()),
        version: Some("0.169.0".into()),
        queued_at: Some(5),
        queued_seq: Some(3),
    };
    assert_eq!(QueueState::parse(&s.render()), s);
    assert_eq!(QueueState::parse("junk\n"), QueueState::default());
}

#[test]
fn doctor_asks_the_program_for_its_queue_subcommand() {
    let d = tempfile::tempdir().unwrap();
    let prog = d.path().join("codex");
    let write = |body: &str| {
        std::fs::write(&prog, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    write(
        r#"[ "$1" = queue ] && echo 'Usage: codex queue [OPTIONS] --thread <THREAD> --message <TEXT>'"#,
    );
    assert_eq!(queue_present(prog.to_str().unwrap()), Ok(()));
    write("echo 'error: unrecognized subcommand' >&2; exit 2");
    assert!(
        queue_present(prog.to_str().unwrap())
            .unwrap_err()
            .contains("no `queue`")
    );
}

#[test]
fn a_doorbell_an_idle_agent_left_in_the_queue_is_typed_instead() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("r.jsonl");
    let now = crate::clock::now();
    let age = |p: &Path, secs: u64| {
        let t = std::time::UNIX_EPOCH + Duration::from_secs(now - secs);
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(t)
            .unwrap();
    };
    std::fs::write(
        &p,
        format!(
            "{{\"type\":\"session_meta\"}}\n{}\n{COMPLETE}\n",
            started(1000)
        ),
    )
    .unwrap();
    age(&p, 60);
    assert!(
        stuck(&p, now - 30, now),
        "idle for a minute, queued 30 s ago"
    );
    assert!(
        !stuck(&p, now - 5, now),
        "queued moments ago: the TUI's poll may come"
    );
    age(&p, 3);
    assert!(!stuck(&p, now - 30, now), "the log was written moments ago");
    // A turn running: the queue runs after it.
    std::fs::write(
        &p,
        format!("{{\"type\":\"session_meta\"}}\n{}\n", started(1000)),
    )
    .unwrap();
    age(&p, 60);
    assert!(!stuck(&p, now - 30, now));
}

#[test]
fn a_resumed_threads_rollout_is_found_by_its_name() {
    let (d, home, id, mut meta) = world("0.169.0", Some("s1"));
    // Another rollout of the worktree is the newest since the spawn (the
    // agent a relaunch replaced): the thread's own is found by its name.
    let day = d.path().join("agent/.codex/sessions/2026/12/07");
    std::fs::create_dir_all(&day).unwrap();
    std::fs::write(
        day.join("rollout-2026-12-07T00-00-00-other.jsonl"),
        format!(
            "{{\"type\":\"session_meta\",\"payload\":{{\"id\":\"other\",\"cwd\":\"{}\"}}}}\n",
            d.path().join("wt").display()
        ),
    )
    .unwrap();
    // The thread's own was last written before this spawn (resumed).
    let own = d.path().join(format!(
        "agent/.codex/sessions/2026/12/06/rollout-2026-12-06T15-37-15-{THREAD}.jsonl"
    ));
    let old = std::time::SystemTime::now() - Duration::from_secs(600);
    std::fs::File::options()
        .write(true)
        .open(&own)
        .unwrap()
        .set_modified(old)
        .unwrap();
    meta.spawned_at = Some(crate::clock::now());
    assert_eq!(available(&home, &id, &meta), Ok(()));
    let s = QueueState::load(&home, &id).unwrap();
    assert!(
        s.rollout
            .unwrap()
            .to_str()
            .unwrap()
            .ends_with(&format!("-{THREAD}.jsonl"))
    );
}

fn fake_codex(_socket: &str) -> Box<dyn crate::tmux::pane::Pane> {
    Box::new(crate::tmux::pane::FakePane::with("%1", "codex"))
}

#[test]
fn the_watcher_does_not_re_ring_a_freshly_queued_doorbell() {
    let (_d, home, id) = home();
    let now = crate::clock::now();
    std::fs::create_dir_all(home.inbox(&id).join("handled")).unwrap();
    std::fs::write(
        home.inbox(&id).join("001.msg"),
        crate::inbox::render(&crate::clock::rfc3339(now - 600), "captain", false, b"hi"),
    )
    .unwrap();
    // No spawn id: the fake pane carries no mark to prove it.
    std::fs::write(home.meta(&id), "harness=codex\npane=%1\n").unwrap();
    let cfg = Config::default();
    let pass = |at: u64| {
        let mut state = crate::watch::pass::State::load(&home).unwrap();
        crate::watch::pass::run(&home, &cfg, &fake_codex, &|_| {}, &mut state, at).unwrap()
    };
    // Queued 5 s ago: the ladder's ring (the record is 600 s old) waits.
    let q = QueueState {
        queued_at: Some(now - 5),
        ..QueueState::default()
    };
    q.save(&home, &id).unwrap();
    let held = pass(now);
    assert!(held.rings.is_empty(), "{:?} {:?}", held.rings, held.wakes);
    assert_eq!(held.next_due, Some(now - 5 + RERING_FLOOR_SECS));
    // Once the floor passed, the ladder rings as ever.
    let rung = pass(now - 5 + RERING_FLOOR_SECS);
    assert_eq!(rung.rings.len(), 1, "{:?}", rung.rings);
}

#[test]
fn a_doorbell_queued_before_a_restore_is_not_queued_again() {
    let (_d, home, id, meta) = world("0.169.0", Some("s1"));
    available(&home, &id, &meta).unwrap();
    let mut s = QueueState::load(&home, &id).unwrap();
    s.spawn_id = "s0".into();
    s.queued_at = Some(crate::clock::now());
    s.save(&home, &id).unwrap();
    // The restore's spawn resumes the same thread: the queued doorbell
    // (durable) is still the one it will take.
    let ready = check(&home, &id, &meta).unwrap();
    assert_eq!(ready.state.queued_at, s.queued_at);
    assert_eq!(ready.state.spawn_id, "s1");
}

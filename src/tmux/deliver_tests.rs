use super::*;
use crate::config::Config;
use crate::task_id::TaskId;
use crate::tmux::pane::FakePane;

fn profile() -> HarnessProfile {
    let mut p = crate::harness::builtin("claude").unwrap();
    p.agent_commands = Some(vec!["claude".into()]);
    p.composer_regex = Some(regex::Regex::new(r"^> ?(.*)$").unwrap());
    p.composer_below_regex = None;
    p.dialogs.clear();
    p.busy_regex = Some(regex::Regex::new("esc to interrupt").unwrap());
    p.busy_whole_turn = false;
    p
}

fn ring(f: &FakePane, p: Option<&HarnessProfile>, busy: bool) -> Outcome {
    let cfg = Config::default().send;
    deliver(
        f,
        &Target {
            pane: Some("%1"),
            claim: None,
            profile: p,
            busy_record: busy.then_some(0),
            spawned_at: None,
            ring_lock: RingLock::Without,
            hold_for_leg: false,
        },
        ": ring",
        &cfg,
        &|_| {},
    )
}

#[test]
fn a_pane_that_is_not_the_tasks_is_never_typed_into() {
    let p = profile();
    let mut cfg = Config::default().send;
    (cfg.settle_ms, cfg.enter_wait_ms) = (0, 0);
    let claim = Claim {
        task: TaskId::parse("one").unwrap(),
        pane: "%1".into(),
        spawn_id: Some("00000000000000aa".into()),
        server: None,
    };
    for (mark, want) in [
        ("two/00000000000000aa", Outcome::Dead),
        ("", Outcome::Dead),
        ("one/00000000000000bb", Outcome::Dead),
        ("one/00000000000000aa", Outcome::Rang),
    ] {
        let f = FakePane::with("%1", "claude");
        f.edit("%1", |s| s.mark = mark.into());
        let t = Target {
            pane: Some("%1"),
            claim: Some(&claim),
            profile: Some(&p),
            busy_record: None,
            spawned_at: None,
            ring_lock: RingLock::Without,
            hold_for_leg: false,
        };
        assert_eq!(deliver(&f, &t, ": ring", &cfg, &|_| {}), want, "{mark:?}");
        let calls = f.screen("%1").calls;
        assert_eq!(
            calls.is_empty(),
            want == Outcome::Dead,
            "{mark:?}: {calls:?}"
        );
    }
}

#[test]
fn a_ring_waits_for_another_ring_of_its_task_and_a_lock_it_cannot_make_stops_nothing() {
    let d = tempfile::tempdir().unwrap();
    let lock = d.path().join(".ring-t1.lock");
    let p = profile();
    let mut cfg = Config::default().send;
    (cfg.settle_ms, cfg.enter_wait_ms, cfg.enter_retries) = (0, 0, 0);
    let target = |l: std::path::PathBuf| Target {
        pane: Some("%1"),
        claim: None,
        profile: Some(&p),
        busy_record: None,
        spawned_at: None,
        ring_lock: RingLock::Wait(l),
        hold_for_leg: false,
    };
    // Held past the longest ring: nothing typed, held back.
    let f = FakePane::with("%1", "claude");
    let other = crate::fsx::lock(&lock, Duration::ZERO).unwrap();
    let started = std::time::Instant::now();
    assert_eq!(
        deliver(&f, &target(lock.clone()), ": ring", &cfg, &|_| {}),
        Outcome::RingLocked
    );
    assert_eq!(Outcome::RingLocked.as_str(), "queued");
    assert!(started.elapsed() >= ring_lock_wait(&cfg));
    assert!(
        f.screen("%1").calls.is_empty(),
        "{:?}",
        f.screen("%1").calls
    );
    // Released while this one waits: it rings, after the other.
    let f = FakePane::with("%1", "claude");
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        drop(other);
    });
    assert_eq!(
        deliver(&f, &target(lock.clone()), ": ring", &cfg, &|_| {}),
        Outcome::Rang
    );
    release.join().unwrap();
    assert_eq!(f.screen("%1").calls, vec!["type:: ring", "key:Enter"]);
    // A lock file that cannot be made (its directory is missing).
    let f = FakePane::with("%1", "claude");
    let missing = d.path().join("missing/.ring-t1.lock");
    assert_eq!(
        deliver(&f, &target(missing), ": ring", &cfg, &|_| {}),
        Outcome::Rang
    );
}

#[test]
fn rings_once_and_submits() {
    let f = FakePane::with("%1", "claude");
    let p = profile();
    assert_eq!(ring(&f, Some(&p), false), Outcome::Rang);
    assert_eq!(f.screen("%1").calls, vec!["type:: ring", "key:Enter"]);
    assert_eq!(f.screen("%1").history, vec![": ring"]);
}

#[test]
fn swallowed_enter_is_pressed_again_never_retyped() {
    let f = FakePane::with("%1", "claude");
    f.edit("%1", |s| s.swallow_enters = 2);
    let p = profile();
    assert_eq!(ring(&f, Some(&p), false), Outcome::Rang);
    let calls = f.screen("%1").calls;
    assert_eq!(calls.iter().filter(|c| c.starts_with("type:")).count(), 1);
    assert_eq!(calls.iter().filter(|c| *c == "key:Enter").count(), 3);
}

#[test]
fn enter_retries_are_bounded() {
    let f = FakePane::with("%1", "claude");
    f.edit("%1", |s| s.swallow_enters = 100);
    let p = profile();
    assert_eq!(ring(&f, Some(&p), false), Outcome::Failed);
    assert_eq!(f.screen("%1").calls.len(), 1 + 4);
}

#[test]
fn dead_gone_busy_and_someone_elses_text() {
    let p = profile();
    let f = FakePane::with("%1", "bash");
    assert_eq!(ring(&f, Some(&p), false), Outcome::Dead);
    let f = FakePane::with("%2", "claude");
    assert_eq!(ring(&f, Some(&p), false), Outcome::Dead);
    let f = FakePane::with("%1", "claude");
    assert_eq!(ring(&f, Some(&p), true), Outcome::Queued);
    f.edit("%1", |s| s.history.push("working… esc to interrupt".into()));
    assert_eq!(ring(&f, Some(&p), false), Outcome::Queued);
    let f = FakePane::with("%1", "claude");
    f.edit("%1", |s| s.composer = "half a thought".into());
    assert_eq!(ring(&f, Some(&p), false), Outcome::Skipped);
    assert!(f.screen("%1").calls.is_empty());
    let f = FakePane {
        broken: true,
        ..FakePane::with("%1", "claude")
    };
    assert_eq!(ring(&f, Some(&p), false), Outcome::Failed);
    let cfg = Config::default().send;
    assert_eq!(
        deliver(
            &f,
            &Target {
                pane: None,
                claim: None,
                profile: None,
                busy_record: None,
                spawned_at: None,
                ring_lock: RingLock::Without,
                hold_for_leg: false,
            },
            "x",
            &cfg,
            &|_| {}
        ),
        Outcome::NoPane
    );
}

#[test]
fn a_dialog_is_never_typed_into_and_a_missing_composer_is_waited_for() {
    let mut p = profile();
    p.dialogs = vec![crate::harness::Dialog {
        name: "trust".into(),
        regex: regex::Regex::new("trust this folder").unwrap(),
    }];
    let f = FakePane::with("%1", "claude");
    f.edit("%1", |s| s.history.push("Do you trust this folder?".into()));
    assert_eq!(ring(&f, Some(&p), false), Outcome::Dialog);
    assert!(f.screen("%1").calls.is_empty());
    // No composer on the screen (an agent still booting): looked for
    // a bounded while, then nothing typed.
    let mut q = profile();
    q.composer_regex = Some(regex::Regex::new("^never (.*)$").unwrap());
    let f = FakePane::with("%1", "claude");
    let slept = std::cell::Cell::new(0u64);
    let cfg = Config::default().send;
    let target = Target {
        pane: Some("%1"),
        claim: None,
        profile: Some(&q),
        busy_record: None,
        spawned_at: None,
        ring_lock: RingLock::Without,
        hold_for_leg: false,
    };
    let out = deliver(&f, &target, ": ring", &cfg, &|d| {
        slept.set(slept.get() + u64::try_from(d.as_millis()).unwrap());
    });
    assert_eq!(out, Outcome::Skipped);
    assert!(f.screen("%1").calls.is_empty());
    assert_eq!(slept.get(), COMPOSER_WAIT_MS);
}

/// An exit command: it must show before Enter, and a swallowed Enter
/// is pressed again (bounded); an agent gone after a press took it.
#[test]
fn settle_then_press_until_taken() {
    let cfg = Config::default().send;
    let p = profile();
    let f = FakePane::with("%1", "claude");
    f.edit("%1", |s| s.swallow_enters = 1);
    f.type_text("%1", "/quit").unwrap();
    let slept = std::cell::Cell::new(0u64);
    let sleep = |d: Duration| slept.set(slept.get() + u64::try_from(d.as_millis()).unwrap());
    assert!(settle(&f, Some(&p), "%1", "/quit", &cfg, &sleep));
    assert_eq!(slept.get(), cfg.settle_ms, "seen at once: no polling");
    let (out, presses) = press_until_taken(&f, Some(&p), "%1", "/quit", &cfg, &|_| {}, &|| false);
    assert_eq!((out, presses), (Outcome::Rang, 2));
    assert_eq!(f.screen("%1").history, vec!["/quit"]);
    // Text that never shows is waited for a bounded while only.
    let f = FakePane::with("%1", "claude");
    slept.set(0);
    assert!(!settle(&f, Some(&p), "%1", "/quit", &cfg, &sleep));
    assert_eq!(slept.get(), SETTLE_WAIT_MS + cfg.settle_ms);
    // Never taken: 1 + enter_retries presses, then failed.
    let f = FakePane::with("%1", "claude");
    f.edit("%1", |s| s.swallow_enters = 100);
    f.type_text("%1", "/quit").unwrap();
    let (out, presses) = press_until_taken(&f, Some(&p), "%1", "/quit", &cfg, &|_| {}, &|| false);
    assert_eq!((out, presses), (Outcome::Failed, 1 + cfg.enter_retries));
    // Gone after the first press: taken, no second press.
    let (out, presses) = press_until_taken(&f, Some(&p), "%1", "/quit", &cfg, &|_| {}, &|| true);
    assert_eq!((out, presses), (Outcome::Rang, 1));
}

/// A profile whose screen shows every turn: a busy record no hook
/// closed is overruled by a screen that reads idle (the ring goes in),
/// never by a busy screen, nor — while the record is fresh — by the
/// prompt still sitting in the composer.
#[test]
fn an_idle_screen_overrules_a_busy_record_only_for_a_whole_turn_profile() {
    let cfg = Config::default().send;
    let mut p = profile();
    p.busy_whole_turn = true;
    let now = crate::clock::now();
    let ring_at = |f: &FakePane, p: &HarnessProfile, at: u64| {
        let t = Target {
            pane: Some("%1"),
            claim: None,
            profile: Some(p),
            busy_record: Some(at),
            spawned_at: None,
            ring_lock: RingLock::Without,
            hold_for_leg: false,
        };
        deliver(f, &t, ": ring", &cfg, &|_| {})
    };
    let f = FakePane::with("%1", "claude");
    assert_eq!(ring_at(&f, &p, now - 60), Outcome::Rang);
    assert_eq!(f.screen("%1").history, vec![": ring"]);
    let f = FakePane::with("%1", "claude");
    assert_eq!(ring_at(&f, &p, now), Outcome::Rang, "empty: at once");
    // A busy screen keeps it queued, record or not.
    let f = FakePane::with("%1", "claude");
    f.edit("%1", |s| {
        s.history.push("* Working (esc to interrupt)".into());
    });
    assert_eq!(ring_at(&f, &p, now - 60), Outcome::Queued);
    assert!(f.screen("%1").calls.is_empty());
    // Text in the composer: the turn may not be drawn yet (queued),
    // or it is someone's text (skipped); never typed into.
    let f = FakePane::with("%1", "claude");
    f.edit("%1", |s| s.composer = "wait".into());
    assert_eq!(ring_at(&f, &p, now), Outcome::Queued);
    assert_eq!(ring_at(&f, &p, now - 60), Outcome::Skipped);
    assert!(f.screen("%1").calls.is_empty());
    // Without the promise the record stands.
    p.busy_whole_turn = false;
    let f = FakePane::with("%1", "claude");
    assert_eq!(ring_at(&f, &p, now - 60), Outcome::Queued);
    assert!(f.screen("%1").calls.is_empty());
}

#[test]
fn an_unsent_doorbell_from_before_is_pressed_not_retyped() {
    let f = FakePane::with("%1", "claude");
    f.edit("%1", |s| s.composer = ": ring".into());
    let p = profile();
    assert_eq!(ring(&f, Some(&p), false), Outcome::Rang);
    assert_eq!(f.screen("%1").calls, vec!["key:Enter"]);
}

fn ring_spawned(f: &FakePane, p: &HarnessProfile, spawned_at: u64) -> Outcome {
    let cfg = Config::default().send;
    let t = Target {
        pane: Some("%1"),
        claim: None,
        profile: Some(p),
        busy_record: None,
        spawned_at: Some(spawned_at),
        ring_lock: RingLock::Without,
        hold_for_leg: false,
    };
    deliver(f, &t, ": ring", &cfg, &|_| {})
}

/// Right after a spawn, a screen with no composer is an agent still
/// starting up: the ring is `booting` (owed), not `skipped`, and
/// nothing is typed either way.
#[test]
fn no_composer_right_after_a_spawn_is_booting_later_skipped() {
    let p = profile();
    let now = crate::clock::now();
    for (at, want) in [
        (now, Outcome::Booting),
        (now - BOOT_WINDOW_SECS + 5, Outcome::Booting),
        (now - BOOT_WINDOW_SECS - 5, Outcome::Skipped),
    ] {
        let f = FakePane::with("%1", "claude");
        f.edit("%1", |s| s.no_composer = true);
        assert_eq!(ring_spawned(&f, &p, at), want, "spawned {}s ago", now - at);
        assert!(f.screen("%1").calls.is_empty());
    }
}

/// An agent that draws its composer before it reads its input drops
/// the typed line: no Enter is pressed and the ring is owed, never a
/// false `rang`. Once it reads, the same ring lands.
#[test]
fn a_typed_line_that_never_shows_while_booting_is_owed_not_rang() {
    let p = profile();
    let now = crate::clock::now();
    let f = FakePane::with("%1", "claude");
    f.edit("%1", |s| s.deaf = true);
    assert_eq!(ring_spawned(&f, &p, now), Outcome::Booting);
    assert_eq!(f.screen("%1").calls, vec!["type:: ring"]);
    f.edit("%1", |s| s.deaf = false);
    assert_eq!(ring_spawned(&f, &p, now), Outcome::Rang);
    assert_eq!(f.screen("%1").history, vec![": ring"]);
}

#[test]
fn without_a_composer_regex_the_cursor_line_decides() {
    let f = FakePane::with("%1", "cat");
    f.edit("%1", |s| s.swallow_enters = 1);
    assert_eq!(ring(&f, None, false), Outcome::Rang);
    assert_eq!(f.screen("%1").calls.len(), 3);
}

/// Someone's few typed characters are not "our unsent doorbell" just
/// because the doorbell happens to contain them: pressing Enter would
/// send their text.
#[test]
fn a_short_piece_of_text_is_not_taken_for_the_doorbell() {
    let door = ": 'firstmate inbox: new mail in /h/state/t1.inbox - read each *.msg'";
    let cfg = Config::default().send;
    let p = profile();
    let ring_door = |f: &FakePane| {
        let t = Target {
            pane: Some("%1"),
            claim: None,
            profile: Some(&p),
            busy_record: None,
            spawned_at: None,
            ring_lock: RingLock::Without,
            hold_for_leg: false,
        };
        deliver(f, &t, door, &cfg, &|_| {})
    };
    for theirs in ["m", "then run", "inbox", "read each"] {
        let f = FakePane::with("%1", "claude");
        f.edit("%1", |s| s.composer = theirs.into());
        assert_eq!(ring_door(&f), Outcome::Skipped, "{theirs:?}");
        assert!(f.screen("%1").calls.is_empty(), "{theirs:?}");
    }
    // A long enough start or end of the doorbell, or the doorbell twice,
    // is ours: pressed, never retyped.
    for ours in [
        &door[..30],
        &door[door.len() - 25..],
        &format!("{door}{door}")[..],
    ] {
        let f = FakePane::with("%1", "claude");
        f.edit("%1", |s| s.composer = ours.into());
        assert_eq!(ring_door(&f), Outcome::Rang, "{ours:?}");
        assert_eq!(f.screen("%1").calls, vec!["key:Enter"], "{ours:?}");
    }
}

#[test]
fn without_a_composer_regex_half_typed_text_or_copy_mode_is_skipped() {
    let f = FakePane::with("%1", "bash");
    f.edit("%1", |s| s.composer = "echo HALF".into());
    assert_eq!(ring(&f, None, false), Outcome::Skipped);
    assert!(f.screen("%1").calls.is_empty());
    let f = FakePane::with("%1", "bash");
    f.edit("%1", |s| s.in_mode = true);
    assert_eq!(ring(&f, None, false), Outcome::Skipped);
    let p = profile();
    let f = FakePane::with("%1", "claude");
    f.edit("%1", |s| s.in_mode = true);
    assert_eq!(ring(&f, Some(&p), false), Outcome::Skipped);
    assert!(f.screen("%1").calls.is_empty());
    // A doorbell left on the cursor line is pressed, not retyped.
    let f = FakePane::with("%1", "bash");
    f.edit("%1", |s| s.composer = ": ring".into());
    assert_eq!(ring(&f, None, false), Outcome::Rang);
    assert_eq!(f.screen("%1").calls, vec!["key:Enter"]);
}

#[test]
fn doorbell_is_constant_quoted_and_printable() {
    let d = tempfile::tempdir().unwrap();
    let odd = d.path().join("it's here");
    std::fs::create_dir(&odd).unwrap();
    let home = Home::at(&odd).unwrap();
    let id = TaskId::parse("t1").unwrap();
    let a = doorbell(&home, &id);
    assert_eq!(a, doorbell(&home, &id));
    assert!(a.starts_with(": "));
    assert!(a.contains(r"it'\''s here"));
    assert!(a.contains("fm-ack t1"));
    assert!(!a.chars().any(char::is_control));
}

/// A bare shell reading the doorbell parses it, runs nothing, prints
/// nothing and creates nothing — even with quotes, `$`, `*` and `<n>`.
#[test]
fn the_doorbell_is_a_shell_no_op() {
    let d = tempfile::tempdir().unwrap();
    let odd = d.path().join("it's $HOME `x` *");
    std::fs::create_dir(&odd).unwrap();
    let home = Home::at(&odd).unwrap();
    let id = TaskId::parse("t1").unwrap();
    let line = doorbell(&home, &id);
    let cwd = d.path().join("cwd");
    std::fs::create_dir(&cwd).unwrap();
    for (sh, flags) in [("sh", "-nc"), ("sh", "-c"), ("bash", "-c")] {
        let Ok(out) = std::process::Command::new(sh)
            .args([flags, &line])
            .current_dir(&cwd)
            .output()
        else {
            continue;
        };
        assert!(out.status.success(), "{sh} {flags}: {out:?}");
        assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    }
    assert_eq!(std::fs::read_dir(&cwd).unwrap().count(), 0);
    // Everything after `: ` is one word: printed back, it is the whole
    // notice with the inbox path intact.
    let word = line.strip_prefix(": ").unwrap();
    let out = std::process::Command::new("sh")
        .args(["-c", &format!("printf '%s|' {word}")])
        .output()
        .unwrap();
    let said = String::from_utf8(out.stdout).unwrap();
    assert_eq!(said.matches('|').count(), 1, "{said}");
    assert!(said.starts_with("firstmate inbox: new mail in "), "{said}");
    assert!(
        said.contains(&home.inbox(&id).display().to_string()),
        "{said}"
    );
}

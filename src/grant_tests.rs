use std::sync::{Arc, Barrier};

use super::*;

fn setup() -> (tempfile::TempDir, Home, TaskId) {
    let d = tempfile::tempdir().unwrap();
    let home = Home::at(d.path()).unwrap();
    let id = TaskId::parse("fix-login").unwrap();
    crate::meta::update(&home, &id, |m| m.set("kind", "ship")).unwrap();
    (d, home, id)
}

const NOW: u64 = 1_796_000_000;

#[test]
fn the_mate_is_named_by_a_non_empty_value_other_than_zero() {
    assert_eq!(Actor::from_value(None), Actor::Captain);
    assert_eq!(Actor::from_value(Some(OsStr::new(""))), Actor::Captain);
    assert_eq!(Actor::from_value(Some(OsStr::new("0"))), Actor::Captain);
    assert_eq!(Actor::from_value(Some(OsStr::new("1"))), Actor::Mate);
    assert_eq!(Actor::from_value(Some(OsStr::new("yes"))), Actor::Mate);
}

#[test]
fn only_forced_teardown_exit_and_relaunch_need_a_grant() {
    assert_eq!(
        needs(&Action::Teardown { force: true }),
        Some((Verb::Teardown, "teardown --force"))
    );
    assert_eq!(needs(&Action::Teardown { force: false }), None);
    assert_eq!(
        needs(&Action::Exit { force: true }),
        Some((Verb::Exit, "exit --force"))
    );
    assert_eq!(needs(&Action::Exit { force: false }), None);
    let relaunch = |force| Action::Relaunch {
        note: None,
        harness: None,
        force,
    };
    assert_eq!(
        needs(&relaunch(true)),
        Some((Verb::Exit, "relaunch --force"))
    );
    assert_eq!(needs(&relaunch(false)), None);
    assert_eq!(needs(&Action::Interrupt), None);
}

#[test]
fn the_file_is_one_tab_separated_line_per_grant() {
    let g = Grant {
        id: TaskId::parse("fix-login").unwrap(),
        verb: Verb::Teardown,
        granted_at: NOW,
        expires_at: NOW + 3600,
    };
    let bytes = render(std::slice::from_ref(&g));
    assert_eq!(bytes, b"fix-login\tteardown\t1796000000\t1796003600\n");
    assert_eq!(parse(&bytes, NOW), vec![g]);
    // Expired, malformed, hostile and cut lines are left out.
    let mixed = b"old\texit\t1\t2\nbad line\n../x\texit\t1\t9999999999\n\
        a\tmerge\t1\t9999999999\na\texit\t1\t9999999999\textra\n\
        b\tland\tx\t9999999999\nok\tland\t1\t9999999999\ncut\texit\t1\t99";
    let got = parse(mixed, NOW);
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].id.as_str(), got[0].verb), ("ok", Verb::Land));
}

#[test]
fn a_grant_is_used_once() {
    let (_d, home, id) = setup();
    give(&home, Actor::Captain, &id, Verb::Teardown, DEFAULT_FOR, NOW).unwrap();
    assert_eq!(list(&home, NOW).unwrap().len(), 1);
    // Another verb or task is not granted.
    assert!(take(&home, &id, Verb::Exit, NOW).unwrap().is_none());
    let other = TaskId::parse("other").unwrap();
    assert!(take(&home, &other, Verb::Teardown, NOW).unwrap().is_none());
    let e = give(&home, Actor::Captain, &other, Verb::Teardown, 60, NOW).unwrap_err();
    assert_eq!(e.to_string(), "unknown task other: no meta");
    let g = take(&home, &id, Verb::Teardown, NOW + 1).unwrap().unwrap();
    assert_eq!(g.expires_at, NOW + DEFAULT_FOR);
    assert!(take(&home, &id, Verb::Teardown, NOW + 2).unwrap().is_none());
    assert!(list(&home, NOW).unwrap().is_empty());
}

#[test]
fn a_grant_expires() {
    let (_d, home, id) = setup();
    give(&home, Actor::Captain, &id, Verb::Exit, 60, NOW).unwrap();
    assert_eq!(list(&home, NOW + 59).unwrap().len(), 1);
    assert!(list(&home, NOW + 60).unwrap().is_empty());
    assert!(take(&home, &id, Verb::Exit, NOW + 60).unwrap().is_none());
    // Expired lines are dropped at the next rewrite.
    give(&home, Actor::Captain, &id, Verb::Land, 60, NOW + 100).unwrap();
    let text = fsx::read(&home.grants()).unwrap();
    assert_eq!(text, b"fix-login\tland\t1796000100\t1796000160\n");
}

#[test]
fn the_mate_cannot_grant_and_is_refused_naming_the_grant_command() {
    let (_d, home, id) = setup();
    let e = give(&home, Actor::Mate, &id, Verb::Teardown, 60, NOW).unwrap_err();
    assert_eq!(e.exit_code(), 1);
    assert!(e.to_string().contains("FM_MATE"), "{e}");
    assert!(!fsx::exists(&home.grants()).unwrap());

    let action = Action::Teardown { force: true };
    let e = guard(&home, Actor::Mate, &id, &action, NOW).unwrap_err();
    assert_eq!(e.exit_code(), 1);
    assert_eq!(
        e.to_string(),
        "teardown --force of fix-login needs the captain's grant; the captain runs: fm grant fix-login teardown"
    );
    // The captain needs no grant; the mate's plain teardown neither.
    assert_eq!(
        guard(&home, Actor::Captain, &id, &action, NOW).unwrap(),
        None
    );
    let plain = Action::Teardown { force: false };
    assert_eq!(guard(&home, Actor::Mate, &id, &plain, NOW).unwrap(), None);

    give(&home, Actor::Captain, &id, Verb::Teardown, 60, NOW).unwrap();
    let g = guard(&home, Actor::Mate, &id, &action, NOW)
        .unwrap()
        .unwrap();
    assert!(guard(&home, Actor::Mate, &id, &action, NOW).is_err());
    // An action that failed gives it back.
    give_back(&home, g, NOW).unwrap();
    assert!(
        guard(&home, Actor::Mate, &id, &action, NOW)
            .unwrap()
            .is_some()
    );
}

#[test]
fn revoke_and_regrant() {
    let (_d, home, id) = setup();
    give(&home, Actor::Captain, &id, Verb::Exit, 60, NOW).unwrap();
    give(&home, Actor::Captain, &id, Verb::Exit, 600, NOW).unwrap();
    let open = list(&home, NOW).unwrap();
    assert_eq!(open.len(), 1, "a second grant replaces the first");
    assert_eq!(open[0].expires_at, NOW + 600);
    assert!(revoke(&home, &id, Verb::Exit, NOW).unwrap());
    assert!(!revoke(&home, &id, Verb::Exit, NOW).unwrap());
    assert!(list(&home, NOW).unwrap().is_empty());
}

#[test]
fn durations_and_verbs_are_checked() {
    let (_d, home, id) = setup();
    for bad in [0, MAX_FOR + 1] {
        let e = give(&home, Actor::Captain, &id, Verb::Exit, bad, NOW).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }
    let e = Verb::parse("merge\u{1b}").unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(!e.to_string().contains('\u{1b}'), "{e}");
    for v in Verb::ALL {
        assert_eq!(Verb::parse(v.as_str()).unwrap(), v);
    }
}

#[test]
fn two_racing_takers_one_wins() {
    for _ in 0..20 {
        let (_d, home, id) = setup();
        give(&home, Actor::Captain, &id, Verb::Teardown, 60, NOW).unwrap();
        let n = 8;
        let barrier = Arc::new(Barrier::new(n));
        let handles: Vec<_> = (0..n)
            .map(|_| {
                let (home, id, barrier) = (home.clone(), id.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    take(&home, &id, Verb::Teardown, NOW).unwrap().is_some()
                })
            })
            .collect();
        let won = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|w| *w)
            .count();
        assert_eq!(won, 1);
    }
}

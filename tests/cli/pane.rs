//! The real tmux behind the `Pane` trait, on a private server.

use firstmate::tmux::pane::{Pane, Tmux as RealTmux};

use crate::harness::{Tmux, wait_until};

#[test]
fn list_info_type_press_capture_on_a_private_server() {
    let Some(t) = Tmux::start() else { return };
    let real = RealTmux::new(&t.socket);
    let pane = t.window("w1", &["cat"]);
    // tmux starts a one-word command through the shell, which then execs it.
    let listed_as_cat = || {
        real.list()
            .unwrap()
            .iter()
            .any(|p| p.id == pane && p.command == "cat")
    };
    assert!(wait_until(5.0, listed_as_cat), "{:?}", real.list());
    let all = real.list().unwrap();
    let me = all.iter().find(|p| p.id == pane).expect("pane listed");
    assert_eq!(me.window, "w1");
    assert!(!me.dead);
    assert_eq!(real.info(&pane).unwrap().unwrap().id, pane);
    assert_eq!(real.info("%9999").unwrap(), None);
    real.type_text(&pane, "$(echo hi) `x` ; 'q'").unwrap();
    real.press(&pane, "Enter").unwrap();
    assert!(wait_until(5.0, || real
        .capture(&pane, 10)
        .unwrap()
        .matches("$(echo hi) `x` ; 'q'")
        .count()
        == 2));
    // A killed window is gone by id; nothing falls back to another pane.
    let other = t.window("w2", &["cat"]);
    t.run(["kill-window", "-t", &pane]);
    assert_eq!(real.info(&pane).unwrap(), None);
    assert!(real.type_text(&pane, "x").is_err());
    assert!(real.info(&other).unwrap().is_some());
}

#[test]
fn no_server_means_no_panes() {
    let real = RealTmux::new(&format!("fm-test-none-{}", std::process::id()));
    if !crate::harness::have_tmux() {
        return;
    }
    assert_eq!(real.list().unwrap(), vec![]);
    assert_eq!(real.info("%1").unwrap(), None);
}

/// tmux reads a trailing `;` as a command separator; text, keys, paths and
/// environment values that end in one must still arrive whole.
#[test]
fn arguments_ending_in_a_semicolon_arrive_whole() {
    let Some(t) = Tmux::start() else { return };
    let real = RealTmux::new(&t.socket);
    let pane = t.window("semi", &["cat"]);
    assert!(wait_until(5.0, || real
        .list()
        .unwrap()
        .iter()
        .any(|p| p.id == pane && p.command == "cat")));
    for text in ["ends in a semicolon;", "two;;", "escaped\\;", ";"] {
        real.type_text(&pane, text).unwrap();
        real.press(&pane, "Enter").unwrap();
        assert!(
            wait_until(5.0, || real
                .capture(&pane, 20)
                .unwrap()
                .lines()
                .filter(|l| l.trim_end() == text)
                .count()
                == 2),
            "{text:?} did not arrive whole: {}",
            real.capture(&pane, 20).unwrap()
        );
    }
    real.run(&["set-environment", "-g", "FM_SEMI", "/home/with;"])
        .unwrap();
    assert_eq!(
        real.run(&["show-environment", "-g", "FM_SEMI"])
            .unwrap()
            .trim(),
        "FM_SEMI=/home/with;"
    );
}

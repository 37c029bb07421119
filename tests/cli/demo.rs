//! `fm demo` is the end-to-end test: every tool, a real tmux server, real git.

use crate::harness::{Cmd, Tmux, bin};

#[test]
fn the_demo_passes_and_cleans_up() {
    // The demo starts its own private server; this only checks tmux exists.
    let Some(_t) = Tmux::start() else { return };
    let r = Cmd::new(bin("fm")).arg("demo").stdout_any().run();
    let out = r.stdout();
    assert!(out.contains("demo passed: every expectation held"), "{out}");
    for step in [
        "gate refused",
        "crew-state reads done",
        "one escalation wake",
        "fleet view printed",
    ] {
        assert!(out.contains(step), "missing {step:?} in\n{out}");
    }
    let home = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("ok: home "))
        .expect("home named")
        .to_string();
    assert!(
        !std::path::Path::new(&home).exists(),
        "the demo left its home behind: {home}"
    );
    let socket = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("ok: tmux -L "))
        .expect("socket named")
        .to_string();
    let alive = std::process::Command::new("tmux")
        .args(["-L", &socket, "list-sessions"])
        .output()
        .unwrap();
    assert!(
        !alive.status.success(),
        "the demo left its tmux server running"
    );
}

#[test]
fn the_demo_with_keep_leaves_the_home() {
    let Some(_t) = Tmux::start() else { return };
    let r = Cmd::new(bin("fm"))
        .args(["demo", "--keep"])
        .stdout_has("demo passed: every expectation held")
        .run();
    let out = r.stdout();
    let home = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("ok: home "))
        .unwrap()
        .to_string();
    let socket = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("ok: tmux -L "))
        .unwrap()
        .to_string();
    assert!(
        std::path::Path::new(&home)
            .join("state/demo-ship.meta")
            .is_file()
    );
    let _ = std::process::Command::new("tmux")
        .args(["-L", &socket, "kill-server"])
        .output();
    let _ = std::fs::remove_dir_all(&home);
}

//! `fm grant` and the first mate's guard: `FM_MATE` set, `fm-control`'s
//! irreversible verbs need the captain's grant, used once.

use crate::control::{ctl, task, torn_down};
use crate::harness::{Cmd, TestHome, Tmux, wait_until};

/// A task `id` with a meta and no pane (exit answers `already-stopped`).
fn paneless(h: &TestHome, id: &str) {
    h.write(&format!("state/{id}.meta"), "kind=ship\n");
}

#[test]
fn the_mates_forced_teardown_needs_a_grant_that_is_used_once() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (wt, _pane) = task(&h, &t, "t6", "direct-PR");
    std::fs::write(wt.join("dirty.txt"), "x\n").unwrap();
    let fm = ctl(&h, &t);
    fm(&["t6", "teardown", "--force"])
        .env("FM_MATE", "1")
        .status(1)
        .stderr(
            "fm-control: error: teardown --force of t6 needs the captain's grant; \
             the captain runs: fm grant t6 teardown\n",
        )
        .run();
    assert!(wt.join("dirty.txt").exists(), "nothing was undone");
    h.fm("fm")
        .args(["grant", "t6", "teardown"])
        .stdout_regex(r"^granted t6 teardown until .* UTC \(1h left\)\n$")
        .run();
    assert!(h.read_string("state/grants").starts_with("t6\tteardown\t"));
    fm(&["t6", "teardown", "--force"])
        .env("FM_MATE", "1")
        .stdout_regex(&torn_down(&h, "t6"))
        .run();
    assert!(!wt.exists());
    assert_eq!(h.read_string("state/grants"), "", "the grant is used up");
}

#[test]
fn the_mates_forced_exit_over_someones_text_needs_a_grant() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (_wt, pane) = task(&h, &t, "t1", "direct-PR");
    t.run(["send-keys", "-t", pane.as_str(), "-l", "half typed"]);
    assert!(wait_until(10.0, || t
        .capture(&pane)
        .contains("stand-in> half typed")));
    let fm = ctl(&h, &t);
    for verb in [
        &["exit", "--force"][..],
        &["relaunch", "--note", "n", "--force"],
    ] {
        let what = verb[0];
        fm(&[&["t1"][..], verb].concat())
            .env("FM_MATE", "yes")
            .status(1)
            .stderr(format!(
                "fm-control: error: {what} --force of t1 needs the captain's grant; \
                 the captain runs: fm grant t1 exit\n"
            ))
            .run();
    }
    assert!(t.capture(&pane).contains("stand-in> half typed"));
    // The captain's own --force needs no grant; FM_MATE=0 is the captain.
    h.fm("fm").args(["grant", "t1", "exit"]).stdout_any().run();
    fm(&["t1", "exit", "--force"])
        .env("FM_MATE", "1")
        .stdout("stopped t1\n")
        .run();
    fm(&["t1", "exit", "--force"])
        .env("FM_MATE", "1")
        .status(1)
        .stderr_has("fm grant t1 exit")
        .run();
    fm(&["t1", "exit", "--force"])
        .env("FM_MATE", "0")
        .stdout("already-stopped t1\n")
        .run();
}

#[test]
fn the_mate_cannot_grant_itself() {
    let h = TestHome::new();
    paneless(&h, "t1");
    for env in [vec![], vec![("FM_HOME", h.root())]] {
        let mut c = Cmd::new(crate::harness::bin("fm")).env("FM_MATE", "1");
        for (k, v) in env {
            c = c.env(k, v);
        }
        c.args(["grant", "t1", "teardown"])
            .status(1)
            .stderr(
                "fm: error: a grant is the captain's word: refused while FM_MATE is set \
                 (the first mate cannot grant itself)\n",
            )
            .run();
    }
    assert!(!h.exists("state/grants"));
    // Listing and revoking (which only narrows) are the mate's too.
    h.fm("fm")
        .env("FM_MATE", "1")
        .args(["grant", "--list"])
        .stdout("no grants open\n")
        .run();
}

#[test]
fn grants_are_listed_revoked_and_checked() {
    let h = TestHome::new();
    paneless(&h, "t1");
    let fm = || h.fm("fm");
    fm().args(["grant", "t1", "exit", "--for", "10m"])
        .stdout_regex(r"^granted t1 exit until .* UTC \(10m left\)\n$")
        .run();
    fm().args(["grant", "t1", "land", "--for", "90"])
        .stdout_any()
        .run();
    let r = fm().args(["grant", "--list", "--json"]).stdout_json().run();
    let v = r.json();
    assert_eq!(v.as_array().unwrap().len(), 2, "{v}");
    assert_eq!(v[0]["id"], "t1");
    assert_eq!(v[0]["verb"], "exit");
    assert_eq!(
        v[0]["expires_at"].as_u64().unwrap() - v[0]["granted_at"].as_u64().unwrap(),
        600
    );
    fm().args(["grant", "--list"])
        .stdout_regex(r"^t1 exit until .*\nt1 land until .*\n$")
        .run();
    fm().args(["grant", "--revoke", "t1", "exit"])
        .stdout("revoked t1 exit\n")
        .run();
    fm().args(["grant", "--revoke", "t1", "exit"])
        .stdout("no grant of exit on t1 was open\n")
        .run();
    fm().args(["grant", "nope", "exit"])
        .status(1)
        .stderr("fm: error: unknown task nope: no meta\n")
        .run();
    fm().args(["grant", "t1", "merge"])
        .status(2)
        .stderr_has("unknown verb \"merge\"")
        .run();
    fm().args(["grant", "../x", "exit"])
        .status(2)
        .stderr_any()
        .run();
    for bad in ["0", "soon", "9999h"] {
        fm().args(["grant", "t1", "exit", "--for", bad])
            .status(2)
            .stderr_has("--for")
            .run();
    }
    fm().args(["grant", "t1"]).status(2).stderr_any().run();
}

#[test]
fn of_racing_mates_one_uses_the_grant() {
    let h = TestHome::new();
    paneless(&h, "r1");
    h.fm("fm").args(["grant", "r1", "exit"]).stdout_any().run();
    let started: Vec<_> = (0..6)
        .map(|_| {
            h.fm("control")
                .env("FM_MATE", "1")
                .args(["r1", "exit", "--force"])
                .status_any()
                .stdout_any()
                .stderr_any()
                .start()
        })
        .collect();
    let codes: Vec<i32> = started.into_iter().map(|s| s.wait(20.0).code).collect();
    assert_eq!(codes.iter().filter(|c| **c == 0).count(), 1, "{codes:?}");
    assert!(codes.iter().all(|c| *c == 0 || *c == 1), "{codes:?}");
}

#[test]
fn grant_and_guard_work_in_an_empty_environment() {
    let h = TestHome::new();
    paneless(&h, "e1");
    let env_i = |args: &[&str]| {
        let mut home = std::ffi::OsString::from("FM_HOME=");
        home.push(h.root());
        Cmd::new("env")
            .arg("-i")
            .arg(home)
            .arg(crate::harness::bin("fm"))
            .args(args)
    };
    env_i(&["grant", "e1", "exit"])
        .stdout_regex(r"^granted e1 exit until .*\n$")
        .run();
    env_i(&["grant", "--list"])
        .stdout_regex(r"^e1 exit until .*\n$")
        .run();
    let mut home = std::ffi::OsString::from("FM_HOME=");
    home.push(h.root());
    Cmd::new("env")
        .args(["-i", "FM_MATE=1"])
        .arg(home)
        .arg(crate::harness::bin("fm-control"))
        .args(["e1", "exit", "--force"])
        .stdout("already-stopped e1\n")
        .run();
    assert_eq!(h.read_string("state/grants"), "");
}

/// A remote task is guarded in the captain's home before anything is sent
/// to its host; an action that then fails (the host down) gives the
/// grant back.
#[test]
fn a_remote_task_is_guarded_here_and_a_failed_action_gives_the_grant_back() {
    let h = TestHome::new();
    h.write(
        "config/firstmate.toml",
        "[hosts.box]\ndestination = \"127.0.0.1\"\nhome = \"/nonexistent/home\"\n\
         ssh_options = [\"-p\", \"1\", \"-o\", \"BatchMode=yes\"]\ntimeout_ms = 3000\n",
    );
    h.write("state/r1.meta", "kind=ship\nhost=box\n");
    h.fm("control")
        .env("FM_MATE", "1")
        .args(["r1", "teardown", "--force"])
        .status(1)
        .stderr(
            "fm-control: error: teardown --force of r1 needs the captain's grant; \
             the captain runs: fm grant r1 teardown\n",
        )
        .run();
    h.fm("fm")
        .args(["grant", "r1", "teardown"])
        .stdout_any()
        .run();
    h.fm("control")
        .env("FM_MATE", "1")
        .args(["r1", "teardown", "--force"])
        .status(3)
        .stderr_any()
        .run();
    h.fm("fm")
        .args(["grant", "--list"])
        .stdout_regex(r"^r1 teardown until .*\n$")
        .run();
}

//! A pane is a task's only when it proves it: real tmux servers killed and
//! started again under live stand-in workers, so that a task's recorded
//! pane id names another task's pane (or the captain's shell) on the new
//! server. Every path that reads, types into, kills, respawns or goes to a
//! pane must leave such a pane alone.

use crate::control::{briefed as brief, pane_of, project};
use crate::harness::{Cmd, TestHome, Tmux, bin, wait_until};

fn ctl(h: &TestHome, t: &Tmux, args: &[&str]) -> Cmd {
    Cmd::new(bin("fm-control"))
        .env("FM_HOME", h.root())
        .env("FM_TMUX_SOCKET", &t.socket)
        .env("FM_CONTROL_EXIT_WAIT_SECS", "2")
        .args(args)
}

fn tool(h: &TestHome, t: &Tmux, name: &str) -> Cmd {
    h.fm(name).env("FM_TMUX_SOCKET", &t.socket)
}

/// `#{pane_id} #{pane_dead} #{@fm_task}` of every pane.
fn panes(t: &Tmux) -> String {
    let out = std::process::Command::new("tmux")
        .args([
            "-L",
            &t.socket,
            "list-panes",
            "-a",
            "-F",
            "#{pane_id} #{pane_dead} #{@fm_task}",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn meta(h: &TestHome, id: &str, key: &str) -> String {
    let m = String::from_utf8(h.read(&format!("state/{id}.meta"))).unwrap();
    m.lines()
        .rev()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or("")
        .to_string()
}

/// Two workers; the server dies; `two` is relaunched and its new pane
/// takes the id `one` recorded. Then every path acting for `one` must
/// find its pane gone, say why, and leave `two`'s agent alone.
#[test]
fn after_a_server_restart_no_path_acts_on_another_tasks_pane() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let proj = project(&h);
    let project = proj.to_str().unwrap();
    for id in ["one", "two"] {
        brief(&h, id);
    }
    let one = pane_of(
        &ctl(
            &h,
            &t,
            &[
                "one",
                "spawn",
                "--project",
                project,
                "--harness",
                "stand-in",
            ],
        )
        .status(0)
        .stdout_any()
        .run()
        .stdout(),
    );
    ctl(
        &h,
        &t,
        &[
            "two",
            "spawn",
            "--project",
            project,
            "--harness",
            "stand-in",
        ],
    )
    .status(0)
    .stdout_any()
    .run();
    assert!(!meta(&h, "one", "spawn_id").is_empty());
    assert!(meta(&h, "one", "tmux_server").contains('-'));
    assert!(
        panes(&t).contains(&format!("{one} 0 one/{}", meta(&h, "one", "spawn_id"))),
        "{}",
        panes(&t)
    );
    // The server restarts: a new one numbers its panes from %0 again. The
    // captain's own shell takes the first ids, and two's relaunch the
    // next: `one`'s recorded id.
    let _ = std::process::Command::new("tmux")
        .args(["-L", &t.socket, "kill-server"])
        .output();
    // The old server may still be on its way out.
    assert!(wait_until(10.0, || std::process::Command::new("tmux")
        .args(["-L", &t.socket, "new-session", "-d", "-s", "fm-test"])
        .output()
        .is_ok_and(|o| o.status.success())));
    let first = panes(&t);
    let n: u32 = one[1..].parse().unwrap();
    for _ in 1..n {
        t.run(["new-window", "-d", "-t", "fm-test", "--", "sleep", "300"]);
    }
    assert!(!panes(&t).contains(&format!("{one} ")), "{first}");
    ctl(
        &h,
        &t,
        &["two", "relaunch", "--note", "the server restarted"],
    )
    .status(0)
    .stdout("relaunched two harness=stand-in from=stand-in\n")
    .run();
    assert_eq!(meta(&h, "two", "pane"), one, "two now holds one's old id");
    let two_mark = format!("two/{}", meta(&h, "two", "spawn_id"));
    let two_alive = || panes(&t).contains(&format!("{one} 0 {two_mark}"));
    assert!(
        wait_until(10.0, || t.capture(&one).contains("stand-in>")),
        "{}",
        t.capture(&one)
    );

    // Crew state: gone, and why.
    tool(&h, &t, "crew-state")
        .arg("one")
        .status(0)
        .stdout_has("pane gone \u{b7} the tmux server restarted")
        .run();
    // Peek and attach refuse.
    tool(&h, &t, "fm")
        .args(["peek", "one"])
        .status(1)
        .stderr_has(&format!(
            "pane {one} of one is gone (the tmux server restarted)"
        ))
        .run();
    tool(&h, &t, "fm")
        .args(["attach", "one"])
        .status(1)
        .stderr_has("the tmux server restarted")
        .run();
    // A message is recorded, its doorbell typed nowhere.
    tool(&h, &t, "send")
        .args(["one", "for one only"])
        .status(0)
        .stdout("queued one 001.msg \u{b7} doorbell dead\n")
        .stderr_has("doorbell dead")
        .run();
    tool(&h, &t, "send")
        .args(["one", "--key", "Enter"])
        .status(1)
        .stderr_has("is gone")
        .run();
    // The watcher neither.
    let watched = tool(&h, &t, "watch")
        .env("FM_WATCH_GRACE_SECS", "0")
        .arg("--once")
        .status_any()
        .stdout_any()
        .stderr_any()
        .run()
        .stdout();
    assert!(!watched.contains("rang one"), "{watched}");
    let screen = t.capture(&one);
    assert!(!screen.contains("fm-ack one"), "{screen}");
    // Broadcast reaches two alone, in its own pane.
    let all = tool(&h, &t, "send")
        .args(["--all", "to everyone"])
        .status(0)
        .stdout_any()
        .run()
        .stdout();
    assert!(
        all.contains("queued two ") && !all.contains("queued one "),
        "{all}"
    );
    // Lifecycle: nothing to interrupt, already stopped.
    ctl(&h, &t, &["one", "interrupt"])
        .status(1)
        .stderr_has("nothing to interrupt")
        .run();
    ctl(&h, &t, &["one", "exit"])
        .status(0)
        .stdout("already-stopped one\n")
        .run();
    assert!(two_alive(), "{}", panes(&t));
    // Doctor names the lost pane and the id recorded twice.
    let doctor = tool(&h, &t, "fm")
        .arg("doctor")
        .status_any()
        .stdout_any()
        .stderr_any()
        .run()
        .stdout();
    assert!(
        doctor.contains("one: pane gone \u{b7} the tmux server restarted")
            && doctor.contains(&format!("pane {one} is recorded by one, two")),
        "{doctor}"
    );
    // Relaunch opens a new window for one; two's pane keeps its agent.
    let before = panes(&t);
    ctl(&h, &t, &["one", "relaunch", "--note", "back"])
        .status(0)
        .stdout_any()
        .run();
    let one_now = meta(&h, "one", "pane");
    assert_ne!(one_now, one, "{before}");
    assert!(two_alive(), "{}", panes(&t));
    // A forced teardown of one stops one's agent only.
    ctl(&h, &t, &["one", "teardown", "--force"])
        .status(0)
        .stdout_any()
        .stderr_any()
        .run();
    assert!(two_alive(), "{}", panes(&t));
    assert!(!panes(&t).contains(&format!("{one_now} ")), "{}", panes(&t));
    // And two is still reachable through every path.
    tool(&h, &t, "fm")
        .args(["peek", "two"])
        .status(0)
        .stdout_has("stand-in>")
        .run();
}

/// A meta written by hand (no spawn id) still names its pane, unless the
/// pane is marked as another task's.
#[test]
fn a_hand_written_meta_yields_to_a_pane_marked_for_another_task() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let pane = t.window("w", &["--", "sleep", "300"]);
    h.write(
        "state/solo.meta",
        format!("pane={pane}\ntmux_socket={}\n", t.socket),
    );
    h.write("data/solo/brief.md", "---\nid: solo\n---\n# Task\n");
    tool(&h, &t, "crew-state")
        .arg("solo")
        .status(0)
        .stdout_has("agent alive")
        .run();
    t.run([
        "set-option",
        "-p",
        "-t",
        &pane,
        "@fm_task",
        "other/0123456789abcdef",
    ]);
    tool(&h, &t, "crew-state")
        .arg("solo")
        .status(0)
        .stdout_has("pane gone \u{b7} the pane id now names task other's pane")
        .run();
    tool(&h, &t, "send")
        .args(["solo", "hello"])
        .status(0)
        .stdout("queued solo 001.msg \u{b7} doorbell dead\n")
        .stderr_has("doorbell dead")
        .run();
    assert!(!t.capture(&pane).contains("fm-ack"));
}

/// Nothing that reaches tmux is expanded or shell-parsed: a home whose
/// name holds tmux formats and shell syntax spawns its agent in its
/// worktree, runs nothing else, and a one-program launch whose path has
/// a space starts.
#[test]
fn a_hostile_home_name_runs_nothing_and_the_agent_starts_in_its_worktree() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let proj = project(&h);
    for name in [
        "fleet #(touch PWN) #{session_name}",
        "my fleet $(touch PWN) `touch PWN`",
    ] {
        let home = h.root().join(name);
        Cmd::new(bin("fm"))
            .args(["init", home.to_str().unwrap()])
            .status(0)
            .stdout_any()
            .run();
        let agent = home.join("ag ent.sh");
        std::fs::write(
            &agent,
            "#!/bin/sh\npwd > \"$FM_HOME/agent-ran\"\nexec sleep 300\n",
        )
        .unwrap();
        std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let cfg = home.join("config/firstmate.toml");
        let mut text = std::fs::read_to_string(&cfg).unwrap_or_default();
        text.push_str(
            "\n[harness.mine]\nlaunch = [\"{home}/ag ent.sh\"]\nagent_commands = [\"sleep\", \"ag ent.sh\"]\n",
        );
        std::fs::write(&cfg, text).unwrap();
        Cmd::new(bin("fm-brief"))
            .env("FM_HOME", &home)
            .args([
                "w1",
                "demo",
                "--mode",
                "local-only",
                "--intent",
                "x",
                "--spec",
                "y",
            ])
            .status(0)
            .stdout_any()
            .run();
        Cmd::new(bin("fm-control"))
            .env("FM_HOME", &home)
            .env("FM_TMUX_SOCKET", &t.socket)
            .args([
                "w1",
                "spawn",
                "--project",
                proj.to_str().unwrap(),
                "--harness",
                "mine",
            ])
            .status(0)
            .stdout_any()
            .run();
        let ran = home.join("agent-ran");
        assert!(wait_until(10.0, || ran.exists()), "the agent never started");
        let wt = std::fs::read_to_string(&ran).unwrap();
        let m = std::fs::read_to_string(home.join("state/w1.meta")).unwrap();
        let want = m
            .lines()
            .find_map(|l| l.strip_prefix("worktree="))
            .unwrap()
            .to_string();
        assert_eq!(
            std::fs::canonicalize(wt.trim()).unwrap(),
            std::fs::canonicalize(&want).unwrap(),
            "the agent ran outside its worktree"
        );
        for dir in [h.root(), home.clone(), want.into(), proj.clone()] {
            assert!(!dir.join("PWN").exists(), "PWN in {}", dir.display());
        }
        let cwd = std::env::current_dir().unwrap();
        assert!(!cwd.join("PWN").exists());
    }
}

/// A pane's program chooses its mark (`set-option`) and its command name
/// (argv[0]); neither can forge a field or a line of the pane list for
/// another pane id.
#[test]
fn a_mark_or_a_command_name_cannot_forge_another_panes_line() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let pane = t.window("w", &["--", "sleep", "300"]);
    h.write(
        "state/ghost.meta",
        format!("pane=%99\ntmux_socket={}\n", t.socket),
    );
    h.write("data/ghost/brief.md", "---\nid: ghost\n---\n# Task\n");
    // Each forgery ends its own line and starts one for a pane id nobody
    // has, in the form the fleet view's list reads (a screen key first).
    let forged = "x\n1:2:80x24:0:0\t%99\t0\t0\tsleep\tfm-test\t";
    t.run(["set-option", "-p", "-t", &pane, "@fm_task", forged]);
    // The same through a command name (argv[0]).
    let name = "sleep\\n1:2:80x24:0:0\\t%98\\t0\\t0\\tsleep";
    let py = format!("import os; os.execv('/bin/sleep', ['{name}', '300'])");
    let _ = t.window("v", &["--", "python3", "-c", &py]);
    h.write(
        "state/ghost2.meta",
        format!("pane=%98\ntmux_socket={}\n", t.socket),
    );
    h.write("data/ghost2/brief.md", "---\nid: ghost2\n---\n# Task\n");
    std::thread::sleep(std::time::Duration::from_millis(300));
    for id in ["ghost", "ghost2"] {
        tool(&h, &t, "crew-state")
            .arg(id)
            .status(0)
            .stdout("state: exited \u{b7} source: pane \u{b7} pane gone\n")
            .run();
    }
}

#[test]
fn doctor_names_a_server_that_is_gone_and_the_restore_that_brings_it_back() {
    if !crate::harness::have_tmux() {
        return;
    }
    let h = TestHome::new();
    // The server these panes were opened on no longer runs (a reboot):
    // no pane can prove anything, and none is a finished task's end.
    let socket = format!("fm-test-{}-gone", std::process::id());
    // A finished task's pane ending with its server is no loss.
    h.write("state/three.status", "done [at=1700000000]: shipped\n");
    for (id, pane) in [("one", "%1"), ("two", "%2"), ("three", "%3")] {
        h.write(
            &format!("state/{id}.meta"),
            format!(
                "kind=secondmate\nrepo=web\npane={pane}\ntmux_socket={socket}\ntmux_server=4242-1700000000\nspawn_id=00000000000000a{}\n",
                pane.len()
            ),
        );
    }
    let doctor = h
        .fm("fm")
        .arg("doctor")
        .status_any()
        .stdout_any()
        .stderr_any()
        .run()
        .stdout();
    let line = doctor
        .lines()
        .find(|l| l.starts_with("warn panes:"))
        .unwrap_or_else(|| panic!("a panes warning: {doctor}"));
    assert!(
        line.contains(&format!(
            "no tmux server runs on socket {socket}, where 2 task pane(s) were opened (one, two)"
        )) && line.contains("`fm restore` brings back every task whose pane is gone"),
        "{line}"
    );
}

//! `fm-control` and the stand-in agent: real tmux, real git.

use std::path::{Path, PathBuf};

use crate::harness::{TestHome, Tmux, bin, git, wait_for, wait_until};

/// A project clone with one commit on main and a bare `origin`.
pub fn project(h: &TestHome) -> PathBuf {
    let remote = h.root().join("remote.git");
    let proj = h.root().join("project");
    std::fs::create_dir_all(&proj).unwrap();
    git(
        &h.root(),
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            remote.to_str().unwrap(),
        ],
    );
    git(&proj, &["init", "-q", "-b", "main"]);
    git(&proj, &["config", "user.email", "t@example.invalid"]);
    git(&proj, &["config", "user.name", "t"]);
    std::fs::write(proj.join("README"), "hi\n").unwrap();
    git(&proj, &["add", "README"]);
    git(&proj, &["commit", "-q", "-m", "init"]);
    git(
        &proj,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    git(&proj, &["push", "-q", "origin", "main"]);
    proj
}

/// A task with a worktree, meta and a stand-in running in a pane of `t`.
#[track_caller]
pub(crate) fn task(h: &TestHome, t: &Tmux, id: &str, mode: &str) -> (PathBuf, String) {
    let proj = project(h);
    let wt = h.root().join("worktrees").join(id);
    git(
        &proj,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            wt.to_str().unwrap(),
            "main",
        ],
    );
    git(&wt, &["config", "user.email", "t@example.invalid"]);
    git(&wt, &["config", "user.name", "t"]);
    h.write(&format!("data/{id}/brief.md"), "---\nid: x\n---\n# Task\n");
    let home = h.root().display().to_string();
    let pane = t.run([
        "new-window",
        "-d",
        "-P",
        "-F",
        "#{pane_id}",
        "-t",
        "fm-test",
        "-c",
        wt.to_str().unwrap(),
        "-e",
        &format!("FM_HOME={home}"),
        "--",
        bin("fm-stand-in").to_str().unwrap(),
        "--home",
        &home,
        id,
    ]);
    let pane = pane.trim().to_string();
    t.run(["set-option", "-p", "-t", &pane, "remain-on-exit", "on"]);
    h.write(
        &format!("state/{id}.meta"),
        format!(
            "kind=ship\nmode={mode}\nproject={}\nworktree={}\nharness=stand-in\npane={pane}\ntmux_socket={}\nspawn_gen=1\n",
            proj.display(),
            wt.display(),
            t.socket
        ),
    );
    assert!(
        wait_until(10.0, || t.capture(&pane).contains("stand-in>")),
        "stand-in did not start: {}",
        t.capture(&pane)
    );
    (wt, pane)
}

pub(crate) fn ctl(h: &TestHome, t: &Tmux) -> impl Fn(&[&str]) -> crate::harness::Cmd {
    let root = h.root();
    let socket = t.socket.clone();
    move |args: &[&str]| {
        crate::harness::Cmd::new(bin("fm-control"))
            .env("FM_HOME", &root)
            .env("FM_TMUX_SOCKET", &socket)
            .env("FM_CONTROL_EXIT_WAIT_SECS", "1")
            .args(args)
    }
}

#[track_caller]
pub(crate) fn queue(h: &TestHome, id: &str, body: &str) {
    let home = firstmate::Home::at(&h.root()).unwrap();
    let cfg = firstmate::config::Config::default();
    let id = firstmate::TaskId::parse(id).unwrap();
    let msg = firstmate::inbox::Outgoing {
        from: "captain",
        body: body.as_bytes(),
        fire_and_forget: false,
        dedupe: false,
    };
    firstmate::inbox::queue(&home, &cfg, &id, &msg, 0).unwrap();
}

fn ring(t: &Tmux, pane: &str) {
    t.run(["send-keys", "-t", pane, "-l", ": ring"]);
    t.run(["send-keys", "-t", pane, "Enter"]);
}

#[test]
fn interrupt_sends_only_keys_and_exit_stops_the_stand_in() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (_wt, pane) = task(&h, &t, "t1", "direct-PR");
    let fm = ctl(&h, &t);
    fm(&["t1", "interrupt"])
        .stdout("interrupt-delivered t1 harness=stand-in\n")
        .run();
    assert!(wait_until(5.0, || t.capture(&pane).contains("interrupted")));
    assert!(!t.capture(&pane).contains("stand-in> C-c"));
    // The largest wait the config accepts is "forever", not a crash.
    crate::harness::Cmd::new(bin("fm-control"))
        .env("FM_HOME", h.root())
        .env("FM_TMUX_SOCKET", &t.socket)
        .env("FM_CONTROL_EXIT_WAIT_SECS", u64::MAX.to_string())
        .args(["t1", "exit"])
        .stdout("stopped t1\n")
        .run();
    fm(&["t1", "exit"]).stdout("already-stopped t1\n").run();
    fm(&["t1", "interrupt"])
        .status(1)
        .stderr_has("nothing to interrupt")
        .run();
    let events = String::from_utf8(h.read("state/events.jsonl")).unwrap();
    assert!(events.contains("control.interrupted") && events.contains("control.stopped"));
}

#[test]
fn exit_on_a_dead_agent_types_nothing() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let pane = t.window("dead", &["sh", "-c", "cat -v > /dev/null"]);
    h.write(
        "state/d.meta",
        format!("harness=stand-in\npane={pane}\ntmux_socket={}\n", t.socket),
    );
    let fm = ctl(&h, &t);
    fm(&["d", "exit"]).stdout("already-stopped d\n").run();
    assert!(!t.capture(&pane).contains("/exit"));
}

#[test]
fn a_stand_in_that_ignores_exit_makes_exit_fail_naming_what_was_sent() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (_wt, pane) = task(&h, &t, "t2", "direct-PR");
    queue(&h, "t2", "ignore-exit\n");
    ring(&t, &pane);
    assert!(wait_until(5.0, || t
        .capture(&pane)
        .contains("read 001.msg")));
    let fm = ctl(&h, &t);
    fm(&["t2", "exit"])
        .status(1)
        .stderr_has("still running after 1s")
        .stderr_has("\"/exit\" + Enter")
        .run();
}

/// An agent that swallows the Enter after its exit command (as Codex
/// does with one in the same burst as the text): exit sees the command
/// still in the composer and presses Enter again, so the agent quits
/// instead of outliving the wait.
#[test]
fn exit_presses_enter_again_when_the_first_was_swallowed() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (_wt, pane) = task(&h, &t, "t4", "direct-PR");
    queue(&h, "t4", "swallow-enter\n");
    ring(&t, &pane);
    assert!(wait_until(5.0, || t
        .capture(&pane)
        .contains("acknowledged 001.msg")));
    let fm = ctl(&h, &t);
    fm(&["t4", "exit"]).stdout("stopped t4\n").run();
    let screen = t.capture(&pane);
    assert!(screen.contains("submitted: /exit"), "{screen}");
    assert!(screen.contains("bye"), "{screen}");
}

/// The interrupt ends the turn: no Stop hook reports an interrupted one,
/// so the busy record reads idle afterwards.
#[test]
fn interrupt_leaves_an_idle_busy_record() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (_wt, _pane) = task(&h, &t, "t5", "direct-PR");
    let later = firstmate::clock::now() + 10;
    h.write("state/t5.busy", format!("busy {later} hook\n"));
    let fm = ctl(&h, &t);
    fm(&["t5", "interrupt"])
        .stdout("interrupt-delivered t5 harness=stand-in\n")
        .run();
    let rec = h.read_string("state/t5.busy");
    assert!(
        rec.starts_with("idle ") && rec.ends_with(" fm-control\n"),
        "{rec}"
    );
}

#[test]
fn two_lifecycle_actions_at_once_the_second_is_refused() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (_wt, pane) = task(&h, &t, "t3", "direct-PR");
    queue(&h, "t3", "ignore-exit\n");
    ring(&t, &pane);
    assert!(wait_until(5.0, || t
        .capture(&pane)
        .contains("read 001.msg")));
    // Three seconds of waiting for the agent to exit: the window in which
    // the second action must be refused.
    let slow = ctl(&h, &t)(&["t3", "exit"])
        .env("FM_CONTROL_EXIT_WAIT_SECS", "3")
        .status(1)
        .stderr_has("still running after 3s")
        .start();
    // The stand-in has been asked to exit: the first action holds the
    // task's lifecycle lock until it gives up waiting.
    wait_for("the stand-in to ignore /exit", 10.0, || {
        t.capture(&pane).contains("ignoring /exit")
    });
    ctl(&h, &t)(&["t3", "interrupt"])
        .status(1)
        .stderr_has("another lifecycle action is already running")
        .run();
    slow.wait(20.0);
}

#[test]
fn relaunch_needs_a_note_then_keeps_the_pane_and_bumps_spawn_gen() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (_wt, pane) = task(&h, &t, "t4", "direct-PR");
    let fm = ctl(&h, &t);
    let brief_before = h.read("data/t4/brief.md");
    let meta_before = h.read("state/t4.meta");
    fm(&["t4", "relaunch"])
        .status(1)
        .stderr_has("requires --note")
        .run();
    assert_eq!(h.read("data/t4/brief.md"), brief_before);
    assert_eq!(h.read("state/t4.meta"), meta_before);
    queue(&h, "t4", "status working queued before the relaunch\n");
    // The watcher had rung the old agent to the end of its ladder: the new
    // agent must be rung afresh, so the ladder files go.
    h.write("state/t4.inbox/.ring-state", "001.msg\t3\t1796000000\n");
    h.write("state/t4.inbox/.escalated", "001.msg\n");
    fm(&["t4", "relaunch", "--note", "parser done; docs remain"])
        .stdout("relaunched t4 harness=stand-in from=stand-in\n")
        .run();
    assert!(!h.exists("state/t4.inbox/.ring-state"));
    assert!(!h.exists("state/t4.inbox/.escalated"));
    let brief = String::from_utf8(h.read("data/t4/brief.md")).unwrap();
    assert!(
        brief.contains("## Progress note (") && brief.ends_with("parser done; docs remain\n"),
        "{brief}"
    );
    let meta = String::from_utf8(h.read("state/t4.meta")).unwrap();
    assert!(
        meta.contains(&format!("pane={pane}\n")) && meta.contains("spawn_gen=2\n"),
        "{meta}"
    );
    assert!(wait_until(10.0, || t.capture(&pane).contains("stand-in>")));
    ring(&t, &pane);
    assert!(
        wait_until(5.0, || t.capture(&pane).contains("read 001.msg")),
        "{}",
        t.capture(&pane)
    );
}

#[test]
fn teardown_refuses_unpushed_and_dirty_work_unless_forced() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (wt, _pane) = task(&h, &t, "t5", "direct-PR");
    let fm = ctl(&h, &t);
    std::fs::write(wt.join("new.txt"), "x\n").unwrap();
    fm(&["t5", "teardown"])
        .status(1)
        .stderr_has("uncommitted changes")
        .run();
    git(&wt, &["add", "new.txt"]);
    git(&wt, &["commit", "-q", "-m", "work"]);
    fm(&["t5", "teardown"])
        .status(1)
        .stderr_has("unreachable outside the worktree")
        .run();
    assert!(wt.exists() && h.exists("state/t5.meta"));
    git(&wt, &["push", "-q", "origin", "HEAD:refs/heads/fm/t5"]);
    git(&wt, &["fetch", "-q", "origin"]);
    let r = fm(&["t5", "teardown"])
        .stdout_has("torn-down t5 archive=")
        .run();
    assert!(!wt.exists());
    assert!(!h.exists("state/t5.meta") && !h.exists("data/t5"));
    let archive = r
        .stdout()
        .trim()
        .rsplit("archive=")
        .next()
        .unwrap()
        .to_string();
    assert!(Path::new(&archive).join("t5.meta").is_file());
    assert!(Path::new(&archive).join("data/brief.md").is_file());
}

#[test]
fn teardown_force_discards_unpushed_work() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (wt, _pane) = task(&h, &t, "t6", "direct-PR");
    std::fs::write(wt.join("dirty.txt"), "x\n").unwrap();
    ctl(&h, &t)(&["t6", "teardown", "--force"])
        .stdout_regex(&torn_down(&h, "t6"))
        .run();
    assert!(!wt.exists());
    assert!(h.exists("state/archive"));
}

#[test]
fn bad_ids_and_verbs() {
    let h = TestHome::new();
    crate::harness::Cmd::new(bin("fm-control"))
        .env("FM_HOME", h.root())
        .args(["../x", "exit"])
        .status(2)
        .stderr("fm-control: error: invalid task id \"../x\": must start with a letter or digit\n")
        .run();
    crate::harness::Cmd::new(bin("fm-control"))
        .env("FM_HOME", h.root())
        .args(["t", "explode"])
        .status(2)
        .stderr("fm-control: error: unexpected argument 'explode' found\n\nUsage: fm-control [OPTIONS] <ID> <COMMAND>\n\nFor more information, try '--help'.\n").run();
    crate::harness::Cmd::new(bin("fm-control"))
        .env("FM_HOME", h.root())
        .args(["nobody", "exit"])
        .status(1)
        .stderr("fm-control: error: unknown task nobody: no metadata (spawn it first)\n")
        .run();
}

#[test]
fn spawn_refuses_a_scaffold_then_spawns_a_stand_in_that_acks() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let proj = project(&h);
    let fm = ctl(&h, &t);
    let project = proj.to_str().unwrap();
    h.fm("brief")
        .args(["s1", "demo", "--mode", "local-only"])
        .stdout_has("scaffolded:")
        .run();
    fm(&["s1", "spawn", "--project", project, "--harness", "stand-in"])
        .status(1)
        .stderr_has("fm-brief --check")
        .run();
    assert!(!h.exists("worktrees/s1"));
    fm(&["../s1", "spawn", "--project", project])
        .status(2)
        .stderr("fm-control: error: invalid task id \"../s1\": must start with a letter or digit\n")
        .run();
    h.fm("brief")
        .args([
            "s1",
            "demo",
            "--mode",
            "local-only",
            "--force",
            "--intent",
            "make it so",
            "--spec",
            "one commit",
        ])
        .stdout(format!(
            "{}history: {}\nnotice: no live worker notified (no pane recorded)\n",
            written(&h, "s1"),
            h.path("data/s1/brief.history/001.md").display()
        ))
        .run();
    let r = fm(&["s1", "spawn", "--project", project, "--harness", "stand-in"])
        .stdout_regex(&spawned(&h, "s1", "stand-in"))
        .run();
    let out = r.stdout();
    let pane = out
        .split("pane=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    assert!(
        out.starts_with("spawned s1 pane=%") && out.contains("harness=stand-in"),
        "{out}"
    );
    let wt = h.root().join("worktrees/s1");
    assert!(wt.join(".git").exists());
    let meta = String::from_utf8(h.read("state/s1.meta")).unwrap();
    assert!(
        meta.contains(&format!("pane={pane}\n"))
            && meta.contains("spawn_gen=1\n")
            && meta.contains("harness=stand-in\n"),
        "{meta}"
    );
    assert!(
        meta.contains(&format!("worktree={}\n", wt.display())),
        "{meta}"
    );
    let listed = t.run([
        "list-panes",
        "-a",
        "-F",
        "#{pane_id} #{window_name} #{pane_current_command}",
    ]);
    assert!(listed.contains(&format!("{pane} fm-s1 ")), "{listed}");
    // The session spawn created holds the worker's window and nothing else
    // (no stray shell window beside it).
    let windows = t.run(["list-windows", "-t", "=fm", "-F", "#{window_name}"]);
    assert_eq!(windows, "fm-s1\n");
    assert!(
        wait_until(10.0, || t.capture(&pane).contains("stand-in>")),
        "{}",
        t.capture(&pane)
    );
    crate::harness::Cmd::new(bin("fm-send"))
        .env("FM_HOME", h.root())
        .env("FM_TMUX_SOCKET", &t.socket)
        .args(["s1", "status working on it"])
        .stdout_has("doorbell rang")
        .run();
    assert!(
        wait_until(10.0, || h.exists("state/s1.inbox/handled/001.msg")),
        "{}",
        t.capture(&pane)
    );
    let status = String::from_utf8(h.read("state/s1.status")).unwrap();
    assert!(
        status.starts_with("working [at=") && status.contains("]: on it"),
        "{status}"
    );
    fm(&["s1", "spawn", "--project", project, "--harness", "stand-in"])
        .status(1)
        .stderr_has("already has a live agent")
        .run();
}

/// What `fm-brief` prints for a local-only brief of `id`.
fn written(h: &TestHome, id: &str) -> String {
    format!(
        "written: {} (ship, mode=local-only)\n",
        h.path(&format!("data/{id}/brief.md")).display()
    )
}

/// The line `fm-control spawn` prints, as a regex (the pane id varies).
fn spawned(h: &TestHome, id: &str, harness: &str) -> String {
    format!(
        r"spawned {id} pane=%\d+ worktree={} harness={harness}\n",
        regex::escape(&h.path(&format!("worktrees/{id}")).display().to_string())
    )
}

/// The line `fm-control teardown` prints, as a regex.
pub(crate) fn torn_down(h: &TestHome, id: &str) -> String {
    format!(
        r"torn-down {id} archive={}/{id}-\d+\n",
        regex::escape(&h.path("state/archive").display().to_string())
    )
}

/// A brief for `id` that passes `fm-brief --check`.
#[track_caller]
pub(crate) fn briefed(h: &TestHome, id: &str) {
    h.fm("brief")
        .args([
            id,
            "demo",
            "--mode",
            "local-only",
            "--intent",
            "make it so",
            "--spec",
            "one commit",
        ])
        .stdout(written(h, id))
        .run();
}

pub(crate) fn pane_of(out: &str) -> String {
    out.split("pane=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn a_stale_busy_record_does_not_survive_exit_and_relaunch() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (_wt, _pane) = task(&h, &t, "t8", "direct-PR");
    h.fm("status").args(["t8", "--busy"]).run();
    let fm = ctl(&h, &t);
    fm(&["t8", "exit"]).stdout("stopped t8\n").run();
    fm(&["t8", "relaunch", "--note", "resume"])
        .stdout("relaunched t8 harness=stand-in from=stand-in\n")
        .run();
    let busy = String::from_utf8(h.read("state/t8.busy")).unwrap();
    assert!(
        busy.starts_with("idle ") && busy.ends_with(" fm-control\n"),
        "{busy}"
    );
    let r = h
        .fm("crew-state")
        .args(["t8"])
        .env("FM_TMUX_SOCKET", &t.socket)
        .stdout("state: idle \u{b7} source: pane \u{b7} agent alive, no status yet\n")
        .run();
    assert!(!r.stdout().contains("busy"), "{}", r.stdout());
}

#[test]
fn relaunch_of_an_agent_that_ignores_exit_kills_it_and_adds_the_note_once() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (_wt, pane) = task(&h, &t, "t9", "direct-PR");
    queue(&h, "t9", "ignore-exit\n");
    ring(&t, &pane);
    assert!(wait_until(5.0, || t
        .capture(&pane)
        .contains("read 001.msg")));
    ctl(&h, &t)(&["t9", "relaunch", "--note", "carry on"])
        .stdout("relaunched t9 harness=stand-in from=stand-in\n")
        .run();
    let brief = String::from_utf8(h.read("data/t9/brief.md")).unwrap();
    assert_eq!(brief.matches("## Progress note (").count(), 1, "{brief}");
    assert!(wait_until(10.0, || t.capture(&pane).contains("stand-in>")));
}

#[test]
fn teardown_of_an_untouched_worktree_in_a_project_without_a_remote() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (wt, _pane) = task(&h, &t, "u1", "direct-PR");
    let proj = h.root().join("project");
    git(&proj, &["remote", "remove", "origin"]);
    let fm = ctl(&h, &t);
    // A commit no branch holds is still refused …
    std::fs::write(wt.join("w.txt"), "x\n").unwrap();
    git(&wt, &["add", "w.txt"]);
    git(&wt, &["commit", "-q", "-m", "work"]);
    fm(&["u1", "teardown"])
        .status(1)
        .stderr_has("unreachable outside the worktree")
        .run();
    // … and once it is on a local branch (or untouched) teardown proceeds.
    git(&wt, &["branch", "fm/u1"]);
    fm(&["u1", "teardown"]).stdout_has("torn-down u1").run();
    assert!(!wt.exists());
}

#[test]
fn spawn_starts_from_the_default_branch_not_the_captains_checkout() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let proj = project(&h);
    git(&proj, &["remote", "set-head", "origin", "main"]);
    let main = git(&proj, &["rev-parse", "main"]);
    git(&proj, &["checkout", "-q", "-b", "feature"]);
    git(
        &proj,
        &["commit", "-q", "--allow-empty", "-m", "captain's wip"],
    );
    briefed(&h, "b1");
    let spawn = |id: &str, proj: &Path| {
        crate::harness::Cmd::new(bin("fm-control"))
            .env("FM_HOME", h.root())
            .env("FM_TMUX_SOCKET", &t.socket)
            .env("FM_BRIEF_DEFAULT_BRANCH", "develop")
            .args([
                id,
                "spawn",
                "--project",
                proj.to_str().unwrap(),
                "--harness",
            ])
            .arg("stand-in")
    };
    spawn("b1", &proj)
        .stdout_regex(&spawned(&h, "b1", "stand-in"))
        .run();
    let wt = h.root().join("worktrees/b1");
    assert_eq!(git(&wt, &["rev-parse", "HEAD"]), main);
    let events = String::from_utf8(h.read("state/events.jsonl")).unwrap();
    assert!(events.contains("\"base\":\"origin/main\""), "{events}");

    // No origin/HEAD, no develop, main or master: refused, nothing created.
    git(&proj, &["remote", "remove", "origin"]);
    git(&proj, &["branch", "-q", "-m", "main", "trunk"]);
    briefed(&h, "b2");
    spawn("b2", &proj)
        .status(1)
        .stderr_has("tried refs/remotes/origin/HEAD, develop, main, master")
        .stderr_has("--base")
        .run();
    assert!(!h.exists("worktrees/b2") && !h.exists("state/b2.meta"));
}

fn harness_config(h: &TestHome) {
    let mut cfg = std::fs::read_to_string(h.path("config/firstmate.toml")).unwrap_or_default();
    cfg.push_str(
        "\n[harness.ghost]\nlaunch = [\"no-such-agent-program\"]\n\n[harness.quick]\nlaunch = [\"true\"]\n\n[harness.nolaunch]\nexit = \"/q\"\n",
    );
    h.write("config/firstmate.toml", cfg);
}

#[test]
fn spawn_refuses_a_missing_program_and_survives_an_agent_that_exits_at_once() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    harness_config(&h);
    let proj = project(&h);
    let project = proj.to_str().unwrap();
    let fm = ctl(&h, &t);
    briefed(&h, "g1");
    fm(&["g1", "spawn", "--project", project, "--harness", "ghost"])
        .status(1)
        .stderr_has("harness ghost: program no-such-agent-program not found")
        .run();
    fm(&["g1", "spawn", "--project", project, "--harness", "nolaunch"])
        .status(2)
        .stderr_has("harness \"nolaunch\" is defined in the config but has no `launch`")
        .run();
    assert!(!h.exists("worktrees/g1") && !h.exists("state/g1.meta"));
    // Ladder files left from an earlier agent of this task go: the new
    // agent has heard none of the pending records.
    h.write("state/g1.inbox/.ring-state", "001.msg\t3\t1796000000\n");
    h.write("state/g1.inbox/.escalated", "001.msg\n");
    let r = fm(&["g1", "spawn", "--project", project, "--harness", "quick"])
        .stdout_regex(&spawned(&h, "g1", "quick"))
        .run();
    assert!(!h.exists("state/g1.inbox/.ring-state") && !h.exists("state/g1.inbox/.escalated"));
    let pane = pane_of(&r.stdout());
    let meta = String::from_utf8(h.read("state/g1.meta")).unwrap();
    assert!(meta.contains(&format!("pane={pane}\n")), "{meta}");
    let listed = t.run(["list-panes", "-a", "-F", "#{pane_id} #{pane_dead}"]);
    assert!(
        wait_until(5.0, || t
            .run(["list-panes", "-a", "-F", "#{pane_id} #{pane_dead}"])
            .contains(&format!("{pane} 1"))),
        "{listed}"
    );
    fm(&["g1", "teardown"])
        .stdout_regex(&torn_down(&h, "g1"))
        .run();
    assert!(!h.exists("worktrees/g1"));
}

/// The launch program is checked against `fm-control`'s PATH, so the pane
/// must run with that PATH too, not the one the tmux server started with
/// (tmux hands a command client's PATH to the panes it starts).
#[test]
fn spawn_runs_the_agent_with_the_path_its_program_was_found_on() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let bin_dir = h.path("captain-bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let agent = bin_dir.join("captains-local-agent");
    std::fs::write(&agent, "#!/bin/sh\necho ran > \"$FM_HOME/agent-ran\"\n").unwrap();
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut cfg = std::fs::read_to_string(h.path("config/firstmate.toml")).unwrap_or_default();
    cfg.push_str("\n[harness.local]\nlaunch = [\"captains-local-agent\"]\n");
    h.write("config/firstmate.toml", cfg);
    let proj = project(&h);
    briefed(&h, "lp1");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    crate::harness::Cmd::new(bin("fm-control"))
        .env("FM_HOME", h.root())
        .env("FM_TMUX_SOCKET", &t.socket)
        .env("PATH", &path)
        .args([
            "lp1",
            "spawn",
            "--project",
            proj.to_str().unwrap(),
            "--harness",
            "local",
        ])
        .stdout_regex(&spawned(&h, "lp1", "local"))
        .run();
    assert!(
        wait_until(10.0, || h.exists("agent-ran")),
        "the agent never ran: the pane did not get fm-control's PATH"
    );
    ctl(&h, &t)(&["lp1", "teardown"])
        .stdout_regex(&torn_down(&h, "lp1"))
        .run();
}

#[test]
fn teardown_refuses_a_worktree_git_would_resolve_to_an_outer_clone() {
    // An empty `.git` directory is not a repository, so `git -C` searches
    // upward and would answer for the home, itself a clean clone.
    let h = TestHome::new();
    h.write(".gitignore", "state/\ndata/\nworktrees/\n");
    git(&h.root(), &["init", "-q", "-b", "main"]);
    git(&h.root(), &["config", "user.email", "t@example.invalid"]);
    git(&h.root(), &["config", "user.name", "t"]);
    git(&h.root(), &["add", "-A"]);
    git(&h.root(), &["commit", "-q", "-m", "home"]);
    let wt = h.path("worktrees/t9");
    std::fs::create_dir_all(wt.join(".git")).unwrap();
    h.write(
        "state/t9.meta",
        format!("kind=ship\nmode=local-only\nworktree={}\n", wt.display()),
    );
    crate::harness::Cmd::new(bin("fm-control"))
        .env("FM_HOME", h.root())
        .args(["t9", "teardown"])
        .status(1)
        .stderr_has("is not a git repository of its own")
        .run();
    assert!(h.exists("state/t9.meta") && wt.exists());
}

#[test]
fn spawn_records_the_physical_worktree_the_brief_names() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let proj = project(&h);
    std::fs::create_dir(h.path("elsewhere")).unwrap();
    std::os::unix::fs::symlink(h.path("elsewhere"), h.path("worktrees")).unwrap();
    h.fm("brief")
        .args([
            "p1",
            "demo",
            "--mode",
            "local-only",
            "--intent",
            "make it so",
            "--spec",
            "one commit",
        ])
        .stdout(written(&h, "p1"))
        .run();
    let physical = h.path("elsewhere/p1");
    let brief = String::from_utf8(h.read("data/p1/brief.md")).unwrap();
    assert!(
        brief.contains(&format!("Both must print `{}`.", physical.display())),
        "{brief}"
    );
    ctl(&h, &t)(&[
        "p1",
        "spawn",
        "--project",
        proj.to_str().unwrap(),
        "--harness",
        "stand-in",
    ])
    .stdout_has(&format!("worktree={}", physical.display()))
    .run();
    let meta = String::from_utf8(h.read("state/p1.meta")).unwrap();
    assert!(
        meta.contains(&format!("worktree={}\n", physical.display())),
        "{meta}"
    );
    assert!(physical.join(".git").exists());
}

/// Spawn launches claude and codex with their approval posture's flags,
/// the profile's `env`, and the agent's own busy/idle hooks — commands
/// that work in an empty environment (`env -i`) and write the records.
#[test]
fn spawn_passes_the_approval_posture_env_and_the_agents_own_hooks() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let bin_dir = h.path("agents-bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    for name in ["claude", "codex"] {
        let p = bin_dir.join(name);
        std::fs::write(
            &p,
            format!(
                "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$FM_HOME/{name}.argv.tmp\"\nprintf '%s\\n' \"IS_SANDBOX=${{IS_SANDBOX-unset}}\" \"EXTRA=${{EXTRA-unset}}\" > \"$FM_HOME/{name}.env\"\nmv \"$FM_HOME/{name}.argv.tmp\" \"$FM_HOME/{name}.argv\"\nexec cat\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let mut cfg = std::fs::read_to_string(h.path("config/firstmate.toml")).unwrap_or_default();
    cfg.push_str(
        "\n[harness.claude]\nenv = [\"EXTRA=x y\"]\n\n[harness.codex]\napproval = \"prompt\"\n",
    );
    h.write("config/firstmate.toml", cfg);
    let proj = proj_str(&h);
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let spawn = |id: &str, harness: &str| {
        briefed(&h, id);
        crate::harness::Cmd::new(bin("fm-control"))
            .env("FM_HOME", h.root())
            .env("FM_TMUX_SOCKET", &t.socket)
            .env("PATH", &path)
            .args([id, "spawn", "--project", &proj, "--harness", harness])
            .stdout_regex(&spawned(&h, id, harness))
            .run();
    };
    spawn("c1", "claude");
    spawn("x1", "codex");
    for f in ["claude.argv", "codex.argv"] {
        assert!(wait_until(10.0, || h.exists(f)), "{f} never written");
    }
    let kickoff = |id: &str| {
        format!(
            "Read the brief at {} and follow it.",
            h.path(&format!("data/{id}/brief.md")).display()
        )
    };
    let settings = h.path("state/c1.hooks.json").display().to_string();
    assert_eq!(
        h.read_string("claude.argv").lines().collect::<Vec<_>>(),
        [
            "--dangerously-skip-permissions",
            "--settings",
            &settings,
            &kickoff("c1")
        ]
    );
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .unwrap()
        .stdout
        == b"0\n";
    // Only claude's bypass as root adds IS_SANDBOX; the rest is inherited.
    let ambient = std::env::var("IS_SANDBOX").unwrap_or_else(|_| "unset".into());
    assert_eq!(
        h.read_string("claude.env"),
        format!(
            "IS_SANDBOX={}\nEXTRA=x y\n",
            if root { "1" } else { &ambient }
        )
    );
    assert_eq!(
        h.read_string("codex.env"),
        format!("IS_SANDBOX={ambient}\nEXTRA=unset\n")
    );
    // A hook's command, run by a shell with no environment at all.
    let bare = |argv: &[&str]| {
        let out = std::process::Command::new("env")
            .arg("-i")
            .args(argv)
            .output()
            .unwrap();
        assert!(
            out.status.success() && out.stdout.is_empty(),
            "{argv:?}: {out:?}"
        );
    };
    let busy = |id: &str| h.read_string(&format!("state/{id}.busy"));
    let s: serde_json::Value = serde_json::from_str(&h.read_string("state/c1.hooks.json")).unwrap();
    let command = |ev: &str| {
        s["hooks"][ev][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .to_string()
    };
    bare(&["/bin/sh", "-c", &command("UserPromptSubmit")]);
    assert!(
        busy("c1").starts_with("busy ") && busy("c1").ends_with(" hook\n"),
        "{}",
        busy("c1")
    );
    bare(&["/bin/sh", "-c", &command("Stop")]);
    assert!(
        busy("c1").starts_with("idle ") && busy("c1").ends_with(" hook\n"),
        "{}",
        busy("c1")
    );
    // A turn ended by an API error runs StopFailure, not Stop.
    bare(&["/bin/sh", "-c", &command("UserPromptSubmit")]);
    bare(&["/bin/sh", "-c", &command("StopFailure")]);
    assert!(busy("c1").starts_with("idle "), "{}", busy("c1"));
    let argv = h.read_string("codex.argv");
    let argv: Vec<&str> = argv.lines().collect();
    assert_eq!(
        argv[..5],
        [
            "--sandbox",
            "read-only",
            "--ask-for-approval",
            "on-request",
            "--dangerously-bypass-hook-trust"
        ]
    );
    assert_eq!(argv[argv.len() - 1], kickoff("x1"));
    let overrides: Vec<toml::Table> = argv[5..argv.len() - 1]
        .chunks(2)
        .map(|c| {
            assert_eq!(c[0], "-c");
            toml::from_str(c[1]).unwrap()
        })
        .collect();
    assert_eq!(overrides.len(), 3);
    let hook = |ev: &str| {
        overrides
            .iter()
            .find_map(|t| t.get("hooks")?.get(ev)?[0]["hooks"][0]["command"].as_str())
            .unwrap()
            .to_string()
    };
    bare(&["/bin/sh", "-c", &hook("UserPromptSubmit")]);
    assert!(busy("x1").starts_with("busy "), "{}", busy("x1"));
    bare(&["/bin/sh", "-c", &hook("Stop")]);
    assert!(busy("x1").starts_with("idle "), "{}", busy("x1"));
    // An interrupted turn runs Interrupt, not Stop. No `notify`: Codex
    // runs it when the title side request ends, mid-turn.
    bare(&["/bin/sh", "-c", &hook("UserPromptSubmit")]);
    bare(&["/bin/sh", "-c", &hook("Interrupt")]);
    assert!(
        busy("x1").starts_with("idle ") && busy("x1").ends_with(" hook\n"),
        "{}",
        busy("x1")
    );
    assert!(overrides.iter().all(|t| t.get("notify").is_none()));
}

fn proj_str(h: &TestHome) -> String {
    project(h).display().to_string()
}

/// Escape on an idle real agent opens a history dialog: an interrupt of a
/// profile whose keys are Escape only presses nothing unless a turn runs.
#[test]
fn an_escape_interrupt_of_an_idle_agent_presses_nothing() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let pane = t.window("idle", &["cat", "-v"]);
    h.write(
        "state/e1.meta",
        format!("harness=claude\npane={pane}\ntmux_socket={}\n", t.socket),
    );
    let fm = ctl(&h, &t);
    fm(&["e1", "interrupt"])
        .stdout("interrupt-skipped e1 harness=claude (not busy)\n")
        .run();
    fm(&["e1", "interrupt"])
        .stdout("interrupt-skipped e1 harness=claude (not busy)\n")
        .run();
    assert!(
        !h.exists("state/events.jsonl")
            || !h
                .read_string("state/events.jsonl")
                .contains("control.interrupted")
    );
    // A turn running (the busy record): the keys go, and the record ends.
    let later = firstmate::clock::now() + 10;
    h.write("state/e1.busy", format!("busy {later} hook\n"));
    fm(&["e1", "interrupt"])
        .stdout("interrupt-delivered e1 harness=claude\n")
        .run();
    t.run(["send-keys", "-t", pane.as_str(), "Enter"]);
    assert!(
        wait_until(5.0, || t.capture(&pane).contains("^[")),
        "{}",
        t.capture(&pane)
    );
    // One Escape: the terminal's echo of it and cat's copy.
    assert_eq!(
        t.capture(&pane).matches("^[").count(),
        2,
        "{}",
        t.capture(&pane)
    );
    assert!(h.read_string("state/e1.busy").starts_with("idle "));
}

/// Where the posture's and the hooks' flags go when the captain wrote his
/// own launch: in place of `{flags}`; after the program when it is the
/// harness's own; nowhere for a wrapper (`npx claude`); never a second
/// copy of an option the launch sets itself. `fm doctor` says which.
#[test]
fn launch_flags_go_where_the_launch_says_and_never_twice() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let bin_dir = h.path("agents-bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    // Every fake records its argv under the task's worktree name.
    for name in ["claude", "codex", "npx"] {
        let p = bin_dir.join(name);
        std::fs::write(
            &p,
            format!(
                "#!/bin/sh\nf=\"$FM_HOME/argv.$(basename \"$PWD\")\"\n{{ echo {name}; for a in \"$@\"; do printf '%s\\n' \"$a\"; done; }} > \"$f.tmp\"\nmv \"$f.tmp\" \"$f\"\nexec cat\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let base_cfg = std::fs::read_to_string(h.path("config/firstmate.toml")).unwrap_or_default();
    let proj = proj_str(&h);
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let with = |harness_cfg: &str| {
        h.write(
            "config/firstmate.toml",
            format!("{base_cfg}\n{harness_cfg}"),
        );
    };
    let spawn = |id: &str, harness: &str| -> Vec<String> {
        briefed(&h, id);
        crate::harness::Cmd::new(bin("fm-control"))
            .env("FM_HOME", h.root())
            .env("FM_TMUX_SOCKET", &t.socket)
            .env("PATH", &path)
            .args([id, "spawn", "--project", &proj, "--harness", harness])
            .stdout_regex(&spawned(&h, id, harness))
            .run();
        let f = format!("argv.{id}");
        assert!(wait_until(10.0, || h.exists(&f)), "{f} never written");
        h.read_string(&f).lines().map(String::from).collect()
    };
    let doctor = || {
        crate::harness::Cmd::new(bin("fm"))
            .env("FM_HOME", h.root())
            .env("PATH", &path)
            .arg("doctor")
            .status_any()
            .stdout_any()
            .stderr_any()
            .run()
            .stdout()
    };
    let harness_line = |out: &str, name: &str| {
        out.lines()
            .find(|l| l.contains(&format!("harness: {name}:")))
            .unwrap_or_else(|| panic!("no harness line for {name}: {out}"))
            .to_string()
    };
    let settings = |id: &str| {
        h.path(&format!("state/{id}.hooks.json"))
            .display()
            .to_string()
    };
    // A wrapper: nothing added, and no settings file written for nothing.
    with("[harness.claude]\nlaunch = [\"npx\", \"claude\", \"go\"]\n");
    assert_eq!(spawn("w1", "claude"), ["npx", "claude", "go"]);
    assert!(!h.exists("state/w1.hooks.json"));
    let line = harness_line(&doctor(), "claude");
    assert!(
        line.starts_with("warn ")
            && line.contains("launch runs `npx`, not `claude`: no approval or hook flags added")
            && line.contains("\"{flags}\""),
        "{line}"
    );
    // The wrapper with `{flags}`: they go exactly there.
    with("[harness.claude]\nlaunch = [\"env\", \"X=1\", \"claude\", \"{flags}\", \"go\"]\n");
    assert_eq!(
        spawn("w2", "claude"),
        [
            "claude",
            "--dangerously-skip-permissions",
            "--settings",
            &settings("w2"),
            "go"
        ]
    );
    assert!(!harness_line(&doctor(), "claude").contains("not added"));
    // The harness's own program by path: right after it.
    let own = bin_dir.join("claude").display().to_string();
    with(&format!(
        "[harness.claude]\nlaunch = [\"{own}\", \"--model\", \"m\", \"go\"]\n"
    ));
    assert_eq!(
        spawn("w3", "claude"),
        [
            "claude",
            "--dangerously-skip-permissions",
            "--settings",
            &settings("w3"),
            "--model",
            "m",
            "go"
        ]
    );
    // A launch with its own posture: hooks added, the posture left alone.
    with(
        "[harness.codex]\nlaunch = [\"codex\", \"--ask-for-approval\", \"never\", \"go\"]\napproval = \"prompt\"\n",
    );
    let argv = spawn("w4", "codex");
    assert_eq!(argv[..2], ["codex", "--dangerously-bypass-hook-trust"]);
    assert_eq!(
        argv[argv.len() - 3..],
        ["--ask-for-approval", "never", "go"]
    );
    assert!(
        !argv.iter().any(|a| a == "--sandbox" || a == "on-request"),
        "{argv:?}"
    );
    let line = harness_line(&doctor(), "codex");
    assert!(
        line.starts_with("warn ")
            && line.contains("launch sets `--ask-for-approval` itself: approval prompt not added"),
        "{line}"
    );
    // A launch with its own settings: the posture added, no second --settings.
    with("[harness.claude]\nlaunch = [\"claude\", \"--settings=mine.json\", \"go\"]\n");
    assert_eq!(
        spawn("w5", "claude"),
        [
            "claude",
            "--dangerously-skip-permissions",
            "--settings=mine.json",
            "go"
        ]
    );
    assert!(!h.exists("state/w5.hooks.json"));
    let line = harness_line(&doctor(), "claude");
    assert!(
        line.contains("launch sets `--settings` itself: busy/idle hooks not added"),
        "{line}"
    );
    // `{flags}` inside another argument is refused before anything starts.
    with("[harness.claude]\nlaunch = [\"claude\", \"x{flags}\"]\n");
    briefed(&h, "w6");
    crate::harness::Cmd::new(bin("fm-control"))
        .env("FM_HOME", h.root())
        .env("FM_TMUX_SOCKET", &t.socket)
        .env("PATH", &path)
        .args(["w6", "spawn", "--project", &proj, "--harness", "claude"])
        .status(2)
        .stderr_has("{flags} must be one launch argument of its own")
        .run();
    assert!(!h.exists("state/w6.meta"));
}

/// Exit never submits or destroys someone's half-typed text: it is refused
/// naming the text (nothing typed), and `--force` clears the composer
/// first. A doorbell left unsent is firstmate's own: cleared without
/// `--force`. A dialog is refused too; `--force` cancels it with Escape.
#[test]
fn exit_refuses_over_someones_text_and_force_clears_it() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (_wt, pane) = task(&h, &t, "t1", "direct-PR");
    let fm = ctl(&h, &t);
    let type_in = |text: &str| {
        t.run(["send-keys", "-t", pane.as_str(), "-l", text]);
        assert!(
            wait_until(10.0, || t
                .capture(&pane)
                .contains(&format!("stand-in> {text}"))),
            "{}",
            t.capture(&pane)
        );
    };
    type_in("half typed");
    fm(&["t1", "exit"])
        .status(1)
        .stderr_has("exit-refused t1: the composer holds text \"half typed\"; nothing typed")
        .stderr_has("--force")
        .run();
    fm(&["t1", "relaunch", "--note", "n"])
        .status(1)
        .stderr_has("exit-refused t1: the composer holds text \"half typed\"")
        .run();
    let screen = t.capture(&pane);
    assert!(
        screen.contains("stand-in> half typed") && !screen.contains("submitted:"),
        "{screen}"
    );
    assert!(!h.read_string("data/t1/brief.md").contains("Progress note"));
    fm(&["t1", "exit", "--force"]).stdout("stopped t1\n").run();
    let screen = t.capture(&pane);
    assert!(
        screen.contains("submitted: /exit") && !screen.contains("half typed/exit"),
        "{screen}"
    );
    // A doorbell left unsent (its Enter lost) is cleared, no --force.
    let h = TestHome::new();
    let fm = ctl(&h, &t);
    let (_wt, pane) = task(&h, &t, "t2", "direct-PR");
    let door = firstmate::tmux::deliver::doorbell(
        &firstmate::Home::at(&h.root()).unwrap(),
        &firstmate::TaskId::parse("t2").unwrap(),
    );
    t.run(["send-keys", "-t", pane.as_str(), "-l", &door]);
    assert!(wait_until(10.0, || t
        .capture(&pane)
        .contains("firstmate inbox")));
    fm(&["t2", "exit"]).stdout("stopped t2\n").run();
    assert!(!t.capture(&pane).contains("submitted: : 'firstmate"));
    // A dialog: refused, then cancelled and exited with --force.
    let h = TestHome::new();
    let fm = ctl(&h, &t);
    let (_wt, pane) = task(&h, &t, "t3", "direct-PR");
    queue(&h, "t3", "dialog permission");
    ring(&t, &pane);
    assert!(wait_until(10.0, || t
        .capture(&pane)
        .contains("stand-in dialog: permission?")));
    fm(&["t3", "exit"])
        .status(1)
        .stderr_has("exit-refused t3: waiting in a dialog: permission; nothing typed")
        .run();
    let screen = t.capture(&pane);
    assert!(
        screen.contains("stand-in dialog: permission?")
            && !screen.contains("dialog permission cancelled")
            && !screen.contains("dialog permission answered"),
        "{screen}"
    );
    fm(&["t3", "exit", "--force"]).stdout("stopped t3\n").run();
    assert!(t.capture(&pane).contains("dialog permission cancelled"));
}

/// Writes a brief that passes `fm-brief --check` for `id`.
fn good_brief(h: &TestHome, id: &str) {
    h.fm("brief")
        .args([
            id,
            "demo",
            "--mode",
            "local-only",
            "--force",
            "--intent",
            "make it so",
            "--spec",
            "one commit",
        ])
        .stdout_any()
        .run();
}

/// Spawns `id` with `harness`; returns its pane id.
#[track_caller]
fn spawn_with(h: &TestHome, t: &Tmux, project: &Path, id: &str, harness: &str) -> String {
    good_brief(h, id);
    let out = ctl(h, t)(&[
        id,
        "spawn",
        "--project",
        project.to_str().unwrap(),
        "--harness",
        harness,
    ])
    .stdout_regex(&spawned(h, id, harness))
    .run()
    .stdout();
    out.split("pane=")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .unwrap()
        .to_string()
}

/// Stand-ins that start up as a real TUI does: `slow` draws nothing for
/// 5 s, `early` draws its composer at once but reads no input for 4 s;
/// both throw away what was typed meanwhile (Claude Code right after its
/// launch). `esc` stops a turn with Escape and shows its busy line for the
/// whole turn, as Claude Code does.
const BOOTING_HARNESSES: &str = r#"
[harness.slow]
launch = ["fm-stand-in", "--boot-ms", "5000", "--home", "{home}", "{id}"]
exit = "/exit"
busy_regex = "^stand-in: busy"
agent_commands = ["fm-stand-in"]
composer_regex = "^stand-in> ?(.*)$"

[harness.early]
launch = ["fm-stand-in", "--boot-ms", "4000", "--composer-early", "--home", "{home}", "{id}"]
exit = "/exit"
busy_regex = "^stand-in: busy"
agent_commands = ["fm-stand-in"]
composer_regex = "^stand-in> ?(.*)$"

[harness.esc]
launch = ["fm-stand-in", "--home", "{home}", "{id}"]
interrupt = ["Escape"]
exit = "/exit"
busy_regex = "^stand-in: busy"
busy_whole_turn = true
agent_commands = ["fm-stand-in"]
composer_regex = "^stand-in> ?(.*)$"
"#;

/// A send right after a spawn meets an agent that does not take input
/// yet: the doorbell is `booting` (never a false `rang` whose text the
/// agent threw away), owed, and the watcher rings it once the composer
/// shows — one doorbell, read and acknowledged.
#[test]
fn a_send_to_a_booting_agent_is_owed_and_rung_once_the_composer_shows() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    h.write("config/firstmate.toml", BOOTING_HARNESSES);
    let proj = project(&h);
    let send = |id: &str| {
        crate::harness::Cmd::new(bin("fm-send"))
            .env("FM_HOME", h.root())
            .env("FM_TMUX_SOCKET", &t.socket)
            .args([id, "status working on it"])
            .stdout_has("doorbell booting")
            .stderr_has("does not take input yet")
            .run();
    };
    let mut panes = Vec::new();
    for (id, harness) in [("b1", "slow"), ("b2", "early")] {
        panes.push(spawn_with(&h, &t, &proj, id, harness));
        send(id);
        assert!(h.exists(&format!("state/{id}.inbox/.ring-owed")), "{id}");
        assert!(!h.exists(&format!("state/{id}.inbox/handled/001.msg")));
    }
    for (id, pane) in ["b1", "b2"].iter().zip(&panes) {
        assert!(
            wait_until(15.0, || t.capture(pane).contains("stand-in agent for")),
            "{id} did not boot: {}",
            t.capture(pane)
        );
    }
    assert!(
        wait_until(30.0, || {
            h.fm("watch")
                .env("FM_TMUX_SOCKET", &t.socket)
                .arg("--once")
                .stdout_any()
                .stderr_any()
                .run();
            ["b1", "b2"]
                .iter()
                .all(|id| h.exists(&format!("state/{id}.inbox/handled/001.msg")))
        }),
        "not acknowledged: {}\n{}",
        t.capture(&panes[0]),
        t.capture(&panes[1])
    );
    for pane in &panes {
        let screen = t.capture(pane);
        assert_eq!(
            screen.matches("firstmate inbox").count(),
            1,
            "one doorbell: {screen}"
        );
    }
}

/// The captain stopped a turn with his own Escape: the agent runs no hook
/// then, so its busy record still says busy, but the screen (which shows
/// every turn) reads idle. An interrupt then presses nothing — a second
/// Escape on an idle agent opens its history dialog — while a turn that
/// really runs is interrupted.
#[test]
fn an_interrupt_after_the_captains_own_escape_presses_nothing() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    h.write("config/firstmate.toml", BOOTING_HARNESSES);
    let proj = project(&h);
    let pane = spawn_with(&h, &t, &proj, "e1", "esc");
    assert!(wait_until(10.0, || t.capture(&pane).contains("stand-in>")));
    let record = format!("busy {} hook\n", firstmate::clock::now() - 10);
    h.write("state/e1.busy", &record);
    let fm = ctl(&h, &t);
    fm(&["e1", "interrupt"])
        .stdout("interrupt-skipped e1 harness=esc (not busy)\n")
        .run();
    assert_eq!(h.read_string("state/e1.busy"), record, "nothing reset");
    let events = h.read_string("state/events.jsonl");
    assert!(!events.contains("control.interrupted"), "{events}");
    // A turn that runs is interrupted.
    crate::harness::Cmd::new(bin("fm-send"))
        .env("FM_HOME", h.root())
        .env("FM_TMUX_SOCKET", &t.socket)
        .args(["e1", "busy 20"])
        .stdout_has("doorbell rang")
        .run();
    assert!(
        wait_until(10.0, || t.capture(&pane).contains("stand-in: busy")),
        "{}",
        t.capture(&pane)
    );
    fm(&["e1", "interrupt"])
        .stdout("interrupt-delivered e1 harness=esc\n")
        .run();
}

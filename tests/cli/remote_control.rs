//! The lifecycle of a task on another host over a real sshd: `spawn
//! --host` starts the stand-in on the far account's own tmux server (its
//! private socket is in the far home's config; the fixture kills that
//! server), and every later verb is a lifecycle request of the far
//! entry (`fm far`).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::harness::{TestHome, have_tmux, unmet, wait_until};
use super::sshd::{ACCOUNT, Sshd};

/// A server, or `None` when sshd, root or tmux is missing.
fn start() -> Option<Sshd> {
    if !have_tmux() {
        unmet("tmux", "FM_REQUIRE_TMUX");
        return None;
    }
    let sshd = Sshd::start()?;
    let cfg = std::fs::read_to_string(sshd.far_home.join("config/firstmate.toml")).unwrap();
    sshd.far_write(
        "config/firstmate.toml",
        format!("{cfg}[control]\nexit_wait_secs = 2\n"),
    );
    Some(sshd)
}

/// Runs `program args…` as the far account; its stdout.
#[track_caller]
fn as_far(program: &str, args: &[&str]) -> String {
    let out = Command::new("runuser")
        .args(["-u", ACCOUNT, "--", program])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn far_tmux(sshd: &Sshd, args: &[&str]) -> String {
    let mut v = vec!["-L", &sshd.far_socket];
    v.extend_from_slice(args);
    as_far("tmux", &v)
}

fn far_capture(sshd: &Sshd, pane: &str) -> String {
    let out = Command::new("runuser")
        .args(["-u", ACCOUNT, "--", "tmux", "-L", &sshd.far_socket])
        .args(["capture-pane", "-p", "-t", pane])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn far_git(dir: &Path, args: &[&str]) -> String {
    let mut v = vec![
        "-c",
        "user.email=t@example.invalid",
        "-c",
        "user.name=t",
        "-C",
        dir.to_str().unwrap(),
    ];
    v.extend_from_slice(args);
    as_far("git", &v)
}

/// A clone with one commit on `main` in the far home, owned by the far
/// account; its path.
fn far_project(sshd: &Sshd) -> PathBuf {
    let p = sshd.far_home.join("project");
    sshd.far_write("project/README", "hi\n");
    far_git(&p, &["init", "-q", "-b", "main"]);
    far_git(&p, &["add", "README"]);
    far_git(&p, &["commit", "-q", "-m", "init"]);
    p
}

fn far_read(sshd: &Sshd, rel: &str) -> String {
    std::fs::read_to_string(sshd.far_home.join(rel)).unwrap_or_default()
}

/// A captain's home reaching host `far`, with a brief for `id` that
/// passes `fm-brief --check`.
fn captain(sshd: &Sshd, ids: &[&str]) -> TestHome {
    let h = TestHome::new();
    h.write("config/firstmate.toml", sshd.host_toml("far", 10_000));
    for id in ids {
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
            .stdout_has("written: ")
            .run();
    }
    h
}

/// `spawn --host far` of `id` with the stand-in; the far pane.
#[track_caller]
fn spawn(h: &TestHome, sshd: &Sshd, id: &str, project: &Path) -> String {
    let r = h
        .fm("control")
        .args([id, "spawn", "--host", "far", "--project"])
        .arg(project)
        .args(["--harness", "stand-in"])
        .stdout_regex(&spawned(sshd, id))
        .stderr("")
        .run();
    pane_of(&r.stdout())
}

fn spawned(sshd: &Sshd, id: &str) -> String {
    format!(
        r"^spawned {id} pane=%\d+ worktree={}/\S*{id} harness=stand-in\n$",
        regex::escape(&sshd.far_home.display().to_string())
    )
}

/// The far brief of `id` is the captain's, each of its paths (worktree,
/// status log, inbox) the far home's, and names nothing of the captain's
/// home.
#[track_caller]
fn assert_far_brief_is_the_captains(h: &TestHome, sshd: &Sshd, id: &str) {
    let far = far_read(sshd, &format!("data/{id}/brief.md"));
    let mine = h.read_string(&format!("data/{id}/brief.md"));
    let here = h.root().canonicalize().unwrap().display().to_string();
    let there = sshd.far_home.display().to_string();
    assert!(
        mine.contains(&format!("'{here}/state/{id}.status'")),
        "{mine}"
    );
    assert_eq!(far, mine.replace(&here, &there));
    assert!(!far.contains(&here), "{far}");
    for line in [
        format!("Both must print `{there}/worktrees/{id}`."),
        format!(">> '{there}/state/{id}.status'`"),
        format!("numbered files in `{there}/state/{id}.inbox`."),
    ] {
        assert!(far.contains(&line), "{line}\n{far}");
    }
}

fn entries_of(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn pane_of(out: &str) -> String {
    out.split("pane=")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .unwrap()
        .to_string()
}

#[test]
fn a_task_spawned_on_another_host_lives_and_ends_there() {
    let Some(sshd) = start() else { return };
    let project = far_project(&sshd);
    let h = captain(&sshd, &["t1"]);
    let pane = spawn(&h, &sshd, "t1", &project);

    // The far side holds the task: its meta, the captain's brief with its
    // paths made the far home's, a worktree, and the stand-in on the far
    // tmux server.
    let far_meta = far_read(&sshd, "state/t1.meta");
    assert!(far_meta.contains(&format!("pane={pane}\n")), "{far_meta}");
    assert!(far_meta.contains("harness=stand-in\n"), "{far_meta}");
    assert!(!far_meta.contains("host="), "{far_meta}");
    assert_far_brief_is_the_captains(&h, &sshd, "t1");
    assert!(
        wait_until(10.0, || far_capture(&sshd, &pane).contains("stand-in>")),
        "{}",
        far_capture(&sshd, &pane)
    );
    // The captain's meta names the host and nothing of the far pane.
    let meta = h.read_string("state/t1.meta");
    assert!(meta.contains("host=far\n"), "{meta}");
    assert!(meta.contains("kind=ship\n"), "{meta}");
    assert!(
        !meta.contains("pane=") && !meta.contains("spawn_key"),
        "{meta}"
    );
    assert!(!h.exists("worktrees/t1"));

    // The fleet view's row comes through the host.
    let r = h.fm("crew-state").args(["--json"]).stdout_json().run();
    let rows = r.json();
    let row = rows
        .as_array()
        .and_then(|a| a.iter().find(|r| r["id"] == "t1"))
        .cloned()
        .unwrap_or_else(|| panic!("{rows}"));
    assert_eq!(row["host"], "far", "{row}");
    assert!(
        !row.to_string().contains("unreachable") && !row.to_string().contains("no metadata"),
        "{row}"
    );

    // A message rings the far doorbell; the stand-in there acks it and
    // appends the status it was told to.
    h.fm("send")
        .args(["t1", "status working on it"])
        .stdout_regex(r"^queued t1 001\.msg \x{b7} doorbell rang\n$")
        .run();
    assert!(
        wait_until(15.0, || sshd
            .far_home
            .join("state/t1.inbox/handled/001.msg")
            .exists()),
        "{}",
        far_capture(&sshd, &pane)
    );
    assert!(far_read(&sshd, "state/t1.status").contains("]: on it"));
    assert!(!h.exists("state/t1.inbox"));

    let ctl = |args: &[&str]| h.fm("control").arg("t1").args(args);
    ctl(&["interrupt"])
        .stdout("interrupt-delivered t1 harness=stand-in\n")
        .stderr("")
        .run();
    ctl(&["exit"]).stdout("stopped t1\n").stderr("").run();
    ctl(&["exit"])
        .stdout("already-stopped t1\n")
        .stderr("")
        .run();
    let note = "it's $HOME; `go on`";
    ctl(&["relaunch", "--note", note])
        .stdout("relaunched t1 harness=stand-in from=stand-in\n")
        .stderr("")
        .run();
    let brief = far_read(&sshd, "data/t1/brief.md");
    assert!(brief.ends_with(&format!("{note}\n")), "{brief}");
    assert!(brief.contains("## Progress note ("), "{brief}");
    // The captain's copy of the brief is the one it wrote.
    assert!(!h.read_string("data/t1/brief.md").contains(note));
    assert!(
        wait_until(10.0, || far_capture(&sshd, &pane).contains("stand-in>")),
        "{}",
        far_capture(&sshd, &pane)
    );
    assert!(far_read(&sshd, "state/t1.meta").contains("spawn_gen=2\n"));

    // A brief re-applied here is re-applied there: the captain's copy and
    // its history here, the far copy (the far paths, the relaunch note
    // gone into history) and the live worker told there.
    let far_data = regex::escape(&sshd.far_home.join("data/t1").display().to_string());
    h.fm("brief")
        .args(["t1", "demo", "--mode", "local-only", "--force"])
        .args(["--intent", "new ask: it's $HOME", "--spec", "two commits"])
        .stdout_regex(&format!(
            "^written: {far_data}/brief.md \\(ship, mode=local-only\\)\n\
             history: {far_data}/brief.history/001.md\n\
             notice: queued t1 \\d{{3}}\\.msg \u{b7} doorbell rang\n$"
        ))
        .stderr("")
        .run();
    assert!(
        h.read_string("data/t1/brief.md")
            .contains("new ask: it's $HOME")
    );
    assert!(h.exists("data/t1/brief.history/001.md"));
    assert_far_brief_is_the_captains(&h, &sshd, "t1");
    assert!(far_read(&sshd, "data/t1/brief.history/001.md").contains(note));
    let told = entries_of(&sshd.far_home.join("state/t1.inbox"))
        .into_iter()
        .chain(entries_of(&sshd.far_home.join("state/t1.inbox/handled")))
        .filter(|n| n.ends_with(".msg"))
        .map(|n| {
            far_read(&sshd, &format!("state/t1.inbox/{n}"))
                + &far_read(&sshd, &format!("state/t1.inbox/handled/{n}"))
        })
        .filter(|body| body.contains("brief updated: re-read "))
        .count();
    assert_eq!(told, 1);

    // Work that exists only in the far worktree: teardown is refused
    // there, the refusal and its exit code come back, and nothing of the
    // task goes on either side.
    let wt = far_meta
        .lines()
        .find_map(|l| l.strip_prefix("worktree="))
        .unwrap()
        .to_string();
    far_git(
        Path::new(&wt),
        &["commit", "-q", "--allow-empty", "-m", "work"],
    );
    // The gate runs there too, on the far worktree (the captain's side has
    // none); a given line travels on stdin.
    let gate = |code: i32, out: &str| {
        h.fm("dod")
            .args([
                "--check",
                "t1",
                "--line",
                "done: ready in branch fm/t1",
                "--json",
            ])
            .status(code)
            .stdout_regex(out)
            .stderr("")
            .run();
    };
    gate(
        1,
        r#"^\{"task":"t1","verdict":"refused","reason":"named head [0-9a-f]{40} is unreachable outside the worker copy","line":"ready in branch fm/t1"\}\n$"#,
    );
    ctl(&["teardown"])
        .status(1)
        .stdout("")
        .stderr_regex(
            r"^fm-control: error: HEAD [0-9a-f]{12} is unreachable outside the worktree: push it first \(or use --force\)\n$",
        )
        .run();
    let meta = h.read_string("state/t1.meta");
    assert!(
        meta.contains("host=far\n") && !meta.contains("teardown_key"),
        "{meta}"
    );
    assert!(sshd.far_home.join("state/t1.meta").exists());
    assert!(Path::new(&wt).join(".git").exists());

    // Kept in a branch of the far clone, the same head passes the gate.
    let head = far_git(Path::new(&wt), &["rev-parse", "HEAD"]);
    far_git(&project, &["branch", "kept", head.trim()]);
    gate(
        0,
        r#"^\{"task":"t1","verdict":"accepted","reason":"head [0-9a-f]{40} is on refs/heads/kept of /\S+/project","line":"ready in branch fm/t1"\}\n$"#,
    );

    let archive = regex::escape(&sshd.far_home.join("state/archive").display().to_string());
    ctl(&["teardown", "--force"])
        .stdout_regex(&format!(r"^torn-down t1 archive={archive}/t1-\d+\n$"))
        .stderr("")
        .run();
    assert!(!sshd.far_home.join("state/t1.meta").exists());
    assert!(!sshd.far_home.join("state/t1.seen").exists());
    assert!(!Path::new(&wt).exists());
    // The pane is gone (with it the far server, when it was the last).
    let panes = Command::new("runuser")
        .args(["-u", ACCOUNT, "--", "tmux", "-L", &sshd.far_socket])
        .args(["list-panes", "-a", "-F", "#{pane_id}"])
        .output()
        .unwrap();
    let panes = String::from_utf8_lossy(&panes.stdout);
    assert!(!panes.lines().any(|p| p == pane), "{panes}");
    // The captain's files of the task went into its own archive.
    assert!(!h.exists("state/t1.meta") && !h.exists("data/t1"));
    let entries: Vec<String> = std::fs::read_dir(h.path("state/archive"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert!(entries[0].starts_with("t1-"), "{entries:?}");
    let kept = h.path(&format!("state/archive/{}", entries[0]));
    assert!(kept.join("t1.meta").exists() && kept.join("data/brief.md").exists());
    // Nothing of the task is left here either.
    ctl(&["exit"])
        .status(1)
        .stdout("")
        .stderr("fm-control: error: unknown task t1: no metadata (spawn it first)\n")
        .run();
}

#[test]
fn refused_remote_spawns_leave_nothing_on_either_side() {
    let Some(sshd) = start() else { return };
    let project = far_project(&sshd);
    let h = captain(&sshd, &["t2", "t3"]);
    let spawn = |id: &str, host: &str, project: &str| {
        h.fm("control").args([
            id,
            "spawn",
            "--host",
            host,
            "--project",
            project,
            "--harness",
            "stand-in",
        ])
    };
    let p = project.to_str().unwrap();
    spawn("t2", "nowhere", p)
        .status(2)
        .stdout("")
        .stderr("fm-control: error: unknown host \"nowhere\" (configured: far; define [hosts.nowhere])\n")
        .run();
    spawn("t2", "far", "project")
        .status(2)
        .stdout("")
        .stderr("fm-control: error: --project project must be an absolute path on host far\n")
        .run();
    let missing = sshd.far_home.join("no-such-project");
    spawn("t2", "far", missing.to_str().unwrap())
        .status(1)
        .stdout("")
        .stderr(format!(
            "fm-control: error: project {} not found on this host\n",
            missing.display()
        ))
        .run();
    spawn("t9", "far", p)
        .status(1)
        .stdout("")
        .stderr("fm-control: error: no brief for t9: write it first (fm-brief t9 \u{2026})\n")
        .run();
    // A task the far home already has is not replaced.
    sshd.far_write("data/t3/brief.md", "# theirs\n");
    spawn("t3", "far", p)
        .status(1)
        .stdout("")
        .stderr("fm-control: error: task t3 already exists on this host\n")
        .run();
    assert_eq!(far_read(&sshd, "data/t3/brief.md"), "# theirs\n");
    // A brief that fails the far check: the far side takes it back.
    h.write("data/t2/brief.md", "no front matter\n");
    spawn("t2", "far", p)
        .status(1)
        .stdout("")
        .stderr_has("brief does not pass fm-brief --check")
        .run();
    for id in ["t2", "t9"] {
        assert!(!h.exists(&format!("state/{id}.meta")), "{id}");
        assert!(!sshd.far_home.join(format!("state/{id}.meta")).exists());
        assert!(!sshd.far_home.join(format!("data/{id}")).exists(), "{id}");
    }
    assert!(!h.exists("state/t3.meta"));
    assert!(!sshd.far_home.join("state/t3.meta").exists());
    let wts = far_git(&project, &["worktree", "list"]);
    assert_eq!(wts.lines().count(), 1, "{wts}");

    // A task spawned here is not spawned there as well.
    h.write("state/t3.meta", "pane=%1\nworktree=/w\n");
    spawn("t3", "far", p)
        .status(1)
        .stdout("")
        .stderr("fm-control: error: task t3 was spawned on this host: tear it down before spawning it on host far\n")
        .run();
}

/// Replaces the far `fm` (the far entry) by a wrapper whose first call runs the
/// real tool to its end (its answer kept in `first.out`), then marks
/// `dropped` and hangs, so the answer never travels; later calls run the
/// real tool.
fn drop_first_answer(sshd: &Sshd) {
    // A lifecycle call travels to the far entry, `fm far`.
    let bin = sshd.far_home.join("bin");
    std::fs::rename(bin.join("fm"), bin.join("fm.real")).unwrap();
    sshd.far_write(
        "bin/fm",
        "#!/bin/sh\n\
         top=\"$FM_HOME\"\n\
         if [ -e \"$top/dropped\" ]; then exec \"$top/bin/fm.real\" \"$@\"; fi\n\
         \"$top/bin/fm.real\" \"$@\" >\"$top/first.out\" 2>&1\n\
         : >\"$top/dropped\"\n\
         sleep 60\n",
    );
    std::fs::set_permissions(
        bin.join("fm"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
}

#[test]
fn a_spawn_whose_answer_was_lost_spawns_one_task() {
    let Some(mut sshd) = start() else { return };
    let project = far_project(&sshd);
    let h = captain(&sshd, &["t1"]);
    drop_first_answer(&sshd);
    let run = h
        .fm("control")
        .args(["t1", "spawn", "--host", "far", "--project"])
        .arg(&project)
        .args(["--harness", "stand-in"])
        .stdout_regex(&spawned(&sshd, "t1"))
        .stderr("")
        .start();
    let marker = sshd.far_home.join("dropped");
    assert!(
        wait_until(30.0, || marker.exists()),
        "the far spawn never finished: {}",
        sshd.log()
    );
    // While the answer is lost, the captain's meta holds the key.
    assert!(h.read_string("state/t1.meta").contains("spawn_key="));
    sshd.kill();
    sshd.restart();
    let out = run.wait(60.0);
    // The retry printed the first attempt's answer: one pane, one window,
    // one worktree, one spawn event, one key.
    // Its report, rendered, is what the retry printed.
    let first: serde_json::Value = serde_json::from_str(&far_read(&sshd, "first.out")).unwrap();
    assert_eq!(
        format!("{}\n", first["result"].as_str().unwrap()),
        out.stdout()
    );
    let windows = far_tmux(&sshd, &["list-windows", "-a", "-F", "#{window_name}"]);
    assert_eq!(windows, "fm-t1\n");
    let wts = far_git(&project, &["worktree", "list"]);
    assert_eq!(wts.lines().count(), 2, "{wts}");
    let spawns = far_read(&sshd, "state/events.jsonl")
        .lines()
        .filter(|l| l.contains("control.spawned"))
        .count();
    assert_eq!(spawns, 1);
    assert_eq!(far_read(&sshd, "state/t1.seen").lines().count(), 1);
    let meta = h.read_string("state/t1.meta");
    assert!(
        meta.contains("host=far\n") && !meta.contains("spawn_key"),
        "{meta}"
    );
}

#[test]
fn a_spawn_the_host_never_answered_is_finished_by_the_same_command() {
    let Some(mut sshd) = start() else { return };
    let project = far_project(&sshd);
    let h = captain(&sshd, &["t1"]);
    sshd.kill();
    let spawn = || {
        h.fm("control")
            .args(["t1", "spawn", "--host", "far", "--project"])
            .arg(&project)
            .args(["--harness", "stand-in"])
    };
    spawn()
        .status(3)
        .stdout("")
        .stderr_regex(
            r"^fm-control: error: ssh: host far unreachable: .*Connection refused \(3 attempts; the spawn may have landed there: key \S+-t1-\d+-\d+-0; the same command again finishes it\)\n$",
        )
        .run();
    let meta = h.read_string("state/t1.meta");
    assert!(meta.contains("host=far\nspawn_key="), "{meta}");
    sshd.restart();
    spawn().stdout_regex(&spawned(&sshd, "t1")).stderr("").run();
    let meta = h.read_string("state/t1.meta");
    assert!(
        meta.contains("host=far\n") && !meta.contains("spawn_key"),
        "{meta}"
    );
    assert_eq!(far_read(&sshd, "state/t1.seen").lines().count(), 1);
}

#[test]
fn a_teardown_whose_answer_was_lost_tears_down_once() {
    let Some(mut sshd) = start() else { return };
    let project = far_project(&sshd);
    let h = captain(&sshd, &["t1"]);
    spawn(&h, &sshd, "t1", &project);
    drop_first_answer(&sshd);
    let archive = regex::escape(&sshd.far_home.join("state/archive").display().to_string());
    let run = h
        .fm("control")
        .args(["t1", "teardown", "--force"])
        .stdout_regex(&format!(r"^torn-down t1 archive={archive}/t1-\d+\n$"))
        .stderr("")
        .start();
    let marker = sshd.far_home.join("dropped");
    assert!(
        wait_until(30.0, || marker.exists()),
        "the far teardown never finished: {}",
        sshd.log()
    );
    assert!(h.read_string("state/t1.meta").contains("teardown_key="));
    sshd.kill();
    sshd.restart();
    let out = run.wait(60.0);
    // The retry found the first answer in the far archive entry: one
    // teardown there, and the captain's files archived here.
    // Its report, rendered, is what the retry printed.
    let first: serde_json::Value = serde_json::from_str(&far_read(&sshd, "first.out")).unwrap();
    assert_eq!(
        format!("{}\n", first["result"].as_str().unwrap()),
        out.stdout()
    );
    let torn = far_read(&sshd, "state/events.jsonl")
        .lines()
        .filter(|l| l.contains("control.torn-down"))
        .count();
    assert_eq!(torn, 1);
    let entries = std::fs::read_dir(sshd.far_home.join("state/archive"))
        .unwrap()
        .count();
    assert_eq!(entries, 1);
    assert!(!sshd.far_home.join("state/t1.seen").exists());
    assert!(!h.exists("state/t1.meta") && !h.exists("data/t1"));
}

/// A local teardown takes the task's idempotency keys with it, into the
/// archive entry (a new task of that id starts with none).
#[test]
fn a_local_teardown_archives_the_keys_of_the_task() {
    let h = TestHome::new();
    h.write("state/t1.meta", "kind=ship\n");
    h.write("state/t1.seen", "k1 0 \"queued t1 001.msg\\n\"\n");
    let archive = regex::escape(&h.path("state/archive").display().to_string());
    h.fm("control")
        .args(["t1", "teardown"])
        .stdout_regex(&format!(r"^torn-down t1 archive={archive}/t1-\d+\n$"))
        .stderr("")
        .run();
    assert!(!h.exists("state/t1.seen") && !h.exists("state/t1.meta"));
    let entry = std::fs::read_dir(h.path("state/archive"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    assert_eq!(
        std::fs::read_to_string(entry.join("t1.seen")).unwrap(),
        "k1 0 \"queued t1 001.msg\\n\"\n"
    );
}

/// A key given by hand to the captain's `fm-control` is the far key, and
/// the far side binds it to its request: a teardown under the spawn's key
/// is refused there (exit 2) and tears down nothing on either side.
#[test]
fn a_teardown_under_a_spawns_key_is_refused_on_both_sides() {
    let Some(sshd) = start() else { return };
    let project = far_project(&sshd);
    let h = captain(&sshd, &["t1"]);
    let pane = spawn(&h, &sshd, "t1", &project);
    let seen = far_read(&sshd, "state/t1.seen");
    let spawn_key = seen.split(' ').next().unwrap().to_string();
    assert!(!spawn_key.is_empty(), "{seen}");
    h.fm("control")
        .args(["t1", "teardown", "--force", "--idempotency-key", &spawn_key])
        .status(2)
        .stdout("")
        .stderr(format!(
            "fm-control: error: idempotency key \"{spawn_key}\" was used for another request; nothing was done\n"
        ))
        .run();
    let meta = h.read_string("state/t1.meta");
    assert!(
        meta.contains("host=far") && !meta.contains("teardown_key="),
        "{meta}"
    );
    assert!(!h.exists("state/archive"));
    assert!(sshd.far_home.join("state/t1.meta").exists());
    assert!(!sshd.far_home.join("state/archive").exists());
    let panes = far_tmux(&sshd, &["list-panes", "-a", "-F", "#{pane_id}"]);
    assert!(panes.lines().any(|p| p == pane), "{panes}");
    // Under a key of its own the teardown runs there, that key kept in
    // the far archive entry.
    h.fm("control")
        .args(["t1", "teardown", "--force", "--idempotency-key", "kt.1"])
        .stdout_has("torn-down t1 archive=")
        .stderr("")
        .run();
    assert!(!h.exists("state/t1.meta"));
    let entry = std::fs::read_dir(sshd.far_home.join("state/archive"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let kept = std::fs::read_to_string(entry.join("t1.seen")).unwrap();
    assert!(kept.lines().any(|l| l.starts_with("kt.1 0 ")), "{kept}");
}

/// `fm restore` in the captain's home restores a task on a host there:
/// the far server dies, the far side opens the new window and updates
/// its own meta, and the line comes back unchanged; a second run finds
/// the new agent alive.
#[test]
fn a_task_on_a_host_is_restored_there() {
    let Some(sshd) = start() else { return };
    let project = far_project(&sshd);
    let h = captain(&sshd, &["t1"]);
    let pane = spawn(&h, &sshd, "t1", &project);
    assert!(wait_until(10.0, || far_capture(&sshd, &pane).contains("stand-in>")));
    let spawn_id = |m: &str| {
        m.lines()
            .find_map(|l| l.strip_prefix("spawn_id="))
            .unwrap_or("")
            .to_string()
    };
    let before = spawn_id(&far_read(&sshd, "state/t1.meta"));
    let _ = Command::new("runuser")
        .args([
            "-u",
            ACCOUNT,
            "--",
            "tmux",
            "-L",
            &sshd.far_socket,
            "kill-server",
        ])
        .output();
    let out = h
        .fm("fm")
        .arg("restore")
        .stdout_regex(
            "restored t1 pane=%\\d+ harness=stand-in fresh doorbell=none\n\
             restored 1 \\(resumed 0, fresh 1\\), skipped 0, failed 0\n",
        )
        .run()
        .stdout();
    let new = pane_of(&out);
    let far_meta = far_read(&sshd, "state/t1.meta");
    assert!(far_meta.contains(&format!("pane={new}\n")), "{far_meta}");
    assert_ne!(spawn_id(&far_meta), before);
    assert!(
        wait_until(10.0, || far_capture(&sshd, &new).contains("stand-in>")),
        "{}",
        far_capture(&sshd, &new)
    );
    assert!(!h.read_string("state/t1.meta").contains("pane="));
    h.fm("fm")
        .arg("restore")
        .stdout(format!(
            "skipped t1: alive in pane {new}\nrestored 0 (resumed 0, fresh 0), skipped 1, failed 0\n"
        ))
        .run();
}

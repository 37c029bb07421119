//! `fm review` and `fm land` of a task on another host over a real sshd:
//! git runs there, in the far worktree and the far clone; the captain
//! gets the report back as data.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::harness::{TestHome, have_tmux, unmet};
use super::sshd::{ACCOUNT, Sshd};

#[track_caller]
fn far_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("runuser")
        .args(["-u", ACCOUNT, "--", "git"])
        .args([
            "-c",
            "user.email=t@example.invalid",
            "-c",
            "user.name=t",
            "-C",
        ])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn far_project(sshd: &Sshd) -> PathBuf {
    let p = sshd.far_home.join("project");
    sshd.far_write("project/README", "hi\n");
    far_git(&p, &["init", "-q", "-b", "main"]);
    far_git(&p, &["add", "README"]);
    far_git(&p, &["commit", "-q", "-m", "init"]);
    p
}

#[test]
fn a_task_on_a_host_is_reviewed_and_landed_there() {
    if !have_tmux() {
        unmet("tmux", "FM_REQUIRE_TMUX");
        return;
    }
    let Some(sshd) = Sshd::start() else { return };
    let project = far_project(&sshd);
    let h = TestHome::new();
    h.write("config/firstmate.toml", sshd.host_toml("far", 10_000));
    h.fm("brief")
        .args([
            "r1",
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
    h.fm("control")
        .args(["r1", "spawn", "--host", "far", "--project"])
        .arg(&project)
        .args(["--harness", "stand-in"])
        .stdout_has("spawned r1")
        .run();
    let wt = sshd.far_home.join("worktrees/r1");
    far_git(&wt, &["checkout", "-q", "-b", "fm/r1"]);
    sshd.far_write("worktrees/r1/work.txt", "remote work\n");
    far_git(&wt, &["add", "work.txt"]);
    far_git(&wt, &["commit", "-q", "-m", "the far work"]);
    let tip = far_git(&wt, &["rev-parse", "HEAD"]);
    // Not done yet: the gate refuses, there, and nothing moves.
    let main = far_git(&project, &["rev-parse", "main"]);
    h.fm("fm")
        .args(["land", "r1"])
        .status(1)
        .stderr_has("the done gate refuses r1: no done line")
        .run();
    assert_eq!(far_git(&project, &["rev-parse", "main"]), main);
    h.fm("status")
        .args(["r1", "done", "ready in branch fm/r1"])
        .run();

    let j = h
        .fm("fm")
        .args(["review", "r1", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(j["tip"], tip.as_str());
    assert_eq!(j["base"], main.as_str());
    assert_eq!(j["commits"][0]["subject"], "the far work");
    assert_eq!(j["files"][0]["path"], "work.txt");
    assert_eq!(j["pushed"]["state"], "no-remote");
    assert_eq!(j["gate"]["verdict"], "accepted");
    h.fm("fm")
        .args(["review", "r1"])
        .stdout_has("+remote work\n")
        .run();

    // `d` in the dashboard shows the same review, loaded from the host.
    if let Some(t) = super::harness::Tmux::start() {
        let d = super::top_land::Dash::start(&t, &h);
        d.wait("the remote row", |x| x.contains("r1 "));
        d.keys(&["d"]);
        d.wait("the remote review", |x| {
            x.contains("review r1 \u{b7} file 0/1")
                && x.contains("the far work")
                && x.contains("+remote work")
        });
        d.keys(&["q"]);
    }

    h.fm("fm")
        .args(["land", "r1"])
        .stdout_regex(r"^landed r1: main fast-forwarded to [0-9a-f]{12} \(fm/r1\)\n$")
        .run();
    assert_eq!(far_git(&project, &["rev-parse", "main"]), tip);
    let far_meta = std::fs::read_to_string(sshd.far_home.join("state/r1.meta")).unwrap();
    assert!(far_meta.contains(&format!("landed={tip}\n")), "{far_meta}");
    assert!(!h.read_string("state/r1.meta").contains("landed="));
    h.fm("control")
        .args(["r1", "teardown"])
        .stdout_has("torn-down r1")
        .run();
}

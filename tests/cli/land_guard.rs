//! `fm land`'s guards around the captain's checkouts and the worker's
//! branch: ignored files in the way, a base branch in the middle of a
//! rebase, a worktree moved off its branch, a branch name that is not
//! one, and a landing asked again (real git, a stand-in worker).

use crate::control::project;
use crate::harness::{Cmd, TestHome, Tmux, git};
use crate::land::{finished, snapshot};

fn land(h: &TestHome, id: &str) -> Cmd {
    h.fm("fm").args(["land", id])
}

#[test]
fn an_ignored_file_of_the_captains_is_never_overwritten() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let proj = project(&h);
    std::fs::write(proj.join(".gitignore"), ".env\n").unwrap();
    git(&proj, &["add", ".gitignore"]);
    git(&proj, &["commit", "-q", "-m", "ignore .env"]);
    git(&proj, &["push", "-q", "origin", "main"]);
    let wt = finished(&h, &t, "i1", "local-only", "");
    // The branch force-adds the file the captain keeps untracked.
    std::fs::write(wt.join(".env"), "WORKER=1\n").unwrap();
    git(&wt, &["add", "-f", ".env"]);
    git(&wt, &["commit", "-q", "-m", "track .env"]);
    h.fm("status")
        .args(["i1", "done", "ready in branch fm/i1"])
        .run();
    std::fs::write(proj.join(".env"), "SECRET=captain\n").unwrap();
    let before = snapshot(&proj);
    land(&h, "i1")
        .status(1)
        .stderr_has("would be overwritten (.env)")
        .stderr_has("nothing was landed")
        .run();
    assert_eq!(snapshot(&proj), before);
    assert_eq!(
        std::fs::read_to_string(proj.join(".env")).unwrap(),
        "SECRET=captain\n"
    );
    // Moved away, the landing goes through.
    std::fs::remove_file(proj.join(".env")).unwrap();
    land(&h, "i1").stdout_has("main fast-forwarded").run();
}

#[test]
fn a_base_branch_in_the_middle_of_a_rebase_is_not_moved() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    finished(&h, &t, "b1", "local-only", "ready in branch fm/b1");
    let proj = h.root().join("project");
    // The captain's rebase of main stops (an exec that fails): the
    // checkout shows a detached HEAD while main is being rewritten.
    Cmd::new("git")
        .current_dir(&proj)
        .args(["rebase", "--exec", "false", "--root"])
        .status_any()
        .stdout_any()
        .stderr_any()
        .run();
    assert!(
        git(&proj, &["status"]).contains("rebase"),
        "the rebase did not stop"
    );
    let main = git(&proj, &["rev-parse", "main"]);
    land(&h, "b1")
        .status(1)
        .stderr_has("main is in the middle of a rebase in ")
        .stderr_has("nothing was landed")
        .run();
    assert_eq!(git(&proj, &["rev-parse", "main"]), main);
    git(&proj, &["rebase", "--abort"]);
    assert_eq!(git(&proj, &["rev-parse", "main"]), main);
    land(&h, "b1").stdout_has("main fast-forwarded").run();
}

#[test]
fn a_worktree_moved_off_its_branch_is_not_landed() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let wt = finished(&h, &t, "s1", "local-only", "");
    let stale = git(&wt, &["rev-parse", "HEAD"]);
    // The worker went on on another branch: the gate checks that one.
    git(&wt, &["checkout", "-q", "-b", "fm/s1-more"]);
    std::fs::write(wt.join("more.txt"), "more\n").unwrap();
    git(&wt, &["add", "more.txt"]);
    git(&wt, &["commit", "-q", "-m", "more"]);
    let proj = h.root().join("project");
    h.fm("status")
        .args(["s1", "done", "ready in branch fm/s1"])
        .run();
    let before = snapshot(&proj);
    land(&h, "s1")
        .status(1)
        .stderr_has(&format!("but its branch fm/s1 is at {}", &stale[..12]))
        .stderr_has("nothing was landed")
        .run();
    assert_eq!(snapshot(&proj), before);
}

#[test]
fn a_branch_name_that_is_a_revision_is_refused() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    finished(&h, &t, "n1", "local-only", "ready in branch fm/n1");
    let meta = h.read_string("state/n1.meta");
    let mut meta: String = meta
        .lines()
        .filter(|l| !l.starts_with("branch="))
        .flat_map(|l| [l, "\n"])
        .collect();
    meta.push_str("branch=main~1\n");
    h.write("state/n1.meta", meta);
    let proj = h.root().join("project");
    let before = snapshot(&proj);
    land(&h, "n1")
        .status(1)
        .stderr_has("n1: the branch its meta or brief records is refused")
        .stderr_has("main~1")
        .run();
    h.fm("fm")
        .args(["review", "n1", "--json"])
        .status(1)
        .stderr_has("is refused")
        .run();
    assert_eq!(snapshot(&proj), before);
    assert!(!h.read_string("state/n1.meta").contains("landed="));
}

#[test]
fn a_landing_asked_again_is_recorded_once() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    finished(&h, &t, "a1", "local-only", "ready in branch fm/a1");
    land(&h, "a1").stdout_has("fast-forwarded").run();
    land(&h, "a1").stdout_has("main already holds").run();
    land(&h, "a1").arg("--json").stdout_has("\"already\"").run();
    let events = h.read_string("state/events.jsonl");
    assert_eq!(
        events
            .lines()
            .filter(|l| l.contains("\"task.landed\""))
            .count(),
        1,
        "{events}"
    );
    let status = h.read_string("state/a1.status");
    assert_eq!(
        status.lines().filter(|l| l.contains("]: landed ")).count(),
        1,
        "{status}"
    );
}

//! `fm land`: real git (a bare remote, the captain's checkout, a worktree
//! made by spawn with a stand-in worker), a fake `gh` on `PATH` beside
//! the real push. Every refusal leaves refs and files byte-identical.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::control::{ctl, project};
use crate::harness::{Cmd, TestHome, Tmux, git};

/// A spawned task `id` of `mode` whose worker committed `work.txt` on
/// `fm/<id>` and wrote `done: <done>`; returns the worktree.
#[track_caller]
pub(crate) fn finished(h: &TestHome, t: &Tmux, id: &str, mode: &str, done: &str) -> PathBuf {
    let proj = h.root().join("project");
    if !proj.exists() {
        project(h);
    }
    h.fm("brief")
        .args([
            id,
            "demo",
            "--mode",
            mode,
            "--intent",
            "make it so",
            "--spec",
            "one commit",
        ])
        .stdout_any()
        .run();
    ctl(h, t)(&[
        id,
        "spawn",
        "--project",
        proj.to_str().unwrap(),
        "--harness",
        "stand-in",
    ])
    .stdout_any()
    .run();
    let wt = h.root().join("worktrees").join(id);
    git(&wt, &["checkout", "-q", "-b", &format!("fm/{id}")]);
    std::fs::write(wt.join("work.txt"), format!("work of {id}\n")).unwrap();
    git(&wt, &["add", "work.txt"]);
    git(
        &wt,
        &["commit", "-q", "-m", &format!("add the work of {id}")],
    );
    if !done.is_empty() {
        h.fm("status").args([id, "done", done]).run();
    }
    wt
}

/// Everything a refusal must leave alone in a repository: its refs, its
/// index and every file of its checkout.
pub(crate) fn snapshot(dir: &Path) -> String {
    let mut s = git(dir, &["for-each-ref", "--format=%(refname) %(objectname)"]);
    s.push_str(&git(
        dir,
        &["status", "--porcelain", "--untracked-files=all"],
    ));
    s.push_str(&git(dir, &["rev-parse", "HEAD"]));
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    files.sort();
    for (p, bytes) in files {
        s.push_str(&format!("\n{p}: {}", String::from_utf8_lossy(&bytes)));
    }
    s
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().is_some_and(|n| n == ".git") {
            continue;
        }
        if p.is_dir() {
            walk(root, &p, out);
        } else {
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            out.push((rel, std::fs::read(&p).unwrap()));
        }
    }
}

fn land(h: &TestHome, id: &str) -> Cmd {
    h.fm("fm").args(["land", id])
}

#[test]
fn local_only_fast_forwards_the_captains_checkout_and_records_it() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let wt = finished(&h, &t, "l1", "local-only", "ready in branch fm/l1");
    let proj = h.root().join("project");
    let tip = git(&wt, &["rev-parse", "HEAD"]);
    land(&h, "l1")
        .stdout_regex(r"^landed l1: main fast-forwarded to [0-9a-f]{12} \(fm/l1\)\n$")
        .run();
    assert_eq!(git(&proj, &["rev-parse", "main"]), tip);
    assert_eq!(
        std::fs::read_to_string(proj.join("work.txt")).unwrap(),
        "work of l1\n"
    );
    let meta = h.read_string("state/l1.meta");
    assert!(meta.contains(&format!("landed={tip}\n")), "{meta}");
    let status = h.read_string("state/l1.status");
    let last = status.lines().last().unwrap();
    assert!(
        last.starts_with("note [") && last.contains("]: landed "),
        "{status}"
    );
    let events = h.read_string("state/events.jsonl");
    let landed = events
        .lines()
        .find(|l| l.contains("\"task.landed\""))
        .expect(&events);
    assert!(
        landed.contains("\"how\":\"fast-forward\"") && landed.contains("\"tool\":\"fm\""),
        "{landed}"
    );
    // Landing again moves nothing.
    land(&h, "l1").stdout_has("main already holds").run();
    let j = land(&h, "l1").arg("--json").stdout_json().run().json();
    assert_eq!(
        (j["how"].as_str(), j["mode"].as_str(), j["commit"].as_str()),
        (Some("already"), Some("local-only"), Some(tip.as_str()))
    );
    ctl(&h, &t)(&["l1", "teardown"])
        .stdout_has("torn-down l1")
        .run();
}

#[test]
fn every_refusal_says_why_and_changes_nothing() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    land(&h, "nosuch")
        .status(1)
        .stderr("fm: error: unknown task nosuch: no meta and no brief\n")
        .run();
    h.fm("fm")
        .args(["review", "nosuch"])
        .status(1)
        .stderr("fm: error: unknown task nosuch: no meta and no brief\n")
        .run();
    // No done line: the gate refuses.
    let wt = finished(&h, &t, "r1", "local-only", "");
    let proj = h.root().join("project");
    let before = snapshot(&proj);
    land(&h, "r1")
        .status(1)
        .stderr_has("the done gate refuses r1: no done line")
        .stderr_has("nothing was landed")
        .run();
    assert_eq!(snapshot(&proj), before);
    h.fm("status")
        .args(["r1", "done", "ready in branch fm/r1"])
        .run();

    // A dirty checkout of main: refused, naming the path.
    std::fs::write(proj.join("README"), "captain's edit\n").unwrap();
    let before = snapshot(&proj);
    land(&h, "r1")
        .status(1)
        .stderr_has("uncommitted changes (README)")
        .run();
    assert_eq!(snapshot(&proj), before);
    git(&proj, &["checkout", "--", "README"]);

    // main moved on: not a fast-forward, refused naming --merge …
    std::fs::write(proj.join("other.txt"), "captain\n").unwrap();
    git(&proj, &["add", "other.txt"]);
    git(&proj, &["commit", "-q", "-m", "captain's commit"]);
    let before = snapshot(&proj);
    land(&h, "r1")
        .status(1)
        .stderr_has("is not a fast-forward")
        .stderr_has("--merge")
        .run();
    assert_eq!(snapshot(&proj), before);
    assert!(!h.read_string("state/r1.meta").contains("landed="));
    // … and with --merge, a merge commit of both.
    let old = git(&proj, &["rev-parse", "main"]);
    let tip = git(&wt, &["rev-parse", "HEAD"]);
    land(&h, "r1")
        .arg("--merge")
        .stdout_regex(r"^landed r1: merged fm/r1 \([0-9a-f]{12}\) into main as [0-9a-f]{12}\n$")
        .run();
    let parents = git(&proj, &["rev-list", "--parents", "-n1", "main"]);
    assert!(parents.ends_with(&format!("{old} {tip}")), "{parents}");
    assert!(proj.join("work.txt").exists() && proj.join("other.txt").exists());
    assert_eq!(git(&proj, &["status", "--porcelain"]), "");
}

#[test]
fn a_conflicting_merge_is_refused_and_changes_nothing() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    finished(&h, &t, "c1", "local-only", "ready in branch fm/c1");
    let proj = h.root().join("project");
    std::fs::write(proj.join("work.txt"), "the captain's own\n").unwrap();
    git(&proj, &["add", "work.txt"]);
    git(&proj, &["commit", "-q", "-m", "clash"]);
    let before = snapshot(&proj);
    land(&h, "c1")
        .arg("--merge")
        .status(1)
        .stderr_has("conflicts in work.txt")
        .run();
    assert_eq!(snapshot(&proj), before);
}

#[test]
fn a_base_branch_no_checkout_holds_is_moved_by_its_ref() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let wt = finished(&h, &t, "u1", "local-only", "ready in branch fm/u1");
    let proj = h.root().join("project");
    git(&proj, &["checkout", "-q", "-b", "captain-wip"]);
    std::fs::write(proj.join("README"), "uncommitted, elsewhere\n").unwrap();
    land(&h, "u1").stdout_has("main fast-forwarded").run();
    assert_eq!(
        git(&proj, &["rev-parse", "main"]),
        git(&wt, &["rev-parse", "HEAD"])
    );
    // The captain's checkout of another branch is untouched.
    assert_eq!(git(&proj, &["branch", "--show-current"]), "captain-wip");
    assert_eq!(
        std::fs::read_to_string(proj.join("README")).unwrap(),
        "uncommitted, elsewhere\n"
    );
    assert!(!proj.join("work.txt").exists());
}

#[test]
fn the_first_mate_needs_the_captains_grant_to_land() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    finished(&h, &t, "g1", "local-only", "ready in branch fm/g1");
    let proj = h.root().join("project");
    let before = snapshot(&proj);
    land(&h, "g1")
        .env("FM_MATE", "1")
        .status(1)
        .stderr_has("land of g1 needs the captain's grant; the captain runs: fm grant g1 land")
        .run();
    assert_eq!(snapshot(&proj), before);
    h.fm("fm").args(["grant", "g1", "land"]).stdout_any().run();
    land(&h, "g1")
        .env("FM_MATE", "1")
        .stdout_has("landed g1")
        .run();
}

/// A `gh` that records its argv and answers as a signed-in gh does.
fn fake_gh(h: &TestHome) -> PathBuf {
    let dir = h.root().join("fakebin");
    std::fs::create_dir_all(&dir).unwrap();
    let log = h.root().join("gh.log");
    let script = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nif [ \"$1 $2\" = 'pr create' ]; then echo 'Creating pull request'; echo 'https://github.example/o/r/pull/7'; fi\nexit 0\n",
        log.display()
    );
    std::fs::write(dir.join("gh"), script).unwrap();
    std::fs::set_permissions(dir.join("gh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn path_with(dir: &Path) -> String {
    format!("{}:{}", dir.display(), std::env::var("PATH").unwrap())
}

#[test]
fn direct_pr_pushes_the_branch_and_opens_a_pr_with_gh() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let wt = finished(&h, &t, "p1", "direct-PR", "");
    let remote = h.root().join("remote.git");
    // The worker pushed (the gate wants HEAD outside the worktree); the
    // remote lost the branch since, so the landing's push is a real one.
    git(&wt, &["push", "-q", "origin", "fm/p1"]);
    h.fm("status").args(["p1", "done", "pushed fm/p1"]).run();
    git(&remote, &["branch", "-q", "-D", "fm/p1"]);
    let bin = fake_gh(&h);
    land(&h, "p1")
        .env("PATH", path_with(&bin))
        .stdout_regex(
            r"^landed p1: pushed fm/p1 \([0-9a-f]{12}\); PR https://github.example/o/r/pull/7\n$",
        )
        .run();
    let tip = git(&wt, &["rev-parse", "HEAD"]);
    assert_eq!(git(&remote, &["rev-parse", "refs/heads/fm/p1"]), tip);
    assert_eq!(
        h.read_string("gh.log"),
        "auth status\npr create --head fm/p1 --base main --fill\n"
    );
    let meta = h.read_string("state/p1.meta");
    assert!(
        meta.contains("pr=https://github.example/o/r/pull/7\n"),
        "{meta}"
    );
    assert!(meta.contains(&format!("landed={tip}\n")), "{meta}");
    // The upstream is set: the review says pushed.
    h.fm("fm")
        .args(["review", "p1", "--json"])
        .stdout_has("\"state\":\"pushed\"")
        .run();

    // The PR merged, its branch deleted and pruned: the work is landed,
    // teardown needs no --force (it would without the landing's record).
    git(&remote, &["branch", "-q", "-D", "fm/p1"]);
    git(&wt, &["fetch", "-q", "--prune", "origin"]);
    let meta = h.read_string("state/p1.meta");
    h.write(
        "state/p1.meta",
        meta.replace(&format!("landed={tip}\n"), ""),
    );
    ctl(&h, &t)(&["p1", "teardown"])
        .status(1)
        .stderr_has("unreachable outside the worktree")
        .run();
    h.write("state/p1.meta", &meta);
    ctl(&h, &t)(&["p1", "teardown"])
        .stdout_has("torn-down p1")
        .run();
}

#[test]
fn without_gh_the_landing_prints_how_to_open_the_pr() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let wt = finished(&h, &t, "p2", "direct-PR", "");
    git(&wt, &["push", "-q", "origin", "fm/p2"]);
    h.fm("status").args(["p2", "done", "pushed"]).run();
    // A PATH with git but no gh.
    let dir = h.root().join("nogh");
    std::fs::create_dir_all(&dir).unwrap();
    let git_bin = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    std::os::unix::fs::symlink(git_bin.trim(), dir.join("git")).unwrap();
    land(&h, "p2")
        .env("PATH", &dir)
        .stdout_has("no PR opened")
        .stdout_has(
            "open the PR: gh pr create --head fm/p2 --base main --fill; gh is not installed",
        )
        .run();
    assert!(h.read_string("state/p2.meta").contains("landed="));
}

#[test]
fn no_mistakes_records_the_pipelines_green_pr_and_pushes_nothing() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let wt = finished(&h, &t, "n1", "no-mistakes", "");
    // The hand-off is not gated: nothing to land yet.
    h.fm("status")
        .args(["n1", "done", "handed to the pipeline"])
        .run();
    land(&h, "n1")
        .status(1)
        .stderr_has("has no gated done to land (no-mistakes hand-off")
        .run();
    git(&wt, &["push", "-q", "origin", "fm/n1"]);
    h.fm("status")
        .args([
            "n1",
            "done",
            "PR https://github.example/o/r/pull/9 checks green",
        ])
        .run();
    let remote = h.root().join("remote.git");
    let refs = |r: &Path| git(r, &["for-each-ref", "--format=%(refname) %(objectname)"]);
    let before = refs(&remote);
    let bin = fake_gh(&h);
    land(&h, "n1")
        .env("PATH", path_with(&bin))
        .stdout_regex(r"^landed n1: fm/n1 \([0-9a-f]{12}\) delivered by its pipeline; PR https://github.example/o/r/pull/9\n$")
        .run();
    assert!(!h.exists("gh.log"));
    assert_eq!(refs(&remote), before);
    let events = h.read_string("state/events.jsonl");
    assert!(events.contains("\"how\":\"recorded\""), "{events}");
}

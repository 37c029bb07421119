//! `fm-dod`: the blocks match what briefs embed, and the gate judged
//! against real repositories — a bare "remote", a project clone and a task
//! worktree made with `git worktree add`.

use std::path::PathBuf;

use crate::harness::TestHome;
use crate::harness::git;

/// A home with a bare remote, a project clone pushed to it, and a detached
/// worktree for task `t` at the default location; meta names both.
struct Fleet {
    h: TestHome,
    project: PathBuf,
    wt: PathBuf,
}

impl Fleet {
    #[track_caller]
    fn new(kind: &str, mode: &str) -> Fleet {
        let h = TestHome::new();
        let remote = h.path("remote.git");
        let project = h.path("project");
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
        git(
            &h.root(),
            &["init", "-q", "-b", "main", project.to_str().unwrap()],
        );
        std::fs::write(project.join("README"), "hello\n").unwrap();
        git(&project, &["add", "README"]);
        git(&project, &["commit", "-qm", "initial"]);
        git(
            &project,
            &["remote", "add", "origin", remote.to_str().unwrap()],
        );
        git(&project, &["push", "-q", "origin", "main"]);
        let wt = h.path("worktrees/t");
        git(
            &project,
            &[
                "worktree",
                "add",
                "-q",
                "--detach",
                wt.to_str().unwrap(),
                "main",
            ],
        );
        h.write(
            "state/t.meta",
            format!(
                "kind={kind}\nmode={mode}\nproject={}\nworktree={}\n",
                project.display(),
                wt.display()
            ),
        );
        Fleet { h, project, wt }
    }

    #[track_caller]
    fn commit(&self, what: &str) -> String {
        std::fs::write(self.wt.join(what), what).unwrap();
        git(&self.wt, &["add", what]);
        git(&self.wt, &["commit", "-qm", what]);
        git(&self.wt, &["rev-parse", "HEAD"])
    }

    fn done(&self, text: &str) {
        self.h.write(
            "state/t.status",
            format!("working: on it\ndone [at=1700000000]: {text}\n"),
        );
    }

    fn check(&self) -> crate::harness::Cmd {
        self.h.fm("dod").args(["--check", "t"])
    }
}

#[test]
fn local_only_head_on_a_project_branch_is_accepted() {
    let f = Fleet::new("ship", "local-only");
    git(&f.wt, &["checkout", "-q", "-b", "fm/t"]);
    f.commit("a");
    f.done("ready in branch fm/t");
    f.check()
        .stdout_has("accepted: head ")
        .stdout_has("refs/heads/fm/t")
        .run();
}

#[test]
fn a_head_only_in_the_worktree_is_refused_with_its_sha() {
    let f = Fleet::new("ship", "local-only");
    let sha = f.commit("detached");
    f.done("ready in branch fm/t");
    f.check()
        .status(1)
        .stdout(format!(
            "refused: named head {sha} is unreachable outside the worker copy\n"
        ))
        .run();
}

#[test]
fn direct_pr_head_on_the_remote_branch_is_accepted_and_a_stale_remote_branch_is_not() {
    let f = Fleet::new("ship", "direct-PR");
    git(&f.wt, &["checkout", "-q", "-b", "fm/t"]);
    let sha = f.commit("a");
    f.done("PR https://example.invalid/o/r/pull/1");
    // Committed on a local branch only: direct-PR needs a remote ref.
    f.check()
        .status(1)
        .stdout_has(&format!("named head {sha}"))
        .run();
    git(&f.wt, &["push", "-q", "-u", "origin", "fm/t"]);
    f.check()
        .stdout_has("accepted: ")
        .stdout_has("refs/remotes/origin/fm/t")
        .run();
    let newer = f.commit("b");
    f.check()
        .status(1)
        .stdout_has(&format!("named head {newer} is unreachable"))
        .run();
    let j =
        f.h.fm("dod")
            .args(["--check", "t", "--json"])
            .status(1)
            .stdout_json()
            .run()
            .json();
    assert_eq!(j["verdict"], "refused");
    assert_eq!(j["task"], "t");
}

#[test]
fn a_separate_clone_counts_the_project_clones_refs() {
    let f = Fleet::new("ship", "local-only");
    // The worker copy is a plain clone, so the project's refs are not shared with it.
    let clone = f.h.path("clone");
    git(
        &f.h.root(),
        &[
            "clone",
            "-q",
            f.project.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    let meta = format!(
        "kind=ship\nmode=local-only\nproject={}\nworktree={}\n",
        f.project.display(),
        clone.display()
    );
    f.h.write("state/t.meta", &meta);
    std::fs::write(clone.join("x"), "x").unwrap();
    git(&clone, &["add", "x"]);
    git(&clone, &["commit", "-qm", "x"]);
    let sha = git(&clone, &["rev-parse", "HEAD"]);
    f.done("ready in branch fm/t");
    f.check()
        .status(1)
        .stdout_has(&format!("named head {sha}"))
        .run();
    git(
        &f.project,
        &[
            "fetch",
            "-q",
            clone.to_str().unwrap(),
            "HEAD:refs/heads/fm/t",
        ],
    );
    f.check().stdout_has("refs/heads/fm/t of ").run();
    // Project branches count only for local-only.
    f.h.write("state/t.meta", meta.replace("local-only", "direct-PR"));
    f.check()
        .status(1)
        .stdout_regex(r"refused: named head [0-9a-f]{40} is unreachable outside the worker copy\n")
        .run();
}

#[test]
fn scout_and_secondmate_are_never_gated() {
    for kind in ["scout", "secondmate"] {
        let f = Fleet::new(kind, "");
        f.commit("a");
        f.done("found the cause");
        f.check().stdout_has("not gated: ").run();
    }
}

#[test]
fn no_mistakes_hand_off_is_not_gated_but_checks_green_is() {
    let f = Fleet::new("ship", "no-mistakes");
    git(&f.wt, &["checkout", "-q", "-b", "fm/t"]);
    f.commit("a");
    f.done("parser rewritten");
    f.check()
        .stdout_has("not gated: no-mistakes hand-off")
        .run();
    f.done("PR https://example.invalid/o/r/pull/3 checks green");
    f.check().status(1).stdout_has("refused: named head").run();
    git(&f.wt, &["push", "-q", "origin", "fm/t"]);
    f.check().stdout_has("accepted: ").run();
}

#[test]
fn meta_pr_and_pr_head_shortcut() {
    let f = Fleet::new("ship", "no-mistakes");
    f.commit("unpushed");
    let url = "https://example.invalid/o/r/pull/4";
    let meta = String::from_utf8(f.h.read("state/t.meta")).unwrap();
    f.h.write("state/t.meta", format!("{meta}pr={url}\npr_head=abc123\n"));
    f.done(&format!("PR {url} checks green"));
    f.check().stdout_has("accepted: PR ").run();
    f.done("PR https://example.invalid/o/r/pull/5 checks green");
    f.check()
        .status(1)
        .stdout_regex(r"refused: named head [0-9a-f]{40} is unreachable outside the worker copy\n")
        .run();
}

#[test]
fn missing_or_broken_worktrees_are_refused_saying_which() {
    let f = Fleet::new("ship", "direct-PR");
    f.done("PR https://example.invalid/o/r/pull/6");
    std::fs::write(
        f.h.path("state/t.meta"),
        "kind=ship\nmode=direct-PR\nworktree=/nonexistent/wt\n",
    )
    .unwrap();
    f.check()
        .status(1)
        .stdout_has("refused: worktree missing (/nonexistent/wt)")
        .run();
    let plain = f.h.path("plain");
    std::fs::create_dir(&plain).unwrap();
    std::fs::write(
        f.h.path("state/t.meta"),
        format!("kind=ship\nmode=direct-PR\nworktree={}\n", plain.display()),
    )
    .unwrap();
    f.check().status(1).stdout_has("not a git repository").run();
    let empty = f.h.path("empty");
    git(&f.h.root(), &["init", "-q", empty.to_str().unwrap()]);
    std::fs::write(
        f.h.path("state/t.meta"),
        format!("kind=ship\nmode=direct-PR\nworktree={}\n", empty.display()),
    )
    .unwrap();
    f.check().status(1).stdout_has("no HEAD commit").run();
}

#[test]
fn line_argument_and_missing_done_line() {
    let f = Fleet::new("ship", "direct-PR");
    f.check()
        .status(1)
        .stdout_has("refused: no done line")
        .run();
    f.h.fm("dod")
        .args(["--check", "t", "--line", "working: x"])
        .status(2)
        .stderr_has("not a done status line")
        .run();
    // A fresh worktree sits on the pushed main: accepted.
    f.h.fm("dod")
        .args(["--check", "t", "--line", "done: PR https://x/1"])
        .stdout_regex(r"accepted: head [0-9a-f]{40} is on refs/remotes/origin/main\n")
        .run();
    let shas_in_text_are_ignored =
        format!("done: pushed {}", git(&f.project, &["rev-parse", "HEAD"]));
    let sha = f.commit("a");
    f.h.fm("dod")
        .args(["--check", "t", "--line", "done: PR https://x/1"])
        .status(1)
        .stdout_has("named head")
        .run();
    f.h.fm("dod")
        .args(["--check", "t", "--line", &shas_in_text_are_ignored])
        .status(1)
        .stdout_has(&sha)
        .run();
}

#[test]
fn blocks_match_what_the_brief_embeds() {
    let h = TestHome::new();
    for mode in ["no-mistakes", "direct-PR", "local-only"] {
        h.fm("brief")
            .args(["t", "webapp", "--mode", mode, "--force"])
            .stdout_regex(&format!(r"scaffolded: {} \(ship, mode={mode}; replace \{{TASK\}} and \{{FIRSTMATE_SPEC\}}\)\n(history: \S+/brief\.history/\d{{3}}\.md\nnotice: no live worker notified \(no pane recorded\)\n)?", regex::escape(&h.path("data/t/brief.md").display().to_string()))).run();
        let brief = String::from_utf8(h.read("data/t/brief.md")).unwrap();
        let block = h.fm("dod").args([mode, "t"]).stdout_any().run().stdout();
        assert!(brief.ends_with(&block), "{mode}:\n{block}");
        assert!(block.starts_with(&format!(
            "# Definition of done\n\nDelivery contract: mode={mode}\nShip branch: fm/t\n"
        )));
    }
    let b = h
        .fm("dod")
        .args(["local-only", "x", "--branch", "topic/x"])
        .stdout_any()
        .run()
        .stdout();
    assert!(
        b.contains("Ship branch: topic/x\n") && b.contains("ready in branch topic/x"),
        "{b}"
    );
    h.fm("dod")
        .args(["yolo", "t"])
        .status(2)
        .stderr_has("unknown mode")
        .run();
    h.fm("dod")
        .args(["direct-PR", "../t"])
        .status(2)
        .stderr("fm-dod: error: invalid task id \"../t\": must start with a letter or digit\n")
        .run();
    h.fm("dod")
        .status(2)
        .stderr("fm-dod: error: give <mode> <id>, or --check <id> (see --help)\n")
        .run();
}

#[test]
fn a_slow_git_is_bounded() {
    // The bound itself is unit-tested in git.rs with a shortened timeout; here
    // the gate must at least finish promptly on a real repository.
    let f = Fleet::new("ship", "direct-PR");
    f.commit("a");
    f.done("PR https://x/1");
    let t = std::time::Instant::now();
    f.check()
        .status(1)
        .stdout_regex(r"refused: named head [0-9a-f]{40} is unreachable outside the worker copy\n")
        .run();
    assert!(t.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn a_plain_directory_inside_another_clone_is_not_judged_by_that_clone() {
    // The home itself is a clone whose HEAD is on origin: `git -C` from a
    // plain directory under it would answer for the home.
    let h = TestHome::new();
    let remote = h.path("remote.git");
    git(&h.root(), &["init", "-q", "-b", "master"]);
    git(&h.root(), &["add", "config"]);
    git(&h.root(), &["commit", "-qm", "home"]);
    git(
        &h.root(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    git(
        &h.root(),
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    git(&h.root(), &["push", "-q", "origin", "master"]);
    git(&h.root(), &["fetch", "-q", "origin"]);
    let wt = h.path("worktrees/t9");
    std::fs::create_dir_all(&wt).unwrap();
    h.write(
        "state/t9.meta",
        format!("kind=ship\nmode=direct-PR\nworktree={}\n", wt.display()),
    );
    h.fm("dod")
        .args([
            "--check",
            "t9",
            "--line",
            "done: PR https://github.com/o/r/pull/9",
        ])
        .status(1)
        .stdout_has("refused: worktree is not a git repository")
        .stdout_has(wt.to_str().unwrap())
        .run();
}

#[test]
fn no_mistakes_final_lines_in_other_forms_are_gated() {
    let f = Fleet::new("ship", "no-mistakes");
    git(&f.wt, &["checkout", "-q", "-b", "fm/t"]);
    let sha = f.commit("a");
    for text in [
        "PR: https://example.invalid/o/r/pull/3 checks green",
        "PR #3 checks green",
        "pr https://example.invalid/o/r/pull/3 checks green",
        "PR https://example.invalid/o/r/pull/3",
        "PR#3",
    ] {
        f.done(text);
        f.check()
            .status(1)
            .stdout_has(&format!("refused: named head {sha}"))
            .run();
    }
    f.done("parser rewritten, pipeline started");
    f.check()
        .stdout_has("not gated: no-mistakes hand-off")
        .run();
    // The meta shortcut still finds the URL after `PR:`.
    let url = "https://example.invalid/o/r/pull/3";
    let meta = String::from_utf8(f.h.read("state/t.meta")).unwrap();
    f.h.write("state/t.meta", format!("{meta}pr={url}\npr_head={sha}\n"));
    f.done(&format!("PR: {url}, checks green"));
    f.check().stdout_has(&format!("accepted: PR {url}")).run();
}

#[test]
fn no_mistakes_done_lines_that_only_mention_a_pr_are_the_hand_off() {
    let f = Fleet::new("ship", "no-mistakes");
    git(&f.wt, &["checkout", "-q", "-b", "fm/t"]);
    f.commit("unpushed");
    for text in [
        "addressed the PR feedback from last week",
        "PR review comments answered, pipeline started",
        "opened https://example.invalid/o/r/pull/3",
    ] {
        f.h.fm("dod")
            .args(["--check", "t", "--line", &format!("done: {text}")])
            .stdout_has("not gated: no-mistakes hand-off")
            .run();
    }
}

#[test]
fn a_scout_or_secondmate_without_kind_in_meta_is_known_by_its_brief() {
    let h = TestHome::new();
    h.fm("brief")
        .args(["sc", "proj", "--scout"])
        .stdout(format!(
            "scaffolded: {} (scout; replace {{TASK}} and {{FIRSTMATE_SPEC}})\n",
            h.path("data/sc/brief.md").display()
        ))
        .run();
    h.fm("brief")
        .args(["sm", "--secondmate", "--no-projects"])
        .stdout(format!(
            "scaffolded: {} (secondmate; replace {{TASK}})\n",
            h.path("data/sm/brief.md").display()
        ))
        .run();
    for id in ["sc", "sm"] {
        h.write(&format!("state/{id}.meta"), "harness=shell\n");
        h.fm("dod")
            .args(["--check", id, "--line", "done: found the cause"])
            .stdout_has("not gated: ")
            .run();
    }
    // Without meta at all, too.
    std::fs::remove_file(h.path("state/sc.meta")).unwrap();
    h.fm("dod")
        .args(["--check", "sc", "--line", "done: found the cause"])
        .stdout_has("not gated: scout tasks are never gated")
        .run();
}

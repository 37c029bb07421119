//! The fleet of every shape the fleet view is pinned on: real git
//! repositories in every layout, live harness screens, run records.

use std::path::{Path, PathBuf};

use super::server::Server;
use crate::config::Config;
use crate::home::Home;

/// Runs git in `dir` with a fixed identity; panics on failure; stdout.
pub(super) fn git(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["-c", "user.name=t", "-c", "user.email=t@example.invalid"];
    all.extend(args);
    let out = crate::git::run(dir, &all).unwrap();
    assert!(out.ok, "git {args:?} in {}: {}", dir.display(), out.stderr);
    out.stdout
}

pub(super) struct Fleet {
    pub(super) _dir: tempfile::TempDir,
    pub(super) root: PathBuf,
    pub(super) home: Home,
    pub(super) cfg: Config,
}

impl Fleet {
    pub(super) fn new() -> Fleet {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["config", "data", "state"] {
            std::fs::create_dir_all(root.join("home").join(d)).unwrap();
        }
        std::fs::write(root.join("home/config/firstmate.toml"), "").unwrap();
        let home = Home::at(&root.join("home")).unwrap();
        Fleet {
            _dir: dir,
            root,
            home,
            cfg: Config::default(),
        }
    }

    pub(super) fn task(&self, id: &str, meta: &str, log: &str) {
        let state = self.home.state_dir();
        std::fs::write(state.join(format!("{id}.meta")), meta).unwrap();
        if !log.is_empty() {
            std::fs::write(state.join(format!("{id}.status")), log).unwrap();
        }
    }

    pub(super) fn state(&self, name: &str, text: &str) {
        std::fs::write(self.home.state_dir().join(name), text).unwrap();
    }

    /// A project with a bare `origin` and one pushed commit on `main`.
    pub(super) fn project(&self, name: &str) -> PathBuf {
        let p = self.root.join(name);
        let origin = self.root.join(format!("{name}-origin.git"));
        std::fs::create_dir_all(&p).unwrap();
        git(
            &self.root,
            &["init", "-q", "--bare", origin.to_str().unwrap()],
        );
        git(&p, &["init", "-q", "-b", "main"]);
        git(&p, &["commit", "-q", "--allow-empty", "-m", "base"]);
        git(&p, &["remote", "add", "origin", origin.to_str().unwrap()]);
        git(&p, &["push", "-q", "origin", "main"]);
        p
    }

    /// A worktree of `project` on `fm/<id>` with one commit of its own.
    pub(super) fn worktree(&self, project: &Path, id: &str) -> PathBuf {
        let wt = self.root.join(format!("wt/{id}"));
        git(
            project,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &format!("fm/{id}"),
                wt.to_str().unwrap(),
            ],
        );
        git(
            &wt,
            &["commit", "-q", "--allow-empty", "-m", &format!("work {id}")],
        );
        wt
    }

    pub(super) fn ship(
        &self,
        id: &str,
        project: &Path,
        wt: &Path,
        mode: &str,
        extra: &str,
        log: &str,
    ) {
        self.task(
            id,
            &format!(
                "kind=ship\nmode={mode}\nrepo=r\nproject={}\nworktree={}\nbranch=fm/{id}\n{extra}",
                project.display(),
                wt.display()
            ),
            log,
        );
    }
}

pub(super) const DONE: &str =
    "working [at=1700000000]: on it\ndone [at=1700000100]: PR https://example.invalid/o/r/pull/1\n";
pub(super) const WORKING: &str = "working [at=1700000000]: on it\n";

/// Every layout and rule the fast path shortcuts, on one fleet.
#[allow(
    clippy::many_single_char_names,
    reason = "one letter per repository of the fixture"
)]
pub(super) fn build(f: &Fleet, tmux: Option<&Server>) {
    let p = f.project("p");
    let q = f.project("q");
    let head = |dir: &Path| git(dir, &["rev-parse", "HEAD"]);

    // Run records: attributed, another branch, HEAD behind the run's head
    // (ancestor), the run's head elsewhere (not an ancestor).
    let wt = f.worktree(&p, "run-ok");
    f.ship("run-ok", &p, &wt, "no-mistakes", "", WORKING);
    f.state(
        "run-ok.run",
        &format!("status=running\nbranch=fm/run-ok\nhead={}\n", head(&wt)),
    );
    let wt = f.worktree(&p, "run-other");
    f.ship("run-other", &p, &wt, "no-mistakes", "", WORKING);
    f.state(
        "run-other.run",
        &format!("status=ci\nbranch=fm/else\nhead={}\n", head(&wt)),
    );
    let wt = f.worktree(&p, "run-ahead");
    let behind = head(&wt);
    git(&wt, &["commit", "-q", "--allow-empty", "-m", "more"]);
    let ahead = head(&wt);
    git(&wt, &["reset", "-q", "--hard", &behind]);
    f.ship("run-ahead", &p, &wt, "no-mistakes", "", WORKING);
    f.state(
        "run-ahead.run",
        &format!("status=awaiting_approval\ngate=review\nfindings=1\nbranch=refs/heads/fm/run-ahead\nhead={ahead}\n"),
    );
    let wt = f.worktree(&p, "run-stale");
    let old = head(&wt);
    git(&wt, &["commit", "-q", "--allow-empty", "-m", "moved on"]);
    f.ship(
        "run-stale",
        &p,
        &wt,
        "no-mistakes",
        "",
        "needs-decision [key=k]: which?\n",
    );
    f.state(
        "run-stale.run",
        &format!("status=passed\npr=https://x/1\nbranch=fm/run-stale\nhead={old}\n"),
    );

    // Done ships: pushed, not pushed, local-only (the project's branches
    // count), a project that is another clone lacking the commit, the
    // no-mistakes hand-off and its pr/pr_head shortcut, a scout.
    let wt = f.worktree(&p, "done-pushed");
    git(&wt, &["push", "-q", "origin", "fm/done-pushed"]);
    f.ship("done-pushed", &p, &wt, "direct-PR", "", DONE);
    let wt = f.worktree(&p, "done-unpushed");
    f.ship("done-unpushed", &p, &wt, "direct-PR", "", DONE);
    let wt = f.worktree(&p, "done-local");
    f.ship(
        "done-local",
        &p,
        &wt,
        "local-only",
        "",
        "done: ready in branch fm/done-local\n",
    );
    let wt = f.worktree(&p, "done-elsewhere");
    f.ship("done-elsewhere", &q, &wt, "direct-PR", "", DONE);
    let wt = f.worktree(&p, "done-handoff");
    f.ship(
        "done-handoff",
        &p,
        &wt,
        "no-mistakes",
        "",
        "done: parser rewritten\n",
    );
    let wt = f.worktree(&p, "done-green");
    f.ship(
        "done-green",
        &p,
        &wt,
        "no-mistakes",
        "pr=https://example.invalid/o/r/pull/7\npr_head=abc\n",
        "done: PR https://example.invalid/o/r/pull/7 checks green\n",
    );
    let wt = f.worktree(&p, "scout-done");
    f.task(
        "scout-done",
        &format!("kind=scout\nworktree={}\n", wt.display()),
        "done: found it\n",
    );
    // No kind in meta: the brief's frontmatter says scout.
    let wt = f.worktree(&p, "brief-kind");
    f.task(
        "brief-kind",
        &format!("worktree={}\nmode=direct-PR\n", wt.display()),
        DONE,
    );
    std::fs::create_dir_all(
        f.home
            .task_data(&crate::TaskId::parse("brief-kind").unwrap()),
    )
    .unwrap();
    std::fs::write(
        f.home.brief(&crate::TaskId::parse("brief-kind").unwrap()),
        "---\nkind: scout\n---\n# brief\n",
    )
    .unwrap();

    // Worktrees that are not what they should be.
    f.ship(
        "wt-gone",
        &p,
        &f.root.join("wt/none"),
        "direct-PR",
        "",
        DONE,
    );
    let plain = f.root.join("wt/plain");
    std::fs::create_dir_all(&plain).unwrap();
    f.ship("wt-plain", &p, &plain, "direct-PR", "", DONE);
    let nested = p.join("nested");
    std::fs::create_dir_all(&nested).unwrap();
    f.ship("wt-nested", &p, &nested, "direct-PR", "", DONE);
    f.state("wt-nested.run", "status=running\nbranch=main\nhead=0000\n");

    // Unusual git layouts: a detached HEAD (pushed and not), a symbolic
    // ref, a gitdir that moved away, packed refs, a repository with no
    // remote refs at all, reftable.
    let wt = f.worktree(&p, "detached");
    git(&wt, &["checkout", "-q", "--detach"]);
    f.ship("detached", &p, &wt, "direct-PR", "", DONE);
    let wt = f.worktree(&p, "symref");
    git(
        &wt,
        &[
            "symbolic-ref",
            "refs/heads/alias-symref",
            "refs/heads/fm/symref",
        ],
    );
    git(&wt, &["symbolic-ref", "HEAD", "refs/heads/alias-symref"]);
    f.ship("symref", &p, &wt, "direct-PR", "", DONE);
    f.state(
        "symref.run",
        &format!("status=failed\nbranch=fm/symref\nhead={}\n", head(&wt)),
    );
    let wt = f.worktree(&p, "moved");
    std::fs::write(
        wt.join(".git"),
        format!("gitdir: {}\n", f.root.join("gone/.git").display()),
    )
    .unwrap();
    f.ship("moved", &p, &wt, "direct-PR", "", DONE);
    f.state("moved.run", "status=running\nbranch=fm/moved\nhead=1234\n");
    let wt = f.worktree(&q, "packed");
    git(&wt, &["push", "-q", "origin", "fm/packed"]);
    let wt2 = f.worktree(&q, "packed-unpushed");
    git(&q, &["pack-refs", "--all"]);
    f.ship("packed", &q, &wt, "direct-PR", "", DONE);
    f.ship("packed-unpushed", &q, &wt2, "direct-PR", "", DONE);
    f.state(
        "packed.run",
        &format!("status=running\nbranch=fm/packed\nhead={}\n", head(&wt)),
    );
    let lone = f.root.join("lone");
    std::fs::create_dir_all(&lone).unwrap();
    git(&lone, &["init", "-q", "-b", "main"]);
    git(&lone, &["commit", "-q", "--allow-empty", "-m", "x"]);
    f.ship("lone", &lone, &lone, "direct-PR", "", DONE);
    f.ship(
        "lone-local",
        &lone,
        &lone,
        "local-only",
        "",
        "done: ready in branch main\n",
    );
    let rt = f.root.join("reftable");
    std::fs::create_dir_all(&rt).unwrap();
    if crate::git::run(&rt, &["init", "-q", "-b", "main", "--ref-format=reftable"])
        .unwrap()
        .ok
    {
        git(&rt, &["commit", "-q", "--allow-empty", "-m", "x"]);
        f.ship(
            "reftable",
            &rt,
            &rt,
            "local-only",
            "",
            "done: ready in branch main\n",
        );
        f.state(
            "reftable.run",
            &format!("status=running\nbranch=main\nhead={}\n", head(&rt)),
        );
    }

    // Plain tasks: no log, a paused one, a secondmate, a bad busy record.
    f.task("empty", "kind=secondmate\n", "");
    f.task("paused", "kind=secondmate\n", "paused: later\n");
    f.task("busy-no-pane", "kind=secondmate\n", WORKING);
    f.state("busy-no-pane.busy", "busy 1800000000 hook\n");
    std::fs::create_dir_all(f.home.state_dir().join("empty.inbox/handled")).unwrap();
    f.state(
        "empty.inbox/001.msg",
        "schema=fm-inbox.v1\nat=2026-01-01T00:00:00Z\nfrom=captain\n--\nhi\n",
    );
    f.state(
        "empty.inbox/002.msg",
        "schema=fm-inbox.v1\nat=2026-01-01T00:00:00Z\nfrom=captain\n--\nhi\n",
    );

    let Some(t) = tmux else { return };
    let s = t.socket();
    let bin = f.root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let sleep = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("sleep"))
        .find(|p| p.is_file())
        .expect("sleep on PATH");
    for name in ["claude-agent", "codex"] {
        std::os::unix::fs::symlink(&sleep, bin.join(name)).unwrap();
    }
    let pane = |id: &str, harness: &str, pane: &str, log: &str| {
        let h = if harness.is_empty() {
            String::new()
        } else {
            format!("harness={harness}\n")
        };
        f.task(
            id,
            &format!("kind=secondmate\n{h}pane={pane}\ntmux_socket={s}\n"),
            log,
        );
    };
    let idle = t.screen("claude/idle-fresh", &bin.join("claude-agent"));
    pane("claude-idle", "claude", &idle, WORKING);
    let busy = t.screen("claude/busy-streaming", &bin.join("claude-agent"));
    pane("claude-busy", "claude", &busy, WORKING);
    // The same pane twice: one capture serves both.
    pane("claude-busy-twin", "claude", &busy, "");
    let codex = t.screen("codex/idle-after-turn", &bin.join("codex"));
    pane(
        "codex-idle",
        "codex",
        &codex,
        "needs-decision [key=db]: which db\n",
    );
    let codex_busy = t.screen("codex/busy-tool", &bin.join("codex"));
    pane("codex-busy", "codex", &codex_busy, "");
    // claude's screen, but the foreground command is not codex's.
    pane("codex-exited", "codex", &idle, WORKING);
    // Nothing busy on the screen, the record says busy: it stands (an
    // empty claude composer would overrule it; one holding text does not
    // while the record is fresh).
    let hooked = t.screen("claude/after-interrupt", &bin.join("claude-agent"));
    pane("claude-hook-busy", "claude", &hooked, WORKING);
    f.state("claude-hook-busy.busy", "busy 1800000000 stop-hook\n");
    let shell = t.window("exec bash --norc --noprofile");
    pane("shell-exited", "claude", &shell, WORKING);
    let dead = t.window("exit 0");
    pane("dead", "claude", &dead, "failed: crashed\n");
    pane("gone", "claude", "%999", "");
    pane("no-harness", "", &idle, "");
    pane("shell-harness", "shell", &shell, "");
    f.task(
        "no-server",
        "kind=secondmate\nharness=claude\npane=%1\ntmux_socket=fm-test-none-at-all\n",
        "",
    );
    // A ship whose pane is gone and whose done reaches the gate by rule 3.
    let wt = f.worktree(&p, "gone-done");
    f.ship(
        "gone-done",
        &p,
        &wt,
        "direct-PR",
        &format!("harness=claude\npane=%998\ntmux_socket={s}\n"),
        DONE,
    );
    for (p, cmd) in [(&idle, "claude-agent"), (&codex, "codex"), (&shell, "bash")] {
        let mut ok = false;
        for _ in 0..300 {
            if t.command_of(p) == cmd {
                ok = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(ok, "pane {p} never ran {cmd}");
    }
    let mut dead_ok = false;
    for _ in 0..300 {
        if t.run(&["display-message", "-p", "-t", &dead, "#{pane_dead}"]) == "1" {
            dead_ok = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(dead_ok, "pane {dead} never died");
}

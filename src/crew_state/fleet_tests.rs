//! The fleet view pinned: one fleet — real git repositories in every
//! layout the file reader meets or hands back to git, live tmux panes
//! drawing real harness screens, dead, gone and shell panes, run records,
//! `done` ships pushed and not — must read as its snapshots, byte for byte
//! as `--json` (what differs from run to run masked), through a one-view
//! reader and through a kept reader frame after frame. The snapshots were
//! taken when the view was checked against the plain implementation it
//! replaced.

use std::path::{Path, PathBuf};

use super::{FleetReader, Row};
use crate::config::Config;
use crate::home::Home;
use crate::tmux::pane::Tmux;

fn new_rows(reader: &mut FleetReader, home: &Home, cfg: &Config, now: u64) -> Vec<Row> {
    let mut rows = Vec::new();
    reader
        .fleet(home, cfg, now, &mut |r| {
            rows.push(r);
            Ok(())
        })
        .unwrap();
    rows
}

fn json(rows: &[Row]) -> String {
    serde_json::to_string_pretty(rows).unwrap()
}

/// The fleet view's `--json` pinned as snapshot `name`, with what differs
/// from run to run masked: the temporary root, commit ids, pane ids, the
/// tmux socket's process id, times and ages.
/// Without tmux (a run that does not require it) the fleet has no panes
/// and nothing is pinned.
fn pin(name: &str, tmux: bool, root: &Path, json: &str) {
    if !tmux {
        return;
    }
    let text = json.replace(root.to_str().unwrap(), "[ROOT]");
    let filters = vec![
        (r#""age_secs": [0-9]+"#, r#""age_secs": "[AGE]""#),
        (r"fm-test-equiv-[0-9]+", "fm-test-equiv-[PID]"),
        (r"\b[0-9a-f]{40}\b", "[COMMIT]"),
        (r"\b[0-9a-f]{7,12}\b", "[SHORT]"),
        (r"%[0-9]+", "%[PANE]"),
        (r"\b1[7-9][0-9]{8}\b", "[TIME]"),
        (
            r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z",
            "[STAMP]",
        ),
    ];
    insta::with_settings!({ filters => filters, prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(name, text);
    });
}

/// Runs git in `dir` with a fixed identity; panics on failure; stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["-c", "user.name=t", "-c", "user.email=t@example.invalid"];
    all.extend(args);
    let out = crate::git::run(dir, &all).unwrap();
    assert!(out.ok, "git {args:?} in {}: {}", dir.display(), out.stderr);
    out.stdout
}

/// A private tmux server, killed on drop.
struct Server {
    tmux: Tmux,
    /// The next window index: each window gets its own, as tmux's own
    /// choice of the next free index can collide ("index 5 in use").
    next: std::cell::Cell<u32>,
}

impl Server {
    /// `None` when tmux is missing (a failure with `FM_REQUIRE_TMUX=1`).
    fn start(tag: &str) -> Option<Server> {
        let ok = std::process::Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            assert!(
                std::env::var_os("FM_REQUIRE_TMUX").is_none(),
                "tmux is required (FM_REQUIRE_TMUX) but missing"
            );
            crate::output::err_line("skipped: tmux is not installed");
            return None;
        }
        let socket = format!("fm-test-{tag}-{}", std::process::id());
        let s = Server {
            tmux: Tmux::new(&socket),
            next: std::cell::Cell::new(100),
        };
        s.run(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "120",
            "-y",
            "40",
        ]);
        s.run(&["set", "-g", "remain-on-exit", "on"]);
        Some(s)
    }

    fn socket(&self) -> &str {
        self.tmux.socket.as_deref().unwrap()
    }

    fn run(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("tmux")
            .args(["-L", self.socket()])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A window running `script` under `sh`; its pane id.
    fn window(&self, script: &str) -> String {
        // Each window gets its own index, and a failure says what tmux
        // said (a busy machine has been seen to refuse one).
        let mut said = String::new();
        for _ in 0..5 {
            let target = format!("t:{}", self.next.get());
            self.next.set(self.next.get() + 1);
            let args = [
                "new-window",
                "-d",
                "-P",
                "-F",
                "#{pane_id}",
                "-t",
                &target,
                "sh",
                "-c",
                script,
            ];
            let out = std::process::Command::new("tmux")
                .args(["-L", self.socket()])
                .args(args)
                .output()
                .unwrap();
            let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if out.status.success() && id.starts_with('%') {
                return id;
            }
            said = format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr));
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("tmux new-window failed: {said}");
    }

    /// A window drawing a captured harness screen, then running `program`
    /// (a name tmux shows as the foreground command).
    fn screen(&self, name: &str, program: &Path) -> String {
        let file = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("tests/fixtures/screens/{name}.ansi.txt"));
        assert!(file.is_file(), "{}", file.display());
        self.window(&format!(
            "printf '\\033[H\\033[2J'; head -c -1 '{}'; exec '{}' 100000",
            file.display(),
            program.display()
        ))
    }

    fn command_of(&self, pane: &str) -> String {
        self.run(&[
            "display-message",
            "-p",
            "-t",
            pane,
            "#{pane_current_command}",
        ])
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

struct Fleet {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: Home,
    cfg: Config,
}

impl Fleet {
    fn new() -> Fleet {
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

    fn task(&self, id: &str, meta: &str, log: &str) {
        let state = self.home.state_dir();
        std::fs::write(state.join(format!("{id}.meta")), meta).unwrap();
        if !log.is_empty() {
            std::fs::write(state.join(format!("{id}.status")), log).unwrap();
        }
    }

    fn state(&self, name: &str, text: &str) {
        std::fs::write(self.home.state_dir().join(name), text).unwrap();
    }

    /// A project with a bare `origin` and one pushed commit on `main`.
    fn project(&self, name: &str) -> PathBuf {
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
    fn worktree(&self, project: &Path, id: &str) -> PathBuf {
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

    fn ship(&self, id: &str, project: &Path, wt: &Path, mode: &str, extra: &str, log: &str) {
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

const DONE: &str =
    "working [at=1700000000]: on it\ndone [at=1700000100]: PR https://example.invalid/o/r/pull/1\n";
const WORKING: &str = "working [at=1700000000]: on it\n";

/// Every layout and rule the fast path shortcuts, on one fleet.
#[allow(
    clippy::many_single_char_names,
    reason = "one letter per repository of the fixture"
)]
fn build(f: &Fleet, tmux: Option<&Server>) {
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

/// The states the fixture is meant to show, so the comparison is not
/// between two equally empty answers.
fn expect_states(rows: &[Row], tmux: bool) {
    let state = |id: &str| {
        let r = rows
            .iter()
            .find(|r| r.id == id)
            .unwrap_or_else(|| panic!("no row {id}"));
        format!("{} {} {}", r.state.as_str(), r.source.as_str(), r.detail)
    };
    assert_eq!(state("run-ok"), "working run validating (running)");
    assert_eq!(state("run-other"), "working status-log on it");
    assert_eq!(state("run-ahead"), "parked run parked at review: 1 finding");
    assert_eq!(state("run-stale"), "parked status-log which?");
    assert_eq!(
        state("done-pushed"),
        "done status-log PR https://example.invalid/o/r/pull/1"
    );
    assert!(state("done-unpushed").starts_with("blocked status-log named head "));
    assert_eq!(
        state("done-local"),
        "done status-log ready in branch fm/done-local"
    );
    assert!(state("done-elsewhere").contains("unreachable outside the worker copy"));
    assert_eq!(state("done-handoff"), "done status-log parser rewritten");
    assert!(state("done-green").starts_with("done status-log"));
    assert_eq!(state("scout-done"), "done status-log found it");
    assert!(state("brief-kind").starts_with("done status-log"));
    assert_eq!(state("wt-gone"), "unknown none worktree gone (torn down?)");
    assert!(
        state("wt-plain").contains("not a git repository"),
        "{}",
        state("wt-plain")
    );
    assert!(state("wt-nested").contains("not a git repository"));
    assert!(state("detached").starts_with("blocked"));
    assert!(
        state("symref").starts_with("failed run run failed"),
        "{}",
        state("symref")
    );
    assert!(
        state("moved").contains("not a git repository"),
        "{}",
        state("moved")
    );
    assert_eq!(state("packed"), "working run validating (running)");
    assert!(state("packed-unpushed").starts_with("blocked"));
    assert!(state("lone").starts_with("blocked"));
    assert!(state("lone-local").starts_with("done"));
    if !tmux {
        return;
    }
    assert_eq!(state("claude-idle"), "working status-log on it");
    assert_eq!(state("claude-busy"), "working pane busy (screen)");
    assert_eq!(state("claude-busy-twin"), "working pane busy (screen)");
    assert_eq!(state("codex-idle"), "parked status-log which db");
    assert_eq!(state("codex-busy"), "working pane busy (screen)");
    assert_eq!(state("codex-exited"), "exited pane agent exited");
    assert_eq!(state("claude-hook-busy"), "working pane busy (stop-hook)");
    assert_eq!(state("shell-exited"), "exited pane agent exited");
    assert_eq!(state("dead"), "failed status-log crashed");
    assert_eq!(state("gone"), "exited pane pane gone");
    assert_eq!(state("no-harness"), "idle pane agent alive, no status yet");
    assert_eq!(state("no-server"), "exited pane pane gone");
    assert!(state("gone-done").starts_with("blocked status-log named head "));
}

/// The rows a fresh one-view reader reads.
fn one_view(home: &Home, cfg: &Config, now: u64) -> Vec<Row> {
    new_rows(&mut FleetReader::new(), home, cfg, now)
}

#[test]
fn the_fleet_view_reads_as_pinned() {
    let server = Server::start("equiv");
    let f = Fleet::new();
    build(&f, server.as_ref());
    let now = crate::clock::now();
    let one = one_view(&f.home, &f.cfg, now);
    expect_states(&one, server.is_some());
    pin("fleet_view", server.is_some(), &f.root, &json(&one));
    // A kept reader, frame after frame: the first reads everything, a
    // frame long enough after the files were written reuses them.
    let mut kept = FleetReader::kept();
    assert_eq!(json(&new_rows(&mut kept, &f.home, &f.cfg, now)), json(&one));
    let tasks = one.len();
    assert_eq!(kept.stats().reread, tasks);
    let later = json(&one_view(&f.home, &f.cfg, now + 5));
    pin("fleet_view_later", server.is_some(), &f.root, &later);
    // Enough frames for every file to be watched, so the changes below
    // are seen through the file events as well as the looks.
    for _ in 0..4 {
        assert_eq!(json(&new_rows(&mut kept, &f.home, &f.cfg, now + 5)), later);
    }
    assert!(kept.stats().reread < tasks / 4, "{:?}", kept.stats());
    // Push the unpushed ship, tear a worktree down, end a run, append a
    // line: the next frames see each change.
    let wt = f.root.join("wt/done-unpushed");
    git(&wt, &["push", "-q", "origin", "fm/done-unpushed"]);
    std::fs::remove_dir_all(f.root.join("wt/scout-done")).unwrap();
    f.state("run-ok.run", "status=passed\nbranch=fm/run-ok\nhead=0\n");
    let paused = crate::TaskId::parse("paused").unwrap();
    crate::fsx::append_line(&f.home.status(&paused), b"working: back\n").unwrap();
    let changed = json(&one_view(&f.home, &f.cfg, now + 10));
    pin("fleet_view_changed", server.is_some(), &f.root, &changed);
    for _ in 0..2 {
        assert_eq!(
            json(&new_rows(&mut kept, &f.home, &f.cfg, now + 10)),
            changed
        );
    }
    let rows = new_rows(&mut kept, &f.home, &f.cfg, now + 10);
    let state = |id: &str| rows.iter().find(|r| r.id == id).unwrap().state;
    assert_eq!(
        state("done-unpushed"),
        super::State::Done,
        "the push is seen"
    );
    assert_eq!(
        state("scout-done"),
        super::State::Unknown,
        "the teardown is seen"
    );
    assert_eq!(
        state("paused"),
        super::State::Working,
        "the new line is seen"
    );
}

/// The view captures screens without `-e` (`tmux::batch`): every captured
/// harness screen, drawn in a real pane, must read the same plain as a
/// capture with escapes does — line for line, and to the dialog and busy
/// rules of every built-in profile.
#[test]
fn plain_captures_read_as_escaped_ones() {
    use crate::tmux::pane::Pane;
    use crate::tmux::screen::{Screen, screen_busy, screen_dialog};
    let Some(server) = Server::start("plain") else {
        return;
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/screens");
    let mut names: Vec<String> = Vec::new();
    for harness in std::fs::read_dir(&dir).unwrap() {
        let harness = harness.unwrap().path();
        if !harness.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&harness).unwrap() {
            let file = file.unwrap().file_name().into_string().unwrap();
            if let Some(stem) = file.strip_suffix(".ansi.txt") {
                let h = harness.file_name().unwrap().to_string_lossy();
                names.push(format!("{h}/{stem}"));
            }
        }
    }
    names.sort();
    assert!(names.len() >= 20, "{names:?}");
    let sleep = PathBuf::from("sleep");
    let panes: Vec<String> = names.iter().map(|n| server.screen(n, &sleep)).collect();
    // Every pane has drawn its screen once its program runs.
    for p in &panes {
        let mut ok = false;
        for _ in 0..250 {
            if server.command_of(p) == "sleep" {
                ok = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(ok, "pane {p} never drew");
    }
    let refs: Vec<&str> = panes.iter().map(String::as_str).collect();
    let snap = crate::tmux::batch::snapshot(&server.tmux, false, &refs, 0).unwrap();
    let profiles: Vec<_> = crate::harness::BUILTINS
        .iter()
        .filter_map(|n| crate::harness::builtin(n))
        .collect();
    let mut busy_seen = 0;
    let mut dialogs_seen = 0;
    let mut with_escapes = 0;
    for (name, pane) in names.iter().zip(&panes) {
        let plain = &snap
            .screens
            .get(pane)
            .unwrap_or_else(|| panic!("{name}"))
            .text;
        let escaped = Pane::capture(&server.tmux, pane, 0).unwrap();
        with_escapes += usize::from(plain != &escaped);
        assert_eq!(
            Screen::parse_text(plain).plain(),
            Screen::parse(&escaped).plain(),
            "{name}"
        );
        for p in &profiles {
            let dialog = screen_dialog(Some(p), plain);
            assert_eq!(
                dialog,
                screen_dialog(Some(p), &escaped),
                "{name} {}",
                p.name
            );
            let busy = screen_busy(Some(p), plain);
            assert_eq!(busy, screen_busy(Some(p), &escaped), "{name} {}", p.name);
            dialogs_seen += usize::from(dialog.is_some());
            busy_seen += usize::from(busy);
        }
    }
    // The rules did read something on these screens, and some of them
    // had escapes for the plain capture to leave out.
    assert!(
        busy_seen > 0 && dialogs_seen > 0 && with_escapes > 0,
        "{busy_seen} {dialogs_seen} {with_escapes}"
    );
}

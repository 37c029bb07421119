//! Realistic fleets for the crew-state, live-view and floor benches.
//!
//! - [`plain`]: pane-less tasks (meta, a 50-line status log, one pending
//!   inbox record): what every fleet view reads.
//! - [`Screens`]: a private tmux server whose panes each run a program that
//!   draws a real harness's screen, captured from the agent itself
//!   (`tests/fixtures/screens/<harness>/<situation>.ansi.txt`, 120x40).
//! - [`Repos`]: real git repositories (a project clone with a local bare
//!   `origin`, several projects), each with many worktrees made by `git
//!   worktree add`, one commit of its own per worktree branch, half of the
//!   branches pushed; some projects with packed refs (as after `git gc`).
//!   No remote is reached over the network.
//!
//! Homes point at these with ship metas (`worktree`, `project`, `branch`),
//! run records naming the worktree's branch and HEAD, and status logs whose
//! current line is a `done` with a PR.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A home with `config/`, `data/` and `state/`, removed on drop.
pub struct Home {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
}

impl Home {
    pub fn new() -> Home {
        let dir = tempfile::tempdir().expect("temp home");
        let root = dir.path().canonicalize().unwrap();
        for d in ["config", "data", "state"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("config/firstmate.toml"), "").unwrap();
        Home { _dir: dir, root }
    }

    pub fn state(&self, name: &str) -> PathBuf {
        self.root.join("state").join(name)
    }

    pub fn write_state(&self, name: &str, text: &str) {
        std::fs::write(self.state(name), text).unwrap();
    }

    /// An inbox with one pending record and an empty `handled/`.
    pub fn inbox(&self, id: &str) {
        let inbox = self.state(&format!("{id}.inbox"));
        std::fs::create_dir_all(inbox.join("handled")).unwrap();
        std::fs::write(
            inbox.join("001.msg"),
            "schema=fm-inbox.v1\nat=2026-01-01T00:00:00Z\nfrom=captain\n--\nhello\n",
        )
        .unwrap();
    }
}

/// A 50-line log: progress, decisions raised and resolved, prose, notes;
/// its current line is the last `working`.
pub fn log50() -> String {
    let mut log = String::new();
    for l in 0..50 {
        match l % 5 {
            0 => log.push_str(&format!("working [at={}]: step {l}\n", 1_700_000_000 + l)),
            1 => log.push_str(&format!("needs-decision [key=k{}]: question {l}\n", l % 3)),
            2 => log.push_str(&format!("resolved [key=k{}]: answered\n", l % 3)),
            3 => log.push_str("free prose from a worker\n"),
            _ => log.push_str(&format!("note: {l}\n")),
        }
    }
    log
}

/// A ship's 50-line log: progress, notes and prose, a decision raised and
/// resolved; the last line `last` (a `working` or a `done`).
pub fn ship_log(last: &str) -> String {
    let mut log = String::new();
    for l in 0..49 {
        match l % 7 {
            0 | 3 => log.push_str(&format!("working [at={}]: step {l}\n", 1_700_000_000 + l)),
            1 => log.push_str(&format!("needs-decision [key=k{l}]: which way {l}\n")),
            2 => log.push_str(&format!("resolved [key=k{}]: this way\n", l - 1)),
            4 => log.push_str("free prose from a worker\n"),
            _ => log.push_str(&format!("note: {l}\n")),
        }
    }
    log.push_str(last);
    log.push('\n');
    log
}

/// `n` pane-less tasks (`kind=secondmate`: rule 1 needs no worktree).
pub fn plain(home: &Home, n: usize) {
    let log = log50();
    for i in 0..n {
        let id = format!("task-{i:05}");
        home.write_state(&format!("{id}.meta"), "kind=secondmate\nrepo=bench\n");
        home.write_state(&format!("{id}.status"), &log);
        home.inbox(&id);
    }
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A captured screen of a real harness (`claude/idle-fresh`, …).
pub fn screen_file(name: &str) -> PathBuf {
    repo_root().join(format!("tests/fixtures/screens/{name}.ansi.txt"))
}

pub fn tmux(socket: &str, args: &[&str]) -> String {
    let out = Command::new("tmux")
        .args(["-L", socket])
        .args(args)
        .output()
        .expect("tmux");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub fn tmux_available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A private tmux server whose panes draw harness screens; killed on drop.
pub struct Screens {
    pub socket: String,
    pub panes: Vec<String>,
}

impl Screens {
    /// One 120x40 window per entry of `screens`, each running a program
    /// that clears the terminal, draws that captured screen and stays.
    pub fn new(tag: &str, screens: &[&str]) -> Screens {
        let socket = format!("fm-bench-{tag}-{}", std::process::id());
        tmux(
            &socket,
            &[
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "bench",
                "-x",
                "120",
                "-y",
                "40",
            ],
        );
        tmux(&socket, &["set", "-g", "default-size", "120x40"]);
        let panes = screens
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let file = screen_file(s);
                assert!(file.is_file(), "{}", file.display());
                // Draw without the final newline, so the 40-line screen
                // does not scroll, then wait.
                let script = format!(
                    "printf '\\033[H\\033[2J'; head -c -1 '{}'; exec sleep 1000000",
                    file.display()
                );
                tmux(
                    &socket,
                    &[
                        "new-window",
                        "-d",
                        "-P",
                        "-F",
                        "#{pane_id}",
                        "-t",
                        "bench",
                        "-n",
                        &format!("w{i}"),
                        "sh",
                        "-c",
                        &script,
                    ],
                )
            })
            .collect::<Vec<_>>();
        assert!(panes.iter().all(|p| p.starts_with('%')), "{panes:?}");
        let s = Screens { socket, panes };
        s.wait_drawn();
        s
    }

    /// Waits until every pane runs `sleep` (its screen is drawn).
    fn wait_drawn(&self) {
        for _ in 0..500 {
            let out = tmux(
                &self.socket,
                &["list-panes", "-a", "-F", "#{pane_current_command}"],
            );
            if out.lines().filter(|l| *l == "sleep").count() == self.panes.len() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("panes never drew their screens");
    }

    /// The tmux server's pid.
    pub fn server_pid(&self) -> u32 {
        tmux(&self.socket, &["display-message", "-p", "#{pid}"])
            .parse()
            .unwrap()
    }
}

impl Drop for Screens {
    fn drop(&mut self) {
        tmux(&self.socket, &["kill-server"]);
    }
}

/// `n` tasks whose panes draw `screens` in turn (a claude idle screen, …):
/// ships in plain directories under `worktrees/`, harness `harness`, a
/// 50-line log and one pending record each.
pub fn live(home: &Home, screens: &Screens, harness: &str) {
    let log = ship_log("working [at=1700000100]: on it");
    for (i, pane) in screens.panes.iter().enumerate() {
        let id = format!("live-{i:04}");
        let wt = home.root.join(format!("worktrees/{id}"));
        std::fs::create_dir_all(&wt).unwrap();
        home.write_state(
            &format!("{id}.meta"),
            &format!(
                "kind=ship\nmode=direct-PR\nrepo=bench\nworktree={}\nbranch=fm/{id}\nharness={harness}\npane={pane}\ntmux_socket={}\nwindow=w{i}\n",
                wt.display(),
                screens.socket
            ),
        );
        home.write_state(&format!("{id}.status"), &log);
        home.inbox(&id);
    }
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.invalid")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.invalid")
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn git_available() -> bool {
    Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// One task's worktree.
pub struct Worktree {
    pub id: String,
    pub path: PathBuf,
    pub project: PathBuf,
    pub repo: String,
    pub branch: String,
    pub head: String,
    /// The branch is on `origin` (so a `done` passes the gate).
    pub pushed: bool,
}

/// Projects with worktrees, removed on drop.
pub struct Repos {
    _dir: tempfile::TempDir,
    pub worktrees: Vec<Worktree>,
}

impl Repos {
    /// `repos` projects with `per_repo` worktrees each; every other branch
    /// pushed; the refs of every other project packed.
    pub fn new(repos: usize, per_repo: usize) -> Repos {
        let dir = tempfile::tempdir().expect("temp repos");
        let root = dir.path().canonicalize().unwrap();
        let mut worktrees = Vec::new();
        for r in 0..repos {
            let name = format!("proj{r}");
            let project = root.join(&name);
            let origin = root.join(format!("{name}-origin.git"));
            std::fs::create_dir_all(&project).unwrap();
            git(&root, &["init", "-q", "--bare", origin.to_str().unwrap()]);
            git(&project, &["init", "-q", "-b", "main"]);
            let ids: Vec<String> = (0..per_repo)
                .map(|i| format!("task-{:05}", r * per_repo + i))
                .collect();
            fast_import(&project, &ids);
            git(
                &project,
                &["remote", "add", "origin", origin.to_str().unwrap()],
            );
            let mut push = vec![
                "push".to_string(),
                "-q".into(),
                "origin".into(),
                "main".into(),
            ];
            push.extend(ids.iter().step_by(2).map(|id| format!("fm/{id}")));
            let push: Vec<&str> = push.iter().map(String::as_str).collect();
            git(&project, &push);
            let heads = git(
                &project,
                &[
                    "for-each-ref",
                    "--format=%(refname:short) %(objectname)",
                    "refs/heads/fm/",
                ],
            );
            let head_of = |branch: &str| {
                heads
                    .lines()
                    .find_map(|l| l.strip_prefix(&format!("{branch} ")))
                    .unwrap()
                    .to_string()
            };
            for (i, id) in ids.iter().enumerate() {
                let branch = format!("fm/{id}");
                let path = root.join(format!("worktrees/{id}"));
                git(
                    &project,
                    &["worktree", "add", "-q", path.to_str().unwrap(), &branch],
                );
                worktrees.push(Worktree {
                    id: id.clone(),
                    path,
                    project: project.clone(),
                    repo: name.clone(),
                    head: head_of(&branch),
                    branch,
                    pushed: i % 2 == 0,
                });
            }
            if r % 2 == 1 {
                git(&project, &["pack-refs", "--all"]);
            }
        }
        Repos {
            _dir: dir,
            worktrees,
        }
    }
}

/// A base commit on `main` and one commit per `fm/<id>` branch on top of
/// it, in one `git fast-import`.
fn fast_import(project: &Path, ids: &[String]) {
    let mut s = String::new();
    let who = "bench <bench@example.invalid> 1700000000 +0000";
    s.push_str(&format!(
        "commit refs/heads/main\nmark :1\ncommitter {who}\ndata 5\nbase\nM 644 inline README\ndata 6\nhello\n\n"
    ));
    for (i, id) in ids.iter().enumerate() {
        let msg = format!("work on {id}");
        let body = format!("change {i}\n");
        s.push_str(&format!(
            "commit refs/heads/fm/{id}\nmark :{}\ncommitter {who}\ndata {}\n{msg}\nfrom :1\nM 644 inline work-{id}.txt\ndata {}\n{body}\n",
            i + 2,
            msg.len(),
            body.len()
        ));
    }
    let mut child = Command::new("git")
        .arg("-C")
        .arg(project)
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("git fast-import");
    child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success(), "fast-import failed");
    git(project, &["checkout", "-q", "main"]);
}

/// A ship's meta for a worktree.
pub fn ship_meta(w: &Worktree) -> String {
    format!(
        "kind=ship\nmode=direct-PR\nrepo={}\nproject={}\nworktree={}\nbranch={}\nharness=claude\nspawn_gen=1\n",
        w.repo,
        w.project.display(),
        w.path.display(),
        w.branch
    )
}

/// Every worktree a ship with a run record naming its branch and HEAD (a
/// validation pipeline's statuses in turn) and a 50-line log.
pub fn with_runs(home: &Home, repos: &Repos) {
    let log = ship_log("working [at=1700000100]: on it");
    for (i, w) in repos.worktrees.iter().enumerate() {
        home.write_state(&format!("{}.meta", w.id), &ship_meta(w));
        home.write_state(&format!("{}.status", w.id), &log);
        let run = match i % 5 {
            0 => "status=running\n".to_string(),
            1 => "status=ci\n".to_string(),
            2 => "status=awaiting_approval\ngate=review\nfindings=2\n".to_string(),
            3 => format!("status=passed\npr=https://example.invalid/o/r/pull/{i}\n"),
            _ => "status=failed\n".to_string(),
        };
        home.write_state(
            &format!("{}.run", w.id),
            &format!("{run}branch={}\nhead={}\n", w.branch, w.head),
        );
        home.inbox(&w.id);
    }
}

/// Every worktree a ship; half of them with a `done` with a PR as their
/// current line, of which half pushed (the gate accepts) and half not (it
/// refuses: blocked); the others at work.
pub fn with_done(home: &Home, repos: &Repos) {
    for (i, w) in repos.worktrees.iter().enumerate() {
        home.write_state(&format!("{}.meta", w.id), &ship_meta(w));
        let last = if i % 4 < 2 {
            format!(
                "done [at=1700000100]: PR https://example.invalid/o/{}/pull/{i}",
                w.repo
            )
        } else {
            "working [at=1700000100]: on it".to_string()
        };
        home.write_state(&format!("{}.status", w.id), &ship_log(&last));
        home.inbox(&w.id);
    }
}

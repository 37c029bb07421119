//! `fm demo` (SPEC §13): the whole loop, unattended, narrated and checked.
//!
//! It builds a temporary home and a throwaway git project (with a bare
//! "remote"), starts a private tmux server, and drives the real binaries:
//! brief → spawn a stand-in worker → send → the worker acknowledges → a
//! deaf worker is re-rung and escalated by the watcher (shortened timers) →
//! the worker commits and says done → the gate refuses the unpushed head →
//! push → the gate accepts → the fleet view. Every step checks what it
//! expects; the first failure stops the demo with exit 1. It cleans up (the
//! tmux server it started and the temporary home) unless `--keep`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::home::Home;
use crate::pane::{Pane, Tmux, run_bounded};
use crate::stand_in::sibling_bin;
use crate::task_id::TaskId;
use crate::{fsx, inbox};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

struct Demo {
    root: PathBuf,
    socket: String,
    project: PathBuf,
    started: Instant,
    step: usize,
    /// The watcher daemon this demo started (stopped by pid at cleanup).
    watcher: Option<std::process::Child>,
}

/// The outcome of one command the demo ran.
struct Ran {
    code: Option<i32>,
    out: String,
    err: String,
}

fn fail(msg: impl Into<String>) -> Error {
    Error::refused(msg.into())
}

impl Demo {
    fn say(&mut self, text: &str) {
        self.step += 1;
        println!(
            "\n[{:>4.1}s] {}. {text}",
            self.started.elapsed().as_secs_f64(),
            self.step
        );
    }

    fn ok(&self, text: &str) {
        println!("        ok: {text}");
    }

    fn check_interrupt(&self) -> Result<()> {
        if INTERRUPTED.load(Ordering::SeqCst) {
            Err(Error::Interrupted)
        } else {
            Ok(())
        }
    }

    fn tmux(&self) -> Tmux {
        Tmux::new(&self.socket)
    }

    /// Runs `fm-<tool> args…` against the demo home and echoes the command.
    fn fm(&self, tool: &str, args: &[&str]) -> Result<Ran> {
        self.check_interrupt()?;
        println!(
            "        $ fm-{tool} {}",
            args.iter()
                .map(|a| if a.contains(' ') {
                    format!("'{a}'")
                } else {
                    a.to_string()
                })
                .collect::<Vec<_>>()
                .join(" ")
        );
        let mut cmd = Command::new(sibling_bin(&format!("fm-{tool}")));
        cmd.args(args)
            .env("FM_HOME", &self.root)
            .env_remove("NO_COLOR");
        let (code, out, err) =
            run_bounded(cmd, Duration::from_secs(60)).map_err(|msg| Error::External {
                program: format!("fm-{tool}"),
                msg,
            })?;
        for l in out.lines() {
            println!("          {l}");
        }
        Ok(Ran { code, out, err })
    }

    fn expect_ok(&self, tool: &str, args: &[&str]) -> Result<String> {
        let r = self.fm(tool, args)?;
        if r.code != Some(0) {
            return Err(fail(format!(
                "fm-{tool} exited {:?}: {}",
                r.code,
                r.err.trim()
            )));
        }
        Ok(r.out)
    }

    fn git(&self, dir: &Path, args: &[&str]) -> Result<String> {
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(dir).args(args);
        let (code, out, err) =
            run_bounded(cmd, Duration::from_secs(30)).map_err(|msg| Error::External {
                program: "git".into(),
                msg,
            })?;
        if code != Some(0) {
            return Err(Error::External {
                program: "git".into(),
                msg: format!("git {}: {}", args.join(" "), err.trim()),
            });
        }
        Ok(out)
    }

    /// Polls `f` every 100 ms for up to `secs`.
    fn wait(&self, secs: u64, mut f: impl FnMut() -> Result<bool>) -> Result<bool> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            self.check_interrupt()?;
            if f()? {
                return Ok(true);
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn home(&self) -> Result<Home> {
        Home::at(&self.root)
    }

    fn pane_of(&self, id: &str) -> Result<String> {
        let home = self.home()?;
        let id = TaskId::parse(id)?;
        Ok(crate::meta::Meta::load(&home, &id)?
            .map(|m| m.str("pane").to_string())
            .unwrap_or_default())
    }

    fn pending(&self, id: &str) -> Result<Vec<u64>> {
        inbox::pending(&self.home()?, &TaskId::parse(id)?)
    }

    fn wakes(&self) -> Result<String> {
        Ok(
            String::from_utf8_lossy(
                &fsx::read_optional(&self.home()?.wakes())?.unwrap_or_default(),
            )
            .into_owned(),
        )
    }

    fn setup(&mut self) -> Result<()> {
        self.say(
            "Set up a temporary home, a git project with a bare remote, and a private tmux server",
        );
        let home = Home::new_unchecked(self.root.clone());
        for d in [home.config_dir(), home.data_dir(), home.state_dir()] {
            fsx::ensure_dir(&d)?;
        }
        let config = format!(
            "[tmux]\nsession = \"fm-demo\"\nsocket = \"{}\"\n\n[watch]\ngrace_secs = 1\nmax_rings = 2\n\n[send]\nsettle_ms = 100\nenter_wait_ms = 200\n\n[control]\nexit_wait_secs = 10\n",
            self.socket
        );
        fsx::atomic_write(&home.config_file(), config.as_bytes())?;
        let remote = self.root.join("remote.git");
        fsx::ensure_dir(&self.project)?;
        let (p, r) = (self.project.clone(), remote.display().to_string());
        self.git(&self.root, &["init", "-q", "--bare", "-b", "main", &r])?;
        self.git(&p, &["init", "-q", "-b", "main"])?;
        self.git(&p, &["config", "user.name", "firstmate demo"])?;
        self.git(&p, &["config", "user.email", "demo@firstmate.invalid"])?;
        fsx::atomic_write(&p.join("README.md"), b"# demo project\n")?;
        self.git(&p, &["add", "README.md"])?;
        self.git(&p, &["commit", "-q", "-m", "initial commit"])?;
        self.git(&p, &["remote", "add", "origin", &r])?;
        self.git(&p, &["push", "-q", "origin", "main"])?;
        self.ok(&format!("home {}", self.root.display()));
        self.ok(&format!("tmux -L {}", self.socket));
        Ok(())
    }

    fn brief_and_spawn(&mut self, id: &str, intent: &str) -> Result<String> {
        self.say(&format!(
            "Write a brief for {id} and spawn a stand-in worker"
        ));
        self.expect_ok(
            "brief",
            &[
                id,
                "demo-project",
                "--mode",
                "direct-PR",
                "--intent",
                intent,
                "--spec",
                "Make one small commit, push only your branch, then report done.",
            ],
        )?;
        let project = self.project.display().to_string();
        let out = self.expect_ok(
            "control",
            &[id, "spawn", "--project", &project, "--harness", "stand-in"],
        )?;
        if !out.starts_with(&format!("spawned {id} pane=%")) {
            return Err(fail(format!("unexpected spawn output: {out}")));
        }
        let pane = self.pane_of(id)?;
        let tmux = self.tmux();
        if !self.wait(10, || {
            Ok(tmux
                .capture(&pane, 0)
                .unwrap_or_default()
                .contains("stand-in>"))
        })? {
            return Err(fail(format!(
                "the stand-in in {pane} never showed its composer"
            )));
        }
        self.ok(&format!("worker {id} is up in pane {pane}"));
        Ok(pane)
    }

    fn send_and_ack(&mut self, id: &str) -> Result<()> {
        self.say("Send a steering message: only a doorbell is typed into the pane; the worker reads its inbox and acknowledges");
        let out = self.expect_ok(
            "send",
            &[
                id,
                "status working reading the brief; starting on the change",
            ],
        )?;
        if !out.contains("queued") {
            return Err(fail(format!("fm-send did not queue: {out}")));
        }
        if !self.wait(15, || Ok(self.pending(id)?.is_empty()))? {
            return Err(fail("the worker never acknowledged message 001"));
        }
        self.ok("message 001 acknowledged (moved to handled/)");
        let st = self.expect_ok("crew-state", &[id])?;
        if !st.starts_with("state: working") {
            return Err(fail(format!(
                "expected the worker to read as working, got: {}",
                st.trim()
            )));
        }
        self.ok("crew-state reads working, from the worker's own status line");
        Ok(())
    }

    /// Starts `fm-watch` as a daemon (filesystem events plus polling).
    fn start_watcher(&mut self) -> Result<()> {
        self.say("Start the watcher daemon (fm-watch): it re-rings unread messages and feeds the captain");
        println!("        $ fm-watch &");
        let child = Command::new(sibling_bin("fm-watch"))
            .env("FM_HOME", &self.root)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| Error::External {
                program: "fm-watch".into(),
                msg: e.to_string(),
            })?;
        self.watcher = Some(child);
        let home = self.home()?;
        if !self.wait(10, || Ok(home.watch_beat().exists()))? {
            return Err(fail("the watcher never started its first pass"));
        }
        let st = self.expect_ok("watch", &["--status"])?;
        if !st.contains("running") && !st.contains("pid") {
            return Err(fail(format!(
                "fm-watch --status does not show the daemon: {}",
                st.trim()
            )));
        }
        self.ok("watcher running");
        Ok(())
    }

    fn escalations(&self, id: &str) -> Result<usize> {
        let needle = format!("\t{id}\tescalation\t");
        Ok(self
            .wakes()?
            .lines()
            .filter(|l| l.contains(&needle))
            .count())
    }

    fn deaf_and_escalate(&mut self, id: &str) -> Result<()> {
        self.say(&format!(
            "{id} goes deaf: the watcher re-rings the unread message (grace 1s, 2 rings), then escalates exactly once"
        ));
        self.expect_ok("send", &[id, "deaf"])?;
        let home = self.home()?;
        let tid = TaskId::parse(id)?;
        if !self.wait(30, || Ok(self.escalations(id)? > 0))? {
            return Err(fail("no escalation wake after the ladder ran out"));
        }
        let ring_state = String::from_utf8_lossy(
            &fsx::read_optional(&home.ring_state(&tid))?.unwrap_or_default(),
        )
        .into_owned();
        let rings: u64 = ring_state
            .split('\t')
            .nth(1)
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        if rings != 2 {
            return Err(fail(format!(
                "expected 2 re-rings before the escalation, the ladder says {rings}"
            )));
        }
        self.ok("re-rung twice by the watcher, then one escalation wake");
        // Give the daemon time for several more passes: nothing more may happen.
        std::thread::sleep(Duration::from_millis(2500));
        let n = self.escalations(id)?;
        if n != 1 {
            return Err(fail(format!(
                "expected exactly one escalation wake, found {n}"
            )));
        }
        if self.pending(id)?.is_empty() {
            return Err(fail("the unread message vanished"));
        }
        self.ok("no further rings or wakes; the message is still pending, nothing lost");
        let drained = self.expect_ok("watch", &["--drain"])?;
        if !drained.contains("escalation") {
            return Err(fail("fm-watch --drain did not show the escalation"));
        }
        self.ok("the captain's feed (fm-watch --drain) shows the escalation");
        Ok(())
    }

    fn done_and_gate(&mut self, id: &str) -> Result<()> {
        self.say("The worker commits on its branch and says done; the gate refuses a head that exists only in the worktree");
        let home = self.home()?;
        let tid = TaskId::parse(id)?;
        let branch = format!("fm/{id}");
        let meta = crate::meta::Meta::load(&home, &tid)?.unwrap_or_default();
        let worktree = PathBuf::from(meta.str("worktree"));
        // The brief's setup step: the worker works on its own branch.
        self.git(&worktree, &["checkout", "-q", "-b", &branch])?;
        self.expect_ok("send", &[id, &format!("commit feature.txt the small change\nstatus done PR https://example.invalid/{id}/pull/1")])?;
        let status = home.status(&tid);
        let done = self.wait(15, || {
            Ok(
                String::from_utf8_lossy(&fsx::read_optional(&status)?.unwrap_or_default())
                    .contains("done [at="),
            )
        })?;
        if !done {
            return Err(fail("the worker never reported done"));
        }
        self.ok("worker committed feature.txt and appended done");
        let r = self.fm("dod", &["--check", id])?;
        if r.code != Some(1) || !r.out.contains("refused") {
            return Err(fail(format!(
                "expected the gate to refuse the unpushed head, got exit {:?}: {}",
                r.code,
                r.out.trim()
            )));
        }
        let st = self.expect_ok("crew-state", &[id])?;
        if !st.starts_with("state: blocked") {
            return Err(fail(format!("expected blocked, got: {}", st.trim())));
        }
        self.ok("the gate refused; crew-state reads blocked, not done");

        self.say("Push the branch; now the gate accepts and the worker reads done");
        println!("        $ git push origin {branch}   (in the worker's worktree)");
        self.git(
            &worktree,
            &["push", "-q", "origin", &format!("{branch}:{branch}")],
        )?;
        self.git(&worktree, &["fetch", "-q", "origin"])?;
        let r = self.fm("dod", &["--check", id])?;
        if r.code != Some(0) || !r.out.contains("accepted") {
            return Err(fail(format!(
                "expected the gate to accept, got exit {:?}: {}",
                r.code,
                r.out.trim()
            )));
        }
        let st = self.expect_ok("crew-state", &[id])?;
        if !st.starts_with("state: done") {
            return Err(fail(format!("expected done, got: {}", st.trim())));
        }
        self.ok("accepted: the head is on the remote; crew-state reads done");
        Ok(())
    }

    fn fleet(&mut self) -> Result<()> {
        self.say("The fleet view: every worker at a glance");
        let out = self.expect_ok("crew-state", &[])?;
        if out.lines().count() < 3 {
            return Err(fail("the fleet view is missing rows"));
        }
        self.ok("fleet view printed");
        Ok(())
    }

    fn cleanup(&mut self, keep: bool) {
        if let Some(mut child) = self.watcher.take() {
            // SAFETY: signalling the child this process started, by its pid.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
            }
            let _ = child.wait();
        }
        if keep {
            println!(
                "\nkept: home {} · attach with: tmux -L {} attach",
                self.root.display(),
                self.socket
            );
            return;
        }
        let _ = self.tmux().run(&["kill-server"]);
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn preflight() -> Result<()> {
    for (program, arg) in [("tmux", "-V"), ("git", "--version")] {
        let ok = Command::new(program)
            .arg(arg)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !ok {
            return Err(Error::External {
                program: program.into(),
                msg:
                    "not installed; the demo needs tmux and git (e.g. apt-get install -y tmux git)"
                        .into(),
            });
        }
    }
    Ok(())
}

/// Runs the demo; exit 0 when every expectation held.
pub fn run(keep: bool) -> Result<u8> {
    preflight()?;
    // SAFETY: installing a handler that only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
    }
    let stamp = crate::clock::now();
    let root = std::env::temp_dir().join(format!("fm-demo-{}-{stamp}", std::process::id()));
    fsx::ensure_dir(&root)?;
    let root = root
        .canonicalize()
        .map_err(|e| Error::io("resolve", &root, e))?;
    let mut demo = Demo {
        project: root.join("project"),
        root,
        socket: format!("fm-demo-{}", std::process::id()),
        started: Instant::now(),
        step: 0,
        watcher: None,
    };
    println!("firstmate demo: the whole loop, unattended, on a private tmux server");
    let result = (|| {
        demo.setup()?;
        demo.brief_and_spawn(
            "demo-ship",
            "Add feature.txt describing the small change, on your branch.",
        )?;
        demo.send_and_ack("demo-ship")?;
        demo.start_watcher()?;
        demo.brief_and_spawn("demo-deaf", "Add a note to the README.")?;
        demo.deaf_and_escalate("demo-deaf")?;
        demo.done_and_gate("demo-ship")?;
        demo.fleet()
    })();
    demo.cleanup(keep);
    match result {
        Ok(()) => {
            println!(
                "\ndemo passed: every expectation held ({:.1}s)",
                demo.started.elapsed().as_secs_f64()
            );
            Ok(0)
        }
        Err(e) => {
            println!("\ndemo FAILED at step {}: {e}", demo.step);
            Err(e)
        }
    }
}

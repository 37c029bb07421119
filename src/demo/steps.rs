//! The demo's scenario, one method per narrated step: set up the home and
//! project, brief and spawn, send and acknowledge, start the watcher, let
//! a deaf worker escalate, the done gate before and after the push, and
//! the fleet view. Each step checks what it expects and fails the demo
//! otherwise.

use super::*;
use std::process::Command;

impl Demo {
    pub(super) fn setup(&mut self) -> Result<()> {
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

    pub(super) fn brief_and_spawn(&mut self, id: &str, intent: &str) -> Result<String> {
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

    pub(super) fn send_and_ack(&mut self, id: &str) -> Result<()> {
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
    pub(super) fn start_watcher(&mut self) -> Result<()> {
        self.say("Start the watcher daemon (fm-watch): it re-rings unread messages and feeds the captain");
        crate::output::out_say("        $ fm-watch &");
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
        if !self.wait(10, || fsx::exists(&home.watch_beat()))? {
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

    pub(super) fn escalations(&self, id: &str) -> Result<usize> {
        let needle = format!("\t{id}\tescalation\t");
        Ok(self
            .wakes()?
            .lines()
            .filter(|l| l.contains(&needle))
            .count())
    }

    pub(super) fn deaf_and_escalate(&mut self, id: &str) -> Result<()> {
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

    pub(super) fn done_and_gate(&mut self, id: &str) -> Result<()> {
        self.say("The worker commits on its branch and says done; the gate refuses a head that exists only in the worktree");
        let home = self.home()?;
        let tid = TaskId::parse(id)?;
        let branch = format!("fm/{id}");
        let meta = crate::meta::TaskMeta::load(&home, &tid)?.unwrap_or_default();
        let worktree = meta.worktree.unwrap_or_default();
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
        crate::output::out_say(&format!(
            "        $ git push origin {branch}   (in the worker's worktree)"
        ));
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

    pub(super) fn fleet(&mut self) -> Result<()> {
        self.say("The fleet view: every worker at a glance");
        let out = self.expect_ok("crew-state", &[])?;
        if out.lines().count() < 3 {
            return Err(fail("the fleet view is missing rows"));
        }
        self.ok("fleet view printed");
        Ok(())
    }
}

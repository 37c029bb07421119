//! `restore` (docs/spec/restore.md): brings back one task's agent that
//! died with its tmux server — a reboot, a `kill-server`, a crash.
//!
//! Runs under the task's lifecycle lock like every verb, so two restores
//! (or a restore and a relaunch) never start two agents for one task. A
//! task is restored only when its recorded pane is **gone** for it (the
//! pane-proof rule of docs/spec/meta.md: no such pane, a restarted
//! server, a pane that now belongs to someone else); a pane that proves
//! it is the task's is left alone, whatever runs in it. The agent starts
//! in a new window in its worktree: resumed (the profile's `resume` argv
//! with meta's `session`) when both exist, else afresh with the launch and
//! its kickoff. A finished task (its last status `done`) with nothing to
//! resume is skipped: a fresh agent would start the work again.
//!
//! Meta gets the new pane, mark, server and spawn as a relaunch writes
//! them, in one atomic update; the ladder restarts as for a new agent and
//! an owed doorbell is rung through the one ring path
//! ([`crate::tmux::recipient::Recipient::ring`]), waiting a bounded while
//! for the agent's composer.
//!
//! The result is one line ([`RestoreLine`] reads it back), so a task on a
//! host reports through the far lifecycle entry like any other verb.

use super::*;
use crate::tmux::deliver::Outcome;
use crate::tmux::owner::Lost;

/// The progress note a restore that starts the agent afresh appends.
pub(super) const FRESH_NOTE: &str = "Restored after its tmux server stopped, with no conversation to resume: the work so far is in this worktree (`git log`, `git status`) and in the status log. Carry on from there; do not start over.";

/// How often a booting agent is asked again.
const RING_POLL_MS: u64 = 250;

/// What restoring one task did, as its line says.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum RestoreLine {
    /// A new agent runs (or, with `--dry-run`, would run: `pane` is empty).
    Restored {
        id: String,
        pane: String,
        harness: String,
        /// The conversation resumed; `None`: started afresh.
        session: Option<String>,
        /// What the owed doorbell did (`rang`, `queued`, …); `None`:
        /// nothing was pending.
        doorbell: Option<String>,
        dry_run: bool,
    },
    Skipped {
        id: String,
        why: String,
    },
}

impl RestoreLine {
    /// The line printed (and carried back from a host).
    pub fn line(&self) -> String {
        match self {
            RestoreLine::Restored {
                id,
                pane,
                harness,
                session,
                doorbell,
                dry_run,
            } => {
                let how = session
                    .as_ref()
                    .map_or_else(|| "fresh".to_string(), |s| format!("resumed={s}"));
                if *dry_run {
                    return format!("would-restore {id} harness={harness} {how}");
                }
                format!(
                    "restored {id} pane={pane} harness={harness} {how} doorbell={}",
                    doorbell.as_deref().unwrap_or("none")
                )
            }
            RestoreLine::Skipped { id, why } => format!("skipped {id}: {why}"),
        }
    }
}

/// Reads a line [`RestoreLine::line`] wrote; `None` for any other text.
pub fn restore_line(line: &str) -> Option<RestoreLine> {
    let line = line.trim_end();
    if let Some(rest) = line.strip_prefix("skipped ") {
        let (id, why) = rest.split_once(": ")?;
        return Some(RestoreLine::Skipped {
            id: id.into(),
            why: why.into(),
        });
    }
    let (dry_run, rest) = match line.split_once(' ')? {
        ("restored", rest) => (false, rest),
        ("would-restore", rest) => (true, rest),
        _ => return None,
    };
    let mut words = rest.split(' ');
    let id = words.next()?.to_string();
    let (mut pane, mut harness, mut session, mut doorbell) = (String::new(), None, None, None);
    for w in words {
        match w.split_once('=') {
            Some(("pane", v)) => pane = v.to_string(),
            Some(("harness", v)) => harness = Some(v.to_string()),
            Some(("resumed", v)) => session = Some(v.to_string()),
            Some(("doorbell", v)) if v != "none" => doorbell = Some(v.to_string()),
            _ => {}
        }
    }
    Some(RestoreLine::Restored {
        id,
        pane,
        harness: harness?,
        session,
        doorbell,
        dry_run,
    })
}

/// The launch a restore uses and what it is.
struct Plan {
    harness: String,
    profile: HarnessProfile,
    /// The session resumed; `None`: afresh.
    session: Option<String>,
    worktree: String,
}

impl Ctl<'_> {
    pub(super) fn restore(&self, dry_run: bool) -> Result<String> {
        let skip = |why: String| {
            Ok(RestoreLine::Skipped {
                id: self.id.to_string(),
                why,
            }
            .line())
        };
        let meta = self.meta()?;
        let plan = match self.restore_plan(&meta)? {
            Ok(plan) => plan,
            Err(why) => return skip(why),
        };
        if dry_run {
            return Ok(RestoreLine::Restored {
                id: self.id.to_string(),
                pane: String::new(),
                harness: plan.harness,
                session: plan.session,
                doorbell: None,
                dry_run,
            }
            .line());
        }
        let launch = self.restore_launch(&plan)?;
        let tmux = self.tmux(&meta);
        let spawn_id = owner::new_spawn_id();
        let mark = owner::mark(self.id, &spawn_id);
        let (pane, server) = self.open_window(&tmux, &plan.worktree, launch, &mark)?;
        let now = clock::now();
        let recorded = meta::update(self.home, self.id, |m| {
            let gen_ = TaskMeta::from_raw(m.clone()).spawn_gen;
            m.set("spawn_gen", &gen_.saturating_add(1).to_string());
            m.set("harness", &plan.harness);
            m.set("pane", &pane);
            m.set("spawn_id", &spawn_id);
            m.set("tmux_server", &server);
            m.set("window", &format!("fm-{}", self.id));
            m.set("spawned_at", &now.to_string());
            if let Some(s) = &plan.session {
                // The resumed agent runs that very thread: bound to this
                // spawn (the Codex leg may queue to it at once).
                m.set(session::KEY, s);
                m.set(session::SPAWN_KEY, &spawn_id);
            } else {
                m.remove(session::KEY);
                m.remove(session::SPAWN_KEY);
            }
        })
        .and_then(|_| self.reset_busy());
        if let Err(e) = recorded {
            // An agent meta may not record is nobody's: the next restore
            // would start a second one in the same worktree.
            kill_ours(&tmux, &pane, &mark, &server);
            return Err(e);
        }
        self.restart_ladder();
        self.record(Event::ControlRestored {
            pane: pane.clone(),
            harness: plan.harness.clone(),
            resumed: plan.session.is_some(),
        });
        let doorbell = self.ring_owed(plan.session.is_some());
        Ok(RestoreLine::Restored {
            id: self.id.to_string(),
            pane,
            harness: plan.harness,
            session: plan.session,
            doorbell,
            dry_run,
        }
        .line())
    }

    /// The launch of the restored agent: the profile's resume argv for
    /// the session, else its launch — after the brief got the note that
    /// the work so far is in the worktree (once: a retried restore whose
    /// window failed does not add it again).
    fn restore_launch(&self, plan: &Plan) -> Result<spawn::Launch> {
        if let Some(s) = &plan.session {
            let mut resumed = plan.profile.clone();
            resumed.launch = plan
                .profile
                .resume
                .iter()
                .flatten()
                .map(|a| a.replace(harness::SESSION, s))
                .collect();
            return self.checked_launch(&resumed);
        }
        let launch = self.checked_launch(&plan.profile)?;
        let brief = fsx::read_optional(&self.home.brief(self.id))?.unwrap_or_default();
        if !brief.ends_with(format!("\n\n{FRESH_NOTE}\n").as_bytes()) {
            self.append_note(FRESH_NOTE)?;
        }
        Ok(launch)
    }

    /// What a restore of this task would start, or why it is skipped.
    fn restore_plan(&self, meta: &TaskMeta) -> Result<std::result::Result<Plan, String>> {
        if let Err(why) = self.gone_for_restore(meta)? {
            return Ok(Err(why));
        }
        let Some(worktree) = meta.worktree.clone() else {
            return Ok(Err("no worktree in meta".into()));
        };
        #[expect(
            clippy::disallowed_methods,
            reason = "outside the home: the worktree is git's"
        )]
        if !worktree.join(".git").exists() {
            return Ok(Err(format!("worktree {} is gone", worktree.display())));
        }
        let harness = meta.harness.clone().unwrap_or_else(|| "claude".into());
        let profile = self.profile(&harness)?;
        let session = profile.resume.as_ref().and_then(|_| {
            session::of(meta).or_else(|| session::from_rollout(self.home, self.id, meta))
        });
        if session.is_none() && self.finished() {
            return Ok(Err(format!(
                "done, and no conversation to resume (fm-control {} relaunch starts it afresh)",
                self.id
            )));
        }
        let program = match &session {
            Some(_) => profile.resume.as_ref().and_then(|r| r.first()),
            None => profile.launch.first(),
        };
        let program = program.map_or("", String::as_str);
        let program_ok = program.starts_with("fm-")
            || harness::program_exists(program, std::env::var_os("PATH").as_deref());
        if !program_ok {
            return Ok(Err(format!(
                "harness {harness}: program {program} not found"
            )));
        }
        Ok(Ok(Plan {
            harness,
            profile,
            session,
            worktree: worktree.display().to_string(),
        }))
    }

    /// `Ok(Ok(()))` when the task's agent is proven gone, so a restore
    /// may start one; else why not. Stricter than the pane-proof rule:
    /// a pane of this task's under another spawn, or an unmarked pane on a
    /// server meta does not name, is not proof of a death; an agent the
    /// captain stopped stays stopped; and any live pane on the server
    /// carrying this task's mark is an agent meta does not record.
    fn gone_for_restore(&self, meta: &TaskMeta) -> Result<std::result::Result<(), String>> {
        let Some(pane) = meta.pane.as_deref() else {
            return Ok(Err("never spawned (no pane in meta)".into()));
        };
        let tmux = self.tmux(meta);
        let info = match tmux.info(pane) {
            Ok(info) => info,
            Err(Error::External { msg, .. }) if msg.contains("not installed") => None,
            Err(e) => return Err(e),
        };
        let claim = Claim::of(self.id, meta);
        match claim.as_ref().map(|c| c.check(info.as_ref(), None)) {
            Some(Ok(())) | None => {
                if let Some(info) = &info {
                    let profile = self.meta_profile(meta);
                    if harness::is_alive(profile.as_ref(), info.dead, &info.command) {
                        return Ok(Err(format!("alive in pane {}", info.id)));
                    }
                    return Ok(Err(format!(
                        "its pane {} is there, the agent exited in it: fm-control {} relaunch",
                        info.id, self.id
                    )));
                }
            }
            Some(Err(lost @ (Lost::OtherSpawn | Lost::Unmarked))) => {
                return Ok(Err(format!(
                    "not proven gone: pane {pane} is there and {} (fm-control {} relaunch replaces it)",
                    lost.reason().unwrap_or_default(),
                    self.id
                )));
            }
            Some(Err(_)) => {}
        }
        let stopped = crate::inbox::ladder_files::agent_stopped(self.home, self.id)?;
        if stopped.is_some_and(|s| s.pane == pane && s.spawned_at == meta.spawned_at) {
            return Ok(Err(format!(
                "the captain stopped its agent (fm-control {0} exit): fm-control {0} relaunch starts it again",
                self.id
            )));
        }
        let list = match tmux.list() {
            Ok(list) => list,
            Err(Error::External { msg, .. }) if msg.contains("not installed") => Vec::new(),
            Err(e) => return Err(e),
        };
        if let Some(other) = list
            .iter()
            .find(|p| !p.dead && owner::marks_task(&p.mark, self.id))
        {
            return Ok(Err(format!(
                "pane {0} on its server carries its mark, an agent meta does not record (meta names {pane}): tmux kill-pane -t {0}, then restore",
                other.id
            )));
        }
        Ok(Ok(()))
    }

    /// The task's last status says `done`.
    fn finished(&self) -> bool {
        crate::status::finished(self.home, self.id, &self.cfg.brief.paused_verb)
    }

    /// Rings the doorbell owed to the restored agent when records are
    /// pending: through the one ring, again while the agent boots (no
    /// composer yet), up to `[control] restore_ring_secs`. A resumed agent has no
    /// turn to run, so one that reads busy (seen once with Codex right
    /// after its resume) is asked again too; a fresh agent's kickoff turn is
    /// real work, and its doorbell stays owed, for the watcher. `None`
    /// when nothing was pending.
    fn ring_owed(&self, resumed: bool) -> Option<String> {
        let pending = crate::inbox::pending(self.home, self.id).ok()?;
        if pending.is_empty() {
            return None;
        }
        let wait = Duration::from_secs(self.cfg.control.restore_ring_secs);
        // A bound too large for the clock waits "forever" (a century).
        let deadline = Instant::now()
            .checked_add(wait)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(100 * 365 * 86_400));
        loop {
            let rung = match crate::tmux::recipient::Recipient::load(self.home, self.cfg, self.id) {
                Ok(r) => r.ring(
                    self.home,
                    self.cfg,
                    clock::now(),
                    crate::tmux::recipient::Known::default(),
                ),
                Err(e) => return Some(format!("failed ({e})").replace(' ', "_")),
            };
            for w in &rung.warnings {
                crate::output::err_line(&format!("{TOOL}: warning: {}: {w}", self.id));
            }
            let again = matches!(rung.outcome, Outcome::Booting | Outcome::RingLocked)
                || (resumed && rung.outcome == Outcome::Queued);
            if !again || Instant::now() >= deadline {
                return Some(outcome_word(rung.outcome).to_string());
            }
            std::thread::sleep(Duration::from_millis(RING_POLL_MS));
        }
    }
}

/// Kills the pane a restore just opened, when it is still ours: marked
/// `mark` on the server `server` (never a pane the id names elsewhere).
fn kill_ours(tmux: &Tmux, pane: &str, mark: &str, server: &str) {
    if let Ok(Some(info)) = tmux.info(pane)
        && info.mark == mark
        && (server.is_empty() || info.server == server)
    {
        let _ = tmux.run(&["kill-pane", "-t", pane]);
    }
}

/// A ring's outcome as docs/spec/ring.md#outcomes names it.
fn outcome_word(o: Outcome) -> &'static str {
    match o {
        Outcome::Rang => "rang",
        Outcome::Queued | Outcome::RingLocked => "queued",
        Outcome::Skipped => "skipped",
        Outcome::Failed => "failed",
        Outcome::Dead => "dead",
        Outcome::NoPane => "no-pane",
        Outcome::Quiet => "quiet",
        Outcome::Dialog => "dialog",
        Outcome::Booting => "booting",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_the_captain_chose_reads_back_and_is_still_heard_by_the_watcher() {
        use crate::inbox::ladder_files::{
            DeadSeen, agent_stopped, read_agent_dead, write_agent_dead, write_agent_stopped,
        };
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        fsx::ensure_dir(&home.state_dir()).unwrap();
        let id = TaskId::parse("t1").unwrap();
        let seen = DeadSeen {
            pane: "%3".into(),
            spawned_at: Some(1_700_000_000),
        };
        assert_eq!(agent_stopped(&home, &id).unwrap(), None);
        write_agent_stopped(&home, &id, 5, &seen).unwrap();
        assert_eq!(agent_stopped(&home, &id).unwrap(), Some(seen.clone()));
        // The watcher compares pane and spawn only: no second wake.
        assert_eq!(read_agent_dead(&home, &id).unwrap(), Some(seen.clone()));
        // The watcher's own record is a death, not a stop.
        write_agent_dead(&home, &id, 6, &seen).unwrap();
        assert_eq!(agent_stopped(&home, &id).unwrap(), None);
    }

    #[test]
    fn every_line_reads_back() {
        let lines = [
            RestoreLine::Restored {
                id: "t1".into(),
                pane: "%4".into(),
                harness: "claude".into(),
                session: Some("0744d8c0-b402-4d50-a903-7366fcfb1aa1".into()),
                doorbell: Some("rang".into()),
                dry_run: false,
            },
            RestoreLine::Restored {
                id: "t2".into(),
                pane: "%5".into(),
                harness: "stand-in".into(),
                session: None,
                doorbell: None,
                dry_run: false,
            },
            RestoreLine::Restored {
                id: "t3".into(),
                pane: String::new(),
                harness: "codex".into(),
                session: None,
                doorbell: None,
                dry_run: true,
            },
            RestoreLine::Skipped {
                id: "t4".into(),
                why: "alive in pane %1: still".into(),
            },
        ];
        for l in lines {
            assert_eq!(restore_line(&l.line()), Some(l.clone()), "{}", l.line());
        }
        assert_eq!(
            RestoreLine::Skipped {
                id: "t4".into(),
                why: "alive in pane %1".into()
            }
            .line(),
            "skipped t4: alive in pane %1"
        );
        assert_eq!(restore_line("torn-down t1 archive=/x"), None);
    }
}

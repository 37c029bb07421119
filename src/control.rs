//! Lifecycle (SPEC §10.1): spawn, interrupt, exit, relaunch and tear down a
//! worker without the captain touching tmux.
//!
//! One action per task at a time (`state/.control-<id>.lock`, never waited
//! for: a second action is refused). Meta is written only through
//! [`meta::update`], which preserves keys other tools own. tmux and git run
//! with argument vectors, bounded in time; panes are addressed by id only.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::events::Event;
use crate::harness::{self, HarnessProfile};
use crate::home::Home;
use crate::meta::{self, Meta};
use crate::pane::{Pane, PaneInfo, Tmux};
use crate::task_id::TaskId;
use crate::{brief, clock, frontmatter, fsx, stand_in};

const TOOL: &str = "fm-control";
/// `git worktree add` checks out files: give it longer than a query.
const GIT_TIMEOUT: Duration = Duration::from_secs(60);

/// A lifecycle action.
#[derive(Debug, Clone)]
pub enum Action {
    Spawn {
        project: PathBuf,
        harness: Option<String>,
        base: Option<String>,
    },
    Interrupt,
    Exit,
    Relaunch {
        note: Option<String>,
        harness: Option<String>,
    },
    Teardown {
        force: bool,
    },
}

/// Runs `action` on task `id` under its lifecycle lock; returns the line
/// to print on success.
pub fn run(home: &Home, cfg: &Config, id: &TaskId, action: Action) -> Result<String> {
    // The brief is read and rewritten (relaunch) and the meta replaced
    // under these paths: never through a symlink (SPEC §1.2).
    fsx::refuse_symlink(&home.task_data(id))?;
    fsx::refuse_symlink(&home.meta(id))?;
    fsx::ensure_dir(&home.state_dir())?;
    let Some(_lock) = fsx::try_lock(&home.control_lock(id))? else {
        return Err(Error::refused(format!(
            "another lifecycle action is already running ({id})"
        )));
    };
    let ctl = Ctl { home, cfg, id };
    match action {
        Action::Spawn {
            project,
            harness,
            base,
        } => ctl.spawn(&project, harness.as_deref(), base.as_deref()),
        Action::Interrupt => ctl.interrupt(),
        Action::Exit => ctl.exit(),
        Action::Relaunch { note, harness } => ctl.relaunch(note.as_deref(), harness.as_deref()),
        Action::Teardown { force } => ctl.teardown(force),
    }
}

/// How asking an agent to exit ended.
#[derive(Debug)]
enum Stop {
    /// No live agent to begin with.
    WasGone,
    Exited,
    /// Still alive after `exit_wait_secs`; the error says what was sent.
    StillRunning(Error),
}

/// What tmux says about a task's agent.
#[derive(Debug, Clone)]
enum Agent {
    NoPane,
    Gone,
    Exited(PaneInfo),
    Alive(PaneInfo),
}

struct Ctl<'a> {
    home: &'a Home,
    cfg: &'a Config,
    id: &'a TaskId,
}

/// Runs git in `dir`; stdout on success, an error naming the command otherwise.
fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = crate::git::run_bounded(dir, args, GIT_TIMEOUT)?;
    if !out.ok {
        return Err(Error::External {
            program: "git".into(),
            msg: format!("git {}: {}", args.join(" "), out.stderr.trim()),
        });
    }
    Ok(out.stdout)
}

impl Ctl<'_> {
    fn meta(&self) -> Result<Meta> {
        Meta::load(self.home, self.id)?.ok_or_else(|| {
            Error::refused(format!(
                "unknown task {}: no metadata (spawn it first)",
                self.id
            ))
        })
    }

    fn tmux(&self, meta: &Meta) -> Tmux {
        Tmux::for_task(meta.str("tmux_socket"), &self.cfg.tmux.socket)
    }

    fn profile(&self, name: &str) -> Result<HarnessProfile> {
        harness::profile(self.cfg, name).ok_or_else(|| {
            Error::usage(format!(
                "unknown harness {name:?} (built-ins: {}; or define [harness.{name}])",
                harness::BUILTINS.join(", ")
            ))
        })
    }

    fn meta_profile(&self, meta: &Meta) -> Option<HarnessProfile> {
        harness::profile(self.cfg, meta.get("harness").filter(|h| !h.is_empty())?)
    }

    fn agent(&self, meta: &Meta) -> Result<Agent> {
        let Some(pane) = meta.get("pane").filter(|p| !p.is_empty()) else {
            return Ok(Agent::NoPane);
        };
        let info = match self.tmux(meta).info(pane) {
            Ok(Some(info)) => info,
            Ok(None) => return Ok(Agent::Gone),
            Err(Error::External { msg, .. }) if msg.contains("not installed") => {
                return Ok(Agent::Gone);
            }
            Err(e) => return Err(e),
        };
        let profile = self.meta_profile(meta);
        Ok(
            if harness::is_alive(profile.as_ref(), info.dead, &info.command) {
                Agent::Alive(info)
            } else {
                Agent::Exited(info)
            },
        )
    }

    /// The launch argv with placeholders filled; `fm-*` programs resolve to
    /// the sibling binaries of this executable.
    fn launch_argv(&self, profile: &HarnessProfile) -> Vec<String> {
        let h = self.home;
        let subst = |s: &str| {
            s.replace("{brief}", &h.brief(self.id).display().to_string())
                .replace("{id}", self.id.as_str())
                .replace("{inbox}", &h.inbox(self.id).display().to_string())
                .replace("{home}", &h.root().display().to_string())
                .replace("{status}", &h.status(self.id).display().to_string())
        };
        let mut argv: Vec<String> = profile.launch.iter().map(|s| subst(s)).collect();
        if let Some(first) = argv.first_mut()
            && first.starts_with("fm-")
            && !first.contains('/')
        {
            *first = stand_in::sibling_bin(first).display().to_string();
        }
        argv
    }

    fn check_brief(&self) -> Result<()> {
        let report = brief::check_brief(self.home, self.cfg, self.id, None)?;
        if !report.ok {
            return Err(Error::refused(format!(
                "brief does not pass fm-brief --check: {}",
                report.problems.join("; ")
            )));
        }
        Ok(())
    }

    /// Opens window `fm-<id>` in the configured session (created if
    /// needed) running `argv` in `worktree`, with `remain-on-exit` so the
    /// pane outlives its agent; returns the new pane id.
    ///
    /// The window first runs a placeholder (`cat`, waiting on its terminal)
    /// so the pane exists while `remain-on-exit` is set on it alone; then
    /// `respawn-pane -k` starts the agent. An agent that exits at once
    /// leaves a dead pane, never a vanished one.
    fn open_window(&self, tmux: &Tmux, worktree: &str, argv: Vec<String>) -> Result<String> {
        let session = &self.cfg.tmux.session;
        let has_session = || {
            tmux.run(&["has-session", "-t", &format!("={session}")])
                .is_ok()
        };
        // A concurrent spawn may create the session first: that is fine.
        if !has_session()
            && let Err(e) = tmux.run(&["new-session", "-d", "-s", session, "-x", "220", "-y", "50"])
            && !has_session()
        {
            return Err(e);
        }
        let env = format!("FM_HOME={}", self.home.root().display());
        let mut args: Vec<String> = ["new-window", "-d", "-P", "-F", "#{pane_id}", "-t"]
            .map(String::from)
            .to_vec();
        args.extend([
            format!("={session}:"),
            "-n".into(),
            format!("fm-{}", self.id),
            "-c".into(),
            worktree.into(),
            "-e".into(),
            env,
            "--".into(),
            "cat".into(),
        ]);
        let pane = tmux.run(&args)?.trim().to_string();
        let started = tmux
            .run(&["set-option", "-p", "-t", &pane, "remain-on-exit", "on"])
            .and_then(|_| self.respawn(tmux, &pane, worktree, argv));
        if let Err(e) = started {
            let _ = tmux.run(&["kill-pane", "-t", &pane]);
            return Err(e);
        }
        Ok(pane)
    }

    /// Replaces whatever runs in `pane` (killing it) with `argv`.
    fn respawn(&self, tmux: &Tmux, pane: &str, worktree: &str, argv: Vec<String>) -> Result<()> {
        let env = format!("FM_HOME={}", self.home.root().display());
        let mut args: Vec<String> = ["respawn-pane", "-k", "-t", pane, "-c", worktree, "-e", &env]
            .map(String::from)
            .to_vec();
        args.push("--".into());
        args.extend(argv);
        tmux.run(&args).map(|_| ())
    }

    /// The launch argv, refused (exit 1) when its program cannot be found:
    /// an agent that cannot start must not leave a worktree or a window.
    fn checked_argv(&self, profile: &HarnessProfile) -> Result<Vec<String>> {
        let argv = self.launch_argv(profile);
        let program = argv.first().map(String::as_str).unwrap_or("");
        if !harness::program_exists(program, std::env::var_os("PATH").as_deref()) {
            return Err(Error::refused(format!(
                "harness {}: program {program} not found",
                profile.name
            )));
        }
        Ok(argv)
    }

    /// A new (or no) agent has no turn in progress: an idle busy record
    /// replaces whatever the previous agent left (SPEC §9.3).
    fn reset_busy(&self) -> Result<()> {
        let line = crate::busy::render(false, clock::now(), TOOL);
        fsx::atomic_write(&self.home.busy(self.id), line.as_bytes())
    }

    fn spawn(&self, project: &Path, harness: Option<&str>, base: Option<&str>) -> Result<String> {
        let old = Meta::load(self.home, self.id)?.unwrap_or_default();
        if let Agent::Alive(info) = self.agent(&old)? {
            return Err(Error::refused(format!(
                "{} already has a live agent in pane {}",
                self.id, info.id
            )));
        }
        let harness_name = harness
            .map(str::to_string)
            .or_else(|| old.get("harness").map(str::to_string))
            .unwrap_or_else(|| "claude".into());
        let profile = self.profile(&harness_name)?;
        self.check_brief()?;
        let argv = self.checked_argv(&profile)?;
        let project = project
            .canonicalize()
            .map_err(|e| Error::io("open project", project, e))?;
        let top = git(&project, &["rev-parse", "--show-toplevel"])?;
        let project = PathBuf::from(top.trim());
        let worktree = self.home.worktree(self.cfg, self.id);
        let wt = worktree.display().to_string();
        let mut created_from = None;
        if !worktree.join(".git").exists() {
            let base = match base {
                Some(b) => b.to_string(),
                None => crate::git::default_base(&project, &self.cfg.brief.default_branch)?
                    .map_err(|tried| {
                        Error::refused(format!(
                            "no default branch in {} (tried {tried}): pass --base <ref>",
                            project.display()
                        ))
                    })?,
            };
            fsx::ensure_dir(&self.home.worktrees_dir(self.cfg))?;
            git(&project, &["worktree", "add", "--detach", &wt, &base])?;
            created_from = Some(base);
        }
        let window = format!("fm-{}", self.id);
        let tmux = Tmux::new(&self.cfg.tmux.socket);
        let pane = match self.open_window(&tmux, &wt, argv) {
            Ok(p) => p,
            Err(e) => {
                // Nothing of this spawn stays behind: a worktree it created
                // goes again (no meta points at it yet).
                if created_from.is_some() {
                    let _ = git(&project, &["worktree", "remove", "--force", &wt]);
                }
                return Err(e);
            }
        };
        let brief = String::from_utf8_lossy(
            &fsx::read_optional(&self.home.brief(self.id))?.unwrap_or_default(),
        )
        .into_owned();
        let fm = frontmatter::parse(&brief)
            .map(|(f, _)| f)
            .unwrap_or_default();
        let now = clock::now();
        meta::update(self.home, self.id, |m| {
            for key in ["kind", "mode", "repo", "branch"] {
                if m.get(key).is_none()
                    && let Some(v) = frontmatter::get(&fm, key)
                {
                    m.set(key, v);
                }
            }
            let gen_: u64 = m.str("spawn_gen").parse().unwrap_or(0);
            m.set("project", &project.display().to_string());
            m.set("worktree", &wt);
            m.set("harness", &harness_name);
            m.set("pane", &pane);
            m.set("tmux_socket", &self.cfg.tmux.socket);
            m.set("window", &window);
            m.set("spawn_gen", &(gen_ + 1).to_string());
            m.set("spawned_at", &now.to_string());
        })?;
        self.reset_busy()?;
        let mut ev = Event::at(now, TOOL, self.id.as_str(), "control.spawned")
            .field("pane", pane.clone())
            .field("harness", harness_name.clone());
        if let Some(base) = created_from {
            ev = ev.field("base", base);
        }
        ev.record(self.home);
        Ok(format!(
            "spawned {} pane={pane} worktree={wt} harness={harness_name}",
            self.id
        ))
    }

    fn interrupt(&self) -> Result<String> {
        let meta = self.meta()?;
        let Agent::Alive(info) = self.agent(&meta)? else {
            return Err(Error::refused(format!(
                "nothing to interrupt: no live agent for {}",
                self.id
            )));
        };
        let profile = self.meta_profile(&meta);
        let keys = profile
            .as_ref()
            .map(|p| p.interrupt.clone())
            .unwrap_or_else(|| vec!["C-c".into()]);
        let tmux = self.tmux(&meta);
        for k in &keys {
            tmux.press(&info.id, k)?;
        }
        Event::new(TOOL, self.id.as_str(), "control.interrupted").record(self.home);
        Ok(format!(
            "interrupt-delivered {} harness={}",
            self.id,
            meta.str("harness")
        ))
    }

    /// Stops the agent if it runs. `Ok(false)` when it was already gone;
    /// an agent still running after `exit_wait_secs` is an error.
    fn stop(&self, meta: &Meta) -> Result<bool> {
        match self.try_stop(meta)? {
            Stop::WasGone => Ok(false),
            Stop::Exited => Ok(true),
            Stop::StillRunning(e) => Err(e),
        }
    }

    /// Asks the agent to exit and waits `exit_wait_secs` for it.
    fn try_stop(&self, meta: &Meta) -> Result<Stop> {
        let Agent::Alive(info) = self.agent(meta)? else {
            return Ok(Stop::WasGone);
        };
        let tmux = self.tmux(meta);
        let profile = self.meta_profile(meta);
        let mut sent = Vec::new();
        let busy_record = crate::busy::is_busy(self.home, self.id);
        let screen = tmux.capture(&info.id, 0).unwrap_or_default();
        if busy_record || crate::deliver::screen_busy(profile.as_ref(), &screen) {
            for k in profile
                .as_ref()
                .map(|p| p.interrupt.clone())
                .unwrap_or_default()
            {
                tmux.press(&info.id, &k)?;
                sent.push(format!("key {k}"));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let exit_text = profile
            .as_ref()
            .map(|p| p.exit.clone())
            .unwrap_or_else(|| "exit".into());
        tmux.type_text(&info.id, &exit_text)?;
        tmux.press(&info.id, "Enter")?;
        sent.push(format!("text {exit_text:?} + Enter"));
        let deadline = Instant::now() + Duration::from_secs(self.cfg.control.exit_wait_secs);
        loop {
            if !matches!(self.agent(meta)?, Agent::Alive(_)) {
                return Ok(Stop::Exited);
            }
            if Instant::now() >= deadline {
                return Ok(Stop::StillRunning(Error::refused(format!(
                    "agent of {} still running after {}s; sent {}",
                    self.id,
                    self.cfg.control.exit_wait_secs,
                    sent.join(", then ")
                ))));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn exit(&self) -> Result<String> {
        let meta = self.meta()?;
        let stopped = self.stop(&meta)?;
        // No agent runs now: whatever turn the busy record claims is over.
        self.reset_busy()?;
        if !stopped {
            return Ok(format!("already-stopped {}", self.id));
        }
        Event::new(TOOL, self.id.as_str(), "control.stopped").record(self.home);
        Ok(format!("stopped {}", self.id))
    }

    fn relaunch(&self, note: Option<&str>, harness: Option<&str>) -> Result<String> {
        let meta = self.meta()?;
        let note = note.map(str::trim).filter(|n| !n.is_empty());
        if note.is_none() && meta.kind() != "secondmate" {
            return Err(Error::refused(format!(
                "relaunch of {} requires --note (what the new agent must know)",
                self.id
            )));
        }
        let from = meta.str("harness").to_string();
        let to = harness.map(str::to_string).unwrap_or_else(|| {
            if from.is_empty() {
                "claude".into()
            } else {
                from.clone()
            }
        });
        let profile = self.profile(&to)?;
        let argv = self.checked_argv(&profile)?;
        // The old agent goes first. One that ignores the exit is killed by
        // `respawn-pane -k` below; the note is written once it cannot be
        // read by the old agent, and before the new one starts.
        let killed = match self.try_stop(&meta)? {
            Stop::StillRunning(_) => true,
            Stop::WasGone | Stop::Exited => false,
        };
        if let Some(note) = note {
            let brief_path = self.home.brief(self.id);
            let mut brief = fsx::read(&brief_path)?;
            if !brief.ends_with(b"\n") {
                brief.push(b'\n');
            }
            brief.extend_from_slice(
                format!(
                    "\n## Progress note ({})\n\n{note}\n",
                    clock::human_utc(clock::now())
                )
                .as_bytes(),
            );
            fsx::atomic_write(&brief_path, &brief)?;
        }
        let tmux = self.tmux(&meta);
        let wt = meta.str("worktree").to_string();
        let pane = match self.agent(&meta)? {
            Agent::Exited(info) | Agent::Alive(info) => {
                self.respawn(&tmux, &info.id, &wt, argv)?;
                info.id
            }
            Agent::Gone | Agent::NoPane => self.open_window(&tmux, &wt, argv)?,
        };
        meta::update(self.home, self.id, |m| {
            let gen_: u64 = m.str("spawn_gen").parse().unwrap_or(0);
            m.set("spawn_gen", &(gen_ + 1).to_string());
            m.set("harness", &to);
            m.set("pane", &pane);
            m.set("spawned_at", &clock::now().to_string());
        })?;
        self.reset_busy()?;
        Event::new(TOOL, self.id.as_str(), "control.relaunched")
            .field("from", from.clone())
            .field("to", to.clone())
            .field("killed", killed)
            .record(self.home);
        Ok(format!("relaunched {} harness={to} from={from}", self.id))
    }

    /// Whether the worktree's HEAD survives its removal: contained in a
    /// remote-tracking ref; a local branch also counts for local-only work
    /// and in a project with no remote at all (there is nowhere to push).
    fn head_reachable(&self, meta: &Meta, worktree: &Path) -> Result<bool> {
        let mut scopes = vec!["refs/remotes/"];
        let no_remote = git(worktree, &["remote"])?.trim().is_empty();
        if meta.str("mode") == "local-only" || no_remote {
            scopes.push("refs/heads/");
        }
        Ok(crate::git::ref_containing(worktree, "HEAD", &scopes)?.is_some())
    }

    fn teardown(&self, force: bool) -> Result<String> {
        let meta = self.meta()?;
        let worktree = PathBuf::from(meta.str("worktree"));
        let has_worktree = !meta.str("worktree").is_empty() && worktree.join(".git").exists();
        if has_worktree && !force {
            // The top-level check first: a `.git` that git does not honour
            // would make every later `git -C` answer for an outer repository.
            let head = match crate::git::head(&worktree) {
                Err(e) if e.to_string().contains("not a git repository") => {
                    return Err(Error::refused(format!(
                        "worktree {} is not a git repository of its own (use --force)",
                        worktree.display()
                    )));
                }
                other => other?,
            };
            if !git(&worktree, &["status", "--porcelain"])?
                .trim()
                .is_empty()
            {
                return Err(Error::refused(format!(
                    "worktree {} has uncommitted changes (use --force)",
                    worktree.display()
                )));
            }
            if let Some(head) = head
                && !self.head_reachable(&meta, &worktree)?
            {
                return Err(Error::refused(format!(
                    "HEAD {} is unreachable outside the worktree: push it first (or use --force)",
                    &head[..head.len().min(12)]
                )));
            }
        }
        if let Err(e) = self.stop(&meta)
            && !force
        {
            return Err(e);
        }
        if let Agent::Exited(info) | Agent::Alive(info) = self.agent(&meta)? {
            let _ = self.tmux(&meta).run(&["kill-pane", "-t", &info.id]);
        }
        if has_worktree {
            let project = meta
                .get("project")
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| worktree.clone());
            let wt = worktree.display().to_string();
            git(&project, &["worktree", "remove", "--force", &wt])?;
        }
        let now = clock::now();
        let dest = self.home.archive_entry(self.id, now);
        fsx::ensure_dir(&dest)?;
        let id = self.id;
        let moves = [
            self.home.meta(id),
            self.home.status(id),
            self.home.busy(id),
            self.home.run(id),
            self.home.inbox(id),
            self.home.task_data(id),
        ];
        for src in moves {
            let name = if src == self.home.task_data(id) {
                "data".into()
            } else {
                src.file_name()
                    .map(|n| n.to_os_string())
                    .unwrap_or_default()
            };
            if src.symlink_metadata().is_ok() && !fsx::rename_noclobber(&src, &dest.join(&name))? {
                return Err(Error::refused(format!(
                    "archive entry {} already exists",
                    dest.join(name).display()
                )));
            }
        }
        Event::at(now, TOOL, id.as_str(), "control.torn-down")
            .field("archive", dest.display().to_string())
            .record(self.home);
        Ok(format!("torn-down {id} archive={}", dest.display()))
    }
}

//! `spawn` (docs/spec/control.md): worktree, window, launch argv and meta.

use super::*;

/// What runs in the pane: the argv and the environment it adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Launch {
    pub(super) argv: Vec<String>,
    /// `NAME=value` entries (`respawn-pane -e`).
    pub(super) env: Vec<String>,
}

impl Ctl<'_> {
    /// The launch argv with placeholders filled; `fm-*` programs resolve to
    /// the sibling binaries of this executable.
    pub(super) fn launch_argv(&self, profile: &HarnessProfile) -> Vec<String> {
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

    pub(super) fn check_brief(&self) -> Result<()> {
        let report = brief::check_brief(self.home, self.cfg, self.id, None)?;
        if !report.ok {
            return Err(Error::refused(format!(
                "brief does not pass fm-brief --check: {}",
                report.problems.join("; ")
            )));
        }
        Ok(())
    }

    /// Opens window `fm-<id>` in the configured session running `argv` in
    /// `worktree`, with `remain-on-exit` so the pane outlives its agent;
    /// returns the new pane id. A session that does not exist yet is
    /// created *with* this window as its first one, so no stray shell
    /// window is left beside it; a concurrent spawn that creates the
    /// session first makes this one fall back to a new window in it.
    ///
    /// The window first runs a placeholder (`cat`, waiting on its terminal)
    /// so the pane exists while `remain-on-exit` is set on it alone; then
    /// `respawn-pane -k` starts the agent. An agent that exits at once
    /// leaves a dead pane, never a vanished one.
    ///
    /// The pane is marked as this spawn's ([`owner::MARK_OPTION`] set to
    /// `mark`) before the agent starts; the pane id and the server's
    /// identity are returned.
    pub(super) fn open_window(
        &self,
        tmux: &Tmux,
        worktree: &str,
        launch: Launch,
        mark: &str,
    ) -> Result<(String, String)> {
        let session = &self.cfg.tmux.session;
        let has_session = || {
            tmux.run(&["has-session", "-t", &format!("={session}")])
                .is_ok()
        };
        // No `-e FM_HOME=…` here: the placeholder needs none, `respawn`
        // gives it to the agent (and `new-session -e` needs tmux 3.2).
        let window = format!("fm-{}", self.id);
        // tmux expands formats (`#{…}`, `#(command)`) in a start
        // directory and a new session's name: a `#` in them is written
        // `##`, so a home or session named `fleet #(touch x)` runs nothing.
        let tail = [
            "-n".to_string(),
            window,
            "-c".into(),
            no_format(worktree),
            "-P".into(),
            "-F".into(),
            format!("#{{pane_id}}\t{}", owner::SERVER_FORMAT),
            "--".into(),
            "cat".into(),
        ];
        let new_window = || {
            let mut args: Vec<String> = ["new-window", "-d", "-t"].map(String::from).to_vec();
            args.push(format!("={session}:"));
            args.extend(tail.iter().cloned());
            tmux.run(&args)
        };
        let out = if has_session() {
            new_window()?
        } else {
            let mut args: Vec<String> = [
                "new-session",
                "-d",
                "-s",
                &no_format(session),
                "-x",
                "220",
                "-y",
                "50",
            ]
            .map(String::from)
            .to_vec();
            args.extend(tail.iter().cloned());
            match tmux.run(&args) {
                Ok(out) => out,
                // Someone else created the session meanwhile: join it.
                Err(_) if has_session() => new_window()?,
                Err(e) => return Err(e),
            }
        };
        let (pane, server) = out.trim().split_once('\t').unwrap_or((out.trim(), ""));
        let (pane, server) = (pane.to_string(), server.to_string());
        let started = tmux
            .run(&["set-option", "-p", "-t", &pane, "remain-on-exit", "on"])
            .and_then(|_| self.respawn(tmux, &pane, worktree, launch, mark));
        if let Err(e) = started {
            let _ = tmux.run(&["kill-pane", "-t", &pane]);
            return Err(e);
        }
        Ok((pane, server))
    }

    /// Replaces whatever runs in `pane` (killing it) with the launch,
    /// marking the pane `mark` first. The agent must then be running in
    /// `worktree`, or have exited by itself: one that could not be started
    /// (its program not executable, exit 126 or 127) or that runs
    /// elsewhere is an error, not a spawn.
    pub(super) fn respawn(
        &self,
        tmux: &Tmux,
        pane: &str,
        worktree: &str,
        launch: Launch,
        mark: &str,
    ) -> Result<()> {
        let before = tmux
            .run(&[
                "display-message",
                "-p",
                "-t",
                pane,
                &format!("#{{{}}}", owner::MARK_OPTION),
            ])
            .unwrap_or_default();
        tmux.run(&["set-option", "-p", "-t", pane, owner::MARK_OPTION, mark])?;
        let started = self.respawn_marked(tmux, pane, worktree, launch, mark);
        if started.is_ok()
            && let Err(e) = verify_started(tmux, pane, worktree)
        {
            // An agent that runs where it should not, or could not start,
            // is nobody's: its pane goes (a relaunch then opens a window).
            let _ = tmux.run(&["kill-pane", "-t", pane]);
            return Err(e);
        }
        if started.is_err() {
            // The pane keeps the mark of the agent it held (a failed
            // relaunch leaves the task's pane the task's).
            let before = before.trim_end_matches('\n');
            let _ = if before.is_empty() {
                tmux.run(&["set-option", "-p", "-u", "-t", pane, owner::MARK_OPTION])
            } else {
                tmux.run(&["set-option", "-p", "-t", pane, owner::MARK_OPTION, before])
            };
        }
        started
    }

    fn respawn_marked(
        &self,
        tmux: &Tmux,
        pane: &str,
        worktree: &str,
        launch: Launch,
        mark: &str,
    ) -> Result<()> {
        let env = format!("FM_HOME={}", self.home.root().display());
        // The agent's hooks name the spawn that started it: only its own
        // spawn's meta takes the session they report (session.rs).
        let spawn = format!("{}={mark}", session::SPAWN_ENV);
        let cwd = no_format(worktree);
        let mut args: Vec<String> = [
            "respawn-pane",
            "-k",
            "-t",
            pane,
            "-c",
            &cwd,
            "-e",
            &env,
            "-e",
            &spawn,
        ]
        .map(String::from)
        .to_vec();
        for e in &launch.env {
            args.push("-e".into());
            args.push(e.clone());
        }
        let argv = launch.argv;
        // Where the agent will write its session log (a second busy source).
        crate::agent_report::note_launch(self.home, self.id, &argv, &launch.env);
        // No `-e PATH=…`: tmux already gives a pane started by a command
        // client that client's PATH (the one the program was checked
        // against), and an explicit copy fails for a PATH over tmux's
        // message size or one ending in `;`.
        args.push("--".into());
        // tmux hands a command of one argument to a shell (`sh -c`),
        // which would parse a path with a space or a `$(…)` in it: one
        // program is started through a fixed script that executes its
        // first argument as it is.
        if argv.len() == 1 {
            args.extend(["/bin/sh", "-c", "exec \"$0\""].map(String::from));
        }
        args.extend(argv);
        tmux.run(&args).map(drop)
    }

    /// The launch, refused (exit 1) when its program cannot be found (an
    /// agent that cannot start must not leave a worktree or a window) or
    /// an `env` entry is not `NAME=value` (exit 2). The approval posture's
    /// flags and the hooks' go where [`HarnessProfile::flag_plan`] puts
    /// them: in place of a `{flags}` argument, else right after the
    /// program when it is the harness's own (before the profile's other
    /// arguments, the kickoff prompt among them), else nowhere; the ones
    /// the launch sets itself are left out.
    pub(super) fn checked_launch(&self, profile: &HarnessProfile) -> Result<Launch> {
        let mut argv = self.launch_argv(profile);
        let program = argv.first().map_or("", String::as_str);
        if !harness::program_exists(program, std::env::var_os("PATH").as_deref()) {
            return Err(Error::refused(format!(
                "harness {}: program {program} not found",
                profile.name
            )));
        }
        if let Some(bad) = profile.env.iter().find(|e| {
            e.split_once('=')
                .is_none_or(|(k, _)| k.is_empty() || k.contains(char::is_whitespace))
        }) {
            return Err(Error::usage(format!(
                "harness {}: env entry {bad:?} is not NAME=value",
                profile.name
            )));
        }
        let placeholder = harness::FLAGS_PLACEHOLDER;
        if argv.iter().filter(|a| a.contains(placeholder)).count()
            > argv.iter().filter(|a| *a == placeholder).count().min(1)
        {
            return Err(Error::usage(format!(
                "harness {}: {placeholder} must be one launch argument of its own, at most once",
                profile.name
            )));
        }
        let plan = profile.flag_plan(&argv);
        let mut env = profile.env.clone();
        let mut flags = Vec::new();
        if !matches!(plan.place, harness::Place::Wrapper(_)) {
            if plan.posture_in_launch.is_none() {
                flags = profile.approval_args();
                env.extend(profile.approval_env(rustix::process::geteuid().is_root()));
            }
            if plan.hooks_in_launch.is_none() {
                flags.extend(self.hook_args(profile)?);
            }
        }
        match plan.place {
            harness::Place::Placeholder(i) => {
                argv.splice(i..=i, flags);
            }
            harness::Place::AfterProgram => {
                argv.splice(1..1, flags);
            }
            harness::Place::Wrapper(_) => {}
        }
        Ok(Launch { argv, env })
    }

    /// A new agent has heard none of the pending records: the watcher's
    /// ladder files (`.ring-state`, `.escalated`) left from the previous
    /// agent would keep it from ringing this one, so they go — and with
    /// records pending, a doorbell is owed to it as soon as it is idle
    /// (after its first turn). Best effort: the agent is already running,
    /// and a leftover file only delays rings.
    pub(super) fn restart_ladder(&self) {
        use crate::inbox::ladder_files;
        let pending = !crate::inbox::pending(self.home, self.id)
            .unwrap_or_default()
            .is_empty();
        let reset = ladder_files::clear(self.home, self.id).and_then(|()| {
            if pending {
                ladder_files::write_owed(self.home, self.id, clock::now())
            } else {
                Ok(())
            }
        });
        if let Err(e) = reset {
            crate::output::err_line(&format!(
                "{TOOL}: warning: {}: could not reset the watcher's ladder: {e}",
                self.id
            ));
        }
    }

    /// A new (or no) agent has no turn in progress: an idle busy record
    /// replaces whatever the previous agent left (docs/spec/crew-state.md#busy-record).
    pub(super) fn reset_busy(&self) -> Result<()> {
        let line = crate::status::busy::render(false, clock::now(), TOOL);
        fsx::atomic_write(&self.home.busy(self.id), line.as_bytes())
    }

    pub(super) fn spawn(
        &self,
        project: &Path,
        harness: Option<&str>,
        base: Option<&str>,
    ) -> Result<String> {
        let old = TaskMeta::load(self.home, self.id)?.unwrap_or_default();
        if let Agent::Alive(info) = self.agent(&old)? {
            return Err(Error::refused(format!(
                "{} already has a live agent in pane {}",
                self.id, info.id
            )));
        }
        let harness_name = harness
            .map(str::to_string)
            .or_else(|| old.harness.clone())
            .unwrap_or_else(|| "claude".into());
        let profile = self.profile(&harness_name)?;
        self.check_brief()?;
        let launch = self.checked_launch(&profile)?;
        #[expect(
            clippy::disallowed_methods,
            reason = "outside the home: the captain's project"
        )]
        let project = project
            .canonicalize()
            .map_err(|e| Error::io("open project", project, e))?;
        let top = git(&project, &["rev-parse", "--show-toplevel"])?;
        let project = PathBuf::from(top.trim());
        let worktree = self.home.worktree(self.cfg, self.id);
        let wt = worktree.display().to_string();
        let mut created_from = None;
        #[expect(
            clippy::disallowed_methods,
            reason = "outside the home: the worktree is git's"
        )]
        let fresh = !worktree.join(".git").exists();
        if fresh {
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
            // Refused before anything is created unless approved.
            let plan = setup::approved_plan(self.home, self.cfg, &project, &base)?;
            fsx::ensure_dir(&self.home.worktrees_dir(self.cfg))?;
            git(&project, &["worktree", "add", "--detach", &wt, &base])?;
            self.set_up(&project, &worktree, &base, &plan)?;
            created_from = Some(base);
        }
        // The commit the worktree started from, for review and landing
        // (docs/spec/land.md#base): asked of the new worktree itself.
        let base_commit = match &created_from {
            Some(_) => crate::git::head(&worktree).ok().flatten(),
            None => None,
        };
        let window = format!("fm-{}", self.id);
        let tmux = Tmux::new(&self.cfg.tmux.socket);
        let spawn_id = owner::new_spawn_id();
        let mark = owner::mark(self.id, &spawn_id);
        let (pane, server) = match self.open_window(&tmux, &wt, launch, &mark) {
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
        let header = brief::BriefHeader::of_task(self.home, self.id)?;
        let now = clock::now();
        meta::update(self.home, self.id, |m| {
            header.apply_to_meta(m, brief::MetaSync::FillMissing);
            let gen_ = TaskMeta::from_raw(m.clone()).spawn_gen;
            m.set("project", &project.display().to_string());
            m.set("worktree", &wt);
            m.set("harness", &harness_name);
            m.set("pane", &pane);
            m.set("spawn_id", &spawn_id);
            m.set("tmux_server", &server);
            m.set("tmux_socket", &self.cfg.tmux.socket);
            m.set("window", &window);
            m.set("spawn_gen", &gen_.saturating_add(1).to_string());
            m.set("spawned_at", &now.to_string());
            if let (Some(sha), Some(name)) = (&base_commit, &created_from) {
                m.set("base", sha);
                m.set("base_ref", name);
            }
            m.remove(session::KEY);
            m.remove(session::SPAWN_KEY);
        })?;
        self.reset_busy()?;
        self.restart_ladder();
        let event = Event::ControlSpawned {
            pane: pane.clone(),
            harness: harness_name.clone(),
            base: created_from,
        };
        Entry::new(now, Tool::Control, self.id.as_str(), event).record(self.home);
        Ok(format!(
            "spawned {} pane={pane} worktree={wt} harness={harness_name}",
            self.id
        ))
    }
}

/// `s` as tmux must receive it where it expands formats (a start
/// directory, a new session's name) to read it back unchanged.
pub(super) fn no_format(s: &str) -> String {
    s.replace('#', "##")
}

/// How long after its start an agent that could not be started shows as
/// a dead pane, at most.
const START_CHECK_MS: u64 = 150;

/// How long a pane that reports another directory is asked again before
/// its agent counts as started outside its worktree, and how often.
const PATH_WAIT_MS: u64 = 1000;
const PATH_POLL_MS: u64 = 50;

/// Checks a just-started agent: running in `worktree`, or exited by
/// itself (not with the shell's "cannot execute" or "not found").
fn verify_started(tmux: &Tmux, pane: &str, worktree: &str) -> Result<()> {
    let fmt = "#{pane_dead}\t#{pane_dead_status}\t#{pane_current_path}";
    let ask = || -> Result<(bool, String, String)> {
        let out = tmux.run(&["display-message", "-p", "-t", pane, fmt])?;
        let mut f = out.trim_end_matches('\n').splitn(3, '\t');
        let dead = f.next() == Some("1");
        let status = f.next().unwrap_or("").to_string();
        Ok((dead, status, f.next().unwrap_or("").to_string()))
    };
    // Right after `new-window` the pane's process may not have entered its
    // start directory yet (tmux forks, then changes directory): until it
    // has, tmux reports the server's own directory. Asked again a bounded
    // while before the start counts as outside the worktree.
    let mut asked = 0;
    loop {
        let (dead, _, path) = ask()?;
        if dead || path.is_empty() || same_dir(&path, worktree) {
            break;
        }
        if asked >= PATH_WAIT_MS {
            return Err(Error::refused(format!(
                "the agent started in {path}, not in its worktree {worktree}"
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(PATH_POLL_MS));
        asked += PATH_POLL_MS;
    }
    std::thread::sleep(std::time::Duration::from_millis(START_CHECK_MS));
    let (dead, status, _) = ask()?;
    if dead && matches!(status.as_str(), "126" | "127") {
        return Err(Error::refused(format!(
            "the agent could not be started (exit {status})"
        )));
    }
    Ok(())
}

#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the worktree is git's, the pane's path tmux's"
)]
fn same_dir(a: &str, b: &str) -> bool {
    let canon = |p: &str| std::fs::canonicalize(p).unwrap_or_else(|_| p.into());
    a == b || canon(a) == canon(b)
}

//! `interrupt`, `exit` and `relaunch` (docs/spec/control.md): stopping an agent and
//! starting the next one in the same pane.

use super::*;

impl Ctl<'_> {
    pub(super) fn interrupt(&self) -> Result<String> {
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
            .map_or_else(|| vec!["C-c".into()], |p| p.interrupt.clone());
        let tmux = self.tmux(&meta);
        // Escape stops a turn, but on an idle agent it opens a history
        // dialog (Claude Code's rewind, Codex's backtrack): with no turn
        // to stop, nothing is pressed.
        if !keys.is_empty() && keys.iter().all(|k| k == "Escape") {
            let screen = tmux.capture(&info.id, 0).unwrap_or_default();
            if !self.busy_now(profile.as_ref(), &screen) {
                return Ok(format!(
                    "interrupt-skipped {} harness={} (not busy)",
                    self.id,
                    meta.harness.as_deref().unwrap_or("")
                ));
            }
        }
        for k in &keys {
            tmux.press(&info.id, k)?;
        }
        // The turn is over: no Stop hook reports an interrupted one.
        self.reset_busy()?;
        self.record(Event::ControlInterrupted);
        Ok(format!(
            "interrupt-delivered {} harness={}",
            self.id,
            meta.harness.as_deref().unwrap_or("")
        ))
    }

    /// Whether a turn runs now: the screen's busy line, or a busy record
    /// the screen does not overrule. A turn the captain stopped with his
    /// own Escape ends with no hook, so its busy record stays; a screen
    /// that shows every turn and reads idle says it is over, and pressing
    /// the interrupt keys again would open the agent's history dialog.
    fn busy_now(&self, profile: Option<&HarnessProfile>, screen: &str) -> bool {
        if crate::tmux::screen::screen_busy(profile, screen) {
            return true;
        }
        crate::status::busy::busy_at(self.home, self.id).is_some_and(|at| {
            let age = clock::now().saturating_sub(at);
            !crate::tmux::screen::screen_overrules_busy_record(profile, screen, age)
        })
    }

    /// Stops the agent if it runs. `Ok(false)` when it was already gone;
    /// an agent still running after `exit_wait_secs` is an error.
    pub(super) fn stop(&self, meta: &TaskMeta, force: bool) -> Result<bool> {
        match self.try_stop(meta, force)? {
            Stop::WasGone => Ok(false),
            Stop::Exited => Ok(true),
            Stop::StillRunning(e) => Err(e),
        }
    }

    /// Asks the agent to exit and waits `exit_wait_secs` for it. Someone's
    /// text in the composer, or a dialog, refuses it (nothing typed)
    /// unless `force`, which clears the composer (`C-c`) or cancels the
    /// dialog (`Escape`) first.
    pub(super) fn try_stop(&self, meta: &TaskMeta, force: bool) -> Result<Stop> {
        let Agent::Alive(info) = self.agent(meta)? else {
            return Ok(Stop::WasGone);
        };
        let tmux = self.tmux(meta);
        let profile = self.meta_profile(meta);
        let mut sent = Vec::new();
        let screen = tmux.capture(&info.id, 0).unwrap_or_default();
        if self.busy_now(profile.as_ref(), &screen) {
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
            .map_or_else(|| "exit".into(), |p| p.exit.clone());
        // No doorbell is typed while the exit command is (the ring lock;
        // when it cannot be made, as on a read-only state/, the exit goes
        // ahead without it, as a ring does).
        let ring = match crate::fsx::lock(
            &self.home.ring_lock(self.id),
            crate::tmux::deliver::ring_lock_wait(&self.cfg.send),
        ) {
            Ok(held) => Some(held),
            Err(e @ Error::LockTimeout { .. }) => return Err(e),
            Err(_) => None,
        };
        let typed_before = self.clear_for_exit(
            &tmux,
            profile.as_ref(),
            &info.id,
            &exit_text,
            force,
            &mut sent,
        )?;
        // The doorbell's checks (docs/spec/ring.md#delivery): the command must show before
        // Enter (an Enter in the same burst is swallowed by some agents),
        // and Enter is pressed again while it still sits unsent.
        if !typed_before {
            tmux.type_text(&info.id, &exit_text)?;
        }
        let send = &self.cfg.send;
        let sleep = &std::thread::sleep;
        crate::tmux::deliver::settle(&tmux, profile.as_ref(), &info.id, &exit_text, send, sleep);
        let gone = || !matches!(self.agent(meta), Ok(Agent::Alive(_)));
        let (_, presses) = crate::tmux::deliver::press_until_taken(
            &tmux,
            profile.as_ref(),
            &info.id,
            &exit_text,
            send,
            sleep,
            &gone,
        );
        sent.push(match presses {
            0 | 1 => format!("text {exit_text:?} + Enter"),
            n => format!("text {exit_text:?} + Enter \u{d7}{n}"),
        });
        drop(ring);
        // A huge configured wait must not overflow the clock: it waits
        // "forever" (a century) instead.
        let deadline = Instant::now()
            .checked_add(Duration::from_secs(self.cfg.control.exit_wait_secs))
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(100 * 365 * 86_400));
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

    /// Makes the composer ready for the exit command, as a doorbell would
    /// find it (docs/spec/ring.md#delivery): empty, or holding only firstmate's own text (a
    /// doorbell left unsent, which `C-c` clears: the message stays in the
    /// inbox; the exit command itself, left by an earlier try: `Ok(true)`,
    /// it is not typed again). Someone's text, or a dialog, is refused —
    /// `exit-refused`, naming it — unless `force`. Composer not on the
    /// screen (an unknown overlay, a booting agent): typed as before.
    fn clear_for_exit(
        &self,
        tmux: &Tmux,
        profile: Option<&HarnessProfile>,
        pane: &str,
        exit_text: &str,
        force: bool,
        sent: &mut Vec<String>,
    ) -> Result<bool> {
        use crate::tmux::screen::{self, Composer, Screen};
        let rules = screen::rules_of(profile);
        let doorbell = crate::tmux::deliver::doorbell(self.home, self.id);
        let (mut escaped, mut cleared) = (None::<std::time::Instant>, false);
        let press = |key: &str, sent: &mut Vec<String>| -> Result<()> {
            tmux.press(pane, key)?;
            sent.push(format!("key {key}"));
            std::thread::sleep(Duration::from_millis(CLEAR_WAIT_MS));
            Ok(())
        };
        let refused = |what: String| {
            Error::refused(format!(
                "exit-refused {}: {what}; nothing typed (`fm-control {} exit --force` {})",
                self.id,
                self.id,
                if what.starts_with("waiting") {
                    "cancels it with Escape first"
                } else {
                    "clears it first"
                }
            ))
        };
        loop {
            let shown = Screen::parse(&tmux.capture(pane, 0)?);
            if let Some(d) = screen::dialog(&rules, &shown) {
                let what = format!("waiting in a dialog: {d}");
                if !force {
                    return Err(refused(what));
                }
                match escaped {
                    None => {
                        press("Escape", sent)?;
                        escaped = Some(std::time::Instant::now());
                    }
                    // A busy machine redraws late: the dialog the Escape
                    // cancelled may still show for a while. One Escape
                    // only (a second opens the agent's history dialog).
                    Some(at) if at.elapsed() < Duration::from_millis(DIALOG_CLOSE_WAIT_MS) => {
                        std::thread::sleep(Duration::from_millis(CLOSE_POLL_MS));
                    }
                    Some(_) => return Err(refused(what)),
                }
                continue;
            }
            let (text, ours, exit_typed) = match screen::composer(&rules, &shown) {
                Composer::Absent => return Ok(false),
                Composer::Holds(t) => {
                    let ours = screen::holds_doorbell(&t, &doorbell);
                    let exit_typed = t.trim() == exit_text.trim();
                    (t, ours, exit_typed)
                }
                Composer::Unknown => match tmux.cursor_line(pane)? {
                    Some(l) if screen::holds_input(&l) => {
                        let ours = screen::unsent(&rules, &shown, Some(&l), &doorbell);
                        let exit_typed = l.trim_end().ends_with(exit_text.trim());
                        (l.trim().to_string(), ours, exit_typed)
                    }
                    _ => return Ok(false),
                },
            };
            if text.is_empty() {
                return Ok(false);
            }
            if exit_typed {
                return Ok(true);
            }
            let short: String = text.chars().take(80).collect();
            let what = format!("the composer holds text {short:?}");
            if (!ours && !force) || cleared {
                return Err(refused(what));
            }
            press("C-c", sent)?;
            cleared = true;
        }
    }

    pub(super) fn exit(&self, force: bool) -> Result<String> {
        let meta = self.meta()?;
        let stopped = self.stop(&meta, force)?;
        // No agent runs now: whatever turn the busy record claims is over.
        self.reset_busy()?;
        if !stopped {
            return Ok(format!("already-stopped {}", self.id));
        }
        // Stopped on purpose: no death for the watcher to report, nor
        // for `fm restore` to undo.
        if let Some(pane) = meta.pane.as_deref() {
            let agent = crate::inbox::ladder_files::DeadSeen {
                pane: pane.to_string(),
                spawned_at: meta.spawned_at,
            };
            let now = crate::clock::now();
            let _ =
                crate::inbox::ladder_files::write_agent_stopped(self.home, self.id, now, &agent);
        }
        self.record(Event::ControlStopped);
        Ok(format!("stopped {}", self.id))
    }

    pub(super) fn relaunch(
        &self,
        note: Option<&str>,
        harness: Option<&str>,
        force: bool,
    ) -> Result<String> {
        let meta = self.meta()?;
        let note = note.map(str::trim).filter(|n| !n.is_empty());
        if note.is_none() && meta.kind() != Kind::Secondmate {
            return Err(Error::refused(format!(
                "relaunch of {} requires --note (what the new agent must know)",
                self.id
            )));
        }
        let from = meta.harness.clone().unwrap_or_default();
        let to = harness.map_or_else(
            || {
                if from.is_empty() {
                    "claude".into()
                } else {
                    from.clone()
                }
            },
            str::to_string,
        );
        let profile = self.profile(&to)?;
        let launch = self.checked_launch(&profile)?;
        // The old agent goes first. One that ignores the exit is killed by
        // `respawn-pane -k` below; the note is written once it cannot be
        // read by the old agent, and before the new one starts.
        let killed = match self.try_stop(&meta, force)? {
            Stop::StillRunning(_) => true,
            Stop::WasGone | Stop::Exited => false,
        };
        if let Some(note) = note {
            self.append_note(note)?;
        }
        let tmux = self.tmux(&meta);
        let wt = meta
            .worktree
            .as_ref()
            .map(|w| w.display().to_string())
            .unwrap_or_default();
        let spawn_id = owner::new_spawn_id();
        let mark = owner::mark(self.id, &spawn_id);
        // The task's own pane is respawned; one that is gone, or that
        // does not prove it is the task's, is left alone for a new window.
        let (pane, server) = match self.agent(&meta)? {
            Agent::Exited(info) | Agent::Alive(info) => {
                self.respawn(&tmux, &info.id, &wt, launch, &mark)?;
                (info.id, info.server)
            }
            Agent::Gone | Agent::NoPane => self.open_window(&tmux, &wt, launch, &mark)?,
        };
        meta::update(self.home, self.id, |m| {
            let gen_ = TaskMeta::from_raw(m.clone()).spawn_gen;
            m.set("spawn_gen", &gen_.saturating_add(1).to_string());
            m.set("harness", &to);
            m.set("pane", &pane);
            m.set("spawn_id", &spawn_id);
            m.set("tmux_server", &server);
            m.set("spawned_at", &clock::now().to_string());
            // A new agent: its conversation is not the old one's.
            m.remove(session::KEY);
            m.remove(session::SPAWN_KEY);
        })?;
        self.reset_busy()?;
        self.restart_ladder();
        self.record(Event::ControlRelaunched {
            from: from.clone(),
            to: to.clone(),
            killed,
        });
        Ok(format!("relaunched {} harness={to} from={from}", self.id))
    }
}

impl Ctl<'_> {
    /// Appends `## Progress note (<UTC time>)` with `note` to the brief
    /// (relaunch, and a restore that starts the agent afresh).
    pub(super) fn append_note(&self, note: &str) -> Result<()> {
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
        fsx::atomic_write(&brief_path, &brief)
    }
}

/// How long a key that clears the composer or cancels a dialog before an
/// exit gets to take effect before the screen is read again.
const CLEAR_WAIT_MS: u64 = 300;

/// How long a dialog cancelled with Escape may still show before the exit
/// is refused after all, and how often the screen is read meanwhile.
const DIALOG_CLOSE_WAIT_MS: u64 = 3000;
const CLOSE_POLL_MS: u64 = 100;

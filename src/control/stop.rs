//! `interrupt`, `exit` and `relaunch` (SPEC §10.1): stopping an agent and
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
            let busy = crate::status::busy::is_busy(self.home, self.id)
                || crate::tmux::screen::screen_busy(profile.as_ref(), &screen);
            if !busy {
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

    /// Stops the agent if it runs. `Ok(false)` when it was already gone;
    /// an agent still running after `exit_wait_secs` is an error.
    pub(super) fn stop(&self, meta: &TaskMeta) -> Result<bool> {
        match self.try_stop(meta)? {
            Stop::WasGone => Ok(false),
            Stop::Exited => Ok(true),
            Stop::StillRunning(e) => Err(e),
        }
    }

    /// Asks the agent to exit and waits `exit_wait_secs` for it.
    pub(super) fn try_stop(&self, meta: &TaskMeta) -> Result<Stop> {
        let Agent::Alive(info) = self.agent(meta)? else {
            return Ok(Stop::WasGone);
        };
        let tmux = self.tmux(meta);
        let profile = self.meta_profile(meta);
        let mut sent = Vec::new();
        let busy_record = crate::status::busy::is_busy(self.home, self.id);
        let screen = tmux.capture(&info.id, 0).unwrap_or_default();
        if busy_record || crate::tmux::screen::screen_busy(profile.as_ref(), &screen) {
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
        // The doorbell's checks (SPEC §5.3): the command must show before
        // Enter (an Enter in the same burst is swallowed by some agents),
        // and Enter is pressed again while it still sits unsent.
        tmux.type_text(&info.id, &exit_text)?;
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

    pub(super) fn exit(&self) -> Result<String> {
        let meta = self.meta()?;
        let stopped = self.stop(&meta)?;
        // No agent runs now: whatever turn the busy record claims is over.
        self.reset_busy()?;
        if !stopped {
            return Ok(format!("already-stopped {}", self.id));
        }
        self.record(Event::ControlStopped);
        Ok(format!("stopped {}", self.id))
    }

    pub(super) fn relaunch(&self, note: Option<&str>, harness: Option<&str>) -> Result<String> {
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
        let wt = meta
            .worktree
            .as_ref()
            .map(|w| w.display().to_string())
            .unwrap_or_default();
        let pane = match self.agent(&meta)? {
            Agent::Exited(info) | Agent::Alive(info) => {
                self.respawn(&tmux, &info.id, &wt, launch)?;
                info.id
            }
            Agent::Gone | Agent::NoPane => self.open_window(&tmux, &wt, launch)?,
        };
        meta::update(self.home, self.id, |m| {
            let gen_ = TaskMeta::from_raw(m.clone()).spawn_gen;
            m.set("spawn_gen", &gen_.saturating_add(1).to_string());
            m.set("harness", &to);
            m.set("pane", &pane);
            m.set("spawned_at", &clock::now().to_string());
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

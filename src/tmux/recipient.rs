//! A task as a doorbell target: the pane facts its meta records (SPEC §4 —
//! `pane`, `tmux_socket`, `harness`) turned into a [`Target`] and rung.
//!
//! Every ring outside the watcher goes through here (`fm-send`, and through
//! [`crate::inbox::send`] `fm-brief`'s notice and `fm-board dispatch`); the
//! watcher reads the same [`crate::meta::TaskMeta`] fields and rings through
//! the same [`crate::tmux::deliver`]. The pane id is the only identity
//! trusted; the socket is meta's `tmux_socket`, else the config's
//! `tmux.socket`; a missing or unknown harness means no profile (alive while
//! the pane exists and is not dead).

use std::collections::BTreeMap;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::events::{Entry, Event, Tool};
use crate::harness::{self, HarnessProfile};
use crate::home::Home;
use crate::meta::TaskMeta;
use crate::task_id::TaskId;
use crate::tmux::deliver::{self, Outcome, Target};
use crate::tmux::owner::Claim;
use crate::tmux::pane::{Pane, PaneInfo, Tmux};

#[derive(Debug, Clone)]
pub(crate) struct Recipient {
    pub id: TaskId,
    /// `%N`, or `None` when meta records no pane.
    pub pane: Option<String>,
    pub(crate) tmux: Tmux,
    pub(crate) profile: Option<HarnessProfile>,
    /// Meta's `spawned_at`: a ring right after it may meet a booting agent.
    pub(crate) spawned_at: Option<u64>,
    /// What the pane must prove to be this task's.
    pub(crate) claim: Option<Claim>,
}

impl Recipient {
    /// The recipient from meta (which may be absent for a task known only by
    /// its brief). An unknown task (no meta and no brief) is refused.
    pub(crate) fn load(home: &Home, cfg: &Config, id: &TaskId) -> Result<Recipient> {
        if !crate::meta::task_known(home, id)? {
            return Err(Error::refused(format!(
                "unknown task {id}: no meta and no brief"
            )));
        }
        let meta = TaskMeta::load(home, id)?.unwrap_or_default();
        Ok(Recipient::from_meta(cfg, id, &meta))
    }

    pub(crate) fn from_meta(cfg: &Config, id: &TaskId, meta: &TaskMeta) -> Recipient {
        Recipient {
            id: id.clone(),
            pane: meta.pane.clone(),
            tmux: Tmux::new(meta.socket(cfg)),
            profile: meta
                .harness
                .as_deref()
                .and_then(|h| harness::profile(&cfg.harness, h)),
            spawned_at: meta.spawned_at,
            claim: Claim::of(id, meta),
        }
    }

    fn target(&self, home: &Home) -> Target<'_> {
        Target {
            pane: self.pane.as_deref(),
            claim: self.claim.as_ref(),
            profile: self.profile.as_ref(),
            busy_record: self
                .pane
                .as_ref()
                .and_then(|_| crate::status::busy::busy_at(home, &self.id)),
            spawned_at: self.spawned_at,
            ring_lock: Some(home.ring_lock(&self.id)),
        }
    }

    /// Rings the doorbell (SPEC §5.3), asking tmux about the pane first.
    pub(crate) fn ring(&self, home: &Home, cfg: &Config) -> Outcome {
        let line = deliver::doorbell(home, &self.id);
        deliver::deliver(
            &self.tmux,
            &self.target(home),
            &line,
            &cfg.send,
            &std::thread::sleep,
        )
    }

    /// Rings a pane already looked up (`info` from one `list()` call).
    pub(crate) fn ring_known(&self, home: &Home, cfg: &Config, info: &PaneInfo) -> Outcome {
        let line = deliver::doorbell(home, &self.id);
        deliver::deliver_to(
            &self.tmux,
            &self.target(home),
            info,
            &line,
            &cfg.send,
            &std::thread::sleep,
        )
    }

    /// Presses one named key in the pane (`fm-send --key`) and records
    /// `pane.key` by `actor`; returns the pane id. No pane or a vanished
    /// one is refused (exit 1); a tmux failure is exit 3.
    pub(crate) fn press(&self, home: &Home, key: &str, actor: &str) -> Result<String> {
        let Some(pane) = &self.pane else {
            return Err(Error::refused(format!("no pane recorded for {}", self.id)));
        };
        let info = self.tmux.info(pane)?;
        if let Some(claim) = &self.claim
            && let Err(lost) = claim.check(info.as_ref(), None)
        {
            return Err(Error::refused(format!(
                "pane {pane} of {} is gone{}; no key pressed",
                self.id,
                lost.reason().map(|r| format!(" ({r})")).unwrap_or_default()
            )));
        }
        self.tmux.press(pane, key)?;
        // The captain's answer to a dialog the watcher woke him for: a
        // dialog found there from now on is another one.
        let now = crate::clock::now();
        if let Err(e) = crate::inbox::ladder_files::mark_dialog_acted(home, &self.id, now) {
            crate::output::err_line(&format!("fm-send: warning: {}: {e}", self.id));
        }
        let event = Event::PaneKey {
            key: key.to_string(),
            pane: pane.clone(),
        };
        Entry::new(crate::clock::now(), Tool::Send, self.id.as_str(), event)
            .by(actor)
            .record(home);
        Ok(pane.clone())
    }

    /// Whether `info` shows this recipient's agent alive, in a pane that
    /// proves it is the task's ([`crate::tmux::owner`]).
    pub(crate) fn alive(&self, info: &PaneInfo) -> bool {
        self.claim
            .as_ref()
            .is_none_or(|c| c.check(Some(info), None).is_ok())
            && harness::is_alive(self.profile.as_ref(), info.dead, &info.command)
    }
}

/// Every task with meta whose pane exists and whose agent is alive, with
/// its pane facts. tmux is asked once per distinct socket (normally once),
/// never once per task; a socket whose server cannot be listed contributes
/// nobody.
pub(crate) fn live(home: &Home, cfg: &Config) -> Result<Vec<(Recipient, PaneInfo)>> {
    let mut lists: BTreeMap<Option<String>, Vec<PaneInfo>> = BTreeMap::new();
    let mut out = Vec::new();
    for id in home.task_ids_with_meta()? {
        // One unreadable meta (a symlink, a directory) must not stop the
        // broadcast to everyone else: warn and leave that task out.
        let meta = match TaskMeta::load(home, &id) {
            Ok(m) => m.unwrap_or_default(),
            Err(e) => {
                crate::output::err_line(&format!("fm-send: warning: {id}: skipped: {e}"));
                continue;
            }
        };
        let r = Recipient::from_meta(cfg, &id, &meta);
        let Some(pane) = r.pane.clone() else { continue };
        let panes = lists
            .entry(r.tmux.socket.clone())
            .or_insert_with(|| r.tmux.list().unwrap_or_default());
        if let Some(info) = panes.iter().find(|p| p.id == pane).cloned()
            && r.alive(&info)
        {
            out.push((r, info));
        }
    }
    Ok(out)
}

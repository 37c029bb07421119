//! A task as a doorbell target: the pane facts its meta records (docs/spec/meta.md —
//! `pane`, `tmux_socket`, `harness`) turned into a [`Target`] and rung.
//!
//! [`Recipient::ring`] is the one way a doorbell is rung: `fm-send` (and
//! through [`crate::inbox::send`] `fm top`, `fm-brief`'s notice and
//! `fm-board dispatch`) and the watcher's ladder all call it, telling it
//! what they already know ([`Known`]). It builds the one [`Target`], takes
//! the task's ring lock unless the caller holds it, and keeps the owed rule
//! (a ring held back is owed, a ring that landed pays what was owed). The
//! pane id is the only identity trusted; the socket is meta's
//! `tmux_socket`, else the config's `tmux.socket`; a missing or unknown
//! harness means no profile (alive while the pane exists and is not dead).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::events::{Entry, Event, Tool};
use crate::harness::{self, HarnessProfile};
use crate::home::Home;
use crate::inbox::ladder_files;
use crate::leg::Leg;
use crate::meta::TaskMeta;
use crate::task_id::TaskId;
use crate::tmux::deliver::{self, Outcome, RingLock, Target};
use crate::tmux::owner::Claim;
use crate::tmux::pane::{Pane, PaneInfo, Tmux};

/// What a caller already knows when it rings; the default knows nothing
/// (tmux is asked, the busy record read, the ring lock waited for).
#[derive(Default)]
pub(crate) struct Known<'a> {
    /// The pane as the caller's own listing shows it: no second query.
    pub(crate) info: Option<&'a PaneInfo>,
    /// The tmux to type through, when not the recipient's own socket (the
    /// watcher's, which tests replace).
    pub(crate) backend: Option<&'a dyn Pane>,
    /// The busy record, when the caller read it (`Some(None)`: not busy).
    pub(crate) busy_record: Option<Option<u64>>,
    /// The caller holds the task's ring lock ([`try_ring_lock`]).
    pub(crate) lock_held: bool,
    /// Whether a ring is owed (`.ring-owed` exists), when the caller read
    /// the ladder files: a landed ring then removes nothing it need not.
    pub(crate) owed: Option<bool>,
    /// How to wait between two looks at the screen (tests: not at all).
    pub(crate) sleep: Option<&'a dyn Fn(Duration)>,
}

/// What one ring did, and what could not be recorded of it.
#[derive(Debug)]
pub(crate) struct Rung {
    pub(crate) outcome: Outcome,
    /// The way the doorbell went (docs/spec/ring.md#legs): `typed` unless
    /// the profile's leg took it.
    pub(crate) leg: Leg,
    pub(crate) warnings: Vec<String>,
}

/// The task's ring lock, tried once, for a ringer that must not wait (the
/// watcher, which writes its ladder files under it before ringing with
/// [`Known::lock_held`]). `Ok(None)`: another ring holds it. An error: no
/// lock can be made (a read-only `state/`), which stops no ring.
pub(crate) fn try_ring_lock(home: &Home, id: &TaskId) -> Result<Option<crate::fsx::LockGuard>> {
    crate::fsx::try_lock(&home.ring_lock(id))
}

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
    /// Meta, kept only for a profile with a delivery leg (what the leg
    /// checks its waiter or thread against).
    pub(crate) leg_meta: Option<std::sync::Arc<TaskMeta>>,
}

impl Recipient {
    /// The recipient from meta (which may be absent for a task known only by
    /// its brief). An unknown task (no meta and no brief) is refused.
    pub(crate) fn load(home: &Home, cfg: &Config, id: &TaskId) -> Result<Recipient> {
        if !crate::meta::task_known(home, id)? {
            return Err(Error::UnknownTask {
                id: id.to_string(),
                lacks: "no meta and no brief",
            });
        }
        let meta = TaskMeta::load(home, id)?.unwrap_or_default();
        Ok(Recipient::from_meta(cfg, id, &meta))
    }

    pub(crate) fn from_meta(cfg: &Config, id: &TaskId, meta: &TaskMeta) -> Recipient {
        let profile = meta
            .harness
            .as_deref()
            .and_then(|h| harness::profile(&cfg.harness, h));
        let leg_meta = profile
            .as_ref()
            .filter(|p| p.leg != Leg::Typed && cfg.send.legs)
            .map(|_| std::sync::Arc::new(meta.clone()));
        Recipient {
            id: id.clone(),
            pane: meta.pane.clone(),
            tmux: Tmux::new(meta.socket(cfg)),
            profile,
            spawned_at: meta.spawned_at,
            claim: Claim::of(id, meta),
            leg_meta,
        }
    }

    /// The doorbell through the profile's leg, when it has one that takes
    /// it now ([`crate::leg::ring`]); `None`: type it.
    fn ring_leg(&self, home: &Home, cfg: &Config) -> Option<Leg> {
        let meta = self.leg_meta.as_deref()?;
        let leg = self.profile.as_ref()?.leg;
        match crate::leg::ring(home, cfg, &self.id, leg, meta) {
            Ok(d) => {
                let event = Event::LegRang {
                    leg: d.leg.as_str(),
                    detail: d.detail,
                };
                Entry::new(crate::clock::now(), Tool::Send, self.id.as_str(), event)
                    .by("firstmate")
                    .record(home);
                Some(d.leg)
            }
            Err(why) => {
                let event = Event::LegFellBack {
                    leg: leg.as_str(),
                    why,
                };
                Entry::new(crate::clock::now(), Tool::Send, self.id.as_str(), event)
                    .by("firstmate")
                    .record(home);
                None
            }
        }
    }

    /// Rings the doorbell (docs/spec/ring.md#delivery): the one ring of every sender and of
    /// the watcher. `known` is what the caller already asked (a pane
    /// listing, the busy record, the ring lock): nothing is asked twice.
    /// A ring held back (busy agent, dialog, booting agent, ring lock held
    /// past the longest ring) is recorded as owed for the watcher to ring
    /// at the turn's end; a ring that landed pays what was owed. What
    /// could not be recorded comes back as warnings, the caller's to print.
    pub(crate) fn ring(&self, home: &Home, cfg: &Config, now: u64, known: Known<'_>) -> Rung {
        let busy_record = match known.busy_record {
            Some(b) => b,
            None => self
                .pane
                .as_ref()
                .and_then(|_| crate::status::busy::busy_at(home, &self.id)),
        };
        let target = Target {
            pane: self.pane.as_deref(),
            claim: self.claim.as_ref(),
            profile: self.profile.as_ref(),
            busy_record,
            // A spawn stamped in the future (the clock stepped back since)
            // happened before the step: the agent is not booting any more.
            spawned_at: self.spawned_at.filter(|&at| at <= now),
            ring_lock: if known.lock_held {
                RingLock::Held
            } else {
                RingLock::Wait(home.ring_lock(&self.id))
            },
        };
        let id = &self.id;
        if let Some(leg) = self.ring_leg(home, cfg) {
            let mut warnings = Vec::new();
            if known.owed != Some(false)
                && let Err(e) = ladder_files::clear_owed(home, id)
            {
                warnings.push(format!("{id}: could not clear the owed doorbell: {e}"));
            }
            return Rung {
                outcome: Outcome::Rang,
                leg,
                warnings,
            };
        }
        let line = deliver::doorbell(home, &self.id);
        let backend: &dyn Pane = known.backend.unwrap_or(&self.tmux);
        let sleep: &dyn Fn(Duration) = known.sleep.unwrap_or(&std::thread::sleep);
        let outcome = match known.info {
            Some(info) => deliver::deliver_to(backend, &target, info, &line, &cfg.send, sleep),
            None => deliver::deliver(backend, &target, &line, &cfg.send, sleep),
        };
        let mut warnings = Vec::new();
        if outcome.owed() {
            if let Err(e) = ladder_files::write_owed(home, id, now) {
                warnings.push(format!(
                    "{id}: could not record the held-back doorbell: {e}"
                ));
            }
        } else if outcome == Outcome::Rang
            && known.owed != Some(false)
            && let Err(e) = ladder_files::clear_owed(home, id)
        {
            // A doorbell that landed asks the agent to read every pending
            // record: a ring owed from earlier is paid.
            warnings.push(format!("{id}: could not clear the owed doorbell: {e}"));
        }
        Rung {
            outcome,
            leg: Leg::Typed,
            warnings,
        }
    }

    /// Presses one named key in the pane (`fm-send --key`) and records
    /// `pane.key` by `actor`; returns the pane id. No pane or a vanished
    /// one is refused (exit 1); a tmux failure is exit 3.
    pub(crate) fn press(&self, home: &Home, key: &str, actor: &str) -> Result<String> {
        let Some(pane) = &self.pane else {
            return Err(Error::NoPane {
                id: self.id.to_string(),
            });
        };
        let info = self.tmux.info(pane)?;
        if let Some(claim) = &self.claim
            && let Err(lost) = claim.check(info.as_ref(), None)
        {
            return Err(Error::PaneGone {
                id: self.id.to_string(),
                pane: pane.clone(),
                why: lost.reason(),
                then: "; no key pressed",
            });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tmux::pane::FakePane;

    /// The one ring keeps the owed rule for every caller: held back by a
    /// busy agent it is owed to the records pending; landed, it pays it.
    #[test]
    fn a_ring_held_back_is_owed_and_one_that_lands_pays_it() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let mut cfg = Config::default();
        (cfg.send.settle_ms, cfg.send.enter_wait_ms) = (0, 0);
        let id = TaskId::parse("t").unwrap();
        crate::fsx::ensure_dir(&home.inbox(&id)).unwrap();
        std::fs::write(home.inbox_record(&id, 1), b"hello").unwrap();
        let mut profile = harness::builtin("claude").unwrap();
        profile.agent_commands = Some(vec!["claude".into()]);
        profile.composer_regex = Some(regex::Regex::new(r"^> ?(.*)$").unwrap());
        profile.composer_below_regex = None;
        profile.dialogs.clear();
        profile.busy_regex = Some(regex::Regex::new("esc to interrupt").unwrap());
        profile.busy_whole_turn = false;
        let r = Recipient {
            id: id.clone(),
            pane: Some("%1".into()),
            tmux: Tmux::new(""),
            profile: Some(profile),
            spawned_at: None,
            claim: None,
            leg_meta: None,
        };
        let f = FakePane::with("%1", "claude");
        f.edit("%1", |s| s.history.push("working… esc to interrupt".into()));
        let known = |owed| Known {
            backend: Some(&f),
            sleep: Some(&|_| {}),
            owed,
            ..Known::default()
        };
        let rung = r.ring(&home, &cfg, 50, known(None));
        assert_eq!(rung.outcome, Outcome::Queued);
        assert!(rung.warnings.is_empty(), "{:?}", rung.warnings);
        assert_eq!(
            std::fs::read(home.ring_owed(&id)).unwrap(),
            b"50\t001.msg\n"
        );
        // A busy record the caller read holds it back the same way.
        f.edit("%1", |s| s.history.clear());
        let busy = Known {
            busy_record: Some(Some(49)),
            ..known(None)
        };
        assert_eq!(r.ring(&home, &cfg, 51, busy).outcome, Outcome::Queued);
        assert_eq!(
            std::fs::read(home.ring_owed(&id)).unwrap(),
            b"51\t001.msg\n"
        );
        // A caller that read no owed ring removes nothing; one that
        // may have one clears it when the doorbell lands.
        let rung = r.ring(&home, &cfg, 52, known(Some(false)));
        assert_eq!(rung.outcome, Outcome::Rang);
        assert!(home.ring_owed(&id).exists());
        let rung = r.ring(&home, &cfg, 53, known(None));
        assert_eq!(rung.outcome, Outcome::Rang);
        assert!(!home.ring_owed(&id).exists());
        // What could not be recorded is handed back, not printed.
        f.edit("%1", |s| s.history.push("working… esc to interrupt".into()));
        std::fs::create_dir(home.ring_owed(&id)).unwrap();
        std::fs::write(home.ring_owed(&id).join("x"), b"").unwrap();
        let rung = r.ring(&home, &cfg, 54, known(None));
        assert_eq!(rung.outcome, Outcome::Queued);
        assert_eq!(rung.warnings.len(), 1, "{:?}", rung.warnings);
        assert!(rung.warnings[0].starts_with("t: could not record the held-back doorbell"));
    }
}

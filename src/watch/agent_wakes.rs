//! The wakes about the agent itself, whatever its mail: a dialog that owns
//! its keyboard (one `dialog` wake per dialog, the doorbell held back and
//! owed), and an agent found dead or its pane gone (one `dead-agent` wake
//! per agent). Part of a pass's [`super::act::Exec`].

use super::act::{ACTOR, Exec, OWED_RECHECK_SECS, TaskIn, dead_text, name};
use super::ladder;
use crate::events::{Entry, Event, Tool};
use crate::inbox::ladder_files as shared;
use crate::task_id::TaskId;

impl Exec<'_> {
    /// A dialog owns the agent's keyboard (docs/spec/harness.md#dialogs): nothing is typed.
    /// The first look at it raises one `dialog` wake; while the same
    /// dialog stays up, later passes raise none. One found after the
    /// captain pressed a key in the pane (`fm-send --key`) is another —
    /// a second permission prompt right after the first was answered —
    /// once the pane had [`ACTED_SETTLE_SECS`] to redraw. When it `holds`
    /// back a ring the ladder would make now, the wake names the record
    /// and the doorbell is owed, so it is rung as soon as the dialog
    /// closes; otherwise (no mail, or none due) the wake names the dialog
    /// only.
    pub(super) fn dialog(&mut self, t: &TaskIn, which: &str, holds: bool) {
        let (home, id) = (self.home, &t.id);
        let target = ladder::target(&t.pending).filter(|_| holds);
        let seen = shared::read_dialog(home, id).unwrap_or_default();
        let mut acted = seen
            .as_ref()
            .filter(|s| s.name == which)
            .and_then(|s| s.acted);
        // A key stamped in the future (a clock stepped back) counts as
        // pressed now, kept so: the dialog is looked at again once the
        // pane had its time to redraw, not once the clock reaches it.
        if acted.is_some_and(|at| at > self.now) {
            acted = Some(self.now);
            if let Err(e) = shared::mark_dialog_acted(home, id, self.now) {
                self.state.warn(format!("{id}: {e}"));
            }
        }
        // Right after the key, the screen may still show the dialog it
        // answered: look again once the pane had time to redraw.
        let settled = acted.map(|at| at.saturating_add(ACTED_SETTLE_SECS));
        let settling = settled.is_some_and(|s| self.now < s);
        let new = acted.is_some() || seen.as_ref().map(|s| s.name.as_str()) != Some(which);
        if new && !settling {
            let about = t
                .target
                .as_ref()
                .map(|r| r.first_line().chars().take(120).collect::<String>())
                .unwrap_or_default();
            let text = match target {
                Some(p) => format!(
                    "waiting in a dialog: {which}; {} not rung: {about}",
                    name(p.seq)
                ),
                None => format!("waiting in a dialog: {which}"),
            };
            if !self.wake(id, "dialog", &text) {
                // Not logged: the next pass tries again.
                self.due(self.now + OWED_RECHECK_SECS);
                return;
            }
            let event = Event::WatchDialog {
                seq: target.map_or(0, |p| p.seq),
                dialog: which.to_string(),
            };
            Entry::new(self.now, Tool::Watch, id.as_str(), event)
                .by(ACTOR)
                .record(home);
            if let Err(e) = shared::write_dialog(home, id, which) {
                self.state.warn(format!("{id}: {e}"));
            }
        }
        // No mail held back: the next look at every pane sees it close.
        let Some(target) = target else {
            if let Some(at) = settled.filter(|_| settling) {
                self.due(at);
            }
            return;
        };
        if !ladder::owed_to(&t.files, target)
            && let Err(e) = shared::set_owed(home, id, Some(self.now))
        {
            self.state.warn(format!("{id}: {e}"));
        }
        match settled {
            Some(at) if settling => self.due(at),
            _ => self.due(self.now + DIALOG_RECHECK_SECS),
        }
    }

    /// The listing shows the agent dead or its pane gone while the ladder
    /// has no `dead-agent` wake to raise (no mail, or mail still within
    /// its grace): one wake for this agent, unless raised already. An
    /// agent that died within `grace_secs` of its spawn may be a shell
    /// briefly in the foreground while it starts: looked at again then.
    pub(super) fn dead_seen(
        &mut self,
        t: &TaskIn,
        pane: &str,
        spawned_at: Option<u64>,
        gone: bool,
    ) {
        let (home, id, now) = (self.home, &t.id, self.now);
        let agent = shared::DeadSeen {
            pane: pane.to_string(),
            spawned_at,
        };
        if shared::read_agent_dead(home, id).ok().flatten() == Some(agent.clone()) {
            return;
        }
        let grace = self.cfg.watch.grace_secs;
        // A spawn stamped in the future came before a clock step: long
        // enough ago (as for booting).
        if let Some(at) = spawned_at.filter(|&at| at <= now)
            && !gone
            && now < at.saturating_add(grace)
        {
            self.due(at.saturating_add(grace));
            return;
        }
        let about = t
            .target
            .as_ref()
            .map(|r| r.first_line().chars().take(120).collect::<String>())
            .unwrap_or_default();
        let target = ladder::target(&t.pending).map(|p| (p.seq, about.as_str()));
        let text = dead_text(pane, gone, target);
        if !self.wake(id, "dead-agent", &text) {
            return;
        }
        let event = Event::WatchDeadAgent {
            seq: target.map_or(0, |(s, _)| s),
        };
        Entry::new(now, Tool::Watch, id.as_str(), event)
            .by(ACTOR)
            .record(home);
        if let Err(e) = shared::write_agent_dead(home, id, now, &agent) {
            self.state.warn(format!("{id}: {e}"));
        }
    }

    /// No dialog on the screen: one seen before has closed.
    pub(super) fn no_dialog(&mut self, id: &TaskId) {
        if let Err(e) = shared::clear_dialog(self.home, id) {
            self.state.warn(format!("{id}: {e}"));
        }
    }
}

/// How soon a pass looks again at a dialog that holds a doorbell back.
const DIALOG_RECHECK_SECS: u64 = 3;

/// How long after a key pressed in the pane a dialog found there counts as
/// a new one (two clock seconds: at least one whole second to redraw).
const ACTED_SETTLE_SECS: u64 = 2;

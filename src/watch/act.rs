//! Carrying out what the ladder decided for one task during a pass: ring
//! (recording the attempt in `.ring-state` before typing), mark dead agents
//! and overdue records, escalate, and append the wakes those produce. The
//! write order that keeps a crash from losing a wake or ringing twice is
//! described in [`super::pass`].

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use super::hook;
use super::ladder::{self, Action, LadderFiles, PaneFacts, Pending};
use super::state::{PaneFactory, Report, Ring, State};
use crate::config::Config;
use crate::error::Error;
use crate::events::{Entry, Event, Tool};
use crate::harness;
use crate::home::Home;
use crate::inbox::ladder_files as shared;
use crate::inbox::{self, Record};
use crate::meta::TaskMeta;
use crate::task_id::TaskId;
use crate::tmux::deliver::Outcome;
use crate::tmux::pane::{Pane, PaneInfo};
use crate::tmux::recipient::{Known, Recipient, Rung, try_ring_lock};
use crate::wakes;
use crate::{clock, fsx};

/// A task's inputs, read from its files.
pub(super) struct TaskIn {
    pub(super) id: TaskId,
    pub(super) pending: Vec<Pending>,
    pub(super) target: Option<Record>,
    pub(super) files: LadderFiles,
    pub(super) meta: Option<TaskMeta>,
}

pub(super) struct Exec<'a> {
    pub(super) home: &'a Home,
    pub(super) cfg: &'a Config,
    pub(super) sleep: &'a dyn Fn(Duration),
    pub(super) state: &'a mut State,
    pub(super) report: &'a mut Report,
    pub(super) now: u64,
}

impl Exec<'_> {
    pub(super) fn task(
        &mut self,
        t: &TaskIn,
        lists: &BTreeMap<String, Option<Vec<PaneInfo>>>,
        backends: &mut HashMap<String, Box<dyn Pane>>,
        panes: PaneFactory,
    ) {
        let (home, cfg, now) = (self.home, self.cfg, self.now);
        let empty = TaskMeta::default();
        let meta = t.meta.as_ref().unwrap_or(&empty);
        let pane_id = meta.pane.as_deref().unwrap_or("");
        // The task as a doorbell target: the one ring path's.
        let recipient = Recipient::from_meta(cfg, &t.id, meta);
        let (claim, profile) = (&recipient.claim, &recipient.profile);
        let socket = meta.socket(cfg).to_string();
        let mut busy_rec = None;
        let mut busy_from_log = false;
        let mut info: Option<&PaneInfo> = None;
        let need = ladder::needs_pane(&t.pending, &t.files, now, &cfg.watch);
        // The pass's listing of the socket, when it made one (the ladder
        // needs the pane, or the pass looks at every pane). A task on
        // another host is looked at by that host's watcher.
        let list = match lists.get(&socket) {
            Some(Some(list)) if !pane_id.is_empty() && (need || meta.host_name().is_none()) => {
                Some(list)
            }
            _ => None,
        };
        let mut facts = if pane_id.is_empty() {
            PaneFacts::NoPane
        } else if let Some(list) = list {
            // A pane that does not prove it is the task's is gone.
            match list
                .iter()
                .find(|p| p.id == pane_id)
                .filter(|_| claim.as_ref().is_none_or(|c| c.check_in(list).is_ok()))
            {
                None => PaneFacts::Gone,
                Some(p) if !harness::is_alive(profile.as_ref(), p.dead, &p.command) => {
                    PaneFacts::Dead
                }
                Some(p) => {
                    info = Some(p);
                    if need {
                        let busy = crate::status::busy::busy_at_from(home, &t.id);
                        busy_rec = busy.map(|(at, _)| at);
                        // Only the session log said busy: its end is
                        // outside state/ and wakes no pass.
                        busy_from_log = busy.is_some_and(|(_, log)| log);
                    }
                    PaneFacts::Alive {
                        busy: busy_rec.is_some(),
                    }
                }
            }
        } else if !need {
            // The ladder will not look at the pane.
            PaneFacts::Alive { busy: false }
        } else {
            // tmux could not be asked: try again next pass.
            return;
        };
        // A spawn stamped in the future (the clock stepped back since)
        // happened before the step: the agent is not booting any more.
        let spawned_at = meta.spawned_at.filter(|&at| at <= now);
        // What the listing says of the agent, with or without mail: a dead
        // agent is heard once per agent (pane and spawn), an alive one
        // ends that episode.
        if list.is_some() {
            match facts {
                PaneFacts::Gone | PaneFacts::Dead => {
                    let action = ladder::decide(&t.pending, &t.files, facts, now, &cfg.watch);
                    if !matches!(action, Action::DeadAgent { .. }) {
                        self.dead_seen(t, pane_id, meta.spawned_at, facts == PaneFacts::Gone);
                    }
                }
                PaneFacts::Alive { .. } => {
                    if let Err(e) = shared::clear_agent_dead(home, &t.id) {
                        self.state.warn(format!("{}: {e}", t.id));
                    }
                }
                PaneFacts::NoPane => {}
            }
        }
        // Owed for records acknowledged since: stale, removed.
        if let (Some(_), Some(target)) = (t.files.owed, ladder::target(&t.pending))
            && !ladder::owed_to(&t.files, target)
            && let Err(e) = shared::set_owed(home, &t.id, None)
        {
            self.state.warn(format!("{}: {e}", t.id));
        }
        let backend = backends
            .entry(socket.clone())
            .or_insert_with(|| panes(&socket));
        // A screen that shows every turn and reads idle overrules a busy
        // record no hook closed (a turn interrupted from the keyboard).
        let mut screen = None;
        if let Some(at) = busy_rec
            && profile.as_ref().is_some_and(|p| p.busy_whole_turn)
            && let Ok(s) = backend.capture(pane_id, 0)
        {
            let age = now.saturating_sub(at);
            if crate::tmux::screen::screen_overrules_busy_record(profile.as_ref(), &s, age) {
                busy_rec = None;
                facts = PaneFacts::Alive { busy: false };
            }
            screen = Some(s);
        }
        let mut action = ladder::decide(&t.pending, &t.files, facts, now, &cfg.watch);
        if busy_rec.is_some() && busy_from_log && !t.pending.is_empty() {
            // The turn may end any moment, and its end wakes no pass:
            // look again soon.
            self.due(now + OWED_RECHECK_SECS);
        }
        // A dialog owns the keyboard: one wake for the captain, no ring.
        // Looked for when the ladder would act, and on every pane when the
        // pass looks at them all (a dialog with no mail waiting).
        let look =
            self.state.sweep || (need && !matches!(action, Action::Quiet { .. } | Action::Clear));
        if info.is_some() && profile.as_ref().is_some_and(|p| !p.dialogs.is_empty()) && look {
            if screen.is_none() {
                screen = backend.capture(pane_id, 0).ok();
            }
            if let Some(s) = &screen {
                match crate::tmux::screen::screen_dialog(profile.as_ref(), s) {
                    Some(name) => {
                        // A doorbell is held back only when the ladder
                        // would ring now.
                        let holds = need && !matches!(action, Action::Quiet { .. });
                        self.dialog(t, &name, holds);
                        return;
                    }
                    None => self.no_dialog(&t.id),
                }
            }
        }
        if let (Action::Ring { .. } | Action::RingOwed { .. }, PaneFacts::Alive { busy: false }) =
            (action, facts)
            && profile.as_ref().is_some_and(|p| p.busy_regex.is_some())
            && let Some(screen) = screen.or_else(|| backend.capture(pane_id, 0).ok())
            && crate::tmux::screen::screen_busy(profile.as_ref(), &screen)
        {
            let busy = PaneFacts::Alive { busy: true };
            action = ladder::decide(&t.pending, &t.files, busy, now, &cfg.watch);
            if t.files.owed.is_some() {
                // The turn may end any moment: look again soon.
                self.due(now + OWED_RECHECK_SECS);
            }
        }
        let id = &t.id;
        // When this episode began: the tracked record was queued, or the
        // agent was (re)started after that; a ladder wake logged before
        // belongs to an earlier episode (docs/spec/watch.md#ladder). A stamp in the
        // future counts as now.
        let since = ladder::target(&t.pending)
            .map_or(0, |p| p.at.min(now))
            .max(spawned_at.unwrap_or(0));
        let about = t
            .target
            .as_ref()
            .map(|r| r.first_line().chars().take(120).collect::<String>())
            .unwrap_or_default();
        let ring = |ex: &mut Self, seq: u64, count: u64| {
            let known = Known {
                // The pass's listing already holds the pane: no second query.
                info,
                backend: Some(backend.as_ref()),
                busy_record: Some(busy_rec),
                // Taken by the pass already (see `ring_lock` below).
                lock_held: true,
                owed: Some(t.files.owed.is_some()),
                sleep: Some(ex.sleep),
            };
            let Rung {
                outcome,
                leg,
                warnings,
            } = recipient.ring(home, cfg, now, known);
            for w in warnings {
                ex.state.warn(w);
            }
            // One that met a dialog or a booting agent is owed (the ring
            // wrote it): look again soon, the next pass raises the dialog's
            // wake or finds the composer up.
            if matches!(outcome, Outcome::Dialog | Outcome::Booting) {
                ex.due(now + OWED_RECHECK_SECS);
            }
            let event = Event::WatchRang {
                seq,
                count,
                doorbell: outcome.as_str(),
                leg: (leg != crate::leg::Leg::Typed).then_some(leg.as_str()),
            };
            Entry::new(now, Tool::Watch, id.as_str(), event)
                .by(ACTOR)
                .record(home);
            ex.due(now + cfg.watch.grace_secs);
            ex.report.rings.push(Ring {
                task: id.to_string(),
                seq,
                count,
                outcome,
            });
        };
        // The queue leg's own grace (docs/spec/watch.md#ladder): a doorbell
        // handed to `codex queue` is not rung again before the TUI could
        // take it. Read only when the ladder would ring a worker whose
        // leg is the queue.
        if let Action::Ring { .. } = action
            && cfg.send.legs
            && profile
                .as_ref()
                .is_some_and(|p| p.leg == crate::leg::Leg::Queue)
            && let Some(until) = crate::leg::codex::rering_held_until(home, id, meta, now)
        {
            self.due(until);
            return;
        }
        match action {
            Action::Wait { until } => {
                if let Some(u) = until {
                    self.due(u);
                }
            }
            Action::Quiet { .. } => {}
            Action::Clear => {
                if let Err(e) = shared::clear_ladder(home, id) {
                    self.unwritable(id, home.ring_state(id), e, None, since);
                }
            }
            Action::Ring { seq, count } | Action::Restamp { seq, count } => {
                let _held = if matches!(action, Action::Ring { .. }) {
                    match self.ring_lock(id, pane_id) {
                        Some(held) => held,
                        None => return,
                    }
                } else {
                    None
                };
                let rs = ladder::RingState {
                    seq,
                    count,
                    last: now,
                };
                match shared::write_ring_state(home, id, &rs) {
                    Ok(left) => self.state.leftovers.extend(left),
                    Err(e) => {
                        self.unwritable(id, home.ring_state(id), e, Some(seq), since);
                        return;
                    }
                }
                if matches!(action, Action::Ring { .. }) {
                    ring(self, seq, count);
                } else {
                    // A stamp from the future: the ladder counts from now.
                    self.due(now + cfg.watch.grace_secs);
                }
            }
            Action::RingOwed { seq } => {
                let Some(_held) = self.ring_lock(id, pane_id) else {
                    return;
                };
                // Cleared before typing: a crash in between loses this
                // ring (the ladder's own rings follow), never doubles it.
                if let Err(e) = shared::set_owed(home, id, None) {
                    self.unwritable(id, home.ring_owed(id), e, None, since);
                    return;
                }
                // The owed ring spends no count, but the ladder's next
                // ring waits its grace from this one: an old record (a
                // relaunch owes the new agent every pending one) is not
                // rung twice within a second.
                let rs = ladder::RingState {
                    seq,
                    count: t.files.ring.filter(|r| r.seq == seq).map_or(0, |r| r.count),
                    last: now,
                };
                match shared::write_ring_state(home, id, &rs) {
                    Ok(left) => self.state.leftovers.extend(left),
                    Err(e) => {
                        self.unwritable(id, home.ring_state(id), e, Some(seq), since);
                        return;
                    }
                }
                ring(self, seq, 0);
            }
            Action::Escalate { seq, rings } => {
                let text = format!(
                    "{} unacknowledged after {rings} ring(s): {about}",
                    name(seq)
                );
                // This ladder's rings all came after an earlier ladder's
                // escalation (a relaunch starts a new one): only a wake
                // since its last ring is this escalation's.
                let last = t
                    .files
                    .ring
                    .filter(|r| r.seq == seq)
                    .map_or(0, |r| r.last.min(now));
                self.ladder_wake(id, LadderWake::Escalation, &text, seq, since.max(last));
            }
            Action::Overdue { seq, age } => {
                let text = format!(
                    "{} unhandled for {} while the worker is busy: {about}",
                    name(seq),
                    clock::age(age)
                );
                self.ladder_wake(id, LadderWake::Overdue, &text, seq, since);
            }
            Action::DeadAgent { seq, gone } => {
                let text = dead_text(pane_id, gone, Some((seq, &about)));
                let agent = shared::DeadSeen {
                    pane: pane_id.to_string(),
                    spawned_at: meta.spawned_at,
                };
                // Heard already for this agent (it died with no mail, or
                // before this record's grace ran out): no second wake.
                let heard = shared::read_agent_dead(home, id).ok().flatten() == Some(agent.clone());
                if heard {
                    if let Err(e) = shared::write_escalated(home, id, seq) {
                        self.unwritable(id, home.escalated(id), e, None, since);
                    }
                } else if self.ladder_wake(id, LadderWake::DeadAgent, &text, seq, since)
                    && let Err(e) = shared::write_agent_dead(home, id, now, &agent)
                {
                    self.state.warn(format!("{id}: {e}"));
                }
            }
        }
    }

    /// The task's ring lock, tried once: the ring (and the ladder files it
    /// writes first) waits for no other ringer. Held (another ring under
    /// way, or one stopped mid-ring: an `fm-send` suspended with Ctrl-Z),
    /// the task is passed over, nothing written or spent, and looked at
    /// again [`RING_LOCK_RETRY_SECS`] later; the rest of the fleet is not
    /// held up. `Some(None)`: no lock could be made (a read-only
    /// `state/`), which stops no ring.
    fn ring_lock(&mut self, id: &TaskId, pane: &str) -> Option<Option<fsx::LockGuard>> {
        // Nothing is typed without a pane: nothing to keep in order.
        if pane.is_empty() {
            return Some(None);
        }
        match try_ring_lock(self.home, id) {
            Ok(Some(held)) => Some(Some(held)),
            Ok(None) => {
                self.due(self.now + RING_LOCK_RETRY_SECS);
                None
            }
            Err(_) => Some(None),
        }
    }

    /// Asks for a pass at `at` (or earlier, if one is due already).
    pub(super) fn due(&mut self, at: u64) {
        self.report.next_due = Some(self.report.next_due.map_or(at, |d| d.min(at)));
    }

    /// Appends a wake, runs the hook, and reports it; false when the wake
    /// could not be appended.
    pub(super) fn wake(&mut self, id: &TaskId, kind: &str, text: &str) -> bool {
        match wakes::append(self.home, id.as_str(), kind, text, self.now) {
            Ok(wake) => {
                hook::spawn(&self.cfg.watch.on_wake, &wake);
                self.report.wakes.push(wake);
                true
            }
            Err(e) => {
                self.state.warn(format!("{id}: cannot append wake: {e}"));
                false
            }
        }
    }

    /// A ladder's closing wake, then `.escalated` (docs/spec/watch.md#ladder step 7). The
    /// wake is skipped only when this episode (record queued at `since`)
    /// already logged it.
    /// False when the wake could not be logged.
    fn ladder_wake(
        &mut self,
        id: &TaskId,
        wake: LadderWake,
        text: &str,
        seq: u64,
        since: u64,
    ) -> bool {
        let kind = wake.kind();
        if let Ok(true) = wakes::exists_since(self.home, id.as_str(), kind, text, since) {
        } else {
            if !self.wake(id, kind, text) {
                // Not logged: leave `.escalated` unwritten so the next
                // pass tries again (never lose a ladder wake).
                return false;
            }
            let event = match wake {
                LadderWake::Escalation => Event::WatchEscalation { seq },
                LadderWake::Overdue => Event::WatchOverdue { seq },
                LadderWake::DeadAgent => Event::WatchDeadAgent { seq },
            };
            Entry::new(self.now, Tool::Watch, id.as_str(), event)
                .by(ACTOR)
                .record(self.home);
        }
        if let Err(e) = shared::write_escalated(self.home, id, seq) {
            self.unwritable(id, self.home.escalated(id), e, None, since);
        }
        true
    }

    /// A ladder file cannot be written: one wake saying so, no ringing.
    fn unwritable(&mut self, id: &TaskId, path: PathBuf, err: Error, seq: Option<u64>, since: u64) {
        self.state.warn(format!("{id}: {err}"));
        let text = match seq {
            Some(s) => format!(
                "ladder file {} is not writable; {} will not be re-rung until it is fixed",
                path.display(),
                name(s)
            ),
            None => format!("ladder file {} is not writable", path.display()),
        };
        if !wakes::exists_since(self.home, id.as_str(), "escalation", &text, since).unwrap_or(false)
        {
            let _ = self.wake(id, "escalation", &text);
        }
        if let Some(s) = seq {
            let _ = shared::write_escalated(self.home, id, s);
        }
    }
}

/// How soon a pass looks again at a busy agent that is owed a doorbell.
pub(super) const OWED_RECHECK_SECS: u64 = 2;

/// How soon a pass looks again at a task whose ring lock was held.
const RING_LOCK_RETRY_SECS: u64 = 1;

/// The actor of every event the watcher records.
pub(super) const ACTOR: &str = "watcher";

/// The wake that closes a ladder (docs/spec/watch.md#ladder step 7).
#[derive(Debug, Clone, Copy)]
enum LadderWake {
    Escalation,
    Overdue,
    DeadAgent,
}

impl LadderWake {
    /// The wake's kind in `state/wakes.log`.
    fn kind(self) -> &'static str {
        match self {
            LadderWake::Escalation => "escalation",
            LadderWake::Overdue => "overdue",
            LadderWake::DeadAgent => "dead-agent",
        }
    }
}

pub(super) fn name(seq: u64) -> String {
    fsx::numbered_name(seq, inbox::EXT)
}

/// A `dead-agent` wake's text, naming the record left unread if any.
pub(super) fn dead_text(pane: &str, gone: bool, record: Option<(u64, &str)>) -> String {
    let why = if gone {
        format!("pane {pane} gone")
    } else {
        format!("agent in pane {pane} exited")
    };
    match record {
        Some((seq, about)) => format!("{} pending but {why}: {about}", name(seq)),
        None => why,
    }
}

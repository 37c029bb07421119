//! Carrying out what the ladder decided for one task during a pass: ring
//! (recording the attempt in `.ring-state` before typing), mark dead agents
//! and overdue records, escalate, and append the wakes those produce. The
//! write order that keeps a crash from losing a wake or ringing twice is
//! described in [`super::pass`].

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use super::ladder::{self, Action, LadderFiles, PaneFacts, Pending};
use super::state::{PaneFactory, Report, Ring, State};
use super::{hook, ladder_io};
use crate::config::Config;
use crate::error::Error;
use crate::events::{Entry, Event, Tool};
use crate::harness::{self, HarnessProfile};
use crate::home::Home;
use crate::inbox::ladder_files as shared;
use crate::inbox::{self, Record};
use crate::meta::TaskMeta;
use crate::task_id::TaskId;
use crate::tmux::deliver::{self, Outcome, Target};
use crate::tmux::pane::{Pane, PaneInfo};
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
        let socket = meta.socket(cfg).to_string();
        let profile: Option<HarnessProfile> = meta
            .harness
            .as_deref()
            .and_then(|h| harness::profile(&cfg.harness, h));
        let mut busy_rec = None;
        let mut busy_from_log = false;
        let mut info: Option<&PaneInfo> = None;
        let mut facts = if pane_id.is_empty() {
            PaneFacts::NoPane
        } else if !ladder::needs_pane(&t.pending, &t.files, now, &cfg.watch) {
            // The ladder will not look at the pane.
            PaneFacts::Alive { busy: false }
        } else {
            match lists.get(&socket) {
                Some(Some(list)) => match list.iter().find(|p| p.id == pane_id) {
                    None => PaneFacts::Gone,
                    Some(p) if !harness::is_alive(profile.as_ref(), p.dead, &p.command) => {
                        PaneFacts::Dead
                    }
                    Some(p) => {
                        info = Some(p);
                        let busy = crate::status::busy::busy_at_from(home, &t.id);
                        busy_rec = busy.map(|(at, _)| at);
                        // Only the session log said busy: its end is
                        // outside state/ and wakes no pass.
                        busy_from_log = busy.is_some_and(|(_, log)| log);
                        PaneFacts::Alive {
                            busy: busy_rec.is_some(),
                        }
                    }
                },
                // tmux could not be asked: try again next pass.
                _ => return,
            }
        };
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
        if info.is_some()
            && profile.as_ref().is_some_and(|p| !p.dialogs.is_empty())
            && !matches!(action, Action::Quiet { .. } | Action::Clear)
        {
            if screen.is_none() {
                screen = backend.capture(pane_id, 0).ok();
            }
            if let Some(s) = &screen {
                match crate::tmux::screen::screen_dialog(profile.as_ref(), s) {
                    Some(name) => {
                        self.dialog(t, &name, ladder::target(&t.pending).map_or(0, |p| p.seq));
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
        // When the tracked record was queued: a ladder wake logged before
        // it belongs to an earlier episode (SPEC §6.2). A stamp in the
        // future counts as now.
        let since = ladder::target(&t.pending).map_or(0, |p| p.at.min(now));
        let about = t
            .target
            .as_ref()
            .map(|r| r.first_line().chars().take(120).collect::<String>())
            .unwrap_or_default();
        let ring = |ex: &mut Self, seq: u64, count: u64| {
            let target = Target {
                pane: (!pane_id.is_empty()).then_some(pane_id),
                profile: profile.as_ref(),
                busy_record: busy_rec,
                spawned_at: meta.spawned_at,
                ring_lock: Some(home.ring_lock(id)),
            };
            let line = deliver::doorbell(home, id);
            let outcome = match info {
                // The pass's listing already holds the pane: no second query.
                Some(p) => {
                    deliver::deliver_to(backend.as_ref(), &target, p, &line, &cfg.send, ex.sleep)
                }
                None => deliver::deliver(backend.as_ref(), &target, &line, &cfg.send, ex.sleep),
            };
            // A ring held back by a busy agent is owed at the turn's end;
            // one that met a dialog, once it closes (the next pass, soon,
            // raises the dialog's wake).
            if matches!(
                outcome,
                Outcome::Queued | Outcome::Dialog | Outcome::Booting
            ) && let Err(e) = ladder_io::set_owed(home, id, Some(now))
            {
                ex.state.warn(format!("{id}: {e}"));
            }
            if matches!(outcome, Outcome::Dialog | Outcome::Booting) {
                ex.due(now + OWED_RECHECK_SECS);
            }
            let event = Event::WatchRang {
                seq,
                count,
                doorbell: outcome.as_str(),
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
        match action {
            Action::Wait { until } => {
                if let Some(u) = until {
                    self.due(u);
                }
            }
            Action::Quiet { .. } => {}
            Action::Clear => {
                if let Err(e) = ladder_io::clear(home, id) {
                    self.unwritable(id, home.ring_state(id), e, None, since);
                }
            }
            Action::Ring { seq, count } | Action::Restamp { seq, count } => {
                let rs = ladder::RingState {
                    seq,
                    count,
                    last: now,
                };
                match ladder_io::write_ring_state(home, id, &rs) {
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
                // Cleared before typing: a crash in between loses this
                // ring (the ladder's own rings follow), never doubles it.
                if let Err(e) = ladder_io::set_owed(home, id, None) {
                    self.unwritable(id, home.ring_owed(id), e, None, since);
                    return;
                }
                ring(self, seq, 0);
            }
            Action::Escalate { seq, rings } => {
                let text = format!(
                    "{} unacknowledged after {rings} ring(s): {about}",
                    name(seq)
                );
                self.ladder_wake(id, LadderWake::Escalation, &text, seq, since);
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
                let why = if gone {
                    format!("pane {pane_id} gone")
                } else {
                    format!("agent in pane {pane_id} exited")
                };
                let text = format!("{} pending but {why}: {about}", name(seq));
                self.ladder_wake(id, LadderWake::DeadAgent, &text, seq, since);
            }
        }
    }

    /// A dialog owns the agent's keyboard (SPEC §5.3): nothing is typed.
    /// The first look at it raises one `dialog` wake; while the same
    /// dialog stays up, later passes raise none. One found after the
    /// captain pressed a key in the pane (`fm-send --key`) is another —
    /// a second permission prompt right after the first was answered —
    /// once the pane had [`ACTED_SETTLE_SECS`] to redraw. The doorbell is
    /// owed, so it is rung as soon as the dialog closes.
    fn dialog(&mut self, t: &TaskIn, which: &str, seq: u64) {
        let (home, id) = (self.home, &t.id);
        let seen = shared::read_dialog(home, id).unwrap_or_default();
        let acted = seen
            .as_ref()
            .filter(|s| s.name == which)
            .and_then(|s| s.acted);
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
            let text = format!(
                "waiting in a dialog: {which}; {} not rung: {about}",
                name(seq)
            );
            if !self.wake(id, "dialog", &text) {
                // Not logged: the next pass tries again.
                self.due(self.now + OWED_RECHECK_SECS);
                return;
            }
            let event = Event::WatchDialog {
                seq,
                dialog: which.to_string(),
            };
            Entry::new(self.now, Tool::Watch, id.as_str(), event)
                .by(ACTOR)
                .record(home);
            if let Err(e) = shared::write_dialog(home, id, which) {
                self.state.warn(format!("{id}: {e}"));
            }
        }
        if t.files.owed.is_none()
            && let Err(e) = ladder_io::set_owed(home, id, Some(self.now))
        {
            self.state.warn(format!("{id}: {e}"));
        }
        match settled {
            Some(at) if settling => self.due(at),
            _ => self.due(self.now + DIALOG_RECHECK_SECS),
        }
    }

    /// No dialog on the screen: one seen before has closed.
    fn no_dialog(&mut self, id: &TaskId) {
        if let Err(e) = shared::clear_dialog(self.home, id) {
            self.state.warn(format!("{id}: {e}"));
        }
    }

    /// Asks for a pass at `at` (or earlier, if one is due already).
    fn due(&mut self, at: u64) {
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

    /// A ladder's closing wake, then `.escalated` (SPEC §6.2 step 5). The
    /// wake is skipped only when this episode (record queued at `since`)
    /// already logged it.
    fn ladder_wake(&mut self, id: &TaskId, wake: LadderWake, text: &str, seq: u64, since: u64) {
        let kind = wake.kind();
        if let Ok(true) = wakes::exists_since(self.home, id.as_str(), kind, text, since) {
        } else {
            if !self.wake(id, kind, text) {
                // Not logged: leave `.escalated` unwritten so the next
                // pass tries again (never lose a ladder wake).
                return;
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
        if let Err(e) = ladder_io::write_escalated(self.home, id, seq) {
            self.unwritable(id, self.home.escalated(id), e, None, since);
        }
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
            let _ = ladder_io::write_escalated(self.home, id, s);
        }
    }
}

/// How soon a pass looks again at a busy agent that is owed a doorbell.
const OWED_RECHECK_SECS: u64 = 2;

/// How soon a pass looks again at a dialog that holds a doorbell back.
const DIALOG_RECHECK_SECS: u64 = 3;

/// How long after a key pressed in the pane a dialog found there counts as
/// a new one (two clock seconds: at least one whole second to redraw).
const ACTED_SETTLE_SECS: u64 = 2;

/// The actor of every event the watcher records.
const ACTOR: &str = "watcher";

/// The wake that closes a ladder (SPEC §6.2 step 5).
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

fn name(seq: u64) -> String {
    fsx::numbered_name(seq, inbox::EXT)
}

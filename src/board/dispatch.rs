//! `fm-board dispatch` (docs/spec/board.md#dispatch): hands pending assigned tasks to their
//! assignees' inboxes, re-sends dispatches nobody acknowledged, and fails a
//! task after three unacknowledged dispatches (the circuit breaker).
//!
//! The decision per task is the pure [`plan`]; [`run`] does the I/O under
//! the board lock, queueing through a `queue` function it is given;
//! [`dispatch`] is the whole use case: queue with [`inbox::send`] (no ring
//! under the lock), ring each assignee once the lock is released, record
//! one `board.*` event per outcome. A dispatch record counts as
//! acknowledged once it sits in the assignee's
//! `state/<id>.inbox/handled/`. An assignee on another host (its meta
//! names one) is refused, the task left as it was (docs/remote.md).

use serde::{Deserialize, Serialize};

use super::ops::{self, Op};
use super::{BoardId, Status, Task, store};
use crate::config::Config;
use crate::error::Result;
use crate::events::{self, Entry, Event, Tool};
use crate::fsx;
use crate::home::Home;
use crate::inbox::{self, Outgoing, Ring};
use crate::task_id::TaskId;
use crate::tmux::deliver::Outcome as Doorbell;
use crate::tmux::recipient::{Known, Recipient};

/// Sender name on dispatch records.
pub(crate) const DISPATCH_FROM: &str = "fm-board";

/// Dispatches without acknowledgement after which a task is failed.
pub(crate) const MAX_DISPATCHES: u32 = 3;

/// The reason the circuit breaker records.
pub(crate) const BREAKER_REASON: &str = "circuit breaker: 3 dispatches without acknowledgement";

/// What dispatch does with one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Pending with an assignee: first dispatch.
    Send,
    /// In progress, last dispatch unacknowledged, fewer than three sent.
    Resend,
    /// In progress, three dispatches unacknowledged: fail it.
    Break,
    /// Nothing to do.
    Skip,
}

/// Decides for one task; `last_acked` says whether its last dispatch record
/// has been acknowledged (ignored unless it was dispatched). An
/// unacknowledged dispatch is re-sent (or trips the breaker) only once the
/// task has been quiet for `grace` seconds, so back-to-back dispatch runs
/// never fail a worker that had no time to answer.
pub(crate) fn plan(t: &Task, last_acked: bool, now: u64, grace: u64) -> Plan {
    match t.status {
        Status::Pending if t.assignee.is_some() => Plan::Send,
        Status::InProgress
            if t.dispatches > 0
                && t.dispatch_seq.is_some()
                && !last_acked
                && now.saturating_sub(t.updated_at) >= grace =>
        {
            if t.dispatches >= MAX_DISPATCHES {
                Plan::Break
            } else {
                Plan::Resend
            }
        }
        _ => Plan::Skip,
    }
}

/// The message an assignee receives.
pub(crate) fn message(t: &Task, assignee: &str) -> String {
    let mut s = format!("Board task {}: {}\n", t.id, t.subject);
    if !t.description.is_empty() {
        s.push('\n');
        s.push_str(&t.description);
        s.push('\n');
    }
    if t.dispatches > 0 {
        s.push_str(&format!(
            "\n(re-sent: dispatch {} of {MAX_DISPATCHES}; acknowledge this message)\n",
            t.dispatches.saturating_add(1)
        ));
    }
    s.push_str(&format!(
        "\nThis task is yours (owner {assignee}). When it is done: fm-board complete {id} --result '<one line>' --as {assignee}\n\
         Report progress with fm-board progress {id} <0-100> --step '<what>'; if you are stuck: fm-board comment {id} --blocker '<why>' --as {assignee}\n",
        id = t.id
    ));
    s
}

/// One line of the dispatch report.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub task: BoardId,
    /// `dispatched`, `resent`, `failed` (circuit breaker) or `error`.
    pub(crate) action: &'static str,
    pub assignee: String,
    pub seq: Option<u64>,
    pub dispatches: u32,
    pub doorbell: Option<String>,
    pub(crate) detail: Option<String>,
    #[serde(skip)]
    pub(crate) released: Vec<Task>,
}

/// Queues one record for an assignee; returns its number. It must not ring:
/// it runs under the board lock, and typing into panes can take seconds.
/// The caller rings the dispatched assignees after [`run`] returns (and
/// fills [`Outcome::doorbell`]).
pub(crate) type QueueFn<'a> = dyn FnMut(&TaskId, &str) -> Result<u64> + 'a;

fn acked(home: &Home, assignee: &str, seq: Option<u64>) -> bool {
    match (TaskId::parse(assignee), seq) {
        (Ok(id), Some(n)) => fsx::exists(&home.handled_record(&id, n)).unwrap_or(false),
        _ => false,
    }
}

/// A keyed dispatch's memory of what it did to each task (the far side of
/// `fm-board --host <name> dispatch`, docs/remote.md): a dispatch run
/// again under the same key after it was killed midway finishes what it
/// began and never acts twice on a task it already acted on.
pub(crate) trait Journal {
    /// What this dispatch noted of `task`, if anything.
    fn get(&mut self, task: BoardId) -> Result<Option<Note>>;
    /// Notes `note` for `task` (the last note of a task is the one kept).
    fn put(&mut self, task: BoardId, note: &Note) -> Result<()>;
}

/// One task's note in a [`Journal`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Note {
    /// `dispatched`, `resent` or `failed`.
    pub action: String,
    pub assignee: String,
    /// The assignee's highest record number before the queueing began.
    pub after: u64,
    /// The record queued; `None` while the queueing is under way (the
    /// record may or may not have landed: it is looked for above `after`).
    pub seq: Option<u64>,
    pub dispatches: u32,
}

fn action_of(s: &str) -> &'static str {
    match s {
        "dispatched" => "dispatched",
        "resent" => "resent",
        "failed" => "failed",
        _ => "error",
    }
}

/// One dispatch pass over the whole board, under the board lock (records
/// are queued, not rung, while it is held). A task whose queueing fails is
/// reported (`error`) and left unchanged.
///
/// With a `journal`, each step is noted: before a record is
/// queued (with the assignee's highest record number), once it is queued
/// (with its number; the task is saved after), and once the breaker failed
/// a task. A task the journal already holds is not planned again: a
/// queued note is finished (the task saved if it was not) and reported as
/// it was; a queueing note looks for its record above the number noted
/// and, finding it, finishes the same way (planned afresh otherwise).
pub(crate) fn run(
    home: &Home,
    now: u64,
    grace: u64,
    queue: &mut QueueFn<'_>,
    mut journal: Option<&mut dyn Journal>,
    warnings: &mut Vec<String>,
) -> Result<Vec<Outcome>> {
    let _guard = store::lock(home)?;
    let (tasks, skipped) = store::load_all(home)?;
    warnings.extend(skipped.iter().map(|w| format!("skipped {w}")));
    let mut out = Vec::new();
    let mut any_failed = false;
    for t in tasks {
        if let Some(j) = journal.as_deref_mut()
            && let Some(note) = j.get(t.id)?
            && let Some(o) = resume(home, &t, &note, now, j)?
        {
            any_failed |= o.action == "failed";
            out.push(o);
            continue;
        }
        let assignee = t
            .owner
            .clone()
            .filter(|_| t.status == Status::InProgress)
            .or(t.assignee.clone())
            .unwrap_or_default();
        let p = plan(&t, acked(home, &assignee, t.dispatch_seq), now, grace);
        let mut o = Outcome {
            task: t.id,
            action: "error",
            assignee: assignee.clone(),
            seq: None,
            dispatches: t.dispatches,
            doorbell: None,
            detail: None,
            released: Vec::new(),
        };
        match p {
            Plan::Skip => continue,
            Plan::Break => {
                let n = ops::apply(
                    &t,
                    &Op::Fail {
                        reason: BREAKER_REASON.into(),
                    },
                    now,
                )?;
                store::save(home, &n)?;
                any_failed = true;
                o.action = "failed";
                o.detail = Some(BREAKER_REASON.into());
                if let Some(j) = journal.as_deref_mut() {
                    j.put(
                        t.id,
                        &Note {
                            action: "failed".into(),
                            assignee: assignee.clone(),
                            after: 0,
                            seq: None,
                            dispatches: o.dispatches,
                        },
                    )?;
                }
            }
            Plan::Send | Plan::Resend => {
                let action = if p == Plan::Send {
                    "dispatched"
                } else {
                    "resent"
                };
                let body = message(&t, &assignee);
                let id = TaskId::parse(&assignee);
                let mut note = Note {
                    action: action.into(),
                    assignee: assignee.clone(),
                    after: 0,
                    seq: None,
                    dispatches: t.dispatches,
                };
                if let (Some(j), Ok(id)) = (journal.as_deref_mut(), &id) {
                    note.after = inbox::last_seq(home, id).unwrap_or(0);
                    j.put(t.id, &note)?;
                }
                match id.and_then(|id| queue(&id, &body)) {
                    Ok(seq) => {
                        let n = ops::apply(&t, &Op::Dispatch { seq }, now)?;
                        if let Some(j) = journal.as_deref_mut() {
                            note.seq = Some(seq);
                            note.dispatches = n.dispatches;
                            j.put(t.id, &note)?;
                        }
                        store::save(home, &n)?;
                        o.action = action;
                        o.seq = Some(seq);
                        o.dispatches = n.dispatches;
                    }
                    Err(e) => o.detail = Some(e.to_string()),
                }
            }
        }
        out.push(o);
    }
    if any_failed {
        let released = store::release_all(home, now)?;
        if let Some(o) = out.iter_mut().rfind(|o| o.action == "failed") {
            o.released = released;
        }
    }
    Ok(out)
}

/// Finishes what a keyed dispatch noted of `t` ([`run`]); `None`
/// when the note is of a queueing whose record never landed.
fn resume(
    home: &Home,
    t: &Task,
    note: &Note,
    now: u64,
    journal: &mut dyn Journal,
) -> Result<Option<Outcome>> {
    let mut o = Outcome {
        task: t.id,
        action: action_of(&note.action),
        assignee: note.assignee.clone(),
        seq: note.seq,
        dispatches: note.dispatches,
        doorbell: None,
        detail: None,
        released: Vec::new(),
    };
    if o.action == "failed" {
        o.detail = Some(BREAKER_REASON.into());
        return Ok(Some(o));
    }
    let seq = if let Some(seq) = note.seq {
        seq
    } else {
        let found = match TaskId::parse(&note.assignee) {
            Ok(id) => inbox::find_since(
                home,
                &id,
                note.after,
                DISPATCH_FROM,
                message(t, &note.assignee).as_bytes(),
            )?,
            Err(_) => None,
        };
        let Some(seq) = found else {
            return Ok(None);
        };
        seq
    };
    o.seq = Some(seq);
    // Saved already unless the first run ended between the record and the
    // task's file; a task changed by hand since is left as it is.
    if t.dispatch_seq != Some(seq)
        && let Ok(n) = ops::apply(t, &Op::Dispatch { seq }, now)
    {
        o.dispatches = n.dispatches;
        if note.seq.is_none() {
            let mut done = note.clone();
            done.seq = Some(seq);
            done.dispatches = n.dispatches;
            journal.put(t.id, &done)?;
        }
        store::save(home, &n)?;
    }
    Ok(Some(o))
}

/// Refuses (exit 1) an assignee whose meta names a host: this home's
/// inbox of it is read by no worker, and the acknowledgement dispatch
/// waits for would never come. The task stays as it was, reported
/// `error`; the way there is that host's own board.
/// A meta that cannot be read is not this check's to report: the queueing
/// goes on, as before, and the ring says what is wrong with it.
fn refuse_remote(home: &Home, id: &TaskId) -> Result<()> {
    let host = crate::meta::TaskMeta::load(home, id)
        .ok()
        .flatten()
        .and_then(|m| m.host);
    match host {
        None => Ok(()),
        Some(host) => Err(crate::error::Error::refused(format!(
            "assignee {id} runs on host {host}; dispatch reaches this home's inboxes only: add the task to that host's board (fm-board --host {host} add … --assignee {id}) and dispatch it there (fm-board --host {host} dispatch)"
        ))),
    }
}

/// The part of a dispatch under the board lock: [`run`] queueing with
/// [`inbox::send`] (no ring). Then [`ring_and_record`], after the board
/// lock is released, so ringing — seconds per pane, with retries — never
/// holds up other board commands, such as the workers' own `fm-board
/// complete` the message asks for (`crate::route::board::dispatch`).
pub(crate) fn queue_all(
    home: &Home,
    cfg: &Config,
    now: u64,
    journal: Option<&mut dyn Journal>,
    warnings: &mut Vec<String>,
) -> Result<Vec<Outcome>> {
    let mut queue = |id: &TaskId, body: &str| {
        refuse_remote(home, id)?;
        let msg = Outgoing {
            from: DISPATCH_FROM,
            body: body.as_bytes(),
            fire_and_forget: false,
            dedupe: false,
        };
        inbox::send(home, cfg, Tool::Board, id, &msg, Ring::Later, now).map(|s| s.seq)
    };
    run(
        home,
        now,
        cfg.watch.grace_secs,
        &mut queue,
        journal,
        warnings,
    )
}

/// The part of a dispatch after the board lock: rings each assignee a
/// record was queued for (filling [`Outcome::doorbell`]), then records one
/// event per outcome; returns what to warn about, one line each.
pub(crate) fn ring_and_record(
    home: &Home,
    cfg: &Config,
    now: u64,
    outcomes: &mut [Outcome],
) -> Vec<String> {
    let mut warnings = Vec::new();
    for o in outcomes
        .iter_mut()
        .filter(|o| matches!(o.action, "dispatched" | "resent"))
    {
        if let Ok(id) = TaskId::parse(&o.assignee) {
            let rung = match Recipient::load(home, cfg, &id) {
                Ok(r) => {
                    let rung = r.ring(home, cfg, now, Known::default());
                    warnings.extend(rung.warnings);
                    rung.outcome
                }
                Err(e) => {
                    warnings.push(format!("{id}: {e}"));
                    Doorbell::Failed
                }
            };
            o.doorbell = Some(rung.as_str().to_string());
        }
    }
    for o in outcomes.iter() {
        let d = events::Dispatch {
            assignee: o.assignee.clone(),
            seq: o.seq,
            dispatches: o.dispatches,
            detail: o.detail.clone().unwrap_or_default(),
        };
        let event = match o.action {
            "dispatched" => Event::BoardDispatched { dispatch: d },
            "resent" => Event::BoardResent { dispatch: d },
            "failed" => Event::BoardDispatchFailed { dispatch: d },
            _ => Event::BoardDispatchError { dispatch: d },
        };
        Entry::new(now, Tool::Board, &o.task.to_string(), event).record(home);
        super::apply::record_releases(home, o.task, &o.released, now);
    }
    warnings
}

#[cfg(test)]
#[path = "dispatch_tests.rs"]
mod tests;

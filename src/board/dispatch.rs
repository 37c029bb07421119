//! `fm-board dispatch` (SPEC §11.1): hands pending assigned tasks to their
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

use serde::Serialize;

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
use crate::tmux::recipient::Recipient;

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
pub(crate) struct Outcome {
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

/// One dispatch pass over the whole board, under the board lock (records
/// are queued, not rung, while it is held). A task whose queueing fails is
/// reported (`error`) and left unchanged.
pub fn run(home: &Home, now: u64, grace: u64, queue: &mut QueueFn<'_>) -> Result<Vec<Outcome>> {
    let _guard = store::lock(home)?;
    let (tasks, warnings) = store::load_all(home)?;
    for w in warnings {
        crate::output::err_line(&format!("fm-board: warning: skipped {w}"));
    }
    let mut out = Vec::new();
    let mut any_failed = false;
    for t in tasks {
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
            }
            Plan::Send | Plan::Resend => {
                let queued =
                    TaskId::parse(&assignee).and_then(|id| queue(&id, &message(&t, &assignee)));
                match queued {
                    Ok(seq) => {
                        let n = ops::apply(&t, &Op::Dispatch { seq }, now)?;
                        store::save(home, &n)?;
                        o.action = if p == Plan::Send {
                            "dispatched"
                        } else {
                            "resent"
                        };
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

/// `fm-board dispatch`: [`run`], then one doorbell ring per queued record
/// (after the board lock is released, so ringing — seconds per pane, with
/// retries — never holds up other board commands, such as the workers' own
/// `fm-board complete` the message asks for), then the events.
pub(crate) fn dispatch(home: &Home, cfg: &Config, now: u64) -> Result<Vec<Outcome>> {
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
    let mut outcomes = run(home, now, cfg.watch.grace_secs, &mut queue)?;
    for o in outcomes
        .iter_mut()
        .filter(|o| matches!(o.action, "dispatched" | "resent"))
    {
        if let Ok(id) = TaskId::parse(&o.assignee) {
            let rung = match Recipient::load(home, cfg, &id) {
                Ok(r) => r.ring(home, cfg),
                Err(e) => {
                    crate::output::err_line(&format!("fm-board: warning: {id}: {e}"));
                    Doorbell::Failed
                }
            };
            o.doorbell = Some(rung.as_str().to_string());
        }
    }
    for o in &outcomes {
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
    Ok(outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_follows_the_breaker() {
        let mut t = Task::new(BoardId(1), "s", 0);
        let plan = |t: &Task, acked| plan(t, acked, 100, 90);
        assert_eq!(plan(&t, false), Plan::Skip);
        t.assignee = Some("w1".into());
        assert_eq!(plan(&t, false), Plan::Send);
        t.status = Status::InProgress;
        assert_eq!(
            plan(&t, false),
            Plan::Skip,
            "claimed by hand, never dispatched"
        );
        t.dispatches = 1;
        t.dispatch_seq = Some(1);
        assert_eq!(plan(&t, false), Plan::Resend);
        assert_eq!(plan(&t, true), Plan::Skip);
        t.dispatches = 3;
        assert_eq!(plan(&t, false), Plan::Break);
        assert_eq!(plan(&t, true), Plan::Skip);
        // Within the grace period after the last dispatch nothing happens.
        t.updated_at = 50;
        assert_eq!(super::plan(&t, false, 100, 90), Plan::Skip);
        assert_eq!(super::plan(&t, false, 140, 90), Plan::Break);
    }

    #[test]
    fn message_names_the_task_and_the_commands() {
        let mut t = Task::new(BoardId(4), "fix login", 0);
        t.description = "the form".into();
        let m = message(&t, "w1");
        assert!(
            m.starts_with("Board task T-004: fix login\n\nthe form\n"),
            "{m}"
        );
        assert!(
            m.contains("fm-board complete T-004 --result") && m.contains("--as w1"),
            "{m}"
        );
        assert!(!m.contains("re-sent"));
        t.dispatches = 1;
        assert!(message(&t, "w1").contains("dispatch 2 of 3"));
    }
}

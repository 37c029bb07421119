//! The board's use cases besides dispatch (docs/spec/board.md): adding a task and
//! changing one, each written under the board lock through [`super::store`]
//! and recorded as its `board.*` event here — the one place they are
//! produced. A blocking comment also raises a `blocker` wake and runs the
//! captain's `on_wake` hook; tasks a change releases get `board.released`.

use super::ops::Op;
use super::store::{self, Change, NewTask};
use super::{BoardId, Task};
use crate::config::Config;
use crate::error::Result;
use crate::events::{Entry, Event, Tool, Transition};
use crate::home::Home;
use crate::wakes;

/// Adds a task (`fm-board add`) and records `board.added`.
pub(crate) fn add(home: &Home, new: NewTask, now: u64) -> Result<Task> {
    let t = store::add(home, new, now)?;
    let event = Event::BoardAdded {
        subject: t.subject.clone(),
        status: t.status.as_str(),
        assignee: t.assignee.clone().unwrap_or_default(),
        blocked_by: t.blocked_by.iter().map(BoardId::to_string).collect(),
        priority: t.priority,
        require_approval: t.require_approval,
    };
    Entry::new(now, Tool::Board, &t.id.to_string(), event).record(home);
    Ok(t)
}

/// Runs `op` on task `id` under the lock and records its event by `actor`
/// (and, for a blocking comment, the wake, before anything is saved).
pub(crate) fn change(
    home: &Home,
    cfg: &Config,
    id: BoardId,
    op: &Op,
    actor: &str,
    now: u64,
) -> Result<Change> {
    let mut wake = None;
    let c = store::update(home, id, op, now, |after| {
        if let Op::Comment {
            text,
            by,
            blocker: true,
        } = op
        {
            let line = format!(
                "{}: {} (blocker from {by}; task failed): {text}",
                after.id, after.subject
            );
            wake = Some(wakes::append(
                home,
                &after.id.to_string(),
                "blocker",
                &line,
                now,
            )?);
        }
        Ok(())
    })?;
    let change = Transition {
        from: c.before.status.as_str(),
        status: c.after.status.as_str(),
    };
    if let Some(event) = event(op, change, wake.as_ref().map(|w| w.seq)) {
        Entry::new(now, Tool::Board, &id.to_string(), event)
            .by(actor)
            .record(home);
    }
    if let Some(w) = &wake {
        // Every wake runs the captain's on_wake hook (docs/spec/watch.md#wakes), this one too.
        crate::watch::hook::spawn(&cfg.watch.on_wake, w);
        crate::watch::hook::wait_all();
    }
    record_releases(home, id, &c.released, now);
    Ok(c)
}

/// The event of a change; `None` for a dispatch, which
/// [`super::dispatch`] records itself.
fn event(op: &Op, change: Transition, wake_seq: Option<u64>) -> Option<Event> {
    Some(match op {
        Op::Claim { .. } => Event::BoardClaimed { change },
        Op::Complete { result, .. } => Event::BoardCompleted {
            change,
            result: result.clone(),
        },
        Op::Review => Event::BoardReviewed { change },
        Op::Approve => Event::BoardApproved { change },
        Op::Reject { reason } => Event::BoardRejected {
            change,
            reason: reason.clone(),
        },
        Op::Cancel { reason } => Event::BoardCancelled {
            change,
            reason: reason.clone(),
        },
        Op::Fail { reason } => Event::BoardFailed {
            change,
            reason: reason.clone(),
        },
        Op::Retry => Event::BoardRetried { change },
        Op::Comment { text, blocker, .. } => Event::BoardCommented {
            change,
            text: text.clone(),
            blocker: *blocker,
            wake_seq,
        },
        Op::Progress { percent, step } => Event::BoardProgress {
            change,
            percent: *percent,
            step: step.clone().unwrap_or_default(),
        },
        Op::Dispatch { .. } => return None,
    })
}

/// One `board.released` per task a change (by task `by`) released.
pub(super) fn record_releases(home: &Home, by: BoardId, released: &[Task], now: u64) {
    for r in released {
        let event = Event::BoardReleased {
            by: by.to_string(),
            status: r.status.as_str(),
        };
        Entry::new(now, Tool::Board, &r.id.to_string(), event).record(home);
    }
}

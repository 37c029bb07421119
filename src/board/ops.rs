//! Board transitions as pure functions (docs/spec/board.md#statuses): given a task, an
//! operation and `now`, return the new task or a refusal that names the
//! current status. Nothing here touches the disk; [`super::store`] runs
//! these under the board lock, which makes each one a compare-and-set.

use std::collections::{HashMap, HashSet};

use super::{BoardId, Comment, Status, Task};
use crate::error::{Error, Result};

/// One operation on one task (a far board change carries it as data).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub(crate) enum Op {
    Claim {
        by: String,
    },
    Complete {
        result: String,
        by: Option<String>,
    },
    Review,
    Approve,
    Reject {
        reason: String,
    },
    Cancel {
        reason: String,
    },
    Fail {
        reason: String,
    },
    Retry,
    Comment {
        text: String,
        by: String,
        blocker: bool,
    },
    Progress {
        percent: u8,
        step: Option<String>,
    },
    /// Queued into the assignee's inbox as record `seq` (dispatch).
    Dispatch {
        seq: u64,
    },
}

impl Op {
    /// The verb as typed on the command line, for refusals and events.
    pub fn verb(&self) -> &'static str {
        match self {
            Op::Claim { .. } => "claim",
            Op::Complete { .. } => "complete",
            Op::Review => "review",
            Op::Approve => "approve",
            Op::Reject { .. } => "reject",
            Op::Cancel { .. } => "cancel",
            Op::Fail { .. } => "fail",
            Op::Retry => "retry",
            Op::Comment { blocker: true, .. } => "comment --blocker",
            Op::Comment { .. } => "comment",
            Op::Progress { .. } => "progress",
            Op::Dispatch { .. } => "dispatch",
        }
    }
}

fn refuse(t: &Task, op: &Op, needs: &str) -> Error {
    let owner = match (&t.owner, t.status) {
        (Some(o), Status::InProgress | Status::InReview) => format!(" (owner {o})"),
        _ => String::new(),
    };
    Error::refused(format!(
        "{} is {}{owner}: cannot {} ({needs})",
        t.id,
        t.status,
        op.verb()
    ))
}

/// The status a task with these outstanding blockers should have when it
/// (re)enters the queue.
fn queued(blocked_by: &[BoardId]) -> Status {
    if blocked_by.is_empty() {
        Status::Pending
    } else {
        Status::Blocked
    }
}

/// Applies `op` to `t`. A refusal (exit 1) names the current status and
/// leaves `t` as it was.
pub(crate) fn apply(t: &Task, op: &Op, now: u64) -> Result<Task> {
    use Status::{Cancelled, Completed, Failed, InProgress, InReview, Pending, Stale};
    let mut n = t.clone();
    match op {
        Op::Claim { by } => {
            if t.status != Pending {
                return Err(refuse(t, op, "only a pending task can be claimed"));
            }
            n.status = InProgress;
            n.owner = Some(by.clone());
        }
        Op::Complete { result, by } => {
            match t.status {
                Pending => {
                    n.owner = Some(
                        by.clone()
                            .or_else(|| t.assignee.clone())
                            .unwrap_or_else(|| "captain".into()),
                    );
                }
                InProgress | Stale => {}
                _ => return Err(refuse(t, op, "needs pending or in_progress")),
            }
            n.result = Some(result.clone());
            n.status = if t.require_approval {
                InReview
            } else {
                Completed
            };
            if n.status == Completed {
                n.progress = Some(100);
            }
        }
        Op::Review | Op::Approve | Op::Reject { .. } if !t.require_approval => {
            return Err(refuse(
                t,
                op,
                "the task was not added with --require-approval",
            ));
        }
        Op::Review => {
            if !matches!(t.status, InProgress | Stale) {
                return Err(refuse(t, op, "needs in_progress"));
            }
            n.status = InReview;
        }
        Op::Approve => {
            if t.status != InReview {
                return Err(refuse(t, op, "needs in_review"));
            }
            n.status = Completed;
            n.progress = Some(100);
        }
        Op::Reject { reason } => {
            if t.status != InReview {
                return Err(refuse(t, op, "needs in_review"));
            }
            n.status = Cancelled;
            n.reason = Some(format!("rejected: {reason}"));
        }
        Op::Cancel { reason } | Op::Fail { reason } => {
            if t.status.is_finished() {
                return Err(refuse(t, op, "the task is already finished"));
            }
            n.status = if matches!(op, Op::Cancel { .. }) {
                Cancelled
            } else {
                Failed
            };
            n.reason = Some(reason.clone());
        }
        Op::Retry => {
            if !matches!(t.status, Failed | Cancelled | Stale) {
                return Err(refuse(t, op, "needs failed, cancelled or stale"));
            }
            n.status = queued(&t.blocked_by);
            n.owner = None;
            n.result = None;
            n.reason = None;
            n.progress = None;
            n.step = None;
            n.dispatches = 0;
            n.dispatch_seq = None;
        }
        Op::Comment { text, by, blocker } => {
            if *blocker {
                if t.status.is_finished() {
                    return Err(refuse(
                        t,
                        op,
                        "a blocker fails the task, and it is already finished",
                    ));
                }
                n.status = Failed;
                n.reason = Some(format!("blocker: {text}"));
            }
            n.comments.push(Comment {
                at: now,
                author: by.clone(),
                blocker: *blocker,
                text: text.clone(),
            });
        }
        Op::Progress { percent, step } => {
            if t.status != InProgress {
                return Err(refuse(t, op, "needs in_progress"));
            }
            n.progress = Some(*percent);
            if step.is_some() {
                n.step.clone_from(step);
            }
        }
        Op::Dispatch { seq } => {
            match t.status {
                Pending if t.assignee.is_some() => {
                    n.status = InProgress;
                    n.owner.clone_from(&t.assignee);
                    n.dispatches = 1;
                }
                InProgress if t.dispatches > 0 => n.dispatches = t.dispatches.saturating_add(1),
                _ => {
                    return Err(refuse(
                        t,
                        op,
                        "needs pending with an assignee, or a dispatched in_progress task",
                    ));
                }
            }
            n.dispatch_seq = Some(*seq);
        }
    }
    n.updated_at = now;
    Ok(n)
}

/// `dependent` after `finished` completed, failed or was cancelled: the
/// blocker is removed, and a blocked task with none left becomes pending.
/// `None` when `dependent` did not wait on `finished`.
pub(crate) fn release(dependent: &Task, finished: BoardId, now: u64) -> Option<Task> {
    if !dependent.blocked_by.contains(&finished) {
        return None;
    }
    let mut n = dependent.clone();
    n.blocked_by.retain(|b| *b != finished);
    if n.status == Status::Blocked && n.blocked_by.is_empty() {
        n.status = Status::Pending;
    }
    n.updated_at = now;
    Some(n)
}

/// The `blocked_by` a new task `id` may have on this board: refuses (exit 1,
/// nothing written) an unknown task, the task itself, or a reference that
/// reaches a cycle. Blockers already finished are dropped (their release has
/// happened), the rest are deduplicated and sorted.
pub(crate) fn check_blockers(
    id: BoardId,
    wanted: &[BoardId],
    board: &HashMap<BoardId, Vec<BoardId>>,
    finished: &HashSet<BoardId>,
) -> Result<Vec<BoardId>> {
    let mut out = Vec::new();
    for &b in wanted {
        if b == id {
            return Err(Error::refused(format!(
                "dependency cycle: {id} would be blocked by itself"
            )));
        }
        if !board.contains_key(&b) {
            return Err(Error::refused(format!("unknown task in --blocked-by: {b}")));
        }
        if let Some(path) = cycle_from(b, board) {
            let path: Vec<String> = path.iter().map(BoardId::to_string).collect();
            return Err(Error::refused(format!(
                "dependency cycle: {}",
                path.join(" -> ")
            )));
        }
        if !finished.contains(&b) && !out.contains(&b) {
            out.push(b);
        }
    }
    out.sort();
    Ok(out)
}

/// A cycle reachable from `start` through `blocked_by` edges, as a path
/// whose last element repeats an earlier one.
fn cycle_from(start: BoardId, board: &HashMap<BoardId, Vec<BoardId>>) -> Option<Vec<BoardId>> {
    // Iterative DFS with an explicit path so a long chain cannot overflow the stack.
    let mut done: HashSet<BoardId> = HashSet::new();
    let mut path: Vec<BoardId> = vec![start];
    let mut next: Vec<usize> = vec![0];
    while let Some(&node) = path.last() {
        let edges = board.get(&node).map_or(&[][..], Vec::as_slice);
        let i = *next.last().unwrap();
        if i == edges.len() {
            done.insert(node);
            path.pop();
            next.pop();
            continue;
        }
        *next.last_mut().unwrap() += 1;
        let e = edges[i];
        if let Some(pos) = path.iter().position(|p| *p == e) {
            let mut cyc = path[pos..].to_vec();
            cyc.push(e);
            return Some(cyc);
        }
        if !done.contains(&e) {
            path.push(e);
            next.push(0);
        }
    }
    None
}

/// The status a new task starts in.
pub(crate) fn initial_status(blocked_by: &[BoardId]) -> Status {
    queued(blocked_by)
}

#[cfg(test)]
#[path = "ops_tests.rs"]
mod tests;

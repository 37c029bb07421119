//! `fm-board`'s output: the list table, one task, the dispatch report.

use std::fmt::Write as _;

use super::common::{self, Ctx};
use crate::board::{BoardId, Status, Task, store};
use crate::clock;
use crate::error::Result;

fn or_dash(v: Option<&String>) -> &str {
    v.map_or("-", String::as_str)
}

fn deps(t: &Task) -> String {
    if t.blocked_by.is_empty() {
        return "-".into();
    }
    t.blocked_by
        .iter()
        .map(BoardId::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// `list`: a table (or a JSON array) built in one buffer and written once.
pub(crate) fn list(ctx: &Ctx, status: Option<Status>, json: bool) -> Result<u8> {
    let (tasks, warnings) = store::load_all(&ctx.home)?;
    for w in &warnings {
        crate::output::err_line(&format!("fm-board: warning: skipped {w}"));
    }
    let tasks = store::filter(tasks, status);
    if json {
        return common::out_json(&tasks).map(|()| 0);
    }
    let mut s = String::with_capacity(64 + tasks.len() * 96);
    let _ = writeln!(
        s,
        "{:<7} {:<11} {:>4} {:<14} {:<14} {:<12} SUBJECT",
        "ID", "STATUS", "PRI", "ASSIGNEE", "OWNER", "BLOCKED_BY"
    );
    for t in &tasks {
        let _ = writeln!(
            s,
            "{:<7} {:<11} {:>4} {:<14} {:<14} {:<12} {}",
            t.id.to_string(),
            t.status.as_str(),
            t.priority,
            or_dash(t.assignee.as_ref()),
            or_dash(t.owner.as_ref()),
            deps(t),
            t.subject
        );
    }
    crate::output::out_block(&s).map(|()| 0)
}

/// `show`: the task object, or a few labelled lines.
pub(crate) fn show(t: &Task, json: bool) -> Result<u8> {
    if json {
        common::out_json(t)?;
        return Ok(0);
    }
    let mut s = String::new();
    let _ = writeln!(s, "{} {} \u{b7} {}", t.id, t.status, t.subject);
    let approval = if t.require_approval {
        "required"
    } else {
        "not required"
    };
    let _ = writeln!(
        s,
        "assignee: {} \u{b7} owner: {} \u{b7} priority: {} \u{b7} approval: {approval} \u{b7} dispatches: {}",
        or_dash(t.assignee.as_ref()),
        or_dash(t.owner.as_ref()),
        t.priority,
        t.dispatches
    );
    let _ = writeln!(s, "blocked by: {}", deps(t));
    if let Some(p) = t.progress {
        let _ = writeln!(
            s,
            "progress: {p}%{}",
            t.step
                .as_deref()
                .map(|st| format!(" \u{b7} {st}"))
                .unwrap_or_default()
        );
    }
    for (label, v) in [("result", &t.result), ("reason", &t.reason)] {
        if let Some(v) = v {
            let _ = writeln!(s, "{label}: {v}");
        }
    }
    let _ = writeln!(
        s,
        "created: {} \u{b7} updated: {}",
        clock::rfc3339(t.created_at),
        clock::rfc3339(t.updated_at)
    );
    if !t.description.is_empty() {
        let _ = writeln!(s, "description:");
        for l in t.description.lines() {
            let _ = writeln!(s, "  {l}");
        }
    }
    for c in &t.comments {
        let kind = if c.blocker { " [blocker]" } else { "" };
        let _ = writeln!(
            s,
            "comment {} {}{kind}: {}",
            clock::rfc3339(c.at),
            c.author,
            c.text
        );
    }
    crate::output::out_block(&s).map(|()| 0)
}

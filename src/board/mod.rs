//! The task board (SPEC §11.1): one plain, human-readable file per task
//! under `data/board/`, named `T-NNN.task`.
//!
//! This module owns the types and the file format (parse and render, which
//! round-trip); [`ops`] holds the transitions as pure functions, [`store`]
//! the locked load/save, [`apply`] the add and change use cases with their
//! events, and [`dispatch`] the hand-off into inboxes.
//!
//! Format (documented in `docs/board.md`): `key=value` lines; values escape
//! `\` as `\\`, newline as `\n` and carriage return as `\r`, so every value
//! stays on one line; `comment=` repeats, one per comment; unknown keys are
//! kept and written back; the parser never panics, whatever the bytes.

use std::fmt;

use serde::Serialize;

use crate::error::{Error, Result};

pub(crate) mod apply;
pub(crate) mod dispatch;
pub(crate) mod ops;
pub(crate) mod store;

/// A board task number, shown as `T-NNN` (at least three digits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BoardId(pub u64);

impl BoardId {
    /// Accepts `T-1`, `T-001`, `t-1` and `1`; anything else is exit 2.
    pub fn parse(raw: &str) -> Result<BoardId> {
        let digits = raw
            .strip_prefix("T-")
            .or_else(|| raw.strip_prefix("t-"))
            .unwrap_or(raw);
        let ok =
            !digits.is_empty() && digits.len() <= 18 && digits.bytes().all(|b| b.is_ascii_digit());
        match digits.parse::<u64>() {
            Ok(n) if ok && n > 0 => Ok(BoardId(n)),
            _ => Err(Error::usage(format!(
                "invalid board task id {raw:?} (expected T-NNN, e.g. T-001 or 1)"
            ))),
        }
    }

    /// The number in a `T-NNN.task` file name written by this module.
    pub fn from_file_name(name: &str) -> Option<BoardId> {
        let n = name.strip_prefix("T-")?.strip_suffix(".task")?;
        let id = BoardId::parse(n).ok()?;
        (id.to_string().len() == name.len() - ".task".len()).then_some(id)
    }
}

impl fmt::Display for BoardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "T-{:03}", self.0)
    }
}

impl Serialize for BoardId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Task statuses of SPEC §11.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    Blocked,
    InProgress,
    InReview,
    Completed,
    Failed,
    Cancelled,
    Stale,
}

impl Status {
    pub const ALL: [Status; 8] = [
        Status::Pending,
        Status::Blocked,
        Status::InProgress,
        Status::InReview,
        Status::Completed,
        Status::Failed,
        Status::Cancelled,
        Status::Stale,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Blocked => "blocked",
            Status::InProgress => "in_progress",
            Status::InReview => "in_review",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
            Status::Stale => "stale",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Completed, failed and cancelled tasks no longer block anyone.
    pub(crate) fn is_finished(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One comment; a `blocker` comment failed the task when it was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Comment {
    pub at: u64,
    pub author: String,
    pub blocker: bool,
    pub text: String,
}

/// One board task. Serialises to the `show --json` object of SPEC §11.1
/// (plus `progress`, `step` and `reason`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Task {
    pub id: BoardId,
    pub(crate) subject: String,
    pub description: String,
    pub status: Status,
    pub assignee: Option<String>,
    pub owner: Option<String>,
    pub priority: i64,
    pub blocked_by: Vec<BoardId>,
    pub require_approval: bool,
    pub dispatches: u32,
    /// Inbox record number (in the assignee's inbox) of the last dispatch.
    #[serde(skip)]
    pub dispatch_seq: Option<u64>,
    pub result: Option<String>,
    pub reason: Option<String>,
    pub progress: Option<u8>,
    pub step: Option<String>,
    pub comments: Vec<Comment>,
    pub(crate) created_at: u64,
    pub updated_at: u64,
    /// Keys this version does not know, kept in order and written back.
    #[serde(skip)]
    pub extra: Vec<(String, String)>,
}

impl Task {
    /// A fresh task as `add` creates it (status decided by [`ops::new_task`]).
    pub fn new(id: BoardId, subject: &str, now: u64) -> Task {
        Task {
            id,
            subject: subject.to_string(),
            description: String::new(),
            status: Status::Pending,
            assignee: None,
            owner: None,
            priority: 0,
            blocked_by: Vec::new(),
            require_approval: false,
            dispatches: 0,
            dispatch_seq: None,
            result: None,
            reason: None,
            progress: None,
            step: None,
            comments: Vec::new(),
            created_at: now,
            updated_at: now,
            extra: Vec::new(),
        }
    }
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

fn unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
            None => out.push('\\'),
        }
    }
    out
}

fn opt(v: &Option<String>) -> String {
    v.as_deref().map(escape).unwrap_or_default()
}

/// Renders the file. `parse(&render(t)) == Ok(t)` for every task.
pub fn render(t: &Task) -> String {
    let deps: Vec<String> = t.blocked_by.iter().map(BoardId::to_string).collect();
    let mut s = String::with_capacity(512);
    let mut kv = |k: &str, v: &str| {
        s.push_str(k);
        s.push('=');
        s.push_str(v);
        s.push('\n');
    };
    kv("id", &t.id.to_string());
    kv("subject", &escape(&t.subject));
    kv("status", t.status.as_str());
    kv("priority", &t.priority.to_string());
    kv("assignee", &opt(&t.assignee));
    kv("owner", &opt(&t.owner));
    kv("blocked_by", &deps.join(","));
    kv(
        "require_approval",
        if t.require_approval { "true" } else { "false" },
    );
    kv("dispatches", &t.dispatches.to_string());
    kv(
        "dispatch_seq",
        &t.dispatch_seq.map(|n| n.to_string()).unwrap_or_default(),
    );
    kv("result", &opt(&t.result));
    kv("reason", &opt(&t.reason));
    kv(
        "progress",
        &t.progress.map(|p| p.to_string()).unwrap_or_default(),
    );
    kv("step", &opt(&t.step));
    kv("created_at", &t.created_at.to_string());
    kv("updated_at", &t.updated_at.to_string());
    kv("description", &escape(&t.description));
    for c in &t.comments {
        let kind = if c.blocker { "blocker" } else { "note" };
        kv(
            "comment",
            &format!("{} {} {kind}: {}", c.at, escape(&c.author), escape(&c.text)),
        );
    }
    for (k, v) in &t.extra {
        kv(k, v);
    }
    s
}

fn parse_comment(v: &str) -> Option<Comment> {
    let (at, rest) = v.split_once(' ')?;
    let (author, rest) = rest.split_once(' ')?;
    let (kind, text) = rest.split_once(": ")?;
    let blocker = match kind {
        "blocker" => true,
        "note" => false,
        _ => return None,
    };
    Some(Comment {
        at: at.parse().ok()?,
        author: unescape(author),
        blocker,
        text: unescape(text),
    })
}

/// Parses a task file. Invalid UTF-8 is decoded lossily; a missing or bad
/// `id`/`status`, or a malformed known field, is an error naming the key.
pub fn parse(bytes: &[u8]) -> std::result::Result<Task, String> {
    let text = match std::str::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    };
    let mut id = None;
    let mut status = None;
    let mut t = Task::new(BoardId(0), "", 0);
    let num = |k: &str, v: &str| {
        v.parse::<u64>()
            .map_err(|_| format!("{k}: not a number: {v:?}"))
    };
    let optv = |v: &str| (!v.is_empty()).then(|| unescape(v));
    for line in text.lines() {
        // CRs at a line's end are line-ending noise (a CRLF edit, a final
        // line without `\n`): drop them all, so that what `render` writes
        // back parses to the same task (found by fuzzing).
        let line = line.trim_end_matches('\r');
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            return Err(format!("line without '=': {line:?}"));
        };
        match k {
            "id" => id = Some(BoardId::parse(v).map_err(|_| format!("id: bad task id {v:?}"))?),
            "subject" => t.subject = unescape(v),
            "status" => {
                status =
                    Some(Status::parse(v).ok_or_else(|| format!("status: unknown status {v:?}"))?)
            }
            "priority" => {
                t.priority = v
                    .parse()
                    .map_err(|_| format!("priority: not a number: {v:?}"))?
            }
            "assignee" => t.assignee = optv(v),
            "owner" => t.owner = optv(v),
            "blocked_by" => {
                t.blocked_by = v
                    .split(',')
                    .filter(|p| !p.trim().is_empty())
                    .map(|p| {
                        BoardId::parse(p.trim())
                            .map_err(|_| format!("blocked_by: bad task id {p:?}"))
                    })
                    .collect::<std::result::Result<_, _>>()?
            }
            "require_approval" => {
                t.require_approval = match v {
                    "true" => true,
                    "false" | "" => false,
                    _ => return Err(format!("require_approval: not true/false: {v:?}")),
                }
            }
            "dispatches" => {
                t.dispatches = v
                    .parse()
                    .map_err(|_| format!("dispatches: not a number: {v:?}"))?
            }
            "dispatch_seq" => t.dispatch_seq = if v.is_empty() { None } else { Some(num(k, v)?) },
            "result" => t.result = optv(v),
            "reason" => t.reason = optv(v),
            "progress" => {
                t.progress = match v {
                    "" => None,
                    _ => Some(
                        v.parse::<u8>()
                            .ok()
                            .filter(|p| *p <= 100)
                            .ok_or(format!("progress: not 0-100: {v:?}"))?,
                    ),
                }
            }
            "step" => t.step = optv(v),
            "created_at" => t.created_at = num(k, v)?,
            "updated_at" => t.updated_at = num(k, v)?,
            "description" => t.description = unescape(v),
            "comment" => t
                .comments
                .push(parse_comment(v).ok_or_else(|| format!("comment: malformed: {v:?}"))?),
            _ => t.extra.push((k.to_string(), v.to_string())),
        }
    }
    t.id = id.ok_or("missing id")?;
    t.status = status.ok_or("missing status")?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Task {
        let mut t = Task::new(BoardId(7), "fix \\ the\nlogin", 100);
        t.description = "two\r\nlines \\n literal".into();
        t.assignee = Some("w1".into());
        t.blocked_by = vec![BoardId(1), BoardId(1000)];
        t.priority = -3;
        t.dispatch_seq = Some(4);
        t.progress = Some(40);
        t.comments.push(Comment {
            at: 5,
            author: "w1".into(),
            blocker: true,
            text: "stuck: on\nthis".into(),
        });
        t.extra.push(("future_key".into(), "x=y".into()));
        t
    }

    #[test]
    fn ids_accept_the_three_forms() {
        for s in ["T-1", "T-001", "1", "t-1", "001"] {
            assert_eq!(BoardId::parse(s).unwrap(), BoardId(1), "{s}");
        }
        for s in [
            "",
            "T-",
            "T-0",
            "0",
            "x",
            "T-1a",
            "-1",
            "T--1",
            "T-99999999999999999999",
        ] {
            assert_eq!(BoardId::parse(s).unwrap_err().exit_code(), 2, "{s}");
        }
        assert_eq!(BoardId(1000).to_string(), "T-1000");
        assert_eq!(BoardId::from_file_name("T-001.task"), Some(BoardId(1)));
        assert_eq!(BoardId::from_file_name("T-1000.task"), Some(BoardId(1000)));
        for n in ["T-1.task", ".T-001.task.tmp", "T-001.task~", "x.task"] {
            assert_eq!(BoardId::from_file_name(n), None, "{n}");
        }
    }

    #[test]
    fn render_parse_round_trip() {
        let t = sample();
        let text = render(&t);
        assert!(text.lines().count() >= 18, "{text}");
        assert_eq!(parse(text.as_bytes()).unwrap(), t);
    }

    #[test]
    fn trailing_carriage_returns_survive_a_rewrite() {
        // Found by fuzzing: an unknown key's `\r` was kept, then lost on rewrite.
        for raw in [
            &b"id=T-7\r\nstatus=pending\r\nfuture=x\r\n"[..],
            b"id=T-7\nstatus=pending\nfuture=x\r\r\n",
            b"id=T-7\nstatus=pending\nfuture=x\r",
        ] {
            let t = parse(raw).unwrap();
            assert_eq!(t.extra, [("future".to_string(), "x".to_string())]);
            assert_eq!(parse(render(&t).as_bytes()).unwrap(), t);
        }
    }

    #[test]
    fn hand_edits_are_tolerated_or_named() {
        let t = parse(b"# note\nid=T-2\nstatus=pending\nsubject=s\n\n").unwrap();
        assert_eq!((t.id, t.status), (BoardId(2), Status::Pending));
        assert!(parse(b"id=T-2\n").unwrap_err().contains("status"));
        assert!(
            parse(b"id=T-2\nstatus=weird\n")
                .unwrap_err()
                .contains("weird")
        );
        assert!(
            parse(b"id=T-2\nstatus=pending\npriority=high\n")
                .unwrap_err()
                .contains("priority")
        );
    }
}

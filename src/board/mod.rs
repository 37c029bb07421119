//! The task board (docs/spec/board.md): one plain, human-readable file per task
//! under `data/board/`, named `T-NNN.task`.
//!
//! This module owns the types; `file` the file format (parse and render,
//! which round-trip); [`ops`] holds the transitions as pure functions, [`store`]
//! the locked load/save, [`apply`] the add and change use cases with their
//! events, and [`dispatch`] the hand-off into inboxes.
//!
//! The file format is documented in `docs/board.md`.

use std::fmt;

use serde::Serialize;

use crate::error::{Error, Result};

pub(crate) mod apply;
pub(crate) mod dispatch;
mod file;
pub(crate) mod ops;
pub(crate) mod store;

pub use file::{parse, render};

/// A board task number, shown as `T-NNN` (at least three digits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BoardId(pub u64);

impl BoardId {
    /// Accepts `T-1`, `T-001`, `t-1` and `1`; anything else is exit 2.
    /// The highest id a reader parses (18 digits).
    pub const MAX: u64 = 999_999_999_999_999_999;

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
                "invalid board task id {} (expected T-NNN, e.g. T-001 or 1)",
                crate::error::quoted(raw)
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

/// `T-NNN` (or any form [`BoardId::parse`] takes), as a far report or
/// request carries it.
impl<'de> serde::Deserialize<'de> for BoardId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<BoardId, D::Error> {
        let s = String::deserialize(d)?;
        BoardId::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Task statuses of docs/spec/board.md#statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Comment {
    pub at: u64,
    pub author: String,
    pub blocker: bool,
    pub text: String,
}

/// One board task. Serialises to the `show --json` object of docs/spec/board.md#output
/// (plus `progress`, `step` and `reason`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
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

#[cfg(test)]
mod tests {
    use super::*;

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
}

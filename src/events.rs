//! The audit trail (docs/spec/events.md): `state/events.jsonl`, one JSON object per
//! line, appended through [`crate::fsx`] by the use case that did what the
//! event records — each [`Event`] is produced in one place in the library.
//!
//! Every line holds `ts`, `tool`, `task`, `action`, `actor` (default
//! `captain`) and the action's own fields, with keys in sorted order (as
//! `serde_json` writes a map). [`Event`] is the one list of actions; its
//! fields hold plain words and numbers (an outcome's or status's spelling,
//! not its type) so this module depends on nothing it records.
//!
//! An event append never undoes or fails the action it records: a failure
//! is returned as a warning for the caller to print.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::home::Home;

/// The tool an event is recorded under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum Tool {
    #[serde(rename = "fm-send")]
    Send,
    #[serde(rename = "fm-ack")]
    Ack,
    #[serde(rename = "fm-status")]
    Status,
    #[serde(rename = "fm-brief")]
    Brief,
    #[serde(rename = "fm-control")]
    Control,
    #[serde(rename = "fm-watch")]
    Watch,
    #[serde(rename = "fm-board")]
    Board,
    /// The dashboard (`fm top`): messages, answers.
    #[serde(rename = "fm-top")]
    Top,
    /// The front door's own commands (`fm land`).
    #[serde(rename = "fm")]
    Fm,
}

impl Tool {
    pub const fn as_str(self) -> &'static str {
        match self {
            Tool::Send => "fm-send",
            Tool::Ack => "fm-ack",
            Tool::Status => "fm-status",
            Tool::Brief => "fm-brief",
            Tool::Control => "fm-control",
            Tool::Watch => "fm-watch",
            Tool::Board => "fm-board",
            Tool::Top => "fm-top",
            Tool::Fm => "fm",
        }
    }
}

/// A board task's status before and after a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Transition {
    pub from: &'static str,
    pub status: &'static str,
}

/// One dispatch outcome's fields (docs/spec/board.md#dispatch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dispatch {
    pub assignee: String,
    /// The record queued; `null` when none was.
    pub seq: Option<u64>,
    pub dispatches: u32,
    pub detail: String,
}

/// Every action `state/events.jsonl` records, tagged by its `action` name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action")]
pub enum Event {
    /// A record queued in a task's inbox. `bytes` is the body's size as
    /// `fm-send` records it; `doorbell` the ring's outcome when it rang
    /// at once; `delivery` marks a fire-and-forget record.
    #[serde(rename = "inbox.queued")]
    InboxQueued {
        seq: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        bytes: Option<usize>,
        #[serde(skip_serializing_if = "Option::is_none")]
        doorbell: Option<&'static str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        delivery: Option<&'static str>,
        /// The leg that took the doorbell (docs/spec/ring.md#legs);
        /// absent when it was typed (or did not ring).
        #[serde(skip_serializing_if = "Option::is_none")]
        leg: Option<&'static str>,
    },
    /// A doorbell a delivery leg took: nothing was typed.
    #[serde(rename = "ring.leg")]
    LegRang {
        leg: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// A doorbell the profile's leg could not take (`why`): it is typed.
    #[serde(rename = "ring.leg-fallback")]
    LegFellBack { leg: &'static str, why: String },
    #[serde(rename = "inbox.acked")]
    InboxAcked { seq: u64 },
    /// A key pressed in the task's pane (`fm-send --key`).
    #[serde(rename = "pane.key")]
    PaneKey { key: String, pane: String },
    #[serde(rename = "status.appended")]
    StatusAppended { verb: String, key: String },
    #[serde(rename = "status.busy")]
    StatusBusy { source: String },
    #[serde(rename = "status.idle")]
    StatusIdle { source: String },
    #[serde(rename = "brief.written")]
    BriefWritten {
        kind: &'static str,
        forced: bool,
        scaffold: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        mode: Option<&'static str>,
    },
    #[serde(rename = "brief.revoked")]
    BriefRevoked { path: String },
    #[serde(rename = "brief.responded")]
    BriefResponded { status: String },
    #[serde(rename = "control.spawned")]
    ControlSpawned {
        pane: String,
        harness: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        base: Option<String>,
    },
    #[serde(rename = "control.interrupted")]
    ControlInterrupted,
    #[serde(rename = "control.stopped")]
    ControlStopped,
    #[serde(rename = "control.relaunched")]
    ControlRelaunched {
        from: String,
        to: String,
        killed: bool,
    },
    #[serde(rename = "control.restored")]
    ControlRestored {
        pane: String,
        harness: String,
        resumed: bool,
    },
    #[serde(rename = "control.torn-down")]
    ControlTornDown { archive: String },
    /// `fm land`: the branch's tip delivered (docs/spec/land.md#land).
    #[serde(rename = "task.landed")]
    TaskLanded {
        commit: String,
        mode: String,
        how: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        target: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pr: Option<String>,
    },
    #[serde(rename = "watch.rang")]
    WatchRang {
        seq: u64,
        count: u64,
        doorbell: &'static str,
        /// The leg that took it; absent when typed.
        #[serde(skip_serializing_if = "Option::is_none")]
        leg: Option<&'static str>,
    },
    #[serde(rename = "watch.escalation")]
    WatchEscalation { seq: u64 },
    #[serde(rename = "watch.overdue")]
    WatchOverdue { seq: u64 },
    #[serde(rename = "watch.dead-agent")]
    WatchDeadAgent { seq: u64 },
    /// A ring found a dialog owning the agent's keyboard: one `dialog` wake.
    #[serde(rename = "watch.dialog")]
    WatchDialog { seq: u64, dialog: String },
    #[serde(rename = "board.added")]
    BoardAdded {
        subject: String,
        status: &'static str,
        assignee: String,
        blocked_by: Vec<String>,
        priority: i64,
        require_approval: bool,
    },
    #[serde(rename = "board.claimed")]
    BoardClaimed {
        #[serde(flatten)]
        change: Transition,
    },
    #[serde(rename = "board.completed")]
    BoardCompleted {
        #[serde(flatten)]
        change: Transition,
        result: String,
    },
    #[serde(rename = "board.reviewed")]
    BoardReviewed {
        #[serde(flatten)]
        change: Transition,
    },
    #[serde(rename = "board.approved")]
    BoardApproved {
        #[serde(flatten)]
        change: Transition,
    },
    #[serde(rename = "board.rejected")]
    BoardRejected {
        #[serde(flatten)]
        change: Transition,
        reason: String,
    },
    #[serde(rename = "board.cancelled")]
    BoardCancelled {
        #[serde(flatten)]
        change: Transition,
        reason: String,
    },
    /// `fm-board fail` (the dispatch breaker's failure is
    /// [`Event::BoardDispatchFailed`], under the same action name).
    #[serde(rename = "board.failed")]
    BoardFailed {
        #[serde(flatten)]
        change: Transition,
        reason: String,
    },
    #[serde(rename = "board.retried")]
    BoardRetried {
        #[serde(flatten)]
        change: Transition,
    },
    #[serde(rename = "board.commented")]
    BoardCommented {
        #[serde(flatten)]
        change: Transition,
        text: String,
        blocker: bool,
        /// The `blocker` wake a blocking comment raised.
        #[serde(skip_serializing_if = "Option::is_none")]
        wake_seq: Option<u64>,
    },
    #[serde(rename = "board.progress")]
    BoardProgress {
        #[serde(flatten)]
        change: Transition,
        percent: u8,
        step: String,
    },
    /// A task whose blockers all finished, released back to the queue.
    #[serde(rename = "board.released")]
    BoardReleased { by: String, status: &'static str },
    #[serde(rename = "board.dispatched")]
    BoardDispatched {
        #[serde(flatten)]
        dispatch: Dispatch,
    },
    #[serde(rename = "board.resent")]
    BoardResent {
        #[serde(flatten)]
        dispatch: Dispatch,
    },
    /// The circuit breaker failed a task after unacknowledged dispatches.
    #[serde(rename = "board.failed")]
    BoardDispatchFailed {
        #[serde(flatten)]
        dispatch: Dispatch,
    },
    #[serde(rename = "board.dispatch_error")]
    BoardDispatchError {
        #[serde(flatten)]
        dispatch: Dispatch,
    },
}

/// One line of `state/events.jsonl`: an event with when, by which tool,
/// about which task and by whom.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub ts: u64,
    pub tool: Tool,
    /// The task id (a board task's `T-NNN` for board events); may be empty.
    pub task: String,
    pub actor: String,
    #[serde(flatten)]
    pub(crate) event: Event,
}

impl Entry {
    /// An entry at `ts` with the default actor `captain`.
    pub fn new(ts: u64, tool: Tool, task: &str, event: Event) -> Entry {
        Entry {
            ts,
            tool,
            task: task.to_string(),
            actor: "captain".into(),
            event,
        }
    }

    /// The actor, unless `actor` is empty (then `captain` stays).
    pub fn by(mut self, actor: &str) -> Entry {
        if !actor.is_empty() {
            self.actor = actor.to_string();
        }
        self
    }

    /// The action's name (`inbox.queued`, …).
    pub fn action(&self) -> String {
        self.object()
            .get("action")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    }

    fn object(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        }
    }

    /// The line as written: one JSON object with sorted keys, then `\n`.
    pub fn to_line(&self) -> String {
        let mut s = Value::Object(self.object()).to_string();
        s.push('\n');
        s
    }

    /// Appends to `state/events.jsonl`. Returns a warning on failure,
    /// worded `<tool>: warning: …` after the entry's tool (docs/spec/cli.md#errors).
    pub(crate) fn append(&self, home: &Home) -> Option<String> {
        let res = crate::fsx::ensure_dir(&home.state_dir())
            .and_then(|()| crate::fsx::append_line(&home.events(), self.to_line().as_bytes()));
        res.err().map(|e| {
            format!(
                "{}: warning: event {} not recorded: {e}",
                self.tool.as_str(),
                self.action()
            )
        })
    }

    /// Appends and prints any warning to stderr.
    pub fn record(&self, home: &Home) {
        if let Some(w) = self.append(home) {
            crate::output::err_line(&w);
        }
    }
}

/// A parsed event line (for `--trace` and audits): any JSON object, so
/// lines written by other versions read too.
pub fn parse_line(line: &[u8]) -> Option<Map<String, Value>> {
    match serde_json::from_slice::<Value>(line).ok()? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(e: Entry) -> String {
        e.to_line().trim_end().to_string()
    }

    /// The bytes on disk, as every tool wrote them before events were typed.
    #[test]
    fn lines_keep_their_exact_form() {
        let queued = Event::InboxQueued {
            seq: 3,
            bytes: Some(5),
            doorbell: Some("rang"),
            delivery: Some("fire-and-forget"),
            leg: None,
        };
        assert_eq!(
            line(Entry::new(5, Tool::Send, "t1", queued).by("bob")),
            r#"{"action":"inbox.queued","actor":"bob","bytes":5,"delivery":"fire-and-forget","doorbell":"rang","seq":3,"task":"t1","tool":"fm-send","ts":5}"#
        );
        let board = Event::InboxQueued {
            seq: 1,
            bytes: None,
            doorbell: None,
            delivery: None,
            leg: None,
        };
        assert_eq!(
            line(Entry::new(7, Tool::Board, "w1", board).by("fm-board")),
            r#"{"action":"inbox.queued","actor":"fm-board","seq":1,"task":"w1","tool":"fm-board","ts":7}"#
        );
        assert_eq!(
            line(Entry::new(1, Tool::Control, "t", Event::ControlStopped).by("")),
            r#"{"action":"control.stopped","actor":"captain","task":"t","tool":"fm-control","ts":1}"#
        );
        let progress = Event::BoardProgress {
            change: Transition {
                from: "in_progress",
                status: "in_progress",
            },
            percent: 40,
            step: String::new(),
        };
        assert_eq!(
            line(Entry::new(2, Tool::Board, "T-001", progress)),
            r#"{"action":"board.progress","actor":"captain","from":"in_progress","percent":40,"status":"in_progress","step":"","task":"T-001","tool":"fm-board","ts":2}"#
        );
        let breaker = Event::BoardDispatchFailed {
            dispatch: Dispatch {
                assignee: "w1".into(),
                seq: None,
                dispatches: 3,
                detail: "x".into(),
            },
        };
        assert_eq!(
            line(Entry::new(2, Tool::Board, "T-001", breaker)),
            r#"{"action":"board.failed","actor":"captain","assignee":"w1","detail":"x","dispatches":3,"seq":null,"task":"T-001","tool":"fm-board","ts":2}"#
        );
    }

    #[test]
    fn a_failed_append_warns_in_the_tools_name() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        std::fs::create_dir_all(home.events()).unwrap();
        let w = Entry::new(0, Tool::Ack, "t1", Event::InboxAcked { seq: 1 })
            .append(&home)
            .unwrap();
        assert!(
            w.starts_with("fm-ack: warning: event inbox.acked not recorded: "),
            "{w}"
        );
    }
}

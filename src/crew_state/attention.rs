//! Why a worker waits on the captain: the attention model every fleet view
//! shares (the table's WAITING column, `--json`'s `attention`, `fm top`'s
//! reasons and order, and the notifications).
//!
//! [`of`] is a pure function of the same [`Facts`] the resolver reads and
//! of its [`Resolution`], so a view never re-derives it. A row has at most
//! one attention: the most pressing one, in this order — the agent is dead
//! (nothing else can progress), it waits in a dialog (an answer typed now
//! would not reach it), an open decision or block from the status log, a
//! run parked for approval, a gate that refused a `done`, a message the
//! watcher escalated, a task that failed. [`Urgency`] sorts the fleet:
//! attention first, in [`Attention::rank`] order (the issue tracker's
//! wording: decision, blocked, dialog, escalated, dead agent, failed),
//! longest waiting first, then working, idle, paused, done and unknown.

use std::cmp::Ordering;

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::facts::{Facts, PaneFact, WorktreeFact};
use super::resolve::{Resolution, run_moved_past_decision};
use super::{Source, State};
use crate::clock;

/// What the captain is needed for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attention {
    /// `needs-decision` open under `key`.
    Decision {
        key: String,
        text: String,
        at: Option<u64>,
    },
    /// `blocked` open under `key`, or (`key` `None`) a ship `done` the
    /// gate refused.
    Blocked {
        key: Option<String>,
        text: String,
        at: Option<u64>,
    },
    /// A validation run parked at a gate, waiting for approval.
    Approval { text: String, at: Option<u64> },
    /// The harness waits in a dialog (`which` names it).
    Dialog { which: String },
    /// The watcher escalated a pending message after `rings` re-rings.
    Escalated {
        record: String,
        unread: usize,
        rings: u64,
        at: Option<u64>,
    },
    /// The pane is gone or its agent exited (`which` says which).
    DeadAgent { which: String, unread: usize },
    /// The worker gave up (its log, or its run).
    Failed { text: String, at: Option<u64> },
}

impl Attention {
    /// The kind as `--json` and the notifications name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Attention::Decision { .. } => "decision",
            Attention::Blocked { .. } => "blocked",
            Attention::Approval { .. } => "approval",
            Attention::Dialog { .. } => "dialog",
            Attention::Escalated { .. } => "escalated",
            Attention::DeadAgent { .. } => "dead-agent",
            Attention::Failed { .. } => "failed",
        }
    }

    /// Sort rank among rows that need the captain (lower first).
    pub fn rank(&self) -> u8 {
        match self {
            Attention::Decision { .. } => 0,
            Attention::Blocked { .. } => 1,
            Attention::Approval { .. } => 2,
            Attention::Dialog { .. } => 3,
            Attention::Escalated { .. } => 4,
            Attention::DeadAgent { .. } => 5,
            Attention::Failed { .. } => 6,
        }
    }

    /// Since when (Unix seconds), when known.
    pub fn since(&self) -> Option<u64> {
        match self {
            Attention::Decision { at, .. }
            | Attention::Blocked { at, .. }
            | Attention::Approval { at, .. }
            | Attention::Escalated { at, .. }
            | Attention::Failed { at, .. } => *at,
            Attention::Dialog { .. } | Attention::DeadAgent { .. } => None,
        }
    }

    /// The reason in words: `needs decision: schema — postgres or sqlite?`,
    /// `1 message unread after 3 rings`.
    pub fn reason(&self) -> String {
        let keyed = |what: &str, key: Option<&str>, text: &str| match key {
            Some(k) if k != "default" => format!("{what}: {k} \u{2014} {text}"),
            _ => format!("{what}: {text}"),
        };
        match self {
            Attention::Decision { key, text, .. } => keyed("needs decision", Some(key), text),
            Attention::Blocked { key, text, .. } => keyed("blocked", key.as_deref(), text),
            Attention::Approval { text, .. } => format!("awaiting approval: {text}"),
            Attention::Dialog { which } => format!("waiting in a dialog: {which}"),
            Attention::Escalated { unread, rings, .. } => format!(
                "{} unread after {rings} ring{}",
                messages(*unread),
                if *rings == 1 { "" } else { "s" }
            ),
            Attention::DeadAgent { which, unread } if *unread > 0 => {
                format!("dead agent: {which}, {} unread", messages(*unread))
            }
            Attention::DeadAgent { which, .. } => format!("dead agent: {which}"),
            Attention::Failed { text, .. } => format!("failed: {text}"),
        }
    }

    /// A short label for the table's WAITING column: `decision db`,
    /// `escalated 003.msg`, `dead agent`.
    pub fn label(&self) -> String {
        let mut s = String::new();
        self.push_label(&mut s);
        s
    }

    /// Appends [`Attention::label`] to `out`.
    pub(crate) fn push_label(&self, out: &mut String) {
        match self {
            Attention::Decision { key, .. } => {
                out.push_str("decision ");
                out.push_str(key);
            }
            Attention::Blocked { key: Some(k), .. } => {
                out.push_str("blocked ");
                out.push_str(k);
            }
            Attention::Blocked { key: None, .. } => out.push_str("blocked (gate)"),
            Attention::Approval { .. } => out.push_str("approval"),
            Attention::Dialog { which } => {
                out.push_str("dialog: ");
                out.push_str(which);
            }
            Attention::Escalated { unread, rings, .. } => {
                out.push_str(&format!("{} unread, {rings} rings", messages(*unread)));
            }
            Attention::DeadAgent { .. } => out.push_str("dead agent"),
            Attention::Failed { .. } => out.push_str("failed"),
        }
    }
}

fn messages(n: usize) -> String {
    if n == 1 {
        "1 message".into()
    } else {
        format!("{n} messages")
    }
}

/// `--json`: `{kind, reason, since, …the kind's own fields}`; `since` is
/// an RFC 3339 UTC stamp or null.
impl Serialize for Attention {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("kind", self.kind())?;
        m.serialize_entry("reason", &self.reason())?;
        m.serialize_entry("since", &self.since().map(clock::rfc3339))?;
        match self {
            Attention::Decision { key, text, .. } => {
                m.serialize_entry("key", key)?;
                m.serialize_entry("text", text)?;
            }
            Attention::Blocked { key, text, .. } => {
                m.serialize_entry("key", key)?;
                m.serialize_entry("text", text)?;
            }
            Attention::Approval { text, .. } | Attention::Failed { text, .. } => {
                m.serialize_entry("text", text)?;
            }
            Attention::Dialog { which } => m.serialize_entry("which", which)?,
            Attention::Escalated {
                record,
                unread,
                rings,
                ..
            } => {
                m.serialize_entry("record", record)?;
                m.serialize_entry("unread", unread)?;
                m.serialize_entry("rings", rings)?;
            }
            Attention::DeadAgent { which, unread } => {
                m.serialize_entry("which", which)?;
                m.serialize_entry("unread", unread)?;
            }
        }
        m.end()
    }
}

/// What the captain is needed for, from the facts and their resolution.
pub fn of(f: &Facts, res: &Resolution) -> Option<Attention> {
    // Nothing to ask of a task nobody can read, or one torn down.
    if f.error.is_some() || f.meta.is_none() || f.worktree == WorktreeFact::Missing {
        return None;
    }
    let current_at = f
        .fold
        .current_ref()
        .and_then(|c| c.at.or(f.log_mtime))
        .or(f.log_mtime);
    if res.state == State::Exited {
        let which = match &f.pane {
            PaneFact::Gone => "pane gone".to_string(),
            PaneFact::Lost(words) => words.clone(),
            _ => "agent exited".to_string(),
        };
        return Some(Attention::DeadAgent {
            which,
            unread: f.inbox_pending,
        });
    }
    if let Some(which) = &f.dialog {
        return Some(Attention::Dialog {
            which: which.clone(),
        });
    }
    let decision_stands = !(res.source == Source::Run && run_moved_past_decision(f));
    if decision_stands && let Some(d) = f.fold.open.last() {
        let at = d.at.or(f.log_mtime);
        return Some(if d.verb == "blocked" {
            Attention::Blocked {
                key: Some(d.key.clone()),
                text: d.text.clone(),
                at,
            }
        } else {
            Attention::Decision {
                key: d.key.clone(),
                text: d.text.clone(),
                at,
            }
        });
    }
    let run_at = f.run.as_ref().and_then(|r| r.mtime);
    match (res.state, res.source) {
        (State::Parked, Source::Run) => {
            return Some(Attention::Approval {
                text: res.detail.clone(),
                at: run_at,
            });
        }
        (State::Blocked, _) => {
            return Some(Attention::Blocked {
                key: None,
                text: res.detail.clone(),
                at: current_at,
            });
        }
        _ => {}
    }
    if let Some(e) = &f.escalated {
        return Some(Attention::Escalated {
            record: e.record.clone(),
            unread: f.inbox_pending,
            rings: e.rings,
            at: e.at,
        });
    }
    if res.state == State::Failed {
        let at = if res.source == Source::Run {
            run_at
        } else {
            current_at
        };
        return Some(Attention::Failed {
            text: res.detail.clone(),
            at,
        });
    }
    None
}

/// The fleet order of `fm top`: a sort key over (attention, state, time, id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Urgency {
    rank: u8,
    /// Older first: when the wait began (the attention's own time, else
    /// the current line's); `None` for rows that need nobody.
    since: Option<u64>,
    id: String,
}

impl Urgency {
    pub fn new(attention: Option<&Attention>, state: State, since: Option<u64>, id: &str) -> Self {
        let rank = match attention {
            Some(a) => a.rank(),
            None => 10 + state_rank(state),
        };
        // Rows that need nobody keep a stable order: by id.
        let since = attention.and_then(|a| a.since().or(since));
        Urgency {
            rank,
            since,
            id: id.to_string(),
        }
    }

    /// Whether the row needs the captain.
    pub fn needs_captain(&self) -> bool {
        self.rank < 10
    }
}

fn state_rank(s: State) -> u8 {
    match s {
        State::Working => 0,
        State::Idle => 1,
        State::Paused => 2,
        State::Parked | State::Blocked | State::Failed | State::Exited => 3,
        State::Done => 4,
        State::Unknown => 5,
    }
}

impl Ord for Urgency {
    fn cmp(&self, o: &Self) -> Ordering {
        // Within a rank, the longest wait first; an unknown time last.
        let since = match (self.since, o.since) {
            (Some(a), Some(b)) => a.cmp(&b),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        self.rank
            .cmp(&o.rank)
            .then(since)
            .then_with(|| self.id.cmp(&o.id))
    }
}

impl PartialOrd for Urgency {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

#[cfg(test)]
#[path = "attention_tests.rs"]
mod tests;

//! Every input the resolution decides on, as plain data (docs/spec/crew-state.md#resolution,
//! #busy-record, docs/spec/meta.md): what
//! [`super::gather`] reads from a task's files, tmux and git, and what
//! [`super::resolve`] decides from. Nothing here does I/O.

use std::sync::Arc;

use crate::harness::HarnessProfile;
use crate::meta::{KeyValues, Kind, TaskMeta};
use crate::status::Fold;
use crate::status::busy::BusyRecord;
use crate::task_id::TaskId;

/// `state/<id>.run`: a validation pipeline's run record (key=value).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunRecord {
    pub status: String,
    pub branch: String,
    pub(crate) head: String,
    pub gate: String,
    pub(crate) findings: u64,
    pub pr: String,
    /// When the record was last written (its mtime, Unix seconds).
    pub mtime: Option<u64>,
}

impl RunRecord {
    /// Parses the record; unknown keys are ignored, the last occurrence wins.
    /// `branch` may be written as `<name>` or `refs/heads/<name>`; it is
    /// kept as the name.
    pub fn parse(bytes: &[u8], mtime: Option<u64>) -> RunRecord {
        let m = KeyValues::parse(bytes);
        let branch = m.str("branch").trim();
        RunRecord {
            status: m.str("status").trim().to_lowercase(),
            branch: branch
                .strip_prefix("refs/heads/")
                .unwrap_or(branch)
                .to_string(),
            head: m.str("head").trim().to_lowercase(),
            gate: m.str("gate").trim().to_string(),
            findings: m.str("findings").trim().parse().unwrap_or(0),
            pr: m.str("pr").trim().to_string(),
            mtime,
        }
    }
}

/// The worktree as git sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GitFacts {
    /// Current branch; `None` when HEAD is detached.
    pub branch: Option<String>,
    pub(crate) head: String,
}

/// The task's worktree as rule 1 sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WorktreeFact {
    /// Not looked at: meta names no `worktree` (the task was never
    /// spawned — a sub-brief's meta holds only `parent=`), or the kind is
    /// neither ship nor scout.
    Unchecked,
    /// Meta names a worktree that is not a directory.
    Missing,
    Present,
}

/// What tmux says about the recorded pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaneFact {
    /// Meta has no `pane` key: rules 3–4 are skipped.
    Unset,
    /// tmux could not be asked (not installed, failing): rules 3–4 skipped.
    Unknown,
    /// No such pane on the task's server.
    Gone,
    /// A pane that does not prove it is the task's ([`crate::tmux::owner`]):
    /// gone for the task, with why (`pane gone · the tmux server restarted`).
    Lost(String),
    Present {
        dead: bool,
        command: String,
    },
}

/// Every input of the resolver for one task.
#[derive(Debug, Clone)]
pub struct Facts {
    pub id: TaskId,
    pub(crate) now: u64,
    /// A state file that could not be read (a symlink, a permission error).
    pub(crate) error: Option<String>,
    pub(crate) meta: Option<TaskMeta>,
    /// The brief's frontmatter `kind`, read only when meta has none.
    pub(crate) brief_kind: Option<Kind>,
    pub(crate) worktree: WorktreeFact,
    pub(crate) git: Option<GitFacts>,
    pub run: Option<RunRecord>,
    /// HEAD is an ancestor of the run's head (asked only when they differ).
    pub(crate) run_contains_head: bool,
    pub pane: PaneFact,
    /// Shared: a profile's compiled regexes keep their search caches
    /// from task to task (a clone would start each one cold).
    pub(crate) profile: Option<Arc<HarnessProfile>>,
    pub busy: Option<BusyRecord>,
    /// When the turn the agent's own session log reports running began
    /// (`crate::agent_report`); looked up on every read, never kept.
    pub(crate) agent_turn: Option<u64>,
    /// The Claude Code config dir spawn noted (`crate::agent_report`),
    /// where its per-process session file is.
    pub(crate) agent_config: Option<std::path::PathBuf>,
    /// What that session file says, read for a live pane on every read,
    /// never kept ([`super::agent_session`]).
    pub(crate) agent_session: Option<super::agent_session::Session>,
    pub(crate) fold: Fold,
    /// Time of the log's last status line: its `at=`, else the log's mtime.
    pub(crate) last_line_at: Option<u64>,
    pub(crate) log_mtime: Option<u64>,
    /// The pane's visible screen, once captured.
    pub(crate) screen: Option<String>,
    /// The gate's verdict on the current `done` line, once asked.
    pub gate: Option<Gate>,
    pub(crate) inbox_pending: usize,
    /// The watcher escalated a message that is still pending.
    pub(crate) escalated: Option<Escalation>,
    /// The harness is waiting in a dialog (a permission prompt, a trust
    /// question …), named as the screen check reported it. Nothing fills it
    /// yet; the attention model already reads it.
    pub(crate) dialog: Option<String>,
    /// What the usage counter last counted (`<id>.usage`, [`crate::usage`]).
    pub(crate) usage: Option<crate::usage::Tokens>,
}

/// `.escalated` naming a pending record (docs/spec/watch.md#ladder step 7), with the rings
/// `.ring-state` counted for that record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Escalation {
    /// The record name, such as `003.msg`.
    pub record: String,
    pub rings: u64,
    /// When the marker was written (its mtime).
    pub at: Option<u64>,
}

impl Facts {
    /// Facts of a task nobody knows anything about yet.
    pub(crate) fn empty(id: TaskId, now: u64) -> Facts {
        Facts {
            id,
            now,
            error: None,
            meta: None,
            brief_kind: None,
            worktree: WorktreeFact::Unchecked,
            git: None,
            run: None,
            run_contains_head: false,
            pane: PaneFact::Unset,
            profile: None,
            busy: None,
            agent_turn: None,
            agent_config: None,
            agent_session: None,
            fold: Fold::default(),
            last_line_at: None,
            log_mtime: None,
            screen: None,
            gate: None,
            inbox_pending: 0,
            escalated: None,
            dialog: None,
            usage: None,
        }
    }

    /// The task's kind: meta `kind`, else the brief's frontmatter `kind`,
    /// else ship — as the gate reads it ([`crate::dod::gate::kind_of`]).
    pub fn kind(&self) -> Kind {
        match self.meta.as_ref().and_then(|m| m.kind.clone()) {
            Some(k) => k,
            None => self.brief_kind.clone().unwrap_or(Kind::Ship),
        }
    }
}

/// The gate's verdict (docs/spec/dod.md#gate) on a ship `done` line: an input of the resolver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    Accepted,
    Refused(String),
    NotGated,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_record_parses_loosely() {
        let r = RunRecord::parse(
            b"status=AWAITING_APPROVAL\nbranch=fm/x\nhead=ABC123\ngate=review\nfindings=2\njunk\n",
            Some(5),
        );
        assert_eq!(r.status, "awaiting_approval");
        assert_eq!(r.head, "abc123");
        assert_eq!((r.findings, r.gate.as_str()), (2, "review"));
        assert_eq!(RunRecord::parse(b"findings=x\n", None).findings, 0);
        for b in ["fm/x", "refs/heads/fm/x", " refs/heads/fm/x "] {
            let r = RunRecord::parse(format!("branch={b}\n").as_bytes(), None);
            assert_eq!(r.branch, "fm/x", "{b}");
        }
    }
}

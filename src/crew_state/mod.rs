//! Crew state (SPEC §9): the truth about every worker, for one task or the
//! whole fleet.
//!
//! The work is split so the decision is testable without tmux or git:
//! [`facts`] holds every input as plain data; `read` reads a task's own
//! files, each once; `gather` adds what tmux and git say (one tmux call
//! per socket for the whole fleet, never one per task, never a shell; git
//! from its files, and as a process per repository, not per task, for the
//! done check in `done_check`); [`resolve`] applies the rules of §9.2 as
//! a pure function of those facts; [`FleetReader`] (in `fleet`) drives a
//! view over every core, streams its rows in id order, and — held across
//! frames by the live view or a dashboard — re-reads only what changed;
//! `render` prints the one-line and table forms from the same [`Row`]
//! that `--json` serialises. [`trace`] reads a delegation chain's audit
//! trail (§11.2) and `live` drives the `--watch` view.
//!
//! Crew state only reads: it never writes a file under the home.

mod done_check;
pub mod facts;
mod fleet;
pub(crate) mod gather;
pub(crate) mod live;
mod read;
#[cfg(test)]
mod reference;
pub(crate) mod render;
pub(crate) mod resolve;
pub mod trace;

use serde::Serialize;

use crate::status::Decision;

pub use facts::Facts;
pub use fleet::{FleetReader, KEEP_MAX, Stats};
pub use resolve::{Resolution, resolve};

/// What a worker is doing (SPEC §9.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    Working,
    Idle,
    Parked,
    Blocked,
    Paused,
    Done,
    Failed,
    Exited,
    Unknown,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Working => "working",
            State::Idle => "idle",
            State::Parked => "parked",
            State::Blocked => "blocked",
            State::Paused => "paused",
            State::Done => "done",
            State::Failed => "failed",
            State::Exited => "exited",
            State::Unknown => "unknown",
        }
    }
}

/// Where the answer came from (SPEC §9.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    Run,
    Pane,
    StatusLog,
    None,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Run => "run",
            Source::Pane => "pane",
            Source::StatusLog => "status-log",
            Source::None => "none",
        }
    }
}

/// One task's crew state as printed and as `--json` (schema in
/// `docs/crew-state-schema.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    pub id: String,
    pub(crate) state: State,
    pub source: Source,
    pub(crate) detail: String,
    /// Seconds since the current status line (its `at=`, else the log's mtime).
    pub(crate) age_secs: Option<u64>,
    pub(crate) inbox_pending: usize,
    pub(crate) open_decisions: Vec<Decision>,
}

impl Row {
    /// The row for gathered facts.
    pub(crate) fn from_facts(f: &Facts) -> Row {
        Row::with(f, resolve(f))
    }

    /// The row for gathered facts and their resolution.
    pub(crate) fn with(f: &Facts, r: Resolution) -> Row {
        let current = f.fold.current();
        let age_secs = current
            .as_ref()
            .and_then(|c| c.at.or(f.log_mtime))
            .map(|t| f.now.saturating_sub(t));
        Row {
            id: f.id.to_string(),
            state: r.state,
            source: r.source,
            detail: r.detail,
            age_secs,
            inbox_pending: f.inbox_pending,
            open_decisions: f.fold.open.clone(),
        }
    }
}

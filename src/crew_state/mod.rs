//! Crew state (docs/spec/crew-state.md): the truth about every worker, for one task or the
//! whole fleet.
//!
//! The work is split so the decision is testable without tmux or git:
//! [`facts`] holds every input as plain data; `read` reads a task's own
//! files, each once; `gather` adds what tmux and git say (one tmux call
//! per socket for the whole fleet, never one per task, never a shell; git
//! from its files, and as a process per repository, not per task, for the
//! done check in `done_check`); [`resolve`] applies the rules of docs/spec/crew-state.md#resolution
//! as
//! a pure function of those facts; [`FleetReader`] (in `fleet`) drives a
//! view over every core, streams its rows in id order, and — held across
//! frames by the live view or a dashboard — re-reads only what changed;
//! `render` prints the one-line and table forms from the same [`Row`]
//! that `--json` serialises. [`trace`] reads a delegation chain's audit
//! trail (docs/spec/chains.md) and `live` drives the `--watch` view.
//!
//! Crew state only reads: it never writes a file under the home.

pub(crate) mod agent_session;
pub mod attention;
mod done_check;
pub mod facts;
mod fleet;
#[cfg(test)]
mod fleet_tests;
pub(crate) mod gather;
pub(crate) mod live;
mod notices;
mod read;
pub(crate) mod render;
pub(crate) mod resolve;
pub mod trace;

use serde::Serialize;

use crate::clock;
use crate::config::Config;

use crate::meta::TaskMeta;
use crate::status::Decision;

pub use attention::{Attention, Urgency};
pub use facts::Facts;
pub use fleet::{FleetReader, KEEP_MAX, Stats};
pub use resolve::{Resolution, resolve};

/// What a worker is doing (docs/spec/crew-state.md#output).
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

/// Where the answer came from (docs/spec/crew-state.md#output).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    Run,
    Pane,
    /// The agent's own session file ([`agent_session`]).
    AgentSession,
    StatusLog,
    None,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Run => "run",
            Source::Pane => "pane",
            Source::AgentSession => agent_session::SOURCE,
            Source::StatusLog => "status-log",
            Source::None => "none",
        }
    }
}

/// One task's crew state as printed and as `--json` (schema in
/// `docs/crew-state-schema.json`). Times a person reads are rendered as
/// ages (`3m ago`); `--json` carries Unix seconds and RFC 3339 stamps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    pub id: String,
    pub state: State,
    pub source: Source,
    pub detail: String,
    /// Seconds since the current status line (its `at=`, else the log's mtime).
    pub age_secs: Option<u64>,
    pub inbox_pending: usize,
    pub open_decisions: Vec<OpenDecision>,
    /// When the current line was written (what `age_secs` counts from).
    #[serde(serialize_with = "iso")]
    pub current_at: Option<u64>,
    /// Why the worker waits on the captain, if it does.
    pub attention: Option<Attention>,
    /// The project: meta `repo`, else the last component of `project`.
    pub project: Option<String>,
    /// The pane id meta records (`%N`).
    pub pane: Option<String>,
    /// The tmux socket (`-L` name) the pane lives on; "" is the default server.
    pub tmux_socket: String,
    /// The host of a remote task (`host=` in meta); absent for a local one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Tokens the agent spent, and the cost where its transcript gives
    /// one, as last counted ([`crate::usage`]); absent when never counted.
    #[serde(
        serialize_with = "crate::usage::row_json",
        skip_serializing_if = "Option::is_none"
    )]
    pub usage: Option<crate::usage::Tokens>,
}

/// An open decision as `--json` prints it: the fold's `{key, verb, text,
/// at}` and the same time as an RFC 3339 stamp (`opened_at`, written from
/// `at`: it is not kept twice, so the fold's decisions become a row's in
/// place).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenDecision {
    pub key: String,
    pub verb: crate::status::Word,
    pub text: String,
    pub at: Option<u64>,
}

impl Serialize for OpenDecision {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut d = s.serialize_struct("OpenDecision", 5)?;
        d.serialize_field("key", &self.key)?;
        d.serialize_field("verb", &self.verb)?;
        d.serialize_field("text", &self.text)?;
        d.serialize_field("at", &self.at)?;
        d.serialize_field("opened_at", &self.at.map(clock::rfc3339))?;
        d.end()
    }
}

impl From<Decision> for OpenDecision {
    fn from(d: Decision) -> Self {
        OpenDecision {
            key: d.key,
            verb: d.verb,
            text: d.text,
            at: d.at,
        }
    }
}

impl From<&Decision> for OpenDecision {
    fn from(d: &Decision) -> Self {
        OpenDecision::from(d.clone())
    }
}

// serde's `serialize_with` hands the field by reference.
#[allow(clippy::ref_option)]
fn iso<S: serde::Serializer>(t: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    t.map(clock::rfc3339).serialize(s)
}

impl Row {
    /// The row for gathered facts.
    pub fn from_facts(f: &Facts, cfg: &Config) -> Row {
        Row::with(f, resolve(f), cfg)
    }

    /// The row for gathered facts and their resolution.
    pub(crate) fn with(f: &Facts, r: Resolution, cfg: &Config) -> Row {
        let meta = f.meta.as_ref();
        Row {
            open_decisions: f.fold.open.iter().map(OpenDecision::from).collect(),
            project: meta.and_then(project_name),
            pane: meta.and_then(|m| m.pane.clone()),
            tmux_socket: meta
                .map_or(&cfg.tmux.socket[..], |m| m.socket(cfg))
                .to_string(),
            // A remote task's row is replaced by its host's answer
            // (`remote::fleet`); the name marks it for that.
            host: meta.and_then(TaskMeta::host_name).map(str::to_string),
            ..Row::head(f, r)
        }
    }

    /// [`Row::with`], moving what it can out of facts no longer needed.
    pub(crate) fn from_owned(f: Facts, r: Resolution, cfg: &Config) -> Row {
        let row = Row::head(&f, r);
        let open_decisions = f.fold.open.into_iter().map(OpenDecision::from).collect();
        let Some(mut m) = f.meta else {
            return Row {
                open_decisions,
                tmux_socket: cfg.tmux.socket.clone(),
                ..row
            };
        };
        Row {
            open_decisions,
            host: m.host_name().map(str::to_string),
            // The repo moved out, not copied; without one, as `with` names it.
            project: m.repo.take().or_else(|| project_name(&m)),
            pane: m.pane,
            tmux_socket: m.tmux_socket.unwrap_or_else(|| cfg.tmux.socket.clone()),
            ..row
        }
    }

    /// The row's own fields from the facts: everything but what
    /// [`Row::with`] copies out of meta and the fold.
    fn head(f: &Facts, r: Resolution) -> Row {
        let attention = attention::of(f, &r);
        let current_at = f.fold.current_ref().and_then(|c| c.at.or(f.log_mtime));
        Row {
            id: f.id.to_string(),
            state: r.state,
            source: r.source,
            detail: r.detail,
            age_secs: current_at.map(|t| f.now.saturating_sub(t)),
            inbox_pending: f.inbox_pending,
            open_decisions: Vec::new(),
            current_at,
            attention,
            project: None,
            pane: None,
            tmux_socket: String::new(),
            host: None,
            usage: f.usage,
        }
    }

    /// Where the row sorts in the attention-first order.
    pub fn urgency(&self) -> Urgency {
        Urgency::new(
            self.attention.as_ref(),
            self.state,
            self.current_at,
            &self.id,
        )
    }
}

fn project_name(m: &TaskMeta) -> Option<String> {
    m.repo.clone().or_else(|| {
        m.project
            .as_ref()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
    })
}

/// Sorts rows attention first ([`Row::urgency`]).
pub fn sort_by_urgency(rows: &mut [Row]) {
    rows.sort_by_cached_key(Row::urgency);
}

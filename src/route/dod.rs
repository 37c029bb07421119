//! The done check (`fm-dod --check`, docs/spec/dod.md#gate) wherever the task lives:
//! the gate judges a `done` line on the host that holds the worktree and
//! the clone.

use serde::{Deserialize, Serialize};

use super::wire::{self, Envelope, FarRequest};
use super::{Place, Task};
use crate::config::Config;
use crate::dod::{self, Verdict};
use crate::error::{Error, Result};
use crate::fsx;
use crate::home::Home;
use crate::meta::TaskMeta;
use crate::status::{self, Parsed, StatusLine, Verb};

/// Time the far gate may take beyond the host's bound: up to three git
/// calls of 10 s each there (docs/spec/dod.md#gate).
const DOD_EXTRA: std::time::Duration = std::time::Duration::from_secs(30);

/// What a check asks for: the line to judge; none: the log's latest
/// `done` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRequest {
    #[serde(default)]
    pub line: Option<String>,
}

/// The gate's verdict on a task's `done` line, and the line judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckReport {
    pub task: String,
    #[serde(flatten)]
    pub verdict: Verdict,
    pub line: Option<String>,
}

/// `accepted: <reason>`.
impl std::fmt::Display for CheckReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.verdict.word(), self.verdict.reason())
    }
}

impl CheckReport {
    /// 1 for a refusal, 0 otherwise.
    pub fn exit_code(&self) -> u8 {
        self.verdict.exit_code()
    }
}

/// Judges `task`'s done line, here or on its host (one attempt: the
/// gate asks git, which may take its time).
pub fn check(home: &Home, cfg: &Config, task: &Task, req: &CheckRequest) -> Result<CheckReport> {
    match task.place() {
        Place::Host(host) => wire::call_once(
            home,
            host,
            &Envelope::new(
                crate::remote::call::new_key(task.id()),
                task.id().to_string(),
                req.clone(),
            ),
            DOD_EXTRA,
        ),
        Place::Here => check_here(home, cfg, task, req),
    }
}

/// The local check; a task that lives on a host is refused.
pub(crate) fn check_here(
    home: &Home,
    cfg: &Config,
    task: &Task,
    req: &CheckRequest,
) -> Result<CheckReport> {
    task.here()?;
    let id = task.id();
    let paused = &cfg.brief.paused_verb;
    let line = match &req.line {
        Some(raw) => match status::parse_line(raw.as_bytes(), paused) {
            Parsed::Line(l) if l.kind == Verb::Done => Some(l),
            _ => {
                return Err(Error::usage(format!(
                    "--line {} is not a done status line",
                    crate::error::quoted(raw)
                )));
            }
        },
        None => latest_done(
            &fsx::read_optional(&home.status(id))?.unwrap_or_default(),
            paused,
        ),
    };
    let verdict = match &line {
        Some(l) => {
            let meta = TaskMeta::load(home, id)?.unwrap_or_default();
            dod::gate(home, cfg, id, &meta, l)
        }
        None => Verdict::Refused(format!("no done line in {}", home.status(id).display())),
    };
    Ok(CheckReport {
        task: id.to_string(),
        verdict,
        line: line.map(|l| l.text),
    })
}

/// The newest `done` line of a log.
pub(crate) fn latest_done(bytes: &[u8], paused: &str) -> Option<StatusLine> {
    fsx::complete_lines(bytes)
        .split(|&b| b == b'\n')
        .rev()
        .find_map(|raw| match status::parse_line(raw, paused) {
            Parsed::Line(l) if l.kind == Verb::Done => Some(l),
            _ => None,
        })
}

impl FarRequest for CheckRequest {
    const OP: &'static str = "check";
}

//! Appending to a task's status log (docs/spec/status.md#fm-status) wherever it lives: the
//! typed request and report, here or through the far entry.

use serde::{Deserialize, Serialize};

use super::keys::{self, Keys};
use super::wire::{self, Envelope, FarRequest};
use super::{Place, Task};
use crate::clock;
use crate::config::Config;
use crate::error::Result;
use crate::events::Tool;
use crate::home::Home;
use crate::status;

/// What an append asks for. The line is validated where it is written,
/// with that home's paused verb.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppendRequest {
    pub verb: String,
    #[serde(default)]
    pub key: Option<String>,
    pub text: String,
    /// Who appends (recorded in the event).
    pub actor: String,
}

/// What an append did: the line is written; what to warn about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Appended {
    pub task: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Appends `req` to `task`'s status log under idempotency key `key`, here
/// or on its host.
pub fn append(
    home: &Home,
    cfg: &Config,
    task: &Task,
    req: &AppendRequest,
    key: Option<&str>,
) -> Result<Appended> {
    if let Some(k) = key {
        keys::validate(k)?;
    }
    match task.place() {
        Place::Host(host) => wire::call(
            home,
            host,
            &Envelope::new(
                key.map_or_else(|| crate::remote::call::new_key(task.id()), str::to_string),
                task.id().to_string(),
                req.clone(),
            ),
            &[],
        ),
        Place::Here => append_here(home, cfg, task, req, key),
    }
}

/// The local append: the line validated, then written under the key (a
/// key served before writes nothing). A task that lives on a host is
/// refused.
pub(crate) fn append_here(
    home: &Home,
    cfg: &Config,
    task: &Task,
    req: &AppendRequest,
    key: Option<&str>,
) -> Result<Appended> {
    task.here()?;
    let id = task.id();
    let now = clock::now();
    let line = status::Append::new(
        &req.verb,
        now,
        req.key.as_deref(),
        &req.text,
        &cfg.brief.paused_verb,
    )
    .map_err(|e| crate::error::naming(e, id.as_str()))?;
    let parts: [&[u8]; 4] = [
        req.verb.as_bytes(),
        req.key.as_deref().unwrap_or("").as_bytes(),
        req.text.as_bytes(),
        req.actor.as_bytes(),
    ];
    let kept = keys::keyed(home, Keys::Task(id), key, "status", &parts, |_| {
        line.write(home, id, Tool::Status, &req.actor, now)?;
        Ok(Appended {
            task: id.to_string(),
            warnings: Vec::new(),
        })
    })?;
    let mut report = kept.report;
    // The line is written: a key that cannot be kept is a warning, never
    // a failure after the fact.
    if let Some(e) = kept.not_kept {
        report.warnings.push(keys::not_kept("status recorded", &e));
    }
    Ok(report)
}

impl FarRequest for AppendRequest {
    const OP: &'static str = "append";
}

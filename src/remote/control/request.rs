//! The lifecycle's typed request and report, as the far entry carries
//! them ([`crate::route::lifecycle`] is the use case that sends them).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::control::Action;
use crate::error::Result;

/// What a lifecycle call on the task's own host asks for: the action, and
/// for a spawn of a task the host has not got yet, the brief it brings
/// (the far entry's body) and the captain's paths it names (worktree,
/// status log, inbox, report), rewritten there to that home's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LifecycleRequest {
    #[serde(flatten)]
    pub(crate) action: Action,
    #[serde(default)]
    pub brings_brief: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub brief_paths: Vec<PathBuf>,
}

/// What a lifecycle action did: its line (`spawned t1 pane=%3 …`), and
/// what to warn about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LifecycleReport {
    pub id: String,
    pub result: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl LifecycleReport {
    /// The line, or with `json` the object `{"id", "result"}`, each
    /// ending with a newline.
    pub fn text(&self, json: bool) -> Result<String> {
        #[derive(Serialize)]
        struct Shown<'a> {
            id: &'a str,
            result: &'a str,
        }
        if !json {
            return Ok(format!("{}\n", self.result));
        }
        let line = crate::output::json_line(&Shown {
            id: &self.id,
            result: &self.result,
        })?;
        Ok(format!("{line}\n"))
    }
}

impl crate::route::wire::FarRequest for LifecycleRequest {
    const OP: &'static str = "lifecycle";
}

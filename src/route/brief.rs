//! A change of a task's brief (write or re-apply, revoke) wherever the
//! task lives: the typed request of the far side, the typed report both
//! sides render, and the use cases `fm-brief` calls. On a host, the brief
//! rendered on the captain's side travels to the far entry
//! ([`super::far`]) as a [`BriefChange`] with the brief as its body; the
//! captain's copy is changed only once the far side took the change
//! (docs/remote.md, "A brief re-applied or revoked on another host").

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::keys::{self, Keys};
use super::wire::{self, Envelope, FarRequest};
use super::{Place, Task};
use crate::brief::{BriefPaths, BriefSpec, apply};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::home::Home;

/// What a brief change on the task's own host asks for. An install's
/// brief travels as the far entry's body, byte-exact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BriefChange {
    #[serde(flatten)]
    pub what: Change,
    /// Who changes it (recorded in the event).
    #[serde(default)]
    pub from: String,
    /// The brief to install (the body; none for a revoke).
    #[serde(skip)]
    pub text: String,
}

/// Install the brief of the body, or revoke the task's brief.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "kebab-case")]
pub enum Change {
    /// The brief written on the captain's side for the paths `paths`
    /// (worktree, status log, inbox, report, in the captain's home),
    /// rewritten to this home's; `force` replaces an existing brief.
    Install {
        #[serde(default)]
        force: bool,
        #[serde(default)]
        paths: Vec<PathBuf>,
    },
    Revoke,
}

/// What a brief change did, as `--json` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shown {
    /// `written`, `scaffolded` or `revoked`.
    pub action: String,
    pub path: PathBuf,
    /// `ship`, `scout`, `secondmate`, or `revoked`.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Placeholders the brief still holds (a scaffold).
    #[serde(default)]
    pub placeholders: Vec<String>,
    /// Where the replaced brief went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<PathBuf>,
    /// What the live worker was told, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

/// What a brief change did, and what to warn about (problems that did
/// not stop it, a key not kept), one line each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BriefReport {
    #[serde(flatten)]
    pub shown: Shown,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl From<apply::Report> for BriefReport {
    fn from(r: apply::Report) -> BriefReport {
        BriefReport {
            shown: Shown {
                action: r.action.to_string(),
                path: r.path,
                kind: r.kind.to_string(),
                mode: r.mode.map(|m| m.as_str().to_string()),
                placeholders: r.placeholders.iter().map(|p| (*p).to_string()).collect(),
                history: r.history,
                notice: r.notice,
            },
            warnings: r.warnings,
        }
    }
}

impl BriefReport {
    /// The report's lines: `<action>: <path> (<kind>, mode=<m>; replace
    /// <placeholders>)`, then the history and the notice, each line made
    /// safe for a terminal and ending with a newline; or, with `json`,
    /// the report as one JSON line.
    pub fn text(&self, json: bool) -> Result<String> {
        let r = &self.shown;
        if json {
            return Ok(format!("{}\n", crate::output::json_line(r)?));
        }
        let mut detail = String::new();
        if r.action != "revoked" {
            detail = format!(" ({}", r.kind);
            if let Some(m) = &r.mode {
                detail.push_str(&format!(", mode={m}"));
            }
            if !r.placeholders.is_empty() {
                detail.push_str(&format!("; replace {}", r.placeholders.join(" and ")));
            }
            detail.push(')');
        }
        let mut lines = vec![format!("{}: {}{detail}", r.action, r.path.display())];
        if let Some(h) = &r.history {
            lines.push(format!("history: {}", h.display()));
        }
        if let Some(n) = &r.notice {
            lines.push(format!("notice: {n}"));
        }
        let mut text = String::new();
        for l in &lines {
            text.push_str(&crate::output::sanitize(l));
            text.push('\n');
        }
        Ok(text)
    }
}

/// Writes (or, with `force`, re-applies) the brief `spec` renders for
/// `task` under idempotency key `key`. Here: written, its event recorded
/// by `from`. On a host: checked here first (a refusal, such as an
/// existing brief without `force`, sends nothing), installed there, and
/// the captain's copy written once the far side took it.
pub(crate) fn write(
    home: &Home,
    cfg: &Config,
    task: &Task,
    spec: &BriefSpec,
    force: bool,
    from: &str,
    key: Option<&str>,
) -> Result<BriefReport> {
    if let Some(k) = key {
        keys::validate(k)?;
    }
    let id = task.id();
    match task.place() {
        Place::Host(_) => {
            let text = apply::render_checked(home, spec, force)?;
            let meta = task.meta().cloned().unwrap_or_default();
            let paths = BriefPaths::of(home, cfg, id, &meta).to_vec();
            let req = BriefChange {
                what: Change::Install { force, paths },
                from: from.to_string(),
                text,
            };
            let report = far_change(home, task, &req, key)?;
            apply::write_here(home, cfg, spec, &req.text, force)?;
            Ok(report)
        }
        Place::Here => {
            // The request is the spec but for its timestamp: the same
            // command run again a second later is the same request.
            let asked = format!(
                "{:?}",
                BriefSpec {
                    timestamp: String::new(),
                    ..spec.clone()
                }
            );
            keyed(home, task, key, &[b"write", asked.as_bytes()], || {
                apply::write(home, cfg, spec, force, from)
            })
        }
    }
}

/// Revokes `task`'s brief (history kept) under idempotency key `key`:
/// here, or there and then the captain's copy.
pub fn revoke(
    home: &Home,
    cfg: &Config,
    task: &Task,
    from: &str,
    key: Option<&str>,
) -> Result<BriefReport> {
    if let Some(k) = key {
        keys::validate(k)?;
    }
    let req = BriefChange {
        what: Change::Revoke,
        from: from.to_string(),
        text: String::new(),
    };
    match task.place() {
        Place::Host(_) => {
            let report = far_change(home, task, &req, key)?;
            apply::revoke_here(home, task.id())?;
            Ok(report)
        }
        Place::Here => change_here(home, cfg, task, &req, key),
    }
}

fn far_change(
    home: &Home,
    task: &Task,
    req: &BriefChange,
    key: Option<&str>,
) -> Result<BriefReport> {
    let Place::Host(host) = task.place() else {
        return Err(Error::usage("a far brief change of a task here"));
    };
    wire::call(
        home,
        host,
        &Envelope::new(
            key.map_or_else(|| crate::remote::call::new_key(task.id()), str::to_string),
            task.id().to_string(),
            req.clone(),
        ),
        req.text.as_bytes(),
    )
}

/// The far side's change (and a local revoke): an install takes the brief
/// of the body, rewritten from the captain's paths to this home's (the old
/// one goes to history, meta follows it, a live worker is told); a revoke
/// revokes. A key served before gives its report and changes nothing. A
/// task that lives on a host is refused.
pub(crate) fn change_here(
    home: &Home,
    cfg: &Config,
    task: &Task,
    req: &BriefChange,
    key: Option<&str>,
) -> Result<BriefReport> {
    task.here()?;
    let id = task.id();
    let flags = format!("from={:?}", req.from);
    match &req.what {
        Change::Revoke => keyed(home, task, key, &[b"revoke", flags.as_bytes()], || {
            apply::revoke(home, cfg, id, &req.from)
        }),
        Change::Install { force, paths } => {
            let text = if paths.is_empty() {
                req.text.clone()
            } else {
                let bytes = super::lifecycle::rehome_brief(
                    home,
                    cfg,
                    id,
                    req.text.clone().into_bytes(),
                    paths,
                )?;
                String::from_utf8(bytes)
                    .map_err(|_| Error::usage("the brief on stdin is not UTF-8"))?
            };
            let asked = without_timestamp(&text);
            let flags = format!("force={force} {flags}");
            let parts: [&[u8]; 3] = [b"install", asked.as_bytes(), flags.as_bytes()];
            keyed(home, task, key, &parts, || {
                apply::install(home, cfg, id, &text, *force, &req.from)
            })
        }
    }
}

/// Runs a brief change under `key`: a key served before gives its kept
/// report and changes nothing; a key that cannot be kept is a warning.
fn keyed(
    home: &Home,
    task: &Task,
    key: Option<&str>,
    parts: &[&[u8]],
    change: impl FnOnce() -> Result<apply::Report>,
) -> Result<BriefReport> {
    let id = task.id();
    let kept = keys::keyed(home, Keys::Task(id), key, "brief", parts, |_| {
        change().map(BriefReport::from)
    })?;
    let mut report = kept.report;
    if let Some(e) = kept.not_kept {
        let why = keys::not_kept("brief changed", &e);
        report.warnings.push(format!("{id}: {why}"));
    }
    Ok(report)
}

/// A brief's text with its frontmatter `timestamp:` value left out: the
/// captain renders the brief anew (a new timestamp) each time the same
/// command runs, and the same brief is the same request.
pub(crate) fn without_timestamp(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fences = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "---" {
            fences += 1;
        }
        if fences == 1 && line.starts_with("timestamp:") {
            out.push_str("timestamp:\n");
        } else {
            out.push_str(line);
        }
    }
    out
}

impl FarRequest for BriefChange {
    const OP: &'static str = "brief";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_briefs_request_leaves_out_only_its_frontmatter_timestamp() {
        let a = "---\nid: t1\ntimestamp: 2026-01-01T00:00:00Z\n---\n# Task\ntimestamp: kept\n";
        let b = "---\nid: t1\ntimestamp: 2026-01-01T00:00:09Z\n---\n# Task\ntimestamp: kept\n";
        assert_eq!(without_timestamp(a), without_timestamp(b));
        assert_eq!(
            without_timestamp(a),
            "---\nid: t1\ntimestamp:\n---\n# Task\ntimestamp: kept\n"
        );
        assert_ne!(
            without_timestamp(a),
            without_timestamp(&a.replace("# Task", "# Other"))
        );
    }

    #[test]
    fn a_brief_change_travels_as_data_and_its_report_round_trips() {
        let req = BriefChange {
            what: Change::Install {
                force: true,
                paths: vec![PathBuf::from("/w")],
            },
            from: "captain".into(),
            text: "the body".into(),
        };
        let line = serde_json::to_string(&req).unwrap();
        assert_eq!(
            line,
            r#"{"change":"install","force":true,"paths":["/w"],"from":"captain"}"#
        );
        let back: BriefChange = serde_json::from_str(&line).unwrap();
        assert_eq!(back.what, req.what);
        let r = BriefReport {
            shown: Shown {
                action: "written".into(),
                path: "/h/data/t1/brief.md".into(),
                kind: "ship".into(),
                mode: Some("local-only".into()),
                placeholders: vec![],
                history: Some("/h/data/t1/brief.history/001.md".into()),
                notice: None,
            },
            warnings: vec!["w".into()],
        };
        let back: BriefReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        assert_eq!(
            r.text(false).unwrap(),
            "written: /h/data/t1/brief.md (ship, mode=local-only)\nhistory: /h/data/t1/brief.history/001.md\n"
        );
        // The JSON form carries no warnings: they go to stderr.
        assert!(!r.text(true).unwrap().contains("warnings"));
    }
}

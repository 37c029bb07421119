//! Structured responses (docs/spec/chains.md): `data/<id>/response.md`, a worker's
//! answer up a delegation chain — frontmatter `id`, `status` (success |
//! failure | partial | rejected) and `timestamp` (RFC 3339), then a free body.
//!
//! [`problems`] validates text written by hand as a pure function;
//! [`write`] refuses bad input before touching the disk, then replaces the
//! file atomically.

use std::path::PathBuf;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::home::Home;
use crate::task_id::TaskId;
use crate::{clock, frontmatter, fsx};

pub const STATUSES: [&str; 4] = ["success", "failure", "partial", "rejected"];

/// A valid response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Response {
    pub id: String,
    pub status: String,
    pub timestamp: String,
    pub body: String,
}

fn valid_status(s: &str) -> bool {
    STATUSES.contains(&s)
}

fn valid_timestamp(s: &str) -> bool {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
            .expect("static regex")
    })
    .is_match(s)
}

/// The file's text for a response.
pub fn render(id: &TaskId, status: &str, timestamp: &str, body: &str) -> String {
    let mut out = frontmatter::render(&[
        ("id", id.to_string()),
        ("status", status.into()),
        ("timestamp", timestamp.into()),
    ]);
    if !body.is_empty() {
        out.push('\n');
        out.push_str(body);
        if !body.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Parses and validates a response for task `id`; `Err` lists every problem.
pub fn problems(text: &str, id: &TaskId) -> std::result::Result<Response, Vec<String>> {
    let (fields, body) = frontmatter::parse(text).map_err(|e| vec![e])?;
    let mut out = Vec::new();
    let mut need = |key: &str| match frontmatter::get(&fields, key) {
        Some(v) if !v.trim().is_empty() => v.to_string(),
        _ => {
            out.push(format!("missing field `{key}`"));
            String::new()
        }
    };
    let (rid, status, timestamp) = (need("id"), need("status"), need("timestamp"));
    if !rid.is_empty() && rid != id.as_str() {
        out.push(format!("id {rid:?} does not match task {id}"));
    }
    if !status.is_empty() && !valid_status(&status) {
        out.push(format!(
            "unknown status {status:?} (expected one of {})",
            STATUSES.join(", ")
        ));
    }
    if !timestamp.is_empty() && !valid_timestamp(&timestamp) {
        out.push(format!("timestamp {timestamp:?} is not RFC 3339"));
    }
    if !out.is_empty() {
        return Err(out);
    }
    Ok(Response {
        id: rid,
        status,
        timestamp,
        body: body.trim_start_matches('\n').to_string(),
    })
}

/// Refuses a status that is none of [`STATUSES`] (exit 2).
pub(crate) fn check_status(status: &str) -> Result<()> {
    if !valid_status(status) {
        return Err(Error::usage(format!(
            "unknown status {status:?} (expected one of {})",
            STATUSES.join(", ")
        )));
    }
    Ok(())
}

/// Writes `data/<id>/response.md` (exit 2 for an unknown status).
pub(crate) fn write(
    home: &Home,
    id: &TaskId,
    status: &str,
    body: &str,
    now: u64,
) -> Result<PathBuf> {
    check_status(status)?;
    fsx::refuse_symlink(&home.task_data(id))?;
    fsx::ensure_dir(&home.task_data(id))?;
    let path = home.response(id);
    fsx::atomic_write(
        &path,
        render(id, status, &clock::rfc3339(now), body).as_bytes(),
    )?;
    Ok(path)
}

/// Validates the response on disk (exit 1 when missing or invalid).
pub(crate) fn check(home: &Home, id: &TaskId) -> Result<(PathBuf, Response)> {
    fsx::refuse_symlink(&home.task_data(id))?;
    let path = home.response(id);
    let bytes = fsx::read_optional(&path)?
        .ok_or_else(|| Error::refused(format!("no response for {id} ({})", path.display())))?;
    problems(&String::from_utf8_lossy(&bytes), id)
        .map(|r| (path.clone(), r))
        .map_err(|p| Error::refused(format!("{}: {}", path.display(), p.join("; "))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> TaskId {
        TaskId::parse("t").unwrap()
    }

    #[test]
    fn every_status_round_trips() {
        for s in STATUSES {
            let text = render(&id(), s, "2026-11-30T09:15:02Z", "body\n");
            let r = problems(&text, &id()).unwrap();
            assert_eq!((r.status.as_str(), r.body.as_str()), (s, "body\n"));
        }
    }

    #[test]
    fn unknown_status_or_missing_field_is_refused() {
        let p = problems(
            "---\nid: t\nstatus: maybe\ntimestamp: 2026-11-30T09:15:02Z\n---\n",
            &id(),
        )
        .unwrap_err();
        assert!(p[0].contains("unknown status"), "{p:?}");
        let p = problems("---\nid: t\nstatus: success\n---\n", &id()).unwrap_err();
        assert_eq!(p, ["missing field `timestamp`"]);
        let p = problems("---\nid: u\nstatus: success\ntimestamp: now\n---\n", &id()).unwrap_err();
        assert_eq!(p.len(), 2, "{p:?}");
    }
}

//! A change of a task's brief (install, revoke, write) under an
//! idempotency key, here or on the task's host.

use super::{Args, TOOL};
use crate::brief::{self, apply};
use crate::cli::common;
use crate::error::{Error, Result};
use crate::route::keys::{self, Answered, Keys, Printed};
use crate::route::{self, Task};
use crate::task_id::TaskId;

/// Runs a change of task `id`'s brief under the caller's idempotency key,
/// when one was given: a key served before prints its first answer and
/// changes nothing; a new one keeps the printed report with the key.
pub(super) fn keyed(
    a: &Args,
    ctx: &common::Ctx,
    id: &TaskId,
    asked: &[&[u8]],
    change: impl FnOnce() -> Result<apply::Report>,
) -> Result<u8> {
    let parts = brief_parts(a, asked);
    let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let answered = keys::keyed_printed(
        &ctx.home,
        Keys::Task(id),
        a.idempotency_key.as_deref(),
        TOOL,
        &parts,
        || {
            let report = change()?;
            // The key is kept before the answer goes out: on the far side
            // stdout is the link, and a link that dropped must not cost
            // the key.
            let stdout = report_text(a, &report)?;
            Ok((report, Printed { code: 0, stdout }))
        },
    )?;
    let (report, printed, not_kept) = match answered {
        Answered::Replayed(p) => return p.print(),
        Answered::Done {
            value,
            printed,
            not_kept,
        } => (value, printed, not_kept),
    };
    if let Some(e) = not_kept {
        crate::output::err_line(&format!(
            "{TOOL}: warning: {id}: brief changed, but its idempotency key was not kept: {e}"
        ));
    }
    for w in &report.warnings {
        crate::output::err_line(&format!("{TOOL}: warning: {w}"));
    }
    crate::output::out_block(&printed.stdout)?;
    Ok(0)
}

/// What a keyed brief change asks for (the key is bound to it): `asked`
/// (the change and its content), the force, the actor and the output
/// form.
fn brief_parts(a: &Args, asked: &[&[u8]]) -> Vec<Vec<u8>> {
    let flags = format!("force={} from={:?} json={}", a.force, a.from, a.json);
    let mut parts: Vec<Vec<u8>> = asked.iter().map(|p| p.to_vec()).collect();
    parts.push(flags.into_bytes());
    parts
}

/// A brief's text with its frontmatter `timestamp:` value left out: the
/// captain renders the brief anew (a new timestamp) each time the same
/// command runs, and the same brief is the same request.
pub(super) fn without_timestamp(text: &str) -> String {
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

/// `--install-stdin <id>`: the far side of a brief re-applied on the
/// captain's side (docs/remote.md, "A brief re-applied or revoked on
/// another host").
pub(super) fn install(a: &Args, id: &TaskId) -> Result<u8> {
    if let Some(k) = &a.idempotency_key {
        keys::validate(k)?;
    }
    let bytes = route::lifecycle::read_brief()?;
    let ctx = a.home.ctx(TOOL)?;
    let bytes = match &a.brief_paths {
        Some(from) => route::lifecycle::rehome_brief(&ctx.home, &ctx.cfg, id, bytes, from)?,
        None => bytes,
    };
    let text =
        String::from_utf8(bytes).map_err(|_| Error::usage("the brief on stdin is not UTF-8"))?;
    let asked = without_timestamp(&text);
    keyed(a, &ctx, id, &[b"install", asked.as_bytes()], || {
        apply::install(&ctx.home, &ctx.cfg, id, &text, a.force, &a.from)
    })
}

/// A brief change of a task on another host, made there through the far
/// `fm-brief` under one idempotency key — `--install-stdin` with the new
/// brief (`text`) on stdin and the paths it names, or `--revoke` (`text`
/// `None`). The answer is the far side's: its path, history and the
/// notice of its live worker. The caller changes the captain's copy only
/// once the far side took the change (exit 0).
pub(super) fn remote_change(
    a: &Args,
    ctx: &common::Ctx,
    id: &TaskId,
    host: &route::Remote,
    text: Option<&str>,
) -> Result<u8> {
    let mut far: Vec<String> = Vec::new();
    if a.json {
        far.push("--json".into());
    }
    if !a.from.is_empty() {
        far.extend(["--from".into(), a.from.clone()]);
    }
    let stdin = match text {
        None => {
            far.extend(["--revoke".into(), id.to_string()]);
            None
        }
        Some(text) => {
            if a.force {
                far.push("--force".into());
            }
            far.extend([
                "--install-stdin".into(),
                id.to_string(),
                "--brief-paths".into(),
            ]);
            let meta = crate::meta::TaskMeta::load(&ctx.home, id)?.unwrap_or_default();
            let paths = brief::BriefPaths::of(&ctx.home, &ctx.cfg, id, &meta);
            far.extend(
                paths
                    .to_vec()
                    .iter()
                    .map(|p| p.to_string_lossy().into_owned()),
            );
            Some(text.as_bytes().to_vec())
        }
    };
    let far: Vec<&str> = far.iter().map(String::as_str).collect();
    route::tool::write(
        &ctx.home,
        host,
        id.as_str(),
        TOOL,
        &far,
        stdin.as_deref(),
        a.idempotency_key.as_deref(),
    )
}

pub(super) fn revoke(a: &Args, id: &TaskId) -> Result<u8> {
    if let Some(k) = &a.idempotency_key {
        keys::validate(k)?;
    }
    let ctx = a.home.ctx(TOOL)?;
    if let Some(host) = Task::open(&ctx.home, &ctx.cfg, id)?.host().cloned() {
        let code = remote_change(a, &ctx, id, &host, None)?;
        if code == 0 {
            apply::revoke_here(&ctx.home, id)?;
        }
        return Ok(code);
    }
    keyed(a, &ctx, id, &[b"revoke"], || {
        apply::revoke(&ctx.home, &ctx.cfg, id, &a.from)
    })
}

/// The report as `--json`, or its human lines: `<action>: <path> (<kind>,
/// mode=<m>; replace <placeholders>)`, then the history and the notice;
/// each line ends with a newline.
pub(super) fn report_text(a: &Args, r: &apply::Report) -> Result<String> {
    if a.json {
        return Ok(format!("{}\n", crate::output::json_line(r)?));
    }
    let mut detail = String::new();
    if r.action != "revoked" {
        detail = format!(" ({}", r.kind);
        if let Some(m) = r.mode {
            detail.push_str(&format!(", mode={m}"));
        }
        if !r.placeholders.is_empty() {
            detail.push_str(&format!("; replace {}", r.placeholders.join(" and ")));
        }
        detail.push(')');
    }
    // Each line made safe for a terminal, as a line printed alone is.
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

#[cfg(test)]
mod tests {
    use super::without_timestamp;

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
}

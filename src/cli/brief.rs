//! `fm-brief` (SPEC §7, §11.2): write a ship, scout or secondmate brief;
//! re-apply (`--force`) or revoke it with history; check it before launch;
//! write and check a structured response.
//!
//! Every input is validated before anything is written, so a refusal
//! leaves the home byte-for-byte as it was.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use serde::Serialize;

use super::common::{self, Ctx, HomeArg};
use crate::brief::response;
use crate::brief::{self, BriefKind, BriefPaths, BriefSpec, Lineage, store};
use crate::error::{Error, Result};
use crate::events::Event;
use crate::meta::Mode;
use crate::meta::{self, TaskMeta};
use crate::task_id::TaskId;
use crate::{clock, dod, fsx, inbox};

mod inputs;

use inputs::{kind_of, lineage, projects, read_include, read_text};

const TOOL: &str = "fm-brief";

/// Write, re-apply, revoke and check a task's brief.
#[derive(Debug, Parser)]
#[command(
    name = "fm-brief",
    version,
    after_help = "Examples:\n  \
      fm-brief fix-login webapp --mode direct-PR --intent 'Login takes 9 s; make it fast.' --spec-file spec.md\n  \
      fm-brief survey-deps webapp --scout\n  \
      fm-brief ops --secondmate ~/src/webapp ~/src/api --charter 'Keep CI green.'\n  \
      fm-brief --check fix-login --mode direct-PR\n  \
      fm-brief fix-login-db webapp --mode local-only --parent fix-login\n  \
      fm-brief --respond fix-login-db --status success --body-file answer.md"
)]
pub struct Args {
    /// Task id
    #[arg(value_name = "ID")]
    id: Option<OsString>,
    /// Repository name (ship, scout) or project clone paths (secondmate)
    #[arg(value_name = "REPO|PROJECT")]
    rest: Vec<OsString>,
    /// Delivery mode of a ship brief: no-mistakes, direct-PR or local-only
    #[arg(long, value_name = "M")]
    mode: Option<String>,
    /// Write a scout brief (a report, no branch)
    #[arg(long, conflicts_with = "secondmate")]
    scout: bool,
    /// Write a secondmate charter
    #[arg(long)]
    secondmate: bool,
    /// Secondmate without project clones
    #[arg(long)]
    no_projects: bool,
    /// Secondmate charter text
    #[arg(long, value_name = "T")]
    charter: Option<String>,
    /// Secondmate routing scope
    #[arg(long, value_name = "T")]
    scope: Option<String>,
    /// The captain's words, verbatim
    #[arg(
        long,
        value_name = "T",
        conflicts_with = "intent_file",
        allow_hyphen_values = true
    )]
    intent: Option<String>,
    /// Read the intent from a file
    #[arg(long, value_name = "F")]
    intent_file: Option<PathBuf>,
    /// Build instructions (the firstmate spec)
    #[arg(
        long,
        value_name = "T",
        conflicts_with = "spec_file",
        allow_hyphen_values = true
    )]
    spec: Option<String>,
    /// Read the spec from a file
    #[arg(long, value_name = "F")]
    spec_file: Option<PathBuf>,
    /// One-paragraph restatement, at most 500 bytes
    #[arg(long, value_name = "T")]
    mission: Option<String>,
    /// A constraint line (repeatable, at most 20)
    #[arg(long = "constraint", value_name = "LINE")]
    constraints: Vec<String>,
    /// Shared-memory pointer TIER[/KEY]=REASON (repeatable, at most 10)
    #[arg(long = "share", value_name = "TIER[/KEY]=REASON")]
    shares: Vec<String>,
    /// Parent task of a sub-brief
    #[arg(long, value_name = "ID")]
    parent: Option<OsString>,
    /// Depth limit of the delegation chain
    #[arg(long, value_name = "N")]
    max_depth: Option<u32>,
    /// Delegator named in the frontmatter (default: brief.delegator)
    #[arg(long, value_name = "NAME")]
    delegator: Option<String>,
    /// Branch prefix; the branch is prefix + id (default: brief.branch_prefix)
    #[arg(long, value_name = "P")]
    branch_prefix: Option<String>,
    /// Replace an existing brief; the old one goes to brief.history/
    #[arg(long)]
    force: bool,
    #[arg(long, hide = true)]
    yolo: bool,
    /// Validate a filled brief before launch
    #[arg(long, value_name = "ID")]
    check: Option<OsString>,
    /// Move the brief into history and leave a revoked brief
    #[arg(long, value_name = "ID")]
    revoke: Option<OsString>,
    /// Write data/<id>/response.md
    #[arg(long, value_name = "ID")]
    respond: Option<OsString>,
    /// Response status: success, failure, partial or rejected
    #[arg(long, value_name = "S", requires = "respond")]
    status: Option<String>,
    /// Response body file ("-" for stdin)
    #[arg(long, value_name = "F", requires = "respond")]
    body_file: Option<PathBuf>,
    /// Validate data/<id>/response.md
    #[arg(long, value_name = "ID")]
    check_response: Option<OsString>,
    /// Print the result as JSON
    #[arg(long)]
    json: bool,
    /// Actor recorded in the event
    #[arg(long, value_name = "NAME", default_value = "")]
    from: String,
    #[command(flatten)]
    home: HomeArg,
}

pub fn command() -> clap::Command {
    Args::command()
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    common::run_tool(TOOL, args, run)
}

#[derive(Debug, Serialize)]
struct Report {
    action: &'static str,
    path: PathBuf,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<Mode>,
    placeholders: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    history: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    notice: Option<String>,
}

fn run(a: Args) -> Result<u8> {
    if a.yolo {
        return Err(Error::usage(
            "--yolo is refused: a brief never tells a worker to skip its safeguards",
        ));
    }
    let ops = [
        a.check.is_some(),
        a.revoke.is_some(),
        a.respond.is_some(),
        a.check_response.is_some(),
    ];
    if ops.iter().filter(|x| **x).count() > 1 || (ops.iter().any(|x| *x) && a.id.is_some()) {
        return Err(Error::usage(
            "give one of: <id> …, --check, --revoke, --respond, --check-response",
        ));
    }
    if let Some(id) = &a.check {
        return check(&a, &TaskId::parse_os(id)?);
    }
    if let Some(id) = &a.revoke {
        return revoke(&a, &TaskId::parse_os(id)?);
    }
    if let Some(id) = &a.respond {
        return respond(&a, &TaskId::parse_os(id)?);
    }
    if let Some(id) = &a.check_response {
        return check_response(&a, &TaskId::parse_os(id)?);
    }
    write(&a)
}

fn actor(a: &Args) -> &str {
    &a.from
}

fn check(a: &Args, id: &TaskId) -> Result<u8> {
    let ctx = a.home.ctx(TOOL)?;
    let report = brief::check_brief(&ctx.home, &ctx.cfg, id, a.mode.as_deref())?;
    if a.json {
        common::out_json(&report)?;
    } else if report.ok {
        common::out(&format!("ok: {}", report.path.display()))?;
    }
    for p in &report.problems {
        eprintln!("{TOOL}: error: {p}");
    }
    Ok(u8::from(!report.ok))
}

fn revoke(a: &Args, id: &TaskId) -> Result<u8> {
    let ctx = a.home.ctx(TOOL)?;
    let w = store::revoke(&ctx.home, id, clock::now())?;
    let notice = notify_live_worker(&ctx, id, &w.path);
    Event::new(TOOL, id.as_str(), "brief.revoked")
        .actor(actor(a))
        .field("path", w.path.display().to_string())
        .record(&ctx.home);
    let report = Report {
        action: "revoked",
        path: w.path,
        kind: "revoked",
        mode: None,
        placeholders: vec![],
        history: w.history,
        notice,
    };
    print_report(a, &report, String::new())
}

fn print_report(a: &Args, r: &Report, detail: String) -> Result<u8> {
    if a.json {
        common::out_json(r)?;
        return Ok(0);
    }
    common::out(&format!("{}: {}{detail}", r.action, r.path.display()))?;
    if let Some(h) = &r.history {
        common::out(&format!("history: {}", h.display()))?;
    }
    if let Some(n) = &r.notice {
        common::out(&format!("notice: {n}"))?;
    }
    Ok(0)
}

/// Queues `brief updated: re-read <path>` in the inbox of a task whose
/// agent is alive (SPEC §7.3: one tmux call for the pane, then the
/// harness's liveness rule) and rings its doorbell as `fm-send` does (a
/// ring that does not land is the watcher's to retry). Without a live
/// agent nothing is queued and the notice says so. A failure to queue
/// never undoes the brief; it is reported instead.
fn notify_live_worker(ctx: &Ctx, id: &TaskId, path: &Path) -> Option<String> {
    let meta = TaskMeta::load(&ctx.home, id)
        .ok()
        .flatten()
        .unwrap_or_default();
    let r = crate::tmux::recipient::Recipient::from_meta(&ctx.cfg, id, &meta);
    let Some(pane) = r.pane.as_deref() else {
        return Some("no live worker notified (no pane recorded)".into());
    };
    let info = match crate::tmux::pane::Pane::info(&r.tmux, pane) {
        Ok(Some(info)) if r.alive(&info) => info,
        Ok(Some(_)) => {
            return Some(format!(
                "no live worker notified (the agent in pane {pane} has exited)"
            ));
        }
        Ok(None) => return Some(format!("no live worker notified (pane {pane} is gone)")),
        Err(e) => return Some(format!("no live worker notified ({e})")),
    };
    let body = format!("brief updated: re-read {}", path.display());
    let from = ctx.cfg.brief.delegator.as_str();
    let msg = inbox::Outgoing {
        from,
        body: body.as_bytes(),
        fire_and_forget: false,
        dedupe: false,
    };
    match inbox::queue(&ctx.home, &ctx.cfg, id, &msg, clock::now()) {
        Ok(q) => {
            let doorbell = r.ring_known(&ctx.home, &ctx.cfg, &info);
            Event::new(TOOL, id.as_str(), "inbox.queued")
                .actor(from)
                .field("seq", q.seq)
                .field("doorbell", doorbell.as_str())
                .record(&ctx.home);
            Some(format!(
                "queued {} {} \u{b7} doorbell {doorbell}",
                id,
                q.path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            ))
        }
        Err(e) => {
            eprintln!("{TOOL}: warning: brief written but the notice was not queued: {e}");
            Some(format!("not queued: {e}"))
        }
    }
}

fn respond(a: &Args, id: &TaskId) -> Result<u8> {
    let status = a.status.as_deref().ok_or_else(|| {
        Error::usage("--respond needs --status (success, failure, partial, rejected)")
    })?;
    if !response::STATUSES.contains(&status) {
        return Err(Error::usage(format!(
            "unknown status {status:?} (expected one of {})",
            response::STATUSES.join(", ")
        )));
    }
    let body = match &a.body_file {
        Some(f) => read_text(f, "body")?,
        None => String::new(),
    };
    let ctx = a.home.ctx(TOOL)?;
    // A response belongs to a task someone briefed or spawned: a mistyped
    // id must not create `data/<typo>/response.md` that nobody reads.
    if !crate::meta::task_known(&ctx.home, id)? {
        return Err(Error::refused(format!(
            "unknown task {id}: no meta and no brief to respond to"
        )));
    }
    let path = response::write(&ctx.home, id, status, &body, clock::now())?;
    let who = if a.from.is_empty() {
        id.as_str()
    } else {
        a.from.as_str()
    };
    Event::new(TOOL, id.as_str(), "brief.responded")
        .actor(who)
        .field("status", status)
        .record(&ctx.home);
    if a.json {
        common::out_json(
            &serde_json::json!({"action": "responded", "path": path, "status": status}),
        )?;
    } else {
        common::out(&format!("responded: {} (status={status})", path.display()))?;
    }
    Ok(0)
}

fn check_response(a: &Args, id: &TaskId) -> Result<u8> {
    let ctx = a.home.ctx(TOOL)?;
    let (path, r) = response::check(&ctx.home, id)?;
    if a.json {
        common::out_json(&serde_json::json!({"ok": true, "path": path, "response": r}))?;
    } else {
        common::out(&format!("ok: {} (status={})", path.display(), r.status))?;
    }
    Ok(0)
}

fn write(a: &Args) -> Result<u8> {
    let id = TaskId::parse_os(
        a.id.as_ref()
            .ok_or_else(|| Error::usage("missing task id (see --help)"))?,
    )?;
    let kind = kind_of(a)?;
    let ship_or_scout = kind != BriefKind::Secondmate;
    let repo = if ship_or_scout {
        match a.rest.as_slice() {
            [r] => r
                .to_str()
                .ok_or_else(|| Error::usage("the repository name is not UTF-8"))?
                .to_string(),
            [] => {
                return Err(Error::usage(format!(
                    "a {} brief needs <repo> after the id",
                    kind.name()
                )));
            }
            _ => return Err(Error::usage("give exactly one <repo> after the id")),
        }
    } else {
        String::new()
    };
    if ship_or_scout && (a.charter.is_some() || a.scope.is_some() || a.no_projects) {
        return Err(Error::usage(
            "--charter, --scope and --no-projects belong to --secondmate",
        ));
    }
    if !ship_or_scout
        && (a.intent.is_some()
            || a.intent_file.is_some()
            || a.spec.is_some()
            || a.spec_file.is_some()
            || a.mission.is_some())
    {
        return Err(Error::usage(
            "a secondmate charter takes --charter and --scope, not --intent, --spec or --mission",
        ));
    }
    let ctx = a.home.ctx(TOOL)?;
    let (home, cfg) = (&ctx.home, &ctx.cfg);
    let intent = match (&a.intent, &a.intent_file) {
        (Some(t), _) => Some(t.clone()),
        (None, Some(f)) => Some(read_text(f, "intent")?),
        _ => None,
    };
    if let Some(i) = &intent {
        brief::validate_intent(i, cfg.brief.max_intent_bytes)?;
    }
    let spec = match (&a.spec, &a.spec_file) {
        (Some(t), _) => Some(t.clone()),
        (None, Some(f)) => Some(read_text(f, "spec")?),
        _ => None,
    };
    if spec.as_deref().is_some_and(|s| s.trim().is_empty()) {
        return Err(Error::usage("the spec is blank"));
    }
    if let Some(m) = &a.mission {
        brief::validate_mission(m)?;
    }
    for (what, text) in [("--intent", &intent), ("--spec", &spec)] {
        if text
            .as_deref()
            .is_some_and(crate::brief::check::leaves_a_fence_open)
        {
            return Err(Error::usage(format!(
                "{what} opens a ``` code fence it never closes: it would hide every heading after it in the brief; close the fence"
            )));
        }
    }
    brief::validate_constraints(&a.constraints)?;
    let shares = brief::validate_shares(&a.shares)?;
    for (name, v) in [("charter", &a.charter), ("scope", &a.scope)] {
        if v.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err(Error::usage(format!("the {name} is blank")));
        }
    }
    let projects = projects(a, kind)?;
    let prefix = a
        .branch_prefix
        .clone()
        .unwrap_or_else(|| cfg.brief.branch_prefix.clone());
    let branch = format!("{prefix}{id}");
    if matches!(kind, BriefKind::Ship(_)) {
        brief::validate_branch(&branch)?;
        if branch == cfg.brief.default_branch {
            return Err(Error::usage(format!(
                "invalid branch name {branch:?}: it is the default branch, which the brief forbids committing to; use --branch-prefix"
            )));
        }
    }
    let include = if ship_or_scout {
        read_include(home)?
    } else {
        None
    };
    let lineage = lineage(a, home, &id)?;
    let meta = TaskMeta::load(home, &id)?.unwrap_or_default();
    let spec = BriefSpec {
        id: id.clone(),
        kind,
        repo,
        delegator: a
            .delegator
            .clone()
            .unwrap_or_else(|| cfg.brief.delegator.clone()),
        branch,
        timestamp: clock::rfc3339(clock::now()),
        intent,
        spec,
        mission: a.mission.clone(),
        constraints: a.constraints.clone(),
        shares,
        lineage,
        include,
        projects,
        charter: a.charter.clone(),
        scope: a.scope.clone(),
        paths: BriefPaths {
            worktree: dod::gate::worktree_of(home, cfg, &id, &meta),
            status: home.status(&id),
            inbox: home.inbox(&id),
            report: home.report(&id),
        },
        default_branch: cfg.brief.default_branch.clone(),
        paused_verb: cfg.brief.paused_verb.clone(),
        tools: cfg.brief.tools.clone(),
    };
    let text = brief::render(&spec);
    if spec.placeholders().is_empty() {
        // Never write a filled brief that its own --check would refuse (an
        // unclosed code fence in the intent, say, would hide a heading).
        let problems = crate::brief::check::problems(&text, None);
        if !problems.is_empty() {
            return Err(Error::usage(format!(
                "the brief would not pass fm-brief --check: {}",
                problems.join("; ")
            )));
        }
    }
    if spec.lineage.as_ref().is_some_and(|l| l.parent.is_some()) {
        // Refuse a symlinked meta before the brief is written, not after.
        fsx::refuse_symlink(&home.meta(&id))?;
    }
    let w = store::write(home, &id, text.as_bytes(), a.force)?;
    if let Some(Lineage {
        parent: Some(p), ..
    }) = &spec.lineage
    {
        meta::update(home, &id, |m| m.set("parent", p.as_str()))?;
    }
    if w.history.is_some() && home.meta(&id).exists() {
        follow_brief_in_meta(home, &id, &text)?;
    }
    let notice = w
        .history
        .as_ref()
        .and_then(|_| notify_live_worker(&ctx, &id, &w.path));
    let placeholders = spec.placeholders();
    let mut ev = Event::new(TOOL, id.as_str(), "brief.written")
        .actor(actor(a))
        .field("kind", kind.name())
        .field("forced", w.history.is_some())
        .field("scaffold", !placeholders.is_empty());
    if let Some(m) = kind.mode() {
        ev = ev.field("mode", m.as_str());
    }
    ev.record(home);
    let mut detail = format!(" ({}", kind.name());
    if let Some(m) = kind.mode() {
        detail.push_str(&format!(", mode={m}"));
    }
    if !placeholders.is_empty() {
        detail.push_str(&format!("; replace {}", placeholders.join(" and ")));
    }
    detail.push(')');
    let report = Report {
        action: if placeholders.is_empty() {
            "written"
        } else {
            "scaffolded"
        },
        path: w.path,
        kind: kind.name(),
        mode: kind.mode(),
        placeholders,
        history: w.history,
        notice,
    };
    print_report(a, &report, detail)
}

/// A re-applied brief may change what the task is (kind, mode, repo,
/// branch); spawn copied those into meta, and the gate and crew state read
/// them there. So a `--force` over a task that has a meta brings those keys
/// in line with the new brief: set from its frontmatter, or removed when it
/// has none (a scout has no mode).
fn follow_brief_in_meta(home: &crate::home::Home, id: &TaskId, text: &str) -> Result<()> {
    let Ok((fm, _)) = crate::frontmatter::parse(text) else {
        return Ok(());
    };
    meta::update(home, id, |m| {
        for key in ["kind", "mode", "repo", "branch"] {
            match crate::frontmatter::get(&fm, key) {
                Some(v) => m.set(key, v),
                None => m.remove(key),
            }
        }
    })?;
    Ok(())
}

//! `fm-brief` (docs/spec/brief.md, docs/spec/chains.md): write a ship, scout or secondmate brief;
//! re-apply (`--force`) or revoke it with history; check it before launch;
//! write and check a structured response.
//!
//! This module parses the command line (one operation at a time: the
//! `op` group) into a [`BriefRequest`] and prints the library's report;
//! the library validates every input before anything is written
//! ([`crate::brief::request`]) and carries the operation out
//! ([`crate::brief::apply`]), so a refusal leaves the home byte-for-byte
//! as it was.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use serde::Serialize;

use super::common::{self, HomeArg};
use crate::brief::request::{BriefRequest, Text, read_text};
use crate::brief::{self, BriefKind, apply, response};
use crate::clock;
use crate::error::{Error, Result};
use crate::route::Task;
use crate::route::keys;
use crate::task_id::TaskId;

const TOOL: &str = "fm-brief";

mod change;
use change::revoke;

/// Write, re-apply, revoke and check a task's brief.
#[derive(Debug, Parser)]
#[command(
    name = "fm-brief",
    version,
    group = clap::ArgGroup::new("op")
        .args(["check", "revoke", "respond", "check_response"])
        .conflicts_with("id"),
    after_help = "Examples:\n  \
      fm-brief fix-login webapp --mode direct-PR --intent 'Login takes 9 s; make it fast.' --spec-file spec.md\n  \
      fm-brief survey-deps webapp --scout\n  \
      fm-brief ops --secondmate ~/src/webapp ~/src/api --charter 'Keep CI green.'\n  \
      fm-brief --check fix-login --mode direct-PR\n  \
      fm-brief fix-login-db webapp --mode local-only --parent fix-login\n  \
      fm-brief --respond fix-login-db --status success --body-file answer.md"
)]
pub(crate) struct Args {
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
    /// Key of a change made across hosts: a key already served on the
    /// host keeping the brief prints its first answer again and changes
    /// nothing there
    #[arg(long = "idempotency-key", value_name = "KEY")]
    idempotency_key: Option<String>,
    /// Print the result as JSON
    #[arg(long)]
    json: bool,
    /// Actor recorded in the event
    #[arg(long, value_name = "NAME", default_value = "")]
    from: String,
    #[command(flatten)]
    home: HomeArg,
}

pub(crate) fn command() -> clap::Command {
    Args::command()
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    common::run_tool(TOOL, args, run)
}

fn run(a: Args) -> Result<u8> {
    if a.yolo {
        return Err(Error::usage(
            "--yolo is refused: a brief never tells a worker to skip its safeguards",
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

fn check(a: &Args, id: &TaskId) -> Result<u8> {
    let ctx = a.home.ctx(TOOL)?;
    let report = brief::check_brief(&ctx.home, &ctx.cfg, id, a.mode.as_deref())?;
    if a.json {
        common::out_json(&report)?;
    } else if report.ok {
        common::out(&format!("ok: {}", report.path.display()))?;
    }
    for p in &report.problems {
        crate::output::err_line(&format!("{TOOL}: error: {p}"));
    }
    Ok(u8::from(!report.ok))
}

/// `--respond --json`.
#[derive(Debug, Serialize)]
struct Responded<'a> {
    action: &'static str,
    path: PathBuf,
    status: &'a str,
}

fn respond(a: &Args, id: &TaskId) -> Result<u8> {
    let status = a.status.as_deref().ok_or_else(|| {
        Error::usage("--respond needs --status (success, failure, partial, rejected)")
    })?;
    response::check_status(status)?;
    let body = match &a.body_file {
        Some(f) => read_text(f, "body", crate::fsx::Limit::INPUT)?,
        None => String::new(),
    };
    let ctx = a.home.ctx(TOOL)?;
    let who = if a.from.is_empty() {
        id.as_str()
    } else {
        a.from.as_str()
    };
    let path = apply::respond(&ctx.home, id, status, &body, who)?;
    if a.json {
        common::out_json(&Responded {
            action: "responded",
            path,
            status,
        })?;
    } else {
        common::out(&format!("responded: {} (status={status})", path.display()))?;
    }
    Ok(0)
}

/// `--check-response --json`.
#[derive(Debug, Serialize)]
struct ResponseOk {
    ok: bool,
    path: PathBuf,
    response: response::Response,
}

fn check_response(a: &Args, id: &TaskId) -> Result<u8> {
    let ctx = a.home.ctx(TOOL)?;
    let (path, r) = response::check(&ctx.home, id)?;
    if a.json {
        common::out_json(&ResponseOk {
            ok: true,
            path,
            response: r,
        })?;
    } else {
        common::out(&format!("ok: {} (status={})", path.display(), r.status))?;
    }
    Ok(0)
}

/// Writes (or re-applies, with `--force`) a brief: the flags become a
/// [`BriefRequest`], the library validates it into a spec and writes it.
fn write(a: &Args) -> Result<u8> {
    let id = TaskId::parse_os(
        a.id.as_ref()
            .ok_or_else(|| Error::usage("missing task id (see --help)"))?,
    )?;
    let text = |inline: &Option<String>, file: &Option<PathBuf>| match (inline, file) {
        (Some(t), _) => Some(Text::Inline(t.clone())),
        (None, Some(f)) => Some(Text::File(f.clone())),
        (None, None) => None,
    };
    let request = BriefRequest {
        id,
        kind: BriefKind::from_flags(a.mode.as_deref(), a.scout, a.secondmate)?,
        rest: a.rest.clone(),
        no_projects: a.no_projects,
        charter: a.charter.clone(),
        scope: a.scope.clone(),
        intent: text(&a.intent, &a.intent_file),
        spec: text(&a.spec, &a.spec_file),
        mission: a.mission.clone(),
        constraints: a.constraints.clone(),
        shares: a.shares.clone(),
        parent: a.parent.clone(),
        max_depth: a.max_depth,
        delegator: a.delegator.clone(),
        branch_prefix: a.branch_prefix.clone(),
    };
    request.check_flags()?;
    if let Some(k) = &a.idempotency_key {
        keys::validate(k)?;
    }
    let ctx = a.home.ctx(TOOL)?;
    let task = Task::open(&ctx.home, &ctx.cfg, &request.id)?;
    let spec = request.validate(&ctx.home, &ctx.cfg, clock::now())?;
    change::write(a, &ctx, &task, &spec)
}

//! `fm setup` (docs/spec/setup.md): a project's worktree set-up, shown and
//! approved by the captain; spawn runs only an approved one.

use std::path::PathBuf;

use clap::Subcommand;

use super::common::{self, HomeArg};
use crate::control::setup;
use crate::error::Result;
use crate::grant::Actor;
use crate::route::setup::SetupRequest;

const TOOL: &str = "fm";

/// `fm setup`'s arguments (a subcommand of `fm`).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "PROJECT is a checkout (any directory in it) or the name of a [projects.<name>] table.\n\nExamples:\n  fm setup show ~/src/app\n  fm setup approve --hash 3fa2b81c09de ~/src/app\n  fm setup show --host box /srv/src/app"
)]
pub(crate) struct SetupArgs {
    #[command(subcommand)]
    cmd: SetupCmd,
}

#[derive(Debug, Subcommand)]
enum SetupCmd {
    /// Print a project's set-up and whether it is approved
    Show(Target),
    /// Approve a project's set-up as it is now (the captain only)
    Approve(ApproveArgs),
}

#[derive(Debug, clap::Args)]
struct ApproveArgs {
    #[command(flatten)]
    target: Target,
    /// Approve only the set-up `fm setup show` printed: its hash (at least 12 hex digits)
    #[arg(long, value_name = "HEX")]
    hash: Option<String>,
}

#[derive(Debug, clap::Args)]
struct Target {
    /// The project: a directory of its checkout, or a [projects.<name>] name
    #[arg(value_name = "PROJECT")]
    project: PathBuf,
    /// The project is on this host (its home's set-up and approvals)
    #[arg(long, value_name = "NAME")]
    host: Option<String>,
    /// Read the files the commands name at this ref, as a spawn with --base does
    #[arg(long, value_name = "REF")]
    base: Option<String>,
    /// Print the report as JSON
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    home: HomeArg,
}

pub(crate) fn run(a: SetupArgs) -> Result<u8> {
    let (t, approving, hash) = match a.cmd {
        SetupCmd::Show(t) => (t, false, None),
        SetupCmd::Approve(a) => (a.target, true, a.hash),
    };
    let actor = Actor::from_env();
    if approving {
        // Refused before the home is read: the first mate changes nothing.
        setup::approval::captain_only(actor)?;
    }
    let ctx = t.home.ctx(TOOL)?;
    let req = SetupRequest {
        project: t.project,
        approve: approving,
        base: t.base,
        hash: hash.clone(),
    };
    let report = crate::route::setup::setup(&ctx.home, &ctx.cfg, t.host.as_deref(), &req, actor)?;
    if t.json {
        common::out_json(&report)?;
        return Ok(0);
    }
    let mut lines = report.lines();
    if approving && report.approval.is_some() {
        lines.pop();
        lines.push(format!(
            "approved: spawns of {} now run this set-up",
            report.project.display()
        ));
        if hash.is_none() {
            lines.push(format!(
                "(approved as read now, hash {}: give --hash to approve only what `fm setup show` printed)",
                &report.hash[..report.hash.len().min(12)]
            ));
        }
    } else if approving {
        lines.push("nothing to approve".into());
    }
    for l in &lines {
        common::out(l)?;
    }
    Ok(0)
}

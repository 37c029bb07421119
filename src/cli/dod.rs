//! `fm-dod` (docs/spec/dod.md): print the definition-of-done block a ship brief
//! embeds, or judge a task's `done` line with the gate.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use super::common::{self, HomeArg};
use crate::dod;
use crate::error::{Error, Result};
use crate::meta::Mode;
use crate::route::dod::CheckRequest;
use crate::route::{self, Task};
use crate::status;
use crate::task_id::TaskId;
use crate::{frontmatter, fsx};

const TOOL: &str = "fm-dod";

/// Print the definition of done, or verify a worker's done line.
#[derive(Debug, Parser)]
#[command(
    name = "fm-dod",
    version,
    after_help = "Examples:\n  fm-dod direct-PR fix-login\n  fm-dod local-only fix-login --branch fm/fix-login\n  fm-dod --check fix-login\n  fm-dod --check fix-login --line 'done: PR https://github.com/o/r/pull/7 checks green' --json"
)]
pub(crate) struct Args {
    /// <mode> <id>: the block to print (no-mistakes, direct-PR, local-only)
    #[arg(value_name = "MODE ID", num_args = 0..=2)]
    block: Vec<String>,
    /// Branch named in the block (default: the brief's branch, else prefix + id)
    #[arg(long, value_name = "B")]
    branch: Option<String>,
    /// Judge the task's latest done line (docs/spec/dod.md#gate)
    #[arg(long, value_name = "ID", conflicts_with_all = ["block", "branch"])]
    check: Option<OsString>,
    /// The status line to judge instead of the log's latest done line
    #[arg(long, value_name = "LINE", requires = "check")]
    line: Option<String>,
    /// Read that status line from stdin (one line)
    #[arg(long, requires = "check", conflicts_with = "line")]
    line_stdin: bool,
    /// Print the result as JSON
    #[arg(long)]
    json: bool,
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
    if let Some(id) = &a.check {
        return check(&a, &TaskId::parse_os(id)?);
    }
    let [mode, id] = a.block.as_slice() else {
        return Err(Error::usage(
            "give <mode> <id>, or --check <id> (see --help)",
        ));
    };
    let mode = Mode::parse(mode)?;
    let id = TaskId::parse(id)?;
    if let Some(b) = &a.branch {
        crate::brief::validate_branch(b)?;
    }
    let ctx = a.home.ctx(TOOL)?;
    let branch = match &a.branch {
        Some(b) => b.clone(),
        None => brief_branch(&ctx.home, &id)
            .unwrap_or_else(|| format!("{}{id}", ctx.cfg.brief.branch_prefix)),
    };
    let block = dod::block(
        mode,
        &branch,
        &ctx.cfg.brief.default_branch,
        &ctx.home.status(&id),
    );
    if a.json {
        common::out_json(
            &serde_json::json!({"task": id, "mode": mode, "branch": branch, "block": block}),
        )?;
    } else {
        crate::output::out_block(&block)?;
    }
    Ok(0)
}

fn brief_branch(home: &crate::home::Home, id: &TaskId) -> Option<String> {
    let bytes = fsx::read_optional(&home.brief(id)).ok()??;
    let text = String::from_utf8_lossy(&bytes);
    let (fields, _) = frontmatter::parse(&text).ok()?;
    frontmatter::get(&fields, "branch")
        .filter(|b| !b.is_empty())
        .map(str::to_string)
}

/// The line to judge given on the command line or (`--line-stdin`) on
/// stdin, its one line without the newline; `None` for the log's latest.
fn given_line(a: &Args) -> Result<Option<String>> {
    if !a.line_stdin {
        return Ok(a.line.clone());
    }
    let mut buf = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::io::stdin().lock(), status::MAX_TEXT as u64 + 4096),
        &mut buf,
    )
    .map_err(|e| Error::io("read", "<stdin>", e))?;
    let text = String::from_utf8(buf).map_err(|_| Error::usage("--line-stdin: not UTF-8"))?;
    Ok(Some(text.strip_suffix('\n').unwrap_or(&text).to_string()))
}

fn check(a: &Args, id: &TaskId) -> Result<u8> {
    let given = given_line(a)?;
    let ctx = a.home.ctx(TOOL)?;
    let task = Task::open(&ctx.home, &ctx.cfg, id)?;
    let report = route::dod::check(&ctx.home, &ctx.cfg, &task, &CheckRequest { line: given })?;
    if a.json {
        common::out_json(&report)?;
    } else {
        common::out(&report.to_string())?;
    }
    Ok(report.exit_code())
}

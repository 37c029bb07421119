//! `fm-dod` (SPEC §8): print the definition-of-done block a ship brief
//! embeds, or judge a task's `done` line with the gate.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use serde::Serialize;

use super::common::{self, HomeArg};
use crate::dod::{self, Verdict};
use crate::error::{Error, Result};
use crate::meta::Mode;
use crate::meta::TaskMeta;
use crate::status::{self, Parsed, StatusLine, Verb};
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
    /// Judge the task's latest done line (SPEC §8.2)
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

#[derive(Debug, Serialize)]
struct CheckReport {
    task: TaskId,
    #[serde(flatten)]
    verdict: Verdict,
    line: Option<String>,
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

/// Time the far gate may take beyond the host's bound: up to three git
/// calls of 10 s each there (SPEC §8.2).
const DOD_EXTRA: std::time::Duration = std::time::Duration::from_secs(30);

/// `fm-dod --check` of a task on another host: the gate runs there, on
/// that host's worktree and clone, through its own `fm-dod`; a given line
/// travels on stdin.
fn remote_check(
    ctx: &common::Ctx,
    a: &Args,
    id: &TaskId,
    host: &crate::remote::call::Remote,
    line: Option<&str>,
) -> Result<u8> {
    let mut far = vec!["--check", id.as_str()];
    if a.json {
        far.push("--json");
    }
    let body = line.map(|l| format!("{l}\n"));
    if body.is_some() {
        far.push("--line-stdin");
    }
    let ssh =
        crate::remote::ssh::Ssh::new(&ctx.home, &host.name, &host.cfg)?.with_extra_time(DOD_EXTRA);
    let reply = ssh.tool_or_err(TOOL, &far, body.map(String::into_bytes))?;
    Ok(crate::remote::call::print(&reply))
}

fn check(a: &Args, id: &TaskId) -> Result<u8> {
    let given = given_line(a)?;
    let ctx = a.home.ctx(TOOL)?;
    if let Some(host) = crate::remote::call::host_of(&ctx.home, &ctx.cfg, id)? {
        return remote_check(&ctx, a, id, &host, given.as_deref());
    }
    let paused = &ctx.cfg.brief.paused_verb;
    let line = match &given {
        Some(raw) => match status::parse_line(raw.as_bytes(), paused) {
            Parsed::Line(l) if l.kind == Verb::Done => Some(l),
            _ => {
                return Err(Error::usage(format!(
                    "--line {} is not a done status line",
                    crate::cli::common::quoted(raw)
                )));
            }
        },
        None => latest_done(
            &fsx::read_optional(&ctx.home.status(id))?.unwrap_or_default(),
            paused,
        ),
    };
    let verdict = match &line {
        Some(l) => {
            let meta = TaskMeta::load(&ctx.home, id)?.unwrap_or_default();
            dod::gate(&ctx.home, &ctx.cfg, id, &meta, l)
        }
        None => Verdict::Refused(format!("no done line in {}", ctx.home.status(id).display())),
    };
    let code = verdict.exit_code();
    if a.json {
        common::out_json(&CheckReport {
            task: id.clone(),
            verdict,
            line: line.map(|l| l.text),
        })?;
    } else {
        common::out(&format!("{}: {}", verdict.word(), verdict.reason()))?;
    }
    Ok(code)
}

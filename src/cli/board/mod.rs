//! `fm-board` (docs/spec/board.md#cli): the task board's command line. Parsing and
//! printing live here; transitions are in [`crate::board::ops`] and every
//! write goes through [`crate::board::store`] under the board lock.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::board::ops::Op;
use crate::board::store::{self, NewTask};
use crate::board::{BoardId, Status};
use crate::cli::common::{self, HomeArg};
use crate::clock;
use crate::error::{Error, Result};
use crate::route::board::{self as route_board, BoardWrite as Write};
use crate::route::{self, Place};
use crate::task_id::TaskId;

mod host;
use host::remote_read;

const TOOL: &str = "fm-board";
const MAX_SUBJECT: usize = 1000;
const MAX_TEXT: usize = 65536;

/// Task board: claims, dependencies, approvals and dispatch into inboxes.
#[derive(Debug, Parser)]
#[command(
    name = "fm-board",
    version,
    after_help = "Task ids: T-001, T-1 or 1.\n\nExamples:\n  fm-board add 'Fix the login form' --assignee fix-login --priority 2\n  fm-board add 'Ship the release' --blocked-by T-1,T-2 --require-approval\n  fm-board claim T-1 --as fix-login\n  fm-board complete 1 --result 'PR #42 merged' --as fix-login\n  fm-board comment T-3 --blocker 'no credentials for staging' --as worker-2\n  fm-board list --status pending --json\n  fm-board dispatch"
)]
pub(crate) struct Args {
    #[command(subcommand)]
    cmd: Cmd,
    /// Print JSON (the task object; an array for list and dispatch)
    #[arg(long, global = true)]
    json: bool,
    /// Act on the board of this configured host, over ssh (docs/remote.md)
    #[arg(long, value_name = "NAME", global = true)]
    host: Option<String>,
    /// Key of a board change made across hosts: a key already served
    /// prints that call's answer again and changes nothing
    #[arg(long = "idempotency-key", value_name = "KEY")]
    idempotency_key: Option<String>,
    #[command(flatten)]
    home: HomeArg,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Add a task; prints "<id> <status>"
    Add {
        subject: String,
        #[arg(long, value_name = "T")]
        description: Option<String>,
        /// Worker (task id) that dispatch hands the task to
        #[arg(long, value_name = "ID")]
        assignee: Option<String>,
        /// Tasks that must finish first (comma-separated)
        #[arg(long, value_name = "T-1,T-2", value_delimiter = ',')]
        blocked_by: Vec<String>,
        #[arg(
            long,
            value_name = "N",
            default_value_t = 0,
            allow_negative_numbers = true
        )]
        priority: i64,
        /// Completion goes through review and approve
        #[arg(long)]
        require_approval: bool,
    },
    /// Take a pending task
    Claim {
        task: String,
        #[arg(long = "as", value_name = "ID")]
        by: String,
    },
    /// Finish a task (a pending one is claimed first)
    Complete {
        task: String,
        #[arg(long, value_name = "T")]
        result: String,
        #[arg(long = "as", value_name = "ID")]
        by: Option<String>,
    },
    /// Submit an in-progress task for approval (--require-approval tasks)
    Review { task: String },
    /// Approve a task in review: it completes
    Approve { task: String },
    /// Reject a task in review: it is cancelled
    Reject {
        task: String,
        #[arg(long, value_name = "R")]
        reason: String,
    },
    /// Cancel a task
    Cancel {
        task: String,
        #[arg(long, value_name = "R")]
        reason: String,
    },
    /// Fail a task
    Fail {
        task: String,
        #[arg(long, value_name = "R")]
        reason: String,
    },
    /// Put a failed, cancelled or stale task back in the queue
    Retry { task: String },
    /// Comment on a task; --blocker fails it and wakes the captain
    Comment {
        task: String,
        /// Comment text (words are joined with spaces; put `--` before text that starts with '-')
        #[arg(required = true, num_args = 1..)]
        text: Vec<String>,
        #[arg(long)]
        blocker: bool,
        #[arg(long = "as", value_name = "ID")]
        by: Option<String>,
    },
    /// Record progress on an in-progress task
    Progress {
        task: String,
        #[arg(value_parser = clap::value_parser!(u8).range(0..=100))]
        percent: u8,
        #[arg(long, value_name = "S")]
        step: Option<String>,
        #[arg(long = "as", value_name = "ID")]
        by: Option<String>,
    },
    /// List tasks (sorted by id)
    List {
        #[arg(long, value_name = "S", value_parser = Status::ALL.map(Status::as_str))]
        status: Option<String>,
    },
    /// Show one task
    Show { task: String },
    /// Queue pending assigned tasks into their assignees' inboxes; re-send unacknowledged ones
    Dispatch,
}

pub(crate) fn command() -> clap::Command {
    Args::command()
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    common::run_tool(TOOL, args, run)
}
fn text(what: &str, s: &str, max: usize) -> Result<String> {
    if s.trim().is_empty() {
        return Err(Error::usage(format!("{what} is empty")));
    }
    if s.len() > max {
        return Err(Error::usage(format!("{what} is longer than {max} bytes")));
    }
    Ok(s.to_string())
}

fn worker(raw: &str) -> Result<String> {
    Ok(TaskId::parse(raw)?.as_str().to_string())
}

fn change_of(task: &str, op: Op, actor: &str) -> Result<Write> {
    Ok(Write::Change {
        task: BoardId::parse(task)?,
        op,
        actor: actor.to_string(),
    })
}

fn run(a: Args) -> Result<u8> {
    let ctx = a.home.ctx(TOOL)?;
    // The board acted on: this home's, or a configured host's.
    let place = match a.host.as_deref() {
        Some(name) => Place::Host(route::host_named(&ctx.cfg, name)?),
        None => Place::Here,
    };
    let key = a.idempotency_key.as_deref();
    let now = clock::now();
    let write = match a.cmd {
        Cmd::List { .. } | Cmd::Show { .. } if matches!(place, Place::Host(_)) => {
            return remote_read(&a, &ctx, &place);
        }
        Cmd::List { status } => {
            return super::board_view::list(
                &ctx,
                status.as_deref().and_then(Status::parse),
                a.json,
            );
        }
        Cmd::Show { task } => {
            let id = BoardId::parse(&task)?;
            let t = store::load(&ctx.home, id)?;
            return super::board_view::show(&t, a.json);
        }
        Cmd::Dispatch => {
            let r = route_board::dispatch(&ctx.home, &ctx.cfg, &place, key, now)?;
            warn(&r.warnings);
            crate::output::out_block(&r.text(a.json)?)?;
            return Ok(r.code());
        }
        cmd => write_of(cmd)?,
    };
    let r = route_board::change(&ctx.home, &ctx.cfg, &place, &write, key, now)?;
    warn(&r.warnings);
    crate::output::out_block(&r.text(a.json)?)?;
    Ok(0)
}

fn warn(warnings: &[String]) {
    for w in warnings {
        crate::output::err_line(&format!("{TOOL}: warning: {w}"));
    }
}

/// Checks a change's arguments.
fn write_of(cmd: Cmd) -> Result<Write> {
    match cmd {
        Cmd::Add {
            subject,
            description,
            assignee,
            blocked_by,
            priority,
            require_approval,
        } => {
            let subject = text("subject", &subject, MAX_SUBJECT)?;
            if subject.contains(['\n', '\r']) {
                return Err(Error::usage("subject must be one line"));
            }
            Ok(Write::Add(NewTask {
                subject,
                description: description
                    .map(|d| text("description", &d, MAX_TEXT))
                    .transpose()?
                    .unwrap_or_default(),
                assignee: assignee.as_deref().map(worker).transpose()?,
                blocked_by: blocked_by
                    .iter()
                    .map(|b| BoardId::parse(b.trim()))
                    .collect::<Result<_>>()?,
                priority,
                require_approval,
            }))
        }
        Cmd::Claim { task, by } => {
            let by = worker(&by)?;
            change_of(&task, Op::Claim { by: by.clone() }, &by)
        }
        Cmd::Complete { task, result, by } => {
            let by = by.as_deref().map(worker).transpose()?;
            let op = Op::Complete {
                result: text("--result", &result, MAX_TEXT)?,
                by: by.clone(),
            };
            change_of(&task, op, by.as_deref().unwrap_or(""))
        }
        Cmd::Review { task } => change_of(&task, Op::Review, ""),
        Cmd::Approve { task } => change_of(&task, Op::Approve, ""),
        Cmd::Reject { task, reason } => {
            let op = Op::Reject {
                reason: text("--reason", &reason, MAX_TEXT)?,
            };
            change_of(&task, op, "")
        }
        Cmd::Cancel { task, reason } => {
            let op = Op::Cancel {
                reason: text("--reason", &reason, MAX_TEXT)?,
            };
            change_of(&task, op, "")
        }
        Cmd::Fail { task, reason } => {
            let op = Op::Fail {
                reason: text("--reason", &reason, MAX_TEXT)?,
            };
            change_of(&task, op, "")
        }
        Cmd::Retry { task } => change_of(&task, Op::Retry, ""),
        Cmd::Comment {
            task,
            text: words,
            blocker,
            by,
        } => {
            let by = by
                .as_deref()
                .map(worker)
                .transpose()?
                .unwrap_or_else(|| "captain".into());
            let op = Op::Comment {
                text: text("comment", &words.join(" "), MAX_TEXT)?,
                by: by.clone(),
                blocker,
            };
            change_of(&task, op, &by)
        }
        Cmd::Progress {
            task,
            percent,
            step,
            by,
        } => {
            let by = by.as_deref().map(worker).transpose()?;
            let step = step.map(|s| text("--step", &s, MAX_SUBJECT)).transpose()?;
            change_of(
                &task,
                Op::Progress { percent, step },
                by.as_deref().unwrap_or(""),
            )
        }
        Cmd::List { .. } | Cmd::Show { .. } | Cmd::Dispatch => {
            Err(Error::usage("not a board change"))
        }
    }
}

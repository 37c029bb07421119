//! `fm-board` (SPEC §11.1): the task board's command line. Parsing and
//! printing live here; transitions are in [`crate::board::ops`] and every
//! write goes through [`crate::board::store`] under the board lock.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::board::ops::Op;
use crate::board::store::{self, NewTask};
use crate::board::{BoardId, Status, Task, apply, dispatch};
use crate::cli::common::{self, Ctx, HomeArg};
use crate::clock;
use crate::error::{Error, Result};
use crate::route;
use crate::route::keys::{self, Answered, Keys, Printed};
use crate::task_id::TaskId;

mod host;
use host::{args_from_stdin, remote_board};

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
    match args_from_stdin(args) {
        Ok(args) => common::run_tool(TOOL, args, run),
        Err(e) => {
            crate::output::error(TOOL, &e.to_string());
            ExitCode::from(e.exit_code())
        }
    }
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

/// A board change, its arguments checked, not yet made.
enum Write {
    Add(NewTask),
    Change {
        task: BoardId,
        op: Op,
        actor: String,
    },
}

fn change_of(task: &str, op: Op, actor: &str) -> Result<Write> {
    Ok(Write::Change {
        task: BoardId::parse(task)?,
        op,
        actor: actor.to_string(),
    })
}

fn run(a: Args) -> Result<u8> {
    if let Some(name) = a.host.as_deref() {
        return remote_board(&a, name);
    }
    let now = clock::now();
    // What a keyed change asks for (the key is bound to it): the command
    // with its arguments as given, and the output form.
    let asked = format!("{:?} json={}", a.cmd, a.json);
    let write = match a.cmd {
        Cmd::List { status } => {
            let ctx = a.home.ctx(TOOL)?;
            return super::board_view::list(
                &ctx,
                status.as_deref().and_then(Status::parse),
                a.json,
            );
        }
        Cmd::Show { task } => {
            let id = BoardId::parse(&task)?;
            let ctx = a.home.ctx(TOOL)?;
            let t = store::load(&ctx.home, id)?;
            return super::board_view::show(&t, a.json);
        }
        Cmd::Dispatch => {
            let ctx = a.home.ctx(TOOL)?;
            return match a.idempotency_key.as_deref() {
                None => run_dispatch(&ctx, a.json, now),
                Some(k) => run_dispatch_keyed(&ctx, k, &asked, a.json, now),
            };
        }
        cmd => write_of(cmd)?,
    };
    let ctx = a.home.ctx(TOOL)?;
    // Across hosts: a key already served answers again and changes
    // nothing; a new one is kept with the answer before it is printed.
    let answered = keys::keyed_printed(
        &ctx.home,
        Keys::Board,
        a.idempotency_key.as_deref(),
        TOOL,
        &[asked.as_bytes()],
        || {
            let stdout = make(&ctx, write, a.json, now)?;
            Ok(((), Printed { code: 0, stdout }))
        },
    )?;
    let printed = match answered {
        Answered::Replayed(p) => return p.print(),
        Answered::Done {
            printed, not_kept, ..
        } => {
            if let Some(e) = not_kept {
                crate::output::err_line(&format!(
                    "{TOOL}: warning: board changed, but its idempotency key was not kept: {e}"
                ));
            }
            printed
        }
    };
    crate::output::out_block(&printed.stdout)?;
    Ok(0)
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

/// Makes the change (the library records its events and, for a blocker
/// comment, the wake) and returns what it prints.
fn make(ctx: &Ctx, write: Write, json: bool, now: u64) -> Result<String> {
    match write {
        Write::Add(new) => {
            let t = apply::add(&ctx.home, new, now)?;
            task_line(&t, json)
        }
        Write::Change { task, op, actor } => {
            let c = apply::change(&ctx.home, &ctx.cfg, task, &op, &actor, now)?;
            let mut report = task_line(&c.after, json)?;
            if !json {
                for r in &c.released {
                    report.push_str(&format!("released {} {}\n", r.id, r.status));
                }
            }
            Ok(report)
        }
    }
}

/// The line of one task: `<id> <status>`, or its JSON object.
fn task_line(t: &Task, json: bool) -> Result<String> {
    let mut line = if json {
        crate::output::json_line(t)?
    } else {
        format!("{} {}", t.id, t.status)
    };
    line.push('\n');
    Ok(line)
}

fn run_dispatch(ctx: &Ctx, json: bool, now: u64) -> Result<u8> {
    let outcomes = dispatch::dispatch(&ctx.home, &ctx.cfg, now)?;
    super::board_view::dispatch_report(&outcomes, json)?;
    Ok(u8::from(outcomes.iter().any(|o| o.action == "error")))
}

/// The far side of `fm-board --host <name> dispatch`: a dispatch under a
/// key ([`route::board::dispatch_keyed`]), its answer printed.
fn run_dispatch_keyed(ctx: &Ctx, key: &str, asked: &str, json: bool, now: u64) -> Result<u8> {
    let printed = route::board::dispatch_keyed(&ctx.home, &ctx.cfg, key, asked, now, &|o| {
        super::board_view::dispatch_text(o, json)
    })?;
    printed.print()
}

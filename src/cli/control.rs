//! `fm-control` (docs/spec/control.md): the captain's lifecycle verbs.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use super::common::{self, HomeArg};
use crate::control::Action;
use crate::error::Result;
use crate::route;
use crate::task_id::TaskId;

const TOOL: &str = "fm-control";

/// Spawn, interrupt, exit, relaunch and tear down a task's worker.
#[derive(Debug, Parser)]
#[command(
    name = "fm-control",
    version,
    after_help = "Examples:\n  fm-control fix-login spawn --project ~/src/app --harness claude\n  fm-control fix-login interrupt\n  fm-control fix-login relaunch --note \"tests pass; only the docs remain\"\n  fm-control fix-login exit --force\n  fm-control fix-login teardown"
)]
pub(crate) struct Args {
    /// Task id
    #[arg(value_name = "ID")]
    id: OsString,
    #[command(subcommand)]
    verb: Verb,
    /// Print the result as JSON
    #[arg(long, global = true)]
    json: bool,
    /// A key this host keeps with the answer: a second call with it
    /// prints that answer again and does nothing (calls across ssh)
    #[arg(long = "idempotency-key", value_name = "KEY", global = true)]
    idempotency_key: Option<String>,
    #[command(flatten)]
    home: HomeArg,
}

#[derive(Debug, Subcommand)]
enum Verb {
    /// Create the worktree and a tmux window running the harness
    Spawn {
        /// The project's git clone
        #[arg(long, value_name = "PATH")]
        project: PathBuf,
        /// Harness profile (default: the task's, else claude)
        #[arg(long, value_name = "H")]
        harness: Option<String>,
        /// Commit the worktree starts from (default: the configured default branch)
        #[arg(long, value_name = "REF")]
        base: Option<String>,
        /// Start the worker on this configured host ([hosts.<name>]); --project is a path there
        #[arg(long, value_name = "NAME")]
        host: Option<String>,
    },
    /// Send the harness's interrupt keys
    Interrupt,
    /// Quit the agent (interrupting first if busy); refused while someone's text is in its composer or a dialog is up
    Exit {
        /// Clear the composer (C-c) or cancel the dialog (Escape) first instead of refusing
        #[arg(long)]
        force: bool,
    },
    /// Add a progress note to the brief and restart the agent in the same pane
    Relaunch {
        #[arg(long, value_name = "T")]
        note: Option<String>,
        #[arg(long, value_name = "H")]
        harness: Option<String>,
        /// Clear the old agent's composer or cancel its dialog before it is asked to exit
        #[arg(long)]
        force: bool,
    },
    /// Stop the agent, remove the worktree and archive the task's state
    Teardown {
        /// Proceed even with uncommitted or unpushed work
        #[arg(long)]
        force: bool,
    },
}

pub(crate) fn command() -> clap::Command {
    Args::command()
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    common::run_tool(TOOL, args, run)
}

fn run(a: Args) -> Result<u8> {
    let id = TaskId::parse_os(&a.id)?;
    let ctx = a.home.ctx(TOOL)?;
    let mut host = None;
    let action = match a.verb {
        Verb::Spawn {
            project,
            harness,
            base,
            host: h,
        } => {
            host = h;
            Action::Spawn {
                project,
                harness,
                base,
            }
        }
        Verb::Interrupt => Action::Interrupt,
        Verb::Exit { force } => Action::Exit { force },
        Verb::Relaunch {
            note,
            harness,
            force,
        } => Action::Relaunch {
            note,
            harness,
            force,
        },
        Verb::Teardown { force } => Action::Teardown { force },
    };
    // A task on another host is acted on there, a hand-given key being
    // the far key; the report is printed the same either way.
    let r = route::lifecycle::run(
        &ctx.home,
        &ctx.cfg,
        &id,
        action,
        host.as_deref(),
        a.idempotency_key.as_deref(),
        crate::grant::Actor::from_env(),
    )?;
    for w in &r.warnings {
        crate::output::err_line(&format!("{TOOL}: warning: {w}"));
    }
    crate::output::out_block(&r.text(a.json)?)?;
    Ok(0)
}

//! `fm top` (also `fm-top`): the full-screen fleet dashboard. See
//! [`crate::top`] and `docs/top.md`.

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, Parser};

use super::common::{self, HomeArg};
use crate::error::{Error, Result};

const TOOL: &str = "fm-top";

/// The captain's dashboard: every worker, attention first.
#[derive(Debug, Parser)]
#[command(
    name = "fm-top",
    version,
    after_help = "Keys: ↑/↓ j/k move · Enter jump into the worker's pane · p peek · s send · r resolve a decision · w wakes · / filter · ? help · q quit\n\nExamples:\n  fm top\n  fm top --interval 5\n  NO_COLOR=1 fm top\n\nExit codes: 0 after q, 130 after Ctrl-C, 2 when not on a terminal, 3 environment failure."
)]
pub(crate) struct Args {
    /// Seconds between fresh reads when no file changes (more than 0, at most 3600)
    #[arg(long, value_name = "S", default_value_t = 2.0)]
    interval: f64,
    /// Do not use filesystem events; refresh on the interval only
    #[arg(long = "no-events")]
    no_events: bool,
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
    if !(a.interval.is_finite() && a.interval > 0.0 && a.interval <= 3600.0) {
        return Err(Error::usage(
            "--interval must be more than 0 and at most 3600 seconds",
        ));
    }
    let ctx = a.home.ctx(TOOL)?;
    let opts = crate::top::Options {
        poll: Duration::from_secs_f64(a.interval),
        events: !a.no_events,
    };
    crate::top::run(&ctx.home, &ctx.cfg, &opts)
}

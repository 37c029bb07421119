//! `fm land <id> [--merge]` (docs/spec/land.md#land): prints what
//! [`crate::route::land`] did, or its refusal (exit 1, nothing changed).

use std::ffi::OsString;

use super::common::{self, HomeArg};
use crate::error::Result;
use crate::grant::Actor;
use crate::route::Task;
use crate::route::land::{self, LandRequest};
use crate::task_id::TaskId;

/// `fm land`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct LandArgs {
    /// Task id
    #[arg(value_name = "ID")]
    id: OsString,
    /// local-only: make a merge commit when the base branch has moved on
    #[arg(long)]
    merge: bool,
    /// What was done, as JSON
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    home: HomeArg,
}

pub(crate) fn run(a: &LandArgs) -> Result<u8> {
    let id = TaskId::parse_os(&a.id)?;
    let ctx = a.home.ctx("fm")?;
    let task = Task::open(&ctx.home, &ctx.cfg, &id)?;
    let actor = Actor::from_env();
    let req = LandRequest {
        merge: a.merge,
        actor: match actor {
            Actor::Captain => "captain".into(),
            Actor::Mate => "mate".into(),
        },
    };
    let landed = land::land(&ctx.home, &ctx.cfg, &task, &req, actor)?;
    if a.json {
        common::out_json(&landed)?;
    } else {
        crate::output::out_lines(landed.text().lines())?;
    }
    Ok(0)
}

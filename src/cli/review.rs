//! `fm review <id>` (docs/spec/land.md#review): prints the review of
//! [`crate::route::review`], paged and coloured on a terminal, plain
//! otherwise; `--json` prints the summary without the patch.

use std::ffi::OsString;

use super::common::{self, HomeArg};
use crate::error::Result;
use crate::route::Task;
use crate::route::review::{self, ReviewRequest};
use crate::task_id::TaskId;

/// `fm review`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ReviewArgs {
    /// Task id
    #[arg(value_name = "ID")]
    id: OsString,
    /// The summary as JSON: commits, files, pushed, gate (no patch)
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    home: HomeArg,
}

pub(crate) fn run(a: &ReviewArgs) -> Result<u8> {
    let id = TaskId::parse_os(&a.id)?;
    let ctx = a.home.ctx("fm")?;
    let task = Task::open(&ctx.home, &ctx.cfg, &id)?;
    let req = ReviewRequest { patch: !a.json };
    let r = review::review(&ctx.home, &ctx.cfg, &task, &req)?;
    if a.json {
        common::out_json(&r)?;
        return Ok(0);
    }
    let color = common::colour_enabled() && crate::output::rich_terminal();
    let mut lines = r.summary(color);
    if r.patch.is_some() {
        lines.push(crate::output::Text::new());
        lines.extend(r.patch_lines(color));
    }
    crate::output::page(&lines)?;
    Ok(0)
}

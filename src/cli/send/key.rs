//! `fm-send --key`: one key pressed in a task's pane, no record.

use super::{Args, TOOL};
use crate::cli::common;
use crate::error::{Error, Result};
use crate::route::Task;
use crate::route::press::{self, PressRequest};
use crate::task_id::TaskId;

/// `--key`: the key pressed in the task's pane, here or on its host.
pub(super) fn press_key(a: &Args, key: &str) -> Result<u8> {
    if a.all {
        return Err(Error::usage(
            "--key presses a key in one task's pane, not --all",
        ));
    }
    if !a.text.is_empty() || a.file.is_some() {
        return Err(Error::usage("give either message text or --key, not both"));
    }
    let raw =
        a.id.as_deref()
            .ok_or_else(|| Error::usage("missing task id"))?;
    let id = TaskId::parse_os(raw)?;
    let ctx = a.home.ctx(TOOL)?;
    let task = Task::open(&ctx.home, &ctx.cfg, &id)?;
    let req = PressRequest {
        key: key.to_string(),
        from: a.from.clone(),
    };
    let p = press::press(&ctx.home, &ctx.cfg, &task, &req)?;
    if a.json {
        common::out_json(&p)?;
    } else {
        common::out(&p.to_string())?;
    }
    Ok(0)
}

//! A change of a task's brief (write, revoke) under an idempotency key,
//! here or on the task's host ([`crate::route::brief`]): the report
//! printed the same either way.

use super::{Args, TOOL};
use crate::brief::BriefSpec;
use crate::cli::common;
use crate::error::Result;
use crate::route::Task;
use crate::route::brief::{self, BriefReport};
use crate::task_id::TaskId;

/// Writes the brief `spec` renders, wherever its task lives.
pub(super) fn write(a: &Args, ctx: &common::Ctx, task: &Task, spec: &BriefSpec) -> Result<u8> {
    let r = brief::write(
        &ctx.home,
        &ctx.cfg,
        task,
        spec,
        a.force,
        &a.from,
        a.idempotency_key.as_deref(),
    )?;
    print(a, &r)
}

pub(super) fn revoke(a: &Args, id: &TaskId) -> Result<u8> {
    if let Some(k) = &a.idempotency_key {
        crate::route::keys::validate(k)?;
    }
    let ctx = a.home.ctx(TOOL)?;
    let task = Task::open(&ctx.home, &ctx.cfg, id)?;
    let r = brief::revoke(
        &ctx.home,
        &ctx.cfg,
        &task,
        &a.from,
        a.idempotency_key.as_deref(),
    )?;
    print(a, &r)
}

/// The report: its warnings on stderr, its lines (or JSON) on stdout.
fn print(a: &Args, r: &BriefReport) -> Result<u8> {
    for w in &r.warnings {
        crate::output::err_line(&format!("{TOOL}: warning: {w}"));
    }
    crate::output::out_block(&r.text(a.json)?)?;
    Ok(0)
}

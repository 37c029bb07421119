//! Bare `fm` (docs/spec/fm.md#bare-fm): what needs the captain now and the
//! commands that act on it, read by the fleet reader every view uses.

use super::common::{self, HomeArg};
use crate::error::{Error, Result};

const TOOL: &str = "fm";

/// Prints [`crate::needs_you`]'s report for the home `$FM_HOME` or the
/// current directory names; without a home, how to make one (exit 0: a
/// first `fm` is a greeting, not a mistake).
pub(crate) fn run() -> Result<u8> {
    let ctx = match HomeArg::default().ctx(TOOL) {
        Ok(ctx) => ctx,
        Err(Error::NoHome(_)) => {
            common::out(
                "no firstmate home here: make one with `fm init DIR`, or watch the whole loop run with `fm demo`",
            )?;
            common::out("every command: fm --help")?;
            return Ok(0);
        }
        Err(e) => return Err(e),
    };
    let now = crate::clock::now();
    let (rows, warnings) = crate::route::fleet::fleet(&ctx.home, &ctx.cfg, now)?;
    for w in &warnings {
        crate::output::err_line(&format!("{TOOL}: warning: {w}"));
    }
    crate::output::out_block(&crate::needs_you::of(rows, now).text())?;
    Ok(0)
}

//! `fm leg-wait <id>` (hidden): the Claude Code leg's waiter, run by the
//! worker's `SessionStart` and `Stop` hooks (docs/spec/ring.md#legs).

use std::ffi::OsString;

use clap::Args;

use super::common::HomeArg;
use crate::error::Result;
use crate::home::Home;
use crate::task_id::TaskId;

#[derive(Debug, Args)]
pub(crate) struct LegWaitArgs {
    #[arg(value_name = "ID")]
    id: OsString,
    /// Seconds to wait at most (default: an hour under the hook's timeout).
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
    #[command(flatten)]
    home: HomeArg,
}

/// Waits; exit 2 with the doorbell on stderr, else 0 saying nothing
/// (stderr reaches the model: nothing else is printed).
pub(crate) fn wait(a: &LegWaitArgs) -> Result<u8> {
    let id = TaskId::parse_os(&a.id)?;
    let home = Home::resolve(a.home.home.as_deref())?;
    crate::leg::claude::run(&home, &id, a.timeout)
}

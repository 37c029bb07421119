//! `fm attach <id>` and `fm peek <id> [--lines N]`: the dashboard's two
//! pane moves from a shell (see [`crate::tmux::visit`]).

use std::os::unix::process::CommandExt;

use serde::Serialize;

use super::common::{self, HomeArg};
use crate::error::{Error, Result};
use crate::task_id::TaskId;
use crate::tmux::visit::{self, Jump, Location};

fn locate(home: &HomeArg, tool: &str, id: &std::ffi::OsStr) -> Result<Location> {
    let id = TaskId::parse_os(id)?;
    let ctx = home.ctx(tool)?;
    let loc = Location::load(&ctx.home, &ctx.cfg, &id)?;
    loc.info()?;
    Ok(loc)
}

/// `fm attach`: switch the captain's client when inside tmux on the
/// worker's server; inside tmux on another server, a popup (or a window)
/// of the captain's own server; else attach (this process becomes `tmux
/// attach`).
pub(crate) fn attach(home: &HomeArg, id: &std::ffi::OsStr) -> Result<u8> {
    let loc = locate(home, "fm", id)?;
    match visit::plan_for(&loc)? {
        Jump::Switch => {
            visit::switch(&loc)?;
            common::out(&format!("switched to {} ({})", loc.id, loc.pane))?;
            Ok(0)
        }
        Jump::Popup { server } => {
            match visit::open_beside(&loc, &server)? {
                visit::Opened::Popup => common::out(&format!("back from {}", loc.id))?,
                visit::Opened::Window => common::out(&format!(
                    "opened {} in window fm-{} of your session (prefix then l comes back)",
                    loc.id, loc.id
                ))?,
            }
            Ok(0)
        }
        Jump::Attach => {
            let err = visit::attach_command(&loc).exec();
            Err(Error::External {
                program: "tmux".into(),
                msg: format!("cannot run tmux attach: {err}"),
            })
        }
    }
}

/// `fm peek --json`.
#[derive(Debug, Serialize)]
struct Peeked {
    task: String,
    pane: String,
    tmux_socket: String,
    lines: Vec<String>,
}

/// `fm peek`: the pane's screen (or its last `lines` lines), escape
/// sequences stripped.
pub(crate) fn peek(
    home: &HomeArg,
    id: &std::ffi::OsStr,
    lines: Option<usize>,
    json: bool,
) -> Result<u8> {
    let loc = locate(home, "fm", id)?;
    let screen = visit::peek(&loc.tmux(), &loc.pane, lines)?;
    if json {
        common::out_json(&Peeked {
            task: loc.id.to_string(),
            pane: loc.pane.clone(),
            tmux_socket: loc.socket.clone(),
            lines: screen,
        })?;
    } else {
        for l in &screen {
            common::out(l)?;
        }
    }
    Ok(0)
}

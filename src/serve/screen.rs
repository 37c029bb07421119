//! What a task page shows of the worker: its screen as text (`fm peek`'s
//! use case) and its last status lines, here or on the task's host.
//! Opening the task decides where ([`crate::route::Task::open`]); a
//! host is asked with the far tools themselves (`fm peek ID --json`,
//! `fm-status ID --log`), each a read, safe to repeat.

use crate::config::Config;
use crate::error::{Result, describe};
use crate::home::Home;
use crate::remote::call::Remote;
use crate::remote::ssh::Ssh;
use crate::route::Task;
use crate::task_id::TaskId;
use crate::tmux::visit;

/// Most status lines a task page lists.
pub const STATUS_LINES: usize = 30;

/// The worker's screen (or why it cannot be shown) and its last status
/// lines.
pub fn read(
    home: &Home,
    cfg: &Config,
    id: &TaskId,
) -> (std::result::Result<Vec<String>, String>, Vec<String>) {
    let task = match Task::open(home, cfg, id) {
        Ok(t) => t,
        Err(e) => return (Err(describe(&e)), Vec::new()),
    };
    match task.host() {
        Some(host) => (
            far_screen(home, host, id)
                .map_err(|e| format!("cannot show the screen: {}", describe(&e))),
            far_status(home, host, id).unwrap_or_default(),
        ),
        None => (
            visit::Location::load(home, cfg, id)
                .and_then(|loc| visit::peek(&loc.tmux(), &loc.pane, None))
                .map_err(|e| format!("cannot show the screen: {}", describe(&e))),
            local_status(home, id),
        ),
    }
}

fn last(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let skip = lines.len().saturating_sub(STATUS_LINES);
    lines[skip..].iter().map(|l| (*l).to_string()).collect()
}

fn local_status(home: &Home, id: &TaskId) -> Vec<String> {
    crate::fsx::read_optional(&home.status(id))
        .ok()
        .flatten()
        .map(|b| last(&String::from_utf8_lossy(&b)))
        .unwrap_or_default()
}

fn far(home: &Home, host: &Remote, tool: &str, args: &[&str]) -> Result<String> {
    let ssh = Ssh::new(home, &host.name, &host.cfg)?;
    let reply = ssh.tool_or_err(tool, args, None)?;
    if reply.code != 0 {
        return Err(crate::error::Error::refused(format!(
            "{tool} on {}: {}",
            host.name,
            reply.stderr.lines().last().unwrap_or("failed")
        )));
    }
    Ok(reply.stdout)
}

fn far_screen(home: &Home, host: &Remote, id: &TaskId) -> Result<Vec<String>> {
    #[derive(serde::Deserialize)]
    struct Peeked {
        lines: Vec<String>,
    }
    let out = far(home, host, "fm", &["peek", id.as_str(), "--json"])?;
    let p: Peeked = serde_json::from_str(out.trim())
        .map_err(|e| crate::error::Error::refused(format!("fm peek on {}: {e}", host.name)))?;
    Ok(p.lines)
}

fn far_status(home: &Home, host: &Remote, id: &TaskId) -> Result<Vec<String>> {
    far(home, host, "fm-status", &[id.as_str(), "--log"]).map(|t| last(&t))
}

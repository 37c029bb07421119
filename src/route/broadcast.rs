//! The hosts' part of a broadcast (`fm-send --all`, docs/remote.md,
//! "Broadcasts across hosts"): the remote tasks of each host are sent in
//! one keyed call there, `fm-send --all --only <ids>`, its lines relayed
//! as the far tool printed them.

use std::collections::BTreeMap;

use super::send::SendRequest;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::remote::call::{self, ATTEMPTS, Keyed, Remote};
use crate::task_id::TaskId;

/// The tasks whose meta names a host, by host name, each host's in id
/// order. A meta that cannot be read is left out: the local side of a
/// broadcast warns about it.
pub fn tasks_by_host(home: &Home) -> Result<BTreeMap<String, Vec<TaskId>>> {
    call::tasks_by_host(home)
}

/// A new key for a broadcast.
pub fn new_key() -> String {
    call::new_key_for("all")
}

/// What a host's part of a broadcast came to.
pub enum HostPart {
    /// The far tool answered: its stdout lines, its stderr lines, its
    /// exit code.
    Answered {
        lines: Vec<String>,
        stderr: Vec<String>,
        code: u8,
    },
    /// No attempt got an answer: the line to give for each of its tasks.
    Unreachable(String),
    /// The host is not configured, or the call could not be made.
    Failed(Error),
}

/// The host's part of a broadcast: one keyed `fm-send --all --only
/// <ids>` there, the body on stdin; `json` asks for JSON lines.
pub fn host_part(
    home: &Home,
    cfg: &Config,
    name: &str,
    ids: &[TaskId],
    key: &str,
    req: &SendRequest,
    json: bool,
) -> HostPart {
    let Some(host_cfg) = cfg.hosts.get(name) else {
        return HostPart::Failed(Error::refused(format!(
            "runs on host {name}, which config does not define ([hosts.{name}])"
        )));
    };
    let host = Remote {
        name: name.to_string(),
        cfg: host_cfg.clone(),
    };
    let list = ids.iter().map(TaskId::as_str).collect::<Vec<_>>().join(",");
    let mut args = vec![
        "--all",
        "--only",
        list.as_str(),
        "--from",
        req.from.as_str(),
    ];
    for (on, flag) in [
        (req.quiet, "--quiet"),
        (req.fire_and_forget, "--fire-and-forget"),
        (req.dedupe, "--dedupe"),
        (json, "--json"),
    ] {
        if on {
            args.push(flag);
        }
    }
    args.push("-");
    match call::keyed(home, &host, key, "fm-send", &args, Some(&req.body)) {
        Keyed::Answered(reply) => HostPart::Answered {
            lines: reply.stdout.lines().map(str::to_string).collect(),
            stderr: reply.stderr.lines().map(str::to_string).collect(),
            code: u8::try_from(reply.code).unwrap_or(crate::error::exit::ENV),
        },
        Keyed::Unreachable(why) => HostPart::Unreachable(format!(
            "host {name} unreachable: {why} ({ATTEMPTS} attempts; the message may have landed there: key {key})"
        )),
        Keyed::Failed(e) => HostPart::Failed(e),
    }
}

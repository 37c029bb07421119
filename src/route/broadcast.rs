//! A broadcast (`fm-send --all`, docs/remote.md, "Broadcasts across
//! hosts"): the local part — one record per live task of this home, or
//! the report kept for a task an earlier attempt under the same key sent —
//! and the hosts' part: the remote tasks of each host sent in one call
//! of the far entry ([`super::far`]), a [`BroadcastRequest`] naming them,
//! whose far side runs the same local part there and answers one
//! [`BroadcastReport`]. Both sides' reports are rendered by the caller
//! with the one renderer of a send's report.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::Task;
use super::keys::{self, Keys};
use super::send::{self, SendReport, SendRequest};
use super::wire::{self, Envelope, FarRequest};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::inbox::Ring;
use crate::remote::call::{self, ATTEMPTS, Remote};
use crate::task_id::TaskId;
use crate::tmux::pane::PaneInfo;
use crate::tmux::recipient::{self, Recipient};

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

/// What a host's part of a broadcast asks for: the send, to each task
/// named (the far side's own, live there or sent before under the key).
/// The body travels beside the JSON, byte-exact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BroadcastRequest {
    #[serde(flatten)]
    pub send: SendRequest,
    pub only: Vec<String>,
}

/// A task a broadcast could not send to: the error's line and exit code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotSent {
    pub task: String,
    pub error: String,
    pub code: u8,
}

/// What a host's part of a broadcast did: each record sent, in id order,
/// and each task it could not send to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BroadcastReport {
    pub sent: Vec<SendReport>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<NotSent>,
}

/// A local task of a broadcast: live, or sent already under this key.
pub(crate) enum Job {
    Live(Box<(Recipient, PaneInfo)>),
    Replay(SendReport),
}

/// The local tasks of a broadcast, in id order: every live task of this
/// home named by `only` (all, when none) but the ones in `remote`; under
/// a key, a task named by `only` that is not live now but was sent by an
/// earlier attempt with this key gets that report again.
pub(crate) fn local_jobs(
    home: &Home,
    cfg: &Config,
    req: &SendRequest,
    only: Option<&BTreeSet<TaskId>>,
    remote: &BTreeSet<&TaskId>,
    key: Option<&str>,
) -> Result<BTreeMap<TaskId, Job>> {
    let wanted = |id: &TaskId| only.is_none_or(|o| o.contains(id));
    let mut jobs: BTreeMap<TaskId, Job> = recipient::live(home, cfg)?
        .into_iter()
        .filter(|(r, _)| wanted(&r.id) && !remote.contains(&r.id))
        .map(|(r, info)| (r.id.clone(), Job::Live(Box::new((r, info)))))
        .collect();
    if let (Some(key), Some(only)) = (key, only) {
        let parts = send::parts(req);
        let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        for id in only {
            if jobs.contains_key(id) || remote.contains(id) {
                continue;
            }
            if let Some(report) = keys::find_kept(home, Keys::Task(id), key, "send", &parts)? {
                jobs.insert(id.clone(), Job::Replay(report));
            }
        }
    }
    Ok(jobs)
}

/// Sends `req` to the local task `id` of a broadcast (or gives its kept
/// report again), under `key`.
pub(crate) fn send_job(
    home: &Home,
    cfg: &Config,
    id: &TaskId,
    job: &Job,
    req: &SendRequest,
    key: Option<&str>,
) -> Result<SendReport> {
    match job {
        Job::Live(live) => {
            let task = Task::known_here(id.clone());
            let ring = Ring::Known(&live.0, &live.1);
            send::send_here(home, cfg, &task, req, key, ring)
        }
        Job::Replay(report) => Ok(report.clone()),
    }
}

/// The ids of a broadcast's `only`, checked.
pub fn parse_only(raw: &[String]) -> Result<BTreeSet<TaskId>> {
    raw.iter().map(|s| TaskId::parse(s.trim())).collect()
}

/// The far side of a host's part: the local part for the tasks the
/// request names, each under `key`.
pub(crate) fn serve_here(
    home: &Home,
    cfg: &Config,
    req: &BroadcastRequest,
    key: &str,
) -> Result<BroadcastReport> {
    let only = parse_only(&req.only)?;
    let hosts = tasks_by_host(home)?;
    let remote: BTreeSet<&TaskId> = hosts.values().flatten().collect();
    let jobs = local_jobs(home, cfg, &req.send, Some(&only), &remote, Some(key))?;
    let mut report = BroadcastReport {
        sent: Vec::new(),
        failed: Vec::new(),
    };
    for (id, job) in &jobs {
        match send_job(home, cfg, id, job, &req.send, Some(key)) {
            Ok(r) => report.sent.push(r),
            Err(e) => {
                let e = crate::error::naming(e, id.as_str());
                report.failed.push(NotSent {
                    task: id.to_string(),
                    error: crate::error::describe(&e),
                    code: e.exit_code(),
                });
            }
        }
    }
    Ok(report)
}

/// What a host's part of a broadcast came to.
pub enum HostPart {
    /// The far entry answered.
    Answered(BroadcastReport),
    /// No attempt got an answer: the line to give for each of its tasks.
    Unreachable(String),
    /// The host is not configured, the call could not be made, or the
    /// far side refused it.
    Failed(Error),
}

/// The host's part of a broadcast: one call of the far entry there with
/// the tasks `ids`, under `key`, retried while the host is unreachable.
pub fn host_part(
    home: &Home,
    cfg: &Config,
    name: &str,
    ids: &[TaskId],
    key: &str,
    req: &SendRequest,
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
    let env = Envelope::new(
        key.to_string(),
        String::new(),
        BroadcastRequest {
            send: req.clone(),
            only: ids.iter().map(TaskId::to_string).collect(),
        },
    );
    match wire::attempts(home, &host, &env, &req.body) {
        Ok(Ok(report)) => HostPart::Answered(report),
        Ok(Err(why)) => HostPart::Unreachable(format!(
            "host {name} unreachable: {why} ({ATTEMPTS} attempts; the message may have landed there: key {key})"
        )),
        Err(e) => HostPart::Failed(e),
    }
}

impl FarRequest for BroadcastRequest {
    const OP: &'static str = "broadcast";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broadcast_request_travels_as_data_its_body_beside() {
        let req = BroadcastRequest {
            send: SendRequest {
                from: "captain".into(),
                body: b"hi\n".to_vec(),
                quiet: true,
                fire_and_forget: false,
                dedupe: false,
                resolve: vec![],
                answer: None,
                tool: crate::events::Tool::Send,
            },
            only: vec!["r1".into(), "r2".into()],
        };
        let line = serde_json::to_string(&req).unwrap();
        assert!(!line.contains("hi"), "{line}");
        let back: BroadcastRequest = serde_json::from_str(&line).unwrap();
        assert_eq!(back.only, req.only);
        assert_eq!(back.send.from, "captain");
        assert!(back.send.quiet && back.send.body.is_empty());
    }
}

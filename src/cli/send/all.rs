//! `fm-send --all`: one record per task whose pane exists and whose agent
//! is alive, here and on every configured host (docs/remote.md,
//! "Broadcasts across hosts").

use std::collections::{BTreeMap, BTreeSet};

use super::{Args, TOOL, print_report};
use crate::cli::common::{self, Ctx};
use crate::error::{Error, Result};
use crate::inbox::Ring;
use crate::route::Task;
use crate::route::broadcast::{self, HostPart};
use crate::route::keys::{self, Keys};
use crate::route::send::{self, SendReport, SendRequest};
use crate::task_id::TaskId;
use crate::tmux::recipient::{self, Recipient};

/// The remote tasks of each host are sent in one keyed ssh call there,
/// the hosts in parallel and while the local records are written; their
/// lines are printed after the local ones, hosts in name order. A task
/// that could not be sent is reported on stderr and the others are still
/// sent; the exit code is the highest of the failures (3 for the tasks of
/// an unreachable host).
pub(super) fn send_all(ctx: &Ctx, a: &Args, req: &SendRequest) -> Result<u8> {
    let only = parse_only(&a.only)?;
    if let Some(k) = &a.idempotency_key {
        keys::validate(k)?;
    }
    let wanted = |id: &TaskId| only.as_ref().is_none_or(|o| o.contains(id));
    let mut hosts = broadcast::tasks_by_host(&ctx.home)?;
    for ids in hosts.values_mut() {
        ids.retain(|id| wanted(id));
    }
    hosts.retain(|_, ids| !ids.is_empty());
    let remote_ids: BTreeSet<&TaskId> = hosts.values().flatten().collect();
    let mut jobs: BTreeMap<TaskId, Job> = recipient::live(&ctx.home, &ctx.cfg)?
        .into_iter()
        .filter(|(r, _)| wanted(&r.id) && !remote_ids.contains(&r.id))
        .map(|(r, info)| (r.id.clone(), Job::Live(Box::new((r, info)))))
        .collect();
    // Under a key, a task named by --only that is not live now but was
    // sent by an earlier attempt with this key gets that report again.
    if let (Some(key), Some(only)) = (&a.idempotency_key, &only) {
        let parts = send::parts(req);
        let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        for id in only {
            if jobs.contains_key(id) || remote_ids.contains(id) {
                continue;
            }
            if let Some(report) = keys::find_kept(&ctx.home, Keys::Task(id), key, "send", &parts)? {
                jobs.insert(id.clone(), Job::Replay(report));
            }
        }
    }
    let key = a.idempotency_key.clone().unwrap_or_else(broadcast::new_key);
    let mut tally = Tally::default();
    std::thread::scope(|s| {
        let far: Vec<_> = hosts
            .iter()
            .map(|(name, ids)| {
                let key = key.as_str();
                let call = s.spawn(move || {
                    broadcast::host_part(&ctx.home, &ctx.cfg, name, ids, key, req, a.json)
                });
                (ids, call)
            })
            .collect();
        for (id, job) in &jobs {
            let sent = match job {
                Job::Live(live) => {
                    let task = Task::known_here(id.clone());
                    let ring = Ring::Known(&live.0, &live.1);
                    send::send_here(
                        &ctx.home,
                        &ctx.cfg,
                        &task,
                        req,
                        a.idempotency_key.as_deref(),
                        ring,
                    )
                    .and_then(|r| print_report(a, &r))
                }
                Job::Replay(report) => print_report(a, report),
            };
            tally.local(id, sent);
        }
        for (ids, call) in far {
            let got = call
                .join()
                .unwrap_or_else(|_| HostPart::Failed(Error::refused("the host's call panicked")));
            tally.far(ids, got);
        }
    });
    if tally.pipe_closed && tally.code == 0 {
        return Err(Error::ClosedPipe);
    }
    if tally.sent == 0 && tally.code == 0 && only.is_none() {
        return Err(Error::refused("no task has a live pane; nothing sent"));
    }
    Ok(tally.code)
}

/// A local task of a broadcast: live, or sent already under this key.
enum Job {
    Live(Box<(Recipient, crate::tmux::pane::PaneInfo)>),
    Replay(SendReport),
}

/// The ids of `--only`, checked; `None` when not given.
fn parse_only(raw: &[String]) -> Result<Option<BTreeSet<TaskId>>> {
    if raw.is_empty() {
        return Ok(None);
    }
    raw.iter()
        .map(|s| TaskId::parse(s.trim()))
        .collect::<Result<BTreeSet<_>>>()
        .map(Some)
}

/// The running account of a broadcast.
#[derive(Default)]
struct Tally {
    /// Records reported (local lines and far lines).
    sent: usize,
    code: u8,
    pipe_closed: bool,
}

impl Tally {
    fn local(&mut self, id: &TaskId, got: Result<u8>) {
        match got {
            Ok(c) => {
                self.sent += 1;
                self.code = self.code.max(c);
            }
            // A reader that stopped reading (`| head -1`) must not stop
            // the broadcast: every recipient still gets its record; only
            // the printing stops (each record is queued before its line
            // is printed).
            Err(Error::ClosedPipe) => {
                self.sent += 1;
                self.pipe_closed = true;
            }
            Err(e) => {
                let e = common::naming(e, id.as_str());
                crate::output::err_line(&format!("{TOOL}: error: {}", common::describe(&e)));
                self.code = self.code.max(e.exit_code());
            }
        }
    }

    fn far(&mut self, ids: &[TaskId], got: HostPart) {
        let each = |why: &str| {
            for id in ids {
                crate::output::err_line(&format!("{TOOL}: error: {id}: {why}"));
            }
        };
        match got {
            HostPart::Answered {
                lines,
                stderr,
                code,
            } => {
                self.sent += lines.len();
                if !self.pipe_closed && !lines.is_empty() {
                    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
                    match crate::output::out_lines(&lines) {
                        Ok(()) => {}
                        Err(Error::ClosedPipe) => self.pipe_closed = true,
                        Err(e) => crate::output::err_line(&format!("{TOOL}: error: {e}")),
                    }
                }
                for line in &stderr {
                    crate::output::err_line(line);
                }
                self.code = self.code.max(code);
            }
            HostPart::Unreachable(why) => {
                each(&why);
                self.code = self.code.max(crate::error::exit::ENV);
            }
            HostPart::Failed(e) => {
                each(&common::describe(&e));
                self.code = self.code.max(e.exit_code());
            }
        }
    }
}

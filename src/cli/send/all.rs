//! `fm-send --all`: one record per task whose pane exists and whose agent
//! is alive, here and on every configured host (docs/remote.md,
//! "Broadcasts across hosts").

use std::collections::BTreeSet;

use super::{Args, TOOL, print_report};
use crate::cli::common::{self, Ctx};
use crate::error::{Error, Result};
use crate::route::broadcast::{self, BroadcastReport, HostPart};
use crate::route::keys;
use crate::route::send::SendRequest;
use crate::task_id::TaskId;

/// The remote tasks of each host are sent in one call of the far entry
/// there, the hosts in parallel and while the local records are written;
/// their lines are printed after the local ones, hosts in name order. A
/// task that could not be sent is reported on stderr and the others are
/// still sent; the exit code is the highest of the failures (3 for the
/// tasks of an unreachable host).
pub(super) fn send_all(ctx: &Ctx, a: &Args, req: &SendRequest) -> Result<u8> {
    let only = if a.only.is_empty() {
        None
    } else {
        Some(broadcast::parse_only(&a.only)?)
    };
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
    let jobs = broadcast::local_jobs(
        &ctx.home,
        &ctx.cfg,
        req,
        only.as_ref(),
        &remote_ids,
        a.idempotency_key.as_deref(),
    )?;
    let key = a.idempotency_key.clone().unwrap_or_else(broadcast::new_key);
    let mut tally = Tally::default();
    std::thread::scope(|s| {
        let far: Vec<_> = hosts
            .iter()
            .map(|(name, ids)| {
                let key = key.as_str();
                let call =
                    s.spawn(move || broadcast::host_part(&ctx.home, &ctx.cfg, name, ids, key, req));
                (ids, call)
            })
            .collect();
        for (id, job) in &jobs {
            let sent = broadcast::send_job(
                &ctx.home,
                &ctx.cfg,
                id,
                job,
                req,
                a.idempotency_key.as_deref(),
            )
            .and_then(|r| print_report(a, &r));
            tally.local(id, sent);
        }
        for (ids, call) in far {
            let got = call
                .join()
                .unwrap_or_else(|_| HostPart::Failed(Error::refused("the host's call panicked")));
            tally.far(a, ids, got);
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

    fn far(&mut self, a: &Args, ids: &[TaskId], got: HostPart) {
        let each = |why: &str| {
            for id in ids {
                crate::output::err_line(&format!("{TOOL}: error: {id}: {why}"));
            }
        };
        match got {
            HostPart::Answered(BroadcastReport { sent, failed }) => {
                for r in &sent {
                    self.sent += 1;
                    if self.pipe_closed {
                        continue;
                    }
                    match print_report(a, r) {
                        Ok(c) => self.code = self.code.max(c),
                        Err(Error::ClosedPipe) => self.pipe_closed = true,
                        Err(e) => crate::output::err_line(&format!("{TOOL}: error: {e}")),
                    }
                }
                for f in &failed {
                    crate::output::err_line(&format!("{TOOL}: error: {}", f.error));
                    self.code = self.code.max(f.code);
                }
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

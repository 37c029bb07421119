//! `fm land` wherever the task lives (docs/spec/land.md#land): the first
//! mate's landing needs the captain's grant, taken here in the captain's
//! home before anything moves (and given back when the landing fails);
//! a task on a host is landed there by its far entry, where its worktree
//! and clone are. A landing asked twice lands once: the second finds the
//! base already holding the tip (local-only) or the branch pushed and its
//! PR recorded.

use super::wire::{self, Envelope, FarRequest};
use super::{Place, Task};
use crate::config::Config;
use crate::error::Result;
use crate::grant::{self, Actor, Verb};
use crate::home::Home;

pub use crate::voyage::land::{How, LandRequest, Landed};

/// Time a far landing may take beyond the host's bound: the gate, a push
/// and `gh` there.
const LAND_EXTRA: std::time::Duration = std::time::Duration::from_secs(300);

/// Lands `task` for `actor`, here or on its host.
pub fn land(
    home: &Home,
    cfg: &Config,
    task: &Task,
    req: &LandRequest,
    actor: Actor,
) -> Result<Landed> {
    let now = crate::clock::now();
    let taken = grant::check(home, actor, task.id(), Verb::Land, "land", now)?;
    let r = match task.place() {
        Place::Host(host) => wire::call_once(
            home,
            host,
            &Envelope::new(
                crate::remote::call::new_key(task.id()),
                task.id().to_string(),
                req.clone(),
            ),
            LAND_EXTRA,
        ),
        Place::Here => crate::voyage::land::land_here(home, cfg, task, req),
    };
    if let (Err(_), Some(g)) = (&r, taken) {
        // The landing's own error is the one to report.
        let _ = grant::give_back(home, g, crate::clock::now());
    }
    r
}

impl FarRequest for LandRequest {
    const OP: &'static str = "land";
}

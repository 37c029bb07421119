//! `fm review` wherever the task lives (docs/spec/land.md#review): a
//! read, so a task on a host is reviewed there by its far entry, once,
//! and the report comes back as data.

use super::wire::{self, Envelope, FarRequest};
use super::{Place, Task};
use crate::config::Config;
use crate::error::Result;
use crate::home::Home;

pub use crate::voyage::review::{Review, ReviewRequest};

/// Time a far review may take beyond the host's bound: a log, two diffs
/// and the gate's git calls there.
const REVIEW_EXTRA: std::time::Duration = std::time::Duration::from_secs(120);

/// Reviews `task`, here or on its host.
pub fn review(home: &Home, cfg: &Config, task: &Task, req: &ReviewRequest) -> Result<Review> {
    match task.place() {
        Place::Host(host) => wire::call_once(
            home,
            host,
            &Envelope::new(
                crate::remote::call::new_key(task.id()),
                task.id().to_string(),
                req.clone(),
            ),
            REVIEW_EXTRA,
        ),
        Place::Here => crate::voyage::review::review_here(home, cfg, task, req),
    }
}

impl FarRequest for ReviewRequest {
    const OP: &'static str = "review";
}

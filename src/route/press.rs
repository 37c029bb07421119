//! Pressing one key in a task's pane (`fm-send --key`), here or on its
//! host: no record, nothing kept, never retried (a second press is a
//! second key).

use serde::{Deserialize, Serialize};

use super::wire::{self, Envelope, FarRequest};
use super::{Place, Task};
use crate::config::Config;
use crate::error::Result;
use crate::home::Home;
use crate::tmux::recipient::Recipient;

/// What a press asks for: the key and who presses it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PressRequest {
    pub key: String,
    pub from: String,
}

/// The key pressed and the pane it went to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pressed {
    pub task: String,
    pub key: String,
    pub pane: String,
}

/// `key <key> · <task> <pane>`.
impl std::fmt::Display for Pressed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "key {} \u{b7} {} {}", self.key, self.task, self.pane)
    }
}

/// Presses `req.key` in `task`'s pane, here or on its host.
pub fn press(home: &Home, cfg: &Config, task: &Task, req: &PressRequest) -> Result<Pressed> {
    match task.place() {
        Place::Host(host) => wire::call_once(
            home,
            host,
            &Envelope::new(
                crate::remote::call::new_key(task.id()),
                task.id().to_string(),
                req.clone(),
            ),
            std::time::Duration::ZERO,
        ),
        Place::Here => press_here(home, cfg, task, req),
    }
}

/// The local press; a task that lives on a host is refused.
pub(crate) fn press_here(
    home: &Home,
    cfg: &Config,
    task: &Task,
    req: &PressRequest,
) -> Result<Pressed> {
    task.here()?;
    let r = Recipient::load(home, cfg, task.id())?;
    let pane = r.press(home, &req.key, &req.from)?;
    Ok(Pressed {
        task: task.id().to_string(),
        key: req.key.clone(),
        pane,
    })
}

impl FarRequest for PressRequest {
    const OP: &'static str = "press";
}

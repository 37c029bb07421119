//! The Codex leg (`leg = "queue"`, docs/spec/ring.md#legs): the doorbell
//! handed to the running TUI by `codex queue --thread <id>`.
//!
//! Not built yet: [`available`] says so, and every ring of a Codex worker
//! falls back to the typed doorbell.

use super::Delivered;
use crate::config::Config;
use crate::home::Home;
use crate::meta::TaskMeta;
use crate::task_id::TaskId;

/// Whether the leg can take a doorbell for task `id` now; `Err` says why
/// not (the ring then types the doorbell).
pub fn available(home: &Home, id: &TaskId, meta: &TaskMeta) -> Result<(), String> {
    let _ = (home, id, meta);
    Err("not built".into())
}

/// Hands doorbell `text` to task `id`'s agent through the leg; `Err` says
/// why it could not (the ring then types the doorbell).
pub fn ring(
    home: &Home,
    cfg: &Config,
    id: &TaskId,
    meta: &TaskMeta,
    text: &str,
) -> Result<Delivered, String> {
    let _ = (home, cfg, id, meta, text);
    Err("not built".into())
}

//! The Claude Code leg (`leg = "hook"`, docs/spec/ring.md#legs).

use super::Delivered;
use crate::config::Config;
use crate::home::Home;
use crate::meta::TaskMeta;
use crate::task_id::TaskId;

/// Whether a live waiter of this spawn listens for task `id`.
pub fn available(home: &Home, id: &TaskId, meta: &TaskMeta) -> Result<(), String> {
    let _ = (home, id, meta);
    Err("not built".into())
}

/// Wakes the waiter with doorbell `text`.
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

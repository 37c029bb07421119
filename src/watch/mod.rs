//! The watcher (docs/spec/watch.md): re-rings unacknowledged messages, escalates once,
//! and feeds the captain through `state/wakes.log`.
//!
//! - [`ladder`]: the ladder (docs/spec/watch.md#ladder) as a pure function of a task's files,
//!   pane facts and the time.
//! - [`status_wakes`]: status lines → `status` wakes, exactly once, via
//!   persisted read offsets.
//! - [`pass`]: one pass over every task; `act` carries out each task's
//!   ladder action (the only place that rings or escalates); `state` holds
//!   what passes share (kept state, the pass report); `memo` the inbox as
//!   a steady pass last read it; `scan` lists the tasks and `read` reads
//!   their files. Imports run one way: `pass` → `read`, `scan`, `act` →
//!   `state` → `memo`, `flusher`; the watcher's name sits here.
//! - [`daemon`]: signals, filesystem notices
//!   ([`crate::fsnotice::state`]) and polling.
//! - `lock`: the singleton lock (`state/.watch.lock`).
//! - [`hook`]: the `on_wake` argv hook.

mod act;
mod agent_wakes;
pub(crate) mod daemon;
mod flusher;
pub(crate) mod hook;
pub(crate) mod ladder;
mod lock;
mod memo;
pub mod pass;
mod read;
mod scan;
mod state;
pub mod status_wakes;

/// The watcher's name in its warnings.
const TOOL: &str = "fm-watch";

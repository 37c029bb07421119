//! The watcher (SPEC §6): re-rings unacknowledged messages, escalates once,
//! and feeds the captain through `state/wakes.log`.
//!
//! - [`ladder`]: the §6.2 ladder as a pure function of a task's files,
//!   pane facts and the time.
//! - [`status_feed`]: status lines → `status` wakes, exactly once, via
//!   persisted read offsets.
//! - [`pass`]: one pass over every task; `act` carries out each task's
//!   ladder action (the only place that rings or escalates); `state` holds
//!   what passes share (kept state, the pass report).
//! - [`daemon`]: singleton lock, signals, filesystem events and polling.
//! - [`hook`]: the `on_wake` argv hook.

mod act;
mod agent_wakes;
pub(crate) mod daemon;
pub(crate) mod events;
mod flusher;
pub(crate) mod hook;
pub(crate) mod ladder;
pub mod pass;
mod state;
pub mod status_feed;

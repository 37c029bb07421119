//! `fm top`: the captain's cockpit, a full-screen fleet dashboard.
//!
//! Its rows are crew state's ([`crate::route::fleet::fleet`]), sorted
//! attention first with the reason in words ([`crate::crew_state::attention`]);
//! its actions are the library's use cases — [`crate::inbox::send`] for a
//! message, the status log's `resolved` line for an answer, the pane moves
//! of [`crate::tmux::visit`] for peeking and jumping — so the dashboard
//! decides nothing the plain tools would decide differently.
//!
//! - [`app`]: the state and what each key does (no terminal, no I/O).
//! - [`actions`]: a new worker's questions and the lifecycle verbs on a
//!   row, and the use cases they call.
//! - [`view`]: one frame, drawn from the app (snapshot-tested).
//! - [`palette`]: colours per state, or monochrome (`NO_COLOR`).
//! - [`review`]: `d`'s review view and `L`'s question.
//! - [`seen`]: the dashboard's own "seen" cursor over the wakes feed.
//! - [`source`]: the reader thread and the filesystem watcher.
//! - [`run`]: the terminal, the loop and the actions.

pub mod actions;
pub mod app;
pub mod palette;
pub mod review;
mod run;
pub mod seen;
pub mod source;
pub mod view;

pub use app::App;
pub use palette::Palette;
pub(crate) use run::send_keyed;
pub use run::{Options, run};

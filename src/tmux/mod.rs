//! The tmux side: what firstmate asks tmux ([`pane`]), many panes in one
//! call ([`batch`]), how it reads a pane's screen ([`screen`]), the doorbell
//! it rings in a worker's pane ([`deliver`]), a task as a doorbell target
//! ([`recipient`]), and where a worker lives and how to look at it or go
//! there ([`visit`]).
//!
//! Everything here talks to a worker's pane by its id (`%N`) on the task's
//! `-L` socket; nothing else in the library runs tmux.

pub mod batch;
pub mod deliver;
pub mod owner;
pub mod pane;
pub(crate) mod recipient;
pub(crate) mod screen;
pub mod visit;

//! The tmux side: what firstmate asks tmux ([`pane`]).
//!
//! Everything here talks to a worker's pane by its id (`%N`) on the task's
//! `-L` socket; nothing else in the library runs tmux.

pub mod pane;

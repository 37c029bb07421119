//! firstmate: run a fleet of AI coding agents working in tmux panes.
//!
//! Small binaries (`fm-*`, and `fm` as the front door) share this library,
//! which reads and writes plain files under a home's `data/` and `state/`
//! (docs/spec/home.md#layout). Modules are the nouns of the spec; [`fsx`] is the only one
//! that writes files, [`home::Home`] the only one that joins paths, and
//! `proc` the only one that runs child processes to completion.
//!
//! Three layers:
//! - Foundations: [`home`], [`task_id`], [`fsx`], [`config`], `harness`,
//!   [`clock`], `git`, `proc`, [`shq`], `error`, [`events`] (the audit trail, one
//!   typed enum), [`output`] (the only way text reaches a terminal; it
//!   makes every control character in it visible).
//! - Features, each owning its file formats and its use cases: [`meta`]
//!   (`<id>.meta`, read as one `TaskMeta`), [`status`] (the status log and
//!   busy record), [`inbox`] (records, the ladder files, sending,
//!   acknowledging), [`brief`] (briefs and responses), `dod` (the
//!   definition of done and its gate), [`board`], [`wakes`], [`watch`],
//!   [`crew_state`], [`notify`] (wakes to the captain's channels),
//!   `control` (lifecycle), `voyage` (review and landing), [`tmux`] (panes, the screen,
//!   the doorbell, the moves to a worker's pane), [`top`] (the
//!   dashboard), [`remote`] (tasks on other hosts over ssh), plus `doctor`, `demo` and [`stand_in`].
//! - [`cli`]: each tool's argument parsing and printing; it calls the
//!   features' use cases and decides nothing itself.

#![forbid(unsafe_code)]
// Unit tests set up trees and print as they like: clippy.toml's rules
// (the filesystem through fsx, the terminal through output) are the
// shipped code's.
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_macros))]

#[cfg(not(all(unix, target_pointer_width = "64")))]
compile_error!("firstmate supports 64-bit Unix targets only");

pub(crate) mod agent_report;
pub mod board;
pub mod brief;
pub mod cli;
pub mod clock;
pub mod config;
pub(crate) mod control;
pub mod crew_state;
pub(crate) mod demo;
pub(crate) mod doctor;
pub(crate) mod dod;
pub(crate) mod error;
pub mod events;
pub mod frontmatter;
pub(crate) mod fsnotice;
pub mod fsx;
pub(crate) mod git;
pub(crate) mod gitfiles;
pub mod grant;
pub(crate) mod harness;
pub mod home;
pub mod inbox;
pub(crate) mod leg;
pub(crate) mod listing;
pub mod mate;
pub mod meta;
pub(crate) mod needs_you;
pub mod notify;
pub mod output;
pub(crate) mod proc;
pub mod remote;
pub mod route;
pub mod serve;
pub mod shq;
pub(crate) mod stamp;
pub mod stand_in;
pub mod status;
pub mod task_id;
pub mod tmux;
pub mod top;
pub mod voyage;
pub mod wakes;
pub mod watch;

pub use error::{Error, Result};
pub use home::Home;
pub use task_id::TaskId;

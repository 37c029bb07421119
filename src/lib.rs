//! firstmate: run a fleet of AI coding agents working in tmux panes.
//!
//! Small binaries (`fm-*`, and `fm` as the front door) share this library,
//! which reads and writes plain files under a home's `data/` and `state/`
//! (SPEC §1.2). Modules are the nouns of the spec; [`fsx`] is the only one
//! that writes files, [`home::Home`] the only one that joins paths, and
//! [`proc`] the only one that runs child processes to completion.

#![forbid(unsafe_code)]

pub mod board;
pub mod brief;
pub mod busy;
pub mod cli;
pub mod clock;
pub mod config;
pub mod control;
pub mod crew_state;
pub mod deliver;
pub mod demo;
pub mod doctor;
pub mod dod;
pub mod error;
pub mod events;
pub mod frontmatter;
pub mod fsx;
pub mod git;
pub mod harness;
pub mod home;
pub mod inbox;
pub mod ladder_files;
pub mod meta;
pub mod pane;
pub mod proc;
pub mod recipient;
pub mod response;
pub mod shq;
pub mod stand_in;
pub mod status;
pub mod task_id;
pub mod wakes;
pub mod watch;

pub use error::{Error, Result};
pub use home::Home;
pub use task_id::TaskId;

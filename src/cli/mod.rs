//! Command-line front ends. Each tool module owns its clap definition and a
//! `main(args)` that the thin binary in `src/bin/` and `fm <tool>` both
//! call, so the two entry points can never drift apart.

use std::ffi::OsString;
use std::process::ExitCode;

pub mod ack;
pub mod board;
mod board_view;
pub mod brief;
pub mod common;
pub mod control;
pub mod crew_state;
pub mod dod;
pub mod fm;
pub mod send;
pub mod status;
pub mod watch;

/// A tool reachable as `fm-<name>` and as `fm <name>`.
pub struct Tool {
    pub name: &'static str,
    pub about: &'static str,
    /// `None` while the tool is not built yet.
    pub main: Option<fn(Vec<OsString>) -> ExitCode>,
    pub command: Option<fn() -> clap::Command>,
}

/// Every tool, in the order `fm --help` lists them.
pub const TOOLS: &[Tool] = &[
    Tool {
        name: "brief",
        about: "write and check a task's brief",
        main: Some(brief::main),
        command: Some(brief::command),
    },
    Tool {
        name: "send",
        about: "queue a steering message and ring the doorbell",
        main: Some(send::main),
        command: Some(send::command),
    },
    Tool {
        name: "ack",
        about: "acknowledge, list and read inbox messages",
        main: Some(ack::main),
        command: Some(ack::command),
    },
    Tool {
        name: "status",
        about: "append to and fold a task's status log",
        main: Some(status::main),
        command: Some(status::command),
    },
    Tool {
        name: "crew-state",
        about: "what every worker is doing right now",
        main: Some(crew_state::main),
        command: Some(crew_state::command),
    },
    Tool {
        name: "dod",
        about: "render and verify the definition of done",
        main: Some(dod::main),
        command: Some(dod::command),
    },
    Tool {
        name: "control",
        about: "spawn, interrupt, exit, relaunch, tear down",
        main: Some(control::main),
        command: Some(control::command),
    },
    Tool {
        name: "watch",
        about: "re-ring unread messages and feed the captain",
        main: Some(watch::main),
        command: Some(watch::command),
    },
    Tool {
        name: "board",
        about: "task board with claims and dependencies",
        main: Some(board::main),
        command: Some(board::command),
    },
];

pub fn tool(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

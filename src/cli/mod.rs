//! Command-line front ends. Each tool module owns its clap definition and a
//! `main(args)` that the thin binary in `src/bin/` and `fm <tool>` both
//! call, so the two entry points can never drift apart.

use std::ffi::OsString;
use std::process::ExitCode;

pub mod common;
pub mod fm;
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
        main: None,
        command: None,
    },
    Tool {
        name: "send",
        about: "queue a steering message and ring the doorbell",
        main: None,
        command: None,
    },
    Tool {
        name: "ack",
        about: "acknowledge, list and read inbox messages",
        main: None,
        command: None,
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
        main: None,
        command: None,
    },
    Tool {
        name: "dod",
        about: "render and verify the definition of done",
        main: None,
        command: None,
    },
    Tool {
        name: "control",
        about: "spawn, interrupt, exit, relaunch, tear down",
        main: None,
        command: None,
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
        main: None,
        command: None,
    },
];

pub fn tool(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

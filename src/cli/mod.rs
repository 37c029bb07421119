//! Command-line front ends. Each tool module owns its clap definition and a
//! `main(args)` that the thin binary in `src/bin/` and `fm <tool>` both
//! call, so the two entry points can never drift apart. A tool parses its
//! arguments, calls the library's use case and prints the report (human or
//! `--json`, from the same struct); what a command does lives in the
//! library.

// clap prints the doc comments of arguments as `--help`, exactly as written.
#![allow(clippy::doc_markdown, reason = "doc comments here are --help text")]

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
pub(crate) mod grant;
pub(crate) mod land;
pub(crate) mod leg;
pub(crate) mod mate;
mod needs_you;
pub(crate) mod restore;
pub(crate) mod review;
pub mod send;
pub(crate) mod serve;
pub(crate) mod setup;
pub mod status;
pub mod top;
pub(crate) mod visit;
pub mod watch;

/// A tool reachable as `fm-<name>` and as `fm <name>`.
pub struct Tool {
    pub name: &'static str,
    pub(crate) about: &'static str,
    pub(crate) main: fn(Vec<OsString>) -> ExitCode,
    pub(crate) command: fn() -> clap::Command,
}

/// Every tool, in the order `fm --help` lists them.
pub const TOOLS: &[Tool] = &[
    Tool {
        name: "brief",
        about: "write and check a task's brief",
        main: brief::main,
        command: brief::command,
    },
    Tool {
        name: "send",
        about: "queue a steering message and ring the doorbell",
        main: send::main,
        command: send::command,
    },
    Tool {
        name: "ack",
        about: "acknowledge, list and read inbox messages",
        main: ack::main,
        command: ack::command,
    },
    Tool {
        name: "status",
        about: "append to and fold a task's status log",
        main: status::main,
        command: status::command,
    },
    Tool {
        name: "crew-state",
        about: "what every worker is doing right now",
        main: crew_state::main,
        command: crew_state::command,
    },
    Tool {
        name: "dod",
        about: "render and verify the definition of done",
        main: dod::main,
        command: dod::command,
    },
    Tool {
        name: "control",
        about: "spawn, interrupt, exit, relaunch, tear down",
        main: control::main,
        command: control::command,
    },
    Tool {
        name: "watch",
        about: "re-ring unread messages and feed the captain",
        main: watch::main,
        command: watch::command,
    },
    Tool {
        name: "board",
        about: "task board with claims and dependencies",
        main: board::main,
        command: board::command,
    },
    Tool {
        name: "top",
        about: "the fleet dashboard, attention first",
        main: top::main,
        command: top::command,
    },
];

pub fn tool(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

//! Integration tests: the real binaries, driven in temporary homes, with
//! private tmux servers and real git repositories where they matter.

#![allow(
    clippy::case_sensitive_file_extension_comparisons,
    clippy::many_single_char_names,
    reason = "fixture file names are ours, lower-case; a, b, c … name fixture tasks"
)]
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_macros,
    reason = "tests and benches set up homes and print as they like; clippy.toml's rules are the library's"
)]

mod ack;
mod agent_report;
mod agent_session;
mod board;
mod brief;
mod browser;
mod control;
mod crew_state;
mod cron;
mod demo;
mod dod;
mod fm;
mod grant;
mod harden;
mod harness;
mod land;
mod land_guard;
mod leg;
mod mate;
mod notify;
mod pane;
mod pane_identity;
mod remote;
mod remote_control;
mod remote_dispatch;
mod remote_feed;
mod remote_land;
mod remote_wakes;
mod remote_write;
mod restore;
mod review;
mod send;
mod send_text;
mod serve;
mod serve_browser;
mod setup;
mod sshd;
mod status;
mod task_meta;
mod top;
mod top_actions;
mod top_land;
mod usage;
mod watch;

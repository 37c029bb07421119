//! Tasks on other hosts, reached with OpenSSH (docs/remote.md).
//!
//! There is no daemon of ours on the wire: every remote action is one
//! `ssh` round trip in the far host's own home — a write, the far entry
//! `fm far` running the same library use case (`crate::route::far`); a
//! read, the far host's own `fm-*` tool — so every local guarantee
//! (locks, atomic records, doorbells) holds there, kept by the code that
//! keeps it locally. Requests and bodies travel on stdin, never on a
//! command line.
//!
//! [`host`] is the `[hosts.<name>]` table; [`ssh`] the runner: one
//! multiplexed connection per host (ControlMaster/ControlPersist in a
//! private socket directory under `state/`), no prompts, a bound per call,
//! and a typed answer that tells "the host could not be reached" from
//! "the tool ran and failed".

pub mod call;
pub mod control;

pub(crate) mod fleet;

pub mod kept;
pub mod ssh;
pub mod wakes;

pub use crate::config::{HostCfg, Hosts};

/// Whether `code` is one a tool of ours exits with (docs/spec/cli.md#exit-codes: 0, 1, 2, 3,
/// 130). Anything else out of a far host (a shell's 126/127, a signal's
/// 128+n, ssh's 255) or out of a kept answer is not a tool's answer.
pub(crate) fn documented_exit(code: i32) -> bool {
    use crate::error::exit;
    [
        exit::OK,
        exit::REFUSED,
        exit::USAGE,
        exit::ENV,
        exit::INTERRUPTED,
    ]
    .iter()
    .any(|&c| i32::from(c) == code)
}
pub use ssh::{Reply, Ssh, Unreachable};

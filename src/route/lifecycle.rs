//! A task's lifecycle on a host (`fm-control … --host`, docs/remote.md,
//! "Lifecycle"): the captain's side and the far side of the keyed
//! lifecycle call, and the far side's readers of what travels on stdin.
//! Still the far host's own `fm-control` with its own stdin format, not
//! yet a request of the far entry.

pub(crate) use crate::remote::control::{captain, serve};
pub use crate::remote::control::{read_brief, read_note, rehome_brief};

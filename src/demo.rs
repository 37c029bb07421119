//! `fm demo` (SPEC §13): the whole loop, unattended. Not built yet: it needs
//! the inbox, watcher, brief, crew-state and lifecycle tools.

use crate::error::{Error, Result};

pub fn run(_keep: bool) -> Result<u8> {
    Err(Error::refused(
        "the demo is not built yet: it needs fm-send, fm-watch, fm-brief, fm-crew-state and fm-control",
    ))
}

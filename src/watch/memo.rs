//! A task's inbox as a steady pass last read it, kept by the watcher
//! between passes: its pending records up to the tracked one and its
//! ladder files, valid while the directory's [`Stamp`] is unchanged and
//! was settled at the read. Every writer of an inbox writes by renaming a
//! new file into place, so while the directory's stamp stays the same no
//! entry of it was created, removed or renamed.

use super::ladder::{LadderFiles, Pending};
use crate::inbox::Record;
use crate::stamp::Stamp;

#[derive(Debug, Clone)]
pub(crate) struct InboxMemo {
    /// The inbox directory's stamp, taken before its listing.
    pub(super) key: Stamp,
    pub(super) pending: Vec<Pending>,
    pub(super) target: Option<Record>,
    pub(super) files: LadderFiles,
}

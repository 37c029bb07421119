//! The stamps of a task's files ([`crate::stamp::Stamp`]), taken before
//! they were read, so a kept reader re-reads only what changed.

use crate::crew_state::facts::Facts;
use crate::home::Home;
use crate::stamp::Stamp;
use crate::task_id::TaskId;

use super::{Present, StateDir};

/// The stamps of a task's files, taken before they were read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Stamps {
    present: Present,
    meta: Option<Stamp>,
    status: Option<Stamp>,
    busy: Option<Stamp>,
    run: Option<Stamp>,
    inbox: Option<Stamp>,
    usage: Option<Stamp>,
    /// The inbox's `.escalated` and `.ring-state` (files inside it: a
    /// rewrite in place need not change the inbox's own stamp).
    pub(super) escalated: Option<Stamp>,
    pub(super) ring_state: Option<Stamp>,
    /// The brief (read only when meta has no `kind`); `None` when not
    /// taken because the facts do not depend on it.
    brief: Option<Option<Stamp>>,
    /// When the files were read (Unix seconds, wall clock).
    read_at: u64,
}

impl Stamps {
    /// Takes the stamps of the task's present files (relative to `dir`),
    /// and of its brief when `brief` (the facts may depend on it).
    ///
    /// With the stamps `prev` of the last read: a file that was not in the
    /// inbox then is not there now if the inbox's own stamp is unchanged
    /// and had settled (adding a name to a directory changes its
    /// modification time), so it is not looked for.
    pub(crate) fn take(
        home: &Home,
        dir: &StateDir,
        id: &TaskId,
        present: Present,
        now: u64,
        brief: bool,
        prev: Option<&Stamps>,
    ) -> Stamps {
        let take = |bit: u8, suffix: &str| {
            present
                .has(bit)
                .then(|| dir.stamp(home, id, suffix))
                .flatten()
        };
        let inbox = take(Present::INBOX, "inbox");
        let same_inbox = prev.is_some_and(|p| {
            p.inbox
                .is_some_and(|s| Some(s) == inbox && s.settled(p.read_at))
        });
        let inside = |was: Option<Option<Stamp>>, suffix: &str| match was {
            Some(None) if same_inbox => None,
            _ => take(Present::INBOX, suffix),
        };
        Stamps {
            present,
            meta: take(Present::META, "meta"),
            status: take(Present::STATUS, "status"),
            busy: take(Present::BUSY, "busy"),
            run: take(Present::RUN, "run"),
            inbox,
            usage: take(Present::USAGE, "usage"),
            escalated: inside(prev.map(|p| p.escalated), "inbox/.escalated"),
            ring_state: inside(prev.map(|p| p.ring_state), "inbox/.ring-state"),
            brief: brief.then(|| Stamp::of_path(&home.brief(id))),
            read_at: now,
        }
    }

    /// Whether facts read with `self` still hold for files stamped `now`:
    /// the same files exist, every stamp is equal and settled.
    pub(crate) fn still(&self, now: &Stamps) -> bool {
        let same = |a: Option<Stamp>, b: Option<Stamp>| match (a, b) {
            (Some(a), Some(b)) => a == b && a.settled(self.read_at),
            (None, None) => true,
            _ => false,
        };
        self.present == now.present
            && same(self.meta, now.meta)
            && same(self.status, now.status)
            && same(self.busy, now.busy)
            && same(self.run, now.run)
            && same(self.inbox, now.inbox)
            && same(self.usage, now.usage)
            && same(self.escalated, now.escalated)
            && same(self.ring_state, now.ring_state)
            && match (self.brief, now.brief) {
                (Some(a), Some(b)) => same(a, b),
                (_, None) => true,
                (None, Some(_)) => false,
            }
    }

    /// Which files the listing saw.
    pub(crate) fn present(&self) -> Present {
        self.present
    }

    /// Whether facts read with these stamps depend on the brief.
    pub(crate) fn needs_brief(f: &Facts) -> bool {
        f.meta.as_ref().is_some_and(|m| m.kind.is_none())
    }
}

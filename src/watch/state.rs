//! What the watcher's passes share: the state one watcher process keeps
//! between passes (status-log read offsets, warnings already printed), the
//! report of one pass, and how a pass opens tmux for a socket. Read by
//! [`super::pass`] (which runs a pass) and `act` (which carries out each
//! task's ladder action).

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use serde::Serialize;

use super::TOOL;
use super::flusher::Flusher;
use super::memo::InboxMemo;
use super::status_wakes::Offsets;
use crate::error::Result;
use crate::home::Home;
use crate::task_id::TaskId;
use crate::tmux::deliver::Outcome;
use crate::tmux::pane::Pane;
use crate::wakes::Wake;

/// Makes the pane backend for a tmux socket (`""` = default server).
pub type PaneFactory<'a> = &'a dyn Fn(&str) -> Box<dyn Pane>;

/// What persists between passes of one watcher process.
#[derive(Debug, Default)]
pub struct State {
    pub(crate) offsets: Offsets,
    /// Warnings already printed (each is printed once per process).
    warned: BTreeSet<String>,
    /// Each inbox as last read, answered from while it is unchanged.
    pub(crate) inboxes: HashMap<TaskId, InboxMemo>,
    /// Where a pass that rang asks for its flush (the daemon's); `None`:
    /// the pass flushes before it returns.
    flusher: Option<Flusher>,
    /// The ring states this pass replaced, removed when it settles.
    pub(super) leftovers: Vec<crate::fsx::Leftover>,
    /// Whether the next pass looks at every task's pane (a dead agent or a
    /// dialog with no mail waiting), not only those a ladder needs. One
    /// `list-panes` per socket, and a screen capture per live agent whose
    /// profile knows dialogs. Every one-shot pass does; the daemon every
    /// `poll_secs`.
    pub(crate) sweep: bool,
}

impl State {
    pub fn load(home: &Home) -> Result<State> {
        Ok(State {
            offsets: Offsets::load(home)?,
            warned: BTreeSet::new(),
            inboxes: HashMap::new(),
            flusher: None,
            leftovers: Vec::new(),
            sweep: true,
        })
    }

    /// Whether the next passes look at every task's pane (the default,
    /// as a one-shot pass does) or only where a ladder needs it, as the
    /// daemon's rescans after its first pass do.
    pub fn set_sweep(&mut self, every_pane: bool) {
        self.sweep = every_pane;
    }

    /// From now on a pass that rang leaves its flush to a thread of its
    /// own (see [`super::flusher`]) instead of waiting for it: for the
    /// daemon, whose next record should not wait behind the last one's
    /// flush. Where no thread can be started, passes flush as before.
    pub(crate) fn flush_in_background(&mut self, home: &Home) {
        self.flusher = Flusher::start(home.state_dir());
    }

    /// Ends a pass's writes: when it rang or replaced a ring state, makes
    /// what it wrote durable (a swapped-in ring state is not on disk
    /// before), then removes the files its replaces left over. Handed to
    /// the flusher where there is one, or done now.
    pub(super) fn settle(&mut self, home: &Home, rang: bool) {
        if !rang && self.leftovers.is_empty() {
            return;
        }
        let leftovers = std::mem::take(&mut self.leftovers);
        let failed = if let Some(f) = &self.flusher {
            f.request(leftovers)
        } else {
            let failed = crate::fsx::sync_filesystem(&home.state_dir()).err();
            drop(leftovers);
            failed.map(|e| e.to_string())
        };
        if let Some(e) = failed {
            self.warn(e);
        }
    }

    /// Forgets every remembered inbox, so the next pass reads each again
    /// (the daemon's periodic rescan).
    pub(crate) fn forget_inboxes(&mut self) {
        self.inboxes.clear();
    }

    /// Forgets one task's inbox (a file event named it).
    pub(crate) fn forget_inbox(&mut self, id: &TaskId) {
        self.inboxes.remove(id);
    }

    pub(super) fn warn(&mut self, msg: String) {
        if self.warned.insert(msg.clone()) {
            crate::output::err_line(&format!("{TOOL}: warning: {msg}"));
        }
    }
}

/// One ring attempt.
#[derive(Debug, Clone, Serialize)]
pub struct Ring {
    pub task: String,
    pub seq: u64,
    pub count: u64,
    pub(crate) outcome: Outcome,
}

/// What a pass did.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub(crate) tasks: usize,
    pub rings: Vec<Ring>,
    pub(crate) wakes: Vec<Wake>,
    /// Earliest second at which some ladder may act without a file change.
    pub(crate) next_due: Option<u64>,
    /// Each task the pass acted on, with its own next due second.
    #[serde(skip)]
    pub(crate) dues: Vec<(TaskId, Option<u64>)>,
    /// Tasks whose inbox was answered from memory.
    #[serde(skip)]
    pub(crate) memo_hits: usize,
    /// Inbox directories seen (the daemon watches them).
    #[serde(skip)]
    pub(crate) inboxes: Vec<PathBuf>,
    /// The tasks passed over whose meta records a local pane: the ones a
    /// daemon's sweep looks at (a pane dies without a file changing).
    #[serde(skip)]
    pub(crate) paned: Vec<TaskId>,
}

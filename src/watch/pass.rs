//! One watcher pass over every task: gather each task's files, ask tmux
//! once per socket (and only when some task's ladder needs pane facts),
//! let [`ladder::decide`] choose, carry the action out (`act`), then surface new
//! status lines as wakes and touch the heartbeat.
//!
//! Order of writes, chosen so a crash never loses anything and never rings
//! twice: a ring first records the attempt in `.ring-state` and only then
//! types (a ladder file that cannot be written means no ring at all, and
//! one wake saying so); an escalation appends its wake *then* writes
//! `.escalated`, and skips the wake if this episode (the record's queue
//! time onwards) already logged that exact wake. A status wake that cannot
//! be appended rewinds its log's offset so the next pass retries it.
//! One task's trouble is reported and never stops the pass, and one bad
//! record (a symlink, say) never stops its task: it is skipped with a
//! warning and the ladder works on the task's other records.
//!
//! Reading is the cost of a steady pass, so it is done once and relative:
//! `state/` is opened once (the checked walk) and listed once; each task's
//! inbox is opened relative to it and listed once, its records and ladder
//! files are read relative to the inbox, its status log is looked at with
//! one `fstatat` (only when the listing of `state/` showed one). Anything
//! unusual on that fast path (a symlink, a FIFO, an unreadable file, a
//! record that does not parse) is read again the plain way, by path, so the
//! warning and the outcome are exactly those of a by-path read. Tasks are
//! read on every core (the reading has no side effects; its warnings are
//! printed in task order afterwards); ringing, escalating and the status
//! wakes then run one task after another, as before.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use super::act::Exec;
use super::ladder::{self};
use crate::config::Config;
use crate::error::Result;
use crate::fsx;
use crate::home::Home;
use crate::task_id::TaskId;
use crate::tmux::pane::{Pane, PaneInfo};

pub use super::state::{PaneFactory, Report, Ring, State};

pub(crate) use super::read::Read;
use super::read::{Memo, gather_all};
pub(crate) use super::scan::scan_tasks;
use super::scan::{Seen, scan};

/// Runs one pass over every task at `now`.
pub fn run(
    home: &Home,
    cfg: &Config,
    panes: PaneFactory,
    sleep: &dyn Fn(Duration),
    state: &mut State,
    now: u64,
) -> Result<Report> {
    let tasks = scan(home)?;
    run_over(home, cfg, panes, sleep, state, now, &tasks, Read::Fast)
}

/// Runs one pass over the tasks `ids` only (the daemon's answer to a
/// file event or a ladder coming due).
pub(crate) fn run_tasks(
    home: &Home,
    cfg: &Config,
    panes: PaneFactory,
    sleep: &dyn Fn(Duration),
    state: &mut State,
    now: u64,
    ids: &[TaskId],
) -> Result<Report> {
    let tasks: Vec<(TaskId, Seen)> = ids.iter().map(|id| (id.clone(), Seen::ANY)).collect();
    run_over(home, cfg, panes, sleep, state, now, &tasks, Read::Fast)
}

/// One pass over `ids`, reading their files as `how` says.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_over(
    home: &Home,
    cfg: &Config,
    panes: PaneFactory,
    sleep: &dyn Fn(Duration),
    state: &mut State,
    now: u64,
    ids: &[(TaskId, Seen)],
    how: Read,
) -> Result<Report> {
    let mut report = Report {
        tasks: ids.len(),
        ..Report::default()
    };
    let gathered = gather_all(home, ids, now, &cfg.watch, how, &state.inboxes, state.sweep)?;
    let mut ex = Exec {
        home,
        cfg,
        sleep,
        state,
        report: &mut report,
        now,
    };
    let mut tasks = Vec::new();
    let mut logs = Vec::with_capacity(ids.len());
    for ((id, _), g) in ids.iter().zip(gathered) {
        g.notes.flush(ex.state);
        match g.memo {
            Memo::Keep => ex.report.memo_hits += 1,
            Memo::Set(m) => {
                ex.state.inboxes.insert(id.clone(), *m);
            }
            Memo::Drop => {
                ex.state.inboxes.remove(id);
            }
        }
        match g.task {
            // A pass that looks at every pane read every meta with the
            // task's other files.
            Ok(t) => tasks.push(t),
            Err(e) => ex.state.warn(format!("{id}: {e}")),
        }
        if g.inbox_dir {
            ex.report.inboxes.push(home.inbox(id));
        }
        logs.push(g.status);
    }
    // One `list-panes -a` per socket, only for sockets some ladder needs.
    let mut backends: HashMap<String, Box<dyn Pane>> = HashMap::new();
    let mut lists: BTreeMap<String, Option<Vec<PaneInfo>>> = BTreeMap::new();
    for t in &tasks {
        let Some(m) = &t.meta else { continue };
        if m.pane.is_some() && m.host_name().is_none() {
            ex.report.paned.push(t.id.clone());
        }
        // A task on another host is looked at by that host's watcher.
        let sweep = ex.state.sweep && m.host_name().is_none();
        if m.pane.is_none() || !(sweep || ladder::needs_pane(&t.pending, &t.files, now, &cfg.watch))
        {
            continue;
        }
        let socket = m.socket(cfg).to_string();
        if lists.contains_key(&socket) {
            continue;
        }
        let be = backends
            .entry(socket.clone())
            .or_insert_with(|| panes(&socket));
        let list = match be.list() {
            Ok(l) => Some(l),
            Err(e) => {
                ex.state.warn(format!("tmux socket {socket:?}: {e}"));
                None
            }
        };
        lists.insert(socket, list);
    }
    for t in &tasks {
        // Each task's own next due second, for a daemon that wakes per
        // task; the pass's earliest is kept beside.
        let before = ex.report.next_due.take();
        ex.task(t, &lists, &mut backends, panes);
        let mine = ex.report.next_due;
        ex.report.next_due = match (before, mine) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        ex.report.dues.push((t.id.clone(), mine));
    }
    for ((id, _), log) in ids.iter().zip(logs) {
        let paused = &cfg.brief.paused_verb;
        let found = log.and_then(|facts| match facts {
            Some(f) => {
                super::status_wakes::new_wakes_at(home, id, f, &mut ex.state.offsets, paused)
            }
            None => Ok(Vec::new()),
        });
        match found {
            Ok(found) => {
                for w in found {
                    if !ex.wake(id, "status", &w.text) {
                        // Not surfaced: the next pass starts again here.
                        ex.state.offsets.rewind(id.as_str(), w.start);
                        break;
                    }
                }
            }
            Err(e) => ex.state.warn(format!("{id}: {e}")),
        }
    }
    let rang = !ex.report.rings.is_empty();
    ex.state.settle(home, rang);
    if let Err(e) = ex.state.offsets.save(home) {
        ex.state.warn(e.to_string());
    }
    if let Err(e) = fsx::touch(&home.watch_beat()) {
        ex.state.warn(e.to_string());
    }
    Ok(report)
}

#[cfg(test)]
#[path = "pass_tests.rs"]
mod tests;

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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use super::act::{Exec, TaskIn};
use super::ladder::{self, LadderFiles, Pending};
use super::ladder_io;
use super::state::TOOL;
use crate::config::Config;
use crate::error::Result;
use crate::home::Home;
use crate::inbox::{self, Record};
use crate::meta::TaskMeta;
use crate::task_id::TaskId;
use crate::tmux::pane::{Pane, PaneInfo};
use crate::{clock, fsx};

pub use super::state::{PaneFactory, Report, Ring, State};

/// Ids of every task with a meta, inbox or status log, from one listing
/// of `state/`.
pub(crate) fn scan_tasks(home: &Home) -> Result<Vec<TaskId>> {
    let dir = home.state_dir();
    let mut ids = BTreeSet::new();
    for name in fsx::list_dir(&dir)? {
        let Some(name) = name.to_str() else { continue };
        let stem = [".meta", ".inbox", ".status"]
            .iter()
            .find_map(|s| name.strip_suffix(s));
        if let Some(id) = stem.and_then(|s| TaskId::parse(s).ok()) {
            ids.insert(id);
        }
    }
    Ok(ids.into_iter().collect())
}

fn mtime_secs(path: &std::path::Path) -> Option<u64> {
    let t = fsx::stat(path).ok()??.modified().ok()?;
    t.duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs())
}

/// Pending records in order up to and including the first one that is
/// not fire-and-forget (all the ladder needs). A record that cannot be
/// read (a symlink, no `--` line, an I/O error) is skipped with a warning
/// (once per process) naming it, so it never hides the records after it.
fn load_pending(
    home: &Home,
    id: &TaskId,
    seqs: &[u64],
    now: u64,
    state: &mut State,
) -> (Vec<Pending>, Option<Record>) {
    let mut out = Vec::new();
    for &seq in seqs {
        let rec = match inbox::load_record(home, id, seq) {
            Ok(Some(rec)) => rec,
            Ok(None) => continue,
            Err(e) => {
                let name = fsx::numbered_name(seq, inbox::EXT);
                state.warn(format!("{id}: skipping {name}: {e}"));
                continue;
            }
        };
        let at = clock::parse_rfc3339(&rec.at)
            .or_else(|| mtime_secs(&home.inbox_record(id, seq)))
            .unwrap_or(now);
        out.push(Pending {
            seq,
            at,
            fire_and_forget: rec.fire_and_forget,
        });
        if !rec.fire_and_forget {
            return (out, Some(rec));
        }
    }
    (out, None)
}

/// Runs one pass at `now`.
pub fn run(
    home: &Home,
    cfg: &Config,
    panes: PaneFactory,
    sleep: &dyn Fn(Duration),
    state: &mut State,
    now: u64,
) -> Result<Report> {
    let ids = scan_tasks(home)?;
    let mut report = Report {
        tasks: ids.len(),
        ..Report::default()
    };
    let mut ex = Exec {
        home,
        cfg,
        sleep,
        state,
        report: &mut report,
        now,
    };
    let mut tasks = Vec::new();
    for id in &ids {
        match gather(home, id, now, &cfg.watch, ex.state) {
            Ok(t) => tasks.push(t),
            Err(e) => ex.state.warn(format!("{id}: {e}")),
        }
        if fsx::is_dir(&home.inbox(id)).unwrap_or(false) {
            ex.report.inboxes.push(home.inbox(id));
        }
    }
    // One `list-panes -a` per socket, only for sockets some ladder needs.
    let mut backends: HashMap<String, Box<dyn Pane>> = HashMap::new();
    let mut lists: BTreeMap<String, Option<Vec<PaneInfo>>> = BTreeMap::new();
    for t in &tasks {
        let Some(m) = &t.meta else { continue };
        if m.pane.is_none() || !ladder::needs_pane(&t.pending, &t.files, now, &cfg.watch) {
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
        ex.task(t, &lists, &mut backends, panes);
    }
    for id in &ids {
        match super::status_feed::new_wakes(home, id, &mut ex.state.offsets, &cfg.brief.paused_verb)
        {
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
    if !ex.report.rings.is_empty()
        && let Err(e) = fsx::sync_filesystem(&home.state_dir())
    {
        ex.state.warn(e.to_string());
    }
    if let Err(e) = ex.state.offsets.save(home) {
        ex.state.warn(e.to_string());
    }
    if let Err(e) = fsx::touch(&home.watch_beat()) {
        ex.state.warn(e.to_string());
    }
    Ok(report)
}

fn gather(
    home: &Home,
    id: &TaskId,
    now: u64,
    cfg: &crate::config::WatchCfg,
    state: &mut State,
) -> Result<TaskIn> {
    let listing = list_inbox(home, id)?;
    let (pending, target) = load_pending(home, id, &listing.seqs, now, state);
    let (files, err) = if listing.ladder_files {
        ladder_io::load(home, id)
    } else {
        (LadderFiles::default(), None)
    };
    if let Some(e) = err
        && target.is_some()
    {
        crate::output::err_line(&format!("{TOOL}: warning: {id}: {e}"));
    }
    let meta = if ladder::needs_pane(&pending, &files, now, cfg) {
        TaskMeta::load(home, id)?
    } else {
        None
    };
    Ok(TaskIn {
        id: id.clone(),
        pending,
        target,
        files,
        meta,
    })
}

/// One listing of an inbox: pending record numbers (ascending) and
/// whether any ladder file is present (so absent ones are not opened).
struct InboxListing {
    seqs: Vec<u64>,
    ladder_files: bool,
}

fn list_inbox(home: &Home, id: &TaskId) -> Result<InboxListing> {
    let dir = home.inbox(id);
    fsx::refuse_symlink(&dir)?;
    let mut out = InboxListing {
        seqs: Vec::new(),
        ladder_files: false,
    };
    let (ring, esc, owed) = (home.ring_state(id), home.escalated(id), home.ring_owed(id));
    let dialog = home.dialog_seen(id);
    let ladder_names = [
        ring.file_name(),
        esc.file_name(),
        owed.file_name(),
        dialog.file_name(),
    ];
    for name in fsx::list_dir(&dir)? {
        if ladder_names.contains(&Some(name.as_os_str())) {
            out.ladder_files = true;
        } else if let Some(n) = name
            .to_str()
            .and_then(|s| fsx::parse_numbered(s, inbox::EXT))
        {
            out.seqs.push(n);
        }
    }
    out.seqs.sort_unstable();
    Ok(out)
}

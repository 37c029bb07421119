//! The fleet view computed the way it was before it was made fast: every
//! task's files read on their own, one `git rev-parse` per run record, one
//! capture per pane, the gate with its own git calls per ship. Kept for
//! tests only, as the answer the fast path must give on the same fleet.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::path::Path;

use super::super::facts::{Escalation, Facts, Gate, GitFacts, PaneFact, RunRecord, WorktreeFact};
use super::super::resolve::{Need, step};
use crate::config::Config;
use crate::harness;
use crate::home::Home;
use crate::meta::TaskMeta;
use crate::status::busy::BusyRecord;
use crate::status::{self, StatusLine, Verb};
use crate::task_id::TaskId;
use crate::tmux::pane::{Pane, PaneInfo, Tmux};
use crate::{fsx, inbox};

/// The §8.2 gate, asked for a ship whose current line is `done`.
type GateFn = fn(&Home, &Config, &TaskId, &TaskMeta, &StatusLine) -> Gate;

/// The library's done gate ([`crate::dod::gate`]) as a resolver input.
pub(super) fn dod_gate(
    home: &Home,
    cfg: &Config,
    id: &TaskId,
    meta: &TaskMeta,
    line: &StatusLine,
) -> Gate {
    match crate::dod::gate(home, cfg, id, meta, line) {
        crate::dod::Verdict::Accepted(_) => Gate::Accepted,
        crate::dod::Verdict::Refused(why) => Gate::Refused(why),
        crate::dod::Verdict::NotGated(_) => Gate::NotGated,
    }
}

/// Opens the tmux of a socket name ("" = default server).
type PaneFor<'a> = &'a dyn Fn(&str) -> Box<dyn Pane>;

/// The real tmux for a socket.
pub(super) fn real_tmux(socket: &str) -> Box<dyn Pane> {
    Box::new(Tmux::new(socket))
}

/// Which names exist in `state/`, from one directory listing: a fleet
/// call opens only the files that are there.
#[derive(Debug, Default)]
struct StateIndex {
    names: HashSet<OsString>,
}

impl StateIndex {
    /// Lists `state/` once; `None` if it cannot be listed.
    fn read(home: &Home) -> Option<StateIndex> {
        let rd = std::fs::read_dir(home.state_dir()).ok()?;
        Some(StateIndex {
            names: rd.filter_map(|e| e.ok().map(|e| e.file_name())).collect(),
        })
    }

    /// False only when the listing shows `path` does not exist.
    fn may_exist(idx: Option<&StateIndex>, path: &Path) -> bool {
        match (idx, path.file_name()) {
            (Some(i), Some(name)) => i.names.contains(name),
            _ => true,
        }
    }
}

fn read_if(idx: Option<&StateIndex>, path: &Path) -> crate::Result<Option<(Vec<u8>, Option<u64>)>> {
    if !StateIndex::may_exist(idx, path) {
        return Ok(None);
    }
    fsx::read_optional_mtime(path)
}

/// `.escalated` when it names one of the `pending` records, with the
/// rings `.ring-state` counted for it (0 when it tracks another record).
fn escalation(home: &Home, id: &TaskId, pending: &[u64]) -> crate::Result<Option<Escalation>> {
    let Some((bytes, at)) = fsx::read_optional_mtime(&home.escalated(id))? else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&bytes);
    let Some(record) = text.split_whitespace().next() else {
        return Ok(None);
    };
    if !fsx::parse_numbered(record, inbox::EXT).is_some_and(|n| pending.contains(&n)) {
        return Ok(None);
    }
    let rings = inbox::ladder_files::read_ring_state(home, id)?
        .filter(|r| Some(r.seq) == fsx::parse_numbered(record, inbox::EXT))
        .map_or(0, |r| r.count);
    Ok(Some(Escalation {
        record: record.to_string(),
        rings,
        at,
    }))
}

/// Reads the per-task files; no tmux, no git.
fn read_files(
    home: &Home,
    cfg: &Config,
    id: &TaskId,
    now: u64,
    idx: Option<&StateIndex>,
) -> crate::Result<Facts> {
    let mut f = Facts::empty(id.clone(), now);
    f.meta = read_if(idx, &home.meta(id))?.map(|(b, _)| TaskMeta::parse(&b));
    if let Some((bytes, mtime)) = read_if(idx, &home.status(id))? {
        f.log_mtime = mtime;
        f.fold = status::Fold::from_bytes(&bytes, &cfg.brief.paused_verb);
        if f.fold.lines > 0 {
            f.last_line_at = f.fold.last_at.or(f.log_mtime);
        }
    }
    f.busy = read_if(idx, &home.busy(id))?.and_then(|(b, _)| BusyRecord::parse(&b));
    f.run = read_if(idx, &home.run(id))?.map(|(b, m)| RunRecord::parse(&b, m));
    let inbox = home.inbox(id);
    if StateIndex::may_exist(idx, &inbox) {
        let pending = fsx::list_numbered(&inbox, inbox::EXT)?;
        f.inbox_pending = pending.len();
        if !pending.is_empty() {
            f.escalated = escalation(home, id, &pending)?;
        }
    }
    if let Some(meta) = &f.meta {
        if meta.kind.is_none() {
            f.brief_kind = crate::dod::gate::brief_kind(home, id);
        }
        if f.kind().has_worktree()
            && let Some(wt) = &meta.worktree
        {
            f.worktree = if wt.is_dir() {
                WorktreeFact::Present
            } else {
                WorktreeFact::Missing
            };
        }
        if let Some(name) = &meta.harness {
            f.profile = harness::profile(&cfg.harness, name).map(std::sync::Arc::new);
        }
    }
    Ok(f)
}

/// [`read_files`] for every id, split over a few threads for big fleets.
fn read_all(home: &Home, cfg: &Config, ids: &[TaskId], now: u64) -> Vec<Facts> {
    let idx = if ids.len() > 8 {
        StateIndex::read(home)
    } else {
        None
    };
    let one = |id: &TaskId| {
        read_files(home, cfg, id, now, idx.as_ref()).unwrap_or_else(|e| {
            let mut f = Facts::empty(id.clone(), now);
            f.error = Some(e.to_string());
            f
        })
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    if ids.len() < 256 || threads < 2 {
        return ids.iter().map(one).collect();
    }
    let chunk = ids.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = ids
            .chunks(chunk)
            .map(|c| s.spawn(move || c.iter().map(one).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("reader thread"))
            .collect()
    })
}

/// Runs `git -C dir args…` through [`crate::git`] (its time bound and
/// environment); `None` when git could not run or answered non-zero.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    crate::git::run(dir, args)
        .ok()
        .filter(|o| o.ok)
        .map(|o| o.stdout)
}

/// Branch and HEAD of a worktree (one git call). A directory that is not
/// the top level of its own repository (a plain directory inside some other
/// clone, say) has none: git would otherwise answer for the outer one.
///
/// The branch is the full ref HEAD points at (`--symbolic-full-name HEAD`,
/// what `git symbolic-ref -q HEAD` prints, asked in the same call) with
/// `refs/heads/` stripped. `--abbrev-ref` would not do: it shortens to
/// `heads/<name>` when a tag has the branch's name.
fn git_facts(worktree: &Path) -> Option<GitFacts> {
    let out = git(
        worktree,
        &[
            "rev-parse",
            "--show-toplevel",
            "HEAD",
            "--symbolic-full-name",
            "HEAD",
        ],
    )?;
    let mut lines = out.lines();
    if !crate::git::is_toplevel(worktree, lines.next()?.trim()) {
        return None;
    }
    let head = lines.next()?.trim().to_string();
    // A detached HEAD prints `HEAD`: no branch.
    let branch = lines
        .next()
        .and_then(|l| l.trim().strip_prefix("refs/heads/"))
        .filter(|b| !b.is_empty())
        .map(str::to_string);
    Some(GitFacts { branch, head })
}

fn is_sha(s: &str) -> bool {
    (4..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Adds the git facts a run record needs to be attributed (rule 2).
fn attribute_run(f: &mut Facts) {
    let (Some(meta), Some(run)) = (&f.meta, &f.run) else {
        return;
    };
    if f.worktree != WorktreeFact::Present || run.branch.is_empty() {
        return;
    }
    let Some(wt) = meta.worktree.clone() else {
        return;
    };
    f.git = git_facts(&wt);
    if let Some(g) = &f.git
        && g.branch.as_deref() == Some(run.branch.as_str())
        && g.head != run.head
        && is_sha(&run.head)
    {
        f.run_contains_head =
            git(&wt, &["merge-base", "--is-ancestor", "HEAD", &run.head]).is_some();
    }
}

/// The `done` line handed to the gate: the fold's current line.
fn done_line(f: &Facts) -> StatusLine {
    let c = f.fold.current();
    StatusLine {
        verb: "done".into(),
        kind: Verb::Done,
        key: c
            .as_ref()
            .map_or_else(|| "default".into(), |c| c.key.clone().into()),
        text: c.as_ref().map(|c| c.text.clone()).unwrap_or_default(),
        at: c.and_then(|c| c.at),
    }
}

/// Gathers the facts of `ids` in one pass, filling the screen and the gate
/// verdict exactly where the rules need them. Warnings (tmux could not be
/// asked) are returned for the caller to print.
pub(super) fn gather(
    home: &Home,
    cfg: &Config,
    ids: &[TaskId],
    now: u64,
    pane_for: PaneFor,
    gate: GateFn,
) -> (Vec<Facts>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut all = read_all(home, cfg, ids, now);

    // One list-panes per socket that some task needs.
    let mut sockets: BTreeMap<String, Option<HashMap<String, PaneInfo>>> = BTreeMap::new();
    for f in &all {
        if let Some(m) = &f.meta
            && m.pane.is_some()
        {
            sockets.entry(m.socket(cfg).to_string()).or_default();
        }
    }
    let mut tmuxes: HashMap<String, Box<dyn Pane>> = HashMap::new();
    for (socket, slot) in &mut sockets {
        let t = pane_for(socket);
        match t.list() {
            Ok(list) => *slot = Some(list.into_iter().map(|p| (p.id.clone(), p)).collect()),
            Err(e) => warnings.push(format!("tmux: {e}; pane states not read")),
        }
        tmuxes.insert(socket.clone(), t);
    }

    for f in &mut all {
        let Some(meta) = f.meta.clone() else { continue };
        let pane = meta.pane.as_deref().unwrap_or("");
        let socket = meta.socket(cfg);
        if !pane.is_empty() {
            f.pane = match sockets.get(socket) {
                Some(Some(panes)) => match panes.get(pane) {
                    Some(p) => PaneFact::Present {
                        dead: p.dead,
                        command: p.command.clone(),
                    },
                    None => PaneFact::Gone,
                },
                _ => PaneFact::Unknown,
            };
        }
        attribute_run(f);
        // At most one round per expensive input.
        for _ in 0..2 {
            match step(f) {
                Ok(_) => break,
                Err(Need::Screen) => {
                    let screen = tmuxes
                        .get(socket)
                        .and_then(|t| t.capture(pane, 0).ok())
                        .unwrap_or_default();
                    f.screen = Some(screen);
                }
                Err(Need::Gate) => f.gate = Some(gate(home, cfg, &f.id, &meta, &done_line(f))),
            }
        }
    }
    (all, warnings)
}

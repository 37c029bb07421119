//! Everything §9.2 decides on, gathered in one pass (SPEC §9.2, §9.3, §4).
//!
//! Per task: meta, the run record `state/<id>.run`, the busy record
//! `state/<id>.busy`, the status log's fold, the pending inbox count,
//! whether the worktree meta names exists (a meta naming none is a task
//! never spawned), and the brief's `kind` when meta has none. Per tmux socket: one `list-panes -a` for
//! the whole fleet, and only when some task on it records a pane. git is
//! asked only for tasks with a run record (branch, HEAD, ancestry) and the
//! gate only for a ship whose current line is `done`; a pane's screen is
//! captured only when the rules reach the harness `busy_regex`. Every
//! external program runs with an argument vector and a time bound.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::resolve::{Gate, Need, step};
use crate::config::Config;
use crate::harness::{self, HarnessProfile};
use crate::home::Home;
use crate::meta::Meta;
use crate::pane::{Pane, PaneInfo, Tmux};
use crate::status::{self, Fold, StatusLine, Verb};
use crate::task_id::TaskId;
use crate::{fsx, inbox};

/// Longest a git call may take.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(10);

/// `state/<id>.run`: a validation pipeline's run record (key=value).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunRecord {
    pub status: String,
    pub branch: String,
    pub head: String,
    pub gate: String,
    pub findings: u64,
    pub pr: String,
    /// When the record was last written (its mtime, Unix seconds).
    pub mtime: Option<u64>,
}

impl RunRecord {
    /// Parses the record; unknown keys are ignored, the last occurrence wins.
    /// `branch` may be written as `<name>` or `refs/heads/<name>`; it is
    /// kept as the name.
    pub fn parse(bytes: &[u8], mtime: Option<u64>) -> RunRecord {
        let m = Meta::parse(bytes);
        let branch = m.str("branch").trim();
        RunRecord {
            status: m.str("status").trim().to_lowercase(),
            branch: branch
                .strip_prefix("refs/heads/")
                .unwrap_or(branch)
                .to_string(),
            head: m.str("head").trim().to_lowercase(),
            gate: m.str("gate").trim().to_string(),
            findings: m.str("findings").trim().parse().unwrap_or(0),
            pr: m.str("pr").trim().to_string(),
            mtime,
        }
    }
}

/// `state/<id>.busy`: `busy|idle <epoch> <source>` (SPEC §9.3).
pub use crate::busy::BusyRecord;

/// The worktree as git sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitFacts {
    /// Current branch; `None` when HEAD is detached.
    pub branch: Option<String>,
    pub head: String,
}

/// The task's worktree as rule 1 sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorktreeFact {
    /// Not looked at: meta names no `worktree` (the task was never
    /// spawned — a sub-brief's meta holds only `parent=`), or the kind is
    /// neither ship nor scout.
    Unchecked,
    /// Meta names a worktree that is not a directory.
    Missing,
    Present,
}

/// What tmux says about the recorded pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaneFact {
    /// Meta has no `pane` key: rules 3–4 are skipped.
    Unset,
    /// tmux could not be asked (not installed, failing): rules 3–4 skipped.
    Unknown,
    /// No such pane on the task's server.
    Gone,
    Present {
        dead: bool,
        command: String,
    },
}

/// Every input of the resolver for one task.
#[derive(Debug, Clone)]
pub struct Facts {
    pub id: TaskId,
    pub now: u64,
    /// A state file that could not be read (a symlink, a permission error).
    pub error: Option<String>,
    pub meta: Option<Meta>,
    /// The brief's frontmatter `kind`, read only when meta has none.
    pub brief_kind: Option<String>,
    pub worktree: WorktreeFact,
    pub git: Option<GitFacts>,
    pub run: Option<RunRecord>,
    /// HEAD is an ancestor of the run's head (asked only when they differ).
    pub run_contains_head: bool,
    pub pane: PaneFact,
    pub profile: Option<HarnessProfile>,
    pub busy: Option<BusyRecord>,
    pub fold: Fold,
    /// Time of the log's last status line: its `at=`, else the log's mtime.
    pub last_line_at: Option<u64>,
    pub log_mtime: Option<u64>,
    /// The pane's visible screen, once captured.
    pub screen: Option<String>,
    /// The gate's verdict on the current `done` line, once asked.
    pub gate: Option<Gate>,
    pub inbox_pending: usize,
}

impl Facts {
    /// Facts of a task nobody knows anything about yet.
    pub fn empty(id: TaskId, now: u64) -> Facts {
        Facts {
            id,
            now,
            error: None,
            meta: None,
            brief_kind: None,
            worktree: WorktreeFact::Unchecked,
            git: None,
            run: None,
            run_contains_head: false,
            pane: PaneFact::Unset,
            profile: None,
            busy: None,
            fold: Fold::default(),
            last_line_at: None,
            log_mtime: None,
            screen: None,
            gate: None,
            inbox_pending: 0,
        }
    }

    /// The task's kind: meta `kind`, else the brief's frontmatter `kind`,
    /// else ship — as the gate reads it ([`crate::dod::gate::kind_of`]).
    pub fn kind(&self) -> &str {
        match self.meta.as_ref().map(|m| m.str("kind")) {
            Some(k) if !k.is_empty() => k,
            _ => self
                .brief_kind
                .as_deref()
                .filter(|k| !k.is_empty())
                .unwrap_or("ship"),
        }
    }
}

/// The §8.2 gate, asked for a ship whose current line is `done`.
pub type GateFn = fn(&Home, &Config, &TaskId, &Meta, &StatusLine) -> Gate;

/// The library's done gate ([`crate::dod::gate`]) as a resolver input.
pub fn dod_gate(home: &Home, cfg: &Config, id: &TaskId, meta: &Meta, line: &StatusLine) -> Gate {
    match crate::dod::gate(home, cfg, id, meta, line) {
        crate::dod::Verdict::Accepted(_) => Gate::Accepted,
        crate::dod::Verdict::Refused(why) => Gate::Refused(why),
        crate::dod::Verdict::NotGated(_) => Gate::NotGated,
    }
}

/// Opens the tmux of a socket name ("" = default server).
pub type PaneFor<'a> = &'a dyn Fn(&str) -> Box<dyn Pane>;

/// The real tmux for a socket.
pub fn real_tmux(socket: &str) -> Box<dyn Pane> {
    Box::new(Tmux::new(socket))
}

/// Which names exist in `state/`, from one directory listing: a fleet
/// call opens only the files that are there.
#[derive(Debug, Default)]
pub struct StateIndex {
    names: HashSet<OsString>,
}

impl StateIndex {
    /// Lists `state/` once; `None` if it cannot be listed.
    pub fn read(home: &Home) -> Option<StateIndex> {
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

/// The worktree meta records; `None` when it names none (never spawned).
pub fn worktree_path(meta: &Meta) -> Option<PathBuf> {
    match meta.str("worktree") {
        "" => None,
        w => Some(PathBuf::from(w)),
    }
}

fn read_if(idx: Option<&StateIndex>, path: &Path) -> crate::Result<Option<(Vec<u8>, Option<u64>)>> {
    if !StateIndex::may_exist(idx, path) {
        return Ok(None);
    }
    fsx::read_optional_mtime(path)
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
    f.meta = read_if(idx, &home.meta(id))?.map(|(b, _)| Meta::parse(&b));
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
        f.inbox_pending = fsx::list_numbered(&inbox, inbox::EXT)?.len();
    }
    if let Some(meta) = &f.meta {
        if meta.str("kind").is_empty() {
            f.brief_kind = crate::dod::gate::brief_kind(home, id);
        }
        if matches!(f.kind(), "ship" | "scout")
            && let Some(wt) = worktree_path(meta)
        {
            f.worktree = if wt.is_dir() {
                WorktreeFact::Present
            } else {
                WorktreeFact::Missing
            };
        }
        if let Some(name) = meta.get("harness").filter(|h| !h.is_empty()) {
            f.profile = harness::profile(&cfg.harness, name);
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

/// Runs `git -C dir args…` with the time bound; `None` on any failure.
fn git(dir: &Path, args: &[&str]) -> Option<(i32, String)> {
    let out = crate::git::run_bounded(dir, args, GIT_TIMEOUT).ok()?;
    Some((if out.ok { 0 } else { 1 }, out.stdout))
}

/// Branch and HEAD of a worktree (one git call). A directory that is not
/// the top level of its own repository (a plain directory inside some other
/// clone, say) has none: git would otherwise answer for the outer one.
///
/// The branch is the full ref HEAD points at (`--symbolic-full-name HEAD`,
/// what `git symbolic-ref -q HEAD` prints, asked in the same call) with
/// `refs/heads/` stripped. `--abbrev-ref` would not do: it shortens to
/// `heads/<name>` when a tag has the branch's name.
pub fn git_facts(worktree: &Path) -> Option<GitFacts> {
    let (code, out) = git(
        worktree,
        &[
            "rev-parse",
            "--show-toplevel",
            "HEAD",
            "--symbolic-full-name",
            "HEAD",
        ],
    )?;
    if code != 0 {
        return None;
    }
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
    Some(GitFacts { head, branch })
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
    let Some(wt) = worktree_path(meta) else {
        return;
    };
    f.git = git_facts(&wt);
    if let Some(g) = &f.git
        && g.branch.as_deref() == Some(run.branch.as_str())
        && g.head != run.head
        && is_sha(&run.head)
    {
        f.run_contains_head = matches!(
            git(&wt, &["merge-base", "--is-ancestor", "HEAD", &run.head]),
            Some((0, _))
        );
    }
}

/// The socket a task's pane lives on: meta `tmux_socket`, else the config's.
fn socket_of<'a>(meta: &'a Meta, cfg: &'a Config) -> &'a str {
    match meta.str("tmux_socket") {
        "" => &cfg.tmux.socket,
        s => s,
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
            .map_or_else(|| "default".into(), |c| c.key.clone()),
        text: c.as_ref().map(|c| c.text.clone()).unwrap_or_default(),
        at: c.and_then(|c| c.at),
    }
}

/// Gathers the facts of `ids` in one pass, filling the screen and the gate
/// verdict exactly where the rules need them. Warnings (tmux could not be
/// asked) are returned for the caller to print.
pub fn gather(
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
            && !m.str("pane").is_empty()
        {
            sockets.entry(socket_of(m, cfg).to_string()).or_default();
        }
    }
    let mut tmuxes: HashMap<String, Box<dyn Pane>> = HashMap::new();
    for (socket, slot) in sockets.iter_mut() {
        let t = pane_for(socket);
        match t.list() {
            Ok(list) => *slot = Some(list.into_iter().map(|p| (p.id.clone(), p)).collect()),
            Err(e) => warnings.push(format!("tmux: {e}; pane states not read")),
        }
        tmuxes.insert(socket.clone(), t);
    }

    for f in &mut all {
        let Some(meta) = f.meta.clone() else { continue };
        let pane = meta.str("pane");
        let socket = socket_of(&meta, cfg);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::fixture;

    #[test]
    fn run_record_parses_loosely() {
        let r = RunRecord::parse(
            b"status=AWAITING_APPROVAL\nbranch=fm/x\nhead=ABC123\ngate=review\nfindings=2\njunk\n",
            Some(5),
        );
        assert_eq!(r.status, "awaiting_approval");
        assert_eq!(r.head, "abc123");
        assert_eq!((r.findings, r.gate.as_str()), (2, "review"));
        assert_eq!(RunRecord::parse(b"findings=x\n", None).findings, 0);
        for b in ["fm/x", "refs/heads/fm/x", " refs/heads/fm/x "] {
            let r = RunRecord::parse(format!("branch={b}\n").as_bytes(), None);
            assert_eq!(r.branch, "fm/x", "{b}");
        }
    }

    #[test]
    fn a_tag_named_like_the_branch_does_not_hide_the_branch() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path();
        let git = |args: &[&str]| fixture::git(repo, args);
        git(&["init", "-q", "-b", "main"]);
        fixture::commit_empty(repo);
        git(&["checkout", "-q", "-b", "fm/x"]);
        git(&["tag", "fm/x"]);
        let facts = git_facts(repo).unwrap();
        assert_eq!(facts.branch.as_deref(), Some("fm/x"));
        git(&["checkout", "-q", "--detach"]);
        let facts = git_facts(repo).unwrap();
        assert_eq!((facts.branch, facts.head.len()), (None, 40));
    }

    #[test]
    fn a_plain_directory_inside_a_clone_has_no_git_facts() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("home");
        std::fs::create_dir(&repo).unwrap();
        fixture::git(&repo, &["init", "-q", "-b", "master"]);
        fixture::commit_empty(&repo);
        let facts = git_facts(&repo).unwrap();
        assert_eq!(facts.branch.as_deref(), Some("master"));
        assert_eq!(facts.head.len(), 40);
        let nested = repo.join("worktrees/t9");
        std::fs::create_dir_all(&nested).unwrap();
        assert_eq!(git_facts(&nested), None);
    }
}

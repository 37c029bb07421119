//! Loading and saving board task files (`data/board/T-NNN.task`) under the
//! board lock (`data/board/.lock`).
//!
//! Every change runs as read → pure transition ([`super::ops`]) → atomic
//! replace while the lock is held, so a transition is a compare-and-set: of
//! many concurrent claimers exactly one sees `pending`. A refused change
//! writes nothing. Readers (`list`, `show`) take no lock: each file is
//! replaced atomically, so they see whole files.

use std::collections::{HashMap, HashSet};

use super::ops::{self, Op};
use super::{BoardId, Status, Task};
use crate::error::{Error, Result};
use crate::fsx::{self, LockGuard};
use crate::home::Home;

/// Takes the board lock (bounded wait; a timeout is exit 3), creating
/// `data/board/` if needed.
pub(crate) fn lock(home: &Home) -> Result<LockGuard> {
    fsx::ensure_dir(&home.data_dir())?;
    fsx::ensure_dir(&home.board_dir())?;
    fsx::lock(&home.board_lock(), fsx::LOCK_WAIT)
}

fn unreadable(id: BoardId, why: &str) -> Error {
    Error::refused(format!("board task {id} is unreadable: {why}"))
}

/// Reads one task; an unknown id is a refusal (exit 1).
pub(crate) fn load(home: &Home, id: BoardId) -> Result<Task> {
    let path = home.board_task(&id.to_string());
    let bytes =
        fsx::read_optional(&path)?.ok_or_else(|| Error::NoBoardTask { id: id.to_string() })?;
    let t = super::parse(&bytes).map_err(|why| unreadable(id, &why))?;
    if t.id != id {
        return Err(unreadable(id, &format!("its id line says {}", t.id)));
    }
    Ok(t)
}

/// Ids of every task file, sorted.
pub(crate) fn ids(home: &Home) -> Result<Vec<BoardId>> {
    let dir = home.board_dir();
    fsx::refuse_symlink(&dir)?;
    let mut out = Vec::new();
    for name in fsx::list_dir(&dir)? {
        if let Some(id) = name.to_str().and_then(BoardId::from_file_name) {
            out.push(id);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Every readable task, sorted by id, plus one warning per file that does
/// not parse (skipped, never fatal for a reader). Large boards are read by
/// a few threads, each through [`fsx::read_each_in`] (open, read, close per
/// file, nothing more): listing 10,000 files is dominated by syscalls.
pub(crate) fn load_all(home: &Home) -> Result<(Vec<Task>, Vec<String>)> {
    let dir = home.board_dir();
    let ids = ids(home)?;
    let threads = if ids.len() < 1024 {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
    };
    let chunk = ids.len().div_ceil(threads).max(1);
    let parts: Vec<Result<(Vec<Task>, Vec<String>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = ids
            .chunks(chunk)
            .map(|c| s.spawn(|| read_chunk(&dir, c)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Ok((Vec::new(), vec!["reader thread panicked".into()])))
            })
            .collect()
    });
    let mut tasks = Vec::with_capacity(ids.len());
    let mut warnings = Vec::new();
    for p in parts {
        let (t, w) = p?;
        tasks.extend(t);
        warnings.extend(w);
    }
    Ok((tasks, warnings))
}

fn read_chunk(dir: &std::path::Path, ids: &[BoardId]) -> Result<(Vec<Task>, Vec<String>)> {
    let names: Vec<String> = ids.iter().map(|id| format!("{id}.task")).collect();
    let mut tasks = Vec::with_capacity(ids.len());
    let mut warnings = Vec::new();
    fsx::read_each_in(dir, &names, |i, bytes| {
        let shown = dir.join(&names[i]);
        match bytes.map_err(|e| e.to_string()).and_then(super::parse) {
            Ok(t) if t.id == ids[i] => tasks.push(t),
            Ok(t) => warnings.push(format!("{}: its id line says {}", shown.display(), t.id)),
            Err(why) => warnings.push(format!("{}: {why}", shown.display())),
        }
    })?;
    Ok((tasks, warnings))
}

/// Atomically replaces a task's file. Call with the lock held.
pub(crate) fn save(home: &Home, t: &Task) -> Result<()> {
    fsx::atomic_write(
        &home.board_task(&t.id.to_string()),
        super::render(t).as_bytes(),
    )
}

/// What a change did: the task before and after, and the dependents it
/// released (as written).
#[derive(Debug, Clone)]
pub(crate) struct Change {
    pub(crate) before: Task,
    pub(crate) after: Task,
    pub(crate) released: Vec<Task>,
}

/// Runs `op` on task `id` under the lock. `before_save` runs after the
/// transition was accepted and before anything is written (the blocker wake
/// goes there, so a crash can duplicate a wake but never lose one); its
/// error aborts the change with nothing written.
pub(crate) fn update(
    home: &Home,
    id: BoardId,
    op: &Op,
    now: u64,
    before_save: impl FnOnce(&Task) -> Result<()>,
) -> Result<Change> {
    let _guard = lock(home)?;
    let before = load(home, id)?;
    let after = if matches!(op, Op::Retry) {
        // A retried task waits only for blockers that can still finish: one
        // finished meanwhile, or whose file is gone, is dropped first.
        let waiting = unfinished_blockers(home, &before)?;
        let mut base = before.clone();
        base.blocked_by = waiting;
        ops::apply(&base, op, now)?
    } else {
        ops::apply(&before, op, now)?
    };
    before_save(&after)?;
    save(home, &after)?;
    let released = if after.status.is_finished() && !before.status.is_finished() {
        release_all(home, now)?
    } else {
        Vec::new()
    };
    Ok(Change {
        before,
        after,
        released,
    })
}

/// Removes every finished task from its dependents' `blocked_by` and
/// unblocks those with none left; returns the tasks it rewrote. Call with
/// the lock held. Sweeping the whole board (not just the task that just
/// finished) also heals a release a crash interrupted earlier.
pub(crate) fn release_all(home: &Home, now: u64) -> Result<Vec<Task>> {
    let (tasks, _) = load_all(home)?;
    let gone = gone_blockers(home, &tasks)?;
    let finished: HashSet<BoardId> = tasks
        .iter()
        .filter(|t| t.status.is_finished())
        .map(|t| t.id)
        .chain(gone)
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        let mut cur: Option<Task> = None;
        for b in t.blocked_by.iter().filter(|b| finished.contains(b)) {
            let base = cur.as_ref().unwrap_or(&t);
            cur = ops::release(base, *b, now).or(cur);
        }
        // Blocked on nothing at all (a hand edit): nothing will ever
        // release it, so it is pending now.
        if cur.is_none() && t.status == Status::Blocked && t.blocked_by.is_empty() {
            let mut n = t.clone();
            n.status = Status::Pending;
            n.updated_at = now;
            cur = Some(n);
        }
        if let Some(n) = cur {
            save(home, &n)?;
            out.push(n);
        }
    }
    Ok(out)
}

/// Blockers named on the board whose task file no longer exists (deleted
/// by hand): they can never finish, so they count as released. A file that
/// exists but does not parse is not "gone".
fn gone_blockers(home: &Home, tasks: &[Task]) -> Result<Vec<BoardId>> {
    let present: HashSet<BoardId> = ids(home)?.into_iter().collect();
    Ok(tasks
        .iter()
        .flat_map(|t| t.blocked_by.iter().copied())
        .filter(|b| !present.contains(b))
        .collect())
}

/// `t`'s blockers that can still finish: present on the board and not
/// finished.
fn unfinished_blockers(home: &Home, t: &Task) -> Result<Vec<BoardId>> {
    let present: HashSet<BoardId> = ids(home)?.into_iter().collect();
    let mut out = Vec::new();
    for &b in &t.blocked_by {
        if !present.contains(&b) {
            continue;
        }
        match load(home, b) {
            Ok(bt) if bt.status.is_finished() => {}
            _ => out.push(b),
        }
    }
    Ok(out)
}

/// What `add` records besides the subject.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct NewTask {
    pub(crate) subject: String,
    pub description: String,
    pub assignee: Option<String>,
    pub blocked_by: Vec<BoardId>,
    pub priority: i64,
    pub require_approval: bool,
}

/// Creates the next `T-NNN` (one more than the highest present) under the
/// lock. Unknown or cyclic blockers are refused before anything is written.
pub(crate) fn add(home: &Home, new: NewTask, now: u64) -> Result<Task> {
    let _guard = lock(home)?;
    let existing = ids(home)?;
    let last = existing.last().map_or(0, |l| l.0);
    let id = BoardId(fsx::next_number(last, BoardId::MAX, &home.board_dir())?);
    let mut blocked_by = Vec::new();
    if !new.blocked_by.is_empty() {
        let (tasks, _) = load_all(home)?;
        let mut graph: HashMap<BoardId, Vec<BoardId>> =
            tasks.iter().map(|t| (t.id, t.blocked_by.clone())).collect();
        // A task file that exists but does not parse still counts as known.
        for e in &existing {
            graph.entry(*e).or_default();
        }
        let finished: HashSet<BoardId> = tasks
            .iter()
            .filter(|t| t.status.is_finished())
            .map(|t| t.id)
            .collect();
        blocked_by = ops::check_blockers(id, &new.blocked_by, &graph, &finished)?;
    }
    let mut t = Task::new(id, &new.subject, now);
    t.description = new.description;
    t.assignee = new.assignee;
    t.priority = new.priority;
    t.require_approval = new.require_approval;
    t.status = ops::initial_status(&blocked_by);
    t.blocked_by = blocked_by;
    save(home, &t)?;
    Ok(t)
}

/// Tasks with `status` (or all), for `list`.
pub(crate) fn filter(tasks: Vec<Task>, status: Option<Status>) -> Vec<Task> {
    match status {
        Some(s) => tasks.into_iter().filter(|t| t.status == s).collect(),
        None => tasks,
    }
}

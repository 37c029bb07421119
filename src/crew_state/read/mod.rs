//! Reading a task's own files, each once (docs/spec/crew-state.md#resolution, #busy-record,
//! docs/spec/meta.md): meta, the
//! status log's fold, the busy record, the run record, the pending inbox
//! count, whether the worktree meta names exists, the brief's `kind` when
//! meta has none, and the harness profile. No tmux, no git.
//!
//! A fleet read starts from one listing of `state/` ([`Listing`]): the
//! tasks (every `<id>.meta`, sorted) and which of their other files exist,
//! so absent ones are never opened. A [`Stamps`] of the files read lets a
//! reader that keeps the [`Facts`] between frames re-read only what
//! changed: a file whose inode, size and modification time are as they
//! were, and whose modification time is older than the read that produced
//! the facts by more than [`crate::stamp::SETTLE_SECS`], has not changed since (a write
//! after that read would have given it a later modification time).

mod dirs;
mod stamps;
mod state_dir;

use super::facts::{Escalation, Facts, RunRecord, WorktreeFact};
use crate::config::Config;
use crate::error::Result;
use crate::gitfiles::GitFiles;
use crate::home::Home;
use crate::meta::TaskMeta;
use crate::status::busy::BusyRecord;
use crate::status::{self};
use crate::task_id::TaskId;
use crate::{fsx, inbox};

pub(crate) use crate::listing::{Listed, Listing, Present};
pub(crate) use dirs::Dirs;
pub(crate) use stamps::Stamps;
use state_dir::Stat;
pub(crate) use state_dir::StateDir;

/// When the turn the agent's session log reports running began, unless a
/// busy record already counts ([`crate::agent_report`]).
/// `note` is the task's `.agent-home` ([`agent_note`]).
pub(crate) fn agent_turn(f: &Facts, note: &[u8]) -> Option<u64> {
    if f.busy
        .as_ref()
        .is_some_and(|b| b.busy_since(f.last_line_at))
    {
        return None;
    }
    let at = crate::agent_report::turn_running_noted(note, f.meta.as_ref()?)?;
    crate::status::busy::busy_from_log(at, f.last_line_at, f.busy.as_ref())
}

/// The task's `.agent-home` note: where its agent writes its own reports
/// (a Codex home, a Claude Code config dir).
pub(crate) fn agent_note(home: &Home, id: &TaskId) -> Option<Vec<u8>> {
    fsx::read_optional(&crate::agent_report::agent_home_file(home, id)).ok()?
}

/// Whether the meta names a host (the row's `host`, `Row::with`).
pub(crate) fn is_remote(m: &TaskMeta) -> bool {
    m.host_name().is_some()
}

/// Reads the task's own files into facts; a file that cannot be read makes
/// the task's facts say so ([`Facts::error`]).
pub(crate) fn task(
    home: &Home,
    cfg: &Config,
    dir: &StateDir,
    id: &TaskId,
    present: Present,
    now: u64,
) -> Facts {
    // Filled in place: the facts are large, and each move copies them.
    let mut f = Facts::empty(id.clone(), now);
    if let Err(e) = files(home, cfg, dir, id, present, &mut f) {
        f = Facts::empty(id.clone(), now);
        f.error = Some(e.to_string());
    }
    f
}

fn files(
    home: &Home,
    cfg: &Config,
    dir: &StateDir,
    id: &TaskId,
    present: Present,
    f: &mut Facts,
) -> Result<()> {
    dir.read_if(
        id,
        present,
        (Present::META, "meta", Stat::Plain),
        || home.meta(id),
        |b, _| TaskMeta::parse_fields_into(b, &mut f.meta),
    )?
    .transpose()?;
    // A remote task's row comes from its host (`remote::fleet`): its files
    // here, if any, would be read for nothing.
    if f.meta.as_ref().is_some_and(is_remote) {
        return Ok(());
    }
    let paused = &cfg.brief.paused_verb;
    let fold = &mut f.fold;
    if let Some(mtime) = dir.read_if(
        id,
        present,
        (Present::STATUS, "status", Stat::Mtime),
        || home.status(id),
        |b, mtime| {
            *fold = status::Fold::for_view(b, paused);
            mtime
        },
    )? {
        f.log_mtime = mtime;
        if f.fold.any_line {
            f.last_line_at = f.fold.last_at.or(f.log_mtime);
        }
    }
    f.busy = dir
        .read_if(
            id,
            present,
            (Present::BUSY, "busy", Stat::Plain),
            || home.busy(id),
            |b, _| BusyRecord::parse(b),
        )?
        .flatten();
    f.run = dir.read_if(
        id,
        present,
        (Present::RUN, "run", Stat::Mtime),
        || home.run(id),
        RunRecord::parse,
    )?;
    f.usage = dir
        .read_if(
            id,
            present,
            (Present::USAGE, "usage", Stat::Plain),
            || crate::usage::cache_path(home, id),
            |b, _| crate::usage::read_cached(b),
        )?
        .flatten();
    if present.has(Present::INBOX) {
        let escalated;
        (f.inbox_pending, escalated) = dir.inbox(home, id, |pending, escalated| {
            let marker = (!pending.is_empty() && escalated)
                .then(|| escalation(home, id, pending))
                .transpose();
            (pending.len(), marker)
        })?;
        f.escalated = escalated?.flatten();
    }
    if let Some(meta) = &f.meta {
        if meta.kind.is_none() {
            f.brief_kind = crate::dod::gate::brief_kind(home, id);
        }
        if let Some(name) = &meta.harness {
            f.profile = dir.profile(cfg, name);
        }
    }
    check_worktree(f, &dir.dirs, None);
    Ok(())
}

/// `.escalated` when it names one of the `pending` records, with the
/// rings `.ring-state` counted for it (0 when it tracks another record).
fn escalation(home: &Home, id: &TaskId, pending: &[u64]) -> Result<Option<Escalation>> {
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

/// Rule 1's look at the worktree meta names (asked on every read: it can
/// be torn down while its task's files stay as they were).
pub(crate) fn check_worktree(f: &mut Facts, dirs: &Dirs, git: Option<&GitFiles>) {
    f.worktree = WorktreeFact::Unchecked;
    if let Some(meta) = &f.meta
        && f.kind().has_worktree()
        && let Some(wt) = &meta.worktree
    {
        f.worktree = if dirs.is_dir(wt, git) {
            WorktreeFact::Present
        } else {
            WorktreeFact::Missing
        };
    }
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;

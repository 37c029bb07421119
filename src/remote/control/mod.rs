//! The lifecycle of a task on another host (docs/remote.md, "Lifecycle").
//!
//! **Captain's side** ([`captain`]): `fm-control <id> spawn --host <name>
//! …`, and every verb on a task whose meta says `host=<name>`, is one
//! lifecycle request of the far entry (the action as data, the brief of a
//! new task as its body) under one key, retried while the host is
//! unreachable. The captain's meta of the task is written only around
//! that call: `host=<name>` with the pending key before a spawn, kept
//! when the far side spawned, taken back when it refused; the captain's
//! files of the task are archived only when the far teardown succeeded.
//!
//! **Far side** ([`serve`]): the far entry's lifecycle request looks the
//! key up first (waiting for an attempt still running with it, so a retry
//! never meets "another lifecycle action is already running"), writes the
//! brief a new task brought, runs the action as a local one and keeps its
//! report with the key. A spawn that fails takes the brief it wrote back;
//! a teardown keeps its report in the archive entry it made, where a
//! retry finds it.

use std::path::PathBuf;
use std::time::Duration;

use super::call;
use super::kept;
use crate::config::Config;
use crate::control::Action;
use crate::error::{Error, Result};
use crate::events::{Entry, Event, Tool};
use crate::home::Home;
use crate::meta::{self, TaskMeta};
use crate::route::wire::{Envelope, attempts_with};
use crate::task_id::TaskId;
use crate::{clock, fsx};
use request::{LifecycleReport, LifecycleRequest};

/// The far tool.
const TOOL: &str = "fm-control";

/// A lifecycle call may take this much longer than the host's
/// `timeout_ms`: `git worktree add` (bounded at 60 s there) and an agent's
/// exit (`exit_wait_secs`, 30 s by default) run inside it.
pub const LIFECYCLE_EXTRA: Duration = Duration::from_secs(150);

/// Meta key of the captain's side: the key of a spawn that got no answer.
const SPAWN_KEY: &str = "spawn_key";
/// Meta key of the captain's side: the key of a teardown that got no answer.
const TEARDOWN_KEY: &str = "teardown_key";

/// Longest brief a spawn brings (the far side refuses a longer one).
pub const MAX_BRIEF_BYTES: u64 = 1024 * 1024;

/// Runs `action` on the host task `id` is on: the one `--host` names (a
/// spawn) or its meta's, as a lifecycle request of the far entry. `None`
/// when the task is local; otherwise the far report, or the far refusal
/// as [`Error::Far`]. `given` is a key the captain gave
/// (`--idempotency-key`): checked, and the far key instead of a fresh one
/// (or a pending one kept in the meta).
pub(crate) fn captain(
    home: &Home,
    cfg: &Config,
    id: &TaskId,
    action: &Action,
    host_flag: Option<&str>,
    given: Option<&str>,
) -> Result<Option<LifecycleReport>> {
    if let Some(k) = given {
        kept::validate(k)?;
    }
    fsx::refuse_symlink(&home.meta(id))?;
    let meta = TaskMeta::load(home, id)?;
    let recorded = meta.as_ref().and_then(|m| m.host.clone());
    let name = match (host_flag, recorded.as_deref()) {
        (None, None) => return Ok(None),
        (Some(f), Some(r)) if f != r => {
            return Err(Error::refused(format!(
                "task {id} runs on host {r}, not {f}"
            )));
        }
        (Some(f), None) => {
            if meta
                .as_ref()
                .is_some_and(|m| m.pane.is_some() || m.worktree.is_some())
            {
                return Err(Error::refused(format!(
                    "task {id} was spawned on this host: tear it down before spawning it on host {f}"
                )));
            }
            f.to_string()
        }
        (_, Some(r)) => r.to_string(),
    };
    let Some(host) = cfg.hosts.get(&name) else {
        if host_flag.is_some() {
            let known: Vec<&str> = cfg.hosts.keys().map(String::as_str).collect();
            return Err(Error::usage(format!(
                "unknown host {} (configured: {}; define [hosts.{}])",
                crate::error::quoted(&name),
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                },
                crate::error::hint_name(&name),
            )));
        }
        return Err(Error::refused(format!(
            "task {id} runs on host {name}, which config does not define ([hosts.{name}])"
        )));
    };
    fsx::ensure_dir(&home.state_dir())?;
    let Some(_lock) = fsx::try_lock(&home.control_lock(id))? else {
        return Err(Error::refused(format!(
            "another lifecycle action is already running ({id})"
        )));
    };
    let pending = |k: &str| {
        meta.as_ref()
            .and_then(|m| m.raw.get(k))
            .map(str::trim)
            .filter(|v| kept::validate(v).is_ok())
            .map(str::to_string)
    };
    let mut req = LifecycleRequest {
        action: action.clone(),
        brings_brief: false,
        brief_paths: Vec::new(),
    };
    let mut body = Vec::new();
    // The meta key that keeps this call's key until it was answered.
    let mut keep = None;
    let mut key = None;
    let what = match action {
        Action::Spawn { project, .. } => {
            if !project.is_absolute() {
                return Err(Error::usage(format!(
                    "--project {} must be an absolute path on host {name}",
                    project.display()
                )));
            }
            // A task the host has not got yet (or whose spawn got no
            // answer) brings its brief; one spawned there before is
            // spawned again from the far brief.
            let new = recorded.is_none() || pending(SPAWN_KEY).is_some();
            if new {
                fsx::refuse_symlink(&home.task_data(id))?;
                body = fsx::read_optional(&home.brief(id))?.ok_or_else(|| {
                    Error::refused(format!(
                        "no brief for {id}: write it first (fm-brief {id} …)"
                    ))
                })?;
                // The brief names this home's paths; the far side
                // rewrites them to its own.
                let meta = crate::meta::TaskMeta::load(home, id)?.unwrap_or_default();
                req.brings_brief = true;
                req.brief_paths = crate::brief::BriefPaths::of(home, cfg, id, &meta).to_vec();
                keep = Some(SPAWN_KEY);
                key = pending(SPAWN_KEY);
            }
            "the spawn"
        }
        Action::Interrupt => "the interrupt",
        Action::Exit { .. } => "the exit",
        Action::Relaunch { .. } => "the relaunch",
        Action::Restore { .. } => "the restore",
        Action::Teardown { .. } => {
            keep = Some(TEARDOWN_KEY);
            key = pending(TEARDOWN_KEY);
            "the teardown"
        }
    };
    let key = given
        .map(str::to_string)
        .or(key)
        .unwrap_or_else(|| call::new_key(id));
    let existed = meta.is_some();
    if let Some(k) = keep {
        meta::update(home, id, |m| {
            m.set("host", &name);
            m.set(k, &key);
        })?;
    }
    let remote = call::Remote {
        name: name.clone(),
        cfg: host.clone(),
    };
    let env = Envelope::new(key.clone(), id.to_string(), req);
    let got: Result<LifecycleReport> = match attempts_with(
        home,
        &remote,
        &env,
        &body,
        LIFECYCLE_EXTRA,
    ) {
        Ok(Ok(report)) => Ok(report),
        Err(e) => Err(e),
        Ok(Err(why)) => {
            return Err(Error::External {
                program: "ssh".into(),
                msg: format!(
                    "host {name} unreachable: {why} ({} attempts; {what} may have landed there: key {key}{})",
                    call::ATTEMPTS,
                    if keep.is_some() {
                        "; the same command again finishes it"
                    } else {
                        ""
                    }
                ),
            });
        }
    };
    // Only the far side's own refusal takes back what this call wrote: an
    // answer that could not be read may stand for a change made there.
    let refused = matches!(got, Err(Error::Far { .. }));
    match (action, keep) {
        (Action::Spawn { .. }, Some(k)) if got.is_ok() => spawned_here(home, id, &name, k)?,
        (Action::Spawn { .. }, Some(k)) if refused => take_back(home, id, &["host", k], existed)?,
        (Action::Teardown { .. }, _) if got.is_ok() => archive_here(home, id)?,
        (Action::Teardown { .. }, Some(k)) if refused => take_back(home, id, &[k], true)?,
        _ => {}
    }
    got.map(Some)
}

/// The far side spawned: the captain's meta names the host, and the
/// brief's kind, mode, repo and branch, as a local spawn records them.
fn spawned_here(home: &Home, id: &TaskId, host: &str, key_field: &str) -> Result<()> {
    let header = crate::brief::BriefHeader::of_task(home, id)?;
    meta::update(home, id, |m| {
        m.set("host", host);
        m.remove(key_field);
        header.apply_to_meta(m, crate::brief::MetaSync::FillMissing);
        m.set("spawned_at", &clock::now().to_string());
    })?;
    Ok(())
}

/// The far side refused: the keys this call wrote go again, and a meta
/// this call created goes with them.
fn take_back(home: &Home, id: &TaskId, keys: &[&str], existed: bool) -> Result<()> {
    let m = meta::update(home, id, |m| {
        for k in keys {
            m.remove(k);
        }
    })?;
    if !existed && m.raw.entries().is_empty() {
        fsx::remove_optional(&home.meta(id))?;
    }
    Ok(())
}

/// The far teardown succeeded: every `state/<id>.*` file of the captain's
/// side (meta, keys, anything else) and `data/<id>` move into
/// `state/archive/<id>-<epoch>/`, as a local teardown's do.
fn archive_here(home: &Home, id: &TaskId) -> Result<()> {
    fsx::refuse_symlink(&home.archive_dir())?;
    let prefix = format!("{id}.");
    let mut moved: Vec<(PathBuf, std::ffi::OsString)> = fsx::list_dir(&home.state_dir())?
        .into_iter()
        .filter(|n| n.to_str().is_some_and(|n| n.starts_with(&prefix)))
        .map(|n| (home.state_dir().join(&n), n))
        .collect();
    moved.push((home.task_data(id), "data".into()));
    let now = clock::now();
    let dest = home.archive_entry(id, now);
    fsx::ensure_dir(&dest)?;
    for (src, name) in moved {
        fsx::refuse_symlink(&src)?;
        if fsx::exists(&src)? && !fsx::rename_noclobber(&src, &dest.join(&name))? {
            return Err(Error::refused(format!(
                "archive entry {} already exists",
                dest.join(name).display()
            )));
        }
    }
    let event = Event::ControlTornDown {
        archive: dest.display().to_string(),
    };
    Entry::new(now, Tool::Control, id.as_str(), event).record(home);
    Ok(())
}

mod far;
pub mod request;
pub use far::rehome_brief;
pub(crate) use far::serve;

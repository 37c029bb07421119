//! The far side of a lifecycle call (a lifecycle request of the far
//! entry, made by another home's captain): the keyed serve of the action,
//! with the brief a spawn brought written and undone, and the rewriting
//! of that brief's paths.

use std::path::PathBuf;

use super::TOOL;
use super::request::{LifecycleReport, LifecycleRequest};
use crate::config::Config;
use crate::control::{self, Action};
use crate::error::{Error, Result};
use crate::fsx;
use crate::home::Home;
use crate::meta::{self, TaskMeta};
use crate::remote::kept::{self, Answer, Lookup};
use crate::task_id::TaskId;

/// The brief a spawn brought, written on the captain's side for the
/// paths `from` (worktree, status log, inbox, report),
/// rewritten to name this home's paths of task `id` (docs/remote.md,
/// "A brief's paths on another host").
pub fn rehome_brief(
    home: &Home,
    cfg: &Config,
    id: &TaskId,
    bytes: Vec<u8>,
    from: &[std::path::PathBuf],
) -> Result<Vec<u8>> {
    let from = crate::brief::BriefPaths::from_slice(from)
        .ok_or_else(|| Error::usage("a brief's paths are four: worktree, status, inbox, report"))?;
    let text =
        String::from_utf8(bytes).map_err(|_| Error::usage("the brief on stdin is not UTF-8"))?;
    let meta = TaskMeta::load(home, id)?.unwrap_or_default();
    let to = crate::brief::BriefPaths::of(home, cfg, id, &meta);
    Ok(from.rehome(&text, &to).into_bytes())
}

/// The far side of a keyed lifecycle call (or of a spawn that brings its
/// brief, `brief`): returns its report, kept under the key. A key served
/// before gives its report again and does nothing.
pub(crate) fn serve(
    home: &Home,
    cfg: &Config,
    id: &TaskId,
    req: &LifecycleRequest,
    key: Option<&str>,
    brief: Option<Vec<u8>>,
) -> Result<LifecycleReport> {
    let action = req.action.clone();
    // What the key is bound to: the action with its arguments and the
    // brief a spawn brought.
    let asked = format!("{action:?}");
    let request = kept::Request::new(
        TOOL,
        id.as_str(),
        &[asked.as_bytes(), brief.as_deref().unwrap_or_default()],
    );
    let fresh = match key {
        None => None,
        Some(k) => match kept::lookup(home, id, k, &request)? {
            Lookup::Seen(a) => return parse(id, k, &a.stdout),
            Lookup::Fresh(f) => Some(f),
        },
    };
    let teardown = matches!(action, Action::Teardown { .. });
    if let Some(k) = key
        && teardown
        && !fsx::exists(&home.meta(id))?
        && let Some(entry) = latest_archive(home, id)?
        && let Some(a) = kept::find_in(&entry.join(format!("{id}.seen")), k, &request)?
    {
        return parse(id, k, &a.stdout);
    }
    #[expect(
        clippy::disallowed_methods,
        reason = "outside the home: a path on this host the captain named"
    )]
    let missing = |project: &std::path::Path| !(project.is_absolute() && project.is_dir());
    if let Action::Spawn { project, .. } = &action
        && missing(project)
    {
        return Err(Error::refused(format!(
            "project {} not found on this host",
            project.display()
        )));
    }
    let made = match brief {
        None => None,
        Some(bytes) => Some(write_brief(home, id, &bytes)?),
    };
    let line = match control::run(home, cfg, id, action) {
        Ok(l) => l,
        Err(e) => {
            if let Some(created_dir) = made {
                undo_brief(home, id, created_dir);
            }
            return Err(e);
        }
    };
    let mut report = LifecycleReport {
        id: id.to_string(),
        result: line,
        warnings: Vec::new(),
    };
    if let Some(f) = fresh {
        let stdout = serde_json::to_string(&report).map_err(|e| Error::External {
            program: "serde_json".into(),
            msg: e.to_string(),
        })?;
        let answer = Answer { code: 0, stdout };
        let kept = if teardown {
            match latest_archive(home, id) {
                Ok(Some(entry)) => f.remember_at(&entry.join(format!("{id}.seen")), &answer),
                Ok(None) => Ok(()),
                Err(e) => Err(e),
            }
        } else {
            f.remember(&answer)
        };
        if let Err(e) = kept {
            report.warnings.push(format!(
                "{id}: done, but its idempotency key was not kept: {e}"
            ));
        }
    }
    Ok(report)
}

/// The report kept under `key`.
fn parse(id: &TaskId, key: &str, kept: &str) -> Result<LifecycleReport> {
    serde_json::from_str(kept).map_err(|e| {
        Error::io(
            "replay of an idempotency key",
            id.as_str(),
            std::io::Error::other(format!(
                "the report kept for key {} does not parse ({e}); nothing was done",
                crate::error::quoted(key)
            )),
        )
    })
}

/// Writes the brief a spawn brought, refusing a task this host knows;
/// returns whether `data/<id>/` was created for it.
fn write_brief(home: &Home, id: &TaskId, bytes: &[u8]) -> Result<bool> {
    if meta::task_known(home, id)? {
        return Err(Error::refused(format!(
            "task {id} already exists on this host"
        )));
    }
    let dir = home.task_data(id);
    let created = !fsx::exists(&dir)?;
    fsx::ensure_dir(&dir)?;
    fsx::atomic_write(&home.brief(id), bytes)?;
    Ok(created)
}

/// A spawn that brought its brief failed: nothing of it stays.
fn undo_brief(home: &Home, id: &TaskId, created_dir: bool) {
    let _ = fsx::remove_optional(&home.brief(id));
    let _ = fsx::remove_optional(&home.agent_hooks(id));
    if created_dir {
        let _ = fsx::remove_empty_dir(&home.task_data(id));
    }
}

/// The newest archive entry of task `id` (`state/archive/<id>-<epoch>`).
fn latest_archive(home: &Home, id: &TaskId) -> Result<Option<PathBuf>> {
    let prefix = format!("{id}-");
    let newest = fsx::list_dir(&home.archive_dir())?
        .into_iter()
        .filter_map(|n| {
            let n = n.to_str()?.to_string();
            let epoch: u64 = n.strip_prefix(&prefix)?.parse().ok()?;
            Some((epoch, n))
        })
        .max();
    Ok(newest.map(|(_, n)| home.archive_dir().join(n)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_archive_entry_of_the_task_is_found_and_no_other() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let id = TaskId::parse("t1").unwrap();
        assert_eq!(latest_archive(&home, &id).unwrap(), None);
        for n in ["t1-100", "t1-99", "t1-2-500", "t10-900", "t1-x"] {
            std::fs::create_dir_all(home.archive_dir().join(n)).unwrap();
        }
        assert_eq!(
            latest_archive(&home, &id).unwrap(),
            Some(home.archive_dir().join("t1-100"))
        );
    }

    #[test]
    fn a_spawn_brief_for_a_known_task_is_refused_and_undone_otherwise() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let id = TaskId::parse("t1").unwrap();
        assert!(write_brief(&home, &id, b"# brief\n").unwrap());
        let e = write_brief(&home, &id, b"# other\n").unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert_eq!(e.to_string(), "task t1 already exists on this host");
        undo_brief(&home, &id, true);
        assert!(!home.task_data(&id).exists());
    }
}

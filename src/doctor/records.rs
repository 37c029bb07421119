//! The doctor's checks of a home's records: debris of killed writers,
//! task records, panes and the watcher.

use super::{Check, Level};
use crate::config::Config;
use crate::fsx;
use crate::home::Home;

/// Sweeps the stale temp files killed writers left under `state/` and
/// `data/` (two levels down: inboxes and `handled/`, task dirs and their
/// brief history) and reports them; no line when there were none.
pub(super) fn debris_check(home: &Home) -> Option<Check> {
    let mut dirs = Vec::new();
    for top in [home.state_dir(), home.data_dir()] {
        let mut level = vec![top];
        for _ in 0..3 {
            let mut next = Vec::new();
            for d in &level {
                next.extend(subdirs(d));
            }
            dirs.append(&mut level);
            level = next;
        }
    }
    let mut swept = Vec::new();
    let mut errors = Vec::new();
    for d in &dirs {
        match fsx::sweep_temps(d, fsx::STALE_TEMP) {
            Ok(s) => swept.extend(s),
            Err(e) => errors.push(e.to_string()),
        }
    }
    if swept.is_empty() && errors.is_empty() {
        return None;
    }
    let mut detail = Vec::new();
    if !swept.is_empty() {
        let shown: Vec<String> = swept
            .iter()
            .take(5)
            .map(|p| p.display().to_string())
            .collect();
        let more = swept.len().saturating_sub(shown.len());
        detail.push(format!(
            "swept {} stale temp file(s) left by killed writers: {}{}",
            swept.len(),
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    detail.extend(errors);
    Some(Check::new("debris", Level::Warn, detail.join("; ")))
}

/// The directories directly in `dir`, not through symlinks.
fn subdirs(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(names) = fsx::list_dir(dir) else {
        return Vec::new();
    };
    names
        .into_iter()
        .map(|n| dir.join(n))
        .filter(|p| fsx::stat(p).is_ok_and(|m| m.is_some_and(|m| m.file_type().is_dir())))
        .collect()
}

/// Every task's meta can be read (no symlink, a regular file), keeps other
/// users out (mode 600) and names a harness that exists; every board file
/// parses. One line: the first few problems, unreadable ones failing.
pub(super) fn task_records_check(home: &Home, cfg: &Config) -> Check {
    use std::os::unix::fs::PermissionsExt;
    let ids = match home.task_ids_with_meta() {
        Ok(ids) => ids,
        Err(e) => return Check::new("tasks", Level::Fail, e.to_string()),
    };
    let mut fails = Vec::new();
    let mut warns = Vec::new();
    for id in &ids {
        match crate::meta::TaskMeta::load(home, id) {
            Err(e) => fails.push(format!("{id}: {e}")),
            Ok(m) => {
                let m = m.unwrap_or_default();
                if let Ok(Some(md)) = fsx::stat(&home.meta(id))
                    && md.permissions().mode() & 0o077 != 0
                {
                    warns.push(format!(
                        "{id}.meta is mode {:o}",
                        md.permissions().mode() & 0o777
                    ));
                }
                if let Some(h) = &m.harness
                    && crate::harness::profile(&cfg.harness, h).is_none()
                {
                    warns.push(format!("{id}: unknown harness {h:?}"));
                }
            }
        }
    }
    match crate::board::store::load_all(home) {
        Ok((_, skipped)) => warns.extend(skipped.into_iter().map(|w| format!("board: {w}"))),
        Err(e) => fails.push(format!("board: {e}")),
    }
    let (level, problems) = if !fails.is_empty() {
        (Level::Fail, [fails, warns].concat())
    } else if !warns.is_empty() {
        (Level::Warn, warns)
    } else {
        return Check::new(
            "tasks",
            Level::Ok,
            format!("{} task(s), board readable", ids.len()),
        );
    };
    let shown: Vec<&str> = problems.iter().take(5).map(String::as_str).collect();
    let more = problems.len().saturating_sub(shown.len());
    let tail = if more > 0 {
        format!(" (+{more} more)")
    } else {
        String::new()
    };
    Check::new("tasks", level, format!("{}{tail}", shown.join("; ")))
}

/// Whether every task's recorded pane is still its own
/// ([`crate::tmux::owner`]): a pane gone (its server restarted, or the id
/// now another's) and a pane two tasks record are named. Local tasks
/// only (a far host's doctor checks its own); one tmux call per socket.
pub(super) fn panes_check(home: &Home, cfg: &Config) -> Option<Check> {
    use crate::tmux::owner::{Claim, Lost};
    use crate::tmux::pane::{Pane, Tmux};
    use std::collections::BTreeMap;
    let mut by_socket: BTreeMap<String, Vec<Claim>> = BTreeMap::new();
    for id in home.task_ids_with_meta().ok()? {
        let Ok(Some(m)) = crate::meta::TaskMeta::load(home, &id) else {
            continue;
        };
        if m.host_name().is_some() {
            continue;
        }
        if let Some(c) = Claim::of(&id, &m) {
            by_socket
                .entry(m.socket(cfg).to_string())
                .or_default()
                .push(c);
        }
    }
    if by_socket.is_empty() {
        return None;
    }
    let (mut gone, mut twice, mut proven) = (Vec::new(), Vec::new(), 0);
    for (socket, claims) in &by_socket {
        let Ok(list) = Tmux::new(socket).list() else {
            continue;
        };
        // No server at all (a reboot, a `kill-server`): every pane on it
        // is gone, which the proof below cannot tell from a pane closed
        // at a task's end.
        if list.is_empty() {
            // A finished task's pane closing with the server is its end.
            let ids: Vec<&str> = claims
                .iter()
                .filter(|c| !crate::status::finished(home, &c.task, &cfg.brief.paused_verb))
                .map(|c| c.task.as_str())
                .collect();
            if ids.is_empty() {
                continue;
            }
            gone.push(format!(
                "no tmux server runs on socket {socket}, where {} task pane(s) were opened ({})",
                ids.len(),
                ids.join(", ")
            ));
            continue;
        }
        let mut holders: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for c in claims {
            holders.entry(&c.pane).or_default().push(c.task.as_str());
            match c.check_in(&list) {
                Ok(()) => proven += 1,
                // A pane closed on the server it was opened on is a
                // finished task's ordinary end, not a problem.
                Err(Lost::Closed) => {}
                Err(lost) => gone.push(format!("{}: {}", c.task, lost.words())),
            }
        }
        for (pane, tasks) in holders {
            if tasks.len() > 1 {
                twice.push(format!("pane {pane} is recorded by {}", tasks.join(", ")));
            }
        }
    }
    if gone.is_empty() && twice.is_empty() {
        return Some(Check::new(
            "panes",
            Level::Ok,
            format!("{proven} task pane(s) proven theirs"),
        ));
    }
    let mut problems = [twice, gone].concat();
    let more = problems.len().saturating_sub(5);
    problems.truncate(5);
    let tail = if more > 0 {
        format!(" (+{more} more)")
    } else {
        String::new()
    };
    Some(Check::new(
        "panes",
        Level::Warn,
        format!(
            "{}{tail}; `fm restore` brings back every task whose pane is gone (its agent's conversation resumed), `fm-control <id> relaunch` one at a time",
            problems.join("; ")
        ),
    ))
}

/// The watcher line from the lock and the heartbeat's age: a holder whose
/// heartbeat is older than `2 × poll_secs + 10` s is probably hung.
pub(crate) fn watcher_line(held: bool, beat_age: Option<u64>, poll_secs: u64) -> (Level, String) {
    if !held {
        return (
            Level::Warn,
            "not running (start `fm-watch` or add `fm-watch --crontab` to cron)".into(),
        );
    }
    let limit = poll_secs.saturating_mul(2).saturating_add(10);
    match beat_age {
        Some(age) if age > limit => (
            Level::Warn,
            format!("watcher holds the lock but its heartbeat is {age}s old: hung?"),
        ),
        Some(age) => (
            Level::Ok,
            format!("running (heartbeat {} ago)", crate::clock::age(age)),
        ),
        None => (Level::Ok, "running (no heartbeat yet)".into()),
    }
}

pub(super) fn watcher_check(home: &Home, poll_secs: u64) -> Check {
    if !fsx::is_dir(&home.state_dir()).unwrap_or(false) {
        return Check::new("watcher", Level::Warn, "not running (no state dir)");
    }
    let lock = home.watch_lock();
    if !fsx::exists(&lock).unwrap_or(false) {
        return Check::new(
            "watcher",
            Level::Warn,
            "not running (start `fm-watch` or add `fm-watch --crontab` to cron)",
        );
    }
    let held = match fsx::try_lock(&lock) {
        Ok(free) => free.is_none(),
        Err(e) => return Check::new("watcher", Level::Fail, e.to_string()),
    };
    let beat_age = fsx::stat(&home.watch_beat())
        .ok()
        .flatten()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.elapsed().ok())
        .map(|d| d.as_secs());
    let (level, detail) = watcher_line(held, beat_age, poll_secs);
    Check::new("watcher", level, detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_heartbeat_under_a_held_lock_is_a_warning() {
        assert_eq!(watcher_line(true, Some(40), 15).0, Level::Ok);
        let (level, detail) = watcher_line(true, Some(41), 15);
        assert_eq!(level, Level::Warn);
        assert_eq!(
            detail,
            "watcher holds the lock but its heartbeat is 41s old: hung?"
        );
        assert_eq!(watcher_line(true, None, 15).0, Level::Ok);
        assert_eq!(watcher_line(false, Some(1), 15).0, Level::Warn);
    }
}

//! What the Codex leg reads of the agent's own session log (its rollout,
//! `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl`):
//! which file is the thread's, the version that wrote it, and whether a
//! turn started since a doorbell was queued.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::meta::TaskMeta;

/// How far back from a rollout's end the newest turn start is looked for.
const MAX_TAIL: u64 = 8 << 20;

/// The longest `session_meta` line read.
const MAX_META_LINE: u64 = 1 << 20;

/// How long an idle agent may leave a queued doorbell untaken before
/// the ring types it ([`stuck`]).
pub(crate) const STUCK_SECS: u64 = 20;

#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the agent's own session log"
)]
pub(super) fn is_file(p: &Path) -> bool {
    p.is_file()
}

/// The rollout of `thread` under the agent's Codex home: the file named
/// after the thread (`rollout-<time>-<thread>.jsonl`) — the newest the
/// worktree's since the spawn, else found by its name in any day's
/// directory (a resumed thread appends to the file of the day it began).
pub(super) fn find_thread_rollout(
    codex_home: &Path,
    meta: &TaskMeta,
    thread: &str,
) -> Option<PathBuf> {
    let sessions = codex_home.join("sessions");
    let suffix = format!("-{thread}.jsonl");
    let named = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(&suffix))
    };
    if let Some(worktree) = meta.worktree.as_deref() {
        let since = meta.spawned_at.unwrap_or(0).saturating_sub(5);
        if let Some(p) = crate::agent_report::find_rollout(&sessions, worktree, since)
            && named(&p)
        {
            return Some(p);
        }
    }
    let mut dirs = vec![(0, sessions)];
    let mut found = None;
    while let Some((depth, dir)) = dirs.pop() {
        for p in entries(&dir) {
            if depth < 3 {
                dirs.push((depth + 1, p));
            } else if named(&p) {
                found = Some(p);
            }
        }
    }
    found
}

#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the agent's session log directories"
)]
fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// A rollout's `session_meta.cli_version`.
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the agent's own session log"
)]
pub(crate) fn cli_version(path: &Path) -> Option<String> {
    use std::io::BufRead;
    let f = std::fs::File::open(path).ok()?;
    let mut line = Vec::new();
    std::io::BufReader::new(f.take(MAX_META_LINE))
        .read_until(b'\n', &mut line)
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&line).ok()?;
    if v.get("type")?.as_str()? != "session_meta" {
        return None;
    }
    Some(v.get("payload")?.get("cli_version")?.as_str()?.to_string())
}

/// Whether the rollout shows a turn started after `at`: a queued
/// doorbell runs as a turn of its own, so one that started since it was
/// queued took it (or, the captain's, comes before it: a copy more then
/// only rings twice, which is harmless).
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the agent's own session log"
)]
pub(crate) fn taken_since(path: &Path, at: u64) -> bool {
    let Ok(mut f) = std::fs::File::open(path) else {
        // No log to look at: nothing holds the next doorbell back.
        return true;
    };
    let Ok(len) = f.metadata().map(|m| m.len()) else {
        return true;
    };
    let mut window = 64 << 10;
    loop {
        let take = window.min(len);
        let mut buf = Vec::new();
        if f.seek(SeekFrom::Start(len - take)).is_err()
            || f.by_ref().take(take).read_to_end(&mut buf).is_err()
        {
            return true;
        }
        if let Some(started) = last_start(&buf, take == len) {
            // Strictly after: a turn stamped in the very second the
            // doorbell was queued began before the TUI could take it
            // (it takes seconds).
            return started > at;
        }
        if take == len || window >= MAX_TAIL {
            return false;
        }
        window = (window * 8).min(MAX_TAIL);
    }
}

/// Whether a queued doorbell not taken yet is stuck: queued
/// [`STUCK_SECS`] ago or more, and the agent's last turn ended at least as
/// long ago (its rollout unwritten since). An idle TUI takes its queue
/// within ~10 s — except after an interrupted turn.
pub(crate) fn stuck(rollout: &Path, queued_at: u64, now: u64) -> bool {
    if now < queued_at.saturating_add(STUCK_SECS) {
        return false;
    }
    let idle = matches!(
        crate::agent_report::last_turn_event(rollout),
        Some(crate::agent_report::TurnEvent::Ended)
    );
    idle && modified(rollout).is_some_and(|m| m.saturating_add(STUCK_SECS) <= now)
}

#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the agent's own session log"
)]
fn modified(p: &Path) -> Option<u64> {
    let m = std::fs::metadata(p).ok()?.modified().ok()?;
    Some(m.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs())
}

/// The `started_at` of the last `task_started` in the complete lines of
/// `bytes` (`whole`: `bytes` starts at the file's start).
pub(crate) fn last_start(bytes: &[u8], whole: bool) -> Option<u64> {
    let body = if whole {
        bytes
    } else {
        &bytes[memchr::memchr(b'\n', bytes)? + 1..]
    };
    body.split(|b| *b == b'\n')
        .rev()
        .find_map(|l| match crate::agent_report::turn_event(l)? {
            crate::agent_report::TurnEvent::Started(at) => Some(at),
            crate::agent_report::TurnEvent::Ended => None,
        })
}

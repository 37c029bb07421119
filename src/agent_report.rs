//! What the agent itself reports about its turn, read from the session log
//! it writes while the turn runs — a second source for busy next to the
//! busy record its hooks write (docs/spec/crew-state.md#busy-record), and the one that needs no
//! hook.
//!
//! Codex CLI writes every thread to a rollout file,
//! `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl`: a
//! `session_meta` line first (with the thread's `cwd`), then one JSON line
//! per event as it happens. A turn opens with an `event_msg` of type
//! `task_started` (`started_at`, Unix seconds) before the model is asked,
//! and closes with `task_complete`, or `turn_aborted` when interrupted —
//! written before its `Stop`/`Interrupt` hook runs. So the last of those
//! three in the file says whether a turn is running, whatever the screen
//! shows (nothing while the answer streams) and whether or not the hooks
//! run.
//!
//! Spawn and relaunch note where the agent's Codex home is
//! (`state/<id>.agent-home`, one line `codex <absolute path>`: the launch's
//! `CODEX_HOME`, else the one firstmate runs with, else `<HOME>/.codex`)
//! when the launch's program is named `codex`; the reader takes, among
//! the rollouts written to since the spawn, the newest whose `cwd` is the
//! task's worktree.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::fsx;
use crate::home::Home;
use crate::meta::TaskMeta;
use crate::task_id::TaskId;

/// The busy source a turn read from the session log is shown with.
pub const SOURCE: &str = "session-log";

/// How far back from the end of a rollout the last turn event is looked
/// for: a turn's output lines can be long (tool output), so the window
/// widens, up to this.
const MAX_TAIL: u64 = 8 << 20;

/// The longest `session_meta` line read (it carries the model's base
/// instructions, some tens of KiB).
const MAX_META_LINE: u64 = 1 << 20;

/// A rollout written to this long before the spawn is still considered
/// (clock granularity, a spawn stamped just after the agent started).
const SLACK_SECS: u64 = 5;

/// Without a spawn time, rollouts written to within this long are looked at.
const NO_SPAWN_WINDOW_SECS: u64 = 2 * 86_400;

/// `state/<id>.agent-home`.
pub fn agent_home_file(home: &Home, id: &TaskId) -> PathBuf {
    home.state_dir().join(format!("{}.agent-home", id.as_str()))
}

/// Whether `argv` launches Codex (its program is named `codex`).
fn launches_codex(argv: &[String]) -> bool {
    launches(argv, "codex")
}

fn launches(argv: &[String], name: &str) -> bool {
    argv.first()
        .and_then(|p| Path::new(p).file_name())
        .is_some_and(|n| n == name)
}

/// The Claude Code config dir an agent launched with `env` uses:
/// `CLAUDE_CONFIG_DIR`, else `<HOME>/.claude`.
fn claude_config(env: &[String], var: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let lookup = |k: &str| {
        env.iter()
            .rev()
            .find_map(|e| e.strip_prefix(k)?.strip_prefix('=').map(str::to_string))
            .or_else(|| var(k))
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    lookup("CLAUDE_CONFIG_DIR").or_else(|| lookup("HOME").map(|h| h.join(".claude")))
}

/// The Claude Code config dir a note names (`claude <dir>`), if any.
pub(crate) fn noted_claude(bytes: &[u8]) -> Option<PathBuf> {
    let text = std::str::from_utf8(bytes).ok()?;
    let dir = text.lines().next()?.strip_prefix("claude ")?;
    Some(PathBuf::from(dir)).filter(|p| p.is_absolute())
}

/// The Codex home an agent launched with `env` (`NAME=value` entries the
/// pane gets on top of firstmate's environment) uses.
fn codex_home(env: &[String], var: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let lookup = |k: &str| {
        env.iter()
            .rev()
            .find_map(|e| e.strip_prefix(k)?.strip_prefix('=').map(str::to_string))
            .or_else(|| var(k))
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    lookup("CODEX_HOME").or_else(|| lookup("HOME").map(|h| h.join(".codex")))
}

/// Notes where the agent `argv` launches writes its session log (spawn
/// and relaunch); removes an old note for any other agent. Best effort:
/// without the note busy comes from the hooks and the screen alone.
pub fn note_launch(home: &Home, id: &TaskId, argv: &[String], env: &[String]) {
    let path = agent_home_file(home, id);
    let var = |k: &str| std::env::var(k).ok();
    let dir = if launches_codex(argv) {
        codex_home(env, var).map(|p| ("codex", p))
    } else if launches(argv, "claude") {
        claude_config(env, var).map(|p| ("claude", p))
    } else {
        None
    };
    let dir = dir
        .and_then(|(h, p)| Some((h, p.to_str()?.to_string())))
        .filter(|(_, p)| !p.contains('\n'));
    let _ = match dir {
        Some((h, d)) => fsx::atomic_write(&path, format!("{h} {d}\n").as_bytes()),
        None => fsx::remove_optional(&path).map(drop),
    };
}

/// The Codex home a note names; `None` for no note or a malformed one.
fn noted(bytes: &[u8]) -> Option<PathBuf> {
    let text = std::str::from_utf8(bytes).ok()?;
    let dir = text.lines().next()?.strip_prefix("codex ")?;
    Some(PathBuf::from(dir)).filter(|p| p.is_absolute())
}

/// When the turn the agent reports running began (Unix seconds), or
/// `None`: no note, no rollout for the task, or the last turn ended.
pub fn turn_running(home: &Home, id: &TaskId) -> Option<u64> {
    let note = fsx::read_optional(&agent_home_file(home, id)).ok()??;
    let meta = TaskMeta::load(home, id).ok()??;
    running_in(&noted(&note)?, &meta)
}

/// [`turn_running`] with the note and the task's meta already read.
pub(crate) fn turn_running_noted(note: &[u8], meta: &TaskMeta) -> Option<u64> {
    running_in(&noted(note)?, meta)
}

fn running_in(codex_home: &Path, meta: &TaskMeta) -> Option<u64> {
    let worktree = meta.worktree.as_deref()?;
    let now = crate::clock::now();
    // A stamp from the future counts as now.
    let since = meta
        .spawned_at
        .map_or(now.saturating_sub(NO_SPAWN_WINDOW_SECS), |s| s.min(now))
        .saturating_sub(SLACK_SECS);
    let log = find_rollout(&codex_home.join("sessions"), worktree, since)?;
    match last_turn_event(&log)? {
        TurnEvent::Started(at) => Some(at.min(now)),
        TurnEvent::Ended => None,
    }
}

/// The last turn event of a rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TurnEvent {
    /// `task_started`, with its `started_at`.
    Started(u64),
    /// `task_complete` or `turn_aborted`.
    Ended,
}

/// The turn event one rollout line records, if any.
pub(crate) fn turn_event(line: &[u8]) -> Option<TurnEvent> {
    // Most lines are not events: skip them unparsed.
    memchr::memmem::find(line, b"\"event_msg\"")?;
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    if v.get("type")?.as_str()? != "event_msg" {
        return None;
    }
    let p = v.get("payload")?;
    match p.get("type")?.as_str()? {
        "task_started" => Some(TurnEvent::Started(
            p.get("started_at")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or_else(crate::clock::now),
        )),
        "task_complete" | "turn_aborted" => Some(TurnEvent::Ended),
        _ => None,
    }
}

/// The last turn event in the complete lines of `bytes`; `whole` says
/// `bytes` starts at the file's start (else its first line is partial and
/// skipped).
pub(crate) fn last_in(bytes: &[u8], whole: bool) -> Option<TurnEvent> {
    let body = if whole {
        bytes
    } else {
        &bytes[memchr::memchr(b'\n', bytes)? + 1..]
    };
    body.split(|b| *b == b'\n').rev().find_map(turn_event)
}

/// The last turn event of the rollout at `path`, read from its end.
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the agent's own session log"
)]
pub(crate) fn last_turn_event(path: &Path) -> Option<TurnEvent> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let mut window = 64 << 10;
    loop {
        let take = window.min(len);
        f.seek(SeekFrom::Start(len - take)).ok()?;
        let mut buf = Vec::with_capacity(usize::try_from(take).ok()?);
        f.by_ref().take(take).read_to_end(&mut buf).ok()?;
        if let Some(e) = last_in(&buf, take == len) {
            return Some(e);
        }
        if take == len || window >= MAX_TAIL {
            return None;
        }
        window = (window * 8).min(MAX_TAIL);
    }
}

/// The `cwd` a rollout's `session_meta` line names, remembered per file
/// for the life of the process (it never changes; a view that looks every
/// frame reads each first line once).
fn rollout_cwd(path: &Path) -> Option<PathBuf> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static SEEN: OnceLock<Mutex<HashMap<PathBuf, PathBuf>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Mutex::default);
    if let Some(c) = seen.lock().ok().and_then(|m| m.get(path).cloned()) {
        return Some(c);
    }
    // Only a name found is kept: a first line still being written is
    // read again next time.
    let cwd = read_rollout_cwd(path)?;
    if let Ok(mut m) = seen.lock() {
        if m.len() >= 4096 {
            m.clear();
        }
        m.insert(path.to_path_buf(), cwd.clone());
    }
    Some(cwd)
}

#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the agent's own session log"
)]
fn read_rollout_cwd(path: &Path) -> Option<PathBuf> {
    let f = std::fs::File::open(path).ok()?;
    let mut line = Vec::new();
    let mut r = std::io::BufReader::new(f.take(MAX_META_LINE));
    std::io::BufRead::read_until(&mut r, b'\n', &mut line).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&line).ok()?;
    if v.get("type")?.as_str()? != "session_meta" {
        return None;
    }
    Some(PathBuf::from(v.get("payload")?.get("cwd")?.as_str()?))
}

#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: directories the agent reports"
)]
fn same_dir(a: &Path, b: &Path) -> bool {
    a == b
        || match (a.canonicalize(), b.canonicalize()) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        }
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The numbered subdirectories of `dir` (`2026`, `12`, `06`).
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the agent's session log directories"
)]
fn numbered(dir: &Path) -> Vec<(i64, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let n = e.file_name().to_str()?.parse::<i64>().ok()?;
            Some((n, e.path()))
        })
        .collect()
}

/// The newest rollout under `sessions` written to at or after `since`
/// whose thread runs in `worktree`. Day directories before the spawn's
/// (a day of slack for the local time zone Codex names them in) are not
/// looked into.
pub(crate) fn find_rollout(sessions: &Path, worktree: &Path, since: u64) -> Option<PathBuf> {
    rollouts(sessions, worktree, since)
        .into_iter()
        .max_by_key(|(t, _)| *t)
        .map(|(_, p)| p)
}

/// Every rollout under `sessions` written to at or after `since` whose
/// thread runs in `worktree`, with its modification time (the usage
/// counter adds them all up, [`crate::usage`]).
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the agent's session log directories"
)]
pub(crate) fn rollouts(
    sessions: &Path,
    worktree: &Path,
    since: u64,
) -> Vec<(std::time::SystemTime, PathBuf)> {
    let mut found = Vec::new();
    let Some(first_day) = i64::try_from(since / 86_400).ok().map(|d| d - 1) else {
        return found;
    };
    for (y, ydir) in numbered(sessions) {
        if days_from_civil(y, 12, 31) < first_day {
            continue;
        }
        for (m, mdir) in numbered(&ydir) {
            if days_from_civil(y, m, 31) < first_day {
                continue;
            }
            for (d, ddir) in numbered(&mdir) {
                if days_from_civil(y, m, d) < first_day {
                    continue;
                }
                let Ok(rd) = std::fs::read_dir(&ddir) else {
                    continue;
                };
                for e in rd.flatten() {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    if !name.starts_with("rollout-") || !name.ends_with(".jsonl") {
                        continue;
                    }
                    let Ok(mtime) = e.metadata().and_then(|m| m.modified()) else {
                        continue;
                    };
                    let secs = mtime
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs());
                    if secs < since {
                        continue;
                    }
                    let path = e.path();
                    if rollout_cwd(&path).is_some_and(|c| same_dir(&c, worktree)) {
                        found.push((mtime, path));
                    }
                }
            }
        }
    }
    found
}

/// The Codex home spawn noted for task `id` ([`note_launch`]), if any.
pub(crate) fn noted_codex_home(home: &Home, id: &TaskId) -> Option<PathBuf> {
    noted(&fsx::read_optional(&agent_home_file(home, id)).ok()??)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STARTED: &str = r#"{"timestamp":"2026-12-06T15:37:15.739Z","ordinal":1,"type":"event_msg","payload":{"type":"task_started","turn_id":"t","started_at":1796571435,"model_context_window":258400}}"#;
    const COMPLETE: &str = r#"{"timestamp":"2026-12-06T15:37:35.443Z","ordinal":13,"type":"event_msg","payload":{"type":"task_complete","turn_id":"t","last_agent_message":"task_started","started_at":1796571435,"completed_at":1796571455}}"#;
    const ABORTED: &str = r#"{"timestamp":"2026-12-06T15:37:46.759Z","ordinal":21,"type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted","started_at":1796571464}}"#;
    const OTHER: &str = r#"{"timestamp":"2026-12-06T15:37:35.418Z","ordinal":12,"type":"event_msg","payload":{"type":"token_count","info":null}}"#;
    const ITEM: &str = r#"{"timestamp":"2026-12-06T15:37:15.818Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"\"type\":\"task_started\" event_msg"}]}}"#;

    #[test]
    fn the_last_turn_event_decides() {
        let log = |lines: &[&str]| lines.join("\n") + "\n";
        assert_eq!(
            last_in(log(&[STARTED, ITEM, OTHER]).as_bytes(), true),
            Some(TurnEvent::Started(1_796_571_435))
        );
        assert_eq!(
            last_in(log(&[STARTED, ITEM, COMPLETE, OTHER]).as_bytes(), true),
            Some(TurnEvent::Ended)
        );
        assert_eq!(
            last_in(log(&[COMPLETE, STARTED, ABORTED]).as_bytes(), true),
            Some(TurnEvent::Ended)
        );
        assert_eq!(last_in(log(&[ITEM, OTHER]).as_bytes(), true), None);
        // A line still being written is not read.
        let partial = format!("{STARTED}\n{}", &COMPLETE[..40]);
        assert_eq!(
            last_in(partial.as_bytes(), true),
            Some(TurnEvent::Started(1_796_571_435))
        );
        // A window that starts mid-line skips that line.
        let cut = log(&[COMPLETE, STARTED]);
        assert_eq!(
            last_in(&cut.as_bytes()[5..], false),
            Some(TurnEvent::Started(1_796_571_435))
        );
        assert_eq!(last_in(&log(&[COMPLETE]).as_bytes()[5..], false), None);
    }

    #[test]
    fn a_long_turn_is_found_past_the_first_window() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("rollout-x.jsonl");
        let filler = format!(
            r#"{{"type":"response_item","payload":{{"output":"{}"}}}}"#,
            "x".repeat(300 << 10)
        );
        std::fs::write(&p, format!("{COMPLETE}\n{STARTED}\n{filler}\n{OTHER}\n")).unwrap();
        assert_eq!(last_turn_event(&p), Some(TurnEvent::Started(1_796_571_435)));
    }

    #[test]
    fn the_codex_home_comes_from_the_launch_then_the_environment() {
        let env = |k: &str| (k == "HOME").then(|| "/home/cap".to_string());
        assert_eq!(
            codex_home(&[], env),
            Some(PathBuf::from("/home/cap/.codex"))
        );
        assert_eq!(
            codex_home(&["CODEX_HOME=/x/ch".into()], env),
            Some(PathBuf::from("/x/ch"))
        );
        assert_eq!(
            codex_home(&["HOME=/h".into()], env),
            Some(PathBuf::from("/h/.codex"))
        );
        assert_eq!(codex_home(&["HOME=rel".into()], |_| None), None);
        assert!(launches_codex(&[
            "/opt/x/bin/codex".into(),
            "--no-daemon".into()
        ]));
        assert!(!launches_codex(&["claude".into()]));
        assert_eq!(noted(b"codex /a b/c\n"), Some(PathBuf::from("/a b/c")));
        assert_eq!(noted(b"claude /a\n"), None);
        assert_eq!(noted(b"codex rel\n"), None);
    }

    #[test]
    fn the_claude_config_dir_comes_from_the_launch_then_the_environment() {
        let env = |k: &str| (k == "HOME").then(|| "/home/cap".to_string());
        let want = |p: &str| Some(PathBuf::from(p));
        assert_eq!(claude_config(&[], env), want("/home/cap/.claude"));
        assert_eq!(claude_config(&["HOME=/h".into()], env), want("/h/.claude"));
        assert_eq!(
            claude_config(&["HOME=/h".into(), "CLAUDE_CONFIG_DIR=/c".into()], env),
            want("/c")
        );
        assert_eq!(claude_config(&["HOME=rel".into()], |_| None), None);
        assert_eq!(noted_claude(b"claude /a b\n"), want("/a b"));
        assert_eq!(noted_claude(b"codex /a\n"), None);
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let id = TaskId::parse("t1").unwrap();
        std::fs::create_dir_all(home.state_dir()).unwrap();
        note_launch(&home, &id, &["/opt/claude".into()], &["HOME=/h".into()]);
        let note = std::fs::read(agent_home_file(&home, &id)).unwrap();
        assert_eq!(noted_claude(&note), want("/h/.claude"));
        note_launch(&home, &id, &["sh".into()], &[]);
        assert!(!agent_home_file(&home, &id).exists());
    }

    #[test]
    fn the_newest_rollout_of_the_worktree_since_the_spawn() {
        let dir = tempfile::tempdir().unwrap();
        let wt = dir.path().join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        let day = dir.path().join("sessions/2026/12/06");
        std::fs::create_dir_all(&day).unwrap();
        let meta = |cwd: &Path| {
            format!(
                r#"{{"timestamp":"2026-12-06T15:37:15.739Z","type":"session_meta","payload":{{"id":"a","cwd":{}}}}}"#,
                serde_json::to_string(cwd.to_str().unwrap()).unwrap()
            )
        };
        let other = day.join("rollout-2026-12-06T15-00-00-b.jsonl");
        std::fs::write(&other, meta(dir.path()) + "\n" + STARTED + "\n").unwrap();
        let mine = day.join("rollout-2026-12-06T15-00-01-a.jsonl");
        std::fs::write(&mine, meta(&wt) + "\n" + STARTED + "\n" + COMPLETE + "\n").unwrap();
        let sessions = dir.path().join("sessions");
        let now = crate::clock::now();
        assert_eq!(find_rollout(&sessions, &wt, now - 60), Some(mine.clone()));
        // Written to before the spawn: an earlier agent's.
        assert_eq!(find_rollout(&sessions, &wt, now + 60), None);
        assert_eq!(last_turn_event(&mine), Some(TurnEvent::Ended));
        // Nothing written to since a later spawn.
        let later = u64::try_from(days_from_civil(2027, 1, 2)).unwrap() * 86_400;
        assert_eq!(find_rollout(&sessions, &wt, later), None);
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2026, 12, 6), 20_793);
    }
}

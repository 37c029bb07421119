//! The agent's own conversation id (meta `session`, docs/spec/restore.md):
//! what `fm restore` resumes after the agent died with its tmux server.
//!
//! Learned from the agent itself: Claude Code and Codex hand every hook
//! a JSON object on stdin whose `session_id` names the conversation, so
//! the hooks spawn installs also run `fm session-hook <id>` at every
//! prompt taken and every turn finished ([`hook_command`]). It writes
//! `session=<id>` into meta when it changed (a `/clear` starts another
//! conversation), and only for the agent meta names: the hook's
//! `TMUX_PANE` must be meta's `pane` and the server pid in its `TMUX` the
//! one meta's `tmux_server` names — an agent of another spawn or server
//! never writes over the task's session. Spawn and relaunch clear the key
//! (a new agent, a new conversation); a restore that resumes keeps it.
//!
//! The id is bound to the spawn instance that learned it: `session_spawn`
//! is meta's `spawn_id` when the hook wrote `session`, and the hook of an
//! agent started by another spawn (its `FM_SPAWN`, `<id>/<spawn_id>`, the
//! pane's mark spawn gave its environment) writes nothing — an old agent's
//! last hook in a pane a relaunch reused cannot bind its thread to the new
//! agent. A restore that resumes the thread binds it to the restore's
//! spawn. The Codex delivery leg ([`crate::leg::codex`]) keys on this.
//!
//! Without hooks, a Codex agent's id is read from its rollout
//! ([`crate::agent_report`]'s file: the newest whose `cwd` is the
//! worktree, written since the spawn; its first line's `id`).

use std::path::Path;

use super::*;

/// The meta key.
pub(crate) const KEY: &str = "session";

/// The meta key naming the spawn (`spawn_id`) `session` was learned in.
pub(crate) const SPAWN_KEY: &str = "session_spawn";

/// The environment variable spawn gives the agent: its pane's mark.
pub(crate) const SPAWN_ENV: &str = "FM_SPAWN";

/// The longest id kept (both agents use a UUID).
const MAX_LEN: usize = 128;

/// A session id as a launch argument may carry it: letters, digits, `-`
/// and `_`, not starting with `-` (never read as an option).
pub(crate) fn valid(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_LEN
        && !id.starts_with('-')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The session meta records, when valid.
pub(crate) fn of(meta: &TaskMeta) -> Option<String> {
    meta.raw
        .get(KEY)
        .map(str::trim)
        .filter(|s| valid(s))
        .map(str::to_string)
}

/// The shell command a hook runs to record the session: `fm` by absolute
/// path, every word quoted; its output goes nowhere (Claude Code adds a
/// prompt hook's stdout to the model's context) and a failure is a
/// non-blocking hook error.
pub(super) fn hook_command(home: &Home, id: &TaskId) -> String {
    let fm = stand_in::sibling_bin("fm");
    format!(
        "{} session-hook --home {} {} >/dev/null 2>&1 || exit 1",
        crate::shq::quote_path(&fm),
        crate::shq::quote_path(home.root()),
        crate::shq::quote(id.as_str()),
    )
}

/// What the hook learned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Learned {
    Recorded(String),
    Unchanged,
    /// Not recorded, and why.
    Ignored(&'static str),
}

/// Records the `session_id` of the hook input `input` in task `id`'s
/// meta, for the agent meta names: `pane` is the hook's `TMUX_PANE`,
/// `tmux` its `TMUX` (`<socket>,<server pid>,<session>`), `spawn` its
/// `FM_SPAWN` (the mark of the spawn that started it).
pub fn learn(
    home: &Home,
    id: &TaskId,
    input: &[u8],
    pane: Option<&str>,
    tmux: Option<&str>,
    spawn: Option<&str>,
) -> Result<Learned> {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(input) else {
        return Ok(Learned::Ignored("the hook input is not JSON"));
    };
    let Some(session) = v.get("session_id").and_then(|s| s.as_str()) else {
        return Ok(Learned::Ignored("no session_id in the hook input"));
    };
    if !valid(session) {
        return Ok(Learned::Ignored("not a session id"));
    }
    let Some(meta) = TaskMeta::load(home, id)? else {
        return Ok(Learned::Ignored("no meta"));
    };
    if !is_the_agent(id, &meta, pane, tmux, spawn) {
        return Ok(Learned::Ignored("not the agent meta names"));
    }
    if of(&meta).as_deref() == Some(session) && bound_here(&meta) {
        return Ok(Learned::Unchanged);
    }
    let mut bound = true;
    meta::update(home, id, |m| {
        // Checked again under the meta lock: a relaunch may have moved
        // the task to another pane meanwhile.
        let now = TaskMeta::from_raw(m.clone());
        bound = is_the_agent(id, &now, pane, tmux, spawn);
        if bound {
            m.set(KEY, session);
            match &now.spawn_id {
                Some(s) => m.set(SPAWN_KEY, s),
                None => m.remove(SPAWN_KEY),
            }
        }
    })?;
    Ok(if bound {
        Learned::Recorded(session.to_string())
    } else {
        Learned::Ignored("not the agent meta names")
    })
}

/// Whether meta's `session` is bound to meta's spawn (`session_spawn` is
/// its `spawn_id`; both absent in a meta from before spawn ids).
pub(crate) fn bound_here(meta: &TaskMeta) -> bool {
    let bound = meta
        .raw
        .get(SPAWN_KEY)
        .map(str::trim)
        .filter(|s| !s.is_empty());
    bound == meta.spawn_id.as_deref()
}

/// Whether a hook run in `pane` under the server `tmux`, by an agent
/// started with the mark `spawn`, is the agent meta names. A hook with no
/// `TMUX_PANE` ran outside tmux (both agents' hooks inherit it from the
/// pane): not the agent. A `TMUX` without a server pid proves nothing when
/// meta records the server. An agent without a mark (one started before
/// marks were given) is judged by its pane alone.
fn is_the_agent(
    id: &TaskId,
    meta: &TaskMeta,
    pane: Option<&str>,
    tmux: Option<&str>,
    spawn: Option<&str>,
) -> bool {
    if let (Some(mark), Some(spawn_id)) = (spawn.filter(|s| !s.is_empty()), &meta.spawn_id)
        && mark != crate::tmux::owner::mark(id, spawn_id)
    {
        return false;
    }
    let Some(pane) = pane.filter(|p| !p.is_empty()) else {
        return false;
    };
    if meta.pane.as_deref() != Some(pane) {
        return false;
    }
    let pid = tmux
        .and_then(|t| t.split(',').nth(1))
        .filter(|p| !p.is_empty());
    let recorded = meta
        .tmux_server
        .as_deref()
        .and_then(|s| s.split('-').next());
    match (pid, recorded) {
        (Some(pid), Some(recorded)) => pid == recorded,
        (None, Some(_)) => false,
        _ => true,
    }
}

/// The id of the Codex thread the task's agent runs, from its rollout
/// (the agent home spawn noted, `state/<id>.agent-home`); `None` when
/// the task has no such note or no rollout since its spawn.
pub(crate) fn from_rollout(home: &Home, id: &TaskId, meta: &TaskMeta) -> Option<String> {
    let note = fsx::read_optional(&crate::agent_report::agent_home_file(home, id)).ok()??;
    let note = String::from_utf8(note).ok()?;
    let dir = note.lines().next()?.strip_prefix("codex ")?;
    let sessions = Path::new(dir).join("sessions");
    let worktree = meta.worktree.as_deref()?;
    let since = meta.spawned_at.unwrap_or(0).saturating_sub(5);
    let rollout = crate::agent_report::find_rollout(&sessions, worktree, since)?;
    rollout_id(&rollout).filter(|s| valid(s))
}

/// A rollout's thread id: its `session_meta` line's `payload.id`.
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the agent's own session log"
)]
fn rollout_id(path: &Path) -> Option<String> {
    use std::io::{BufRead, Read};
    let f = std::fs::File::open(path).ok()?;
    let mut line = Vec::new();
    std::io::BufReader::new(f.take(1 << 20))
        .read_until(b'\n', &mut line)
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&line).ok()?;
    if v.get("type")?.as_str()? != "session_meta" {
        return None;
    }
    Some(v.get("payload")?.get("id")?.as_str()?.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home() -> (tempfile::TempDir, Home, TaskId) {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        std::fs::create_dir_all(home.state_dir()).unwrap();
        (d, home, TaskId::parse("t1").unwrap())
    }

    const ID: &str = "0744d8c0-b402-4d50-a903-7366fcfb1aa1";

    #[test]
    fn ids_that_could_be_options_or_words_are_not_sessions() {
        assert!(valid(ID));
        assert!(valid("019ab_cd"));
        for bad in ["", "-rf", "a b", "a/b", "x;y", &"a".repeat(129)] {
            assert!(!valid(bad), "{bad}");
        }
    }

    #[test]
    fn the_hook_records_the_session_of_the_agent_meta_names_only() {
        let (_d, home, id) = home();
        let input = format!(r#"{{"session_id":"{ID}","hook_event_name":"Stop"}}"#);
        let learn = |pane, tmux| learn(&home, &id, input.as_bytes(), pane, tmux, None).unwrap();
        assert_eq!(learn(None, None), Learned::Ignored("no meta"));
        std::fs::write(home.meta(&id), "pane=%3\ntmux_server=4242-1700000000\n").unwrap();
        let server = Some("/tmp/tmux-0/fm,4242,0");
        assert_eq!(
            learn(Some("%4"), server),
            Learned::Ignored("not the agent meta names")
        );
        assert_eq!(
            learn(Some("%3"), Some("/tmp/tmux-0/fm,999,0")),
            Learned::Ignored("not the agent meta names")
        );
        // Outside tmux, or a `TMUX` that names no server: not proven.
        for (pane, tmux) in [
            (None, server),
            (Some(""), server),
            (None, None),
            (Some("%3"), None),
            (Some("%3"), Some("/tmp/tmux-0/fm,,0")),
        ] {
            assert_eq!(
                learn(pane, tmux),
                Learned::Ignored("not the agent meta names"),
                "{pane:?} {tmux:?}"
            );
        }
        assert_eq!(learn(Some("%3"), server), Learned::Recorded(ID.into()));
        assert_eq!(learn(Some("%3"), server), Learned::Unchanged);
        let meta = TaskMeta::load(&home, &id).unwrap().unwrap();
        assert_eq!(of(&meta).as_deref(), Some(ID));
        assert_eq!(meta.pane.as_deref(), Some("%3"), "other keys kept");
        for bad in [&b"not json"[..], br#"{"session_id":"-x"}"#, b"{}"] {
            assert!(matches!(learn_raw(&home, &id, bad), Learned::Ignored(_)));
        }
    }

    #[test]
    fn the_session_is_bound_to_the_spawn_that_learned_it() {
        let (_d, home, id) = home();
        let input = format!(r#"{{"session_id":"{ID}"}}"#);
        std::fs::write(home.meta(&id), "pane=%3\nspawn_id=s2\n").unwrap();
        let learn = |spawn| learn(&home, &id, input.as_bytes(), Some("%3"), None, spawn).unwrap();
        // The last hook of the agent a relaunch replaced in this pane.
        assert_eq!(
            learn(Some("t1/s1")),
            Learned::Ignored("not the agent meta names")
        );
        let meta = TaskMeta::load(&home, &id).unwrap().unwrap();
        assert_eq!(of(&meta), None);
        assert_eq!(learn(Some("t1/s2")), Learned::Recorded(ID.into()));
        let meta = TaskMeta::load(&home, &id).unwrap().unwrap();
        assert_eq!(meta.raw.get(SPAWN_KEY), Some("s2"));
        assert!(bound_here(&meta));
        // A restore that gave another spawn the same thread: rebound.
        std::fs::write(
            home.meta(&id),
            format!("pane=%3\nspawn_id=s3\nsession={ID}\nsession_spawn=s2\n"),
        )
        .unwrap();
        assert!(!bound_here(&TaskMeta::load(&home, &id).unwrap().unwrap()));
        assert_eq!(learn(Some("t1/s3")), Learned::Recorded(ID.into()));
        assert!(bound_here(&TaskMeta::load(&home, &id).unwrap().unwrap()));
        assert_eq!(learn(None), Learned::Unchanged);
    }

    fn learn_raw(home: &Home, id: &TaskId, input: &[u8]) -> Learned {
        learn(
            home,
            id,
            input,
            Some("%3"),
            Some("/tmp/tmux-0/fm,4242,0"),
            None,
        )
        .unwrap()
    }

    #[test]
    fn a_codex_rollout_names_its_thread() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("rollout-2026-12-06T15-37-15-x.jsonl");
        let line = format!(
            r#"{{"timestamp":"2026-12-06T15:37:15Z","type":"session_meta","payload":{{"id":"{ID}","cwd":"/w"}}}}"#
        );
        std::fs::write(&p, format!("{line}\n{{\"type\":\"event_msg\"}}\n")).unwrap();
        assert_eq!(rollout_id(&p).as_deref(), Some(ID));
        std::fs::write(&p, "{\"type\":\"event_msg\"}\n").unwrap();
        assert_eq!(rollout_id(&p), None);
    }
}

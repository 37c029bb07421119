//! The Codex leg (`leg = "queue"`, docs/spec/ring.md#codex-queue): the
//! doorbell handed to the running TUI by `codex queue --thread <id>
//! --message <doorbell>`, so nothing is typed into its pane.
//!
//! `codex queue` stores the message in the agent's Codex home; the TUI
//! picks it up by itself a few seconds later (a poll: 3–10 s measured
//! into an idle TUI) and runs it as a plain user message — after the
//! running turn when busy (nothing aborted), untouched by an open dialog
//! or half-typed text, and, durable, when the thread is resumed if no TUI
//! runs it now. The ring's part ends when `codex queue` exits 0; the
//! watcher's ladder re-rings an unacknowledged record as usual, but not
//! before [`RERING_FLOOR_SECS`] after a queued doorbell
//! ([`rering_held_until`]).
//!
//! The leg is available ([`available`]) only when:
//! - meta `session` names the thread **of this spawn instance**: meta
//!   `session_spawn` is meta's `spawn_id` (`fm session-hook` binds the id
//!   to the spawn it learned it in; a restore that resumes the thread
//!   binds it to the new spawn). Before the thread's first turn there is
//!   no thread: the typed doorbell stands in.
//! - the agent's Codex home is noted (`state/<id>.agent-home`, spawn and
//!   relaunch write it) and its rollout for that thread is found, whose
//!   `session_meta.cli_version` is a version the conformance suite
//!   verified (`scripts/agents.versions`).
//!
//! What was queued is remembered in `state/<id>.codex-queue` (this
//! module's alone): the spawn and thread it belongs to, the rollout and
//! version found, and the last queued doorbell (`queued_at`, the newest
//! pending record then). A doorbell is outstanding until the rollout
//! shows a turn started after it was queued; while one is, a ring queues
//! nothing more (one queued doorbell covers every pending record: it says
//! "read each *.msg"), so re-rings never stack copies — unless the agent
//! sat idle past [`rollout::STUCK_SECS`] without taking it (after an interrupted
//! turn Codex runs no queued message): then the ring types it. The rollout
//! is read by [`rollout`].

mod rollout;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rollout::{cli_version, find_thread_rollout, is_file, stuck, taken_since};

use super::{Delivered, Leg};
use crate::config::Config;
use crate::control::session;
use crate::fsx;
use crate::home::Home;
use crate::meta::TaskMeta;
use crate::task_id::TaskId;

/// The watcher re-rings a doorbell handed to the queue no sooner than
/// this after it was queued, whatever `[watch] grace_secs` says: the TUI
/// takes up to ~10 s to pick it up.
pub const RERING_FLOOR_SECS: u64 = 30;

/// How long `codex queue` may run (it returns in ~0.2 s).
const QUEUE_TIMEOUT: Duration = Duration::from_secs(10);

/// The versions of the conformance suite (`codex=`, `codex.verified=`).
const VERSIONS: &str = include_str!("../../scripts/agents.versions");

/// The Codex versions the leg is used with: the pinned one and every one
/// a full conformance run passed on.
pub fn verified_versions() -> Vec<&'static str> {
    let mut v = Vec::new();
    for l in VERSIONS.lines().map(str::trim) {
        let words = if let Some(r) = l.strip_prefix("codex=") {
            r
        } else if let Some(r) = l.strip_prefix("codex.verified=") {
            r
        } else {
            continue;
        };
        for w in words.split_whitespace() {
            if !v.contains(&w) {
                v.push(w);
            }
        }
    }
    v
}

/// `state/<id>.codex-queue`.
pub fn state_file(home: &Home, id: &TaskId) -> PathBuf {
    home.state_dir()
        .join(format!("{}.codex-queue", id.as_str()))
}

/// What `state/<id>.codex-queue` remembers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct QueueState {
    pub spawn_id: String,
    pub thread: String,
    pub rollout: Option<PathBuf>,
    pub version: Option<String>,
    /// When the last doorbell was queued (Unix seconds).
    pub queued_at: Option<u64>,
    /// The newest pending record then.
    pub queued_seq: Option<u64>,
}

impl QueueState {
    pub(crate) fn parse(text: &str) -> QueueState {
        let mut s = QueueState::default();
        for line in text.lines() {
            let Some((k, v)) = line.split_once('=') else {
                continue;
            };
            let v = v.trim();
            match k.trim() {
                "spawn_id" => s.spawn_id = v.to_string(),
                "thread" => s.thread = v.to_string(),
                "rollout" if !v.is_empty() => s.rollout = Some(PathBuf::from(v)),
                "version" if !v.is_empty() => s.version = Some(v.to_string()),
                "queued_at" => s.queued_at = v.parse().ok(),
                "queued_seq" => s.queued_seq = v.parse().ok(),
                _ => {}
            }
        }
        s
    }

    pub(crate) fn render(&self) -> String {
        let mut out = format!("spawn_id={}\nthread={}\n", self.spawn_id, self.thread);
        if let Some(r) = self.rollout.as_ref().and_then(|p| p.to_str()) {
            out.push_str(&format!("rollout={r}\n"));
        }
        if let Some(v) = &self.version {
            out.push_str(&format!("version={v}\n"));
        }
        if let Some(at) = self.queued_at {
            out.push_str(&format!("queued_at={at}\n"));
        }
        if let Some(seq) = self.queued_seq {
            out.push_str(&format!("queued_seq={seq}\n"));
        }
        out
    }

    fn load(home: &Home, id: &TaskId) -> Option<QueueState> {
        let bytes = fsx::read_optional(&state_file(home, id)).ok()??;
        Some(QueueState::parse(&String::from_utf8_lossy(&bytes)))
    }

    fn save(&self, home: &Home, id: &TaskId) -> Result<(), String> {
        fsx::atomic_write(&state_file(home, id), self.render().as_bytes())
            .map_err(|e| e.to_string())
    }
}

/// The thread meta binds to this spawn instance, or why there is none.
pub(crate) fn bound_thread(meta: &TaskMeta) -> Result<String, String> {
    let Some(thread) = session::of(meta) else {
        return Err(
            "the Codex thread is not known yet (its hooks report it at the first turn)".into(),
        );
    };
    if !session::bound_here(meta) {
        return Err(format!(
            "thread {thread} was not learned from this spawn of the agent"
        ));
    }
    Ok(thread)
}

/// Where the agent runs `codex` from: its Codex home and its `HOME`
/// (spawn's note, `state/<id>.agent-home`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AgentHome {
    pub codex_home: PathBuf,
    pub home: Option<PathBuf>,
}

fn agent_home(home: &Home, id: &TaskId) -> Option<AgentHome> {
    let note = fsx::read_optional(&crate::agent_report::agent_home_file(home, id)).ok()??;
    parse_note(&String::from_utf8_lossy(&note))
}

/// The note's `codex <dir>` line; the agent's `HOME` is that directory's
/// parent when it is `<HOME>/.codex` (Codex's default), else unknown
/// (`codex queue` then runs with the ringer's `HOME`: the Codex home is
/// what it reads and writes).
pub(crate) fn parse_note(text: &str) -> Option<AgentHome> {
    let codex_home = PathBuf::from(text.lines().next()?.strip_prefix("codex ")?);
    if !codex_home.is_absolute() {
        return None;
    }
    let home = (codex_home.file_name()? == ".codex")
        .then(|| codex_home.parent().map(Path::to_path_buf))
        .flatten();
    Some(AgentHome { codex_home, home })
}

/// Everything a queued doorbell needs, found by [`check`].
#[derive(Debug, Clone)]
struct Ready {
    thread: String,
    agent: AgentHome,
    state: QueueState,
}

/// Whether the leg can take a doorbell for task `id` now; `Err` says why
/// not (the ring then types the doorbell).
pub fn available(home: &Home, id: &TaskId, meta: &TaskMeta) -> Result<(), String> {
    check(home, id, meta).map(drop)
}

fn check(home: &Home, id: &TaskId, meta: &TaskMeta) -> Result<Ready, String> {
    let thread = bound_thread(meta)?;
    let agent = agent_home(home, id).ok_or("no Codex home noted for the agent")?;
    let spawn_id = meta.spawn_id.clone().unwrap_or_default();
    // Kept across spawns of the same thread: `codex queue` is durable, so
    // a doorbell queued before a restore is still the one the resumed
    // agent will take.
    let mut state = QueueState::load(home, id)
        .filter(|s| s.thread == thread)
        .unwrap_or_else(|| QueueState {
            thread: thread.clone(),
            ..QueueState::default()
        });
    state.spawn_id = spawn_id;
    let rollout = if let Some(p) = state.rollout.clone().filter(|p| is_file(p)) {
        p
    } else {
        let p = find_thread_rollout(&agent.codex_home, meta, &thread)
            .ok_or_else(|| format!("no Codex session log for thread {thread} yet"))?;
        state.rollout = Some(p.clone());
        state.version = None;
        p
    };
    let version = if let Some(v) = state.version.clone() {
        v
    } else {
        let v = cli_version(&rollout)
            .ok_or_else(|| format!("no cli_version in {}", rollout.display()))?;
        state.version = Some(v.clone());
        // Remembered: the next ring reads neither the directory nor the
        // first line again. Best effort.
        let _ = state.save(home, id);
        v
    };
    let verified = verified_versions();
    if !verified.contains(&version.as_str()) {
        return Err(format!(
            "codex {version} is not verified for the queue leg (verified: {})",
            verified.join(", ")
        ));
    }
    Ok(Ready {
        thread,
        agent,
        state,
    })
}

/// Hands doorbell `text` to task `id`'s agent through the leg; `Err` says
/// why it could not (the ring then types the doorbell).
pub fn ring(
    home: &Home,
    cfg: &Config,
    id: &TaskId,
    meta: &TaskMeta,
    text: &str,
) -> Result<Delivered, String> {
    let ready = check(home, id, meta)?;
    let program = program(cfg, meta)?;
    let now = crate::clock::now();
    let mut state = ready.state;
    if let (Some(at), Some(rollout)) = (state.queued_at, &state.rollout)
        && !taken_since(rollout, at)
    {
        if stuck(rollout, at, now) {
            // Codex runs no queued message after a turn the captain
            // interrupted (Escape) until its next turn: typed, it lands.
            return Err(format!(
                "the doorbell queued at {at} was not taken and the agent is idle: typed instead"
            ));
        }
        // One queued doorbell covers every pending record: no copy more.
        return Ok(Delivered {
            leg: Leg::Queue,
            detail: Some(format!(
                "already queued for thread {} at {at}, not taken yet",
                ready.thread
            )),
        });
    }
    let out = queue_cmd(&program, &ready.thread, text, &ready.agent)
        .run()
        .map_err(|e| format!("codex queue: {}", e.cause))?;
    if !out.success() {
        return Err(format!(
            "codex queue: exit {}: {}",
            out.code().map_or("by a signal".into(), |c| c.to_string()),
            out.stderr.trim()
        ));
    }
    state.queued_at = Some(now);
    state.queued_seq = crate::inbox::pending(home, id)
        .ok()
        .and_then(|p| p.last().copied());
    if let Err(e) = state.save(home, id) {
        crate::output::err_line(&format!(
            "warning: {id}: cannot remember the queued doorbell: {e}"
        ));
    }
    Ok(Delivered {
        leg: Leg::Queue,
        detail: Some(format!("queued for thread {}", ready.thread)),
    })
}

/// The `codex queue` invocation: the profile's program, an argument
/// vector (no shell), the agent's own Codex home and `HOME`, bounded.
pub(crate) fn queue_cmd(
    program: &Path,
    thread: &str,
    text: &str,
    agent: &AgentHome,
) -> crate::proc::Cmd {
    let mut cmd = crate::proc::Cmd::new(program)
        .args(["queue", "--thread", thread, "--message", text])
        .env("CODEX_HOME", &agent.codex_home)
        .timeout(QUEUE_TIMEOUT);
    if let Some(h) = &agent.home {
        cmd = cmd.env("HOME", h);
    }
    cmd
}

/// The Codex program of the task's profile: its launch's first word,
/// which must be `codex` (a wrapper script may not take `queue`).
fn program(cfg: &Config, meta: &TaskMeta) -> Result<PathBuf, String> {
    let name = meta.harness.as_deref().ok_or("no harness in meta")?;
    let profile = crate::harness::profile(&cfg.harness, name)
        .ok_or_else(|| format!("no harness profile {name}"))?;
    let first = profile
        .launch
        .first()
        .ok_or("the profile launches nothing")?;
    program_of(first)
}

pub(crate) fn program_of(first: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(first);
    if p.file_name().is_none_or(|n| n != "codex") {
        return Err(format!("the launch program {first} is not codex"));
    }
    Ok(p)
}

/// The watcher's per-leg grace (docs/spec/watch.md#ladder): when task
/// `id`'s last doorbell went to the queue less than
/// [`RERING_FLOOR_SECS`] ago, the second until which a re-ring waits.
/// Read only when the ladder would ring a Codex worker.
pub fn rering_held_until(home: &Home, id: &TaskId, meta: &TaskMeta, now: u64) -> Option<u64> {
    let state = QueueState::load(home, id)?;
    if state.spawn_id != meta.spawn_id.as_deref().unwrap_or_default() {
        return None;
    }
    held_until(state.queued_at, now)
}

pub(crate) fn held_until(queued_at: Option<u64>, now: u64) -> Option<u64> {
    let until = queued_at?.saturating_add(RERING_FLOOR_SECS);
    (now < until && queued_at? <= now).then_some(until)
}

/// `fm doctor`'s piece for the Codex leg: whether `program` has the `queue`
/// subcommand (`codex queue --help`, in a throwaway home: Codex writes
/// its config directory on any start; bounded).
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: a private directory in the temp dir"
)]
pub fn queue_present(program: &str) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    // A new private directory: one that already exists is never reused.
    let dir = std::env::temp_dir().join(format!("fm-doctor-queue-{}", std::process::id()));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let out = crate::proc::Cmd::new(program)
        .args(["queue", "--help"])
        .env("HOME", &dir)
        .env("CODEX_HOME", dir.join(".codex"))
        .timeout(QUEUE_TIMEOUT)
        .run();
    let _ = std::fs::remove_dir_all(&dir);
    let out = out.map_err(|e| format!("`{program} queue --help`: {}", e.cause))?;
    if out.success() && out.stdout.contains("--thread") {
        Ok(())
    } else {
        Err(format!("`{program}` has no `queue` subcommand"))
    }
}

#[cfg(test)]
#[path = "codex_tests.rs"]
mod tests;

//! Lifecycle (docs/spec/control.md): spawn, interrupt, exit, relaunch and tear down a
//! worker without the captain touching tmux.
//!
//! One action per task at a time (`state/.control-<id>.lock`, never waited
//! for: a second action is refused). Meta is written only through
//! [`meta::update`], which preserves keys other tools own. tmux and git run
//! with argument vectors, bounded in time; panes are addressed by id only.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::events::{Entry, Event, Tool};
use crate::harness::{self, HarnessProfile};
use crate::home::Home;
use crate::meta::{self, Kind, Mode, TaskMeta};
use crate::task_id::TaskId;
use crate::tmux::owner::{self, Claim};
use crate::tmux::pane::{Pane, PaneInfo, Tmux};
use crate::{brief, clock, fsx, stand_in};

pub use restore::{RestoreLine, restore_line};

mod hooks;
mod restore;
pub mod session;
pub(crate) mod setup;
mod spawn;
mod stop;
mod teardown;

const TOOL: &str = Tool::Control.as_str();
/// `git worktree add` checks out files: give it longer than a query.
const GIT_TIMEOUT: Duration = Duration::from_secs(60);

/// A lifecycle action (a far lifecycle call carries it as data).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub(crate) enum Action {
    Spawn {
        project: PathBuf,
        harness: Option<String>,
        base: Option<String>,
    },
    Interrupt,
    /// `force`: clear the composer (or cancel a dialog) before the exit
    /// command instead of refusing.
    Exit {
        force: bool,
    },
    Relaunch {
        note: Option<String>,
        harness: Option<String>,
        force: bool,
    },
    Teardown {
        force: bool,
    },
    /// Brings back an agent that died with its tmux server
    /// (docs/spec/restore.md); `dry_run`: says what it would do.
    Restore {
        dry_run: bool,
    },
}

/// Runs `action` on task `id` under its lifecycle lock; returns the line
/// to print on success.
pub fn run(home: &Home, cfg: &Config, id: &TaskId, action: Action) -> Result<String> {
    // The brief is read and rewritten (relaunch) and the meta replaced
    // under these paths: never through a symlink (docs/spec/home.md#permissions).
    fsx::refuse_symlink(&home.task_data(id))?;
    fsx::refuse_symlink(&home.meta(id))?;
    fsx::ensure_dir(&home.state_dir())?;
    let Some(_lock) = fsx::try_lock(&home.control_lock(id))? else {
        return Err(Error::refused(format!(
            "another lifecycle action is already running ({id})"
        )));
    };
    let ctl = Ctl { home, cfg, id };
    match action {
        Action::Spawn {
            project,
            harness,
            base,
        } => ctl.spawn(&project, harness.as_deref(), base.as_deref()),
        Action::Interrupt => ctl.interrupt(),
        Action::Exit { force } => ctl.exit(force),
        Action::Relaunch {
            note,
            harness,
            force,
        } => ctl.relaunch(note.as_deref(), harness.as_deref(), force),
        Action::Teardown { force } => ctl.teardown(force),
        Action::Restore { dry_run } => ctl.restore(dry_run),
    }
}

/// How asking an agent to exit ended.
#[derive(Debug)]
enum Stop {
    /// No live agent to begin with.
    WasGone,
    Exited,
    /// Still alive after `exit_wait_secs`; the error says what was sent.
    StillRunning(Error),
}

/// What tmux says about a task's agent.
#[derive(Debug, Clone)]
enum Agent {
    NoPane,
    Gone,
    Exited(PaneInfo),
    Alive(PaneInfo),
}

struct Ctl<'a> {
    home: &'a Home,
    cfg: &'a Config,
    id: &'a TaskId,
}

/// Runs git in `dir`; stdout on success, an error naming the command otherwise.
fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = crate::git::run_bounded(dir, args, GIT_TIMEOUT)?;
    if !out.ok {
        return Err(Error::External {
            program: "git".into(),
            msg: format!("git {}: {}", args.join(" "), out.stderr.trim()),
        });
    }
    Ok(out.stdout)
}

impl Ctl<'_> {
    /// Records `event` about this task, now.
    fn record(&self, event: Event) {
        Entry::new(clock::now(), Tool::Control, self.id.as_str(), event).record(self.home);
    }

    fn meta(&self) -> Result<TaskMeta> {
        TaskMeta::load(self.home, self.id)?.ok_or_else(|| Error::UnknownTask {
            id: self.id.to_string(),
            lacks: "no metadata (spawn it first)",
        })
    }

    fn tmux(&self, meta: &TaskMeta) -> Tmux {
        Tmux::new(meta.socket(self.cfg))
    }

    fn profile(&self, name: &str) -> Result<HarnessProfile> {
        harness::profile(&self.cfg.harness, name).ok_or_else(|| {
            if self.cfg.harness.contains_key(name) {
                return Error::usage(format!(
                    "harness {} is defined in the config but has no `launch`: a harness that is not built in needs [harness.{name}] launch = [\"program\", …]",
                    crate::cli::common::quoted(name)
                ));
            }
            let hint = crate::cli::common::hint_name(name);
            Error::usage(format!(
                "unknown harness {} (built-ins: {}; or define [harness.{hint}])",
                crate::cli::common::quoted(name),
                harness::BUILTINS.join(", ")
            ))
        })
    }

    fn meta_profile(&self, meta: &TaskMeta) -> Option<HarnessProfile> {
        harness::profile(&self.cfg.harness, meta.harness.as_deref()?)
    }

    fn agent(&self, meta: &TaskMeta) -> Result<Agent> {
        let Some(pane) = meta.pane.as_deref() else {
            return Ok(Agent::NoPane);
        };
        let info = match self.tmux(meta).info(pane) {
            Ok(Some(info)) => info,
            Ok(None) => return Ok(Agent::Gone),
            Err(Error::External { msg, .. }) if msg.contains("not installed") => {
                return Ok(Agent::Gone);
            }
            Err(e) => return Err(e),
        };
        // A pane that does not prove it is this task's (the server
        // restarted and reused the id) is gone for it: nothing is typed
        // into it, killed or respawned.
        if let Some(claim) = Claim::of(self.id, meta)
            && claim.check(Some(&info), None).is_err()
        {
            return Ok(Agent::Gone);
        }
        let profile = self.meta_profile(meta);
        Ok(
            if harness::is_alive(profile.as_ref(), info.dead, &info.command) {
                Agent::Alive(info)
            } else {
                Agent::Exited(info)
            },
        )
    }
}

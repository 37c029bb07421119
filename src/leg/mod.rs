//! Delivery legs (docs/spec/ring.md#legs): the doorbell handed to the
//! agent through its own channel, so that nothing is typed into its pane.
//!
//! Each harness profile names its leg (`leg` in `[harness.<name>]`):
//! `hook` (Claude Code: an `asyncRewake` hook's waiter, [`claude`]),
//! `queue` (Codex: `codex queue`, [`codex`]) or `typed` (no leg: the
//! doorbell is typed, as for every other agent). [`ring`] is the one
//! dispatch point, called by [`crate::tmux::recipient::Recipient::ring`]
//! before the typed doorbell: when the leg is available it delivers and
//! nothing is typed; otherwise (the leg off, its waiter not alive, the
//! thread unknown) the typed doorbell runs as before. The inbox record,
//! the ack and the watcher's ladder do not know legs exist: a doorbell
//! delivered through a leg and never acknowledged is rung again (through
//! the leg, or typed) and escalated like any other.

pub mod claude;
pub mod codex;

use serde::{Deserialize, Serialize};

/// Which way a doorbell went (the `leg` of a ring's report).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Leg {
    /// An `asyncRewake` hook's waiter (Claude Code).
    Hook,
    /// `codex queue` (Codex).
    Queue,
    /// Typed into the pane ([`crate::tmux::deliver`]).
    #[default]
    Typed,
}

impl Leg {
    pub fn as_str(self) -> &'static str {
        match self {
            Leg::Hook => "hook",
            Leg::Queue => "queue",
            Leg::Typed => "typed",
        }
    }

    /// Whether the agent arms this leg by itself as it starts (the hook
    /// leg's `SessionStart` waiter): a ring the leg could not take while
    /// the agent still boots is then owed, not typed.
    pub fn arms_at_start(self) -> bool {
        self == Leg::Hook
    }

    /// The built-in leg of harness `name`.
    pub fn builtin(name: &str) -> Leg {
        match name {
            "claude" => Leg::Hook,
            "codex" => Leg::Queue,
            _ => Leg::Typed,
        }
    }
}

impl std::fmt::Display for Leg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A doorbell a leg took: the agent has it (or will, at its turn's end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// The leg that took it.
    pub leg: Leg,
    /// What the leg has to say about it (for the event log), if anything.
    pub detail: Option<String>,
}

/// Hands the doorbell to task `id`'s agent through its profile's leg
/// (docs/spec/ring.md#legs); `Err` says why not, and the caller types it.
/// A `typed` profile and legs switched off (`[send] legs = false`,
/// `FM_SEND_LEGS=false`) are refused at once.
pub(crate) fn ring(
    home: &crate::home::Home,
    cfg: &crate::config::Config,
    id: &crate::task_id::TaskId,
    leg: Leg,
    meta: &crate::meta::TaskMeta,
) -> Result<Delivered, String> {
    if !cfg.send.legs {
        return Err("legs are off ([send] legs = false)".into());
    }
    match leg {
        Leg::Typed => Err("the profile's leg is typed".into()),
        // The hook's text reaches the model inside Claude Code's own
        // notification frame: the notice alone.
        Leg::Hook => {
            claude::armed(home, id, meta)?;
            claude::ring(home, cfg, id, meta, &crate::tmux::deliver::notice(home, id))
        }
        // A queued message reaches the model as a user turn, exactly as a
        // typed one would: the same doorbell line, so a worker reads the
        // same words whichever way its doorbell came.
        Leg::Queue => {
            codex::available(home, id, meta)?;
            codex::ring(
                home,
                cfg,
                id,
                meta,
                &crate::tmux::deliver::doorbell(home, id),
            )
        }
    }
}

//! Settings (docs/spec/config.md): `config/firstmate.toml`, built-in defaults for
//! every key, warnings for unknown keys, and `FM_<SECTION>_<KEY>` overrides.
//!
//! One serde struct per section, with today's defaults in its `Default`.
//! [`file`] turns the text into a [`Config`] with `file:line: key` errors
//! and unknown-key warnings; [`env`] applies the overrides to every scalar
//! key the sections serialise, so a new key gets its `FM_*` variable
//! without further code. The `[harness.<name>]` tables are
//! [`crate::harness`]'s type and the `[hosts.<name>]` tables
//! [`crate::remote`]'s; this module only parses them, as it does the
//! `[projects.<name>]` tables ([`project`]).

mod env;
mod file;
pub mod host;
pub mod project;

pub use host::{HostCfg, Hosts};
pub use project::{ProjectCfg, Projects};

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::harness::Overrides;

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, expecting = "a table")]
pub struct Config {
    pub tmux: TmuxCfg,
    pub paths: PathsCfg,
    pub brief: BriefCfg,
    pub send: SendCfg,
    pub watch: WatchCfg,
    pub control: ControlCfg,
    pub notify: NotifyCfg,
    pub serve: ServeCfg,
    /// `[harness.<name>]` tables as written; merged over the built-ins by
    /// [`crate::harness::profile`].
    #[serde(skip_serializing)]
    pub harness: Overrides,
    /// `[hosts.<name>]` tables: the other machines tasks may run on
    /// ([`crate::remote`]).
    #[serde(skip_serializing)]
    pub hosts: Hosts,
    /// `[projects.<name>]` tables: a new worktree's set-up
    /// (`control::setup`).
    #[serde(skip_serializing)]
    pub projects: Projects,
    /// Unknown keys seen while loading; the caller prints them.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, expecting = "a [section] table")]
pub struct TmuxCfg {
    pub session: String,
    pub socket: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, expecting = "a [section] table")]
pub struct PathsCfg {
    pub worktrees: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, expecting = "a [section] table")]
pub struct BriefCfg {
    pub delegator: String,
    pub branch_prefix: String,
    pub default_branch: String,
    pub paused_verb: String,
    pub tools: Vec<String>,
    #[serde(deserialize_with = "uint")]
    pub max_intent_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, expecting = "a [section] table")]
pub struct SendCfg {
    #[serde(deserialize_with = "uint")]
    pub settle_ms: u64,
    #[serde(deserialize_with = "uint")]
    pub enter_wait_ms: u64,
    #[serde(deserialize_with = "uint")]
    pub enter_retries: u64,
    #[serde(deserialize_with = "uint")]
    pub max_body_bytes: u64,
    /// Whether a harness's delivery leg (docs/spec/ring.md#legs) is used;
    /// `false` types every doorbell.
    pub legs: bool,
    /// How long a ring waits for a leg to take the doorbell before it
    /// types it instead.
    #[serde(deserialize_with = "uint")]
    pub leg_wait_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, expecting = "a [section] table")]
pub struct ControlCfg {
    /// How long `fm-control exit` waits for the agent to go.
    #[serde(deserialize_with = "uint")]
    pub exit_wait_secs: u64,
    /// How long a new worktree's set-up may take, all commands together.
    #[serde(deserialize_with = "uint")]
    pub setup_timeout_secs: u64,
    /// How long `fm restore` rings a restored agent that still boots.
    #[serde(deserialize_with = "uint")]
    pub restore_ring_secs: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, expecting = "a [section] table")]
pub struct WatchCfg {
    #[serde(deserialize_with = "uint")]
    pub grace_secs: u64,
    #[serde(deserialize_with = "uint")]
    pub max_rings: u64,
    /// Heartbeat interval of a daemon, and its rescan interval when it
    /// has no filesystem events.
    #[serde(deserialize_with = "uint")]
    pub poll_secs: u64,
    /// With filesystem events, how often a daemon still rescans every
    /// task (a safety net for a change that raised no event).
    #[serde(deserialize_with = "uint")]
    pub rescan_secs: u64,
    #[serde(deserialize_with = "uint")]
    pub unhandled_max_secs: u64,
    pub on_wake: Vec<String>,
}

/// `[notify]`: which wakes reach the captain, and through which channels
/// ([`crate::notify`]). Every channel is off until configured.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, expecting = "a [section] table")]
pub struct NotifyCfg {
    /// Events that notify: a `status` wake's verb, or any other wake's kind.
    pub events: Vec<String>,
    /// A message and a bell in every client attached to the workers' server.
    pub tmux: bool,
    /// How long the tmux message stays up (0: until a key is pressed).
    #[serde(deserialize_with = "uint")]
    pub tmux_display_ms: u64,
    /// A desktop notification through `notify-send`, when it is installed.
    pub desktop: bool,
    /// An HTTP POST of the text to this URL (ntfy style); "" is off.
    pub url: String,
    #[serde(deserialize_with = "uint")]
    pub url_timeout_ms: u64,
    /// An argv run per notification, without a shell.
    pub command: Vec<String>,
    /// Notifications per channel per minute; wakes beyond it wait and go
    /// out together.
    #[serde(deserialize_with = "uint")]
    pub per_minute: u64,
    /// The first retry after a failure; each further one doubles, up to
    /// `retry_max_secs`.
    #[serde(deserialize_with = "uint")]
    pub retry_secs: u64,
    #[serde(deserialize_with = "uint")]
    pub retry_max_secs: u64,
    /// A wake older than this is no longer sent (and the skip is logged).
    #[serde(deserialize_with = "uint")]
    pub max_age_secs: u64,
}

/// `fm serve`, the web cockpit (docs/spec/serve.md).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, expecting = "a [section] table")]
pub struct ServeCfg {
    /// Where it listens (`--listen` overrides).
    pub listen: String,
    /// The URL the captain's browser reaches it by (a reverse proxy, a
    /// tunnel); notifications link a decision's page under it. "" is off.
    pub public_url: String,
    /// Event streams open at once; one more is refused (503).
    #[serde(deserialize_with = "uint")]
    pub max_streams: u64,
}

impl Default for ServeCfg {
    fn default() -> Self {
        ServeCfg {
            listen: "127.0.0.1:7878".into(),
            public_url: String::new(),
            max_streams: 32,
        }
    }
}

impl Default for NotifyCfg {
    fn default() -> Self {
        NotifyCfg {
            events: [
                "needs-decision",
                "blocked",
                "failed",
                "escalation",
                "dead-agent",
                "dialog",
            ]
            .map(String::from)
            .to_vec(),
            tmux: false,
            tmux_display_ms: 5000,
            desktop: false,
            url: String::new(),
            url_timeout_ms: 5000,
            command: Vec::new(),
            per_minute: 6,
            retry_secs: 5,
            retry_max_secs: 300,
            max_age_secs: 3600,
        }
    }
}

impl Default for TmuxCfg {
    fn default() -> Self {
        TmuxCfg {
            session: "fm".into(),
            socket: String::new(),
        }
    }
}

impl Default for PathsCfg {
    fn default() -> Self {
        PathsCfg {
            worktrees: "worktrees".into(),
        }
    }
}

impl Default for BriefCfg {
    fn default() -> Self {
        BriefCfg {
            delegator: "firstmate".into(),
            branch_prefix: "fm/".into(),
            default_branch: "main".into(),
            paused_verb: "paused".into(),
            tools: Vec::new(),
            max_intent_bytes: 65536,
        }
    }
}

impl Default for SendCfg {
    fn default() -> Self {
        SendCfg {
            settle_ms: 300,
            enter_wait_ms: 400,
            enter_retries: 3,
            max_body_bytes: 1_048_576,
            legs: true,
            leg_wait_ms: 1000,
        }
    }
}

impl Default for WatchCfg {
    fn default() -> Self {
        WatchCfg {
            grace_secs: 90,
            max_rings: 3,
            poll_secs: 15,
            rescan_secs: 300,
            unhandled_max_secs: 900,
            on_wake: Vec::new(),
        }
    }
}

impl Default for ControlCfg {
    fn default() -> Self {
        ControlCfg {
            exit_wait_secs: 30,
            setup_timeout_secs: 300,
            restore_ring_secs: 60,
        }
    }
}

/// An integer key: any `u64` (TOML stops at `i64::MAX`, the environment
/// does not), under one message for every wrong value.
fn uint<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    struct Uint;
    impl serde::de::Visitor<'_> for Uint {
        type Value = u64;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a non-negative integer")
        }
        fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<u64, E> {
            u64::try_from(n).map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(n), &self))
        }
        fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<u64, E> {
            Ok(n)
        }
        fn visit_i128<E: serde::de::Error>(self, n: i128) -> Result<u64, E> {
            Err(E::invalid_value(
                serde::de::Unexpected::Other(&n.to_string()),
                &self,
            ))
        }
        fn visit_u128<E: serde::de::Error>(self, n: u128) -> Result<u64, E> {
            Err(E::invalid_value(
                serde::de::Unexpected::Other(&n.to_string()),
                &self,
            ))
        }
    }
    d.deserialize_u64(Uint)
}

impl Config {
    /// Loads `path` (missing → defaults) and applies the process environment.
    pub fn load(path: &Path) -> Result<Config> {
        let text = match crate::fsx::read_optional(path)? {
            Some(bytes) => Some(String::from_utf8(bytes).map_err(|e| Error::Config {
                path: path.to_path_buf(),
                line: 1,
                key: "(file)".into(),
                msg: format!("not valid UTF-8: {e}"),
            })?),
            None => None,
        };
        let env: Vec<(String, String)> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
            .filter(|(k, _)| k.starts_with("FM_"))
            .collect();
        Config::from_parts(path, text.as_deref(), &env)
    }

    /// Builds a config from file text (if any) and `FM_*` variables.
    pub fn from_parts(path: &Path, text: Option<&str>, env: &[(String, String)]) -> Result<Config> {
        // The file is checked on its own first, so its errors come before
        // those of the environment.
        let text = text.unwrap_or("");
        let mut tree = file::parse(path, text)?;
        let cfg = file::read(path, text, &tree)?;
        if !env::merge(tree.get_mut(), env)? {
            return check_paths(path, text, cfg);
        }
        check_paths(path, text, file::read(path, text, &tree)?)
    }
}

/// `paths.worktrees` becomes part of every worktree path, which briefs
/// and spawn commands carry: a control character in it is refused, as in a
/// home path (`home::refuse_control`).
fn check_paths(path: &Path, text: &str, cfg: Config) -> Result<Config> {
    if let Some(c) = control_char(Path::new(&cfg.paths.worktrees)) {
        let line = text
            .lines()
            .position(|l| l.trim_start().starts_with("worktrees"))
            .map_or(1, |i| i + 1);
        return Err(Error::Config {
            path: path.to_path_buf(),
            line,
            key: "paths.worktrees".into(),
            msg: format!(
                "holds the control character U+{:04X}; use a path without control characters",
                c as u32
            ),
        });
    }
    Ok(cfg)
}

/// The first control character in `path`, if any (a home path, or
/// `paths.worktrees`).
pub(crate) fn control_char(path: &Path) -> Option<char> {
    use std::os::unix::ffi::OsStrExt;
    String::from_utf8_lossy(path.as_os_str().as_bytes())
        .chars()
        .find(|c| c.is_control())
}

#[cfg(test)]
mod tests;

//! Settings (SPEC §1.4): `config/firstmate.toml`, built-in defaults for
//! every key, warnings for unknown keys, and `FM_<SECTION>_<KEY>` overrides.
//!
//! One serde struct per section, with today's defaults in its `Default`.
//! [`file`] turns the text into a [`Config`] with `file:line: key` errors
//! and unknown-key warnings; [`env`] applies the overrides to every scalar
//! key the sections serialise, so a new key gets its `FM_*` variable
//! without further code. The `[harness.<name>]` tables are
//! [`crate::harness`]'s type and the `[hosts.<name>]` tables
//! [`crate::remote`]'s; this module only parses them.

mod env;
mod file;
pub mod host;

pub use host::{HostCfg, Hosts};

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
    /// `[harness.<name>]` tables as written; merged over the built-ins by
    /// [`crate::harness::profile`].
    #[serde(skip_serializing)]
    pub harness: Overrides,
    /// `[hosts.<name>]` tables: the other machines tasks may run on
    /// ([`crate::remote`]).
    #[serde(skip_serializing)]
    pub hosts: Hosts,
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
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, expecting = "a [section] table")]
pub struct ControlCfg {
    /// How long `fm-control exit` waits for the agent to go.
    #[serde(deserialize_with = "uint")]
    pub exit_wait_secs: u64,
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
        ControlCfg { exit_wait_secs: 30 }
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
mod tests {
    use super::*;

    fn load(text: &str, env: &[(&str, &str)]) -> Result<Config> {
        let env: Vec<_> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_parts(Path::new("firstmate.toml"), Some(text), &env)
    }

    #[test]
    fn missing_file_gives_defaults() {
        let c = Config::from_parts(Path::new("x"), None, &[]).unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(c.watch.grace_secs, 90);
    }

    #[test]
    fn the_shipped_config_is_all_defaults_without_warnings() {
        let text = include_str!("../../config/firstmate.toml");
        let c = load(text, &[]).unwrap();
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        assert_eq!(
            Config {
                harness: std::collections::BTreeMap::default(),
                hosts: std::collections::BTreeMap::default(),
                ..c
            },
            Config::default()
        );
    }

    #[test]
    fn file_values_and_env_overrides() {
        let c = load(
            "[watch]\ngrace_secs = 5\n[tmux]\nsocket = \"a\"\n",
            &[("FM_WATCH_GRACE_SECS", "1"), ("FM_TMUX_SOCKET", "b")],
        )
        .unwrap();
        assert_eq!(c.watch.grace_secs, 1);
        assert_eq!(c.tmux.socket, "b");
        let c = load("[watch]\ngrace_secs = 5\n", &[]).unwrap();
        assert_eq!(c.watch.grace_secs, 5);
    }

    #[test]
    fn bad_env_value_is_exit_3_naming_the_variable() {
        let err = load("", &[("FM_WATCH_GRACE_SECS", "soon")]).unwrap_err();
        assert_eq!(err.exit_code(), 3);
        assert!(err.to_string().contains("FM_WATCH_GRACE_SECS"));
    }

    #[test]
    fn unknown_keys_warn() {
        let c = load("[watch]\nbogus = 1\n[nope]\nx = 2\n", &[]).unwrap();
        assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
        assert!(c.warnings[0].contains("watch.bogus") || c.warnings[1].contains("watch.bogus"));
    }

    #[test]
    fn malformed_file_names_line_and_key() {
        let err = load("[watch]\n\ngrace_secs = \"soon\"\n", &[]).unwrap_err();
        let msg = err.to_string();
        assert_eq!(err.exit_code(), 3);
        assert!(
            msg.contains(":3:") && msg.contains("watch.grace_secs"),
            "{msg}"
        );
        let err = load("[send]\nsettle_ms = = 3\n", &[]).unwrap_err();
        assert!(err.to_string().contains(":2:"), "{err}");
    }

    #[test]
    fn a_harness_regex_that_does_not_compile_is_a_config_error() {
        let err = load(
            "[harness.claude]\nexit = \"/q\"\nbusy_regex = \"esc to (interrupt\"\n",
            &[],
        )
        .unwrap_err();
        assert_eq!(err.exit_code(), 3);
        let msg = err.to_string();
        assert!(
            msg.contains(":3:") && msg.contains("harness.claude.busy_regex"),
            "{msg}"
        );
        assert!(msg.contains("not a valid regular expression"), "{msg}");
        let ok = load("[harness.mine]\ncomposer_regex = \"^> (.*)$\"\n", &[]).unwrap();
        assert!(ok.harness.contains_key("mine"));
    }

    #[test]
    fn a_section_written_as_a_value_is_an_error() {
        let err = load("send = 5\n", &[]).unwrap_err();
        assert_eq!(err.exit_code(), 3);
        assert!(
            err.to_string()
                .ends_with(":1: send: expected a [section] table"),
            "{err}"
        );
        assert!(load("nosuch = 5\n", &[]).unwrap().warnings.len() == 1);
    }

    #[test]
    fn a_duplicate_key_is_named() {
        let err = load("[watch]\ngrace_secs = 1\ngrace_secs = 2\n", &[]).unwrap_err();
        assert!(
            err.to_string().contains("grace_secs") && err.to_string().contains(":3:"),
            "{err}"
        );
    }

    #[test]
    fn harness_tables_are_read() {
        let c = load(
            "[harness.mine]\nlaunch = [\"x\", \"{brief}\"]\nexit = \"/q\"\n",
            &[],
        )
        .unwrap();
        let h = &c.harness["mine"];
        assert_eq!(
            h.launch.as_deref(),
            Some(&["x".to_string(), "{brief}".to_string()][..])
        );
        assert_eq!(h.exit.as_deref(), Some("/q"));
    }

    #[test]
    fn an_overflowing_number_names_its_key_and_line() {
        for n in ["99999999999999999999", "18446744073709551616", "-1"] {
            let err = load(&format!("[watch]\n\ngrace_secs = {n}\n"), &[]).unwrap_err();
            assert_eq!(err.exit_code(), 3);
            assert_eq!(
                err.to_string(),
                "firstmate.toml:3: watch.grace_secs: expected a non-negative integer"
            );
        }
    }

    #[test]
    fn wrong_types_name_the_key_and_what_was_wanted() {
        let msg = |text: &str| load(text, &[]).unwrap_err().to_string();
        assert_eq!(
            msg("[brief]\ntools = 5\n"),
            "firstmate.toml:2: brief.tools: expected an array of strings"
        );
        assert_eq!(
            msg("[brief]\ntools = [\"a\", 1]\n"),
            "firstmate.toml:2: brief.tools: expected a string"
        );
        assert_eq!(
            msg("[harness.mine]\nlaunch = 5\n"),
            "firstmate.toml:2: harness.mine.launch: expected an array of strings"
        );
        assert_eq!(
            msg("watch = { grace_secs = \"x\" }\n"),
            "firstmate.toml:1: watch.grace_secs: expected a non-negative integer"
        );
        assert_eq!(
            msg("harness = 5\n"),
            "firstmate.toml:1: harness: expected a table"
        );
    }

    #[test]
    fn unknown_keys_warn_with_file_line_and_key() {
        let c = load(
            "[watch]\ngrace_secs = 2\nbogus = 1\n[nope]\nx = 2\ny = 3\n[empty]\n[harness.mine]\nlaunch = [\"x\"]\nlunch = 1\n",
            &[],
        )
        .unwrap();
        assert_eq!(
            c.warnings,
            [
                "firstmate.toml:7: unknown key empty (ignored)",
                "firstmate.toml:10: unknown key harness.mine.lunch (ignored)",
                "firstmate.toml:5: unknown key nope.x (ignored)",
                "firstmate.toml:6: unknown key nope.y (ignored)",
                "firstmate.toml:3: unknown key watch.bogus (ignored)",
            ]
        );
        assert_eq!(c.watch.grace_secs, 2);
    }

    /// Every scalar key the sections have takes its `FM_<SECTION>_<KEY>`.
    #[test]
    fn every_scalar_key_has_an_env_override() {
        let defaults = toml::Table::try_from(Config::default()).unwrap();
        let mut seen = 0;
        for (section, body) in &defaults {
            for (key, value) in body.as_table().unwrap() {
                let var = format!("FM_{}_{}", section.to_uppercase(), key.to_uppercase());
                let raw = match value {
                    toml::Value::Integer(n) => (n + 7).to_string(),
                    toml::Value::String(s) => format!("{s}-env"),
                    toml::Value::Boolean(b) => (!b).to_string(),
                    toml::Value::Array(_) => continue,
                    other => panic!("{section}.{key}: a scalar of a new type: {other:?}"),
                };
                let c = load("", &[(var.as_str(), raw.as_str())]).unwrap();
                let got = toml::Table::try_from(&c).unwrap();
                assert_eq!(
                    got[section][key].to_string().trim_matches('"'),
                    raw,
                    "{var}"
                );
                let other: usize = defaults
                    .iter()
                    .flat_map(|(s, b)| b.as_table().unwrap().iter().map(move |(k, v)| (s, k, v)))
                    .filter(|(s, k, v)| got[*s][*k] != **v)
                    .count();
                assert_eq!(other, 1, "{var} changed only its own key");
                if value.is_integer() {
                    let err = load("", &[(var.as_str(), "-1")]).unwrap_err();
                    assert_eq!(err.exit_code(), 3);
                    assert!(err.to_string().contains(&var), "{err}");
                }
                seen += 1;
            }
        }
        assert_eq!(seen, 27, "scalar keys in the sections");
    }

    #[test]
    fn env_integers_take_what_parse_takes_up_to_u64_max() {
        for (raw, want) in [
            ("18446744073709551615", u64::MAX),
            (" 007 ", 7),
            ("+7", 7),
            ("0", 0),
            ("000", 0),
        ] {
            let c = load(
                "[control]\nexit_wait_secs = 5\n",
                &[("FM_CONTROL_EXIT_WAIT_SECS", raw)],
            )
            .unwrap();
            assert_eq!(c.control.exit_wait_secs, want, "{raw:?}");
        }
        for raw in ["18446744073709551616", "1_000", "0x10", "", "-0", "7s"] {
            let err = load("", &[("FM_CONTROL_EXIT_WAIT_SECS", raw)]).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "environment variable FM_CONTROL_EXIT_WAIT_SECS: expected a non-negative integer, got {raw:?}"
                )
            );
        }
    }

    #[test]
    fn file_errors_come_before_env_errors() {
        let err = load(
            "[watch]\ngrace_secs = \"x\"\n",
            &[("FM_WATCH_POLL_SECS", "x")],
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("firstmate.toml:2: watch.grace_secs"),
            "{err}"
        );
    }

    #[test]
    fn an_env_override_keeps_the_file_harness_tables_and_warnings() {
        let c = load(
            "[harness.mine]\nlaunch = [\"x\"]\n[watch]\nbogus = 1\npoll_secs = 4\n",
            &[("FM_WATCH_GRACE_SECS", "1")],
        )
        .unwrap();
        assert_eq!(c.watch.grace_secs, 1);
        assert_eq!(c.watch.poll_secs, 4);
        assert!(c.harness.contains_key("mine"));
        assert_eq!(c.warnings.len(), 1);
    }

    #[test]
    fn an_empty_regex_switches_a_built_in_one_off() {
        use crate::harness::profile;
        let c = load("[harness.claude]\ncomposer_regex = \"\"\n", &[]).unwrap();
        let claude = profile(&c.harness, "claude").unwrap();
        assert!(claude.composer_regex.is_none());
        assert!(claude.busy_regex.is_some(), "the other regex stays");
        let c = load("[harness.claude]\nbusy_regex = \"\"\n", &[]).unwrap();
        let claude = profile(&c.harness, "claude").unwrap();
        assert!(claude.busy_regex.is_none());
        assert!(claude.composer_regex.is_some());
        let c = load("[harness.claude]\nexit = \"/q\"\n", &[]).unwrap();
        let claude = profile(&c.harness, "claude").unwrap();
        assert!(claude.composer_regex.is_some() && claude.busy_regex.is_some());
        let c = load("[harness.claude]\nbusy_regex = \"^Thinking\"\n", &[]).unwrap();
        let claude = profile(&c.harness, "claude").unwrap();
        assert_eq!(claude.busy_regex.unwrap().as_str(), "^Thinking");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn loader_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..400)) {
            let text = String::from_utf8_lossy(&bytes);
            let _ = load(&text, &[]);
        }

        #[test]
        fn loader_never_panics_on_tomlish(text in "(\\[[a-z.]{0,12}\\]\n|[a-z_]{1,12} = (\"[^\"\n]{0,8}\"|-?[0-9]{1,22}|\\[\\]|true|\\{\\})\n){0,12}") {
            let _ = load(&text, &[]);
        }
    }
}

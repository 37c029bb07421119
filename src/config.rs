//! Settings (SPEC §1.4): `config/firstmate.toml`, built-in defaults for
//! every key, warnings for unknown keys, and `FM_<SECTION>_<KEY>` overrides.
//!
//! The loader checks every known key against a schema before building the
//! typed [`Config`], so a value of the wrong type is reported with the file,
//! line and key instead of a generic deserialisation error.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::harness::HarnessOverride;

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub tmux: TmuxCfg,
    pub paths: PathsCfg,
    pub brief: BriefCfg,
    pub send: SendCfg,
    pub watch: WatchCfg,
    pub control: ControlCfg,
    /// `[harness.<name>]` tables as written; merged over the built-ins by
    /// [`crate::harness::profile`].
    pub harness: BTreeMap<String, HarnessOverride>,
    /// Unknown keys seen while loading; the caller prints them.
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TmuxCfg {
    pub session: String,
    pub socket: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PathsCfg {
    pub worktrees: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BriefCfg {
    pub delegator: String,
    pub branch_prefix: String,
    pub default_branch: String,
    pub paused_verb: String,
    pub tools: Vec<String>,
    pub max_intent_bytes: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SendCfg {
    pub settle_ms: u64,
    pub enter_wait_ms: u64,
    pub enter_retries: u64,
    pub max_body_bytes: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ControlCfg {
    /// How long `fm-control exit` waits for the agent to go.
    pub exit_wait_secs: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WatchCfg {
    pub grace_secs: u64,
    pub max_rings: u64,
    pub poll_secs: u64,
    pub unhandled_max_secs: u64,
    pub on_wake: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            tmux: TmuxCfg {
                session: "fm".into(),
                socket: String::new(),
            },
            paths: PathsCfg {
                worktrees: "worktrees".into(),
            },
            brief: BriefCfg {
                delegator: "firstmate".into(),
                branch_prefix: "fm/".into(),
                default_branch: "main".into(),
                paused_verb: "paused".into(),
                tools: Vec::new(),
                max_intent_bytes: 65536,
            },
            send: SendCfg {
                settle_ms: 300,
                enter_wait_ms: 400,
                enter_retries: 3,
                max_body_bytes: 1_048_576,
            },
            watch: WatchCfg {
                grace_secs: 90,
                max_rings: 3,
                poll_secs: 15,
                unhandled_max_secs: 900,
                on_wake: Vec::new(),
            },
            control: ControlCfg { exit_wait_secs: 30 },
            harness: BTreeMap::new(),
            warnings: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Int,
    Str,
    StrList,
}

/// Every known `[section] key` and its type. Scalars get env overrides.
const SCHEMA: &[(&str, &str, Kind)] = &[
    ("tmux", "session", Kind::Str),
    ("tmux", "socket", Kind::Str),
    ("paths", "worktrees", Kind::Str),
    ("brief", "delegator", Kind::Str),
    ("brief", "branch_prefix", Kind::Str),
    ("brief", "default_branch", Kind::Str),
    ("brief", "paused_verb", Kind::Str),
    ("brief", "tools", Kind::StrList),
    ("brief", "max_intent_bytes", Kind::Int),
    ("send", "settle_ms", Kind::Int),
    ("send", "enter_wait_ms", Kind::Int),
    ("send", "enter_retries", Kind::Int),
    ("send", "max_body_bytes", Kind::Int),
    ("watch", "grace_secs", Kind::Int),
    ("watch", "max_rings", Kind::Int),
    ("watch", "poll_secs", Kind::Int),
    ("watch", "unhandled_max_secs", Kind::Int),
    ("watch", "on_wake", Kind::StrList),
    ("control", "exit_wait_secs", Kind::Int),
];

/// Keys of a `[harness.<name>]` table.
const HARNESS_SCHEMA: &[(&str, Kind)] = &[
    ("launch", Kind::StrList),
    ("interrupt", Kind::StrList),
    ("exit", Kind::Str),
    ("busy_regex", Kind::Str),
    ("agent_commands", Kind::StrList),
    ("composer_regex", Kind::Str),
];

/// A typed value taken from the file or the environment.
#[derive(Debug, Clone)]
enum Val {
    Int(u64),
    Str(String),
    List(Vec<String>),
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
        let mut cfg = Config::default();
        let mut values: BTreeMap<(String, String), Val> = BTreeMap::new();
        if let Some(text) = text {
            let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
                // Name the offending text (a duplicate key, say) when the
                // error points at a short single-line span.
                let key = e
                    .span()
                    .and_then(|s| text.get(s))
                    .map(|k| k.trim().trim_matches('"'))
                    .filter(|k| !k.is_empty() && k.len() <= 64 && !k.contains('\n'))
                    .unwrap_or("(syntax)")
                    .to_string();
                Error::Config {
                    path: path.to_path_buf(),
                    line: e.span().map(|s| line_of(text, s.start)).unwrap_or(1),
                    key,
                    msg: e.message().trim().to_string(),
                }
            })?;
            for (section, body) in &table {
                let at = |key: &str| locate(text, section, key);
                let type_err = |key: &str, want: &str| Error::Config {
                    path: path.to_path_buf(),
                    line: if key.is_empty() {
                        locate(text, "", section)
                    } else {
                        at(key)
                    },
                    key: if key.is_empty() {
                        section.clone()
                    } else {
                        format!("{section}.{key}")
                    },
                    msg: format!("expected {want}"),
                };
                if section == "harness" {
                    let Some(harnesses) = body.as_table() else {
                        return Err(type_err("", "a table of [harness.<name>] tables"));
                    };
                    for (name, h) in harnesses {
                        let Some(h) = h.as_table() else {
                            return Err(type_err(name, "a table"));
                        };
                        let mut ov = HarnessOverride::default();
                        for (key, v) in h {
                            let Some((_, kind)) = HARNESS_SCHEMA.iter().find(|(k, _)| k == key)
                            else {
                                cfg.warnings.push(format!(
                                    "{}:{}: unknown key harness.{name}.{key} (ignored)",
                                    path.display(),
                                    locate(text, &format!("harness.{name}"), key)
                                ));
                                continue;
                            };
                            let val = typed(v, *kind).ok_or_else(|| Error::Config {
                                path: path.to_path_buf(),
                                line: locate(text, &format!("harness.{name}"), key),
                                key: format!("harness.{name}.{key}"),
                                msg: format!("expected {}", kind_name(*kind)),
                            })?;
                            // A regex that does not compile would silently
                            // turn busy or composer detection off.
                            if key.ends_with("_regex")
                                && let Val::Str(re) = &val
                                && let Err(e) = regex::Regex::new(re)
                            {
                                return Err(Error::Config {
                                    path: path.to_path_buf(),
                                    line: locate(text, &format!("harness.{name}"), key),
                                    key: format!("harness.{name}.{key}"),
                                    msg: format!(
                                        "not a valid regular expression: {}",
                                        e.to_string()
                                            .lines()
                                            .last()
                                            .unwrap_or("")
                                            .trim()
                                            .trim_start_matches("error: ")
                                    ),
                                });
                            }
                            ov.set(key, into_json(val));
                        }
                        cfg.harness.insert(name.clone(), ov);
                    }
                    continue;
                }
                let known_section = SCHEMA.iter().any(|(s, _, _)| s == section);
                let Some(body) = body.as_table() else {
                    if known_section {
                        return Err(type_err("", "a [section] table"));
                    }
                    cfg.warnings.push(format!(
                        "{}:{}: unknown key {section} (ignored)",
                        path.display(),
                        locate(text, "", section)
                    ));
                    continue;
                };
                for (key, v) in body {
                    match SCHEMA.iter().find(|(s, k, _)| s == section && k == key) {
                        None => cfg.warnings.push(format!(
                            "{}:{}: unknown key {section}.{key} (ignored)",
                            path.display(),
                            at(key)
                        )),
                        Some((_, _, kind)) => {
                            let val =
                                typed(v, *kind).ok_or_else(|| type_err(key, kind_name(*kind)))?;
                            values.insert((section.clone(), key.clone()), val);
                        }
                    }
                }
            }
        }
        for (section, key, kind) in SCHEMA {
            if *kind == Kind::StrList {
                continue;
            }
            let var = format!("FM_{}_{}", section.to_uppercase(), key.to_uppercase());
            if let Some((_, raw)) = env.iter().find(|(k, _)| *k == var) {
                let val = parse_env(raw, *kind).ok_or_else(|| Error::EnvVar {
                    var: var.clone(),
                    msg: format!("expected {}, got {raw:?}", kind_name(*kind)),
                })?;
                values.insert((section.to_string(), key.to_string()), val);
            }
        }
        for ((section, key), val) in values {
            cfg.apply(&section, &key, val);
        }
        Ok(cfg)
    }

    fn apply(&mut self, section: &str, key: &str, val: Val) {
        let s = |v: &Val| match v {
            Val::Str(s) => s.clone(),
            _ => String::new(),
        };
        let n = |v: &Val| match v {
            Val::Int(n) => *n,
            _ => 0,
        };
        let l = |v: &Val| match v {
            Val::List(l) => l.clone(),
            _ => Vec::new(),
        };
        match (section, key) {
            ("tmux", "session") => self.tmux.session = s(&val),
            ("tmux", "socket") => self.tmux.socket = s(&val),
            ("paths", "worktrees") => self.paths.worktrees = s(&val),
            ("brief", "delegator") => self.brief.delegator = s(&val),
            ("brief", "branch_prefix") => self.brief.branch_prefix = s(&val),
            ("brief", "default_branch") => self.brief.default_branch = s(&val),
            ("brief", "paused_verb") => self.brief.paused_verb = s(&val),
            ("brief", "tools") => self.brief.tools = l(&val),
            ("brief", "max_intent_bytes") => self.brief.max_intent_bytes = n(&val),
            ("send", "settle_ms") => self.send.settle_ms = n(&val),
            ("send", "enter_wait_ms") => self.send.enter_wait_ms = n(&val),
            ("send", "enter_retries") => self.send.enter_retries = n(&val),
            ("send", "max_body_bytes") => self.send.max_body_bytes = n(&val),
            ("watch", "grace_secs") => self.watch.grace_secs = n(&val),
            ("watch", "max_rings") => self.watch.max_rings = n(&val),
            ("watch", "poll_secs") => self.watch.poll_secs = n(&val),
            ("watch", "unhandled_max_secs") => self.watch.unhandled_max_secs = n(&val),
            ("watch", "on_wake") => self.watch.on_wake = l(&val),
            ("control", "exit_wait_secs") => self.control.exit_wait_secs = n(&val),
            _ => {}
        }
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Int => "a non-negative integer",
        Kind::Str => "a string",
        Kind::StrList => "an array of strings",
    }
}

fn typed(v: &toml::Value, kind: Kind) -> Option<Val> {
    match (kind, v) {
        (Kind::Int, toml::Value::Integer(n)) if *n >= 0 => Some(Val::Int(*n as u64)),
        (Kind::Str, toml::Value::String(s)) => Some(Val::Str(s.clone())),
        (Kind::StrList, toml::Value::Array(a)) => a
            .iter()
            .map(|x| x.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .map(Val::List),
        _ => None,
    }
}

fn parse_env(raw: &str, kind: Kind) -> Option<Val> {
    match kind {
        Kind::Int => raw.trim().parse().ok().map(Val::Int),
        Kind::Str => Some(Val::Str(raw.to_string())),
        Kind::StrList => None,
    }
}

fn into_json(v: Val) -> serde_json::Value {
    match v {
        Val::Int(n) => n.into(),
        Val::Str(s) => s.into(),
        Val::List(l) => l.into(),
    }
}

/// 1-based line of byte offset `pos`.
fn line_of(text: &str, pos: usize) -> usize {
    text.as_bytes()[..pos.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Best-effort line of `key` inside `[section]` (or at top level for "").
fn locate(text: &str, section: &str, key: &str) -> usize {
    let mut current = String::new();
    let mut fallback = 1;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if let Some(h) = line.strip_prefix('[') {
            current = h
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            if current == section && key.is_empty() {
                return i + 1;
            }
            if current == section {
                fallback = i + 1;
            }
            continue;
        }
        let lhs = line
            .split('=')
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches('"');
        if current == section && !key.is_empty() && lhs == key && line.contains('=') {
            return i + 1;
        }
        if section.is_empty() && current.is_empty() && lhs == key {
            return i + 1;
        }
    }
    fallback
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
        let text = include_str!("../config/firstmate.toml");
        let c = load(text, &[]).unwrap();
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        assert_eq!(
            Config {
                harness: BTreeMap::new(),
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

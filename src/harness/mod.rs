//! Harness profiles (docs/spec/harness.md): how to launch, interrupt and quit each
//! agent program, how to tell from tmux whether it is still alive, and how
//! to read "busy", the composer line and its dialogs from its screen.
//!
//! Built-ins exist for claude, codex, opencode, pi, shell and stand-in
//! ([`builtin`]); a `[harness.<name>]` table in the config
//! ([`HarnessOverride`], [`overrides`]) overrides any of their keys or
//! defines a new profile, merged by [`profile`]. The launch flags a
//! profile adds, and where, are [`flags`]; the screen-reading rules it
//! hands to `tmux::screen` are [`reading`]. Regexes are compiled while the
//! config loads, so a bad one is a config error naming its line, and
//! callers get a compiled [`Regex`].
//!
//! This module sits below the tmux layer: `tmux::screen` reads a screen
//! with a profile's [`Rules`]; nothing here reads a screen or runs tmux.

mod builtin;
pub mod flags;
pub mod overrides;
pub mod reading;

use regex::Regex;

pub use builtin::{BUILTINS, SESSION, builtin};
pub use flags::{FLAGS_PLACEHOLDER, Place};
pub use overrides::Overrides;
pub use reading::{Dialog, Rules};

/// Commands that count as "a shell in the foreground" for liveness.
pub const SHELLS: &[&str] = &["bash", "sh", "dash", "zsh", "fish", "ksh", "tcsh"];

#[derive(Debug, Clone)]
pub struct HarnessProfile {
    pub name: String,
    /// Argv template; `{brief}`, `{id}`, `{inbox}`, `{home}`, `{status}`
    /// are substituted per element (never through a shell).
    pub launch: Vec<String>,
    /// tmux key names sent to interrupt a turn.
    pub interrupt: Vec<String>,
    /// Text typed to quit the agent.
    pub exit: String,
    pub busy_regex: Option<Regex>,
    /// The busy regex shows for the whole of every turn (Claude Code's
    /// `esc to interrupt` footer: silent, streaming, running a tool), so
    /// a screen that positively reads idle overrules a busy record a hook
    /// left behind (an interrupted turn ends with no hook). Built in for
    /// claude; off once `busy_regex` is overridden.
    pub busy_whole_turn: bool,
    pub agent_commands: Option<Vec<String>>,
    pub composer_regex: Option<Regex>,
    /// The line the agent always draws right under its composer (Claude
    /// Code's box rule, Codex's status line): the composer counts only
    /// with it below, at the bottom of the screen.
    pub composer_below_regex: Option<Regex>,
    /// Modal screens (docs/spec/harness.md#dialogs), tried in order: never typed into.
    pub dialogs: Vec<Dialog>,
    /// How the agent treats its own permission prompts.
    pub approval: Approval,
    /// `NAME=value` entries added to the agent's environment.
    pub env: Vec<String>,
    /// Spawn installs the harness's own busy/idle hooks (claude, codex).
    pub hooks: bool,
    /// The argv that resumes the agent's own conversation, as `launch`
    /// with `{session}` for its id (`fm restore`, docs/spec/restore.md);
    /// `None`: the agent cannot resume, a restore starts it afresh.
    pub resume: Option<Vec<String>>,
    /// How the doorbell reaches the agent (docs/spec/ring.md#legs): its
    /// own channel (`hook`, `queue`) or typed into the pane (`typed`).
    pub leg: crate::leg::Leg,
}

/// The approval posture of a spawned agent (`approval` in
/// `[harness.<name>]`): whether it asks before running tools. A worker
/// runs in its own disposable worktree, so the default lets it work
/// without asking; `prompt` makes every permission prompt a dialog the
/// captain answers; `as-launched` adds no flag (the launch argv decides).
/// Only the claude and codex profiles know flags for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Approval {
    #[default]
    Bypass,
    Prompt,
    AsLaunched,
}

impl Approval {
    pub fn as_str(self) -> &'static str {
        match self {
            Approval::Bypass => "bypass",
            Approval::Prompt => "prompt",
            Approval::AsLaunched => "as-launched",
        }
    }
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(std::string::ToString::to_string).collect()
}

/// The profile `name` with the config's overrides applied; `None` if it is
/// neither built in nor configured with at least a `launch`.
pub fn profile(overrides: &Overrides, name: &str) -> Option<HarnessProfile> {
    let ov = overrides.get(name);
    let mut p = match (builtin(name), ov) {
        (Some(p), _) => p,
        (None, Some(ov)) if ov.launch.is_some() => HarnessProfile {
            name: name.to_string(),
            launch: Vec::new(),
            interrupt: strs(&["C-c"]),
            exit: "exit".into(),
            busy_regex: None,
            busy_whole_turn: false,
            agent_commands: None,
            composer_regex: None,
            composer_below_regex: None,
            dialogs: Vec::new(),
            approval: Approval::default(),
            env: Vec::new(),
            hooks: true,
            resume: None,
            leg: crate::leg::Leg::Typed,
        },
        _ => return None,
    };
    if let Some(ov) = ov {
        if let Some(v) = &ov.launch {
            p.resume = builtin::resume_for_launch(name, p.resume.take(), v);
            p.launch.clone_from(v);
        }
        if let Some(r) = &ov.resume {
            p.resume = (!r.is_empty()).then(|| r.clone());
        }
        if let Some(v) = &ov.interrupt {
            p.interrupt.clone_from(v);
        }
        if let Some(v) = &ov.exit {
            p.exit.clone_from(v);
        }
        if let Some(v) = &ov.busy_regex {
            p.busy_regex.clone_from(v);
            // Nothing says another regex shows for the whole turn.
            p.busy_whole_turn = false;
        }
        if let Some(v) = ov.busy_whole_turn {
            p.busy_whole_turn = v;
        }
        if ov.agent_commands.is_some() {
            p.agent_commands.clone_from(&ov.agent_commands);
        }
        if let Some(v) = &ov.composer_regex {
            p.composer_regex.clone_from(v);
        }
        if let Some(v) = ov.approval {
            p.approval = v;
        }
        if let Some(v) = &ov.env {
            p.env.clone_from(v);
        }
        if let Some(v) = ov.hooks {
            p.hooks = v;
        }
        if let Some(v) = ov.leg {
            p.leg = v;
        }
    }
    Some(p)
}

impl HarnessProfile {
    /// How to read this harness's screen.
    pub fn rules(&self) -> Rules<'_> {
        Rules {
            busy: self.busy_regex.as_ref(),
            busy_whole_turn: self.busy_whole_turn,
            composer: self.composer_regex.as_ref(),
            composer_below: self.composer_below_regex.as_ref(),
            dialogs: &self.dialogs,
        }
    }

    /// Liveness (docs/spec/harness.md#liveness) from what tmux says about the pane.
    pub fn is_alive(&self, pane_dead: bool, foreground: &str) -> bool {
        if pane_dead {
            return false;
        }
        if self.name == "shell" {
            return true;
        }
        match &self.agent_commands {
            Some(cmds) => cmds.iter().any(|c| c == foreground),
            None => !is_shell(foreground),
        }
    }
}

/// Liveness for a pane whose meta names no harness: alive while the pane
/// exists and is not dead (docs/spec/meta.md).
pub fn is_alive(profile: Option<&HarnessProfile>, pane_dead: bool, foreground: &str) -> bool {
    match profile {
        Some(p) => p.is_alive(pane_dead, foreground),
        None => !pane_dead,
    }
}

/// Whether `program` can be started: a path (containing `/`) must name an
/// executable file; a bare name must be one in a directory of `path_var`
/// (the `PATH` value).
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: agent programs on PATH"
)]
pub fn program_exists(program: &str, path_var: Option<&std::ffi::OsStr>) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.is_empty() {
        return false;
    }
    if program.contains('/') {
        return executable(std::path::Path::new(program));
    }
    path_var.is_some_and(|pv| {
        std::env::split_paths(pv)
            .filter(|d| !d.as_os_str().is_empty())
            .any(|d| executable(&d.join(program)))
    })
}

pub fn is_shell(cmd: &str) -> bool {
    let base = cmd
        .rsplit('/')
        .next()
        .unwrap_or(cmd)
        .trim_start_matches('-');
    SHELLS.contains(&base)
}

#[cfg(test)]
mod tests {
    use super::overrides::HarnessOverride;
    use super::*;

    #[test]
    fn program_lookup() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let prog = d.path().join("agent");
        std::fs::write(&prog, "#!/bin/sh\n").unwrap();
        let path = std::ffi::OsString::from(d.path());
        assert!(!program_exists("agent", Some(&path)), "not executable yet");
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(program_exists("agent", Some(&path)));
        assert!(program_exists(prog.to_str().unwrap(), None));
        assert!(!program_exists("agent", None));
        assert!(!program_exists("no-such-agent", Some(&path)));
        assert!(
            !program_exists(d.path().to_str().unwrap(), None),
            "a directory"
        );
        assert!(!program_exists("", Some(&path)));
    }

    #[test]
    fn liveness_rules() {
        let claude = builtin("claude").unwrap();
        assert!(claude.is_alive(false, "claude"));
        assert!(claude.is_alive(false, "node"));
        assert!(claude.is_alive(false, "2.1.34"));
        assert!(!claude.is_alive(false, "bash"));
        assert!(!claude.is_alive(false, "-zsh"));
        assert!(!claude.is_alive(true, "claude"));
        let codex = builtin("codex").unwrap();
        assert!(codex.is_alive(false, "codex"));
        assert!(!codex.is_alive(false, "python3"));
        let shell = builtin("shell").unwrap();
        assert!(shell.is_alive(false, "bash"));
        assert!(!shell.is_alive(true, "bash"));
        let mut custom = shell.clone();
        custom.name = "x".into();
        assert!(custom.is_alive(false, "python3"));
        assert!(!custom.is_alive(false, "-zsh"));
        assert!(is_alive(None, false, "bash"));
        assert!(!is_alive(None, true, "bash"));
    }

    #[test]
    fn config_overrides_builtins_and_adds_profiles() {
        let mut cfg = Overrides::new();
        let ov = HarnessOverride {
            exit: Some("/bye".into()),
            ..Default::default()
        };
        cfg.insert("claude".into(), ov);
        cfg.insert(
            "mine".into(),
            HarnessOverride {
                launch: Some(vec!["x".into()]),
                ..Default::default()
            },
        );
        assert_eq!(profile(&cfg, "claude").unwrap().exit, "/bye");
        assert_eq!(profile(&cfg, "mine").unwrap().launch, vec!["x".to_string()]);
        assert!(profile(&cfg, "nope").is_none());
        // `resume` of one's own; `[]` is none.
        let mut cfg = Overrides::new();
        let ov = |r: &[&str]| HarnessOverride {
            launch: Some(vec!["wrap".into()]),
            resume: Some(strs(r)),
            ..Default::default()
        };
        cfg.insert("claude".into(), ov(&["wrap", "--resume", "{session}"]));
        cfg.insert("codex".into(), ov(&[]));
        assert_eq!(
            profile(&cfg, "claude").unwrap().resume,
            Some(strs(&["wrap", "--resume", "{session}"]))
        );
        assert_eq!(profile(&cfg, "codex").unwrap().resume, None);
    }
}

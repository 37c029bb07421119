//! Harness profiles (SPEC §10.2): how to launch, interrupt and quit each
//! agent program, how to tell from tmux whether it is still alive, and how
//! to read "busy" and the composer line from its screen.
//!
//! Built-ins exist for claude, codex, opencode, pi, shell and stand-in; a
//! `[harness.<name>]` table in the config overrides any of their keys or
//! defines a new profile.
//!
//! This module owns the `[harness.<name>]` table type ([`HarnessOverride`]):
//! the config loader parses into it, and [`profile`] merges it over a
//! built-in. Regexes are compiled while the config loads, so a bad one is a
//! config error naming its line, and callers get a compiled [`Regex`].

use std::collections::BTreeMap;

use regex::Regex;
use serde::{Deserialize, Deserializer};

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
    /// Modal screens (SPEC §5.3), tried in order: never typed into.
    pub dialogs: Vec<crate::tmux::screen::Dialog>,
    /// How the agent treats its own permission prompts.
    pub approval: Approval,
    /// `NAME=value` entries added to the agent's environment.
    pub env: Vec<String>,
    /// Spawn installs the harness's own busy/idle hooks (claude, codex).
    pub hooks: bool,
}

/// The approval posture of a spawned agent (`approval` in
/// `[harness.<name>]`): whether it asks before running tools. A worker
/// runs in its own disposable worktree, so the default lets it work
/// without asking; `prompt` makes every permission prompt a dialog the
/// captain answers; `as-launched` adds no flag (the launch argv decides).
/// Only the claude and codex profiles know flags for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
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

/// The `[harness.<name>]` tables of a config, by name.
pub type Overrides = BTreeMap<String, HarnessOverride>;

/// A `[harness.<name>]` table: every key optional. A regex key written as
/// `""` switches the built-in regex off (`Some(None)`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, expecting = "a table")]
pub struct HarnessOverride {
    pub launch: Option<Vec<String>>,
    pub interrupt: Option<Vec<String>>,
    pub exit: Option<String>,
    #[serde(deserialize_with = "pattern")]
    pub busy_regex: Option<Option<Regex>>,
    /// Whether the busy line shows for the whole of every turn, so a screen
    /// that reads idle overrules a busy record (a turn stopped from the
    /// keyboard runs no hook). Built-in: claude only; a `busy_regex` of
    /// one's own resets it to false unless this says otherwise.
    pub busy_whole_turn: Option<bool>,
    pub agent_commands: Option<Vec<String>>,
    #[serde(deserialize_with = "pattern")]
    pub composer_regex: Option<Option<Regex>>,
    pub approval: Option<Approval>,
    /// Replaces the built-in's (empty) list.
    pub env: Option<Vec<String>>,
    pub hooks: Option<bool>,
}

impl PartialEq for HarnessOverride {
    fn eq(&self, other: &Self) -> bool {
        fn src(r: Option<&Option<Regex>>) -> Option<Option<&str>> {
            r.map(|r| r.as_ref().map(Regex::as_str))
        }
        self.launch == other.launch
            && self.interrupt == other.interrupt
            && self.exit == other.exit
            && src(self.busy_regex.as_ref()) == src(other.busy_regex.as_ref())
            && self.busy_whole_turn == other.busy_whole_turn
            && self.agent_commands == other.agent_commands
            && src(self.composer_regex.as_ref()) == src(other.composer_regex.as_ref())
            && self.approval == other.approval
            && self.env == other.env
            && self.hooks == other.hooks
    }
}

/// A regex key: `""` is "off", anything else must compile. A regex that
/// does not compile would silently turn busy or composer detection off, so
/// it is refused.
fn pattern<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<Regex>>, D::Error> {
    let src = String::deserialize(d)?;
    if src.is_empty() {
        return Ok(Some(None));
    }
    Regex::new(&src).map(|re| Some(Some(re))).map_err(|e| {
        // The regex crate's message ends with the one-line reason.
        let why = e.to_string();
        let why = why.lines().last().unwrap_or("").trim();
        serde::de::Error::custom(format!(
            "not a valid regular expression: {}",
            why.trim_start_matches("error: ")
        ))
    })
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(std::string::ToString::to_string).collect()
}

fn builtin_regex(src: &str) -> Regex {
    Regex::new(src).expect("built-in harness regexes compile")
}

/// Names of the built-in profiles.
pub const BUILTINS: &[&str] = &["claude", "codex", "opencode", "pi", "shell", "stand-in"];

const KICKOFF: &str = "Read the brief at {brief} and follow it.";

/// A built-in profile by name.
pub fn builtin(name: &str) -> Option<HarnessProfile> {
    // One cell per built-in: a process compiles the regexes of only the
    // profiles it uses.
    static BUILT: [std::sync::OnceLock<Option<HarnessProfile>>; BUILTINS.len()] =
        [const { std::sync::OnceLock::new() }; BUILTINS.len()];
    let i = BUILTINS.iter().position(|n| *n == name)?;
    BUILT[i].get_or_init(|| make_builtin(name)).clone()
}

/// Builds (and compiles the regexes of) a built-in profile; once per
/// process and profile.
fn make_builtin(name: &str) -> Option<HarnessProfile> {
    let p = |launch: Vec<String>,
             interrupt: &[&str],
             exit: &str,
             busy: Option<&str>,
             cmds: Option<&[&str]>,
             composer: Option<&str>| {
        HarnessProfile {
            name: name.to_string(),
            launch,
            interrupt: strs(interrupt),
            exit: exit.to_string(),
            busy_regex: busy.map(builtin_regex),
            busy_whole_turn: name == "claude",
            agent_commands: cmds.map(strs),
            composer_regex: composer.map(builtin_regex),
            composer_below_regex: None,
            dialogs: Vec::new(),
            approval: Approval::default(),
            env: Vec::new(),
            hooks: true,
        }
    };
    let mut prof = match name {
        "claude" => p(
            strs(&["claude", KICKOFF]),
            &["Escape"],
            "/exit",
            Some(r"esc to interrupt"),
            // No list: the native installer runs Claude Code from a file
            // named after its version (`2.1.34`), which tmux shows as the
            // pane's command; any foreground command but a shell is alive.
            None,
            Some(r"^\x{276f}\x{a0}(.*)$"),
        ),
        "codex" => p(
            strs(&["codex", KICKOFF]),
            &["Escape"],
            "/quit",
            Some(r"esc to interrupt|Working \("),
            Some(&["codex", "node"]),
            Some(r"^\x{203a}(?: (\d*(?:[^\d.].*|\.\S.*|\.)?))?$"),
        ),
        "opencode" => p(
            strs(&["opencode", "--prompt", KICKOFF]),
            &["Escape"],
            "/exit",
            Some(r"esc interrupt|working\.\.\."),
            Some(&["opencode", "node", "bun"]),
            None,
        ),
        "pi" => p(
            strs(&["pi", KICKOFF]),
            &["Escape"],
            "/quit",
            Some(r"Working\.\.\."),
            Some(&["pi", "node"]),
            None,
        ),
        "shell" => p(strs(&["bash"]), &["C-c"], "exit", None, None, None),
        "stand-in" => p(
            strs(&["fm-stand-in", "--home", "{home}", "{id}"]),
            &["C-c"],
            "/exit",
            Some(r"^stand-in: busy"),
            Some(&["fm-stand-in"]),
            Some(r"^stand-in> ?(.*)$"),
        ),
        _ => return None,
    };
    if name == "stand-in" {
        // The stand-in's own dialogs (`dialog <name>` in a message).
        prof.dialogs = ["permission", "trust"]
            .map(|n| crate::tmux::screen::Dialog {
                name: n.to_string(),
                regex: builtin_regex(&format!(r"^stand-in dialog: {n}\?")),
            })
            .to_vec();
    }
    if let Some((below, dialogs)) = screen_layout(name) {
        prof.composer_below_regex = Some(builtin_regex(below));
        prof.dialogs = dialogs
            .iter()
            .map(|(n, r)| crate::tmux::screen::Dialog {
                name: n.to_string(),
                regex: builtin_regex(r),
            })
            .collect();
    }
    Some(prof)
}

/// The line under the composer and the dialogs of the real agents, as
/// captured from Claude Code 2.1.332 and Codex CLI 0.169.0
/// (docs/harnesses.md; checked over `tests/fixtures/screens/`).
fn screen_layout(name: &str) -> Option<(&'static str, &'static [(&'static str, &'static str)])> {
    match name {
        "claude" => Some((
            r"^\x{2500}{3}",
            &[
                ("trust", r"Is this a project you created or one you trust\?"),
                ("permission", r"^ Do you want to \S.*\?\s*$"),
                (
                    "rewind",
                    r"^  Restore the code and/or conversation to the point before",
                ),
                (
                    "transcript",
                    r"Showing detailed transcript \x{b7} ctrl\+o to toggle",
                ),
                (
                    "history-search",
                    r"ctrl\+s to change scope \x{b7} Enter to use",
                ),
                // Offers to change a default, drawn after a turn in place
                // of the composer; Enter takes the preselected answer.
                (
                    "mode-offer",
                    r"^\s*(Make auto mode your default permission mode|Switch to bypass permissions|Auto mode can learn your environment: set it up|Switch your default effort to \S+)\?",
                ),
                ("menu", r"Enter to (confirm|continue|select) \x{b7} Esc to"),
            ],
        )),
        "codex" => Some((
            r"^  \S.* \x{b7} [~/]",
            &[
                ("trust", r"^  Trust this folder\?"),
                ("approval", r"^  Would you like to "),
                ("hooks-review", r"^  \d+ hooks? (is|are) new or changed\."),
                ("ctrl-c-menu", r"^  Task is still running"),
                ("backtrack", r"Browsing transcript \x{b7} .*esc back"),
                ("command-center", r"^  Agent command center"),
                ("warnings", r"^  Warnings \x{b7} \d+ of \d+"),
                ("shortcuts", r"^  Keyboard shortcuts"),
                ("menu", r"^\x{203a} \d+\. "),
            ],
        )),
        _ => None,
    }
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
        },
        _ => return None,
    };
    if let Some(ov) = ov {
        if let Some(v) = &ov.launch {
            p.launch.clone_from(v);
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
    }
    Some(p)
}

impl HarnessProfile {
    /// The launch flags that set the approval posture: known for claude
    /// and codex only (docs/harnesses.md).
    pub fn approval_args(&self) -> Vec<String> {
        let args: &[&str] = match (self.name.as_str(), self.approval) {
            ("claude", Approval::Bypass) => &["--dangerously-skip-permissions"],
            ("claude", Approval::Prompt) => &["--permission-mode", "manual"],
            ("codex", Approval::Bypass) => &["--dangerously-bypass-approvals-and-sandbox"],
            // Codex 0.169 refuses `untrusted`: a read-only sandbox makes
            // every write (a file edit, a command that writes, the network)
            // something it must ask for.
            ("codex", Approval::Prompt) => {
                &["--sandbox", "read-only", "--ask-for-approval", "on-request"]
            }
            _ => &[],
        };
        strs(args)
    }

    /// Where this profile's launch flags (the posture's, then the hooks')
    /// go in `argv` (the launch, placeholders filled but `{flags}`), and
    /// which of them the launch already sets itself. The rule:
    ///
    /// - an argument `{flags}` is replaced by them, wherever it stands;
    /// - else they go right after the program when its file name is the
    ///   harness's own program (`claude`, `/opt/bin/codex`);
    /// - else (a wrapper: `npx claude`, `env X=1 codex`, a script) none
    ///   go: firstmate cannot tell where they would belong.
    ///
    /// A launch that already carries a posture option (`--permission-mode`,
    /// `-a`, `--sandbox`, …) gets no posture flags; one that carries a hook
    /// option (`--settings`, `-c notify=…`) gets no hook flags: the launch
    /// wins, never a second, conflicting copy. `fm doctor` says so.
    pub fn flag_plan(&self, argv: &[String]) -> FlagPlan {
        let place = if let Some(i) = argv.iter().position(|a| a == FLAGS_PLACEHOLDER) {
            Place::Placeholder(i)
        } else {
            let program = argv.first().map_or("", String::as_str);
            let base = program.rsplit('/').next().unwrap_or(program);
            match own_program(&self.name) {
                Some(own) if base == own => Place::AfterProgram,
                Some(_) if !argv.is_empty() => Place::Wrapper(base.to_string()),
                _ => Place::AfterProgram,
            }
        };
        let (posture, hooks) = launch_options(&self.name);
        FlagPlan {
            place,
            posture_in_launch: find_option(argv, posture),
            hooks_in_launch: find_option(argv, hooks),
        }
    }

    /// What `fm doctor` says about where the launch flags go; `None` when
    /// every flag goes where the rule puts it.
    pub fn flag_plan_note(&self) -> Option<String> {
        let plan = self.flag_plan(&self.launch);
        let own = own_program(&self.name)?;
        let mut notes = Vec::new();
        let posture = !self.approval_args().is_empty();
        if let Place::Wrapper(w) = &plan.place {
            return Some(format!(
                "launch runs `{w}`, not `{own}`: no approval or hook flags added (put \"{FLAGS_PLACEHOLDER}\" in launch where they go)"
            ));
        }
        if posture && let Some(o) = &plan.posture_in_launch {
            notes.push(format!(
                "launch sets `{o}` itself: approval {} not added",
                self.approval.as_str()
            ));
        }
        if self.hooks
            && let Some(o) = &plan.hooks_in_launch
        {
            notes.push(format!(
                "launch sets `{o}` itself: busy/idle hooks not added"
            ));
        }
        (!notes.is_empty()).then(|| notes.join("; "))
    }

    /// Environment the approval posture needs: Claude Code refuses to skip
    /// its permission checks as root unless told it runs in a sandbox.
    pub fn approval_env(&self, root: bool) -> Vec<String> {
        if root && self.name == "claude" && self.approval == Approval::Bypass {
            return strs(&["IS_SANDBOX=1"]);
        }
        Vec::new()
    }

    /// What `fm doctor` says about the posture.
    pub fn approval_summary(&self) -> String {
        let args = self.approval_args();
        match (self.approval, args.is_empty()) {
            (Approval::AsLaunched, _) => "approval as-launched (no flag added)".into(),
            (_, true) => "approval as launched (no flags known for this profile)".into(),
            (a, false) => format!("approval {} ({})", a.as_str(), args.join(" ")),
        }
    }

    /// How to read this harness's screen.
    pub fn rules(&self) -> crate::tmux::screen::Rules<'_> {
        crate::tmux::screen::Rules {
            busy: self.busy_regex.as_ref(),
            busy_whole_turn: self.busy_whole_turn,
            composer: self.composer_regex.as_ref(),
            composer_below: self.composer_below_regex.as_ref(),
            dialogs: &self.dialogs,
        }
    }

    /// Liveness (SPEC §10.2) from what tmux says about the pane.
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

/// The launch argument replaced by the posture's and the hooks' flags.
pub const FLAGS_PLACEHOLDER: &str = "{flags}";

/// Where the launch flags go (see [`HarnessProfile::flag_plan`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// In place of the `{flags}` argument at this index.
    Placeholder(usize),
    /// Right after the program (`argv[1..1]`).
    AfterProgram,
    /// Nowhere: the launch runs this wrapper, not the harness's program.
    Wrapper(String),
}

/// [`HarnessProfile::flag_plan`]'s answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagPlan {
    pub place: Place,
    /// A posture option the launch carries itself.
    pub posture_in_launch: Option<String>,
    /// A hook option the launch carries itself.
    pub hooks_in_launch: Option<String>,
}

/// The program a built-in agent profile launches, by file name.
fn own_program(name: &str) -> Option<&'static str> {
    match name {
        "claude" => Some("claude"),
        "codex" => Some("codex"),
        _ => None,
    }
}

/// Options of the agent program that set what the posture sets, and what
/// the hooks set: plain options, and `-c key…` overrides by key prefix.
fn launch_options(name: &str) -> (LaunchOptions, LaunchOptions) {
    match name {
        "claude" => (
            LaunchOptions {
                flags: &["--dangerously-skip-permissions", "--permission-mode"],
                config_keys: &[],
            },
            LaunchOptions {
                flags: &["--settings"],
                config_keys: &[],
            },
        ),
        "codex" => (
            LaunchOptions {
                flags: &[
                    "--dangerously-bypass-approvals-and-sandbox",
                    "--ask-for-approval",
                    "-a",
                    "--sandbox",
                    "-s",
                    "--approve-for-me",
                ],
                config_keys: &["approval_policy", "sandbox_mode"],
            },
            LaunchOptions {
                flags: &["--dangerously-bypass-hook-trust"],
                config_keys: &["notify", "hooks"],
            },
        ),
        _ => (LaunchOptions::default(), LaunchOptions::default()),
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct LaunchOptions {
    flags: &'static [&'static str],
    config_keys: &'static [&'static str],
}

/// The first argument of `argv` (after the program) that is one of `opts`:
/// `--opt`, `--opt=value`, or a `-c`/`--config` override of one of its keys.
fn find_option(argv: &[String], opts: LaunchOptions) -> Option<String> {
    let key_of = |v: &str| {
        let key = v.split('=').next().unwrap_or("").trim();
        opts.config_keys
            .iter()
            .any(|k| key == *k || key.starts_with(&format!("{k}.")))
    };
    let args = argv.get(1..).unwrap_or(&[]);
    for (i, a) in args.iter().enumerate() {
        if let Some(f) = opts
            .flags
            .iter()
            .find(|f| a == *f || a.starts_with(&format!("{f}=")))
        {
            return Some((*f).to_string());
        }
        let value = match a.as_str() {
            "-c" | "--config" => args.get(i + 1).map(String::as_str),
            _ => a.strip_prefix("--config="),
        };
        if value.is_some_and(key_of) {
            let v = value.unwrap_or_default();
            return Some(format!("-c {}", v.split('=').next().unwrap_or(v)));
        }
    }
    None
}

/// Liveness for a pane whose meta names no harness: alive while the pane
/// exists and is not dead (SPEC §4).
pub fn is_alive(profile: Option<&HarnessProfile>, pane_dead: bool, foreground: &str) -> bool {
    match profile {
        Some(p) => p.is_alive(pane_dead, foreground),
        None => !pane_dead,
    }
}

/// Whether `program` can be started: a path (containing `/`) must name an
/// executable file; a bare name must be one in a directory of `path_var`
/// (the `PATH` value).
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
    fn every_builtin_exists_and_has_a_launch() {
        for name in BUILTINS {
            let p = builtin(name).unwrap();
            assert!(!p.launch.is_empty(), "{name}");
            assert_eq!(p.name, *name);
        }
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
    fn launch_flags_have_one_place_and_yield_to_the_launch() {
        let argv = |v: &[&str]| strs(v);
        let claude = builtin("claude").unwrap();
        let codex = builtin("codex").unwrap();
        let plan = |p: &HarnessProfile, v: &[&str]| p.flag_plan(&argv(v));
        assert_eq!(plan(&claude, &["claude", "go"]).place, Place::AfterProgram);
        assert_eq!(
            plan(&claude, &["/opt/x/claude", "go"]).place,
            Place::AfterProgram
        );
        assert_eq!(
            plan(&claude, &["npx", "claude"]).place,
            Place::Wrapper("npx".into())
        );
        assert_eq!(
            plan(&claude, &["env", "X=1", "claude", "{flags}"]).place,
            Place::Placeholder(3)
        );
        let p = plan(&codex, &["codex", "-c", "approval_policy=\"never\"", "go"]);
        assert_eq!(p.posture_in_launch.as_deref(), Some("-c approval_policy"));
        assert_eq!(p.hooks_in_launch, None);
        let p = plan(&codex, &["codex", "--config=notify=[]", "-s", "read-only"]);
        assert_eq!(p.posture_in_launch.as_deref(), Some("-s"));
        assert_eq!(p.hooks_in_launch.as_deref(), Some("-c notify"));
        let p = plan(&codex, &["codex", "-c", "hooks.Stop=[]"]);
        assert_eq!(p.hooks_in_launch.as_deref(), Some("-c hooks.Stop"));
        // A key that only starts like one is not it; the program is not an option.
        let p = plan(&codex, &["codex", "-c", "notifyx=1", "--sandboxed"]);
        assert_eq!((p.posture_in_launch, p.hooks_in_launch), (None, None));
        let p = plan(&claude, &["--settings", "--permission-mode=plan"]);
        assert_eq!(p.posture_in_launch.as_deref(), Some("--permission-mode"));
        assert_eq!(p.hooks_in_launch, None);
        // Profiles without known flags: nothing to place, no note.
        let shell = builtin("shell").unwrap();
        assert_eq!(plan(&shell, &["bash"]).place, Place::AfterProgram);
        assert_eq!(shell.flag_plan_note(), None);
        assert_eq!(claude.flag_plan_note(), None);
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
    }
}

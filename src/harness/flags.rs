//! The launch flags a profile adds (the approval posture's and the
//! busy/idle hooks'), where in the launch argv they go, and which of them
//! the launch already sets itself.

use super::{Approval, HarnessProfile, strs};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::builtin;

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
}

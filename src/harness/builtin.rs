//! The built-in profiles: one table of what each agent program is
//! launched with, shows while busy, draws under its composer and shows as
//! a dialog, compiled once per process and profile.

use regex::Regex;

use super::{Approval, Dialog, HarnessProfile, strs};

fn builtin_regex(src: &str) -> Regex {
    Regex::new(src).expect("built-in harness regexes compile")
}

/// Names of the built-in profiles.
pub const BUILTINS: &[&str] = &["claude", "codex", "opencode", "pi", "shell", "stand-in"];

/// The placeholder of a resume argv for the session's id.
pub const SESSION: &str = "{session}";

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
            resume: None,
            leg: crate::leg::Leg::builtin(name),
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
    // Both agents resume a conversation by its id (docs/harnesses.md,
    // "Sessions"): the flags go right after the program, as at launch.
    prof.resume = match name {
        "claude" => Some(strs(&["claude", "--resume", SESSION])),
        "codex" => Some(strs(&["codex", "resume", SESSION])),
        _ => None,
    };
    if name == "stand-in" {
        // The stand-in's own dialogs (`dialog <name>` in a message).
        prof.dialogs = ["permission", "trust"]
            .map(|n| Dialog {
                name: n.to_string(),
                regex: builtin_regex(&format!(r"^stand-in dialog: {n}\?")),
            })
            .to_vec();
    }
    if let Some((below, dialogs)) = screen_layout(name) {
        prof.composer_below_regex = Some(builtin_regex(below));
        prof.dialogs = dialogs
            .iter()
            .map(|(n, r)| Dialog {
                name: n.to_string(),
                regex: builtin_regex(r),
            })
            .collect();
    }
    Some(prof)
}

/// A built-in `resume` kept when the config replaces `launch`: only
/// when the new launch still runs the harness's own program (a path to
/// it included), which then replaces the built-in resume's program; a
/// wrapper (`npx claude`) loses it, since where its arguments go is not
/// known. An empty list (`resume = []`) is none.
pub(super) fn resume_for_launch(
    name: &str,
    resume: Option<Vec<String>>,
    launch: &[String],
) -> Option<Vec<String>> {
    let mut resume = resume.filter(|r| !r.is_empty())?;
    let program = launch.first()?;
    let base = program.rsplit('/').next().unwrap_or(program);
    let own = resume.first()?.clone();
    if base != own || !BUILTINS.contains(&name) {
        return None;
    }
    resume[0].clone_from(program);
    Some(resume)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_exists_and_has_a_launch() {
        for name in BUILTINS {
            let p = builtin(name).unwrap();
            assert!(!p.launch.is_empty(), "{name}");
            assert_eq!(p.name, *name);
        }
    }

    #[test]
    fn claude_and_codex_resume_and_a_replaced_launch_keeps_it_only_for_the_own_program() {
        let resume = |n: &str| builtin(n).unwrap().resume;
        assert_eq!(
            resume("claude"),
            Some(strs(&["claude", "--resume", SESSION]))
        );
        assert_eq!(resume("codex"), Some(strs(&["codex", "resume", SESSION])));
        assert_eq!(resume("stand-in"), None);
        let keep = |n: &str, launch: &[&str]| resume_for_launch(n, resume(n), &strs(launch));
        assert_eq!(
            keep("codex", &["/opt/bin/codex", "--no-daemon", "go"]),
            Some(strs(&["/opt/bin/codex", "resume", SESSION]))
        );
        assert_eq!(keep("claude", &["npx", "claude", "go"]), None);
        assert_eq!(keep("claude", &[]), None);
        assert_eq!(
            resume_for_launch("claude", Some(Vec::new()), &strs(&["claude"])),
            None
        );
    }
}

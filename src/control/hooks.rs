//! The agent's own hooks (docs/spec/harness.md#hooks): spawn makes the harness report its
//! turns, so the busy record comes from the agent itself — a prompt taken
//! writes `busy`, a finished turn writes `idle` — and the watcher, woken by
//! that record, rings a doorbell held back during the turn at once.
//!
//! Each hook runs `fm-status <id> --busy|--idle --source hook` by absolute
//! path with `--home`, every word shell-quoted, so it works in whatever
//! environment the agent gives its hooks (`env -i` included). Claude Code
//! gets a settings file (`--settings state/<id>.hooks.json`) with
//! `UserPromptSubmit`, `Stop` and `StopFailure` (a turn ended by an API
//! error) hooks; Codex gets `UserPromptSubmit`, `Stop` and `Interrupt`
//! lifecycle hooks through `-c` overrides, with
//! `--dangerously-bypass-hook-trust` so that hooks it has never seen run
//! without its hook-review dialog (docs/harnesses.md). Codex's `notify`
//! is not used: it also fires when the title of a new prompt is made, a
//! side request that ends while the turn itself goes on.

use super::*;

/// The shell command one hook runs: the busy record, nothing on stdout
/// (Claude Code adds a prompt hook's stdout to the model's context), and
/// any failure exit 1 (a non-blocking hook error; 2 would block the turn).
pub(super) fn record_command(home: &Home, id: &TaskId, busy: bool) -> String {
    let fm_status = stand_in::sibling_bin("fm-status");
    let flag = if busy { "--busy" } else { "--idle" };
    format!(
        "{} --home {} {} {flag} --source hook >/dev/null || exit 1",
        crate::shq::quote_path(&fm_status),
        crate::shq::quote_path(home.root()),
        crate::shq::quote(id.as_str()),
    )
}

/// Claude Code's settings: the hooks, in its `hooks` shape.
pub(super) fn claude_settings(home: &Home, id: &TaskId) -> serde_json::Value {
    // A prompt taken and a turn finished also record the conversation's
    // id (`fm restore` resumes it: [`super::session`]).
    let session = super::session::hook_command(home, id);
    let hook = |busy| {
        serde_json::json!([{"hooks": [
            {"type": "command", "command": record_command(home, id, busy)},
            {"type": "command", "command": session},
        ]}])
    };
    serde_json::json!({"hooks": {
        "UserPromptSubmit": hook(true),
        "Stop": hook(false),
        "StopFailure": hook(false),
    }})
}

/// [`claude_settings`] with the delivery leg's waiter (docs/spec/ring.md#legs)
/// when `leg` is the hook leg: an `asyncRewake` waiter at the session's
/// start and at every turn's end.
pub(super) fn claude_settings_with_leg(home: &Home, id: &TaskId, leg: bool) -> serde_json::Value {
    let mut settings = claude_settings(home, id);
    if leg {
        let waiter = crate::leg::claude::hook_entry(home, id);
        let hooks = &mut settings["hooks"];
        hooks["SessionStart"] = serde_json::json!([{"hooks": [waiter.clone()]}]);
        if let Some(list) = hooks["Stop"][0]["hooks"].as_array_mut() {
            list.push(waiter);
        }
    }
    settings
}

/// A TOML string literal (for a `-c key=value` override).
fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Codex's overrides: lifecycle hooks for both records — a prompt taken
/// (also a steer message), a turn finished, a turn interrupted.
pub(super) fn codex_args(home: &Home, id: &TaskId) -> Vec<String> {
    let session = toml_str(&super::session::hook_command(home, id));
    let hook = |event: &str, busy| {
        // The session's id is learned at every prompt and turn's end
        // (not at an interrupt: no new conversation starts there).
        let learn = if event == "Interrupt" {
            String::new()
        } else {
            format!(",{{type=\"command\",command={session}}}")
        };
        format!(
            "hooks.{event}=[{{hooks=[{{type=\"command\",command={}}}{learn}]}}]",
            toml_str(&record_command(home, id, busy))
        )
    };
    vec![
        "--dangerously-bypass-hook-trust".into(),
        "-c".into(),
        hook("UserPromptSubmit", true),
        "-c".into(),
        hook("Stop", false),
        "-c".into(),
        hook("Interrupt", false),
    ]
}

impl Ctl<'_> {
    /// The launch flags that install this profile's hooks (writing the
    /// settings file they name); none for a profile without known hooks
    /// or with `hooks = false`.
    pub(super) fn hook_args(&self, profile: &HarnessProfile) -> Result<Vec<String>> {
        if !profile.hooks {
            return Ok(Vec::new());
        }
        match profile.name.as_str() {
            "claude" => {
                let path = self.home.agent_hooks(self.id);
                fsx::ensure_dir(&self.home.state_dir())?;
                let leg = profile.leg == crate::leg::Leg::Hook && self.cfg.send.legs;
                let json = claude_settings_with_leg(self.home, self.id, leg);
                fsx::atomic_write(&path, format!("{json:#}\n").as_bytes())?;
                Ok(vec!["--settings".into(), path.display().to_string()])
            }
            "codex" => Ok(codex_args(self.home, self.id)),
            _ => Ok(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home() -> (tempfile::TempDir, Home, TaskId) {
        let d = tempfile::tempdir().unwrap();
        let odd = d.path().join("it's a home");
        std::fs::create_dir(&odd).unwrap();
        let home = Home::at(&odd).unwrap();
        (d, home, TaskId::parse("t1").unwrap())
    }

    /// The command is one the shell runs as written: fm-status by
    /// absolute path (the binaries beside this test), the home quoted.
    #[test]
    fn the_record_command_is_quoted_for_the_shell() {
        let (_d, home, id) = home();
        let cmd = record_command(&home, &id, true);
        assert!(cmd.contains(r"--home '"), "{cmd}");
        assert!(cmd.contains(r"it'\''s a home"), "{cmd}");
        assert!(
            cmd.ends_with(" 't1' --busy --source hook >/dev/null || exit 1"),
            "{cmd}"
        );
        let words = std::process::Command::new("sh")
            .args([
                "-c",
                &format!(
                    "set -- {}; printf '%s\\n' \"$@\"",
                    cmd.split(" >").next().unwrap()
                ),
            ])
            .output()
            .unwrap();
        let words = String::from_utf8(words.stdout).unwrap();
        let words: Vec<&str> = words.lines().collect();
        assert_eq!(
            words[1..],
            [
                "--home",
                &home.root().display().to_string(),
                "t1",
                "--busy",
                "--source",
                "hook"
            ]
        );
        assert!(words[0].ends_with("fm-status"), "{words:?}");
    }

    #[test]
    fn claude_settings_and_codex_overrides_hold_both_records() {
        let (_d, home, id) = home();
        let s = claude_settings(&home, &id);
        let cmd = |ev: &str| {
            s["hooks"][ev][0]["hooks"][0]["command"]
                .as_str()
                .unwrap()
                .to_string()
        };
        assert_eq!(s["hooks"]["Stop"][0]["hooks"][0]["type"], "command");
        assert_eq!(cmd("UserPromptSubmit"), record_command(&home, &id, true));
        assert_eq!(cmd("Stop"), record_command(&home, &id, false));
        assert_eq!(cmd("StopFailure"), record_command(&home, &id, false));
        assert_eq!(s["hooks"].as_object().unwrap().len(), 3);
        let args = codex_args(&home, &id);
        assert_eq!(args[0], "--dangerously-bypass-hook-trust");
        // Every override parses as TOML and says what it should; no
        // `notify` (it fires for the title side request mid-turn).
        let mut events = Vec::new();
        for pair in args[1..].chunks(2) {
            assert_eq!(pair[0], "-c");
            let v: toml::Table = toml::from_str(&pair[1]).unwrap();
            assert!(v.get("notify").is_none(), "{v:?}");
            let hooks = v["hooks"].as_table().unwrap();
            let (event, list) = hooks.iter().next().unwrap();
            let c = list[0]["hooks"][0]["command"].as_str().unwrap();
            assert_eq!(c, record_command(&home, &id, event == "UserPromptSubmit"));
            events.push(event.clone());
        }
        assert_eq!(events, ["UserPromptSubmit", "Stop", "Interrupt"]);
    }

    /// The hook leg adds its waiter at the session's start and at every
    /// turn's end: async, re-waking, with a day's timeout; off, nothing.
    #[test]
    fn the_hook_leg_adds_an_async_waiter_at_start_and_stop() {
        let (_d, home, id) = home();
        assert_eq!(
            claude_settings_with_leg(&home, &id, false),
            claude_settings(&home, &id)
        );
        let s = claude_settings_with_leg(&home, &id, true);
        let waiter = crate::leg::claude::hook_entry(&home, &id);
        assert_eq!(waiter["asyncRewake"], true);
        assert_eq!(waiter["timeout"], 86_400);
        assert!(
            waiter["command"]
                .as_str()
                .unwrap()
                .contains(" leg-wait --home "),
            "{waiter}"
        );
        assert_eq!(s["hooks"]["SessionStart"][0]["hooks"][0], waiter);
        let stop = s["hooks"]["Stop"][0]["hooks"].as_array().unwrap();
        assert_eq!(stop.len(), 3);
        assert_eq!(stop[2], waiter);
        assert_eq!(stop[0]["command"], record_command(&home, &id, false));
    }
}

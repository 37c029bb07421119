//! Busy, idle and waiting from Claude Code's own session file
//! (`<config dir>/sessions/<pid>.json`), ahead of the screen: a stand-in
//! `claude` draws nothing a screen check reads, writes its session file as
//! Claude Code does, and the test changes the file's `status`.

use crate::harness::{TestHome, Tmux, bin, wait_until};

/// A stand-in `claude`: writes `$CLAUDE_CONFIG_DIR/sessions/<its pid>.json`
/// (idle), then waits, reading its input.
const FAKE_CLAUDE: &str = r#"#!/bin/bash
# tmux names a pane's command by its argv[0]: be `claude`, not `bash`.
[ -z "$FAKE_CLAUDE" ] && FAKE_CLAUDE=1 exec -a claude /bin/bash "$0" "$@"
read -r -a st < /proc/$$/stat
mkdir -p "$CLAUDE_CONFIG_DIR/sessions"
printf '{"pid":%s,"sessionId":"s1","cwd":"%s","startedAt":1,"procStart":"%s","version":"2.1.332","kind":"interactive","status":"idle","updatedAt":%s000,"statusUpdatedAt":%s000}\n' \
  "$$" "$PWD" "${st[21]}" "$(date +%s)" "$(date +%s)" > "$CLAUDE_CONFIG_DIR/sessions/$$.json"
clear
printf 'stand-in\n'
while read -r _; do :; done
"#;

#[test]
fn claude_codes_session_file_says_busy_idle_and_waiting_before_the_screen() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let bin_dir = h.path("agents-bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let claude = bin_dir.join("claude");
    std::fs::write(&claude, FAKE_CLAUDE).unwrap();
    std::fs::set_permissions(&claude, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = h.path("claude-config");
    h.write(
        "config/firstmate.toml",
        format!(
            "[harness.claude]\nhooks = false\nenv = [\"CLAUDE_CONFIG_DIR={}\"]\n",
            config.display()
        ),
    );
    let proj = crate::control::project(&h);
    h.fm("brief")
        .args([
            "x1",
            "demo",
            "--mode",
            "local-only",
            "--intent",
            "make it so",
            "--spec",
            "one commit",
        ])
        .stdout_any()
        .run();
    let path = format!(
        "{}:{}:{}",
        bin_dir.display(),
        bin("fm").parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let fm = |tool: &str| {
        crate::harness::Cmd::new(bin(tool))
            .env("FM_HOME", h.root())
            .env("FM_TMUX_SOCKET", &t.socket)
            .env("PATH", &path)
    };
    fm("fm-control")
        .args([
            "x1",
            "spawn",
            "--project",
            proj.to_str().unwrap(),
            "--harness",
            "claude",
        ])
        .stdout_any()
        .stderr_any()
        .run();
    assert_eq!(
        h.read_string("state/x1.agent-home"),
        format!("claude {}\n", config.display()),
        "spawn notes the config dir"
    );
    let sessions = config.join("sessions");
    let file = || {
        std::fs::read_dir(&sessions)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "json"))
    };
    assert!(
        wait_until(10.0, || file().is_some()),
        "the stand-in claude never started"
    );
    let file = file().unwrap();
    let written = std::fs::read_to_string(&file).unwrap();
    let crew = || {
        fm("fm-crew-state")
            .arg("x1")
            .stdout_any()
            .run()
            .stdout()
            .trim_end()
            .to_string()
    };
    let set = |status: &str| {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let mut v: serde_json::Value = serde_json::from_str(&written).unwrap();
        v["status"] = status.into();
        v["statusUpdatedAt"] = now_ms.into();
        std::fs::write(&file, v.to_string()).unwrap();
    };
    assert_eq!(
        crew(),
        "state: idle · source: agent-session · idle (agent-session), no status yet"
    );
    set("busy");
    assert_eq!(
        crew(),
        "state: working · source: agent-session · busy (agent-session)"
    );
    set("waiting");
    assert_eq!(
        crew(),
        "state: blocked · source: agent-session · waiting in a dialog: input"
    );
    let json = fm("fm-crew-state")
        .args(["x1", "--json"])
        .stdout_any()
        .run()
        .stdout();
    assert!(json.contains("\"source\":\"agent-session\""), "{json}");
    // A stale file (another process's) is no answer: the screen decides.
    let mut v: serde_json::Value = serde_json::from_str(&written).unwrap();
    v["procStart"] = "1".into();
    v["status"] = "busy".into();
    std::fs::write(&file, v.to_string()).unwrap();
    assert_eq!(
        crew(),
        "state: idle · source: pane · agent alive, no status yet"
    );
    std::fs::remove_file(&file).unwrap();
    assert_eq!(
        crew(),
        "state: idle · source: pane · agent alive, no status yet"
    );
}

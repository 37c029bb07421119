//! Busy from what the agent itself writes as its turn runs (Codex's
//! session log), with no hook and nothing on the screen saying busy: a
//! stand-in `codex` draws an idle Codex screen and writes a rollout whose
//! last turn event is `task_started`, as Codex does while its answer
//! streams.

use crate::harness::{TestHome, Tmux, bin, wait_until};

/// A stand-in `codex`: an idle-looking Codex screen (empty composer, the
/// status line under it), a rollout under `$CODEX_HOME/sessions/<today>/`
/// for the pane's directory with a turn started and not ended, then it
/// waits, reading its input.
const FAKE_CODEX: &str = r#"#!/bin/bash
# tmux names a pane's command by its argv[0]: be `codex`, not `bash`.
[ -z "$FAKE_CODEX" ] && FAKE_CODEX=1 exec -a codex /bin/bash "$0" "$@"
day="$CODEX_HOME/sessions/$(date -u +%Y/%m/%d)"
mkdir -p "$day"
log="$day/rollout-$(date -u +%Y-%m-%dT%H-%M-%S)-0001.jsonl"
cwd=$(printf '%s' "$PWD" | sed 's/\\/\\\\/g; s/"/\\"/g')
printf '{"timestamp":"x","type":"session_meta","payload":{"id":"0001","cwd":"%s"}}\n' "$cwd" > "$log.tmp"
printf '{"timestamp":"x","type":"event_msg","payload":{"type":"task_started","turn_id":"a","started_at":%s}}\n' "$(date +%s)" >> "$log.tmp"
printf '{"timestamp":"x","type":"response_item","payload":{"type":"message","role":"assistant"}}\n' >> "$log.tmp"
mv "$log.tmp" "$log"
printf '%s\n' "$log" > "$CODEX_HOME/rollout-path"
clear
# The status line, then the empty composer above it, the cursor in it (what
# is typed shows there, as in Codex's composer).
printf '\n\n\n  gpt-5.5 low \302\267 /tmp/worktree\033[2;1H\342\200\272 '
# Stays the pane's foreground process (`codex`), reading its input.
while read -r _; do :; done
"#;

#[test]
fn a_codex_turn_its_session_log_reports_reads_busy_and_holds_the_doorbell() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let bin_dir = h.path("agents-bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let codex = bin_dir.join("codex");
    std::fs::write(&codex, FAKE_CODEX).unwrap();
    std::fs::set_permissions(&codex, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let codex_home = h.path("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    // Hooks off: the session log alone says busy.
    h.write(
        "config/firstmate.toml",
        format!(
            "[harness.codex]\nhooks = false\nenv = [\"CODEX_HOME={}\"]\n",
            codex_home.display()
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
            "codex",
        ])
        .stdout_any()
        .run();
    let pointer = codex_home.join("rollout-path");
    assert!(
        wait_until(10.0, || pointer.exists()),
        "the stand-in codex never started"
    );
    let rollout = std::fs::read_to_string(&pointer)
        .unwrap()
        .trim()
        .to_string();
    let pane = h
        .read_string("state/x1.meta")
        .lines()
        .find_map(|l| l.strip_prefix("pane=").map(str::to_string))
        .unwrap();
    assert!(
        wait_until(10.0, || t.capture(&pane).contains("gpt-5.5 low")),
        "{}",
        t.capture(&pane)
    );
    let crew = || {
        fm("fm-crew-state")
            .arg("x1")
            .stdout_any()
            .run()
            .stdout()
            .trim_end()
            .to_string()
    };
    assert_eq!(crew(), "state: working · source: pane · busy (session-log)");
    // fm-send holds the doorbell: nothing is typed into the turn.
    fm("fm-send")
        .args(["x1", "while you stream"])
        .stdout("queued x1 001.msg · doorbell queued\n")
        .stderr_any()
        .run();
    assert!(!t.capture(&pane).contains("firstmate inbox"));
    // Where the session log is was noted at spawn.
    assert_eq!(
        h.read_string("state/x1.agent-home"),
        format!("codex {}\n", codex_home.display())
    );
    // The watcher holds the owed doorbell while the log says busy, and —
    // the log being outside state/, its end wakes nothing — looks again
    // soon: the turn's end is rung within seconds, not at a rescan.
    let watcher = fm("fm-watch")
        .stdout_any()
        .stderr_any()
        .status_any()
        .start();
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(
        !watcher.stdout_so_far().contains("rang"),
        "{}",
        watcher.stdout_so_far()
    );
    // The turn ends (`task_complete`): idle again.
    let mut log = std::fs::read_to_string(&rollout).unwrap();
    log.push_str(
        "{\"timestamp\":\"x\",\"type\":\"event_msg\",\"payload\":{\"type\":\"task_complete\",\"turn_id\":\"a\"}}\n",
    );
    std::fs::write(&rollout, log).unwrap();
    assert_eq!(
        crew(),
        "state: idle · source: pane · agent alive, no status yet"
    );
    assert!(
        wait_until(10.0, || t.capture(&pane).contains("firstmate inbox")),
        "the watcher never rang the held doorbell:\n{}\n--- watcher\n{}",
        t.capture(&pane),
        watcher.stdout_so_far()
    );
    watcher.signal(libc::SIGTERM);
}

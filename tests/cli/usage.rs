//! Usage per worker: the counter (`fm-watch --once`) reads the agents'
//! own transcripts — Claude Code's per-session JSONL, Codex's rollouts —
//! and `fm-crew-state --json` shows what it counted.

use std::path::{Path, PathBuf};

use crate::harness::TestHome;

const CLAUDE: &[&str] = &[
    r#"{"type":"user","message":{"role":"user","content":"go"}}"#,
    r#"{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"thinking"}],"usage":{"input_tokens":100,"cache_creation_input_tokens":50,"cache_read_input_tokens":0,"output_tokens":1}}}"#,
    r#"{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":100,"cache_creation_input_tokens":50,"cache_read_input_tokens":0,"output_tokens":20}}}"#,
    r#"{"type":"assistant","costUSD":0.25,"message":{"id":"msg_2","role":"assistant","content":[],"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":150,"output_tokens":5}}}"#,
];

fn worktree(h: &TestHome, id: &str) -> PathBuf {
    let wt = h.root().join("worktrees").join(id);
    std::fs::create_dir_all(&wt).unwrap();
    std::fs::write(wt.join(".git"), "gitdir: elsewhere\n").unwrap();
    wt
}

fn slug(p: &Path) -> String {
    p.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn rollout(cwd: &Path, totals: &[(u64, u64, u64)]) -> String {
    let mut s = format!(
        "{}\n",
        serde_json::json!({"type":"session_meta","payload":{"id":"th","cwd":cwd}})
    );
    s.push_str(r#"{"type":"event_msg","payload":{"type":"token_count","info":null}}"#);
    s.push('\n');
    for (input, cached, output) in totals {
        s.push_str(&serde_json::json!({"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":input,"cached_input_tokens":cached,"output_tokens":output,"reasoning_output_tokens":0,"total_tokens":input+output}}}}).to_string());
        s.push('\n');
    }
    s
}

#[test]
fn crew_state_json_shows_what_the_counter_read_from_each_agents_transcript() {
    let h = TestHome::new();
    let root = h.root();
    h.write(
        "config/firstmate.toml",
        format!(
            "[harness.claude]\nenv = [\"CLAUDE_CONFIG_DIR={0}/claude\"]\n[harness.codex]\nenv = [\"CODEX_HOME={0}/codex\"]\n",
            root.display()
        ),
    );
    let (wt1, wt2, wt3) = (worktree(&h, "c1"), worktree(&h, "x1"), worktree(&h, "s1"));
    for (id, harness, wt) in [
        ("c1", "claude", &wt1),
        ("x1", "codex", &wt2),
        ("s1", "stand-in", &wt3),
    ] {
        h.write(
            &format!("state/{id}.meta"),
            format!(
                "kind=ship\nmode=local-only\nharness={harness}\nworktree={}\n",
                wt.display()
            ),
        );
    }
    let claude_dir = root.join("claude/projects").join(slug(&wt1));
    std::fs::create_dir_all(&claude_dir).unwrap();
    let session = claude_dir.join("s-1.jsonl");
    std::fs::write(&session, CLAUDE.join("\n") + "\n").unwrap();
    let now = firstmate::clock::now();
    let day = &firstmate::clock::rfc3339(now)[..10];
    let day_dir = root.join("codex/sessions").join(day.replace('-', "/"));
    std::fs::create_dir_all(&day_dir).unwrap();
    std::fs::write(
        day_dir.join("rollout-a-th.jsonl"),
        rollout(&wt2, &[(1000, 200, 30), (2500, 900, 70)]),
    )
    .unwrap();
    // Nothing counted yet: no usage, and crew state writes nothing.
    let rows = h.fm("crew-state").arg("--json").stdout_json().run().json();
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .all(|r| r.get("usage").is_none()),
        "{rows}"
    );
    assert!(!h.exists("state/c1.usage"));
    h.fm("watch").arg("--once").stdout_any().stderr_any().run();
    let rows = h.fm("crew-state").arg("--json").stdout_json().run().json();
    let usage = |id: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap()
            .get("usage")
            .cloned()
    };
    assert_eq!(
        usage("c1").unwrap(),
        serde_json::json!({"input_tokens":110,"output_tokens":25,"cache_read_tokens":150,"cache_write_tokens":50,"total_tokens":335,"cost_usd":0.25})
    );
    assert_eq!(
        usage("x1").unwrap(),
        serde_json::json!({"input_tokens":1600,"output_tokens":70,"cache_read_tokens":900,"cache_write_tokens":0,"total_tokens":2570})
    );
    assert_eq!(usage("s1"), None);
    assert!(!h.exists("state/s1.usage"));
    // A turn more: only it is read, and one task asked alone shows it too.
    let more = CLAUDE[3]
        .replace("msg_2", "msg_3")
        .replace(",\"costUSD\":0.25", "");
    std::fs::write(&session, CLAUDE.join("\n") + "\n" + &more + "\n").unwrap();
    h.fm("watch").arg("--once").stdout_any().stderr_any().run();
    let one = h
        .fm("crew-state")
        .args(["c1", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(one["usage"]["output_tokens"], 30);
    assert_eq!(one["usage"]["cost_usd"], 0.25);
}

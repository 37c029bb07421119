//! `fm-crew-state`: every rule of docs/spec/crew-state.md#resolution through the real binary, with
//! real git
//! worktrees and a private tmux server; the fleet view against single-task
//! calls; the JSON schema; `--watch` and `--trace`.

use std::path::{Path, PathBuf};

use crate::harness::{TestHome, Tmux, git, wait_for, wait_until};

const DOT: &str = " \u{b7} ";

/// A project clone with an `origin` bare remote and one commit on main.
fn project(h: &TestHome) -> PathBuf {
    let origin = h.path("origin.git");
    let p = h.path("project");
    std::fs::create_dir_all(&p).unwrap();
    git(
        &h.root(),
        &["init", "-q", "--bare", origin.to_str().unwrap()],
    );
    git(&p, &["init", "-q", "-b", "main"]);
    git(&p, &["commit", "-q", "--allow-empty", "-m", "base"]);
    git(&p, &["remote", "add", "origin", origin.to_str().unwrap()]);
    git(&p, &["push", "-q", "origin", "main"]);
    p
}

/// A worktree of `project` for task `id` on a new branch `fm/<id>`.
fn worktree(h: &TestHome, project: &Path, id: &str) -> PathBuf {
    let wt = h.path(&format!("worktrees/{id}"));
    let branch = format!("fm/{id}");
    git(
        project,
        &["worktree", "add", "-q", "-b", &branch, wt.to_str().unwrap()],
    );
    wt
}

fn meta(h: &TestHome, id: &str, lines: &[String]) {
    h.write(&format!("state/{id}.meta"), lines.join("\n") + "\n");
}

fn log(h: &TestHome, id: &str, text: &str) {
    h.write(&format!("state/{id}.status"), text);
}

#[track_caller]
fn line(h: &TestHome, id: &str) -> String {
    let r = h
        .fm("crew-state")
        .arg(id)
        .stdout_regex(r"state: [^\n]+\n")
        .run();
    r.stdout().trim_end_matches('\n').to_string()
}

fn state(parts: &[&str]) -> String {
    let mut s = format!("state: {}{DOT}source: {}", parts[0], parts[1]);
    for p in &parts[2..] {
        s = s + DOT + p;
    }
    s
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn unknown_task_and_bad_ids() {
    let h = TestHome::new();
    assert_eq!(
        line(&h, "ghost"),
        state(&["unknown", "none", "no metadata for ghost"])
    );
    let j = h
        .fm("crew-state")
        .args(["ghost", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(j["state"], "unknown");
    assert_eq!(j["age_secs"], serde_json::Value::Null);
    for bad in ["../x", "a/b", ".hidden"] {
        h.fm("crew-state")
            .args(["--", bad])
            .status(2)
            .stderr_has("error:")
            .run();
    }
    // The message states the range actually accepted: 0 < S <= 86400.
    for bad in ["0", "-1", "86401", "NaN"] {
        let r = h
            .fm("crew-state")
            .args(["--watch", &format!("--interval={bad}")])
            .status(2)
            .stderr_has("--interval must be more than 0 and at most 86400 seconds")
            .run();
        assert!(!r.stderr().contains("between 0 and"), "{}", r.stderr());
    }
    h.fm("fm")
        .args(["crew-state", "ghost"])
        .stdout_has("no metadata for ghost")
        .run();
}

#[test]
fn worktree_gone_reads_unknown() {
    let h = TestHome::new();
    let gone = h.path("worktrees/t1");
    meta(&h, "t1", &[format!("worktree={}", gone.display())]);
    log(&h, "t1", "working: still typing\n");
    assert_eq!(
        line(&h, "t1"),
        state(&["unknown", "none", "worktree gone (torn down?)"])
    );
    meta(
        &h,
        "t1",
        &["kind=scout".into(), format!("worktree={}", gone.display())],
    );
    assert_eq!(
        line(&h, "t1"),
        state(&["unknown", "none", "worktree gone (torn down?)"])
    );
}

#[test]
fn run_record_attribution_with_real_git() {
    let h = TestHome::new();
    let p = project(&h);
    let wt = worktree(&h, &p, "t1");
    git(&wt, &["commit", "-q", "--allow-empty", "-m", "one"]);
    let head = git(&wt, &["rev-parse", "HEAD"]);
    meta(&h, "t1", &[format!("worktree={}", wt.display())]);
    let t = now();
    log(
        &h,
        "t1",
        &format!("needs-decision [at={}] [key=db]: which db?\n", t - 100),
    );
    let run = |status: &str, branch: &str, head: &str| {
        h.write(
            "state/t1.run",
            format!(
                "status={status}\nbranch={branch}\nhead={head}\ngate=review\nfindings=3\npr=\n"
            ),
        );
    };
    let sup = "status-log superseded";
    for (status, want) in [
        ("running", "validating (running)"),
        ("fixing", "validating (fixing)"),
        ("pending", "validating (pending)"),
        ("ci", "ci running"),
    ] {
        run(status, "fm/t1", &head);
        assert_eq!(line(&h, "t1"), state(&["working", "run", want, sup]));
    }
    run("awaiting_approval", "fm/t1", &head);
    assert_eq!(
        line(&h, "t1"),
        state(&["parked", "run", "parked at review: 3 findings", sup])
    );
    run("passed", "fm/t1", &head);
    assert_eq!(line(&h, "t1"), state(&["done", "run", "run passed", sup]));
    run("failed", "fm/t1", &head);
    assert_eq!(line(&h, "t1"), state(&["failed", "run", "run failed", sup]));
    // Decision resolved: nothing superseded.
    log(
        &h,
        "t1",
        &format!(
            "needs-decision [at={}] [key=db]: which db?\nresolved [key=db]: pg\nworking: on it\n",
            t - 100
        ),
    );
    run("cancelled", "fm/t1", &head);
    assert_eq!(line(&h, "t1"), state(&["failed", "run", "run cancelled"]));
    // A run on another branch is ignored.
    run("running", "fm/other", &head);
    assert_eq!(line(&h, "t1"), state(&["working", "status-log", "on it"]));
    // HEAD is an ancestor of the run's head: attributed.
    git(&wt, &["commit", "-q", "--allow-empty", "-m", "two"]);
    let newer = git(&wt, &["rev-parse", "HEAD"]);
    git(&wt, &["reset", "-q", "--hard", &head]);
    run("running", "fm/t1", &newer);
    assert_eq!(
        line(&h, "t1"),
        state(&["working", "run", "validating (running)"])
    );
    // A rewritten head (HEAD not contained in the run's head) is ignored.
    git(
        &wt,
        &["commit", "-q", "--amend", "--allow-empty", "-m", "one'"],
    );
    assert_eq!(line(&h, "t1"), state(&["working", "status-log", "on it"]));
    run("running", "fm/t1", &head);
    assert_eq!(line(&h, "t1"), state(&["working", "status-log", "on it"]));
}

#[test]
fn log_states_and_the_done_gate() {
    let h = TestHome::new();
    let p = project(&h);
    let wt = worktree(&h, &p, "t1");
    git(&wt, &["commit", "-q", "--allow-empty", "-m", "work"]);
    let head = git(&wt, &["rev-parse", "HEAD"]);
    meta(
        &h,
        "t1",
        &[
            "kind=ship".into(),
            "mode=direct-PR".into(),
            format!("worktree={}", wt.display()),
            format!("project={}", p.display()),
        ],
    );
    log(
        &h,
        "t1",
        "needs-decision [key=db]: which db?\ndone: PR https://example.com/pull/1\n",
    );
    assert_eq!(
        line(&h, "t1"),
        state(&["parked", "status-log", "which db?"])
    );
    log(&h, "t1", "done: PR https://example.com/pull/1\n");
    let refused = line(&h, "t1");
    assert!(
        refused.starts_with(&state(&["blocked", "status-log", "named head "]))
            && refused.contains(&head[..7])
            && refused.ends_with(" is unreachable outside the worker copy"),
        "{refused}"
    );
    git(&wt, &["push", "-q", "origin", "fm/t1"]);
    assert_eq!(
        line(&h, "t1"),
        state(&["done", "status-log", "PR https://example.com/pull/1"])
    );
    // A scout's done is never gated.
    let wt2 = worktree(&h, &p, "s1");
    git(&wt2, &["commit", "-q", "--allow-empty", "-m", "unpushed"]);
    meta(
        &h,
        "s1",
        &["kind=scout".into(), format!("worktree={}", wt2.display())],
    );
    log(&h, "s1", "done: report written\n");
    assert_eq!(
        line(&h, "s1"),
        state(&["done", "status-log", "report written"])
    );
    log(&h, "s1", "paused: until 2030-01-01 00:00 UTC\n");
    assert_eq!(
        line(&h, "s1"),
        state(&["paused", "status-log", "until 2030-01-01 00:00 UTC"])
    );
}

/// A task whose pane lives on the private server `t`.
fn pane_meta(h: &TestHome, t: &Tmux, id: &str, pane: &str, extra: &[&str]) {
    let mut lines = vec![
        "kind=secondmate".to_string(),
        format!("pane={pane}"),
        format!("tmux_socket={}", t.socket),
    ];
    lines.extend(extra.iter().map(std::string::ToString::to_string));
    meta(h, id, &lines);
}

#[test]
fn pane_rules_with_real_tmux() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    h.write(
        "config/firstmate.toml",
        "[harness.sleeper]\nlaunch = [\"sleep\", \"1000\"]\nbusy_regex = \"BUSYMARK\"\nagent_commands = [\"sleep\"]\n",
    );
    // Alive, no status yet → idle.
    let a = t.window("fm-a", &["sleep", "1000"]);
    pane_meta(&h, &t, "a", &a, &[]);
    assert_eq!(
        line(&h, "a"),
        state(&["idle", "pane", "agent alive, no status yet"])
    );
    // Busy record newer than the last status line → working.
    let n = now();
    log(&h, "a", &format!("done [at={}]: finished\n", n - 50));
    h.write("state/a.busy", format!("busy {} prompt-hook\n", n - 5));
    assert_eq!(
        line(&h, "a"),
        state(&["working", "pane", "busy (prompt-hook)"])
    );
    h.write("state/a.busy", format!("idle {} stop-hook\n", n - 5));
    assert_eq!(line(&h, "a"), state(&["done", "status-log", "finished"]));
    // Screen busy by the harness regex.
    let b = t.window("fm-b", &["sh", "-c", "echo BUSYMARK; exec sleep 1000"]);
    pane_meta(&h, &t, "b", &b, &["harness=sleeper"]);
    log(&h, "b", "working: compiling\n");
    assert!(wait_until(5.0, || t.capture(&b).contains("BUSYMARK")));
    assert!(wait_until(5.0, || line(&h, "b")
        == state(&["working", "pane", "busy (screen)"])));
    // A shell in the foreground of a non-shell harness → agent exited.
    let c = t.window("fm-c", &["bash", "--norc", "--noprofile"]);
    pane_meta(&h, &t, "c", &c, &["harness=claude"]);
    log(&h, "c", "working: typing\n");
    assert!(wait_until(5.0, || line(&h, "c")
        == state(&["exited", "pane", "agent exited"])));
    log(&h, "c", "failed: gave up\n");
    assert_eq!(line(&h, "c"), state(&["failed", "status-log", "gave up"]));
    // Pane gone with a non-terminal log → exited · pane gone.
    t.run(["kill-pane", "-t", &a]);
    log(&h, "a", "working: halfway\n");
    h.write("state/a.busy", format!("busy {} prompt-hook\n", now() + 5));
    assert_eq!(line(&h, "a"), state(&["exited", "pane", "pane gone"]));
    // …and after done → the done (a secondmate is not gated).
    log(&h, "a", "done: all finished\n");
    assert_eq!(
        line(&h, "a"),
        state(&["done", "status-log", "all finished"])
    );
}

#[test]
fn pane_gone_after_a_ship_done_is_gated() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let p = project(&h);
    let wt = worktree(&h, &p, "s");
    git(&wt, &["commit", "-q", "--allow-empty", "-m", "work"]);
    let pane = t.window("fm-s", &["sleep", "1000"]);
    meta(
        &h,
        "s",
        &[
            "kind=ship".into(),
            "mode=local-only".into(),
            format!("worktree={}", wt.display()),
            format!("pane={pane}"),
            format!("tmux_socket={}", t.socket),
        ],
    );
    log(&h, "s", "done: ready in branch fm/s\n");
    t.run(["kill-pane", "-t", &pane]);
    let l = line(&h, "s");
    assert!(
        l.starts_with(&state(&["blocked", "status-log", "named head "])),
        "{l}"
    );
    git(&wt, &["push", "-q", "origin", "fm/s"]);
    assert_eq!(
        line(&h, "s"),
        state(&["done", "status-log", "ready in branch fm/s"])
    );
}

#[test]
fn renamed_killed_or_recreated_windows_never_borrow_another_pane() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let a = t.window("fm-a", &["sleep", "1000"]);
    pane_meta(&h, &t, "a", &a, &["window=fm-a"]);
    log(&h, "a", "working: on a\n");
    assert_eq!(line(&h, "a"), state(&["working", "status-log", "on a"]));
    // Renamed: same pane, same answer.
    t.run(["rename-window", "-t", &a, "something-else"]);
    assert_eq!(line(&h, "a"), state(&["working", "status-log", "on a"]));
    // Killed, and a new window with the old name (a live agent) appears.
    t.run(["kill-window", "-t", &a]);
    let other = t.window("fm-a", &["sleep", "1000"]);
    assert_ne!(other, a);
    assert_eq!(line(&h, "a"), state(&["exited", "pane", "pane gone"]));
    // The same with a second task whose meta names the new pane.
    pane_meta(&h, &t, "b", &other, &["window=fm-a"]);
    assert_eq!(
        line(&h, "b"),
        state(&["idle", "pane", "agent alive, no status yet"])
    );
    assert_eq!(line(&h, "a"), state(&["exited", "pane", "pane gone"]));
}

/// Column start offsets of the fleet table, from its header.
fn columns(header: &str) -> Vec<usize> {
    ["ID", "STATE", "SOURCE", "AGE", "INBOX", "OPEN", "DETAIL"]
        .iter()
        .map(|c| header.find(c).unwrap())
        .collect()
}

#[test]
fn fleet_of_fifty_matches_single_calls() {
    let h = TestHome::new();
    let tmux = Tmux::start();
    let p = project(&h);
    let shared = worktree(&h, &p, "shared");
    let head = git(&shared, &["rev-parse", "HEAD"]);
    let n = now();
    for i in 0..50 {
        let id = format!("t{i:02}");
        let mut m = vec![format!("worktree={}", shared.display())];
        match i % 10 {
            0 => m.push("kind=secondmate".into()),
            1 => m.push("kind=scout".into()),
            2 => m[0] = format!("worktree={}", h.path("nowhere").display()),
            _ => m.push("kind=ship".into()),
        }
        let text = match i % 7 {
            0 => format!("working [at={}]: step {i}\n", n - 30),
            1 => format!("needs-decision [at={}] [key=k]: q {i}\n", n - 90),
            2 => format!("blocked: b {i}\nworking: later\n"),
            3 => format!("paused [at={}]: until later {i}\n", n - 4000),
            4 => format!("done: finished {i}\n"),
            5 => format!("failed [at={}]: f {i}\n", n - 10),
            _ => String::new(),
        };
        if !text.is_empty() {
            log(&h, &id, &text);
        }
        if i % 9 == 4 {
            h.write(
                &format!("state/{id}.run"),
                format!("status=running\nbranch=fm/shared\nhead={head}\n"),
            );
        }
        if i % 6 == 0 {
            h.write(
                &format!("state/{id}.inbox/001.msg"),
                "schema=fm-inbox.v1\n--\nhi",
            );
        }
        if let Some(t) = &tmux
            && i % 8 == 3
        {
            let pane = t.window(&format!("fm-{id}"), &["sleep", "1000"]);
            if i % 16 == 3 {
                t.run(["kill-pane", "-t", &pane]);
            }
            m.push(format!("pane={pane}"));
            m.push(format!("tmux_socket={}", t.socket));
        }
        meta(&h, &id, &m);
    }
    let fleet = h.fm("crew-state").arg("--json").stdout_json().run().json();
    let fleet = fleet.as_array().unwrap();
    assert_eq!(fleet.len(), 50);
    let table = h.fm("crew-state").arg("--all").stdout_any().run().stdout();
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows.len(), 51);
    let cols = columns(rows[0]);
    let mut states = std::collections::BTreeSet::new();
    for (i, (row, text)) in fleet.iter().zip(&rows[1..]).enumerate() {
        let id = format!("t{i:02}");
        let mut single = h
            .fm("crew-state")
            .args([&id, "--json"])
            .stdout_json()
            .run()
            .json();
        let mut row = row.clone();
        for v in [&mut single, &mut row] {
            v.as_object_mut().unwrap().remove("age_secs");
        }
        assert_eq!(row, single, "{id}");
        let one = line(&h, &id);
        let cell = |k: usize| {
            let end = if k + 1 < cols.len() {
                cols[k + 1]
            } else {
                text.len()
            };
            text.get(cols[k]..end.min(text.len()))
                .unwrap_or("")
                .trim()
                .to_string()
        };
        let detail = text.get(cols[6]..).unwrap_or("");
        let mut rebuilt = format!("state: {}{DOT}source: {}", cell(1), cell(2));
        if !detail.is_empty() {
            rebuilt.push_str(&format!("{DOT}{detail}"));
        }
        assert_eq!(cell(0), id);
        assert_eq!(rebuilt, one, "{id}");
        states.insert(single["state"].as_str().unwrap().to_string());
    }
    assert!(states.len() >= 6, "mixed states: {states:?}");
}

/// A tiny JSON Schema checker for the keywords the crew-state schema uses.
pub(crate) fn check(
    schema: &serde_json::Value,
    root: &serde_json::Value,
    v: &serde_json::Value,
    at: &str,
) {
    use serde_json::Value;
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").unwrap();
        return check(&root["$defs"][name], root, v, at);
    }
    if let Some(alts) = schema.get("oneOf").and_then(Value::as_array) {
        let ok = alts
            .iter()
            .filter(|s| std::panic::catch_unwind(|| check(s, root, v, at)).is_ok())
            .count();
        assert_eq!(ok, 1, "{at}: matches {ok} of oneOf");
        return;
    }
    if let Some(ty) = schema.get("type") {
        let types: Vec<&str> = match ty {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let actual = match v {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_u64() || n.is_i64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        assert!(types.contains(&actual), "{at}: {actual} not in {types:?}");
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        assert!(e.contains(v), "{at}: {v} not in enum");
    }
    if let (Some(min), Some(n)) = (schema.get("minimum").and_then(Value::as_u64), v.as_u64()) {
        assert!(n >= min, "{at}: below minimum");
    }
    if let Some(obj) = v.as_object() {
        let props = schema.get("properties").and_then(Value::as_object);
        for r in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            assert!(obj.contains_key(r.as_str().unwrap()), "{at}: missing {r}");
        }
        for (k, val) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(s) => check(s, root, val, &format!("{at}.{k}")),
                None => assert!(
                    schema.get("additionalProperties") != Some(&Value::Bool(false)),
                    "{at}: unexpected {k}"
                ),
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), v.as_array()) {
        for (i, x) in arr.iter().enumerate() {
            check(items, root, x, &format!("{at}[{i}]"));
        }
    }
}

#[test]
fn json_validates_against_the_documented_schema() {
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/crew-state-schema.json");
    let schema: serde_json::Value =
        serde_json::from_slice(&std::fs::read(schema_path).unwrap()).unwrap();
    let h = TestHome::new();
    meta(&h, "a", &["kind=secondmate".into()]);
    log(
        &h,
        "a",
        "needs-decision [at=1700000000] [key=db]: which?\nblocked: [key=net] no network\n",
    );
    h.write("state/a.inbox/001.msg", "schema=fm-inbox.v1\n--\nhi");
    meta(&h, "b", &["kind=secondmate".into()]);
    escalated(&h, "c");
    dead(&h, "d");
    let one = h
        .fm("crew-state")
        .args(["a", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(one["inbox_pending"], 1);
    assert_eq!(one["open_decisions"][0]["key"], "db");
    assert_eq!(one["open_decisions"][1]["at"], serde_json::Value::Null);
    check(&schema, &schema, &one, "$");
    let ghost = h
        .fm("crew-state")
        .args(["zz", "--json"])
        .stdout_json()
        .run()
        .json();
    check(&schema, &schema, &ghost, "$");
    let fleet = h.fm("crew-state").arg("--json").stdout_json().run().json();
    assert_eq!(fleet.as_array().unwrap().len(), 4);
    let kinds: Vec<Option<&str>> = fleet
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["attention"]["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [Some("blocked"), None, Some("escalated"), Some("dead-agent")]
    );
    check(&schema, &schema, &fleet, "$");
    // The checker can fail.
    let mut bad = one.clone();
    bad["state"] = "sleeping".into();
    assert!(std::panic::catch_unwind(|| check(&schema, &schema, &bad, "$")).is_err());
}

/// A task whose one pending message the watcher escalated after 3 rings.
fn escalated(h: &TestHome, id: &str) {
    meta(h, id, &["kind=secondmate".into()]);
    h.write(
        &format!("state/{id}.inbox/001.msg"),
        "schema=fm-inbox.v1\n--\nhi",
    );
    h.write(
        &format!("state/{id}.inbox/.ring-state"),
        format!("001.msg\t3\t{}\n", now() - 30),
    );
    h.write(&format!("state/{id}.inbox/.escalated"), "001.msg\n");
}

/// A task whose pane is gone (its tmux server does not even run).
fn dead(h: &TestHome, id: &str) {
    meta(
        h,
        id,
        &[
            "kind=secondmate".into(),
            "pane=%999".into(),
            format!("tmux_socket=fm-test-{}-none", std::process::id()),
        ],
    );
}

#[test]
fn table_and_json_say_why_a_worker_waits() {
    let h = TestHome::new();
    let t = now();
    meta(&h, "q1", &["kind=secondmate".into(), "repo=shop".into()]);
    log(
        &h,
        "q1",
        &format!(
            "needs-decision [at={}] [key=schema]: postgres or sqlite?\n",
            t - 180
        ),
    );
    escalated(&h, "q2");
    dead(&h, "q3");
    meta(&h, "q4", &["kind=secondmate".into()]);
    log(&h, "q4", &format!("working [at={}]: typing\n", t - 65));
    // An escalation that names a record no longer pending is over.
    escalated(&h, "q5");
    std::fs::remove_file(h.path("state/q5.inbox/001.msg")).unwrap();
    let table = h.fm("crew-state").stdout_any().run().stdout();
    let lines: Vec<&str> = table.lines().collect();
    let cols = columns(lines[0]);
    let waiting = lines[0].find("WAITING").expect("a WAITING column");
    assert!(cols[5] < waiting && waiting < cols[6], "{}", lines[0]);
    let cell = |row: &str| row[waiting..cols[6]].trim().to_string();
    let of = |id: &str| *lines.iter().find(|l| l.starts_with(id)).unwrap();
    assert_eq!(cell(of("q1")), "decision schema");
    assert_eq!(cell(of("q2")), "1 message unread, 3 rings");
    assert_eq!(cell(of("q3")), "dead agent");
    assert_eq!(cell(of("q4")), "-");
    assert_eq!(cell(of("q5")), "-");
    assert!(of("q1").contains(" 3m ago "), "{}", of("q1"));
    assert!(of("q4").contains(" 1m ago "), "{}", of("q4"));
    let j = h
        .fm("crew-state")
        .args(["q1", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(
        j["attention"]["reason"],
        "needs decision: schema \u{2014} postgres or sqlite?"
    );
    assert_eq!(j["attention"]["key"], "schema");
    assert_eq!(j["project"], "shop");
    let iso = firstmate::clock::rfc3339(t - 180);
    assert_eq!(j["attention"]["since"], iso.as_str());
    assert_eq!(j["current_at"], iso.as_str());
    assert_eq!(j["open_decisions"][0]["opened_at"], iso.as_str());
    assert_eq!(j["age_secs"].as_u64().map(|a| a >= 180), Some(true));
    let j = h
        .fm("crew-state")
        .args(["q2", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(
        j["state"], "unknown",
        "no pane, no log: only the escalation is known"
    );
    assert_eq!(j["attention"]["reason"], "1 message unread after 3 rings");
    assert_eq!(
        (
            j["attention"]["rings"].as_u64(),
            j["attention"]["unread"].as_u64()
        ),
        (Some(3), Some(1))
    );
    assert_eq!(j["attention"]["record"], "001.msg");
    let j = h
        .fm("crew-state")
        .args(["q3", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(j["attention"]["reason"], "dead agent: pane gone");
    assert_eq!(j["pane"], "%999");
    // The one-line form keeps its docs/spec/crew-state.md#output shape.
    h.fm("crew-state")
        .arg("q2")
        .stdout(format!(
            "state: unknown{DOT}source: none{DOT}no current-state source available\n"
        ))
        .run();
}

#[test]
fn watch_redraws_shows_wakes_and_stops_on_ctrl_c() {
    let h = TestHome::new();
    meta(&h, "a", &["kind=secondmate".into()]);
    log(&h, "a", "working: live\n");
    h.write("state/wakes.log", "old wake\nwake one\nwake two\n");
    let view = h
        .fm("crew-state")
        .args(["--watch", "--interval", "0.2"])
        .status(130)
        .stdout_any()
        .start();
    // Two frames drawn: it redraws on its own.
    wait_for("a second frame", 10.0, || {
        view.stdout_so_far().matches("wakes:").count() >= 2
    });
    view.signal(libc::SIGINT);
    let out = view.wait(5.0).stdout();
    assert!(out.matches("wakes:").count() >= 2, "redraws: {out}");
    assert!(out.contains("a   working  status-log"), "{out}");
    assert!(out.contains("  wake two\n"), "{out}");
    assert!(!out.contains('\x1b'), "no colour off a terminal: {out}");
}

#[test]
fn trace_merges_the_chain() {
    let h = TestHome::new();
    meta(&h, "top", &["kind=secondmate".into()]);
    meta(&h, "mid", &["parent=top".into()]);
    meta(&h, "leaf", &["parent=mid".into()]);
    meta(&h, "other", &[]);
    let ev = |ts: u64, task: &str, action: &str, actor: &str| {
        format!(
            r#"{{"ts":{ts},"tool":"fm-x","task":"{task}","action":"{action}","actor":"{actor}"}}"#
        )
    };
    let lines = [
        ev(30, "leaf", "status.appended", "leaf"),
        ev(10, "top", "brief.written", "captain"),
        ev(20, "other", "brief.written", "captain"),
        ev(10, "top", "brief.written", "captain"),
        ev(15, "mid", "inbox.queued", "top"),
    ];
    h.write("state/events.jsonl", lines.join("\n") + "\n");
    let out = h
        .fm("crew-state")
        .args(["--trace", "top"])
        .stdout_any()
        .run()
        .stdout();
    assert_eq!(
        out,
        [
            "- 1970-01-01T00:00:10Z · top · captain · brief.written · tool=fm-x",
            "- 1970-01-01T00:00:15Z · mid · top · inbox.queued · tool=fm-x",
            "- 1970-01-01T00:00:30Z · leaf · leaf · status.appended · tool=fm-x",
            "",
        ]
        .join("\n")
    );
    let j = h
        .fm("crew-state")
        .args(["--trace", "mid", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(j.as_array().unwrap().len(), 2);
}

#[test]
fn trace_keeps_distinct_events_of_the_same_second() {
    let h = TestHome::new();
    meta(&h, "P", &["kind=secondmate".into()]);
    meta(&h, "P.c1", &["parent=P".into()]);
    // Two real messages, most likely within one second of each other.
    for body in ["msg two", "msg three"] {
        h.fm("send").args(["P.c1", body]).stdout_regex(r"queued P\.c1 00[12]\.msg . doorbell no-pane\n").stderr("fm-send: P.c1: doorbell no-pane: meta records no pane for this task; the message is recorded and the watcher will re-ring it\n").run();
    }
    let queued = |out: &str| out.matches("inbox.queued").count();
    let out = h
        .fm("crew-state")
        .args(["--trace", "P"])
        .stdout_any()
        .run()
        .stdout();
    assert_eq!(queued(&out), 2, "{out}");
    assert!(out.contains("seq=1") && out.contains("seq=2"), "{out}");
    // The same second for certain; the exact copy of a record is dropped.
    let ev = |seq: u64| {
        format!(
            r#"{{"ts":100,"tool":"fm-send","task":"P.c1","action":"inbox.queued","actor":"captain","seq":{seq}}}"#
        )
    };
    h.write(
        "state/events.jsonl",
        [ev(1), ev(2), ev(2), ev(3)].join("\n") + "\n",
    );
    let out = h
        .fm("crew-state")
        .args(["--trace", "P"])
        .stdout_any()
        .run()
        .stdout();
    assert_eq!(queued(&out), 3, "{out}");
    for seq in 1..=3 {
        assert_eq!(out.matches(&format!("seq={seq}")).count(), 1, "{out}");
    }
}

#[test]
fn a_sub_brief_never_spawned_is_not_torn_down_and_keeps_its_brief_kind() {
    let h = TestHome::new();
    h.fm("brief")
        .args(["P", "--secondmate", "--no-projects"])
        .stdout(format!(
            "scaffolded: {} (secondmate; replace {{TASK}})\n",
            h.path("data/P/brief.md").display()
        ))
        .run();
    h.fm("brief")
        .args(["P.c1", "proj", "--scout", "--parent", "P"])
        .stdout(format!(
            "scaffolded: {} (scout; replace {{TASK}} and {{FIRSTMATE_SPEC}})\n",
            h.path("data/P.c1/brief.md").display()
        ))
        .run();
    h.fm("brief")
        .args(["P.c2", "proj", "--mode", "local-only", "--parent", "P"])
        .stdout(format!(
            "scaffolded: {} (ship, mode=local-only; replace {{TASK}} and {{FIRSTMATE_SPEC}})\n",
            h.path("data/P.c2/brief.md").display()
        ))
        .run();
    // fm-brief leaves a meta naming only the parent: no worktree, no kind.
    assert_eq!(h.read("state/P.c1.meta"), b"parent=P\n");
    for id in ["P.c1", "P.c2"] {
        assert_eq!(
            line(&h, id),
            state(&["unknown", "none", "no current-state source available"])
        );
    }
    log(&h, "P.c2", "working: reading the brief\n");
    assert_eq!(
        line(&h, "P.c2"),
        state(&["working", "status-log", "reading the brief"])
    );
    // The brief says scout: its done is never gated, so it reads done.
    log(&h, "P.c1", "done: found the cause\n");
    assert_eq!(
        line(&h, "P.c1"),
        state(&["done", "status-log", "found the cause"])
    );
    // Once meta names a worktree that is gone, rule 1 applies again.
    let gone = h.path("worktrees/P.c1");
    meta(
        &h,
        "P.c1",
        &["parent=P".into(), format!("worktree={}", gone.display())],
    );
    assert_eq!(
        line(&h, "P.c1"),
        state(&["unknown", "none", "worktree gone (torn down?)"])
    );
    // A secondmate known only by its brief has no worktree to lose.
    h.fm("brief")
        .args(["P.s1", "--secondmate", "--no-projects", "--parent", "P"])
        .stdout(format!(
            "scaffolded: {} (secondmate; replace {{TASK}})\n",
            h.path("data/P.s1/brief.md").display()
        ))
        .run();
    meta(
        &h,
        "P.s1",
        &["parent=P".into(), format!("worktree={}", gone.display())],
    );
    assert_eq!(
        line(&h, "P.s1"),
        state(&["unknown", "none", "no current-state source available"])
    );
}

#[test]
fn a_run_record_survives_a_tag_named_like_the_branch() {
    let h = TestHome::new();
    let p = project(&h);
    let wt = worktree(&h, &p, "t1");
    git(&wt, &["commit", "-q", "--allow-empty", "-m", "one"]);
    let head = git(&wt, &["rev-parse", "HEAD"]);
    // A tag with the branch's name: `rev-parse --abbrev-ref HEAD` would
    // answer `heads/fm/t1`.
    git(&wt, &["tag", "fm/t1"]);
    meta(&h, "t1", &[format!("worktree={}", wt.display())]);
    log(&h, "t1", "working: on it\n");
    for branch in ["fm/t1", "refs/heads/fm/t1"] {
        h.write(
            "state/t1.run",
            format!("status=running\nbranch={branch}\nhead={head}\n"),
        );
        assert_eq!(
            line(&h, "t1"),
            state(&["working", "run", "validating (running)"]),
            "{branch}"
        );
    }
    // Detached at the same commit: not on the branch, the record is ignored.
    git(&wt, &["checkout", "-q", "--detach"]);
    assert_eq!(line(&h, "t1"), state(&["working", "status-log", "on it"]));
}

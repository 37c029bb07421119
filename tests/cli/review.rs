//! `fm review`: the branch against its base, the stat, the patch, the
//! push state and the gate, plain off a terminal, as JSON for the summary.

use crate::harness::{TestHome, Tmux, git};
use crate::land::finished;

#[test]
fn review_shows_commits_stat_push_and_the_gate() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let wt = finished(&h, &t, "v1", "local-only", "ready in branch fm/v1");
    let proj = h.root().join("project");
    let base = git(&proj, &["rev-parse", "main"]);
    let tip = git(&wt, &["rev-parse", "HEAD"]);
    assert!(
        h.read_string("state/v1.meta")
            .contains(&format!("base={base}\n"))
    );
    let j = h
        .fm("fm")
        .args(["review", "v1", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(j["base"], base.as_str());
    assert_eq!(j["tip"], tip.as_str());
    assert_eq!(j["branch"], "fm/v1");
    assert_eq!(j["target"], "main");
    assert_eq!(j["commits"][0]["subject"], "add the work of v1");
    assert_eq!(j["files"][0]["path"], "work.txt");
    assert_eq!(j["files"][0]["added"], 1);
    assert_eq!(j["pushed"]["state"], "not-pushed");
    assert_eq!(j["gate"]["verdict"], "accepted");
    assert!(j.get("patch").is_none(), "{j}");

    // Plain off a terminal (and under env -i): no escapes, the patch whole.
    let out = h
        .fm("fm")
        .args(["review", "v1"])
        .env("TERM", "xterm")
        .stdout_any()
        .run()
        .stdout();
    assert!(!out.contains('\x1b'), "{out}");
    assert!(
        out.starts_with(&format!(
            "review v1: fm/v1 {} against main {}\n",
            &tip[..12],
            &base[..12]
        )),
        "{out}"
    );
    assert!(out.contains("gate: accepted: "), "{out}");
    assert!(out.contains("push: not pushed\n"), "{out}");
    assert!(out.contains("  work.txt +1 -0\n"), "{out}");
    assert!(
        out.contains("diff --git a/work.txt b/work.txt\n") && out.contains("\n+work of v1\n"),
        "{out}"
    );

    // An older task without `base=`: the merge base with main, the same.
    let meta = h.read_string("state/v1.meta");
    h.write("state/v1.meta", meta.replace(&format!("base={base}\n"), ""));
    git(
        &proj,
        &["commit", "-q", "--allow-empty", "-m", "main moves on"],
    );
    let j = h
        .fm("fm")
        .args(["review", "v1", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(j["base"], base.as_str());
    assert_eq!(j["commits"].as_array().unwrap().len(), 1);

    // Pushed: the remote branch holds the tip; one more commit is ahead.
    git(&wt, &["push", "-q", "-u", "origin", "fm/v1"]);
    let j = h
        .fm("fm")
        .args(["review", "v1", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(j["pushed"]["state"], "pushed");
    assert_eq!(j["pushed"]["remote_ref"], "origin/fm/v1");
    git(&wt, &["commit", "-q", "--allow-empty", "-m", "more"]);
    let j = h
        .fm("fm")
        .args(["review", "v1", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(
        (j["pushed"]["state"].as_str(), j["pushed"]["ahead"].as_u64()),
        (Some("ahead"), Some(1))
    );
}

#[test]
fn on_a_terminal_the_review_is_coloured_and_paged_but_not_under_env_i() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    finished(&h, &t, "v2", "local-only", "ready in branch fm/v2");
    let fm = crate::harness::bin("fm").display().to_string();
    let home = format!("FM_HOME={}", h.root().display());
    let paged = h.root().join("paged.txt");
    // The pager is $PAGER, split at whitespace, run without a shell.
    let pager = format!("PAGER=tee {}", paged.display());
    let pane = t.window(
        "paged",
        &[
            "--",
            "env",
            &home,
            "TERM=xterm",
            &pager,
            &fm,
            "review",
            "v2",
        ],
    );
    t.run(["set-option", "-p", "-t", &pane, "remain-on-exit", "on"]);
    assert!(crate::harness::wait_until(15.0, || {
        std::fs::read_to_string(&paged).is_ok_and(|s| s.contains("+work of v2"))
    }));
    let got = std::fs::read_to_string(&paged).unwrap();
    assert!(got.contains("\x1b[32m+work of v2\x1b[0m"), "{got:?}");
    // No environment at all: no TERM, no pager, no colour.
    let pane = t.window("bare", &["--", "env", "-i", &home, &fm, "review", "v2"]);
    t.run(["set-option", "-p", "-t", &pane, "remain-on-exit", "on"]);
    assert!(crate::harness::wait_until(15.0, || t
        .capture(&pane)
        .contains("+work of v2")));
    let screen = t.run(["capture-pane", "-e", "-p", "-t", &pane]);
    assert!(!screen.contains("\x1b[32m"), "{screen:?}");
}

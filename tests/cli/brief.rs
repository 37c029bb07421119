//! `fm-brief`: snapshots of every brief shape, `--check`, refusals that
//! write nothing, caps at their edges, history, revoke, sub-briefs and
//! responses.

use crate::harness::{Cmd, TestHome, Tmux, bin};

/// Snapshot `text` with the temp home and the timestamp normalised.
fn snap(h: &TestHome, name: &str, text: &str) {
    let root = h.root().display().to_string();
    let filters = [
        (regex::escape(&root), "[HOME]".to_string()),
        (
            regex::escape(&root.replace('\'', "'\\''")),
            "[HOME]".to_string(),
        ),
        (
            r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z".to_string(),
            "[TIMESTAMP]".to_string(),
        ),
    ];
    let filters: Vec<(&str, &str)> = filters
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    insta::with_settings!({ filters => filters, prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(name, text);
    });
}

/// What `fm-brief` prints for a brief written from flags: `what` is
/// e.g. `ship, mode=direct-PR`, `scout` or `secondmate`.
fn written(h: &TestHome, id: &str, what: &str) -> String {
    format!(
        "written: {} ({what})\n",
        h.path(&format!("data/{id}/brief.md")).display()
    )
}

/// What `fm-brief` prints for a scaffold with placeholders left.
fn scaffolded(h: &TestHome, id: &str, what: &str) -> String {
    format!(
        "scaffolded: {} ({what}; replace {{TASK}} and {{FIRSTMATE_SPEC}})\n",
        h.path(&format!("data/{id}/brief.md")).display()
    )
}

/// What `fm-brief --check` prints for a brief that passes.
fn checked(h: &TestHome, id: &str) -> String {
    format!("ok: {}\n", h.path(&format!("data/{id}/brief.md")).display())
}

fn brief(h: &TestHome, id: &str) -> String {
    String::from_utf8(h.read(&format!("data/{id}/brief.md"))).unwrap()
}

#[test]
fn ship_scaffolds_in_every_mode() {
    let h = TestHome::new();
    for mode in ["no-mistakes", "direct-PR", "local-only"] {
        let id = format!("t-{}", mode.to_lowercase());
        h.fm("brief")
            .args([&id, "webapp", "--mode", mode])
            .stdout(scaffolded(&h, &id, &format!("ship, mode={mode}")))
            .run();
        let b = brief(&h, &id);
        assert_eq!(b.matches("{TASK}").count(), 1, "{b}");
        assert_eq!(b.matches("{FIRSTMATE_SPEC}").count(), 1, "{b}");
        assert!(
            b.ends_with(".\n") || b.ends_with("`\n"),
            "ends with one newline"
        );
        assert!(
            !b.contains("\n\n\n"),
            "sections are separated by one blank line"
        );
        snap(&h, &format!("ship_{mode}"), &b);
        h.fm("brief")
            .args(["--check", &id])
            .status(1)
            .stderr_has("error: placeholder {TASK}")
            .run();
    }
}

#[test]
fn scout_and_secondmate_shapes() {
    let h = TestHome::new();
    h.fm("brief")
        .args(["survey", "webapp", "--scout"])
        .stdout_has("(scout; replace {TASK} and {FIRSTMATE_SPEC})")
        .run();
    snap(&h, "scout", &brief(&h, "survey"));
    for p in ["src/webapp", "src/api"] {
        std::fs::create_dir_all(h.path(p)).unwrap();
    }
    h.fm("brief")
        .args([
            "ops",
            "--secondmate",
            "src/webapp",
            "src/api",
            "--charter",
            "Keep CI green on both projects.",
        ])
        .current_dir(h.root())
        .stdout_has("written: ")
        .run();
    snap(&h, "secondmate", &brief(&h, "ops"));
    h.fm("brief")
        .args(["--check", "ops"])
        .stdout_has("ok: ")
        .run();
    h.fm("brief")
        .args(["planner", "--secondmate", "--no-projects"])
        .stdout_has("(secondmate; replace {TASK})")
        .run();
    let b = brief(&h, "planner");
    assert_eq!(b.matches("{TASK}").count(), 1);
    snap(&h, "secondmate_no_projects", &b);
    h.fm("brief")
        .args(["--check", "planner"])
        .status(1)
        .stderr_has("{TASK}")
        .run();
}

#[test]
fn filled_brief_with_mission_constraints_and_shares_passes_check() {
    let h = TestHome::new();
    h.write(
        "spec.md",
        "1. Profile the login path.\n2. Fix the slow query.\n\n```md\n# Definition of done\n```\n",
    );
    h.fm("brief")
        .args([
            "fast-login",
            "webapp",
            "--mode",
            "direct-PR",
            "--intent",
            "Login takes nine seconds. Make it fast.",
        ])
        .arg("--spec-file")
        .arg(h.path("spec.md"))
        .args([
            "--mission",
            "Cut login latency below one second without changing the API.",
        ])
        .args([
            "--constraint",
            "Do not touch the schema.",
            "--constraint",
            "Keep Python 3.9 support.",
        ])
        .args([
            "--share",
            "team/perf=earlier profiling results",
            "--share",
            "project=conventions",
        ])
        .stdout_has("written: ")
        .stdout_has("(ship, mode=direct-PR)")
        .run();
    let b = brief(&h, "fast-login");
    snap(&h, "filled", &b);
    h.fm("brief")
        .args(["--check", "fast-login"])
        .stdout(format!(
            "ok: {}\n",
            h.path("data/fast-login/brief.md").display()
        ))
        .run();
    h.fm("brief")
        .args(["--check", "fast-login", "--mode", "direct-PR"])
        .stdout(checked(&h, "fast-login"))
        .run();
    h.fm("brief")
        .args(["--check", "fast-login", "--mode", "local-only"])
        .status(1)
        .stderr_has("error: delivery mismatch")
        .run();
    let j = h
        .fm("brief")
        .args(["--check", "fast-login", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(j["ok"], true);
}

#[test]
fn check_refuses_hand_edited_briefs() {
    let h = TestHome::new();
    h.fm("brief")
        .args([
            "t",
            "webapp",
            "--mode",
            "local-only",
            "--intent",
            "Do X.",
            "--spec",
            "Y.",
        ])
        .stdout(written(&h, "t", "ship, mode=local-only"))
        .run();
    let good = brief(&h, "t");
    let cases = [
        (
            good.replace("Do X.", "   "),
            "`## Captain's intent` is blank",
        ),
        (
            good.replace("Do X.", "Captain: do X."),
            "worker-addressed label",
        ),
        (
            good.replace(
                "Delivery contract: mode=local-only",
                "Delivery contract: mode=direct-PR",
            ),
            "delivery mismatch",
        ),
        (good.replacen("---\n", "", 1), "frontmatter"),
        (
            good.replace("## Firstmate spec", "```\n## Firstmate spec\n```"),
            "missing `## Firstmate spec`",
        ),
    ];
    for (text, want) in cases {
        h.write("data/t/brief.md", &text);
        h.fm("brief")
            .args(["--check", "t"])
            .status(1)
            .stderr_has(want)
            .run();
    }
    h.fm("brief")
        .args(["--check", "nobody"])
        .status(1)
        .stderr_has("no brief")
        .run();
    h.fm("brief")
        .args(["--check", "t", "--mode", "yolo"])
        .status(2)
        .stderr("fm-brief: error: unknown mode \"yolo\" (expected one of no-mistakes, direct-PR, local-only)\n").run();
}

#[test]
fn refusals_exit_with_their_code_and_write_nothing() {
    let h = TestHome::new();
    h.fm("brief")
        .args(["kept", "webapp", "--mode", "direct-PR"])
        .stdout(scaffolded(&h, "kept", "ship, mode=direct-PR"))
        .run();
    let kept = h.read("data/kept/brief.md");
    let before = h.tree();
    let big = "i".repeat(65_537);
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["x", "webapp"], 2, "--mode"),
        (vec!["x", "webapp", "--mode", "yolo"], 2, "unknown mode"),
        (
            vec!["x", "webapp", "--scout", "--mode", "direct-PR"],
            2,
            "--mode does not apply",
        ),
        (
            vec!["x", "--secondmate", "--no-projects", "--mode", "local-only"],
            2,
            "--mode does not apply",
        ),
        (
            vec!["x", "webapp", "--mode", "direct-PR", "--yolo"],
            2,
            "--yolo",
        ),
        (
            vec![
                "x",
                "webapp",
                "--mode",
                "direct-PR",
                "--intent",
                "Captain's ask: fix it",
            ],
            2,
            "label",
        ),
        (
            vec![
                "x",
                "webapp",
                "--mode",
                "direct-PR",
                "--intent",
                "ok\ncaptain: fix it",
            ],
            2,
            "label",
        ),
        (
            vec!["x", "webapp", "--mode", "direct-PR", "--intent", "  "],
            2,
            "blank",
        ),
        (
            vec!["x", "webapp", "--mode", "direct-PR", "--intent", &big],
            2,
            "65537 bytes",
        ),
        (
            vec!["x", "webapp", "--mode", "direct-PR", "--constraint", " "],
            2,
            "blank",
        ),
        (
            vec!["x", "webapp", "--mode", "direct-PR", "--share", "team/k"],
            2,
            "no reason",
        ),
        (
            vec![
                "x",
                "webapp",
                "--mode",
                "direct-PR",
                "--branch-prefix",
                "bad..name/",
            ],
            2,
            "invalid branch",
        ),
        (
            vec![
                "x",
                "webapp",
                "--mode",
                "direct-PR",
                "--branch-prefix",
                "a b/",
            ],
            2,
            "invalid branch",
        ),
        (
            vec![
                "x",
                "webapp",
                "--mode",
                "direct-PR",
                "--branch-prefix",
                "it\"s$(id)`x`/",
            ],
            2,
            "which a shell would expand",
        ),
        (
            vec!["HEAD", "webapp", "--mode", "direct-PR", "--branch-prefix="],
            2,
            "invalid branch",
        ),
        (
            vec!["main", "webapp", "--mode", "direct-PR", "--branch-prefix="],
            2,
            "default branch",
        ),
        (
            vec!["../x", "webapp", "--mode", "direct-PR"],
            2,
            "invalid task id",
        ),
        (
            vec!["kept", "webapp", "--mode", "direct-PR"],
            1,
            "already exists",
        ),
        (
            vec!["kept", "webapp", "--mode", "local-only", "--intent", "new"],
            1,
            "already exists",
        ),
        (
            vec!["x", "webapp", "--mode", "direct-PR", "--parent", "nobody"],
            1,
            "no brief",
        ),
        (vec!["x", "--secondmate"], 2, "--no-projects"),
        (
            vec!["x", "--secondmate", "missing-dir"],
            2,
            "not a directory",
        ),
    ];
    for (args, code, want) in cases {
        h.fm("brief")
            .args(&args)
            .status(code)
            .stderr_has("error:")
            .stderr_has(want)
            .run();
        assert_eq!(h.tree(), before, "{args:?} wrote something");
        assert_eq!(h.read("data/kept/brief.md"), kept, "{args:?}");
    }
}

#[test]
fn include_file_problems_are_refused_and_content_is_appended() {
    let h = TestHome::new();
    std::fs::create_dir(h.path("config/brief-include.md")).unwrap();
    h.fm("brief")
        .args(["t", "webapp", "--mode", "direct-PR"])
        .status(2)
        .stderr_has("not a regular file")
        .run();
    std::fs::remove_dir(h.path("config/brief-include.md")).unwrap();
    h.write(
        "config/brief-include.md",
        "Run `make lint`.\nDelivery contract: mode=local-only\n",
    );
    h.fm("brief")
        .args(["t", "webapp", "--mode", "direct-PR"])
        .status(2)
        .stderr_has("Delivery contract")
        .run();
    assert!(!h.exists("data/t"));
    h.write(
        "config/brief-include.md",
        "Run `make lint`.\n\n# Definition of done\n\nAlso update the changelog.\n",
    );
    for extra in [&[][..], &["--intent", "Do X.", "--spec", "Y."][..]] {
        h.fm("brief")
            .args(["t", "webapp", "--mode", "direct-PR"])
            .args(extra)
            .status(2)
            .stderr_has("line 3 is a `# Definition of done` heading")
            .run();
        assert!(!h.exists("data/t"));
    }
    // Quoted in a code fence, or deeper than level 1, it is only text.
    h.write(
        "config/brief-include.md",
        "```md\n# Definition of done\n```\n\n## Definition of done\n",
    );
    h.fm("brief")
        .args([
            "tq",
            "webapp",
            "--mode",
            "direct-PR",
            "--intent",
            "Do X.",
            "--spec",
            "Y.",
        ])
        .stdout(written(&h, "tq", "ship, mode=direct-PR"))
        .run();
    h.fm("brief")
        .args(["--check", "tq"])
        .stdout(checked(&h, "tq"))
        .run();
    h.write("config/brief-include.md", "   \n\n");
    h.fm("brief")
        .args(["t0", "webapp", "--mode", "direct-PR"])
        .stdout(scaffolded(&h, "t0", "ship, mode=direct-PR"))
        .run();
    assert!(!brief(&h, "t0").contains("# Home brief additions"));
    h.write(
        "config/brief-include.md",
        "Run `make lint` before every commit.\n\n- The CI is slow; be patient.\n",
    );
    h.fm("brief")
        .args([
            "t",
            "webapp",
            "--mode",
            "direct-PR",
            "--intent",
            "Do X.",
            "--spec",
            "Y.",
        ])
        .stdout(written(&h, "t", "ship, mode=direct-PR"))
        .run();
    let b = brief(&h, "t");
    assert!(b.ends_with("- The CI is slow; be patient.\n"));
    snap(&h, "with_include", &b);
    h.fm("brief")
        .args(["s", "webapp", "--scout"])
        .stdout(scaffolded(&h, "s", "scout"))
        .run();
    assert!(brief(&h, "s").contains("# Home brief additions"));
}

#[test]
fn caps_at_their_edges() {
    let h = TestHome::new();
    let ship = |id: &str| h.fm("brief").args([id, "webapp", "--mode", "local-only"]);
    ship("m500")
        .args(["--mission", &"m".repeat(500)])
        .stdout(scaffolded(&h, "m500", "ship, mode=local-only"))
        .run();
    ship("m501")
        .args(["--mission", &"m".repeat(501)])
        .status(2)
        .stderr_has("501 bytes")
        .run();
    let cons = |n: usize| {
        (0..n)
            .flat_map(|i| ["--constraint".to_string(), format!("rule {i}")])
            .collect::<Vec<_>>()
    };
    ship("c20")
        .args(cons(20))
        .stdout(scaffolded(&h, "c20", "ship, mode=local-only"))
        .run();
    ship("c21")
        .args(cons(21))
        .status(2)
        .stderr_has("21 constraints")
        .run();
    let shares = |n: usize| {
        (0..n)
            .flat_map(|i| ["--share".to_string(), format!("tier/k{i}=reason {i}")])
            .collect::<Vec<_>>()
    };
    ship("s10")
        .args(shares(10))
        .stdout(scaffolded(&h, "s10", "ship, mode=local-only"))
        .run();
    ship("s11")
        .args(shares(11))
        .status(2)
        .stderr_has("11 shares")
        .run();
    ship("s0")
        .args(["--share", "tier/k="])
        .status(2)
        .stderr_has("no reason")
        .run();
    for id in ["m501", "c21", "s11", "s0"] {
        assert!(!h.exists(&format!("data/{id}")), "{id}");
    }
    assert_eq!(brief(&h, "c20").matches("\n- rule ").count(), 20);
    assert_eq!(brief(&h, "s10").matches(" \u{2014} reason ").count(), 10);
}

#[test]
fn reapply_keeps_history_in_order_and_revoke_says_so() {
    let h = TestHome::new();
    let write = |intent: &str, force: bool| {
        let mut c = h.fm("brief").args([
            "t",
            "webapp",
            "--mode",
            "direct-PR",
            "--intent",
            intent,
            "--spec",
            "s",
        ]);
        if force {
            c = c.arg("--force");
        }
        c
    };
    write("first", false)
        .stdout(written(&h, "t", "ship, mode=direct-PR"))
        .run();
    write("second", false)
        .status(1)
        .stderr_has("already exists")
        .run();
    write("second", true)
        .stdout_has("history: ")
        .stdout_has("brief.history/001.md")
        .run();
    write("third", true)
        .stdout_has("brief.history/002.md")
        .run();
    h.fm("brief")
        .args(["--revoke", "t"])
        .stdout_has("revoked: ")
        .stdout_has("brief.history/003.md")
        .run();
    for (n, want) in [(1, "first"), (2, "second"), (3, "third")] {
        let old = String::from_utf8(h.read(&format!("data/t/brief.history/{n:03}.md"))).unwrap();
        assert!(
            old.contains(&format!("## Captain's intent\n\n{want}\n")),
            "{n}: {old}"
        );
    }
    let b = brief(&h, "t");
    assert!(
        b.starts_with("---\nid: t\n") && b.contains("# Revoked") && b.contains("was revoked"),
        "{b}"
    );
    assert!(!b.contains("Captain's intent"));
    h.fm("brief")
        .args(["--check", "t"])
        .status(1)
        .stderr_has("missing `## Captain's intent`")
        .run();
    h.fm("brief")
        .args(["--revoke", "nobody"])
        .status(1)
        .stderr_has("no brief to revoke")
        .run();
    let events = String::from_utf8(h.read("state/events.jsonl")).unwrap();
    assert_eq!(events.matches("\"brief.written\"").count(), 3);
    assert_eq!(events.matches("\"brief.revoked\"").count(), 1);
}

#[test]
fn sub_briefs_track_depth_and_stop_at_max_depth() {
    let h = TestHome::new();
    h.fm("brief")
        .args(["root", "webapp", "--mode", "direct-PR", "--max-depth", "2"])
        .stdout(scaffolded(&h, "root", "ship, mode=direct-PR"))
        .run();
    h.fm("brief")
        .args([
            "child",
            "webapp",
            "--mode",
            "local-only",
            "--parent",
            "root",
            "--intent",
            "Part A.",
            "--spec",
            "Do A.",
        ])
        .stdout(written(&h, "child", "ship, mode=local-only"))
        .run();
    let b = brief(&h, "child");
    assert!(
        b.contains("\nparentId: root\nmaxDepth: 2\ncurrentDepth: 1\n"),
        "{b}"
    );
    snap(&h, "sub_brief", &b);
    let meta = String::from_utf8(h.read("state/child.meta")).unwrap();
    assert!(meta.contains("parent=root\n"), "{meta}");
    h.fm("brief")
        .args(["grandchild", "webapp", "--scout", "--parent", "child"])
        .stdout(scaffolded(&h, "grandchild", "scout"))
        .run();
    assert!(brief(&h, "grandchild").contains("currentDepth: 2\n"));
    let before = h.tree();
    h.fm("brief")
        .args(["great", "webapp", "--scout", "--parent", "grandchild"])
        .status(1)
        .stderr_has("already at maxDepth 2")
        .run();
    h.fm("brief")
        .args([
            "great",
            "webapp",
            "--scout",
            "--parent",
            "grandchild",
            "--max-depth",
            "9",
        ])
        .status(2)
        .stderr_has("--max-depth 9")
        .stderr_has("maxDepth 2")
        .run();
    h.fm("brief")
        .args([
            "tight",
            "webapp",
            "--scout",
            "--parent",
            "child",
            "--max-depth",
            "1",
        ])
        .status(1)
        .stderr("fm-brief: error: parent child is already at maxDepth 1 (currentDepth 1)\n")
        .run();
    assert_eq!(h.tree(), before);
}

#[test]
fn a_looser_max_depth_is_refused_and_a_tighter_one_accepted() {
    let h = TestHome::new();
    h.fm("brief")
        .args(["root", "webapp", "--mode", "direct-PR", "--max-depth", "2"])
        .stdout(scaffolded(&h, "root", "ship, mode=direct-PR"))
        .run();
    let before = h.tree();
    h.fm("brief")
        .args([
            "kid",
            "webapp",
            "--scout",
            "--parent",
            "root",
            "--max-depth",
            "3",
        ])
        .status(2)
        .stderr_has("--max-depth 3")
        .stderr_has("maxDepth 2")
        .run();
    assert_eq!(h.tree(), before, "nothing written");
    h.fm("brief")
        .args([
            "kid",
            "webapp",
            "--scout",
            "--parent",
            "root",
            "--max-depth",
            "1",
        ])
        .stdout(scaffolded(&h, "kid", "scout"))
        .run();
    assert!(brief(&h, "kid").contains("\nmaxDepth: 1\ncurrentDepth: 1\n"));
}

#[test]
fn responses_validate_and_refuse() {
    let h = TestHome::new();
    // A mistyped id answers nobody: refused, nothing created.
    let before = h.tree();
    h.fm("brief")
        .args(["--respond", "t", "--status", "success"])
        .status(1)
        .stderr_has("unknown task t")
        .run();
    assert_eq!(h.tree(), before);
    h.write("state/t.meta", "kind=scout\n");
    for status in ["success", "failure", "partial", "rejected"] {
        h.write("body.md", format!("Result: {status}.\n"));
        h.fm("brief")
            .args(["--respond", "t", "--status", status, "--body-file"])
            .arg(h.path("body.md"))
            .stdout(format!(
                "responded: {} (status={status})\n",
                h.path("data/t/response.md").display()
            ))
            .run();
        h.fm("brief")
            .args(["--check-response", "t"])
            .stdout_has(&format!("(status={status})"))
            .run();
        let text = String::from_utf8(h.read("data/t/response.md")).unwrap();
        assert!(
            text.starts_with(&format!("---\nid: t\nstatus: {status}\ntimestamp: "))
                && text.ends_with(
                    "\n---\n\nResult: {status}.\n"
                        .replace("{status}", status)
                        .as_str()
                ),
            "{text}"
        );
    }
    let before = h.read("data/t/response.md");
    h.fm("brief")
        .args(["--respond", "t", "--status", "maybe"])
        .status(2)
        .stderr_has("unknown status")
        .run();
    h.fm("brief")
        .args(["--respond", "t"])
        .status(2)
        .stderr_has("--status")
        .run();
    assert_eq!(h.read("data/t/response.md"), before);
    h.write(
        "data/t/response.md",
        "---\nid: t\nstatus: success\n---\nbody\n",
    );
    h.fm("brief")
        .args(["--check-response", "t"])
        .status(1)
        .stderr_has("missing field `timestamp`")
        .run();
    h.write(
        "data/t/response.md",
        "---\nid: t\nstatus: done\ntimestamp: 2026-11-30T09:15:02Z\n---\n",
    );
    h.fm("brief")
        .args(["--check-response", "t"])
        .status(1)
        .stderr_has("unknown status")
        .run();
    h.fm("brief")
        .args(["--check-response", "u"])
        .status(1)
        .stderr_has("no response")
        .run();
    // Saved with CRLF line endings by some editor: still a response.
    h.write(
        "data/t/response.md",
        "---\r\nid: t\r\nstatus: partial\r\ntimestamp: 2026-11-30T09:15:02Z\r\n---\r\nhalf done\r\n",
    );
    h.fm("brief")
        .args(["--check-response", "t"])
        .stdout_has("(status=partial)")
        .run();
}

#[test]
fn commands_in_a_brief_work_when_pasted_under_an_awkward_home() {
    let outer = TestHome::bare();
    let root = outer.dir.path().canonicalize().unwrap().join("it's a home");
    for d in ["config", "data", "state"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("config/firstmate.toml"), "").unwrap();
    Cmd::new(bin("fm-brief"))
        .arg("--home")
        .arg(&root)
        .args(["t", "webapp", "--mode", "local-only"])
        .stdout(format!(
            "scaffolded: {} (ship, mode=local-only; replace {{TASK}} and {{FIRSTMATE_SPEC}})\n",
            root.join("data/t/brief.md").display()
        ))
        .run();
    let b = std::fs::read_to_string(root.join("data/t/brief.md")).unwrap();
    let cmds: Vec<&str> = b
        .lines()
        .filter_map(|l| l.trim().strip_prefix('`').and_then(|l| l.strip_suffix('`')))
        .filter(|l| l.starts_with("echo "))
        .collect();
    assert!(cmds.len() >= 2, "{b}");
    for c in &cmds {
        Cmd::new("sh").arg("-c").arg(c).run();
    }
    let log = std::fs::read_to_string(root.join("state/t.status")).unwrap();
    assert_eq!(log.lines().count(), cmds.len(), "{log}");
    assert!(
        log.lines().next().unwrap().starts_with("working [at="),
        "{log}"
    );
    let ls = b
        .lines()
        .find_map(|l| l.split("List them with `").nth(1))
        .unwrap()
        .split('`')
        .next()
        .unwrap();
    std::fs::create_dir_all(root.join("state/t.inbox")).unwrap();
    // The inbox is empty: the command lists nothing and says nothing.
    Cmd::new("sh").arg("-c").arg(ls).run();
}

#[test]
fn identical_inputs_render_identical_briefs_apart_from_the_timestamp() {
    let h = TestHome::new();
    let args = [
        "--mode",
        "no-mistakes",
        "--intent",
        "Same.",
        "--spec",
        "Same.",
    ];
    h.fm("brief")
        .args(["a", "webapp"])
        .args(args)
        .stdout(written(&h, "a", "ship, mode=no-mistakes"))
        .run();
    h.fm("brief")
        .args(["a", "webapp", "--force"])
        .args(args)
        .stdout(format!(
            "{}history: {}\nnotice: no live worker notified (no pane recorded)\n",
            written(&h, "a", "ship, mode=no-mistakes"),
            h.path("data/a/brief.history/001.md").display()
        ))
        .run();
    let strip = |s: String| {
        s.lines()
            .filter(|l| !l.starts_with("timestamp: "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let old = String::from_utf8(h.read("data/a/brief.history/001.md")).unwrap();
    assert_eq!(strip(old), strip(brief(&h, "a")));
}

#[test]
fn reapply_notifies_only_a_live_worker() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let fm = |args: &[&str]| {
        h.fm("brief")
            .env("FM_SEND_SETTLE_MS", "0")
            .env("FM_SEND_ENTER_WAIT_MS", "20")
            .args(args)
    };
    fm(&["idle", "webapp", "--mode", "direct-PR"])
        .stdout(scaffolded(&h, "idle", "ship, mode=direct-PR"))
        .run();
    fm(&["idle", "webapp", "--mode", "direct-PR", "--force"])
        .stdout_has("notice: no live worker notified (no pane recorded)")
        .run();
    assert!(!h.exists("state/idle.inbox"), "no pane recorded: no notice");
    let pane = t.window("live", &["sleep", "600"]);
    fm(&["live", "webapp", "--mode", "direct-PR"])
        .stdout(scaffolded(&h, "live", "ship, mode=direct-PR"))
        .run();
    let meta = format!("pane={pane}\ntmux_socket={}\n", t.socket);
    h.write("state/live.meta", &meta);
    fm(&["live", "webapp", "--mode", "local-only", "--force"])
        .stdout_has("notice: queued live 001.msg")
        .run();
    let msg = String::from_utf8(h.read("state/live.inbox/001.msg")).unwrap();
    let want = format!(
        "--\nbrief updated: re-read {}",
        h.path("data/live/brief.md").display()
    );
    assert!(msg.ends_with(&want), "{msg}");
    fm(&["--revoke", "live"])
        .stdout_has("notice: queued live 002.msg")
        .run();
    // The pane is gone: nothing is queued, and the notice says so.
    t.run(["kill-pane", "-t", &pane]);
    fm(&["live", "webapp", "--mode", "direct-PR", "--force"])
        .stdout_has(&format!(
            "notice: no live worker notified (pane {pane} is gone)"
        ))
        .run();
    assert!(!h.exists("state/live.inbox/003.msg"));
    // A dead pane (its command exited, the pane kept) gets no record either.
    t.run(["set-option", "-g", "remain-on-exit", "on"]);
    let dead = t.window("dead", &["true"]);
    assert!(
        crate::harness::wait_until(5.0, || t
            .run(["display-message", "-p", "-t", &dead, "#{pane_dead}"])
            .trim()
            == "1"),
        "pane did not die"
    );
    h.write(
        "state/live.meta",
        format!("pane={dead}\ntmux_socket={}\n", t.socket),
    );
    fm(&["--revoke", "live"]).stdout_has("has exited").run();
    assert!(!h.exists("state/live.inbox/003.msg"));
}

#[test]
fn brief_paths_are_physical_when_worktrees_is_a_symlink() {
    let h = TestHome::new();
    std::fs::create_dir(h.path("elsewhere")).unwrap();
    std::os::unix::fs::symlink(h.path("elsewhere"), h.path("worktrees")).unwrap();
    let args = ["--mode", "direct-PR", "--intent", "Do X.", "--spec", "Y."];
    h.fm("brief")
        .args(["t1", "webapp"])
        .args(args)
        .stdout(written(&h, "t1", "ship, mode=direct-PR"))
        .run();
    let want = format!(
        "`pwd -P` and `git rev-parse --show-toplevel`. Both must print `{}`.",
        h.path("elsewhere/t1").display()
    );
    assert!(brief(&h, "t1").contains(&want), "{}", brief(&h, "t1"));
    // The same through the config override, with a not-yet-existing tail.
    std::fs::create_dir(h.path("real")).unwrap();
    std::os::unix::fs::symlink(h.path("real"), h.path("via")).unwrap();
    h.fm("brief")
        .env("FM_PATHS_WORKTREES", h.path("via/wt"))
        .args(["t2", "webapp"])
        .args(args)
        .stdout(written(&h, "t2", "ship, mode=direct-PR"))
        .run();
    let b = brief(&h, "t2");
    assert!(
        b.contains(&format!("print `{}`.", h.path("real/wt/t2").display())),
        "{b}"
    );
    assert!(!b.contains("/via/"), "{b}");
}

#[test]
fn headings_in_the_captains_words_are_escaped_not_refused() {
    let h = TestHome::new();
    h.fm("brief")
        .args([
            "t1",
            "webapp",
            "--mode",
            "local-only",
            "--intent",
            "# Background\nLogin is slow.\n\n## Ask\nMake it fast.\n### Detail\n```\n# a shell comment\n```",
            "--spec",
            "# Plan\nProfile first.",
            "--mission",
            "# Speed up login.",
        ])
        .stdout(written(&h, "t1", "ship, mode=local-only")).run();
    let b = brief(&h, "t1");
    assert!(
        b.contains("## Captain's intent\n\n\\# Background\nLogin is slow.\n\n\\## Ask\nMake it fast.\n### Detail\n```\n# a shell comment\n```\n\n## Firstmate spec\n\n\\# Plan\nProfile first.\n\n## Mission\n\n\\# Speed up login.\n"),
        "{b}"
    );
    h.fm("brief")
        .args(["--check", "t1"])
        .stdout(checked(&h, "t1"))
        .run();
    h.fm("brief")
        .args([
            "sm",
            "--secondmate",
            "--no-projects",
            "--charter",
            "# Keep CI green\nalways",
        ])
        .stdout(written(&h, "sm", "secondmate"))
        .run();
    assert!(brief(&h, "sm").contains("# Charter\n\n\\# Keep CI green\nalways\n"));
    h.fm("brief")
        .args(["--check", "sm"])
        .stdout(checked(&h, "sm"))
        .run();
}

#[test]
fn a_filled_brief_its_own_check_would_refuse_is_never_written() {
    let h = TestHome::new();
    let before = h.tree();
    h.fm("brief")
        .args([
            "t1",
            "demo",
            "--mode",
            "local-only",
            "--intent",
            "see:\n```\nunclosed fence",
            "--spec",
            "do it",
        ])
        .status(2)
        .stderr_has("--intent opens a ``` code fence it never closes")
        .run();
    assert_eq!(h.tree(), before);
    h.fm("brief")
        .args([
            "t1",
            "demo",
            "--mode",
            "local-only",
            "--intent",
            "see:\n```\nclosed\n```\nfine",
            "--spec",
            "do it",
        ])
        .stdout(written(&h, "t1", "ship, mode=local-only"))
        .run();
    h.fm("brief")
        .args(["--check", "t1"])
        .stdout(checked(&h, "t1"))
        .run();
}

/// Spawn copied kind, mode, repo and branch into meta, and the gate reads
/// the mode there: a `--force` that changes them must change meta too.
#[test]
fn reapply_brings_meta_in_line_with_the_new_brief() {
    let h = TestHome::new();
    // The notice after a re-apply names why no worker was told.
    let write = |args: &[&str], force: bool| {
        let mut c = h.fm("brief").args(args);
        if force {
            c = c.arg("--force").stdout_regex(
                r"written: /\S+/data/t[12]/brief\.md \((ship, mode=[A-Za-z-]+|scout)\)\nhistory: /\S+/brief\.history/\d{3}\.md\nnotice: no live worker notified \((pane %7 is gone|no pane recorded)\)\n",
            );
        } else {
            c = c.stdout_regex(r"written: /\S+/data/t[12]/brief\.md \(ship, mode=local-only\)\n");
        }
        c.run();
    };
    write(
        &[
            "t1",
            "webapp",
            "--mode",
            "local-only",
            "--intent",
            "i",
            "--spec",
            "s",
        ],
        false,
    );
    h.write(
        "state/t1.meta",
        "kind=ship\nmode=local-only\nrepo=webapp\nbranch=fm/t1\npane=%7\nspawn_gen=2\n",
    );
    write(
        &[
            "t1",
            "api",
            "--mode",
            "direct-PR",
            "--branch-prefix",
            "wk/",
            "--intent",
            "i",
            "--spec",
            "s",
        ],
        true,
    );
    let meta = String::from_utf8(h.read("state/t1.meta")).unwrap();
    assert_eq!(
        meta,
        "kind=ship\nmode=direct-PR\nrepo=api\nbranch=wk/t1\npane=%7\nspawn_gen=2\n"
    );
    write(
        &["t1", "api", "--scout", "--intent", "i", "--spec", "s"],
        true,
    );
    let meta = String::from_utf8(h.read("state/t1.meta")).unwrap();
    assert_eq!(meta, "kind=scout\nrepo=api\npane=%7\nspawn_gen=2\n");
    // A brief for a task that was never spawned creates no meta.
    write(
        &[
            "t2",
            "api",
            "--mode",
            "local-only",
            "--intent",
            "i",
            "--spec",
            "s",
        ],
        false,
    );
    write(
        &[
            "t2",
            "api",
            "--mode",
            "direct-PR",
            "--intent",
            "i",
            "--spec",
            "s",
        ],
        true,
    );
    assert!(!h.exists("state/t2.meta"));
}

#[test]
fn a_far_install_takes_only_a_brief_of_a_known_task_and_keeps_history() {
    // The far side of a brief re-applied on the captain's side: `fm far`
    // with an install request, the brief as its body.
    let install = |h: &TestHome, id: &str, key: &str, force: bool, text: &str| {
        h.fm("fm").arg("far").stdin(format!(
            "{{\"key\":\"{key}\",\"task\":\"{id}\",\"op\":\"brief\",\"request\":{{\"change\":\"install\",\"force\":{force}}}}}\n{text}"
        ))
    };
    let h = TestHome::new();
    h.fm("brief")
        .args([
            "t1",
            "demo",
            "--mode",
            "local-only",
            "--intent",
            "a",
            "--spec",
            "b",
        ])
        .stdout_has("written: ")
        .run();
    let mine = h.read_string("data/t1/brief.md");
    // Not a brief, another task's brief, a task this home does not know:
    // each refused, nothing written.
    for (n, (id, stdin, code, err)) in [
        (
            "t1",
            "no frontmatter\n".to_string(),
            2,
            "the brief on stdin has no frontmatter",
        ),
        (
            "t1",
            mine.replace("delegatee: t1", "delegatee: t2"),
            2,
            "the brief on stdin is for task t2, not t1",
        ),
        (
            "t9",
            mine.replace("delegatee: t1", "delegatee: t9"),
            1,
            "unknown task t9 on this host",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        install(&h, id, &format!("r.{n}"), false, &stdin)
            .status(code)
            .stdout_has(err)
            .stderr("")
            .run();
    }
    assert!(!h.exists("data/t1/brief.history"));
    assert!(!h.exists("data/t9"));
    // A brief of this task replaces the old one into history, once per key.
    let new = mine.replace("\na\n", "\nchanged\n");
    assert_ne!(new, mine);
    // Without --force an existing brief stays.
    install(&h, "t1", "r.9", false, &new)
        .status(1)
        .stdout_has("already exists")
        .stderr("")
        .run();
    assert_eq!(h.read_string("data/t1/brief.md"), mine);
    for _ in 0..2 {
        let r = install(&h, "t1", "k.1", true, &new)
            .stdout_json()
            .stderr("")
            .run()
            .json();
        assert_eq!(
            (&r["action"], &r["kind"], &r["mode"]),
            (&"written".into(), &"ship".into(), &"local-only".into()),
            "{r}"
        );
        assert!(
            r["path"].as_str().unwrap().ends_with("/data/t1/brief.md"),
            "{r}"
        );
        assert!(
            r["history"]
                .as_str()
                .unwrap()
                .ends_with("/data/t1/brief.history/001.md"),
            "{r}"
        );
        assert_eq!(r["notice"], "no live worker notified (no pane recorded)");
    }
    assert_eq!(h.read_string("data/t1/brief.md"), new);
    assert_eq!(h.read_string("data/t1/brief.history/001.md"), mine);
    assert!(!h.exists("data/t1/brief.history/002.md"));
}

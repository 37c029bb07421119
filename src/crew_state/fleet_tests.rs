//! The fleet view pinned: one fleet — real git repositories in every
//! layout the file reader meets or hands back to git, live tmux panes
//! drawing real harness screens, dead, gone and shell panes, run records,
//! `done` ships pushed and not — must read as its snapshots, byte for byte
//! as `--json` (what differs from run to run masked), through a one-view
//! reader and through a kept reader frame after frame. The snapshots were
//! taken when the view was checked against the plain implementation it
//! replaced.

use std::path::{Path, PathBuf};

use super::{FleetReader, Row};
use crate::config::Config;
use crate::home::Home;

#[path = "fleet_fixture_tests.rs"]
mod fixture;
#[path = "fleet_server_tests.rs"]
mod server;

use fixture::{Fleet, build, git};
use server::Server;

fn new_rows(reader: &mut FleetReader, home: &Home, cfg: &Config, now: u64) -> Vec<Row> {
    let mut rows = Vec::new();
    reader
        .fleet(home, cfg, now, &mut |r| {
            rows.push(r);
            Ok(())
        })
        .unwrap();
    rows
}

fn json(rows: &[Row]) -> String {
    serde_json::to_string_pretty(rows).unwrap()
}

/// The fleet view's `--json` pinned as snapshot `name`, with what differs
/// from run to run masked: the temporary root, commit ids, pane ids, the
/// tmux socket's process id, times and ages.
/// Without tmux (a run that does not require it) the fleet has no panes
/// and nothing is pinned.
fn pin(name: &str, tmux: bool, root: &Path, json: &str) {
    if !tmux {
        return;
    }
    let text = json.replace(root.to_str().unwrap(), "[ROOT]");
    let filters = vec![
        (r#""age_secs": [0-9]+"#, r#""age_secs": "[AGE]""#),
        (r"fm-test-equiv-[0-9]+", "fm-test-equiv-[PID]"),
        (r"\b[0-9a-f]{40}\b", "[COMMIT]"),
        (r"\b[0-9a-f]{7,12}\b", "[SHORT]"),
        (r"%[0-9]+", "%[PANE]"),
        (r"\b1[7-9][0-9]{8}\b", "[TIME]"),
        (
            r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z",
            "[STAMP]",
        ),
    ];
    insta::with_settings!({ filters => filters, prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(name, text);
    });
}

/// The states the fixture is meant to show, so the comparison is not
/// between two equally empty answers.
fn expect_states(rows: &[Row], tmux: bool) {
    let state = |id: &str| {
        let r = rows
            .iter()
            .find(|r| r.id == id)
            .unwrap_or_else(|| panic!("no row {id}"));
        format!("{} {} {}", r.state.as_str(), r.source.as_str(), r.detail)
    };
    assert_eq!(state("run-ok"), "working run validating (running)");
    assert_eq!(state("run-other"), "working status-log on it");
    assert_eq!(state("run-ahead"), "parked run parked at review: 1 finding");
    assert_eq!(state("run-stale"), "parked status-log which?");
    assert_eq!(
        state("done-pushed"),
        "done status-log PR https://example.invalid/o/r/pull/1"
    );
    assert!(state("done-unpushed").starts_with("blocked status-log named head "));
    assert_eq!(
        state("done-local"),
        "done status-log ready in branch fm/done-local"
    );
    assert!(state("done-elsewhere").contains("unreachable outside the worker copy"));
    assert_eq!(state("done-handoff"), "done status-log parser rewritten");
    assert!(state("done-green").starts_with("done status-log"));
    assert_eq!(state("scout-done"), "done status-log found it");
    assert!(state("brief-kind").starts_with("done status-log"));
    assert_eq!(state("wt-gone"), "unknown none worktree gone (torn down?)");
    assert!(
        state("wt-plain").contains("not a git repository"),
        "{}",
        state("wt-plain")
    );
    assert!(state("wt-nested").contains("not a git repository"));
    assert!(state("detached").starts_with("blocked"));
    assert!(
        state("symref").starts_with("failed run run failed"),
        "{}",
        state("symref")
    );
    assert!(
        state("moved").contains("not a git repository"),
        "{}",
        state("moved")
    );
    assert_eq!(state("packed"), "working run validating (running)");
    assert!(state("packed-unpushed").starts_with("blocked"));
    assert!(state("lone").starts_with("blocked"));
    assert!(state("lone-local").starts_with("done"));
    if !tmux {
        return;
    }
    assert_eq!(state("claude-idle"), "working status-log on it");
    assert_eq!(state("claude-busy"), "working pane busy (screen)");
    assert_eq!(state("claude-busy-twin"), "working pane busy (screen)");
    assert_eq!(state("codex-idle"), "parked status-log which db");
    assert_eq!(state("codex-busy"), "working pane busy (screen)");
    assert_eq!(state("codex-exited"), "exited pane agent exited");
    assert_eq!(state("claude-hook-busy"), "working pane busy (stop-hook)");
    assert_eq!(state("shell-exited"), "exited pane agent exited");
    assert_eq!(state("dead"), "failed status-log crashed");
    assert_eq!(state("gone"), "exited pane pane gone");
    assert_eq!(state("no-harness"), "idle pane agent alive, no status yet");
    assert_eq!(state("no-server"), "exited pane pane gone");
    assert!(state("gone-done").starts_with("blocked status-log named head "));
}

/// The rows a fresh one-view reader reads.
fn one_view(home: &Home, cfg: &Config, now: u64) -> Vec<Row> {
    new_rows(&mut FleetReader::new(), home, cfg, now)
}

#[test]
fn the_fleet_view_reads_as_pinned() {
    let server = Server::start("equiv");
    let f = Fleet::new();
    build(&f, server.as_ref());
    let now = crate::clock::now();
    let one = one_view(&f.home, &f.cfg, now);
    expect_states(&one, server.is_some());
    pin("fleet_view", server.is_some(), &f.root, &json(&one));
    // A kept reader, frame after frame: the first reads everything, a
    // frame long enough after the files were written reuses them.
    let mut kept = FleetReader::kept();
    assert_eq!(json(&new_rows(&mut kept, &f.home, &f.cfg, now)), json(&one));
    let tasks = one.len();
    assert_eq!(kept.stats().reread, tasks);
    let later = json(&one_view(&f.home, &f.cfg, now + 5));
    pin("fleet_view_later", server.is_some(), &f.root, &later);
    // Enough frames for every file to be watched, so the changes below
    // are seen through the file events as well as the looks.
    for _ in 0..4 {
        assert_eq!(json(&new_rows(&mut kept, &f.home, &f.cfg, now + 5)), later);
    }
    assert!(kept.stats().reread < tasks / 4, "{:?}", kept.stats());
    // Push the unpushed ship, tear a worktree down, end a run, append a
    // line: the next frames see each change.
    let wt = f.root.join("wt/done-unpushed");
    git(&wt, &["push", "-q", "origin", "fm/done-unpushed"]);
    std::fs::remove_dir_all(f.root.join("wt/scout-done")).unwrap();
    f.state("run-ok.run", "status=passed\nbranch=fm/run-ok\nhead=0\n");
    let paused = crate::TaskId::parse("paused").unwrap();
    crate::fsx::append_line(&f.home.status(&paused), b"working: back\n").unwrap();
    let changed = json(&one_view(&f.home, &f.cfg, now + 10));
    pin("fleet_view_changed", server.is_some(), &f.root, &changed);
    for _ in 0..2 {
        assert_eq!(
            json(&new_rows(&mut kept, &f.home, &f.cfg, now + 10)),
            changed
        );
    }
    let rows = new_rows(&mut kept, &f.home, &f.cfg, now + 10);
    let state = |id: &str| rows.iter().find(|r| r.id == id).unwrap().state;
    assert_eq!(
        state("done-unpushed"),
        super::State::Done,
        "the push is seen"
    );
    assert_eq!(
        state("scout-done"),
        super::State::Unknown,
        "the teardown is seen"
    );
    assert_eq!(
        state("paused"),
        super::State::Working,
        "the new line is seen"
    );
}

/// The view captures screens without `-e` (`tmux::batch`): every captured
/// harness screen, drawn in a real pane, must read the same plain as a
/// capture with escapes does — line for line, and to the dialog and busy
/// rules of every built-in profile.
#[test]
fn plain_captures_read_as_escaped_ones() {
    use crate::tmux::pane::Pane;
    use crate::tmux::screen::{Screen, screen_busy, screen_dialog};
    let Some(server) = Server::start("plain") else {
        return;
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/screens");
    let mut names: Vec<String> = Vec::new();
    for harness in std::fs::read_dir(&dir).unwrap() {
        let harness = harness.unwrap().path();
        if !harness.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&harness).unwrap() {
            let file = file.unwrap().file_name().into_string().unwrap();
            if let Some(stem) = file.strip_suffix(".ansi.txt") {
                let h = harness.file_name().unwrap().to_string_lossy();
                names.push(format!("{h}/{stem}"));
            }
        }
    }
    names.sort();
    assert!(names.len() >= 20, "{names:?}");
    let sleep = PathBuf::from("sleep");
    let panes: Vec<String> = names.iter().map(|n| server.screen(n, &sleep)).collect();
    // Every pane has drawn its screen once its program runs.
    for p in &panes {
        let mut ok = false;
        for _ in 0..250 {
            if server.command_of(p) == "sleep" {
                ok = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(ok, "pane {p} never drew");
    }
    let refs: Vec<&str> = panes.iter().map(String::as_str).collect();
    let snap = crate::tmux::batch::snapshot(&server.tmux, false, &refs, 0).unwrap();
    let profiles: Vec<_> = crate::harness::BUILTINS
        .iter()
        .filter_map(|n| crate::harness::builtin(n))
        .collect();
    let mut busy_seen = 0;
    let mut dialogs_seen = 0;
    let mut with_escapes = 0;
    for (name, pane) in names.iter().zip(&panes) {
        let plain = &snap
            .screens
            .get(pane)
            .unwrap_or_else(|| panic!("{name}"))
            .text;
        let escaped = Pane::capture(&server.tmux, pane, 0).unwrap();
        with_escapes += usize::from(plain != &escaped);
        assert_eq!(
            Screen::parse_text(plain).plain(),
            Screen::parse(&escaped).plain(),
            "{name}"
        );
        for p in &profiles {
            let dialog = screen_dialog(Some(p), plain);
            assert_eq!(
                dialog,
                screen_dialog(Some(p), &escaped),
                "{name} {}",
                p.name
            );
            let busy = screen_busy(Some(p), plain);
            assert_eq!(busy, screen_busy(Some(p), &escaped), "{name} {}", p.name);
            dialogs_seen += usize::from(dialog.is_some());
            busy_seen += usize::from(busy);
        }
    }
    // The rules did read something on these screens, and some of them
    // had escapes for the plain capture to leave out.
    assert!(
        busy_seen > 0 && dialogs_seen > 0 && with_escapes > 0,
        "{busy_seen} {dialogs_seen} {with_escapes}"
    );
}

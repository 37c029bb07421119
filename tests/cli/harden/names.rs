//! Class 1: names the home reserves. A task id that collides with a name
//! the layout uses (`data/board/` is the task board) is refused by every
//! tool that takes an id, in any letter case, before anything is touched.

use crate::harness::TestHome;

/// A home with a board task and an ordinary task `t1`.
fn home_with_board() -> TestHome {
    let h = TestHome::new();
    h.fm("board")
        .args(["add", "Keep me"])
        .stdout("T-001 pending\n")
        .run();
    h.write("state/t1.meta", "kind=ship\n");
    h
}

/// Every tool that names a task, with the id in its place.
fn commands(id: &str) -> Vec<(&'static str, Vec<String>)> {
    let v = |a: &[&str]| a.iter().map(|s| s.replace("ID", id)).collect::<Vec<_>>();
    vec![
        ("control", v(&["ID", "teardown", "--force"])),
        ("control", v(&["ID", "interrupt"])),
        ("status", v(&["ID", "working", "x"])),
        ("status", v(&["ID"])),
        ("status", v(&["ID", "--busy"])),
        ("send", v(&["ID", "hello"])),
        ("ack", v(&["ID", "1"])),
        ("ack", v(&["ID", "--list"])),
        (
            "brief",
            v(&[
                "ID",
                "webapp",
                "--mode",
                "local-only",
                "--intent",
                "A.",
                "--spec",
                "B.",
            ]),
        ),
        ("brief", v(&["--revoke", "ID"])),
        ("brief", v(&["--respond", "ID", "--status", "success"])),
        ("brief", v(&["t2", "webapp", "--scout", "--parent", "ID"])),
        ("crew-state", v(&["ID"])),
        ("crew-state", v(&["--trace", "ID"])),
        ("dod", v(&["--check", "ID"])),
        ("board", v(&["add", "x", "--assignee", "ID"])),
    ]
}

#[test]
fn a_task_named_board_is_refused_by_every_tool_in_any_case() {
    for id in ["board", "Board", "BOARD"] {
        for (tool, args) in commands(id) {
            let h = home_with_board();
            let before = h.tree();
            let board = h.read("data/board/T-001.task");
            h.fm(tool)
                .args(&args)
                .status(2)
                .stderr_has(&format!("invalid task id \"{id}\""))
                .stderr_has("reserved")
                .run();
            assert_eq!(h.tree(), before, "{tool} {args:?} changed the home");
            assert_eq!(h.read("data/board/T-001.task"), board, "{tool} {args:?}");
        }
    }
}

#[test]
fn every_name_the_layout_puts_in_data_or_state_is_reserved() {
    let h = TestHome::new();
    for id in ["archive", "events", "wakes", "Events"] {
        h.fm("status")
            .args([id, "working", "x"])
            .status(2)
            .stderr_has("reserved")
            .run();
    }
    assert!(!h.exists("state/archive.status") && !h.exists("state/events.status"));
    // Names that only contain a reserved word stay ordinary ids.
    for id in ["board-2", "my.board", "wakes1"] {
        h.fm("status").args([id, "working", "x"]).run();
    }
}

#[test]
fn a_reserved_meta_on_disk_is_not_a_task_of_the_fleet() {
    let h = home_with_board();
    h.write("state/board.meta", "kind=ship\n");
    let out = h.fm("crew-state").arg("--json").stdout_json().run();
    let ids: Vec<String> = out
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, ["t1"]);
}

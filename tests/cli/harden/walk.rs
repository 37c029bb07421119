//! Class 2: a symlink anywhere below the home. Each directory the layout
//! uses is moved out of the home and replaced by a symlink to it, so a
//! tool that followed the link would find the whole tree there and work
//! on it. Every tool that reaches through the link refuses with exit 1,
//! naming the link, and neither the home nor the tree outside changes.

use std::path::Path;

use super::{assert_nothing_partial, fm, seed, snapshot};

/// Every tool, with the arguments that make it reach each kind of file.
fn commands() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        ("status", vec!["t1", "working", "x"]),
        ("status", vec!["t1"]),
        ("status", vec!["t1", "--busy"]),
        ("status", vec!["t1", "--log"]),
        ("send", vec!["t1", "hello"]),
        ("ack", vec!["t1", "1"]),
        ("ack", vec!["t1", "--list"]),
        ("ack", vec!["t1", "--read", "1"]),
        (
            "brief",
            vec![
                "t1",
                "webapp",
                "--mode",
                "local-only",
                "--intent",
                "A.",
                "--spec",
                "B.",
                "--force",
            ],
        ),
        ("brief", vec!["--revoke", "t1"]),
        ("brief", vec!["--respond", "t1", "--status", "success"]),
        ("brief", vec!["--check", "t1"]),
        ("crew-state", vec!["t1"]),
        ("control", vec!["t1", "teardown", "--force"]),
        ("board", vec!["add", "x"]),
        ("board", vec!["list"]),
        ("board", vec!["show", "T-001"]),
        ("board", vec!["claim", "T-001", "--as", "t1"]),
    ]
}

/// Moves `rel` out of a seeded home, puts a symlink to it in its place,
/// and runs `cmds`: each must exit 1 naming the link, and change nothing
/// in the home or outside it.
#[track_caller]
fn refused_everywhere(rel: &str, cmds: &[(&str, Vec<&str>)]) {
    let tmp = tempfile::tempdir().unwrap();
    let home = seed(tmp.path());
    std::fs::write(home.join("state/t1.meta"), "kind=ship\nmode=local-only\n").unwrap();
    // An earlier teardown's entry, so the archive has something to lose.
    std::fs::create_dir_all(home.join("state/archive/t0-1")).unwrap();
    std::fs::write(home.join("state/archive/t0-1/t0.meta"), "kind=ship\n").unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let link = home.join(rel);
    let target = outside.join(Path::new(rel).file_name().unwrap());
    std::fs::rename(&link, &target).unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let outside_before = snapshot(&outside);
    assert!(outside_before.len() > 1, "{rel}: nothing moved outside");
    let says = format!("refusing to follow symlink ({})", link.display());
    for (tool, args) in cmds {
        let what = format!("{rel}: {tool} {args:?}");
        let before = snapshot(&home);
        let out = fm(&home, tool)
            .args(args)
            .status_any()
            .stdout_any()
            .stderr_any()
            .run();
        // fm-crew-state reports a task it cannot read as `unknown`
        // (rule 1, `unreadable: <why>`) and exits 0; every other tool, and
        // the fleet view that cannot list `state/`, refuses with exit 1.
        let (code, said) = if *tool == "crew-state" && !args.is_empty() {
            (0, out.stdout().contains(&format!("unreadable: {says}")))
        } else {
            (1, out.stderr().contains(&says))
        };
        assert!(
            out.code == code && said,
            "{what}: exit {} with stdout {:?} stderr {:?}, expected exit {code} and {says:?}",
            out.code,
            out.stdout(),
            out.stderr()
        );
        assert_eq!(
            snapshot(&outside),
            outside_before,
            "{what} changed the tree outside the home"
        );
        assert_nothing_partial(&what, &before, &snapshot(&home));
        assert_eq!(
            std::fs::read_link(&link).unwrap(),
            target,
            "{what}: link moved"
        );
    }
}

/// The commands of [`commands`] whose tool and first argument are listed.
fn only(pick: &[(&str, &str)]) -> Vec<(&'static str, Vec<&'static str>)> {
    commands()
        .into_iter()
        .filter(|(tool, args)| pick.iter().any(|(t, a)| t == tool && args[0] == *a))
        .collect()
}

#[test]
fn symlinked_state_is_refused_by_every_tool() {
    let mut cmds = only(&[
        ("status", "t1"),
        ("send", "t1"),
        ("ack", "t1"),
        ("crew-state", "t1"),
        ("control", "t1"),
    ]);
    cmds.push(("crew-state", vec![]));
    cmds.push(("watch", vec!["--once"]));
    cmds.push(("watch", vec!["--drain"]));
    cmds.push(("watch", vec!["--status"]));
    refused_everywhere("state", &cmds);
}

#[test]
fn symlinked_data_is_refused_by_every_tool() {
    let cmds = only(&[
        ("brief", "t1"),
        ("brief", "--revoke"),
        ("brief", "--respond"),
        ("brief", "--check"),
        ("send", "t1"),
        ("control", "t1"),
        ("board", "add"),
        ("board", "list"),
        ("board", "show"),
        ("board", "claim"),
    ]);
    refused_everywhere("data", &cmds);
}

#[test]
fn symlinked_task_data_is_refused_by_every_tool() {
    let cmds = only(&[
        ("brief", "t1"),
        ("brief", "--revoke"),
        ("brief", "--respond"),
        ("brief", "--check"),
        ("send", "t1"),
        ("control", "t1"),
    ]);
    refused_everywhere("data/t1", &cmds);
}

#[test]
fn symlinked_board_is_refused_by_every_board_command() {
    let mut cmds = only(&[
        ("board", "add"),
        ("board", "list"),
        ("board", "show"),
        ("board", "claim"),
    ]);
    cmds.push(("board", vec!["dispatch"]));
    refused_everywhere("data/board", &cmds);
}

#[test]
fn symlinked_inbox_is_refused_by_every_tool() {
    let cmds = only(&[("send", "t1"), ("ack", "t1"), ("control", "t1")]);
    refused_everywhere("state/t1.inbox", &cmds);
}

#[test]
fn symlinked_archive_is_refused_by_teardown_before_anything_moves() {
    refused_everywhere("state/archive", &only(&[("control", "t1")]));
}

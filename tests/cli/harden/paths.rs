//! Class 3: generated commands and typed lines are injection-proof. A home
//! or worktree path holding a control character is refused, at `fm init`
//! and at every resolution (flag, `FM_HOME`, ancestor search), before any
//! tool writes a line naming it; the crontab line quotes the home exactly.

use crate::harness::{Cmd, TestHome, bin};

/// Homes whose names a hostile user could pick: a newline (a second cron
/// line), a carriage return, an escape, a tab, DEL.
const HOSTILE: &[&str] = &[
    "h\n* * * * * touch /tmp/owned #",
    "h\rx",
    "h\x1b[2Jx",
    "h\tx",
    "h\x7fx",
];

/// A real home (config and all) at `parent/<name>`, made by hand as
/// `fm init` refuses to make it.
fn hand_made_home(parent: &std::path::Path, name: &str) -> std::path::PathBuf {
    let root = parent.join(name);
    for d in ["config", "data", "state"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("config/firstmate.toml"), "").unwrap();
    root
}

#[test]
fn fm_init_refuses_a_home_path_with_a_control_character() {
    let base = TestHome::bare();
    for name in HOSTILE {
        let dir = base.root().join(name);
        Cmd::new(bin("fm"))
            .args([std::ffi::OsStr::new("init"), dir.as_os_str()])
            .status(1)
            .stderr_has("fm: error: home path")
            .stderr_has("holds the control character U+")
            .run();
        assert!(!dir.exists(), "{name:?}: fm init created {}", dir.display());
    }
}

#[test]
fn every_resolution_refuses_a_home_with_a_control_character() {
    let base = TestHome::bare();
    for name in HOSTILE {
        let root = hand_made_home(&base.root(), name);
        // FM_HOME, as cron would pass it.
        Cmd::new(bin("fm-watch"))
            .env("FM_HOME", &root)
            .arg("--crontab")
            .status(1)
            .stdout("")
            .stderr_has("holds the control character U+")
            .run();
        // --home.
        Cmd::new(bin("fm-status"))
            .args([
                std::ffi::OsStr::new("--home"),
                root.as_os_str(),
                std::ffi::OsStr::new("t1"),
            ])
            .status(1)
            .stdout("")
            .stderr_has("holds the control character U+")
            .run();
        // The ancestor search from inside the home.
        Cmd::new(bin("fm-send"))
            .current_dir(root.join("data"))
            .args(["t1", "--quiet", "hi"])
            .status(1)
            .stdout("")
            .stderr_has("holds the control character U+")
            .run();
        assert!(
            !root.join("state/t1.inbox").exists(),
            "{name:?}: a message was written into the refused home"
        );
    }
}

#[test]
fn a_worktrees_path_with_a_control_character_is_a_config_error() {
    let h = TestHome::new();
    h.write(
        "config/firstmate.toml",
        "[paths]\nworktrees = \"wt\\n* * * * * touch /tmp/owned\"\n",
    );
    h.fm("crew-state")
        .status(3)
        .stdout("")
        .stderr_has("firstmate.toml:2: paths.worktrees: holds the control character U+000A")
        .run();
    h.write("config/firstmate.toml", "");
    h.fm("crew-state")
        .env("FM_PATHS_WORKTREES", "wt\x1b]52;c;eA==\x07")
        .status(3)
        .stdout("")
        .stderr_has("paths.worktrees: holds the control character U+001B")
        .run();
}

#[test]
fn the_crontab_line_names_the_home_exactly() {
    let base = TestHome::bare();
    // Quotes, `$`, `%`, a backslash before `%`, spaces: all printable.
    let root = hand_made_home(&base.root(), r"it's $HOME 50% a\%b");
    let out = Cmd::new(bin("fm-watch"))
        .env("FM_HOME", &root)
        .arg("--crontab")
        .stdout_regex(r"^\* \* \* \* \* FM_HOME=.* PATH=.* --once >>.*watch\.log' 2>&1; .*\n$")
        .run();
    let line = out.stdout();
    let cmd = line
        .trim_end()
        .strip_prefix("* * * * * ")
        .expect("five time fields");
    // Undo cron's `%` handling (`\%` is `%`), then let sh read the
    // assignment: it must yield the home, byte for byte.
    let unescaped = cmd.replace(r"\%", "%");
    // The home holds no ` PATH=`, so the assignment ends where PATH's begins.
    let (assign, _rest) = unescaped
        .split_once(" PATH=")
        .expect("FM_HOME=… PATH=… program");
    let got = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{assign} printenv FM_HOME"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(got.stdout).unwrap(),
        format!("{}\n", root.display()),
        "{line}"
    );
}

#[test]
fn a_meta_worktree_with_a_control_character_is_refused_where_it_is_read() {
    for wt in ["/tmp/wt\x1b[2Jx", "/tmp/wt\tx", "/tmp/wt\x7fx"] {
        let h = TestHome::new();
        h.write("state/t1.meta", format!("kind=ship\nworktree={wt}\n"));
        let before = h.tree();
        let says = "worktree path /tmp/wt";
        h.fm("control")
            .args(["t1", "teardown", "--force"])
            .status(1)
            .stdout("")
            .stderr_has(says)
            .stderr_has("holds the control character U+")
            .run();
        h.fm("control")
            .args(["t1", "interrupt"])
            .status(1)
            .stdout("")
            .stderr_has("holds the control character U+")
            .run();
        // The fleet shows the task's error instead of acting on the path.
        let out = h.fm("crew-state").arg("--json").stdout_json().run();
        let row = &out.json()[0];
        assert!(
            row.to_string().contains("holds the control character U+"),
            "{wt:?}: {row}"
        );
        let after: Vec<String> = h
            .tree()
            .into_iter()
            .filter(|p| !p.ends_with(".lock"))
            .collect();
        assert_eq!(after, before, "{wt:?}: the home changed (lock files aside)");
    }
}

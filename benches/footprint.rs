//! Peak memory (max RSS, from `wait4`) and wall time of each binary for a
//! representative invocation on a 1,000-task home, and the wall time of
//! `fm demo` (skipped when tmux or git is missing).
//! Run with `cargo bench --bench footprint`.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_macros,
    reason = "tests and benches set up homes and print as they like; clippy.toml's rules are the library's"
)]

#[path = "common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TASKS: usize = 1000;

fn bin(name: &str) -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_fm"))
        .parent()
        .unwrap()
        .join(name)
}

/// Runs `cmd` to the end: (wall time, max RSS in KiB, exit code).
#[allow(clippy::zombie_processes)]
fn measure(mut cmd: Command) -> (Duration, i64, i32) {
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let t = Instant::now();
    let child = cmd.spawn().expect("spawn");
    let mut status = 0;
    // SAFETY: wait4 on our own child's pid with valid out-pointers.
    let rss = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::wait4(child.id().cast_signed(), &raw mut status, 0, &raw mut ru);
        ru.ru_maxrss
    };
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (t.elapsed(), rss, code)
}

fn fixture(root: &Path) {
    for d in ["config", "data", "state"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("config/firstmate.toml"), "").unwrap();
    for i in 0..TASKS {
        let id = format!("task-{i:04}");
        let state = root.join("state");
        std::fs::write(state.join(format!("{id}.meta")), "kind=ship\n").unwrap();
        let mut log = String::new();
        for l in 0..50 {
            log.push_str(&format!("working [at={}]: step {l}\n", 1_700_000_000 + l));
        }
        std::fs::write(state.join(format!("{id}.status")), log).unwrap();
        let inbox = state.join(format!("{id}.inbox"));
        std::fs::create_dir_all(inbox.join("handled")).unwrap();
        std::fs::write(
            inbox.join("001.msg"),
            "schema=fm-inbox.v1\nat=2026-01-01T00:00:00Z\nfrom=captain\n--\nhello\n",
        )
        .unwrap();
    }
    for i in 0..100 {
        let st = Command::new(bin("fm-board"))
            .arg("--home")
            .arg(root)
            .args(["add", &format!("board task {i}")])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
    }
}

fn main() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().canonicalize().unwrap();
    fixture(&root);
    let r = root.to_str().unwrap();
    let cases: Vec<(&str, &str, Vec<&str>)> = vec![
        (
            "fm-status",
            "append a line",
            vec!["task-0001", "working", "step"],
        ),
        ("fm-status", "show a 50-line log", vec!["task-0001"]),
        (
            "fm-send",
            "--quiet to a pane-less task",
            vec!["task-0002", "--quiet", "hello"],
        ),
        ("fm-ack", "acknowledge one record", vec!["task-0003", "1"]),
        (
            "fm-brief",
            "write a filled ship brief",
            vec![
                "brief-task",
                "webapp",
                "--mode",
                "direct-PR",
                "--intent",
                "Make login fast.",
                "--spec",
                "Profile, fix.",
            ],
        ),
        (
            "fm-dod",
            "--check a task with no worktree (refused)",
            vec!["--check", "task-0004"],
        ),
        ("fm-crew-state", "fleet view, 1,000 tasks", vec![]),
        ("fm-board", "list 100 tasks", vec!["list"]),
        ("fm-watch", "--once over 1,000 tasks", vec!["--once"]),
        ("fm-control", "--help", vec!["--help"]),
        ("fm-stand-in", "--help", vec!["--help"]),
        ("fm", "doctor", vec!["doctor"]),
    ];
    println!(
        "{:<14} {:<44} {:>9} {:>9} exit",
        "binary", "invocation", "max RSS", "wall"
    );
    for (i, (name, what, args)) in cases.iter().enumerate() {
        let mut c = Command::new(bin(name));
        c.env("FM_HOME", r).env_remove("FM_TMUX_SOCKET").args(args);
        // One warm-up run (page cache, lazily created files) on a sibling
        // task, so the measured run writes, acks or briefs a fresh one.
        let _ = measure({
            let mut w = Command::new(bin(name));
            w.env("FM_HOME", r).args(args.iter().map(|a| match *a {
                "brief-task" => "brief-warm".to_string(),
                a if a.starts_with("task-000") => a.replace("task-000", "task-001"),
                a => a.to_string(),
            }));
            w
        });
        let (t, rss, code) = measure(c);
        let mib = rss as f64 / 1024.0;
        println!(
            "{name:<14} {what:<44} {mib:>5.1} MiB {:>6.1} ms {code}",
            t.as_secs_f64() * 1000.0
        );
        common::fig(&format!("rss.{i}.{name}"), mib, "MiB");
        common::fig_ms(&format!("rsswall.{i}.{name}"), t);
    }

    let tools_ok = ["tmux", "git"].iter().all(|p| {
        Command::new(p)
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success())
            || Command::new(p)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
    });
    if !tools_ok {
        println!("fm demo: skipped (tmux or git missing)");
        return;
    }
    let mut c = Command::new(bin("fm"));
    c.arg("demo").env_remove("FM_HOME");
    let (t, rss, code) = measure(c);
    println!(
        "fm demo: {:.1} s wall, fm's own max RSS {:.1} MiB, exit {code}",
        t.as_secs_f64(),
        rss as f64 / 1024.0
    );
    assert_eq!(code, 0, "fm demo failed");
    common::fig("demo.secs", t.as_secs_f64(), "s");
}

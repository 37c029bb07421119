//! `fm-send` benchmarks, whole process: `--quiet` to a task with no pane
//! (record + event only), a plain send to a task with no pane, and — when
//! tmux is installed — a ring into a live pane on a private server with
//! `settle_ms`/`enter_wait_ms` set to 0, so the figure is the time spent
//! outside the configured waits. Run with `cargo bench --bench send`.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_macros,
    reason = "tests and benches set up homes and print as they like; clippy.toml's rules are the library's"
)]

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time_sends(home: &Path, id: &str, extra: &[&str], env: &[(&str, &str)], n: usize) -> Duration {
    let exe = Path::new(env!("CARGO_BIN_EXE_fm-send"));
    let runs = (0..n)
        .map(|i| {
            let mut cmd = Command::new(exe);
            cmd.arg("--home").arg(home).arg(id).args(extra);
            cmd.arg(format!("bench message {i}"));
            for (k, v) in env {
                cmd.env(k, v);
            }
            let t = Instant::now();
            let out = cmd.output().expect("run fm-send");
            let d = t.elapsed();
            assert!(out.status.success(), "{out:?}");
            d
        })
        .collect();
    median(runs)
}

fn main() {
    let home = tempfile::tempdir().expect("temp home");
    let root = home.path();
    std::fs::create_dir_all(root.join("config")).unwrap();
    std::fs::create_dir_all(root.join("state")).unwrap();
    std::fs::write(root.join("config/firstmate.toml"), "").unwrap();
    std::fs::write(root.join("state/bench.meta"), "kind=ship\n").unwrap();
    let q = time_sends(root, "bench", &["--quiet"], &[], 200);
    println!("fm-send --quiet, task with no pane (whole process): median {q:?} (200 runs)");
    common::fig_ms("send.quiet", q);
    let p = time_sends(root, "bench", &[], &[], 200);
    println!(
        "fm-send, task with no pane, doorbell no-pane (whole process): median {p:?} (200 runs)"
    );
    common::fig_ms("send.no_pane", p);

    let tmux_ok = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !tmux_ok {
        println!("live pane: skipped (tmux not installed)");
        return;
    }
    let socket = format!("fm-bench-{}", std::process::id());
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(["-L", &socket])
            .args(args)
            .output()
            .expect("tmux")
    };
    tmux(&["new-session", "-d", "-s", "bench", "-x", "200", "-y", "50"]);
    let out = tmux(&[
        "new-window",
        "-d",
        "-P",
        "-F",
        "#{pane_id}",
        "-t",
        "bench:",
        "cat",
    ]);
    let pane = String::from_utf8_lossy(&out.stdout).trim().to_string();
    std::fs::write(
        root.join("state/live.meta"),
        format!("kind=ship\npane={pane}\ntmux_socket={socket}\n"),
    )
    .unwrap();
    let env = [("FM_SEND_SETTLE_MS", "0"), ("FM_SEND_ENTER_WAIT_MS", "0")];
    let l = time_sends(root, "live", &[], &env, 50);
    println!(
        "fm-send ringing a live pane, settle/enter waits 0 (whole process): median {l:?} (50 runs)"
    );
    common::fig_ms("send.live_pane", l);
    tmux(&["kill-server"]);
}

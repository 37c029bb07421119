//! `fm top` benchmarks. Run with `cargo bench --bench top`.
//!
//! - Redraw: one frame of a 1,000-task fleet (a tenth waiting on a
//!   decision) drawn at 200×50 on ratatui's `TestBackend` — the layout,
//!   the rows in the window and the cell diff ratatui does before writing;
//!   the rows are re-sorted and re-filtered first, as after a fresh read.
//!   Median and worst of 200 frames (after 10 warm-up frames).
//! - Idle CPU: the real dashboard in a pane of a private tmux server over a
//!   home of 100 tasks, left alone for `FM_BENCH_IDLE_SECS` (default 20 s);
//!   CPU ticks of the process from `/proc`.

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

use firstmate::crew_state::{Attention, OpenDecision, Row, Source, State};
use firstmate::top::{App, Palette, view};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const NOW: u64 = 1_796_030_102;

fn rows(n: usize) -> Vec<Row> {
    (0..n)
        .map(|i| {
            let waiting = i % 10 == 0;
            let attention = waiting.then(|| Attention::Decision {
                key: format!("k{i}"),
                text: "postgres or sqlite?".into(),
                at: Some(NOW - 60),
            });
            Row {
                id: format!("task-{i:04}"),
                state: if waiting {
                    State::Parked
                } else {
                    State::Working
                },
                source: Source::StatusLog,
                detail: format!("step {i} of the plan"),
                age_secs: Some((i as u64 * 37) % 5000),
                inbox_pending: i % 3,
                open_decisions: if waiting {
                    vec![OpenDecision {
                        key: format!("k{i}"),
                        verb: "needs-decision".into(),
                        text: "postgres or sqlite?".into(),
                        at: Some(NOW - 60),
                    }]
                } else {
                    vec![]
                },
                current_at: Some(NOW - 60),
                attention,
                project: Some("shop".into()),
                pane: Some(format!("%{i}")),
                tmux_socket: String::new(),
                host: None,
                usage: None,
            }
        })
        .collect()
}

fn redraw() {
    let fleet = rows(1000);
    let mut app = App::new("/fleet");
    let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap();
    let palette = Palette { colour: true };
    let mut times = Vec::new();
    for i in 0..210u64 {
        let t = Instant::now();
        app.set_rows(fleet.clone());
        app.scroll_into_view(view::list_height(view::main_height(50)));
        term.draw(|f| view::draw(f, &app, NOW + i, palette))
            .unwrap();
        // The first frames allocate the buffers: warm-up, not counted.
        if i >= 10 {
            times.push(t.elapsed());
        }
    }
    times.sort();
    let median = times[times.len() / 2];
    let worst = times[times.len() - 1];
    println!(
        "redraw, 1,000 tasks, 200x50: median {:.3} ms, worst {:.3} ms",
        median.as_secs_f64() * 1e3,
        worst.as_secs_f64() * 1e3
    );
    common::fig_ms("top.redraw_1000", median);
    common::fig_ms("top.redraw_1000_worst", worst);
}

fn cpu_ticks(pid: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn fixture(root: &Path, n: usize) {
    for d in ["config", "data", "state"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("config/firstmate.toml"), "").unwrap();
    let now = firstmate::clock::now();
    for i in 0..n {
        let id = format!("task-{i:03}");
        std::fs::write(
            root.join(format!("state/{id}.meta")),
            "kind=secondmate\nrepo=bench\n",
        )
        .unwrap();
        let line = if i % 10 == 0 {
            format!("needs-decision [at={now}] [key=k]: which one?\n")
        } else {
            format!("working [at={now}]: step {i}\n")
        };
        std::fs::write(root.join(format!("state/{id}.status")), line).unwrap();
    }
}

fn tmux(socket: &str, args: &[&str]) -> String {
    let out = Command::new("tmux")
        .args(["-L", socket])
        .args(args)
        .output()
        .expect("tmux");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn idle_cpu() {
    let secs: u64 = std::env::var("FM_BENCH_IDLE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path(), 100);
    let socket = format!("fm-bench-top-{}", std::process::id());
    let home = format!("FM_HOME={}", dir.path().display());
    tmux(
        &socket,
        &[
            "new-session",
            "-d",
            "-x",
            "200",
            "-y",
            "50",
            "--",
            "env",
            &home,
            "TERM=xterm-256color",
            env!("CARGO_BIN_EXE_fm"),
            "top",
        ],
    );
    let pid = tmux(&socket, &["display-message", "-p", "#{pane_pid}"]);
    std::thread::sleep(Duration::from_secs(2));
    let screen = tmux(&socket, &["capture-pane", "-p"]);
    assert!(
        screen.contains("100 tasks") && screen.contains("task-000"),
        "the dashboard shows the fleet:\n{screen}"
    );
    let before = cpu_ticks(&pid);
    std::thread::sleep(Duration::from_secs(secs));
    let used = cpu_ticks(&pid) - before;
    let _ = Command::new("tmux")
        .args(["-L", &socket, "kill-server"])
        .status();
    let hz: f64 = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0);
    let pct = used as f64 / hz / secs as f64 * 100.0;
    println!("idle fm top, 100 tasks, {secs} s: {used} ticks = {pct:.3} % of a core");
    common::fig("top.idle_cpu", pct, "%");
}

fn main() {
    redraw();
    idle_cpu();
}

//! `fm serve` benchmarks, in a real browser (headless Chromium over its
//! `DevTools` protocol, the client of the browser tests). Run with
//! `cargo bench --bench serve`; Chromium must be installed
//! (`scripts/deps.sh`).
//!
//! Over a home of 100 tasks (a tenth waiting on a decision), `fm serve`
//! with five pages open on its fleet view:
//! - From a worker's `needs-decision` line to its row showing in an open
//!   page: the line is appended to the task's status log (as `fm-status`
//!   appends it) and the page's own clock notes when the decision's link
//!   appears (a `MutationObserver`); 20 decisions, one at a time, median
//!   and worst.
//! - Idle: CPU ticks of the server from `/proc` over `FM_BENCH_IDLE_SECS`
//!   (default 20 s) with the five pages' event streams open, and its peak
//!   resident memory (`VmHWM`).

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_macros,
    reason = "tests and benches set up homes and print as they like; clippy.toml's rules are the library's"
)]

#[path = "common/mod.rs"]
mod common;

#[allow(
    dead_code,
    reason = "the browser tests' client; the bench uses part of it"
)]
#[path = "../tests/cli/browser.rs"]
mod browser;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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

fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

/// A `/proc/<pid>/status` field in KiB.
fn kib(pid: u32, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

fn main() {
    let secs: u64 = std::env::var("FM_BENCH_IDLE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fixture(root, 100);
    let mut server = Command::new(env!("CARGO_BIN_EXE_fm"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("FM_HOME", root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("fm serve");
    let pid = server.id();
    let mut first = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let token_url = first.trim().to_string();
    let rest = &token_url["http://".len()..];
    let base = format!("http://{}", &rest[..rest.find('/').unwrap()]);

    let chrome = browser::Chromium::start().expect("the serve benchmark needs Chromium");
    let mut pages: Vec<browser::Page> = (0..5).map(|_| chrome.page()).collect();
    pages[0].goto(&token_url);
    for p in &mut pages[1..] {
        p.goto(&format!("{base}/"));
    }
    for p in &mut pages {
        p.wait(
            "the fleet's rows",
            30.0,
            "document.querySelectorAll('#rows tr.row').length >= 100",
        );
    }
    // The page's clock notes when each decision's link first shows.
    pages[0].eval(
        "window.__seen = {}; \
         new MutationObserver(() => { const t = Date.now(); \
           for (const a of document.querySelectorAll('#rows a.decision')) { \
             const h = a.getAttribute('href'); if (!(h in window.__seen)) window.__seen[h] = t; } }) \
         .observe(document.body, {childList: true, subtree: true, characterData: true}); \
         for (const a of document.querySelectorAll('#rows a.decision')) window.__seen[a.getAttribute('href')] = 0;",
    );
    let mut lat = Vec::new();
    for i in 0..20 {
        let id = format!("task-{:03}", i * 3 + 1);
        let key = format!("b{i}");
        let href = format!("/task/{id}/decision/{key}");
        let line = format!(
            "needs-decision [at={}] [key={key}]: which one, {i}?\n",
            firstmate::clock::now()
        );
        let t0 = now_ms();
        std::fs::OpenOptions::new()
            .append(true)
            .open(root.join(format!("state/{id}.status")))
            .unwrap()
            .write_all(line.as_bytes())
            .unwrap();
        let js = format!("window.__seen[{}]", browser::js_str(&href));
        let start = Instant::now();
        let seen = loop {
            if let Some(t) = pages[0].eval(&js).as_f64() {
                break t;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{id}'s decision never showed"
            );
            std::thread::sleep(Duration::from_millis(2));
        };
        lat.push(Duration::from_secs_f64(((seen - t0).max(0.0)) / 1000.0));
        std::thread::sleep(Duration::from_millis(200));
    }
    lat.sort();
    let median = lat[lat.len() / 2];
    let worst = *lat.last().unwrap();
    println!(
        "needs-decision line to its row in an open page, 20 decisions: median {:.1} ms, worst {:.1} ms",
        median.as_secs_f64() * 1000.0,
        worst.as_secs_f64() * 1000.0
    );
    common::fig_ms("serve.decision_to_row", median);
    common::fig_ms("serve.decision_to_row_worst", worst);

    std::thread::sleep(Duration::from_secs(2));
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(secs));
    let used = cpu_ticks(pid) - before;
    let hz: f64 = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0);
    let pct = used as f64 / hz / secs as f64 * 100.0;
    let hwm = kib(pid, "VmHWM:");
    let rss = kib(pid, "VmRSS:");
    println!(
        "idle fm serve, 100 tasks, 5 open pages, {secs} s: {used} ticks = {pct:.3} % of a core; \
         peak memory {:.1} MiB, now {:.1} MiB",
        hwm as f64 / 1024.0,
        rss as f64 / 1024.0
    );
    common::fig("serve.idle_cpu", pct, "%");
    common::fig("serve.peak_mib", hwm as f64 / 1024.0, "MiB");
    drop(pages);
    drop(chrome);
    let _ = server.kill();
    let _ = server.wait();
}

//! Status log benchmarks: folding a 10,000-line log in process, one
//! `fm-status` append as a whole process, and logs of 20,000 and 200,000
//! distinct open decisions (folded in process, shown by `fm-status` and by
//! `fm-crew-state <id>`), which show the fold is linear: ten times the
//! decisions cost about ten times the time. Run with
//! `cargo bench --bench status`.
//!
//! A tiny harness (median of repeated runs) keeps the build light; figures go
//! in BENCHMARKS.md.

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

use firstmate::status::Fold;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn log_of(n: usize) -> Vec<u8> {
    let mut s = String::new();
    for i in 0..n {
        match i % 5 {
            0 => s.push_str(&format!("working [at={}]: step {i}\n", 1_700_000_000 + i)),
            1 => s.push_str(&format!(
                "needs-decision [at={}] [key=k{}]: question {i}\n",
                1_700_000_000 + i,
                i % 7
            )),
            2 => s.push_str(&format!("resolved [key=k{}]: answer {i}\n", i % 7)),
            3 => s.push_str("some prose a human wrote: with a colon\n"),
            _ => s.push_str(&format!("note [at={}]: {i}\n", 1_700_000_000 + i)),
        }
    }
    s.into_bytes()
}

/// `n` distinct decisions, all left open.
fn open_decisions(n: usize) -> Vec<u8> {
    let mut s = String::with_capacity(n * 48);
    for i in 0..n {
        s.push_str(&format!(
            "needs-decision [at={}] [key=k{i}]: question {i}\n",
            1_700_000_000 + i
        ));
    }
    s.into_bytes()
}

/// Median wall time of `runs` runs of `tool args…` in `home`.
fn process(home: &Path, tool: &str, args: &[&str], runs: usize) -> Duration {
    let exe = Path::new(env!("CARGO_BIN_EXE_fm")).with_file_name(tool);
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                let out = Command::new(&exe)
                    .arg("--home")
                    .arg(home)
                    .args(args)
                    .output()
                    .expect("run the tool");
                assert!(out.status.success(), "{tool} {args:?} failed");
                t.elapsed()
            })
            .collect(),
    )
}

fn open_decision_figures() {
    for (n, label, runs) in [(20_000, "20k", 20), (200_000, "200k", 5)] {
        let log = open_decisions(n);
        let fold = median(
            (0..runs)
                .map(|_| {
                    let t = Instant::now();
                    let f = Fold::from_bytes(std::hint::black_box(&log), "paused");
                    assert_eq!(f.open.len(), n);
                    t.elapsed()
                })
                .collect(),
        );
        println!("fold {n} distinct open decisions: median {fold:?} ({runs} runs)");
        common::fig_ms(&format!("status.fold_open_{label}"), fold);

        let home = tempfile::tempdir().expect("temp home");
        std::fs::create_dir_all(home.path().join("config")).unwrap();
        std::fs::create_dir_all(home.path().join("state")).unwrap();
        std::fs::write(home.path().join("config/firstmate.toml"), "").unwrap();
        std::fs::write(home.path().join("state/q.meta"), "kind=ship\n").unwrap();
        std::fs::write(home.path().join("state/q.status"), &log).unwrap();
        let show = process(home.path(), "fm-status", &["q"], runs);
        println!("fm-status show, {n} open decisions (whole process): median {show:?}");
        common::fig_ms(&format!("status.show_open_{label}"), show);
        let crew = process(home.path(), "fm-crew-state", &["q"], runs);
        println!("fm-crew-state one task, {n} open decisions (whole process): median {crew:?}");
        common::fig_ms(&format!("status.crew_state_open_{label}"), crew);
    }
}

fn main() {
    open_decision_figures();
    let log = log_of(10_000);
    let runs: Vec<Duration> = (0..50)
        .map(|_| {
            let t = Instant::now();
            let f = Fold::from_bytes(std::hint::black_box(&log), "paused");
            std::hint::black_box(f.current());
            t.elapsed()
        })
        .collect();
    let fold = median(runs);
    println!("fold 10,000-line status log: median {fold:?} (50 runs)");
    common::fig_ms("status.fold_10k", fold);

    let exe = Path::new(env!("CARGO_BIN_EXE_fm-status"));
    let home = tempfile::tempdir().expect("temp home");
    std::fs::create_dir_all(home.path().join("config")).unwrap();
    std::fs::write(home.path().join("config/firstmate.toml"), "").unwrap();
    let runs: Vec<Duration> = (0..200)
        .map(|i| {
            let t = Instant::now();
            let st = Command::new(exe)
                .args(["--home"])
                .arg(home.path())
                .args(["bench", "working", "step"])
                .arg(i.to_string())
                .status()
                .expect("run fm-status");
            assert!(st.success());
            t.elapsed()
        })
        .collect();
    let append = median(runs);
    println!("fm-status append (whole process): median {append:?} (200 runs)");
    common::fig_ms("status.append", append);
}

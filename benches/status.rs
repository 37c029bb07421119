//! Status log benchmarks: folding a 10,000-line log in process, and one
//! `fm-status` append as a whole process. Run with `cargo bench --bench status`.
//!
//! A tiny harness (median of repeated runs) keeps the build light; figures go
//! in BENCHMARKS.md.

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

fn main() {
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

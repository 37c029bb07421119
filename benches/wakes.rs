//! The watcher's ladder-wake guard on a long `wakes.log`: `exists_since`
//! (a backward tail scan that stops at the episode's start) against reading
//! and parsing the whole log. Run with `cargo bench --bench wakes`.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_macros,
    reason = "tests and benches set up homes and print as they like; clippy.toml's rules are the library's"
)]

mod common;

use std::time::{Duration, Instant};

use firstmate::Home;
use firstmate::wakes;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time(runs: usize, mut f: impl FnMut()) -> Duration {
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path()).unwrap();
    std::fs::create_dir(home.state_dir()).unwrap();
    // 100,000 wakes over 100,000 seconds, written directly (same format).
    let mut log = String::new();
    for i in 0..100_000u64 {
        log.push_str(&format!(
            "{}\t{}\tt{}\tstatus\tdone: step {i} of a long task with some text\n",
            i + 1,
            1_700_000_000 + i,
            i % 50
        ));
    }
    std::fs::write(home.wakes(), &log).unwrap();
    let since = 1_700_000_000 + 100_000 - 300; // a record queued 5 minutes ago
    let tail = time(50, || {
        assert!(!wakes::exists_since(&home, "t1", "escalation", "001.msg x", since).unwrap());
    });
    let whole = time(20, || {
        let (all, _) = wakes::read_since(&home, 0).unwrap();
        assert!(!all.iter().any(|w| w.kind == "escalation"));
    });
    println!(
        "ladder-wake guard, 100,000-line wakes.log ({} KiB), record queued 300 s ago:",
        log.len() / 1024
    );
    println!("  exists_since (tail scan): {tail:?} median of 50");
    println!("  whole-log read + parse:   {whole:?} median of 20");
    common::fig_ms("wakes.guard_tail", tail);
    common::fig_ms("wakes.guard_whole", whole);
}

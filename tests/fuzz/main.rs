//! Fuzzing every parser of files that other processes (or people) write:
//! status lines, inbox records, meta, frontmatter (briefs and responses),
//! the brief check, config, the ladder files, busy and run records, board
//! task files, wake lines, watcher offsets and event lines.
//!
//! Each target runs `FM_FUZZ_CASES` cases (default 2,000, so the normal test
//! run stays fast) and checks two things: the parser never panics on the
//! input, and — where the format has one — a round-trip or invariant holds
//! (what the tools render parses back exactly). Inputs come from raw bytes
//! and from structured generators that look like the real format, so the
//! interesting branches are reached. docs/fuzzing.md has the long-run
//! command and the measured figures.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_macros,
    reason = "tests and benches set up homes and print as they like; clippy.toml's rules are the library's"
)]

use std::time::Instant;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestCaseError, TestRunner};

mod board;
mod config;
mod docs;
mod events;
mod inbox;
mod ladder;
mod meta;
mod status;

pub type Outcome = Result<(), TestCaseError>;

/// Cases per target: `FM_FUZZ_CASES`, default 2,000.
fn cases() -> u32 {
    std::env::var("FM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(2_000)
}

/// Runs `check` on `cases()` values of `strategy`; a panic inside `check`
/// is caught, shrunk and reported as a failure. Prints the count and time.
pub fn fuzz<S: Strategy>(name: &str, strategy: S, check: impl Fn(S::Value) -> Outcome) {
    let n = cases();
    let mut runner = TestRunner::new(RunnerConfig {
        cases: n,
        failure_persistence: None,
        ..RunnerConfig::default()
    });
    let start = Instant::now();
    if let Err(e) = runner.run(&strategy, check) {
        panic!("fuzz {name}: {e}");
    }
    eprintln!(
        "fuzz {name}: {n} cases in {:.2}s",
        start.elapsed().as_secs_f64()
    );
}

pub fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..max)
}

/// Lines of `line` joined by `\n`, optionally with a torn (unterminated) tail.
pub fn lines_of(line: BoxedStrategy<String>, max: usize) -> impl Strategy<Value = Vec<u8>> {
    (vec(line, 0..max), any::<bool>()).prop_map(|(ls, torn)| {
        let mut out = ls.join("\n");
        if !torn && !out.is_empty() {
            out.push('\n');
        }
        out.into_bytes()
    })
}

//! Shared by the benches: one machine-readable line per figure, beside the
//! human line, so `scripts/bench-report.sh` can rebuild BENCHMARKS.md.
//! Format: `@fig <key> <value> <unit>` (tab-separated).

#![allow(dead_code)]

use std::time::Duration;

/// Prints one figure for the report script.
pub fn fig(key: &str, value: f64, unit: &str) {
    println!("@fig\t{key}\t{value:.3}\t{unit}");
}

/// A duration as a figure in milliseconds.
pub fn fig_ms(key: &str, d: Duration) {
    fig(key, d.as_secs_f64() * 1000.0, "ms");
}

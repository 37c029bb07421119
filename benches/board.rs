//! Task board benchmarks: `fm-board list` over 10,000 tasks, and one claim,
//! each as a whole process. Run with `cargo bench --bench board`.
//!
//! Same tiny harness as the status bench (median of repeated runs); figures
//! go in BENCHMARKS.md.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_macros,
    reason = "tests and benches set up homes and print as they like; clippy.toml's rules are the library's"
)]

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use firstmate::board::{BoardId, Task, render};

const TASKS: u64 = 10_000;

/// Median and minimum wall time, plus mean CPU time (user + system) of the
/// child processes: on a shared machine the minimum and the CPU time show
/// the cost without other people's load.
struct Stats {
    median: Duration,
    min: Duration,
    cpu: Duration,
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "median {:.1?}, min {:.1?}, cpu {:.1?}/run",
            self.median, self.min, self.cpu
        )
    }
}

fn children_cpu() -> Duration {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &raw mut ru) };
    let tv = |t: libc::timeval| {
        Duration::from_micros(t.tv_sec.unsigned_abs() * 1_000_000 + t.tv_usec.unsigned_abs())
    };
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn populate(root: &Path) {
    let dir = root.join("data/board");
    std::fs::create_dir_all(&dir).unwrap();
    for n in 1..=TASKS {
        let mut t = Task::new(
            BoardId(n),
            &format!("task number {n}: do the thing"),
            1_796_000_000 + n,
        );
        t.description = "a short description\nover two lines".into();
        t.priority = i64::try_from(n % 5).unwrap();
        if n % 3 == 0 {
            t.assignee = Some(format!("worker-{}", n % 17));
        }
        if n % 4 == 0 {
            t.blocked_by = vec![BoardId(n - 1)];
            t.status = firstmate::board::Status::Blocked;
        }
        std::fs::write(dir.join(format!("{}.task", t.id)), render(&t)).unwrap();
    }
}

fn time_runs(runs: usize, mut f: impl FnMut(usize)) -> Stats {
    let cpu0 = children_cpu();
    let mut v: Vec<Duration> = (0..runs)
        .map(|i| {
            let t = Instant::now();
            f(i);
            t.elapsed()
        })
        .collect();
    let cpu = children_cpu().checked_sub(cpu0).unwrap() / runs as u32;
    v.sort();
    Stats {
        median: v[v.len() / 2],
        min: v[0],
        cpu,
    }
}

fn main() {
    let exe = Path::new(env!("CARGO_BIN_EXE_fm-board"));
    let home = tempfile::tempdir().expect("temp home");
    let root = home.path();
    std::fs::create_dir_all(root.join("config")).unwrap();
    std::fs::write(root.join("config/firstmate.toml"), "").unwrap();
    std::fs::create_dir_all(root.join("state")).unwrap();
    populate(root);

    for json in [false, true] {
        let m = time_runs(30, |_| {
            let mut c = Command::new(exe);
            c.arg("--home").arg(root).arg("list").stdout(Stdio::null());
            if json {
                c.arg("--json");
            }
            assert!(c.status().expect("run fm-board").success());
        });
        let what = if json { "list --json" } else { "list" };
        println!("fm-board {what} over {TASKS} tasks (whole process): {m} (30 runs)");
        let key = if json {
            "board.list_json"
        } else {
            "board.list"
        };
        common::fig_ms(key, m.median);
    }

    // Claim pending tasks (ids not divisible by 4) on the same 10,000-task board.
    let pending: Vec<u64> = (1..=TASKS).filter(|n| n % 4 != 0).take(200).collect();
    let m = time_runs(pending.len(), |i| {
        let st = Command::new(exe)
            .arg("--home")
            .arg(root)
            .args(["claim", &pending[i].to_string(), "--as", "bench"])
            .stdout(Stdio::null())
            .status()
            .expect("run fm-board");
        assert!(st.success());
    });
    println!("fm-board claim (whole process, 10,000-task board): {m} (200 runs)");
    common::fig_ms("board.claim", m.median);
}

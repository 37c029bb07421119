//! Watcher benchmarks: in-process passes over 10 … 10,000 tasks with a
//! pending record each (tasks without panes, so no tmux typing or waits), the CPU
//! an idle daemon uses with 1,000 tasks, and how soon a due record is rung.
//! Run with `cargo bench --bench watch` (`FM_BENCH_IDLE_SECS` shortens the
//! 60 s idle measurement).

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_macros,
    reason = "tests and benches set up homes and print as they like; clippy.toml's rules are the library's"
)]

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use firstmate::config::Config;
use firstmate::tmux::pane::{FakePane, Pane};
use firstmate::watch::pass::{self, State};
use firstmate::{Home, clock, inbox};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn new_home() -> (tempfile::TempDir, Home) {
    let d = tempfile::tempdir().expect("temp home");
    for sub in ["config", "data", "state"] {
        std::fs::create_dir_all(d.path().join(sub)).unwrap();
    }
    std::fs::write(d.path().join("config/firstmate.toml"), "").unwrap();
    let h = Home::at(d.path()).unwrap();
    (d, h)
}

/// `n` tasks with meta (no pane) and one pending record queued at `at`.
fn fleet(home: &Home, n: usize, at: u64, pending: bool) {
    for i in 0..n {
        let id = format!("task-{i:04}");
        let state = home.state_dir();
        std::fs::write(state.join(format!("{id}.meta")), "kind=ship\n").unwrap();
        std::fs::write(state.join(format!("{id}.status")), "working: on it\n").unwrap();
        let inbox = state.join(format!("{id}.inbox"));
        std::fs::create_dir_all(inbox.join("handled")).unwrap();
        let rec = inbox::render(&clock::rfc3339(at), "captain", false, b"hello");
        let name = if pending {
            "001.msg"
        } else {
            "handled/001.msg"
        };
        std::fs::write(inbox.join(name), rec).unwrap();
    }
}

fn fake(_socket: &str) -> Box<dyn Pane> {
    Box::new(FakePane::default())
}

/// Passes over `n` tasks: the first with every record due (each rung, no
/// pane), then steady passes with every record within its grace.
fn pass_bench(n: usize, homes: usize) -> (Duration, Duration) {
    let cfg = Config::default();
    let now = clock::now();
    let mut ringing = Vec::new();
    let mut steady = Vec::new();
    for _ in 0..homes {
        let (_d, home) = new_home();
        fleet(&home, n, now - 1000, true);
        let mut state = State::load(&home).unwrap();
        let t = Instant::now();
        let r = pass::run(&home, &cfg, &fake, &|_| {}, &mut state, now).unwrap();
        ringing.push(t.elapsed());
        assert_eq!(r.rings.len(), n);
        // The steady passes are the daemon's rescans: after its first
        // pass, they read only the metas a ladder needs (its sweep of
        // the panes covers only the tasks that record one).
        state.set_sweep(false);
        for _ in 0..4 {
            let t = Instant::now();
            let r = pass::run(&home, &cfg, &fake, &|_| {}, &mut state, now + 1).unwrap();
            steady.push(t.elapsed());
            assert!(r.rings.is_empty());
        }
    }
    (median(ringing), median(steady))
}

fn pass_benches() {
    for (n, homes) in [(10, 5), (100, 5), (1000, 5), (10_000, 2)] {
        let (ringing, steady) = pass_bench(n, homes);
        println!(
            "pass over {n} tasks, each record due and rung (no pane): median {ringing:?} ({homes} runs)"
        );
        println!(
            "pass over {n} tasks, each record pending within its grace: median {steady:?} ({} runs)",
            homes * 4
        );
        common::fig_ms(&format!("watch.pass_ringing.{n}"), ringing);
        common::fig_ms(&format!("watch.pass_steady.{n}"), steady);
    }
}

/// The target row: steady passes over 10,000 tasks that were each rung
/// once (so every inbox holds a record and a `.ring-state`), 20 of them.
fn steady_10k() {
    let cfg = Config::default();
    let now = clock::now();
    let (_d, home) = new_home();
    fleet(&home, 10_000, now - 1000, true);
    let mut state = State::load(&home).unwrap();
    let r = pass::run(&home, &cfg, &fake, &|_| {}, &mut state, now).unwrap();
    assert_eq!(r.rings.len(), 10_000);
    // The daemon's rescans after its first pass (see `pass_bench`).
    state.set_sweep(false);
    // A steady pass meets inboxes unchanged for a while: wait out the
    // margin within which a pass reads a changed inbox again, and let one
    // pass remember them.
    std::thread::sleep(Duration::from_secs(3));
    pass::run(&home, &cfg, &fake, &|_| {}, &mut state, now + 1).unwrap();
    let mut steady = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let r = pass::run(&home, &cfg, &fake, &|_| {}, &mut state, now + 1).unwrap();
        steady.push(t.elapsed());
        assert!(r.rings.is_empty());
    }
    let min = *steady.iter().min().unwrap();
    let med = median(steady);
    println!("steady pass over 10000 rung tasks: median {med:?}, fastest {min:?} (20 runs)");
    common::fig_ms("watch.steady_10k", med);
    common::fig_ms("watch.steady_10k_min", min);
}

fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the `(comm)`: state is field 3; utime 14, stime 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn daemon(home: &Path, envs: &[(&str, &str)]) -> std::process::Child {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fm-watch"));
    c.env("FM_HOME", home)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in envs {
        c.env(k, v);
    }
    c.spawn().expect("start fm-watch")
}

/// The idle daemon's fleet.
const IDLE_TASKS: usize = 1000;

fn idle_cpu() {
    let secs: u64 = std::env::var("FM_BENCH_IDLE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let (d, home) = new_home();
    fleet(&home, IDLE_TASKS, clock::now(), false);
    // Its safety rescan as configured by default (300 s) unless
    // `FM_BENCH_IDLE_RESCAN_SECS` says otherwise (30 puts two in a minute).
    let rescan = std::env::var("FM_BENCH_IDLE_RESCAN_SECS").unwrap_or_else(|_| "300".into());
    let mut child = daemon(d.path(), &[("FM_WATCH_RESCAN_SECS", rescan.as_str())]);
    std::thread::sleep(Duration::from_secs(2));
    let before = cpu_ticks(child.id());
    std::thread::sleep(Duration::from_secs(secs));
    let used = cpu_ticks(child.id()) - before;
    let _ = child.kill();
    let _ = child.wait();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let pct = used as f64 / hz / secs as f64 * 100.0;
    println!(
        "idle daemon, {IDLE_TASKS} tasks, rescan every {rescan} s, {secs} s: {used} ticks = {pct:.3} % of a core"
    );
    common::fig("watch.idle_cpu", pct, "%");
}

fn wall() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn latency() {
    // The parts before leave thousands of files written and not yet on
    // disk; the daemon's own `fsync`s would wait behind their writeback.
    // Flushed first, so the figure is the daemon's, not that backlog's.
    let _ = std::process::Command::new("sync").status();
    let (d, home) = new_home();
    fleet(&home, 100, clock::now(), false);
    let envs = [("FM_WATCH_GRACE_SECS", "1"), ("FM_WATCH_POLL_SECS", "60")];
    let mut child = daemon(d.path(), &envs);
    std::thread::sleep(Duration::from_millis(500));
    let (mut timer, mut event) = (Vec::new(), Vec::new());
    for i in 0..10 {
        // Becomes due by the clock: queued now, due one second later.
        let id = format!("task-{i:04}");
        let at = clock::now();
        let rec = inbox::render(&clock::rfc3339(at), "captain", false, b"x");
        std::fs::write(home.state_dir().join(format!("{id}.inbox/002.msg")), rec).unwrap();
        let rs = home.state_dir().join(format!("{id}.inbox/.ring-state"));
        while !rs.exists() {
            std::thread::sleep(Duration::from_millis(1));
        }
        timer.push(Duration::from_secs_f64((wall() - (at + 1) as f64).max(0.0)));
        // Already due when it appears: found through a filesystem event.
        let id = format!("task-{:04}", 50 + i);
        let rec = inbox::render(&clock::rfc3339(clock::now() - 5), "captain", false, b"x");
        let t = Instant::now();
        std::fs::write(home.state_dir().join(format!("{id}.inbox/002.msg")), rec).unwrap();
        let rs = home.state_dir().join(format!("{id}.inbox/.ring-state"));
        while !rs.exists() {
            std::thread::sleep(Duration::from_millis(1));
        }
        event.push(t.elapsed());
    }
    let _ = child.kill();
    let _ = child.wait();
    println!(
        "record becomes due (clock) -> rung, daemon: median {:?}, max {:?} (10 runs)",
        median(timer.clone()),
        timer.iter().max().unwrap()
    );
    common::fig_ms("watch.due_to_rung", median(timer.clone()));
    common::fig_ms("watch.due_to_rung_max", *timer.iter().max().unwrap());
    println!(
        "due record written -> rung (fs event), daemon: median {:?}, max {:?} (10 runs)",
        median(event.clone()),
        event.iter().max().unwrap()
    );
    common::fig_ms("watch.event_to_rung", median(event.clone()));
}

/// Which parts run: `FM_BENCH_WATCH` is a comma list of `pass`,
/// `steady`, `latency`, `idle` (all when unset).
fn wanted(part: &str) -> bool {
    std::env::var("FM_BENCH_WATCH").map_or(true, |v| v.split(',').any(|p| p.trim() == part))
}

fn main() {
    if wanted("pass") {
        pass_benches();
    }
    if wanted("steady") {
        steady_10k();
    }
    if wanted("latency") {
        latency();
    }
    if wanted("idle") {
        idle_cpu();
    }
}

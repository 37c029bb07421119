//! Crew-state benchmarks: the fleet view as a whole process over generated
//! homes, and the live view's idle CPU. Run with `cargo bench --bench
//! crew_state` (`FM_BENCH_LIVE_SECS` shortens the 30 s live-view
//! measurements; `FM_BENCH_QUICK=1` skips the 50,000-task fleet;
//! `FM_BENCH_ONLY=done500,10000` runs only the cases with those keys:
//! the fleet sizes, `panes100`, `claude100`, `runs1000`, `done500`).
//!
//! Fixtures (`common/fleet.rs`):
//! - pane-less fleets of 10 … 50,000 tasks: `kind=secondmate` metas (rule
//!   1 needs no worktree), 50-line status logs, one pending record each;
//! - the 1,000-task fleet of which 100 record panes running `sleep` and no
//!   harness (liveness from tmux alone, no screen read);
//! - 100 live claude panes, each drawing Claude Code's captured idle
//!   screen, so rule 4 reads every screen against the busy regex;
//! - 1,000 ships in worktrees of 4 real projects (`git worktree add`), each
//!   with a run record naming its branch and HEAD;
//! - the same 1,000 worktrees, 500 of whose logs end in a `done` with a PR:
//!   250 pushed (the gate accepts), 250 not (blocked).
//!
//! Reported: median wall time and CPU (the process and the git and tmux
//! processes it ran) and peak RSS, from `wait4`; for the pane and git
//! fleets also how many tmux and git processes one view starts (counted by
//! wrappers first on `PATH`, in separate runs so timing stays clean).

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_macros,
    reason = "tests and benches set up homes and print as they like; clippy.toml's rules are the library's"
)]

#[path = "common/mod.rs"]
mod common;
#[path = "common/fleet.rs"]
mod fleet;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_fm-crew-state")
}

/// Runs the fleet view once; returns wall time, peak RSS in KiB and CPU.
#[allow(clippy::zombie_processes)]
fn once(home: &Path, path: Option<&str>) -> (Duration, i64, Duration) {
    let mut cmd = Command::new(exe());
    cmd.arg("--home")
        .arg(home)
        .env_remove("FM_TMUX_SOCKET")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let t = Instant::now();
    let child = cmd.spawn().expect("run fm-crew-state");
    let mut status = 0;
    // SAFETY: waiting for the child this function spawned, by its pid;
    // `wait4` reaps it, so `Child::wait` is not needed.
    let (rss, cpu) = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::wait4(child.id().cast_signed(), &raw mut status, 0, &raw mut ru);
        let tv = |t: libc::timeval| {
            Duration::new(
                t.tv_sec.unsigned_abs(),
                u32::try_from(t.tv_usec).unwrap() * 1000,
            )
        };
        (ru.ru_maxrss, tv(ru.ru_utime) + tv(ru.ru_stime))
    };
    let elapsed = t.elapsed();
    assert_eq!(status, 0, "fm-crew-state failed");
    (elapsed, rss, cpu)
}

struct Figures {
    wall: Duration,
    cpu: Duration,
    rss_mib: f64,
}

fn measure(label: &str, key: &str, home: &Path, runs: usize) -> Figures {
    once(home, None);
    let mut times = Vec::new();
    let mut cpus = Vec::new();
    let mut peak = 0;
    for _ in 0..runs {
        let (t, rss, cpu) = once(home, None);
        times.push(t);
        cpus.push(cpu);
        peak = peak.max(rss);
    }
    let f = Figures {
        wall: median(times),
        cpu: median(cpus),
        rss_mib: peak as f64 / 1024.0,
    };
    println!(
        "{label}: median {:.1} ms wall, {:.1} ms CPU, peak RSS {:.1} MiB ({runs} runs)",
        f.wall.as_secs_f64() * 1000.0,
        f.cpu.as_secs_f64() * 1000.0,
        f.rss_mib
    );
    common::fig_ms(&format!("crew.{key}.wall"), f.wall);
    common::fig_ms(&format!("crew.{key}.cpu"), f.cpu);
    common::fig(&format!("crew.{key}.rss"), f.rss_mib, "MiB");
    f
}

/// The first `name` on `PATH`.
fn which(name: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} not on PATH"))
}

/// How many tmux and git processes one fleet view starts: wrappers that
/// note each start and run the real program, first on `PATH`.
fn children(label: &str, key: &str, home: &Path) -> (usize, usize) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("starts");
    for prog in ["tmux", "git"] {
        let real = which(prog);
        let shim = dir.path().join(prog);
        std::fs::write(
            &shim,
            format!(
                "#!/bin/sh\necho {prog} >> '{}'\nexec '{}' \"$@\"\n",
                log.display(),
                real.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    once(home, Some(&path));
    let starts = std::fs::read_to_string(&log).unwrap_or_default();
    let count = |p: &str| starts.lines().filter(|l| *l == p).count();
    let (tmux, git) = (count("tmux"), count("git"));
    println!("{label}: {tmux} tmux and {git} git processes per view");
    common::fig(&format!("crew.{key}.tmux_procs"), tmux as f64, "processes");
    common::fig(&format!("crew.{key}.git_procs"), git as f64, "processes");
    (tmux, git)
}

/// CPU ticks (user + system) of a process and its reaped children.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After `(comm)`: utime is field 14, stime 15, cutime 16, cstime 17.
    f[11..15].iter().map(|v| v.parse::<u64>().unwrap()).sum()
}

fn ticks_per_sec() -> f64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) as f64 }
}

/// The live view (`--watch --interval 2`) left alone on a home: the CPU it
/// uses (with the git and tmux processes it runs) and, when given, the
/// tmux server's.
fn live_view(label: &str, key: &str, home: &Path, tmux_server: Option<u32>) {
    let secs: u64 = std::env::var("FM_BENCH_LIVE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let mut child = Command::new(exe())
        .arg("--home")
        .arg(home)
        .args(["--watch", "--interval", "2"])
        .env_remove("FM_TMUX_SOCKET")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run fm-crew-state --watch");
    // Past the first frames (cold caches).
    std::thread::sleep(Duration::from_secs(5));
    let before = cpu_ticks(child.id());
    let server_before = tmux_server.map(cpu_ticks);
    std::thread::sleep(Duration::from_secs(secs));
    let used = cpu_ticks(child.id()) - before;
    let server_used = tmux_server.map(|p| cpu_ticks(p) - server_before.unwrap());
    // SAFETY: SIGINT to the child we spawned, which has not been reaped.
    unsafe { libc::kill(child.id().cast_signed(), libc::SIGINT) };
    let _ = child.wait();
    let hz = ticks_per_sec();
    let pct = used as f64 / hz / secs as f64 * 100.0;
    let mut line =
        format!("live view (--interval 2), {label}, {secs} s: {used} ticks = {pct:.3} % of a core");
    common::fig(&format!("live.{key}.cpu"), pct, "%");
    if let Some(s) = server_used {
        let spct = s as f64 / hz / secs as f64 * 100.0;
        line.push_str(&format!("; tmux server {s} ticks = {spct:.3} %"));
        common::fig(&format!("live.{key}.tmux_server_cpu"), spct, "%");
    }
    println!("{line}");
}

/// Whether the case `key` is to run (`FM_BENCH_ONLY`, every case when unset).
fn wanted(key: &str) -> bool {
    std::env::var("FM_BENCH_ONLY")
        .ok()
        .is_none_or(|only| only.split(',').any(|k| k.trim() == key))
}

fn main() {
    let quick = std::env::var_os("FM_BENCH_QUICK").is_some();
    let mut sizes = vec![10, 100, 1_000, 10_000];
    if !quick {
        sizes.push(50_000);
    }
    for n in sizes.into_iter().filter(|n| wanted(&n.to_string())) {
        let home = fleet::Home::new();
        fleet::plain(&home, n);
        let runs = match n {
            50_000 => 5,
            10_000 => 10,
            _ => 30,
        };
        measure(
            &format!("fleet view, {n} tasks, no panes"),
            &n.to_string(),
            &home.root,
            runs,
        );
    }

    if fleet::tmux_available() {
        if wanted("panes100") {
            let screens = fleet::Screens::new("sleep", &[]);
            let socket = &screens.socket;
            let panes: Vec<String> = (0..100)
                .map(|i| {
                    fleet::tmux(
                        socket,
                        &[
                            "new-window",
                            "-d",
                            "-P",
                            "-F",
                            "#{pane_id}",
                            "-t",
                            "bench",
                            "-n",
                            &format!("w{i}"),
                            "sleep",
                            "1000",
                        ],
                    )
                })
                .collect();
            let home = fleet::Home::new();
            fleet::plain(&home, 1_000);
            for (i, p) in panes.iter().enumerate() {
                let id = format!("task-{i:05}");
                home.write_state(
                    &format!("{id}.meta"),
                    &format!("kind=secondmate\nrepo=bench\npane={p}\ntmux_socket={socket}\n"),
                );
            }
            measure(
                "fleet view, 1000 tasks, 100 live tmux panes (no harness)",
                "panes100",
                &home.root,
                30,
            );
        }
        if wanted("claude100") {
            let names: Vec<&str> = (0..100)
                .map(|i| {
                    if i % 2 == 0 {
                        "claude/idle-fresh"
                    } else {
                        "claude/idle-after-turn"
                    }
                })
                .collect();
            let screens = fleet::Screens::new("claude", &names);
            let home = fleet::Home::new();
            fleet::live(&home, &screens, "claude");
            let label = "fleet view, 100 live claude panes (idle screens, busy regex read)";
            measure(label, "claude100", &home.root, 30);
            children(label, "claude100", &home.root);
            live_view(
                "100 live claude panes",
                "claude100",
                &home.root,
                Some(screens.server_pid()),
            );
        }
    } else {
        println!("tmux unavailable: live-pane cases skipped");
    }

    if !wanted("runs1000") && !wanted("done500") {
        return;
    }
    if !fleet::git_available() {
        println!("git unavailable: worktree cases skipped");
        return;
    }
    let t = Instant::now();
    let repos = fleet::Repos::new(4, 250);
    println!(
        "(fixture: 4 projects, 1000 worktrees in {:.1} s)",
        t.elapsed().as_secs_f64()
    );
    if wanted("runs1000") {
        let home = fleet::Home::new();
        fleet::with_runs(&home, &repos);
        let label = "fleet view, 1000 ships with run records (4 projects)";
        measure(label, "runs1000", &home.root, 10);
        children(label, "runs1000", &home.root);
    }
    if !wanted("done500") {
        return;
    }
    let home = fleet::Home::new();
    fleet::with_done(&home, &repos);
    let label = "fleet view, 1000 ships, 500 done (250 pushed, 250 refused; 4 projects)";
    measure(label, "done500", &home.root, 10);
    children(label, "done500", &home.root);
    live_view("1000 ships, 500 done", "done500", &home.root, None);
}

//! Crew-state benchmarks: the fleet view as a whole process over generated
//! homes. Run with `cargo bench --bench crew_state`.
//!
//! Fixtures: every task has a meta file (`kind=secondmate`, so rule 1 needs
//! no worktree and no git repository per task), a 50-line status log and
//! one pending inbox record. The live-pane case adds a private tmux server
//! with 100 windows running `sleep`; those tasks record `pane=` and the
//! server's socket and name no harness (liveness from tmux alone, no screen
//! capture). Reported: median wall time of the whole `fm-crew-state`
//! process and its peak RSS (from `wait4`).

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn fixture(root: &Path, n: usize, panes: &[String], socket: &str) {
    for d in ["config", "state"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("config/firstmate.toml"), "").unwrap();
    for i in 0..n {
        let id = format!("task-{i:05}");
        let mut meta = String::from("kind=secondmate\nrepo=bench\n");
        if let Some(p) = panes.get(i) {
            meta.push_str(&format!("pane={p}\ntmux_socket={socket}\n"));
        }
        std::fs::write(root.join(format!("state/{id}.meta")), meta).unwrap();
        let mut log = String::new();
        for l in 0..50 {
            match l % 5 {
                0 => log.push_str(&format!("working [at={}]: step {l}\n", 1_700_000_000 + l)),
                1 => log.push_str(&format!("needs-decision [key=k{}]: question {l}\n", l % 3)),
                2 => log.push_str(&format!("resolved [key=k{}]: answered\n", l % 3)),
                3 => log.push_str("free prose from a worker\n"),
                _ => log.push_str(&format!("note: {l}\n")),
            }
        }
        std::fs::write(root.join(format!("state/{id}.status")), log).unwrap();
        let inbox = root.join(format!("state/{id}.inbox"));
        std::fs::create_dir_all(inbox.join("handled")).unwrap();
        std::fs::write(
            inbox.join("001.msg"),
            "schema=fm-inbox.v1\nat=2026-01-01T00:00:00Z\nfrom=captain\n--\nhello\n",
        )
        .unwrap();
    }
}

/// Runs the fleet view once; returns wall time and peak RSS in KiB.
#[allow(clippy::zombie_processes)]
fn once(home: &Path) -> (Duration, i64, Duration) {
    let exe = env!("CARGO_BIN_EXE_fm-crew-state");
    let t = Instant::now();
    let child = Command::new(exe)
        .arg("--home")
        .arg(home)
        .env_remove("FM_TMUX_SOCKET")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run fm-crew-state");
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

fn measure(label: &str, key: &str, home: &Path, runs: usize) {
    once(home);
    let mut times = Vec::new();
    let mut cpus = Vec::new();
    let mut peak = 0;
    for _ in 0..runs {
        let (t, rss, cpu) = once(home);
        times.push(t);
        cpus.push(cpu);
        peak = peak.max(rss);
    }
    let (wall, cpu) = (median(times), median(cpus));
    println!(
        "{label}: median {:.1} ms wall, {:.1} ms CPU, peak RSS {:.1} MiB ({runs} runs)",
        wall.as_secs_f64() * 1000.0,
        cpu.as_secs_f64() * 1000.0,
        peak as f64 / 1024.0
    );
    common::fig_ms(&format!("crew.{key}.wall"), wall);
    common::fig_ms(&format!("crew.{key}.cpu"), cpu);
    common::fig(&format!("crew.{key}.rss"), peak as f64 / 1024.0, "MiB");
}

fn tmux(socket: &str, args: &[&str]) -> String {
    let out = Command::new("tmux")
        .args(["-L", socket])
        .args(args)
        .output()
        .expect("tmux");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn main() {
    for n in [10, 100, 1_000, 10_000] {
        let home = tempfile::tempdir().unwrap();
        fixture(home.path(), n, &[], "");
        let runs = if n >= 10_000 { 10 } else { 30 };
        measure(
            &format!("fleet view, {n} tasks, no panes"),
            &n.to_string(),
            home.path(),
            runs,
        );
    }

    let socket = format!("fm-bench-{}", std::process::id());
    tmux(&socket, &["new-session", "-d", "-s", "bench"]);
    let panes: Vec<String> = (0..100)
        .map(|i| {
            tmux(
                &socket,
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
    if panes.iter().all(|p| p.starts_with('%')) {
        let home = tempfile::tempdir().unwrap();
        fixture(home.path(), 1_000, &panes, &socket);
        measure(
            "fleet view, 1000 tasks, 100 live tmux panes",
            "panes100",
            home.path(),
            30,
        );
    } else {
        println!("tmux unavailable: live-pane case skipped");
    }
    tmux(&socket, &["kill-server"]);
}

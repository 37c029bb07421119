//! The floor under the pane-less fleet view: a minimal program reading the
//! same files on the same cores, so `BENCHMARKS.md` can show how far above
//! it `fm-crew-state` runs (a ratio holds on a loaded machine where
//! absolute times do not). Run with `cargo bench --bench floor`
//! (`FM_BENCH_QUICK=1` skips the 50,000-task fleet).
//!
//! The reader is this bench re-run as a child process (so process start is
//! counted as it is for the fleet view): it lists `state/` once, and for
//! every task with a meta, on one thread per core, reads the meta, reads
//! the status log and takes its mtime from the open file, and lists the
//! inbox — each with the fewest system calls (`openat` relative to the
//! state directory, one `read` into a reused buffer, `getdents64`). It
//! parses nothing and prints one count. Each run of it is followed by a
//! run of the fleet view on the same fleet, so the two are measured under
//! the same load and their ratio is reported as well.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_macros,
    reason = "tests and benches set up homes and print as they like; clippy.toml's rules are the library's"
)]

#[path = "common/mod.rs"]
mod common;
#[path = "common/fleet.rs"]
mod fleet;

use std::ffi::CString;
use std::os::fd::RawFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Opens `name` relative to `dir`; -1 when it does not open.
fn open_at(dir: RawFd, name: &str, flags: i32) -> RawFd {
    let c = CString::new(name).unwrap();
    // SAFETY: `dir` is an open directory descriptor, `c` a valid C string.
    unsafe { libc::openat(dir, c.as_ptr(), flags | libc::O_CLOEXEC | libc::O_NOFOLLOW) }
}

/// Reads one small file whole; returns its length (0 when absent).
fn read_file(dir: RawFd, name: &str, buf: &mut [u8], stat: bool) -> usize {
    let fd = open_at(dir, name, libc::O_RDONLY);
    if fd < 0 {
        return 0;
    }
    let mut total = 0;
    // SAFETY: `fd` is open and owned here; `buf` is valid for its length;
    // `st` is plain data the kernel fills.
    unsafe {
        if stat {
            let mut st: libc::stat = std::mem::zeroed();
            libc::fstat(fd, &raw mut st);
            total += usize::from(st.st_mtime & 1 == 1);
        }
        loop {
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            if n <= 0 {
                break;
            }
            total += n.cast_unsigned();
            if n.cast_unsigned() < buf.len() {
                break;
            }
        }
        libc::close(fd);
    }
    total
}

/// Counts the entries of a directory (`getdents64` until it returns 0).
fn list_dir(dir: RawFd, name: &str, buf: &mut [u8]) -> usize {
    let fd = open_at(dir, name, libc::O_RDONLY | libc::O_DIRECTORY);
    if fd < 0 {
        return 0;
    }
    let mut entries = 0;
    // SAFETY: `fd` is an open directory owned here; the kernel writes at
    // most `buf.len()` bytes of `linux_dirent64` records into `buf`.
    unsafe {
        loop {
            let n = libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len());
            if n <= 0 {
                break;
            }
            let mut off = 0usize;
            while off < n.cast_unsigned() as usize {
                let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
                entries += 1;
                off += reclen;
            }
        }
        libc::close(fd);
    }
    entries
}

/// The reader itself: prints how many bytes and entries it saw.
fn read_fleet(home: &Path) {
    let state = home.join("state");
    let mut ids: Vec<String> = std::fs::read_dir(&state)
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".meta").map(str::to_string)
        })
        .collect();
    ids.sort_unstable();
    let c = CString::new(state.to_str().unwrap()).unwrap();
    // SAFETY: opening a directory by a valid C string path.
    let dir = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
    assert!(dir >= 0);
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let chunk = ids.len().div_ceil(threads).max(1);
    let total: usize = std::thread::scope(|s| {
        let hs: Vec<_> = ids
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    let mut buf = vec![0u8; 64 * 1024];
                    let mut sum = 0;
                    for id in part {
                        sum += read_file(dir, &format!("{id}.meta"), &mut buf, false);
                        sum += read_file(dir, &format!("{id}.status"), &mut buf, true);
                        sum += list_dir(dir, &format!("{id}.inbox"), &mut buf);
                    }
                    sum
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    println!("{} tasks, {total}", ids.len());
}

/// Runs the reader as a child once; its wall time and CPU (user + system,
/// from `wait4`).
fn once(home: &Path) -> (Duration, Duration) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.arg("--read-fleet").arg(home);
    run(cmd, "the floor reader")
}

/// Runs the fleet view (`fm-crew-state`) on `home` once, as `once` runs
/// the reader.
fn view(home: &Path) -> (Duration, Duration) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fm-crew-state"));
    cmd.arg("--home").arg(home).env_remove("FM_TMUX_SOCKET");
    run(cmd, "fm-crew-state")
}

/// Runs `cmd` to its end, its output dropped; wall time and CPU.
#[allow(clippy::zombie_processes)]
fn run(mut cmd: Command, what: &str) -> (Duration, Duration) {
    let t = Instant::now();
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: waiting for the child this function spawned, by its pid;
    // `wait4` reaps it, so `Child::wait` is not needed.
    let cpu = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::wait4(child.id().cast_signed(), &raw mut status, 0, &raw mut ru);
        let tv = |t: libc::timeval| {
            Duration::new(
                t.tv_sec.unsigned_abs(),
                u32::try_from(t.tv_usec).unwrap() * 1000,
            )
        };
        tv(ru.ru_utime) + tv(ru.ru_stime)
    };
    let d = t.elapsed();
    assert_eq!(status, 0, "{what} failed");
    (d, cpu)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--read-fleet") {
        read_fleet(Path::new(&args[i + 1]));
        return;
    }
    let mut sizes = vec![1_000, 10_000];
    if std::env::var_os("FM_BENCH_QUICK").is_none() {
        sizes.push(50_000);
    }
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    for n in sizes {
        let home = fleet::Home::new();
        fleet::plain(&home, n);
        let runs = if n >= 10_000 { 10 } else { 30 };
        once(&home.root);
        view(&home.root);
        // The floor and the fleet view one after the other, run after
        // run: a load that comes and goes weighs on both alike, so their
        // ratio holds where absolute times do not.
        let mut floor = (Vec::new(), Vec::new());
        let mut fleet = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let (w, c) = once(&home.root);
            floor.0.push(w);
            floor.1.push(c);
            let (w, c) = view(&home.root);
            fleet.0.push(w);
            fleet.1.push(c);
        }
        let (wall, cpu) = (median(floor.0), median(floor.1));
        let (view_wall, view_cpu) = (median(fleet.0), median(fleet.1));
        println!(
            "floor: reading a {n}-task fleet's files on {threads} threads (whole process): median {:.1} ms wall, {:.1} ms CPU ({runs} runs)",
            wall.as_secs_f64() * 1000.0,
            cpu.as_secs_f64() * 1000.0
        );
        let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
        println!(
            "  the fleet view on the same fleet, run for run: median {:.1} ms wall ({:.2}x the floor), {:.1} ms CPU ({:.2}x)",
            view_wall.as_secs_f64() * 1000.0,
            ratio(view_wall, wall),
            view_cpu.as_secs_f64() * 1000.0,
            ratio(view_cpu, cpu)
        );
        common::fig_ms(&format!("floor.{n}"), wall);
        common::fig_ms(&format!("floor.{n}.cpu"), cpu);
        common::fig_ms(&format!("floor.{n}.view"), view_wall);
        common::fig_ms(&format!("floor.{n}.view_cpu"), view_cpu);
    }
}

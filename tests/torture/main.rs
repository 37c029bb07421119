//! The reliability torture suite (docs/torture.md): concurrent senders,
//! status appenders, ackers and watchers on one home for a bounded time,
//! with SIGKILL of random participants, then an audit of every claim.
//!
//! ```text
//! cargo test --release --test torture -- --nocapture              # default size (~15 s)
//! FM_TORTURE_SECS=120 FM_TORTURE_TASKS=12 cargo test --release --test torture -- --nocapture
//! FM_TORTURE_SEED=1234 ...                                        # replay a seed's choices
//! ```

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_macros,
    reason = "tests and benches set up homes and print as they like; clippy.toml's rules are the library's"
)]

#[path = "../cli/harness.rs"]
mod harness;

mod audit;
mod participants;
mod world;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use audit::{Audit, Evidence};
use participants::{acker, appender, sender, watchers};
use world::{World, run};

fn env_num(key: &str, default: u64) -> u64 {
    match std::env::var(key) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{key}={v:?} is not a number")),
        Err(_) => default,
    }
}

fn join_all<T>(hs: Vec<std::thread::ScopedJoinHandle<'_, Vec<T>>>) -> Vec<T> {
    hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
}

#[test]
fn torture() {
    let secs = env_num("FM_TORTURE_SECS", 15);
    let tasks = env_num("FM_TORTURE_TASKS", 6) as usize;
    let seed = env_num(
        "FM_TORTURE_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    );
    let world = World::new(tasks, 2);
    eprintln!(
        "torture: {secs}s, {} tasks ({} with a pane), seed {seed}, home {}",
        world.tasks.len(),
        world.pane_tasks.len(),
        world.home.root().display()
    );
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let (sent, appended, acks, watch) = std::thread::scope(|s| {
        let w = &world;
        let stop = &stop;
        let senders: Vec<_> = (0..3)
            .map(|n| s.spawn(move || sender(w, n, seed ^ (n as u64 + 1), stop)))
            .collect();
        let appenders: Vec<_> = (0..2)
            .map(|n| s.spawn(move || appender(w, n, n == 1, seed ^ (n as u64 + 11), stop)))
            .collect();
        let ackers: Vec<_> = (0..2u64)
            .map(|n| s.spawn(move || acker(w, seed ^ (n + 21), stop)))
            .collect();
        let watch = s.spawn(move || watchers(w, seed ^ 31, stop));
        std::thread::sleep(Duration::from_secs(secs));
        stop.store(true, Ordering::Relaxed);
        (
            join_all(senders),
            join_all(appenders),
            join_all(ackers),
            watch.join().unwrap(),
        )
    });
    // Two clean passes surface whatever the storm left unreported.
    for _ in 0..2 {
        let mut cmd = world.fm("watch");
        cmd.arg("--once");
        let r = run(&world, cmd, None, None);
        assert_eq!(r.code, Some(0), "final fm-watch --once: {}", r.stderr);
    }
    let ev = Evidence {
        sent,
        appended,
        acks,
        watch,
    };
    let mut audit = Audit::new(&world, &ev);
    audit.run();
    let killed = world.killed.lock().unwrap().len();
    let t = &audit.tally;
    eprintln!(
        "torture: {:.1}s; {} sends, {} status appends, {} ack runs, {} watcher runs, {} SIGKILLs ({} watchers, {} holding the lock)",
        started.elapsed().as_secs_f64(),
        ev.sent.len(),
        ev.appended.len(),
        ev.acks.len(),
        ev.watch.runs.len(),
        killed,
        ev.watch.boundaries.len(),
        ev.watch.boundaries.iter().filter(|b| b.held).count(),
    );
    eprintln!(
        "torture: audited {} records ({} --dedupe sends answered with an existing one), {} status lines, {} wakes ({} status lines surfaced, {} justified repeats), {} temp files left by killed writers, {} lines cut by a kill at a page boundary, {} page fillers, {} doorbells typed",
        t.records,
        t.dedupe_shared,
        t.lines,
        t.wakes,
        t.status_wakes,
        t.repeats,
        t.temps,
        t.fragments,
        t.fillers,
        t.rings
    );
    for o in &t.outcomes {
        eprintln!("torture: doorbell outcomes {o}");
    }
    let report = audit.report();
    let failures = audit.failures.len();
    if failures > 0 {
        eprint!("{report}");
        if std::env::var("FM_TORTURE_KEEP").as_deref() == Ok("1") {
            let kept = world.home.dir.keep();
            eprintln!("torture: home kept at {}", kept.display());
        }
        panic!("torture audit failed: {failures} problem(s), seed {seed}");
    }
}

//! The participants: real `fm-send`, `fm-status`, `sh -c 'echo >>'`,
//! `fm-ack` and `fm-watch` processes, each loop running until the stop
//! flag, each recording exactly what it asked for and what came back.
//! Any of them may be `SIGKILLed` mid-run; the watcher loop also races
//! daemons and `--once` for the singleton and records a boundary
//! (wakes seq, saved offsets, lock holder) after every kill.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::world::{Ran, Rng, World, run};

/// How often (percent) a participant is `SIGKILLed`.
pub const KILL_PCT: u64 = 12;

fn kill_delay(rng: &mut Rng, max_ms: u64) -> Option<Duration> {
    rng.chance(KILL_PCT)
        .then(|| Duration::from_micros(rng.below(max_ms * 1000)))
}

fn printable(rng: &mut Rng, len: usize) -> String {
    const CH: &[u8] =
        b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:_-=+[]()";
    (0..len).map(|_| *rng.pick(CH) as char).collect()
}

/// How a body reaches `fm-send`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Arg,
    Stdin,
    File,
}

/// One `fm-send` run.
#[derive(Debug, Clone)]
pub struct Sent {
    pub task: String,
    pub body: Vec<u8>,
    pub via: Via,
    pub quiet: bool,
    pub fire_and_forget: bool,
    /// Sent with `--dedupe`: the body is shared by every such send to the
    /// first task within the same 200 ms window, so concurrent senders race
    /// to create it; at most one record may hold it.
    pub dedupe: bool,
    pub ran: Ran,
    /// The record number printed on stdout.
    pub seq: Option<u64>,
}

fn make_body(rng: &mut Rng, tag: &str, via: Via) -> Vec<u8> {
    let mut body = format!("torture body {tag}\n").into_bytes();
    let len = if via != Via::Arg && rng.chance(5) {
        20_000 + rng.below(60_000) as usize
    } else {
        rng.below(1500) as usize
    };
    body.extend_from_slice(printable(rng, len).as_bytes());
    match rng.below(4) {
        0 => body.extend_from_slice("\n\nsecond paragraph é ✓".as_bytes()),
        1 if via != Via::Arg => body.extend_from_slice(b"\x00\xff\xfe raw bytes\r\n"),
        2 => body.extend_from_slice(b"\n--\nnot a header\n"),
        _ => {}
    }
    if rng.chance(40) {
        body.extend_from_slice(b"\n\n");
    }
    body
}

fn parse_queued(stdout: &str, task: &str) -> Option<u64> {
    let rest = stdout.strip_prefix(&format!("queued {task} "))?;
    let name = rest.split_whitespace().next()?;
    firstmate::fsx::parse_numbered(name, "msg")
}

/// Sends unique bodies to random tasks until `stop`.
pub fn sender(world: &World, n: usize, seed: u64, stop: &AtomicBool) -> Vec<Sent> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let dedupe = rng.chance(25);
        let task = if dedupe {
            world.tasks[0].clone()
        } else {
            rng.pick(&world.tasks).clone()
        };
        let via = if dedupe {
            Via::Arg
        } else {
            *rng.pick(&[Via::Arg, Via::Stdin, Via::File])
        };
        let body = if dedupe {
            let window = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis()
                / 200;
            format!("torture dedupe {task} {window}\n").into_bytes()
        } else {
            make_body(&mut rng, &format!("{task}/s{n}-{i}"), via)
        };
        let (quiet, fire_and_forget) = match rng.below(4) {
            0 => (true, false),
            1 if !dedupe => (false, true),
            2 if !dedupe => (true, true),
            _ => (false, false),
        };
        let mut cmd = world.fm("send");
        cmd.arg(&task);
        if dedupe {
            cmd.arg("--dedupe");
        }
        if quiet {
            cmd.arg("--quiet");
        }
        if fire_and_forget {
            cmd.arg("--fire-and-forget");
        }
        let mut stdin = None;
        match via {
            Via::Arg => {
                cmd.arg("--").arg(String::from_utf8(body.clone()).unwrap());
            }
            Via::Stdin => {
                cmd.arg("-");
                stdin = Some(body.clone());
            }
            Via::File => {
                let f = world.scratch.path().join(format!("body-s{n}-{i}"));
                std::fs::write(&f, &body).unwrap();
                cmd.arg("--file").arg(f);
            }
        }
        let ran = run(world, cmd, stdin, kill_delay(&mut rng, 25));
        let seq = parse_queued(&ran.stdout, &task);
        out.push(Sent {
            task,
            body,
            via,
            quiet,
            fire_and_forget,
            dedupe,
            ran,
            seq,
        });
    }
    out
}

/// One status line appended by `fm-status` or by `echo >>`.
#[derive(Debug, Clone)]
pub struct Appended {
    pub task: String,
    pub tag: String,
    pub verb: String,
    pub key: String,
    pub text: String,
    pub by_hand: bool,
    pub ran: Ran,
    /// Clock seconds before and after the run (the `[at=]` fm-status wrote).
    pub at: (u64, u64),
}

impl Appended {
    /// Whether `fragment` is a prefix of the line this append may have
    /// written (a SIGKILL inside `write` cuts a line at a page boundary).
    pub fn could_leave(&self, fragment: &[u8]) -> bool {
        let key = if self.key == "default" {
            String::new()
        } else {
            format!(" [key={}]", self.key)
        };
        (self.at.0..=self.at.1).any(|t| {
            format!("{} [at={t}]{key}: {}", self.verb, self.text)
                .as_bytes()
                .starts_with(fragment)
        })
    }
}

const VERBS: &[&str] = &[
    "working",
    "needs-decision",
    "blocked",
    "paused",
    "done",
    "failed",
    "note",
    "resolved",
];

/// Appends unique status lines until `stop`; `by_hand` uses `echo >>`.
pub fn appender(
    world: &World,
    n: usize,
    by_hand: bool,
    seed: u64,
    stop: &AtomicBool,
) -> Vec<Appended> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let task = rng.pick(&world.tasks).clone();
        let verb = rng.pick(VERBS).to_string();
        let key = rng
            .pick(&["default", "default", "k1", "k2", "db.x"])
            .to_string();
        let tag = format!("{task}/a{n}-{i}");
        let len = rng.below(300) as usize;
        let text = format!("torture line {tag} {}", printable(&mut rng, len))
            .trim_end()
            .to_string();
        let cmd = if by_hand {
            let mut tags = String::new();
            if rng.chance(50) {
                tags.push_str(&format!(" [at={}]", firstmate::clock::now()));
            }
            let head_key = key != "default" && rng.chance(50);
            if key != "default" && !head_key {
                tags.push_str(&format!(" [key={key}]"));
            }
            let line = if head_key {
                format!("{verb}{tags}: [key={key}] {text}")
            } else {
                format!("{verb}{tags}: {text}")
            };
            let path = world.state().join(format!("{task}.status"));
            world.echo_append(&line, &path)
        } else {
            let mut c = world.fm("status");
            c.args([&task, &verb]);
            if key != "default" {
                c.args(["--key", &key]);
            }
            c.arg(&text);
            c
        };
        // A shell killed inside its `write` can leave a fragment that the
        // next hand-written line glues onto; no tool can prevent that, so
        // only `fm-status` (which ends a fragment before appending) is killed.
        let kill = if by_hand {
            None
        } else {
            kill_delay(&mut rng, 8)
        };
        let at_lo = firstmate::clock::now();
        let ran = run(world, cmd, None, kill);
        out.push(Appended {
            task,
            tag,
            verb,
            key,
            text,
            by_hand,
            ran,
            at: (at_lo, firstmate::clock::now()),
        });
    }
    out
}

/// One `fm-ack` run.
#[derive(Debug, Clone)]
pub struct AckRun {
    pub task: String,
    pub args: Vec<String>,
    pub ran: Ran,
}

fn pending(world: &World, task: &str) -> Vec<u64> {
    let mut seqs: Vec<u64> = std::fs::read_dir(world.state().join(format!("{task}.inbox")))
        .map(|rd| {
            rd.filter_map(|e| firstmate::fsx::parse_numbered(e.ok()?.file_name().to_str()?, "msg"))
                .collect()
        })
        .unwrap_or_default();
    seqs.sort_unstable();
    seqs
}

/// Acknowledges pending records until `stop`, mostly of pane-less tasks
/// (pane tasks keep records pending so the watcher rings them; an
/// occasional ack there starts a fresh ladder). Ackers often pick the
/// same (lowest) record, so they race on it.
pub fn acker(world: &World, seed: u64, stop: &AtomicBool) -> Vec<AckRun> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let paneless: Vec<String> = world
        .tasks
        .iter()
        .filter(|t| !world.pane_tasks.contains(t))
        .cloned()
        .collect();
    while !stop.load(Ordering::Relaxed) {
        let task = if world.pane_tasks.is_empty() || rng.chance(90) {
            rng.pick(&paneless).clone()
        } else {
            rng.pick(&world.pane_tasks).clone()
        };
        let seqs = pending(world, &task);
        if seqs.is_empty() {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        }
        let args: Vec<String> = match rng.below(4) {
            0 => vec![format!("{:03}", seqs[0])],
            1 => {
                let k = 1 + rng.below(3) as usize;
                (0..k).map(|_| format!("{}.msg", rng.pick(&seqs))).collect()
            }
            2 => vec![
                "--through".into(),
                seqs[rng.below(seqs.len() as u64) as usize].to_string(),
            ],
            _ => vec![seqs[0].to_string()],
        };
        let mut cmd = world.fm("ack");
        cmd.arg(&task).args(&args);
        let ran = run(world, cmd, None, kill_delay(&mut rng, 10));
        out.push(AckRun { task, args, ran });
    }
    out
}

/// One watcher process.
#[derive(Debug, Clone)]
pub struct WatcherRun {
    pub pid: u32,
    pub daemon: bool,
    /// The signal we sent (SIGKILL or SIGTERM), if any.
    pub signal: Option<i32>,
    pub code: Option<i32>,
    pub killed: bool,
    pub output: String,
}

/// The state right after a `SIGKILLed` watcher was reaped, with no other
/// watcher alive: what a restarted watcher will start from.
#[derive(Debug, Clone)]
pub struct Boundary {
    pub pid: u32,
    /// Last wake seq in the log.
    pub last_seq: u64,
    /// `.watch.offsets` as saved: task → byte offset.
    pub offsets: BTreeMap<String, u64>,
    /// The lock file still names the killed pid (it died holding it).
    pub held: bool,
}

/// What the watcher loop saw.
#[derive(Debug, Default)]
pub struct WatchLog {
    pub runs: Vec<WatcherRun>,
    pub boundaries: Vec<Boundary>,
    /// Singleton violations (two watchers alive for seconds).
    pub violations: Vec<String>,
}

struct Live {
    child: Child,
    daemon: bool,
    signal: Option<i32>,
    out: std::path::PathBuf,
}

fn spawn_watcher(world: &World, daemon: bool, n: &mut usize) -> Live {
    *n += 1;
    let out = world.scratch.path().join(format!("watch-{n}.out"));
    let f = std::fs::File::create(&out).unwrap();
    let mut c = world.fm("watch");
    if !daemon {
        c.arg("--once");
    }
    c.stdin(Stdio::null())
        .stdout(f.try_clone().unwrap())
        .stderr(f);
    Live {
        child: c.spawn().unwrap(),
        daemon,
        signal: None,
        out,
    }
}

fn reap(world: &World, mut l: Live, log: &mut WatchLog) -> u32 {
    let st = l.child.wait().unwrap();
    // A SIGTERM that lands before the handler is installed (before the
    // lock is taken) ends the process like a kill: count it as one.
    let killed = matches!(st.signal(), Some(libc::SIGKILL | libc::SIGTERM));
    let pid = l.child.id();
    if killed {
        world.note_killed(pid);
    }
    log.runs.push(WatcherRun {
        pid,
        daemon: l.daemon,
        signal: l.signal.take(),
        code: st.code(),
        killed,
        output: std::fs::read_to_string(&l.out).unwrap_or_default(),
    });
    pid
}

fn signal(l: &mut Live, sig: i32) {
    // SAFETY: kill(2) on our own unreaped child's pid.
    unsafe { libc::kill(l.child.id().cast_signed(), sig) };
    l.signal = Some(sig);
}

/// Reads the boundary after `pid` was killed and reaped (no watcher alive).
fn boundary(world: &World, pid: u32) -> Boundary {
    let state = world.state();
    let wakes = std::fs::read(state.join("wakes.log")).unwrap_or_default();
    let last_seq = firstmate::wakes::parse_all(&wakes)
        .last()
        .map_or(0, |w| w.seq);
    let offsets = std::fs::read_to_string(state.join(".watch.offsets"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            Some((f.next()?.to_string(), f.next()?.parse().ok()?))
        })
        .collect();
    let held = std::fs::read_to_string(state.join(".watch.lock"))
        .is_ok_and(|s| s.trim() == pid.to_string());
    Boundary {
        pid,
        last_seq,
        offsets,
        held,
    }
}

/// Waits until at most one of `live` runs; returns false after `secs`.
fn settle_to_one(world: &World, live: &mut Vec<Live>, log: &mut WatchLog, secs: f64) -> bool {
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    loop {
        let mut i = 0;
        while i < live.len() {
            if live[i].child.try_wait().unwrap().is_some() {
                let l = live.remove(i);
                reap(world, l, log);
            } else {
                i += 1;
            }
        }
        if live.len() <= 1 {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn sleep_unless(stop: &AtomicBool, d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Starts daemons and `--once` passes that race for the singleton, and
/// kills the holder (SIGKILL, sometimes SIGTERM) at random moments.
pub fn watchers(world: &World, seed: u64, stop: &AtomicBool) -> WatchLog {
    let mut rng = Rng::new(seed);
    let mut log = WatchLog::default();
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let mut live = Vec::new();
        if rng.chance(70) {
            live.push(spawn_watcher(world, true, &mut n));
            live.push(spawn_watcher(world, true, &mut n));
            if rng.chance(50) {
                live.push(spawn_watcher(world, false, &mut n));
            }
            sleep_unless(stop, Duration::from_millis(100 + rng.below(1100)));
        } else {
            live.push(spawn_watcher(world, false, &mut n));
            std::thread::sleep(Duration::from_micros(rng.below(40_000)));
        }
        if !settle_to_one(world, &mut live, &mut log, 5.0) {
            log.violations
                .push(format!("{} watchers still running after 5 s", live.len()));
        }
        let sig = if stop.load(Ordering::Relaxed) || rng.chance(25) {
            libc::SIGTERM
        } else {
            libc::SIGKILL
        };
        for l in &mut live {
            signal(l, sig);
        }
        for l in live.drain(..) {
            let killed = l.child.id();
            let pid = reap(world, l, &mut log);
            if log.runs.last().is_some_and(|r| r.killed) {
                debug_assert_eq!(killed, pid);
                log.boundaries.push(boundary(world, pid));
            }
        }
    }
    log
}

//! `fm-watch` with real processes: a private tmux server, a scripted
//! stand-in agent (python) that logs every line it receives, and timers
//! shortened through `FM_*` overrides.
//!
//! Nothing here sleeps for a fixed time. The ladder is driven by `--once`
//! passes over records and ladder files written as if they were older (an
//! injected clock); a daemon's work is awaited as a condition, and "nothing
//! more happened" is bounded by passes the test saw complete (the heartbeat
//! `state/.watch.beat` advancing after a change that wakes the daemon).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::harness::{Cmd, Started, TestHome, Tmux, have_python, wait_for, wait_until};

/// A scripted agent: `deaf` logs lines and never acks, `ack` moves the
/// lowest record into handled/ when rung, `busy` shows a busy screen.
const AGENT: &str = r#"
import os, sys
log, mode, inbox = sys.argv[1], sys.argv[2], sys.argv[3]
open(log + ".ready", "w").close()
prompt = {"busy": "BUSY esc to interrupt\n", "blank": ""}.get(mode, "deaf> ")
sys.stdout.write(prompt); sys.stdout.flush()
while True:
    line = sys.stdin.readline()
    if not line:
        break
    with open(log, "a") as f:
        f.write(line)
    if mode == "ack" and "firstmate inbox" in line:
        names = sorted((n for n in os.listdir(inbox) if n.endswith(".msg")), key=lambda n: int(n[:-4]))
        if names:
            os.rename(os.path.join(inbox, names[0]), os.path.join(inbox, "handled", names[0]))
    if mode != "busy":
        sys.stdout.write(prompt); sys.stdout.flush()
"#;

const HARNESS: &str = r#"
[harness.deaf]
launch = ["python3"]
agent_commands = ["python3"]
composer_regex = "^deaf> ?(.*)$"
busy_regex = "^BUSY"
"#;

/// How long ago a test's records were queued: past any grace period.
const AN_HOUR: u64 = 3600;

/// A wake line as `fm-watch` prints it, for a regex (`.` stands for the
/// separator; the time is any RFC 3339 stamp).
fn wake_re(task: &str, kind: &str, text: &str) -> String {
    format!(r"wake \d+ \S+Z {task} {kind} . {text}\n")
}

fn now() -> u64 {
    firstmate::clock::now()
}

/// A record queued `age` seconds ago.
fn record_bytes(age: u64, fire_and_forget: bool) -> Vec<u8> {
    let at = firstmate::clock::rfc3339(now() - age);
    firstmate::inbox::render(&at, "captain", fire_and_forget, b"please look\n")
}

fn queue_record(h: &TestHome, id: &str, seq: u64, age: u64) {
    h.write(
        &format!("state/{id}.inbox/{seq:03}.msg"),
        record_bytes(age, false),
    );
}

fn wakes(h: &TestHome) -> Vec<firstmate::wakes::Wake> {
    let bytes = std::fs::read(h.path("state/wakes.log")).unwrap_or_default();
    firstmate::wakes::parse_all(&bytes)
}

fn wakes_of(h: &TestHome, kind: &str) -> Vec<firstmate::wakes::Wake> {
    wakes(h).into_iter().filter(|w| w.kind == kind).collect()
}

/// `.ring-state` of `id` as (record name, count, last epoch).
#[track_caller]
fn ring_state(h: &TestHome, id: &str) -> (String, u64, u64) {
    let s = h.read_string(&format!("state/{id}.inbox/.ring-state"));
    let f: Vec<&str> = s.trim_end().split('\t').collect();
    assert_eq!(f.len(), 3, "{s:?}");
    (f[0].into(), f[1].parse().unwrap(), f[2].parse().unwrap())
}

/// Moves the last ring of `id`'s ladder `secs` into the past, as if that
/// much time had gone by since.
#[track_caller]
fn age_last_ring(h: &TestHome, id: &str, secs: u64) {
    let (name, count, last) = ring_state(h, id);
    h.write(
        &format!("state/{id}.inbox/.ring-state"),
        format!("{name}\t{count}\t{}\n", last - secs),
    );
}

fn beat(h: &TestHome) -> Option<SystemTime> {
    std::fs::metadata(h.path("state/.watch.beat"))
        .and_then(|m| m.modified())
        .ok()
}

/// Waits until the heartbeat is newer than `since`: a pass has ended.
#[track_caller]
fn wait_beat_after(h: &TestHome, since: Option<SystemTime>) -> Option<SystemTime> {
    wait_for("a watcher pass", 10.0, || beat(h) > since);
    beat(h)
}

/// Puts `state/poke` (a name that is no task's, so a full pass) in place
/// by one rename from outside `state/`: a single file event, so no second
/// pass starts after the one the caller waits for. (A plain write is a
/// create and then a close-write, two events, and the second pass could
/// race whatever the test does next.)
fn poke(h: &TestHome, n: usize) {
    h.write("poke.tmp", format!("{n}\n"));
    std::fs::rename(h.path("poke.tmp"), h.path("state/poke")).unwrap();
}

/// Wakes the running daemon `n` times with a change under `state/` and
/// waits for each pass to end; the last of them began after the call.
#[track_caller]
fn daemon_passes(h: &TestHome, n: usize) {
    let mut last = beat(h);
    for i in 0..n {
        poke(h, i);
        last = wait_beat_after(h, last);
    }
}

/// Counts the opens of one file (inotify), to see a process reach the
/// point where it tries a lock.
struct Opens {
    fd: std::os::fd::OwnedFd,
    /// Opens seen and not yet waited for.
    seen: std::cell::Cell<usize>,
}

impl Opens {
    fn of(path: &Path) -> Opens {
        use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).unwrap();
        inotify::add_watch(&fd, path, WatchFlags::OPEN).unwrap();
        Opens {
            fd,
            seen: std::cell::Cell::new(0),
        }
    }

    #[track_caller]
    fn wait(&self, what: &str) {
        use rustix::event::{PollFd, PollFlags, Timespec};
        use rustix::fs::inotify::{ReadFlags, Reader};
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut buf = vec![std::mem::MaybeUninit::uninit(); 4096];
        while self.seen.get() == 0 {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(!left.is_zero(), "gave up waiting for {what}");
            let timeout = Timespec::try_from(left).unwrap();
            let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
            let _ = rustix::event::poll(&mut fds, Some(&timeout));
            let mut reader = Reader::new(&self.fd, &mut buf);
            while let Ok(ev) = reader.next() {
                if ev.events().contains(ReadFlags::OPEN) {
                    self.seen.set(self.seen.get() + 1);
                }
            }
        }
        self.seen.set(self.seen.get() - 1);
    }
}

struct World {
    home: TestHome,
    tmux: Tmux,
}

impl World {
    #[track_caller]
    fn new(extra_config: &str) -> Option<World> {
        let tmux = Tmux::with_python()?;
        let home = TestHome::new();
        home.write(
            "config/firstmate.toml",
            format!("{HARNESS}\n{extra_config}"),
        );
        home.write("agent.py", AGENT);
        Some(World { home, tmux })
    }

    /// A task whose pane runs the stand-in in `mode`.
    #[track_caller]
    fn agent(&self, id: &str, mode: &str) -> String {
        let log = self.log_path(id);
        let inbox = self.home.path(&format!("state/{id}.inbox"));
        std::fs::create_dir_all(inbox.join("handled")).unwrap();
        let script = self.home.path("agent.py");
        let pane = self.tmux.window(
            id,
            &[
                "python3",
                script.to_str().unwrap(),
                log.to_str().unwrap(),
                mode,
                inbox.to_str().unwrap(),
            ],
        );
        wait_for("the stand-in's prompt", 10.0, || match mode {
            "busy" => self.tmux.capture(&pane).contains("BUSY"),
            // Draws nothing: wait for python itself to run (it marks
            // its start; a launcher shim in front of it is another
            // command for a moment) and be the pane's command.
            "blank" => {
                std::path::Path::new(&format!("{}.ready", log.display())).exists()
                    && self
                        .tmux
                        .run([
                            "display-message",
                            "-p",
                            "-t",
                            &pane,
                            "#{pane_current_command}",
                        ])
                        .trim()
                        .starts_with("python")
            }
            _ => self.tmux.capture(&pane).contains("deaf>"),
        });
        self.meta(id, &pane);
        pane
    }

    fn meta(&self, id: &str, pane: &str) {
        self.home.write(
            &format!("state/{id}.meta"),
            format!(
                "kind=ship\nharness=deaf\npane={pane}\ntmux_socket={}\n",
                self.tmux.socket
            ),
        );
    }

    fn log_path(&self, id: &str) -> PathBuf {
        self.home.path(&format!("{id}.agent.log"))
    }

    /// Doorbells the stand-in of `id` received.
    fn rings(&self, id: &str) -> usize {
        std::fs::read_to_string(self.log_path(id))
            .unwrap_or_default()
            .matches("firstmate inbox")
            .count()
    }

    /// Waits until the stand-in of `id` has read `n` doorbells.
    #[track_caller]
    fn wait_rings(&self, id: &str, n: usize) {
        wait_for(&format!("{id} to read doorbell {n}"), 10.0, || {
            self.rings(id) >= n
        });
        assert_eq!(self.rings(id), n, "{id}: more doorbells than rings");
    }

    /// A record queued an hour ago (past any grace period).
    fn record(&self, id: &str, seq: u64, fire_and_forget: bool) {
        self.home.write(
            &format!("state/{id}.inbox/{seq:03}.msg"),
            record_bytes(AN_HOUR, fire_and_forget),
        );
    }

    fn wakes(&self) -> Vec<firstmate::wakes::Wake> {
        wakes(&self.home)
    }

    fn wakes_of(&self, kind: &str) -> Vec<firstmate::wakes::Wake> {
        wakes_of(&self.home, kind)
    }

    /// `fm-watch` with a minute's grace, three rings and fast delivery.
    fn watch(&self) -> Cmd {
        self.home
            .fm("watch")
            .env("FM_WATCH_GRACE_SECS", "60")
            .env("FM_WATCH_MAX_RINGS", "3")
            .env("FM_WATCH_POLL_SECS", "30")
            .env("FM_SEND_SETTLE_MS", "0")
            .env("FM_SEND_ENTER_WAIT_MS", "50")
    }

    /// One `--once` pass.
    fn once(&self) -> Cmd {
        self.watch().arg("--once")
    }

    /// A daemon with `envs` on top of [`World::watch`]; its output is
    /// checked when the test stops it ([`stop`]).
    fn daemon(&self, envs: &[(&str, &str)]) -> Cmd {
        let mut c = self.watch();
        for (k, v) in envs {
            c = c.env(k, v);
        }
        c
    }
}

/// What a daemon says on stderr when it starts, and nothing else.
fn watching_line(h: &TestHome) -> String {
    format!(
        r"fm-watch: watching {} \(pid \d+\); Ctrl-C to stop\n",
        regex::escape(&h.root().display().to_string())
    )
}

/// SIGTERM, then the daemon's checked output.
#[track_caller]
fn stop(d: Started) -> crate::harness::Output {
    d.signal(libc::SIGTERM);
    d.wait(10.0)
}

#[test]
fn a_deaf_worker_is_rung_three_times_then_escalated_once() {
    let Some(w) = World::new("") else { return };
    w.agent("t1", "deaf");
    w.record("t1", 1, false);
    for attempt in 1..=3 {
        w.once()
            .stdout(format!("rang t1 001.msg (attempt {attempt}) \u{b7} rang\n"))
            .run();
        w.wait_rings("t1", attempt);
        assert_eq!(ring_state(&w.home, "t1").1, attempt as u64);
        if attempt < 3 {
            // Within the grace period of that ring: nothing to do.
            w.once().run();
            age_last_ring(&w.home, "t1", 61);
        }
    }
    // The last ring spent: the next pass escalates (docs/spec/watch.md#ladder step 7).
    w.once()
        .stdout_regex(&wake_re(
            "t1",
            "escalation",
            "001.msg unacknowledged after 3 ring\\(s\\): please look",
        ))
        .run();
    // Escalated: quiet however long it waits.
    age_last_ring(&w.home, "t1", 3600);
    w.once().run();
    w.once().run();
    assert_eq!(w.rings("t1"), 3);
    let esc = w.wakes_of("escalation");
    assert_eq!(esc.len(), 1, "{esc:?}");
    assert_eq!(esc[0].task, "t1");
    assert!(
        esc[0]
            .text
            .starts_with("001.msg unacknowledged after 3 ring(s)")
    );
    assert!(
        w.home.exists("state/t1.inbox/001.msg"),
        "record still pending"
    );
    assert_eq!(w.home.read("state/t1.inbox/.escalated"), b"001.msg\n");
    let rs = w.home.read_string("state/t1.inbox/.ring-state");
    assert!(rs.starts_with("001.msg\t3\t"), "{rs}");
}

#[test]
fn an_ack_stops_the_ladder_and_the_next_message_starts_fresh() {
    let Some(w) = World::new("") else { return };
    w.agent("t1", "ack");
    w.record("t1", 1, false);
    w.once()
        .stdout("rang t1 001.msg (attempt 1) \u{b7} rang\n")
        .run();
    wait_for("the stand-in's ack", 10.0, || {
        w.home.exists("state/t1.inbox/handled/001.msg")
    });
    age_last_ring(&w.home, "t1", AN_HOUR);
    w.once().run();
    assert!(!w.home.exists("state/t1.inbox/.ring-state"));
    assert!(!w.home.exists("state/t1.inbox/.escalated"));
    w.once().run();
    assert_eq!(w.rings("t1"), 1);
    assert!(w.wakes().is_empty(), "{:?}", w.wakes());
    w.record("t1", 2, false);
    w.once()
        .stdout("rang t1 002.msg (attempt 1) \u{b7} rang\n")
        .run();
    wait_for("the second ack", 10.0, || {
        w.home.exists("state/t1.inbox/handled/002.msg")
    });
    w.once().run();
    w.once().run();
    assert_eq!(w.rings("t1"), 2);
    assert!(w.wakes().is_empty(), "{:?}", w.wakes());
}

#[test]
fn a_busy_worker_is_not_rung_and_goes_overdue_once() {
    let Some(w) = World::new("") else { return };
    w.agent("rec", "deaf");
    let later = now() + 3600;
    w.home
        .write("state/rec.busy", format!("busy {later} prompt-hook\n"));
    w.agent("screen", "busy");
    w.record("rec", 1, false);
    w.record("screen", 1, false);
    // Queued an hour ago, past unhandled_max_secs (900 s).
    let overdue = "001.msg unhandled for \\S+ while the worker is busy: please look";
    w.once()
        .stdout_regex(&format!(
            "{}{}",
            wake_re("rec", "overdue", overdue),
            wake_re("screen", "overdue", overdue)
        ))
        .run();
    w.once().run();
    w.once().run();
    assert_eq!(w.rings("rec"), 0);
    assert_eq!(w.rings("screen"), 0);
    let overdue = w.wakes_of("overdue");
    assert_eq!(overdue.len(), 2, "{overdue:?}");
    assert_eq!(w.wakes().len(), 2);
}

#[test]
fn a_dead_agent_or_vanished_pane_gets_one_wake_and_no_typing() {
    let Some(w) = World::new("") else { return };
    let pane = w.tmux.window("dead", &["sleep", "1000"]);
    w.meta("dead", &pane);
    w.meta("gone", "%9999");
    w.record("dead", 1, false);
    w.record("gone", 1, false);
    w.once()
        .stdout_regex(&format!(
            "{}{}",
            wake_re(
                "dead",
                "dead-agent",
                &format!("001.msg pending but agent in pane {pane} exited: please look")
            ),
            wake_re(
                "gone",
                "dead-agent",
                "001.msg pending but pane %9999 gone: please look"
            )
        ))
        .run();
    w.once().run();
    let dead = w.wakes_of("dead-agent");
    assert_eq!(dead.len(), 2, "{dead:?}");
    assert!(!w.tmux.capture(&pane).contains("firstmate"));
    assert!(w.home.exists("state/dead.inbox/001.msg"));
}

#[test]
fn a_killed_daemon_is_restarted_and_the_count_continues() {
    let Some(w) = World::new("") else { return };
    w.agent("t1", "deaf");
    w.record("t1", 1, false);
    // An hour's grace: the first daemon rings once and then waits.
    let rang = "rang t1 001.msg (attempt 1) \u{b7} rang\n";
    let first = w
        .daemon(&[("FM_WATCH_GRACE_SECS", "3600")])
        .status(-1)
        .stdout(rang)
        .stderr_regex(&watching_line(&w.home))
        .start();
    w.wait_rings("t1", 1);
    wait_for("the first daemon's report of its ring", 10.0, || {
        first.stdout_so_far() == rang
    });
    first.signal(libc::SIGKILL);
    first.wait(10.0);
    // No grace: the second rings as soon as it may, and continues the count.
    let second = w
        .daemon(&[("FM_WATCH_GRACE_SECS", "0")])
        .stdout_regex(&format!(
            "{}rang t1 001.msg \\(attempt 2\\) . rang\nrang t1 001.msg \\(attempt 3\\) . rang\n{}",
            wake_re(
                "-",
                "watcher-recovered",
                "previous watcher \\(pid \\d+\\) stopped without releasing the lock"
            ),
            wake_re(
                "t1",
                "escalation",
                "001.msg unacknowledged after 3 ring\\(s\\): please look"
            )
        ))
        .stderr_regex(&watching_line(&w.home))
        .start();
    wait_for("the escalation", 10.0, || {
        !w.wakes_of("escalation").is_empty()
    });
    daemon_passes(&w.home, 2);
    stop(second);
    assert_eq!(w.rings("t1"), 3);
    assert_eq!(w.wakes_of("escalation").len(), 1);
    assert_eq!(w.wakes_of("watcher-recovered").len(), 1);
}

#[test]
fn only_one_watcher_acts_at_a_time() {
    let Some(w) = World::new("") else { return };
    w.agent("t1", "deaf");
    w.record("t1", 1, false);
    let start = || {
        w.daemon(&[("FM_WATCH_GRACE_SECS", "0")])
            .stdout_any()
            .stderr_any()
            .start()
    };
    let mut a = start();
    let mut b = start();
    let (loser, winner) = loop {
        if a.exited().is_some() {
            break (a, b);
        }
        if b.exited().is_some() {
            break (b, a);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let said = loser.wait(1.0);
    let already = format!("fm-watch: already running (pid {})\n", winner.pid());
    assert_eq!(said.code, 0);
    assert_eq!(said.stdout(), already);
    assert_eq!(said.stderr(), "");
    w.once().stdout(&already).run();
    wait_for("the escalation", 10.0, || {
        !w.wakes_of("escalation").is_empty()
    });
    daemon_passes(&w.home, 2);
    let out = stop(winner);
    assert_eq!(out.code, 0);
    for n in 1..=3 {
        assert!(
            out.stdout()
                .contains(&format!("rang t1 001.msg (attempt {n}) \u{b7} rang\n")),
            "{}",
            out.stdout()
        );
    }
    assert!(!out.stdout().contains("(attempt 4)"), "{}", out.stdout());
    assert!(
        regex::Regex::new(&format!("^{}$", watching_line(&w.home)))
            .unwrap()
            .is_match(&out.stderr()),
        "{}",
        out.stderr()
    );
    assert_eq!(w.rings("t1"), 3);
    assert_eq!(w.wakes_of("escalation").len(), 1);
}

#[test]
fn fire_and_forget_never_rings_nor_hides_an_ordinary_record() {
    let Some(w) = World::new("") else { return };
    w.agent("ff", "deaf");
    w.agent("mixed", "deaf");
    w.record("ff", 1, true);
    w.record("mixed", 1, true);
    w.record("mixed", 2, false);
    let once = || w.once().env("FM_WATCH_MAX_RINGS", "1");
    once()
        .stdout("rang mixed 002.msg (attempt 1) \u{b7} rang\n")
        .run();
    w.wait_rings("mixed", 1);
    age_last_ring(&w.home, "mixed", 61);
    once()
        .stdout_regex(&wake_re(
            "mixed",
            "escalation",
            "002.msg unacknowledged after 1 ring\\(s\\): please look",
        ))
        .run();
    once().run();
    assert_eq!(w.rings("ff"), 0);
    assert!(!w.home.exists("state/ff.inbox/.ring-state"));
    assert_eq!(w.rings("mixed"), 1);
    let esc = w.wakes_of("escalation");
    assert_eq!(esc.len(), 1);
    assert_eq!(esc[0].task, "mixed");
    assert!(esc[0].text.starts_with("002.msg"), "{:?}", esc[0]);
}

#[test]
fn status_lines_from_concurrent_writers_surface_exactly_once() {
    let home = TestHome::new();
    // Written before any watcher ran: read from the beginning.
    home.write(
        "state/early.status",
        "done: before the watcher\nnote: skip\n",
    );
    let watch = || home.fm("watch").env("FM_WATCH_POLL_SECS", "30");
    let expected = 8 * 6 + 1;
    let d = watch()
        .stdout_regex(&format!(
            r"(wake \d+ \S+Z \S+ status . [^\n]+\n){{{expected}}}"
        ))
        .stderr_regex(&watching_line(&home))
        .start();
    let writers: Vec<_> = (0..8)
        .map(|n| {
            let root = home.root();
            std::thread::spawn(move || {
                for i in 0..12 {
                    let task = format!("w{}", n % 3);
                    let verb = ["done", "note", "blocked", "working"][i % 4];
                    Cmd::new(crate::harness::bin("fm-status"))
                        .env("FM_HOME", &root)
                        .args([&task, verb, &format!("writer {n} line {i}")])
                        .run();
                }
            })
        })
        .collect();
    for t in writers {
        t.join().unwrap();
    }
    let count = || wakes(&home).len();
    assert!(wait_until(10.0, || count() == expected), "{}", count());
    stop(d);
    assert!(
        home.read("state/.watch.lock").is_empty(),
        "clean exit clears the pid"
    );
    watch().arg("--once").run();
    assert_eq!(count(), expected, "no repeats across restarts");
    let drained = home
        .fm("watch")
        .args(["--drain", "--json"])
        .stdout_json()
        .run();
    let v = drained.json();
    let texts: std::collections::BTreeSet<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|w| format!("{} {}", w["task"], w["text"]))
        .collect();
    assert_eq!(v.as_array().unwrap().len(), expected);
    assert_eq!(texts.len(), expected, "each wake once");
    assert!(v.as_array().unwrap().iter().all(|w| w["kind"] == "status"));
    home.fm("watch")
        .args(["--drain", "--json"])
        .stdout("[]\n")
        .run();
}

#[test]
fn an_unwritable_ladder_file_raises_one_wake_and_never_rings() {
    let Some(w) = World::new("") else { return };
    w.agent("t1", "deaf");
    w.record("t1", 1, false);
    std::fs::create_dir_all(w.home.path("state/t1.inbox/.ring-state")).unwrap();
    let ring_state = w.home.path("state/t1.inbox/.ring-state");
    let text = format!(
        "ladder file {} is not writable; 001.msg will not be re-rung until it is fixed",
        ring_state.display()
    );
    let unreadable = format!(
        "fm-watch: warning: t1: read failed ({})",
        ring_state.display()
    );
    w.once()
        .stdout_regex(&wake_re("t1", "escalation", &regex::escape(&text)))
        .stderr_regex("(fm-watch: warning: t1: [^\n]+\n)+")
        .stderr_has(&unreadable)
        .run();
    // Later passes still cannot read it, and say so; nothing more happens.
    for _ in 0..3 {
        w.once()
            .stderr_regex(&format!("{}[^\n]*\n", regex::escape(&unreadable)))
            .run();
    }
    let all = w.wakes();
    assert_eq!(all.len(), 1, "{all:?}");
    assert!(all[0].text.contains("not writable"), "{all:?}");
    assert_eq!(w.rings("t1"), 0);
    assert!(w.home.exists("state/t1.inbox/001.msg"));
}

#[test]
fn on_wake_runs_the_argv_without_a_shell_and_failures_are_not_fatal() {
    if !have_python() {
        return;
    }
    let home = TestHome::new();
    let hook = home.path("hook.py");
    let got = home.path("hook.out");
    std::fs::write(
        &hook,
        "import sys, json\nopen(sys.argv[1], 'a').write(json.dumps(sys.argv[2:]) + '\\n')\n",
    )
    .unwrap();
    home.write(
        "config/firstmate.toml",
        format!(
            "[watch]\non_wake = [\"python3\", \"{}\", \"{}\", \"{{task}}\", \"{{kind}}\", \"{{text}}\"]\n",
            hook.display(),
            got.display()
        ),
    );
    home.write("state/t1.status", "blocked: $(touch pwned); rm -rf x\n");
    home.fm("watch")
        .arg("--once")
        .stdout_regex(&wake_re(
            "t1",
            "status",
            &regex::escape("blocked: $(touch pwned); rm -rf x"),
        ))
        .run();
    let line = std::fs::read_to_string(&got).unwrap();
    let argv: Vec<String> = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(argv, ["t1", "status", "blocked: $(touch pwned); rm -rf x"]);
    assert!(!home.exists("pwned"));
    home.write(
        "config/firstmate.toml",
        "[watch]\non_wake = [\"/nonexistent/hook\", \"{text}\"]\n",
    );
    home.write("state/t2.status", "done: ok\n");
    home.fm("watch")
        .arg("--once")
        .stdout_regex(&wake_re("t2", "status", "done: ok"))
        .stderr_has("on_wake hook")
        .run();
}

#[test]
fn until_wake_status_crontab_and_drain() {
    let home = TestHome::new();
    home.write("state/t1.status", "done: old news\n");
    home.fm("watch")
        .arg("--once")
        .stdout_regex(&wake_re("t1", "status", "done: old news"))
        .run();
    let before = beat(&home);
    let follower = home
        .fm("watch")
        .arg("--until-wake")
        .env("FM_WATCH_POLL_SECS", "30")
        .stdout_regex(&wake_re(
            "t1",
            "status",
            "needs-decision key=db: which database\\?",
        ))
        .start();
    // Its first pass has ended: the line below reaches it as a change.
    wait_beat_after(&home, before);
    home.fm("status")
        .args(["t1", "needs-decision", "--key", "db", "which database?"])
        .run();
    let s = follower.wait(10.0).stdout();
    assert!(
        s.contains("t1 status") && s.contains("needs-decision key=db: which database?"),
        "{s}"
    );
    assert!(!s.contains("old news"));
    home.write(
        "state/t1.inbox/001.msg",
        firstmate::inbox::render("2020-01-01T00:00:00Z", "captain", false, b"x"),
    );
    home.fm("watch")
        .arg("--status")
        .stdout_has("watcher: not running")
        .stdout_has("t1: 1 pending")
        .run();
    let v = home
        .fm("watch")
        .args(["--status", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(v["running"], false);
    assert_eq!(v["tasks"][0]["pending"], 1);
    let root = home.root().display().to_string();
    home.fm("watch")
        .arg("--crontab")
        .stdout_has(&format!("* * * * * FM_HOME='{root}' "))
        .stdout_has("fm-watch' --once")
        .run();
    // Both wakes so far, once each.
    home.fm("watch")
        .arg("--drain")
        .stdout_regex(&format!(
            "{}{}",
            wake_re("t1", "status", "done: old news"),
            wake_re("t1", "status", "needs-decision key=db: which database\\?")
        ))
        .run();
    home.fm("watch").arg("--drain").stdout("").run();
}

/// `fm-watch --once` with no tmux: a task without a pane is rung (outcome
/// `no-pane`) and escalated like any other.
fn once(h: &TestHome) -> Cmd {
    h.fm("watch")
        .args(["--once"])
        .env("FM_WATCH_GRACE_SECS", "0")
        .env("FM_WATCH_MAX_RINGS", "1")
}

#[test]
fn a_requeued_record_with_the_same_name_and_text_escalates_again() {
    let h = TestHome::new();
    h.write("state/t9.meta", "kind=ship\n");
    queue_record(&h, "t9", 1, 200);
    let escalation = wake_re(
        "t9",
        "escalation",
        "001.msg unacknowledged after 1 ring\\(s\\): please look",
    );
    once(&h)
        .stdout("rang t9 001.msg (attempt 1) \u{b7} no-pane\n")
        .run();
    once(&h).stdout_regex(&escalation).run();
    assert_eq!(wakes_of(&h, "escalation").len(), 1);
    once(&h).run();
    assert_eq!(wakes_of(&h, "escalation").len(), 1, "one per episode");
    // That episode happened a while ago: its wakes move into the past.
    let log = h.read_string("state/wakes.log");
    let aged: String = log
        .lines()
        .map(|l| {
            let mut f: Vec<String> = l.split('\t').map(String::from).collect();
            f[1] = (f[1].parse::<u64>().unwrap() - 100).to_string();
            f.join("\t") + "\n"
        })
        .collect();
    h.write("state/wakes.log", aged);
    // Teardown and a fresh spawn: the inbox starts again at 001.msg with
    // the same text, queued after that episode.
    std::fs::remove_dir_all(h.path("state/t9.inbox")).unwrap();
    queue_record(&h, "t9", 1, 0);
    once(&h)
        .stdout("rang t9 001.msg (attempt 1) \u{b7} no-pane\n")
        .run();
    once(&h).stdout_regex(&escalation).run();
    let esc = wakes_of(&h, "escalation");
    assert_eq!(esc.len(), 2, "{esc:?}");
    assert_eq!(esc[0].text, esc[1].text);
}

#[test]
fn a_status_wake_that_cannot_be_appended_is_retried_next_pass() {
    let h = TestHome::new();
    h.write(
        "state/t7.status",
        "working: a\ndone: shipped\nblocked: db?\n",
    );
    // wakes.log is a directory for one pass: nothing can be appended.
    std::fs::create_dir_all(h.path("state/wakes.log")).unwrap();
    once(&h)
        .stderr_has("fm-watch: warning: t7: cannot append wake")
        .run();
    std::fs::remove_dir(h.path("state/wakes.log")).unwrap();
    once(&h)
        .stdout_regex(&format!(
            "{}{}",
            wake_re("t7", "status", "done: shipped"),
            wake_re("t7", "status", "blocked: db\\?")
        ))
        .run();
    let texts: Vec<String> = wakes_of(&h, "status").into_iter().map(|w| w.text).collect();
    assert_eq!(texts, ["done: shipped", "blocked: db?"]);
    once(&h).run();
    assert_eq!(wakes_of(&h, "status").len(), 2, "each line exactly once");
}

/// `fm-watch` with a long poll, in `h`.
fn watch_cmd(h: &TestHome) -> Cmd {
    h.fm("watch").env("FM_WATCH_POLL_SECS", "30")
}

/// A daemon in `h` that holds the lock (its pid recorded in it).
#[track_caller]
fn locked_daemon(h: &TestHome) -> Started {
    // How it ends is each test's to say.
    let d = watch_cmd(h)
        .status_any()
        .stdout_any()
        .stderr_regex(&watching_line(h))
        .start();
    let pid = format!("{}\n", d.pid());
    wait_for("the daemon's pid in the lock", 10.0, || {
        h.exists("state/.watch.lock") && h.read("state/.watch.lock") == pid.as_bytes()
    });
    // Started up: it says so after recording its pid.
    wait_for("the daemon's start line", 10.0, || {
        d.stderr_so_far().ends_with("Ctrl-C to stop\n")
    });
    d
}

fn append(h: &TestHome, rel: &str, bytes: &str) {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(h.path(rel))
        .and_then(|mut f| f.write_all(bytes.as_bytes()))
        .unwrap();
}

#[test]
fn until_wake_takes_over_when_the_watcher_it_follows_is_killed() {
    let h = TestHome::new();
    let d = locked_daemon(&h);
    // Frozen, the daemon holds the lock but cannot surface the line;
    // killed, it never will.
    d.signal(libc::SIGSTOP);
    let opens = Opens::of(&h.path("state/.watch.lock"));
    let follower = watch_cmd(&h)
        .arg("--until-wake")
        .stdout_regex(&format!(
            "{}{}",
            wake_re(
                "-",
                "watcher-recovered",
                "previous watcher \\(pid \\d+\\) stopped without releasing the lock"
            ),
            wake_re("t1", "status", "done: x")
        ))
        .start();
    // It is trying the lock, which the frozen daemon holds: it follows.
    // (Were the daemon killed between that open and the try itself, the
    // follower would simply take the lock; the outcome is the same.)
    opens.wait("the follower's try of the lock");
    append(&h, "state/t1.status", "done: x\n");
    d.signal(libc::SIGKILL);
    assert_eq!(d.wait(10.0).code, -1, "killed by the signal");
    let out = follower.wait(10.0).stdout();
    assert!(out.contains("t1 status \u{b7} done: x"), "{out}");
    assert!(out.contains("- watcher-recovered \u{b7}"), "{out}");
    assert_eq!(wakes_of(&h, "status").len(), 1);
    assert!(h.read("state/.watch.lock").is_empty(), "a clean exit");
}

#[test]
fn until_wake_prints_every_wake_of_the_batch_it_wakes_on() {
    let h = TestHome::new();
    let lines = "done: a\nblocked: b\nfailed: c\n";
    let batch = |task: &str| {
        format!(
            "{}{}{}",
            wake_re(task, "status", "done: a"),
            wake_re(task, "status", "blocked: b"),
            wake_re(task, "status", "failed: c")
        )
    };
    // Alone, it is the watcher: the whole pass comes out.
    let before = beat(&h);
    let alone = watch_cmd(&h)
        .arg("--until-wake")
        .stdout_regex(&batch("t1"))
        .start();
    wait_beat_after(&h, before);
    append(&h, "state/t1.status", lines);
    alone.wait(10.0);
    // Following a running watcher: the whole of that watcher's pass.
    let d = locked_daemon(&h);
    let opens = Opens::of(&h.path("state/.watch.lock"));
    let follower = watch_cmd(&h)
        .arg("--until-wake")
        .stdout_regex(&batch("t2"))
        .start();
    opens.wait("the follower's try of the lock");
    append(&h, "state/t2.status", lines);
    follower.wait(10.0);
    let out = stop(d);
    assert_eq!(out.code, 0, "{}", out.stderr());
}

#[test]
fn a_symlinked_record_is_skipped_and_the_tasks_other_records_still_ring() {
    let h = TestHome::new();
    h.write("state/t5.meta", "kind=ship\n");
    let old =
        |body: &[u8]| firstmate::inbox::render("2020-01-01T00:00:00Z", "captain", false, body);
    h.write("elsewhere.msg", old(b"not in the inbox\n"));
    h.write("state/t5.inbox/004.msg", old(b"please look\n"));
    std::os::unix::fs::symlink(h.path("elsewhere.msg"), h.path("state/t5.inbox/003.msg")).unwrap();
    let once = || {
        h.fm("watch")
            .arg("--once")
            .env("FM_WATCH_GRACE_SECS", "1")
            .env("FM_WATCH_MAX_RINGS", "1")
    };
    let skipping = "fm-watch: warning: t5: skipping 003.msg: refusing to follow symlink";
    once()
        .stdout("rang t5 004.msg (attempt 1) \u{b7} no-pane\n")
        .stderr_regex(&format!("{}[^\n]*\n", regex::escape(skipping)))
        .run();
    once()
        .stdout_regex(&wake_re(
            "t5",
            "escalation",
            "004.msg unacknowledged after 1 ring\\(s\\): please look",
        ))
        .stderr_has(skipping)
        .run();
    let esc = wakes_of(&h, "escalation");
    assert_eq!(esc.len(), 1, "{esc:?}");
    assert!(
        esc[0]
            .text
            .starts_with("004.msg unacknowledged after 1 ring(s)"),
        "{esc:?}"
    );
    // A daemon warns once, not on every pass.
    let d = watch_cmd(&h)
        .stderr_regex(&format!(
            "{}{}[^\n]*\n",
            watching_line(&h),
            regex::escape(skipping)
        ))
        .start();
    daemon_passes(&h, 3);
    let out = stop(d);
    let said = out.stderr();
    assert_eq!(said.matches("skipping 003.msg").count(), 1, "{said}");
    assert!(
        h.exists("state/t5.inbox/003.msg"),
        "left alone, not followed"
    );
}

#[test]
fn on_wake_gets_the_text_exactly_as_logged() {
    let h = TestHome::new();
    let got = h.path("hook.out");
    h.write(
        "config/firstmate.toml",
        format!(
            "[watch]\non_wake = [\"sh\", \"-c\", 'printf %s \"$1\" > {}', \"sh\", \"{{text}}\"]\n",
            got.display()
        ),
    );
    h.write("state/t1.status", "done: a\tb \x1b[31mred\x1b[0m\n");
    h.fm("watch")
        .arg("--once")
        .stdout_regex(r"wake 1 \S+Z t1 status . done: [^\t\x1b\n]+\n")
        .run();
    let logged = wakes_of(&h, "status");
    assert_eq!(logged.len(), 1);
    assert!(!logged[0].text.contains(['\t', '\x1b']), "{logged:?}");
    assert_eq!(std::fs::read_to_string(&got).unwrap(), logged[0].text);
}

#[test]
fn crontab_escapes_percent_signs_for_cron() {
    let dir = tempfile::Builder::new()
        .prefix("fm-test-50%-")
        .tempdir()
        .unwrap();
    let h = TestHome { dir };
    for d in ["config", "data", "state"] {
        std::fs::create_dir_all(h.path(d)).unwrap();
    }
    h.write("config/firstmate.toml", "");
    let root = h.root().display().to_string();
    assert!(root.contains('%'));
    let escaped = root.replace('%', "\\%");
    let run = h
        .fm("watch")
        .arg("--crontab")
        .stdout_has(&format!("FM_HOME='{escaped}' "))
        .run();
    let out = run.stdout();
    assert!(
        out.match_indices('%')
            .all(|(i, _)| out[..i].ends_with('\\')),
        "an unescaped %: {out}"
    );
}

/// A dialog owns the worker's keyboard (the stand-in's `dialog <name>`):
/// the send types nothing and reports `dialog`; the watcher raises ONE
/// `dialog` wake naming it — not one per pass, and no ring — then rings
/// the held doorbell as soon as the dialog closes; a new dialog later
/// gets a wake of its own.
#[test]
fn a_dialog_gets_one_wake_no_ring_and_the_doorbell_once_it_closes() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (_wt, pane) = crate::control::task(&h, &t, "t1", "direct-PR");
    let screen_has = |s: &str| wait_until(10.0, || t.capture(&pane).contains(s));
    let doorbells = || {
        t.capture(&pane)
            .matches("submitted: : 'firstmate inbox")
            .count()
    };
    let send = |text: &str, outcome: &str| {
        h.fm("send")
            .args(["t1", text])
            .env("FM_SEND_SETTLE_MS", "0")
            .env("FM_SEND_ENTER_WAIT_MS", "100")
            .stdout_regex(&format!(
                r"^queued t1 \d+\.msg \u{{b7}} doorbell {outcome}\n$"
            ))
            .stderr_any()
            .run();
    };
    let once = || {
        h.fm("watch")
            .arg("--once")
            .env("FM_WATCH_GRACE_SECS", "60")
            .env("FM_SEND_SETTLE_MS", "0")
            .env("FM_SEND_ENTER_WAIT_MS", "100")
    };
    send("dialog permission", "rang");
    assert!(
        screen_has("stand-in dialog: permission?"),
        "{}",
        t.capture(&pane)
    );
    assert!(h.exists("state/t1.inbox/handled/001.msg"));
    // Nothing typed into the dialog; the doorbell is owed.
    send("are you there", "dialog");
    assert_eq!(doorbells(), 1, "{}", t.capture(&pane));
    assert!(h.exists("state/t1.inbox/.ring-owed"));
    once()
        .stdout_regex(&wake_re(
            "t1",
            "dialog",
            "waiting in a dialog: permission; 002.msg not rung: are you there",
        ))
        .run();
    once().run();
    once().run();
    assert_eq!(wakes_of(&h, "dialog").len(), 1);
    assert_eq!(wakes(&h).len(), 1);
    assert_eq!(doorbells(), 1, "{}", t.capture(&pane));
    assert!(t.capture(&pane).contains("stand-in dialog: permission?"));
    assert_eq!(h.read("state/t1.inbox/.dialog"), b"permission\n");
    let events = h.read_string("state/events.jsonl");
    assert_eq!(events.matches("\"watch.dialog\"").count(), 1, "{events}");
    // Closed: the next pass rings the held doorbell, and it is read.
    t.run(["send-keys", "-t", pane.as_str(), "Escape"]);
    assert!(screen_has("dialog permission cancelled"));
    once()
        .stdout("rang t1 002.msg (attempt 0) \u{b7} rang\n")
        .run();
    assert!(wait_until(10.0, || h.exists("state/t1.inbox/handled/002.msg")));
    assert!(!h.exists("state/t1.inbox/.dialog"));
    assert!(!h.exists("state/t1.inbox/.ring-owed"));
    // A new dialog later: a wake of its own.
    send("dialog trust", "rang");
    assert!(screen_has("stand-in dialog: trust?"));
    send("and now", "dialog");
    once()
        .stdout_regex(&wake_re(
            "t1",
            "dialog",
            "waiting in a dialog: trust; 004.msg not rung: and now",
        ))
        .run();
    once().run();
    assert_eq!(wakes_of(&h, "dialog").len(), 2);
    assert_eq!(doorbells(), 3, "{}", t.capture(&pane));
}

/// A second dialog of the same name right after the captain answered the
/// first with `fm-send --key` (an agent asking for two tool calls in a
/// row) is a new dialog: it gets exactly one wake of its own, although no
/// pass saw the screen without a dialog in between. The same dialog still
/// up gets none.
#[test]
fn a_second_dialog_right_after_the_captains_key_gets_its_own_wake() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (_wt, pane) = crate::control::task(&h, &t, "t1", "direct-PR");
    let screen_has = |s: &str| wait_until(10.0, || t.capture(&pane).contains(s));
    let send = |text: &str, outcome: &str| {
        h.fm("send")
            .args(["t1", text])
            .env("FM_SEND_SETTLE_MS", "0")
            .env("FM_SEND_ENTER_WAIT_MS", "100")
            .stdout_regex(&format!(
                r"^queued t1 \d+\.msg \u{{b7}} doorbell {outcome}\n$"
            ))
            .stderr_any()
            .run();
    };
    let once = || {
        h.fm("watch")
            .arg("--once")
            .env("FM_WATCH_GRACE_SECS", "60")
            .env("FM_SEND_SETTLE_MS", "0")
            .env("FM_SEND_ENTER_WAIT_MS", "100")
    };
    let key = || {
        h.fm("send")
            .args(["t1", "--key", "Enter"])
            .stdout(format!("key Enter \u{b7} t1 {pane}\n"))
            .run();
    };
    let wake = wake_re(
        "t1",
        "dialog",
        "waiting in a dialog: permission; 002.msg not rung: are you there",
    );
    send("dialog permission\ndialog permission", "rang");
    assert!(
        screen_has("stand-in dialog: permission?"),
        "{}",
        t.capture(&pane)
    );
    send("are you there", "dialog");
    once().stdout_regex(&wake).run();
    once().stdout("").run();
    assert_eq!(wakes_of(&h, "dialog").len(), 1);
    // The captain answers; the agent asks again at once.
    key();
    assert!(
        screen_has("dialog permission answered"),
        "{}",
        t.capture(&pane)
    );
    assert!(t.capture(&pane).contains("stand-in dialog: permission?"));
    let mark = h.read_string("state/t1.inbox/.dialog");
    assert!(
        mark.starts_with("permission\t") && mark.ends_with('\n'),
        "{mark:?}"
    );
    // Passes right after the key wait for the pane to redraw; one comes
    // within seconds with the second dialog's wake.
    assert!(
        wait_until(10.0, || {
            once().stdout_any().run();
            wakes_of(&h, "dialog").len() >= 2
        }),
        "no wake for the second dialog"
    );
    let dialogs = wakes_of(&h, "dialog");
    assert_eq!(dialogs.len(), 2, "{dialogs:?}");
    assert_eq!(
        dialogs[1].text,
        "waiting in a dialog: permission; 002.msg not rung: are you there"
    );
    assert_eq!(h.read("state/t1.inbox/.dialog"), b"permission\n");
    // Still up, no key since: no more wakes.
    once().stdout("").run();
    once().stdout("").run();
    assert_eq!(wakes_of(&h, "dialog").len(), 2);
    assert_eq!(wakes(&h).len(), 2);
    // Answered: the held doorbell rings, and nothing is left of the dialog.
    key();
    assert!(wait_until(10.0, || t
        .capture(&pane)
        .matches("dialog permission answered")
        .count()
        == 2));
    once()
        .stdout("rang t1 002.msg (attempt 0) \u{b7} rang\n")
        .run();
    assert!(wait_until(10.0, || h.exists("state/t1.inbox/handled/002.msg")));
    assert!(!h.exists("state/t1.inbox/.dialog"));
    assert_eq!(wakes_of(&h, "dialog").len(), 2);
}

/// The event-driven daemon (polling only every 30 s here): a record
/// rewritten in place (no rename, so its inbox's times stay as they were)
/// is read again because an event named its task; a task created after
/// the daemon started has its new inbox watched and its record rung at its
/// due second; a status line surfaces at once.
#[test]
fn the_daemon_passes_on_events_and_dues_and_rereads_an_inbox_rewritten_in_place() {
    use std::io::Write;
    let home = TestHome::new();
    home.write("state/old.meta", "kind=ship\n");
    // Fire-and-forget: never rung.
    home.write("state/old.inbox/001.msg", record_bytes(600, true));
    let d = home
        .fm("watch")
        .env("FM_WATCH_POLL_SECS", "30")
        .env("FM_WATCH_GRACE_SECS", "2")
        .status_any()
        .stdout_any()
        .stderr_regex(&watching_line(&home))
        .start();
    wait_for("the daemon's start line", 10.0, || {
        d.stderr_so_far().ends_with("Ctrl-C to stop\n")
    });
    // Settled (its times over 2 s old), then a pass over every task (a
    // name that is no task's) remembers the inbox.
    std::thread::sleep(Duration::from_secs(3));
    let last = beat(&home);
    poke(&home, 1);
    wait_beat_after(&home, last);
    assert!(!home.exists("state/old.inbox/.ring-state"));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(home.path("state/old.inbox/001.msg"))
        .unwrap();
    f.write_all(&record_bytes(600, false)).unwrap();
    drop(f);
    wait_for("the record rewritten in place rung", 10.0, || {
        home.exists("state/old.inbox/.ring-state")
    });
    home.write("state/new.meta", "kind=ship\n");
    queue_record(&home, "new", 1, 0);
    wait_for("the new task's record rung at its due second", 10.0, || {
        home.exists("state/new.inbox/.ring-state")
    });
    append(&home, "state/new.status", "needs-decision: which way?\n");
    wait_for("the status wake", 10.0, || {
        wakes_of(&home, "status").iter().any(|w| w.task == "new")
    });
    stop(d);
}

/// A record written in place (created, written in two parts, then closed)
/// is read once its writer closes it, never half-written; a record linked
/// into an inbox (a create and no close-write) is still rung, a second or
/// two later.
#[test]
fn the_daemon_reads_a_record_written_in_place_once_its_writer_closes_it() {
    use std::io::Write;
    let home = TestHome::new();
    home.write("state/a.meta", "kind=ship\n");
    home.write("state/b.meta", "kind=ship\n");
    std::fs::create_dir_all(home.path("state/a.inbox")).unwrap();
    std::fs::create_dir_all(home.path("state/b.inbox")).unwrap();
    let d = home
        .fm("watch")
        .env("FM_WATCH_POLL_SECS", "30")
        .env("FM_WATCH_GRACE_SECS", "2")
        .status_any()
        .stdout_any()
        .stderr_regex(&watching_line(&home))
        .start();
    wait_for("the daemon's start line", 10.0, || {
        d.stderr_so_far().ends_with("Ctrl-C to stop\n")
    });
    let last = beat(&home);
    poke(&home, 1);
    wait_beat_after(&home, last);
    let bytes = record_bytes(600, false);
    let (head, tail) = bytes.split_at(bytes.len() / 3);
    let mut f = std::fs::File::create(home.path("state/a.inbox/001.msg")).unwrap();
    f.write_all(head).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    f.write_all(tail).unwrap();
    drop(f);
    wait_for("the record written in place rung", 10.0, || {
        home.exists("state/a.inbox/.ring-state")
    });
    home.write("b.msg", &bytes);
    std::fs::hard_link(home.path("b.msg"), home.path("state/b.inbox/001.msg")).unwrap();
    wait_for("the linked record rung", 10.0, || {
        home.exists("state/b.inbox/.ring-state")
    });
    stop(d);
    assert_eq!(ring_state(&home, "a").0, "001.msg");
    assert_eq!(ring_state(&home, "b").0, "001.msg");
}

/// The daemon replaces a ring state by swapping the new file in and
/// removes the old one off its loop: while it runs, the old ones go, and
/// once it has stopped none is left behind, however the rings fell.
#[test]
fn the_daemons_rerings_leave_no_old_ring_state_behind() {
    let home = TestHome::new();
    home.write("state/t.meta", "kind=ship\n");
    queue_record(&home, "t", 1, 0);
    let d = home
        .fm("watch")
        .env("FM_WATCH_POLL_SECS", "30")
        .env("FM_WATCH_GRACE_SECS", "1")
        .status_any()
        .stdout_any()
        .stderr_regex(&watching_line(&home))
        .start();
    let left = || -> Vec<String> {
        std::fs::read_dir(home.path("state/t.inbox"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.contains(".tmp."))
            .collect()
    };
    wait_for("the record rung twice", 20.0, || {
        home.exists("state/t.inbox/.ring-state") && ring_state(&home, "t").1 >= 2
    });
    wait_for("the replaced ring state removed", 10.0, || {
        left().is_empty()
    });
    wait_for("the record rung a third time", 20.0, || {
        ring_state(&home, "t").1 >= 3
    });
    stop(d);
    assert_eq!(ring_state(&home, "t").0, "001.msg");
    assert_eq!(left(), Vec::<String>::new());
}

/// A dead agent or a vanished pane with no mail waiting is heard too: one
/// `dead-agent` wake per agent (pane and spawn), not one per pass. A look
/// that finds the agent alive ends the episode; a later death is heard
/// again. Mail left for an agent already reported dead adds no wake.
#[test]
fn a_dead_agent_with_no_mail_is_heard_once_per_agent() {
    let Some(w) = World::new("") else { return };
    let sleeper = w.tmux.window("dead", &["sleep", "1000"]);
    w.meta("dead", &sleeper);
    w.meta("gone", "%9999");
    for _ in 0..3 {
        w.once().stdout_any().run();
    }
    let texts: Vec<String> = w
        .wakes_of("dead-agent")
        .into_iter()
        .map(|x| format!("{} {}", x.task, x.text))
        .collect();
    assert_eq!(
        texts,
        [
            format!("dead agent in pane {sleeper} exited"),
            "gone pane %9999 gone".to_string()
        ]
    );
    assert_eq!(w.wakes().len(), 2, "{:?}", w.wakes());
    // Mail for the dead agent, within its grace and then past it: the
    // agent was reported already.
    queue_record(&w.home, "dead", 1, 0);
    w.once().stdout("").run();
    w.record("dead", 1, false);
    w.once().stdout("").run();
    assert_eq!(w.home.read("state/dead.inbox/.escalated"), b"001.msg\n");
    assert_eq!(w.wakes_of("dead-agent").len(), 2);
    std::fs::create_dir_all(w.home.path("state/dead.inbox/handled")).unwrap();
    std::fs::rename(
        w.home.path("state/dead.inbox/001.msg"),
        w.home.path("state/dead.inbox/handled/001.msg"),
    )
    .unwrap();
    // Alive again (relaunched into a live pane): the episode ends.
    w.agent("dead", "deaf");
    w.once().stdout("").run();
    assert!(!w.home.exists("state/dead.agent-dead"));
    // Dead again: heard again, once.
    w.meta("dead", &sleeper);
    w.once().stdout_any().run();
    w.once().stdout("").run();
    assert_eq!(w.wakes_of("dead-agent").len(), 3, "{:?}", w.wakes());
}

/// A dialog with no mail waiting gets its one wake too (a permission
/// prompt mid-turn, a trust dialog at start), and a new one after it
/// closed gets another. A key stamped in the future (a clock stepped
/// back) does not mute the task's dialogs: it counts as pressed now.
#[test]
fn a_dialog_with_no_mail_waiting_is_heard_once_per_dialog() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (_wt, pane) = crate::control::task(&h, &t, "t1", "direct-PR");
    let screen_has = |s: &str| wait_until(10.0, || t.capture(&pane).contains(s));
    let send = |text: &str| {
        h.fm("send")
            .args(["t1", text])
            .env("FM_SEND_SETTLE_MS", "0")
            .env("FM_SEND_ENTER_WAIT_MS", "100")
            .stdout_regex(r"^queued t1 \d+\.msg \u{b7} doorbell rang\n$")
            .run();
    };
    let once = || {
        h.fm("watch")
            .arg("--once")
            .env("FM_WATCH_GRACE_SECS", "60")
            .env("FM_SEND_SETTLE_MS", "0")
            .env("FM_SEND_ENTER_WAIT_MS", "100")
    };
    send("dialog permission");
    assert!(
        screen_has("stand-in dialog: permission?"),
        "{}",
        t.capture(&pane)
    );
    assert!(wait_until(10.0, || h.exists("state/t1.inbox/handled/001.msg")));
    let wake = wake_re("t1", "dialog", "waiting in a dialog: permission");
    once().stdout_regex(&wake).run();
    once().stdout("").run();
    once().stdout("").run();
    assert_eq!(wakes_of(&h, "dialog").len(), 1);
    assert!(!h.exists("state/t1.inbox/.ring-owed"), "nothing is owed");
    // Closed, then asked again: a wake of its own.
    t.run(["send-keys", "-t", pane.as_str(), "Escape"]);
    assert!(screen_has("dialog permission cancelled"));
    once().stdout("").run();
    assert!(!h.exists("state/t1.inbox/.dialog"));
    send("dialog permission");
    assert!(wait_until(10.0, || h.exists("state/t1.inbox/handled/002.msg")));
    once().stdout_regex(&wake).run();
    once().stdout("").run();
    assert_eq!(wakes_of(&h, "dialog").len(), 2);
    // A key stamped an hour ahead: the dialog after it is heard once the
    // pane had its two seconds, not in an hour.
    h.write(
        "state/t1.inbox/.dialog",
        format!("permission\t{}\n", now() + 3600),
    );
    assert!(
        wait_until(10.0, || {
            once().stdout_any().run();
            wakes_of(&h, "dialog").len() >= 3
        }),
        "a future key stamp muted the dialog"
    );
    once().stdout("").run();
    assert_eq!(wakes_of(&h, "dialog").len(), 3);
    assert_eq!(h.read("state/t1.inbox/.dialog"), b"permission\n");
}

/// Each status line that needs the captain is one wake, however many
/// passes follow.
#[test]
fn each_status_that_needs_the_captain_is_one_wake() {
    let h = TestHome::new();
    h.write(
        "state/s1.status",
        "working: a\nneeds-decision: which db?\nblocked: no creds\nfailed: tests red\ndone: shipped\n",
    );
    for _ in 0..3 {
        once(&h).stdout_any().run();
    }
    let texts: Vec<String> = wakes_of(&h, "status").into_iter().map(|w| w.text).collect();
    assert_eq!(
        texts,
        [
            "needs-decision: which db?",
            "blocked: no creds",
            "failed: tests red",
            "done: shipped"
        ]
    );
    assert_eq!(wakes(&h).len(), 4);
}

/// The same record escalated again by a new ladder (a relaunch clears the
/// ladder files and the new agent is rung afresh) is a new escalation: its
/// own wake, hence its own notification.
#[test]
fn a_second_escalation_of_the_same_message_gets_its_own_wake() {
    let h = TestHome::new();
    h.write("state/t9.meta", "kind=ship\n");
    queue_record(&h, "t9", 1, 200);
    let escalation = wake_re(
        "t9",
        "escalation",
        "001.msg unacknowledged after 1 ring\\(s\\): please look",
    );
    once(&h)
        .stdout("rang t9 001.msg (attempt 1) \u{b7} no-pane\n")
        .run();
    once(&h).stdout_regex(&escalation).run();
    once(&h).stdout("").run();
    assert_eq!(wakes_of(&h, "escalation").len(), 1);
    // A relaunch, a second later: the ladder starts again for 001.msg.
    let first = wakes_of(&h, "escalation")[0].epoch;
    wait_for("the next second", 3.0, || now() > first);
    h.write(
        "state/t9.meta",
        format!("kind=ship\nspawned_at={}\n", now()),
    );
    std::fs::remove_file(h.path("state/t9.inbox/.ring-state")).unwrap();
    std::fs::remove_file(h.path("state/t9.inbox/.escalated")).unwrap();
    once(&h)
        .stdout("rang t9 001.msg (attempt 1) \u{b7} no-pane\n")
        .run();
    once(&h).stdout_regex(&escalation).run();
    once(&h).stdout("").run();
    let esc = wakes_of(&h, "escalation");
    assert_eq!(esc.len(), 2, "{esc:?}");
}

/// An owed ring belongs to the records pending when it was held back:
/// acknowledged, they leave nothing owed, and the next message waits for
/// its grace like any other (the ladder's attempt 1), not rung at once as
/// attempt 0.
#[test]
fn an_owed_ring_ends_with_the_records_it_was_owed_for() {
    let Some(w) = World::new("") else { return };
    w.agent("t1", "deaf");
    let later = now() + 3600;
    w.home
        .write("state/t1.busy", format!("busy {later} prompt-hook\n"));
    w.home
        .fm("send")
        .args(["t1", "first"])
        .stdout("queued t1 001.msg \u{b7} doorbell queued\n")
        .stderr_any()
        .run();
    assert!(w.home.exists("state/t1.inbox/.ring-owed"));
    w.home.fm("ack").args(["t1", "1"]).stdout_any().run();
    assert!(
        !w.home.exists("state/t1.inbox/.ring-owed"),
        "nothing pending, nothing owed"
    );
    std::fs::remove_file(w.home.path("state/t1.busy")).unwrap();
    w.home
        .fm("send")
        .args(["--quiet", "t1", "second"])
        .stdout("queued t1 002.msg \u{b7} doorbell quiet\n")
        .run();
    w.once().stdout("").run();
    // One left behind by an older tool (it names 001.msg, acknowledged):
    // stale, ignored and removed.
    w.home
        .write("state/t1.inbox/.ring-owed", format!("{}\t001.msg\n", now()));
    w.once().stdout("").run();
    assert!(!w.home.exists("state/t1.inbox/.ring-owed"));
    assert_eq!(w.rings("t1"), 0);
}

/// A ring lock another process holds (a captain's `fm-send` suspended
/// with Ctrl-Z mid-ring) holds up only its own task: the daemon rings the
/// rest of the fleet at once, passes that task over, and rings it as soon
/// as the lock is free (its first attempt: nothing was spent meanwhile).
/// `fm-send` says what holds it back.
#[test]
fn a_held_ring_lock_holds_up_only_its_own_task() {
    let Some(w) = World::new("") else { return };
    w.agent("t1", "deaf");
    w.agent("t2", "deaf");
    w.record("t1", 1, false);
    w.record("t2", 1, false);
    let lock = std::fs::File::create(w.home.path("state/.ring-t1.lock")).unwrap();
    lock.try_lock().unwrap();
    let started = std::time::Instant::now();
    let d = w
        .daemon(&[])
        .stdout(
            "rang t2 001.msg (attempt 1) \u{b7} rang\nrang t1 001.msg (attempt 1) \u{b7} rang\n",
        )
        .stderr_regex(&watching_line(&w.home))
        .start();
    w.wait_rings("t2", 1);
    let t2_after = started.elapsed();
    eprintln!("t2 rung {t2_after:?} after the daemon started, t1's lock held");
    daemon_passes(&w.home, 2);
    assert_eq!(w.rings("t1"), 0);
    assert!(
        !w.home.exists("state/t1.inbox/.ring-state"),
        "nothing spent"
    );
    lock.unlock().unwrap();
    w.wait_rings("t1", 1);
    wait_for("the daemon's report of t1's ring", 10.0, || {
        d.stdout_so_far().contains("rang t1")
    });
    stop(d);
    // fm-send on a held lock: queued, and why.
    lock.try_lock().unwrap();
    w.home
        .fm("send")
        .args(["t1", "hello"])
        .env("FM_SEND_SETTLE_MS", "0")
        .env("FM_SEND_ENTER_WAIT_MS", "50")
        .stdout("queued t1 002.msg \u{b7} doorbell queued\n")
        .stderr_has("fm-send: t1: doorbell queued: another ring of this task is in progress (ring lock held")
        .run();
    assert!(w.home.exists("state/t1.inbox/.ring-owed"));
    assert_eq!(w.rings("t1"), 1);
}

/// A spawn stamped in the future (the clock stepped back since) does not
/// make the agent count as booting for ever: a ring that finds no
/// composer is `skipped` and counted, and the ladder ends in its
/// escalation.
#[test]
fn a_spawn_stamped_in_the_future_does_not_hold_the_ladder_back() {
    let Some(w) = World::new("") else { return };
    let pane = w.agent("t1", "blank");
    w.home.write(
        "state/t1.meta",
        format!(
            "kind=ship\nharness=deaf\npane={pane}\ntmux_socket={}\nspawned_at={}\n",
            w.tmux.socket,
            now() + 3600
        ),
    );
    w.record("t1", 1, false);
    w.once()
        .stdout("rang t1 001.msg (attempt 1) \u{b7} skipped\n")
        .run();
    assert!(!w.home.exists("state/t1.inbox/.ring-owed"));
    w.home.write(
        "state/t1.inbox/.ring-state",
        format!("001.msg\t3\t{}\n", now() - 61),
    );
    w.once()
        .stdout_regex(&wake_re(
            "t1",
            "escalation",
            "001.msg unacknowledged after 3 ring\\(s\\): please look",
        ))
        .run();
}

/// `state/` moved away and made again under a running daemon: the daemon
/// takes the new lock back, so a second daemon finds it running; and when
/// a second daemon got there first, the first one stops. One watcher per
/// home, so a status line surfaces once.
#[test]
fn state_replaced_under_a_running_daemon_leaves_one_watcher() {
    let h = TestHome::new();
    let replace = || {
        std::fs::rename(h.path("state"), h.path("state.old")).unwrap();
        std::fs::create_dir(h.path("state")).unwrap();
        std::fs::remove_dir_all(h.path("state.old")).unwrap();
    };
    // How it ends is said below (it is told to stop).
    let a = watch_cmd(&h).status_any().stdout_any().stderr_any().start();
    let pid_a = format!("{}\n", a.pid());
    wait_for("the daemon's pid in the lock", 10.0, || {
        h.exists("state/.watch.lock") && h.read("state/.watch.lock") == pid_a.as_bytes()
    });
    wait_for("the daemon's start line", 10.0, || {
        a.stderr_so_far().ends_with("Ctrl-C to stop\n")
    });
    // Away for a while: the daemon does not make it again.
    wait_beat_after(&h, None);
    std::fs::rename(h.path("state"), h.path("state.old")).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!h.exists("state"), "state/ is not made again by the daemon");
    std::fs::create_dir(h.path("state")).unwrap();
    std::fs::remove_dir_all(h.path("state.old")).unwrap();
    wait_for("the daemon to take the new lock", 10.0, || {
        h.exists("state/.watch.lock") && h.read("state/.watch.lock") == pid_a.as_bytes()
    });
    watch_cmd(&h)
        .stdout(format!("fm-watch: already running (pid {})\n", a.pid()))
        .run();
    h.write("state/s1.status", "needs-decision: which way?\n");
    wait_for("the status wake", 10.0, || wakes(&h).len() == 1);
    daemon_passes(&h, 2);
    // Frozen while state/ is replaced, it finds a second daemon there.
    a.signal(libc::SIGSTOP);
    replace();
    let b = locked_daemon(&h);
    a.signal(libc::SIGCONT);
    let out = a.wait(10.0);
    assert_eq!(out.code, 0);
    assert!(
        out.stderr().ends_with(&format!(
            "fm-watch: state/ was replaced and another watcher (pid {}) holds its lock; stopping\n",
            b.pid()
        )),
        "{}",
        out.stderr()
    );
    h.write("state/s2.status", "blocked: no creds\n");
    wait_for("the status wake", 10.0, || wakes(&h).len() == 1);
    daemon_passes(&h, 2);
    assert_eq!(wakes(&h).len(), 1, "{:?}", wakes(&h));
    stop(b);
}

/// An agent the captain stopped (`fm-control exit`) did not die: its
/// dead pane raises no `dead-agent` wake.
#[test]
fn an_agent_stopped_on_purpose_raises_no_dead_agent_wake() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (_wt, _pane) = crate::control::task(&h, &t, "t1", "direct-PR");
    Cmd::new(crate::harness::bin("fm-control"))
        .env("FM_HOME", h.root())
        .env("FM_TMUX_SOCKET", &t.socket)
        .env("FM_CONTROL_EXIT_WAIT_SECS", "10")
        .args(["t1", "exit"])
        .stdout("stopped t1\n")
        .run();
    for _ in 0..2 {
        h.fm("watch").arg("--once").stdout("").run();
    }
    assert!(wakes(&h).is_empty(), "{:?}", wakes(&h));
}

/// The daemon looks at every pane every `poll_secs`: a pane that vanishes
/// with no mail waiting (no file changes, so no event names its task) is
/// heard at the next such pass, once, however many follow.
#[test]
fn the_daemon_hears_a_vanished_pane_with_no_mail_once() {
    let Some(w) = World::new("") else { return };
    let pane = w.agent("t1", "deaf");
    let d = w
        .daemon(&[("FM_WATCH_POLL_SECS", "1")])
        .stdout_regex(&wake_re("t1", "dead-agent", &format!("pane {pane} gone")))
        .stderr_regex(&watching_line(&w.home))
        .start();
    daemon_passes(&w.home, 1);
    assert!(w.wakes().is_empty(), "{:?}", w.wakes());
    w.tmux.run(["kill-pane", "-t", pane.as_str()]);
    wait_for("the dead-agent wake", 10.0, || !w.wakes().is_empty());
    // Three more looks at every pane: nothing more.
    let mut last = beat(&w.home);
    for _ in 0..3 {
        last = wait_beat_after(&w.home, last);
    }
    stop(d);
    assert_eq!(w.wakes().len(), 1, "{:?}", w.wakes());
}

/// A relaunch owes its new agent a doorbell for every pending record
/// (`.ring-owed`, with no ladder state): the watcher rings it once, and
/// the ladder's next ring waits its grace from that ring, not from the
/// record's old stamp — never two doorbells within a second.
#[test]
fn a_relaunch_owes_one_doorbell_and_the_ladder_waits_its_grace_after_it() {
    let Some(w) = World::new("") else { return };
    w.agent("t1", "deaf");
    w.record("t1", 1, false);
    // As `fm-control relaunch` leaves it: the owed ring, no ladder files.
    w.home
        .write("state/t1.inbox/.ring-owed", format!("{}\t001.msg\n", now()));
    w.once()
        .stdout("rang t1 001.msg (attempt 0) \u{b7} rang\n")
        .run();
    w.wait_rings("t1", 1);
    // The next passes, at once: the grace runs from the owed ring.
    w.once().run();
    w.once().run();
    assert_eq!(
        w.rings("t1"),
        1,
        "a second doorbell right after the owed one"
    );
    let state = w.home.read_string("state/t1.inbox/.ring-state");
    assert!(state.starts_with("001.msg\t0\t"), "{state}");
}

/// A doorbell `fm-send` lands pays a ring owed from earlier: the agent
/// was just told to read every pending record, so the watcher does not
/// ring again at once.
#[test]
fn a_send_whose_doorbell_lands_pays_the_owed_ring() {
    let Some(w) = World::new("") else { return };
    w.agent("t1", "deaf");
    // Queued within its grace: only the owed ring would ring it now.
    w.home
        .write("state/t1.inbox/001.msg", record_bytes(5, false));
    w.home.write(
        "state/t1.inbox/.ring-owed",
        format!("{}\t001.msg\n", now() - 5),
    );
    w.home
        .fm("send")
        .env("FM_SEND_SETTLE_MS", "0")
        .env("FM_SEND_ENTER_WAIT_MS", "50")
        .args(["t1", "one more"])
        .stdout("queued t1 002.msg \u{b7} doorbell rang\n")
        .run();
    w.wait_rings("t1", 1);
    assert!(!w.home.exists("state/t1.inbox/.ring-owed"));
    w.once().run();
    assert_eq!(w.rings("t1"), 1, "the watcher rang the paid ring again");
}

//! `fm-watch` with real processes: a private tmux server, a scripted
//! stand-in agent (python) that logs every line it receives, and timers
//! shortened through `FM_*` overrides.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::harness::{TestHome, Tmux, bin, wait_until};

/// A scripted agent: `deaf` logs lines and never acks, `ack` moves the
/// lowest record into handled/ when rung, `busy` shows a busy screen.
const AGENT: &str = r#"
import os, sys
log, mode, inbox = sys.argv[1], sys.argv[2], sys.argv[3]
prompt = "BUSY esc to interrupt\n" if mode == "busy" else "deaf> "
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

struct World {
    home: TestHome,
    tmux: Tmux,
}

impl World {
    fn new(extra_config: &str) -> Option<World> {
        let tmux = Tmux::start()?;
        let home = TestHome::new();
        home.write(
            "config/firstmate.toml",
            format!("{HARNESS}\n{extra_config}"),
        );
        home.write("agent.py", AGENT);
        Some(World { home, tmux })
    }

    /// A task whose pane runs the stand-in in `mode`.
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
        assert!(wait_until(5.0, || self
            .tmux
            .capture(&pane)
            .contains(if mode == "busy" { "BUSY" } else { "deaf>" })));
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

    fn record(&self, id: &str, seq: u64, fire_and_forget: bool) {
        let at = firstmate::clock::rfc3339(firstmate::clock::now());
        let bytes = firstmate::inbox::render(&at, "captain", fire_and_forget, b"please look\n");
        self.home
            .write(&format!("state/{id}.inbox/{seq:03}.msg"), bytes);
    }

    fn wakes(&self) -> Vec<firstmate::wakes::Wake> {
        let bytes = std::fs::read(self.home.path("state/wakes.log")).unwrap_or_default();
        firstmate::wakes::parse_all(&bytes)
    }

    fn wakes_of(&self, kind: &str) -> Vec<firstmate::wakes::Wake> {
        self.wakes()
            .into_iter()
            .filter(|w| w.kind == kind)
            .collect()
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.home.fm("watch").args(args).cmd;
        c.env("FM_WATCH_GRACE_SECS", "1")
            .env("FM_WATCH_MAX_RINGS", "3")
            .env("FM_WATCH_POLL_SECS", "30")
            .env("FM_SEND_SETTLE_MS", "0")
            .env("FM_SEND_ENTER_WAIT_MS", "50");
        c
    }

    fn daemon(&self, envs: &[(&str, &str)]) -> Daemon {
        let mut c = self.cmd(&[]);
        for (k, v) in envs {
            c.env(k, v);
        }
        Daemon::spawn(c, self.home.path("daemon.out"))
    }
}

/// A running `fm-watch` daemon; killed (by its pid) on drop.
struct Daemon {
    child: Child,
}

impl Daemon {
    fn spawn(mut c: Command, out: PathBuf) -> Daemon {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(out)
            .unwrap();
        c.stdout(f.try_clone().unwrap())
            .stderr(f)
            .stdin(Stdio::null());
        Daemon {
            child: c.spawn().unwrap(),
        }
    }

    fn signal(&self, sig: i32) {
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }

    fn wait_exit(&mut self, secs: f64) -> Option<i32> {
        let mut code = None;
        wait_until(secs, || match self.child.try_wait().unwrap() {
            Some(st) => {
                code = Some(st.code().unwrap_or(-1));
                true
            }
            None => false,
        });
        code
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn settle(secs: f64) {
    std::thread::sleep(Duration::from_secs_f64(secs));
}

#[test]
fn a_deaf_worker_is_rung_three_times_then_escalated_once() {
    let Some(w) = World::new("") else { return };
    w.agent("t1", "deaf");
    w.record("t1", 1, false);
    let _d = w.daemon(&[]);
    assert!(wait_until(15.0, || !w.wakes_of("escalation").is_empty()));
    settle(3.0);
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
    let rs = String::from_utf8(w.home.read("state/t1.inbox/.ring-state")).unwrap();
    assert!(rs.starts_with("001.msg\t3\t"), "{rs}");
}

#[test]
fn an_ack_stops_the_ladder_and_the_next_message_starts_fresh() {
    let Some(w) = World::new("") else { return };
    w.agent("t1", "ack");
    w.record("t1", 1, false);
    let _d = w.daemon(&[]);
    assert!(wait_until(10.0, || w
        .home
        .exists("state/t1.inbox/handled/001.msg")));
    assert!(wait_until(5.0, || !w
        .home
        .exists("state/t1.inbox/.ring-state")));
    settle(2.5);
    assert_eq!(w.rings("t1"), 1);
    assert!(w.wakes().is_empty(), "{:?}", w.wakes());
    assert!(!w.home.exists("state/t1.inbox/.escalated"));
    w.record("t1", 2, false);
    assert!(wait_until(10.0, || w.rings("t1") == 2));
    assert!(wait_until(5.0, || w
        .home
        .exists("state/t1.inbox/handled/002.msg")));
    settle(2.0);
    assert_eq!(w.rings("t1"), 2);
    assert!(w.wakes().is_empty());
}

#[test]
fn a_busy_worker_is_not_rung_and_goes_overdue_once() {
    let Some(w) = World::new("") else { return };
    w.agent("rec", "deaf");
    let later = firstmate::clock::now() + 3600;
    w.home
        .write("state/rec.busy", format!("busy {later} prompt-hook\n"));
    w.agent("screen", "busy");
    w.record("rec", 1, false);
    w.record("screen", 1, false);
    let _d = w.daemon(&[("FM_WATCH_UNHANDLED_MAX_SECS", "3")]);
    assert!(wait_until(15.0, || w.wakes_of("overdue").len() == 2));
    settle(2.5);
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
    let _d = w.daemon(&[]);
    assert!(wait_until(10.0, || w.wakes_of("dead-agent").len() == 2));
    settle(2.5);
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
    let env = [("FM_WATCH_GRACE_SECS", "2")];
    let mut d = w.daemon(&env);
    assert!(wait_until(10.0, || w.rings("t1") == 1));
    d.signal(libc::SIGKILL);
    d.wait_exit(5.0);
    assert_eq!(w.rings("t1"), 1);
    let _d2 = w.daemon(&env);
    assert!(wait_until(20.0, || !w.wakes_of("escalation").is_empty()));
    settle(3.0);
    assert_eq!(w.rings("t1"), 3);
    assert_eq!(w.wakes_of("escalation").len(), 1);
    assert_eq!(w.wakes_of("watcher-recovered").len(), 1);
}

#[test]
fn only_one_watcher_acts_at_a_time() {
    let Some(w) = World::new("") else { return };
    w.agent("t1", "deaf");
    w.record("t1", 1, false);
    let out_a = w.home.path("a.out");
    let out_b = w.home.path("b.out");
    let mut a = Daemon::spawn(w.cmd(&[]), out_a.clone());
    let mut b = Daemon::spawn(w.cmd(&[]), out_b.clone());
    let (mut loser, winner_pid, out) = loop {
        if let Some(code) = a.wait_exit(0.05) {
            assert_eq!(code, 0);
            break (a, b.child.id(), out_a);
        }
        if let Some(code) = b.wait_exit(0.05) {
            assert_eq!(code, 0);
            break (b, a.child.id(), out_b);
        }
    };
    let _ = loser.wait_exit(1.0);
    let said = std::fs::read_to_string(out).unwrap();
    assert!(
        said.contains(&format!("fm-watch: already running (pid {winner_pid})")),
        "{said}"
    );
    let once = w.cmd(&["--once"]).output().unwrap();
    assert_eq!(once.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&once.stdout),
        format!("fm-watch: already running (pid {winner_pid})\n")
    );
    assert!(wait_until(15.0, || !w.wakes_of("escalation").is_empty()));
    settle(2.0);
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
    let _d = w.daemon(&[("FM_WATCH_MAX_RINGS", "1")]);
    assert!(wait_until(10.0, || !w.wakes_of("escalation").is_empty()));
    settle(2.5);
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
    let cmd = |args: &[&str]| {
        let mut c = home.fm("watch").args(args).cmd;
        c.env("FM_WATCH_POLL_SECS", "30");
        c
    };
    let mut d = Daemon::spawn(cmd(&[]), home.path("daemon.out"));
    let writers: Vec<_> = (0..8)
        .map(|n| {
            let root = home.root();
            std::thread::spawn(move || {
                for i in 0..12 {
                    let task = format!("w{}", n % 3);
                    let verb = ["done", "note", "blocked", "working"][i % 4];
                    let st = Command::new(bin("fm-status"))
                        .env("FM_HOME", &root)
                        .args([&task, verb, &format!("writer {n} line {i}")])
                        .status()
                        .unwrap();
                    assert!(st.success());
                }
            })
        })
        .collect();
    for t in writers {
        t.join().unwrap();
    }
    let expected = 8 * 6 + 1;
    let count = || {
        let b = std::fs::read(home.path("state/wakes.log")).unwrap_or_default();
        firstmate::wakes::parse_all(&b).len()
    };
    assert!(wait_until(10.0, || count() == expected), "{}", count());
    d.signal(libc::SIGTERM);
    assert_eq!(d.wait_exit(5.0), Some(0));
    assert!(
        home.read("state/.watch.lock").is_empty(),
        "clean exit clears the pid"
    );
    let once = cmd(&["--once"]).output().unwrap();
    assert_eq!(once.status.code(), Some(0));
    assert_eq!(count(), expected, "no repeats across restarts");
    let drained = home.fm("watch").args(["--drain", "--json"]).run().success();
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
        .run()
        .success()
        .stdout_is("[]\n");
}

#[test]
fn an_unwritable_ladder_file_raises_one_wake_and_never_rings() {
    let Some(w) = World::new("") else { return };
    w.agent("t1", "deaf");
    w.record("t1", 1, false);
    std::fs::create_dir_all(w.home.path("state/t1.inbox/.ring-state")).unwrap();
    let _d = w.daemon(&[("FM_WATCH_POLL_SECS", "1")]);
    assert!(wait_until(10.0, || !w.wakes().is_empty()));
    settle(4.0);
    let all = w.wakes();
    assert_eq!(all.len(), 1, "{all:?}");
    assert!(all[0].text.contains("not writable"), "{all:?}");
    assert_eq!(w.rings("t1"), 0);
    assert!(w.home.exists("state/t1.inbox/001.msg"));
}

#[test]
fn on_wake_runs_the_argv_without_a_shell_and_failures_are_not_fatal() {
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
        .run()
        .success()
        .stdout_has("status");
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
        .run()
        .success()
        .stderr_has("on_wake hook");
}

#[test]
fn until_wake_status_crontab_and_drain() {
    let home = TestHome::new();
    home.write("state/t1.status", "done: old news\n");
    home.fm("watch").arg("--once").run().success();
    let mut c = home.fm("watch").arg("--until-wake").cmd;
    c.env("FM_WATCH_POLL_SECS", "30")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    settle(0.5);
    home.fm("status")
        .args(["t1", "needs-decision", "--key", "db", "which database?"])
        .run()
        .success();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let s = String::from_utf8_lossy(&out.stdout);
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
        .run()
        .success()
        .stdout_has("watcher: not running")
        .stdout_has("t1: 1 pending");
    let v = home
        .fm("watch")
        .args(["--status", "--json"])
        .run()
        .success()
        .json();
    assert_eq!(v["running"], false);
    assert_eq!(v["tasks"][0]["pending"], 1);
    let root = home.root().display().to_string();
    home.fm("watch")
        .arg("--crontab")
        .run()
        .success()
        .stdout_has(&format!("* * * * * FM_HOME='{root}' "))
        .stdout_has("fm-watch' --once");
    let d = home.fm("watch").arg("--drain").run().success();
    assert_eq!(d.stdout().lines().count(), 2, "{}", d.stdout());
    home.fm("watch")
        .arg("--drain")
        .run()
        .success()
        .stdout_is("");
}

/// `fm-watch --once` with no tmux: a task without a pane is rung (outcome
/// `no-pane`) and escalated like any other.
fn once(h: &TestHome) -> crate::harness::Run {
    h.fm("watch")
        .args(["--once"])
        .env("FM_WATCH_GRACE_SECS", "0")
        .env("FM_WATCH_MAX_RINGS", "1")
        .run()
}

fn queue_record(h: &TestHome, id: &str, seq: u64) {
    let at = firstmate::clock::rfc3339(firstmate::clock::now());
    let bytes = firstmate::inbox::render(&at, "captain", false, b"please look\n");
    h.write(&format!("state/{id}.inbox/{seq:03}.msg"), bytes);
}

fn wakes_of(h: &TestHome, kind: &str) -> Vec<firstmate::wakes::Wake> {
    let bytes = std::fs::read(h.path("state/wakes.log")).unwrap_or_default();
    firstmate::wakes::parse_all(&bytes)
        .into_iter()
        .filter(|w| w.kind == kind)
        .collect()
}

#[test]
fn a_requeued_record_with_the_same_name_and_text_escalates_again() {
    let h = TestHome::new();
    h.write("state/t9.meta", "kind=ship\n");
    queue_record(&h, "t9", 1);
    once(&h).success();
    once(&h).success();
    assert_eq!(wakes_of(&h, "escalation").len(), 1);
    once(&h).success();
    assert_eq!(wakes_of(&h, "escalation").len(), 1, "one per episode");
    // Teardown and a fresh spawn: the inbox starts again at 001.msg with the
    // same text, in a later second.
    std::fs::remove_dir_all(h.path("state/t9.inbox")).unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    queue_record(&h, "t9", 1);
    once(&h).success();
    once(&h).success();
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
    once(&h).success();
    std::fs::remove_dir(h.path("state/wakes.log")).unwrap();
    once(&h).success();
    let texts: Vec<String> = wakes_of(&h, "status").into_iter().map(|w| w.text).collect();
    assert_eq!(texts, ["done: shipped", "blocked: db?"]);
    once(&h).success();
    assert_eq!(wakes_of(&h, "status").len(), 2, "each line exactly once");
}

/// `fm-watch` with a short poll, in `h`.
fn watch_cmd(h: &TestHome, args: &[&str]) -> Command {
    let mut c = h.fm("watch").args(args).cmd;
    c.env("FM_WATCH_POLL_SECS", "30");
    c
}

/// A daemon in `h` that holds the lock (its pid recorded in it).
fn locked_daemon(h: &TestHome) -> Daemon {
    let d = Daemon::spawn(watch_cmd(h, &[]), h.path("daemon.out"));
    let pid = format!("{}\n", d.child.id());
    assert!(wait_until(5.0, || h.exists("state/.watch.lock")
        && h.read("state/.watch.lock") == pid.as_bytes()));
    d
}

/// Starts `fm-watch --until-wake` with its output piped.
fn until_wake(h: &TestHome) -> Child {
    watch_cmd(h, &["--until-wake"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits at most `secs` for `child` to exit; its exit code and stdout.
fn finish(mut child: Child, secs: f64) -> (Option<i32>, String) {
    let mut code = None;
    wait_until(secs, || match child.try_wait().unwrap() {
        Some(st) => {
            code = st.code();
            true
        }
        None => false,
    });
    if code.is_none() {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    (code, String::from_utf8_lossy(&out.stdout).into_owned())
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
    let mut d = locked_daemon(&h);
    let follower = until_wake(&h);
    settle(1.0); // it has found the lock taken and is following
    // Frozen, the daemon cannot surface the line; killed, it never will.
    // (Appending only after the kill would race the follower's takeover,
    // whose own watcher-recovered wake would then end it alone.)
    d.signal(libc::SIGSTOP);
    append(&h, "state/t1.status", "done: x\n");
    d.signal(libc::SIGKILL);
    assert!(d.wait_exit(5.0).is_some());
    let (code, out) = finish(follower, 6.0);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("t1 status \u{b7} done: x"), "{out}");
    assert!(out.contains("- watcher-recovered \u{b7}"), "{out}");
    assert_eq!(wakes_of(&h, "status").len(), 1);
    assert!(h.read("state/.watch.lock").is_empty(), "a clean exit");
}

#[test]
fn until_wake_prints_every_wake_of_the_batch_it_wakes_on() {
    let h = TestHome::new();
    let lines = "done: a\nblocked: b\nfailed: c\n";
    let expect = |out: &str| {
        let got: Vec<&str> = out
            .lines()
            .filter_map(|l| l.split(" \u{b7} ").nth(1))
            .collect();
        assert_eq!(got, ["done: a", "blocked: b", "failed: c"], "{out}");
    };
    // Alone, it is the watcher: the whole pass comes out.
    let alone = until_wake(&h);
    settle(0.5);
    append(&h, "state/t1.status", lines);
    let (code, out) = finish(alone, 6.0);
    assert_eq!(code, Some(0), "{out}");
    expect(&out);
    // Following a running watcher: the whole of that watcher's pass.
    let _d = locked_daemon(&h);
    let follower = until_wake(&h);
    settle(1.0);
    append(&h, "state/t2.status", lines);
    let (code, out) = finish(follower, 6.0);
    assert_eq!(code, Some(0), "{out}");
    expect(&out);
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
            .run()
            .success()
    };
    once()
        .stdout_has("rang t5 004.msg (attempt 1) \u{b7} no-pane")
        .stderr_has("t5: skipping 003.msg: refusing to follow symlink");
    once();
    let esc = wakes_of(&h, "escalation");
    assert_eq!(esc.len(), 1, "{esc:?}");
    assert!(
        esc[0]
            .text
            .starts_with("004.msg unacknowledged after 1 ring(s)"),
        "{esc:?}"
    );
    // A daemon warns once, not on every pass.
    let mut c = h.fm("watch").cmd;
    c.env("FM_WATCH_POLL_SECS", "1");
    let mut d = Daemon::spawn(c, h.path("daemon.out"));
    settle(3.5);
    d.signal(libc::SIGTERM);
    assert_eq!(d.wait_exit(5.0), Some(0));
    let said = std::fs::read_to_string(h.path("daemon.out")).unwrap();
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
    h.fm("watch").arg("--once").run().success();
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
    let run = h.fm("watch").arg("--crontab").run().success();
    let escaped = root.replace('%', "\\%");
    let out = run.stdout_has(&format!("FM_HOME='{escaped}' ")).stdout();
    assert!(
        out.match_indices('%')
            .all(|(i, _)| out[..i].ends_with('\\')),
        "an unescaped %: {out}"
    );
}

//! `fm-send`: records, doorbells into a real pane on a private tmux server,
//! refusals, and concurrency with real processes.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::{Cmd, TestHome, Tmux, bin, have_python, wait_for, wait_until};

/// A stand-in agent: raw terminal, logs every byte it receives, draws a
/// composer line `stand-in> <text>`, swallows the first N Enters.
const STANDIN: &str = r"
import os, sys, tty
log = open(sys.argv[1], 'ab', 0)
swallow = int(sys.argv[2])
tty.setraw(0)
buf = b''
def draw():
    os.write(1, b'\r\x1b[2Kstand-in> ' + buf)
os.write(1, b'ready\r\n')
draw()
while True:
    data = os.read(0, 4096)
    if not data:
        break
    log.write(data)
    for c in data:
        if c == 13:
            if swallow > 0:
                swallow -= 1
                continue
            os.write(1, b'\r\x1b[2Kgot: ' + bytes(x for x in buf if 32 <= x < 127) + b'\r\n')
            buf = b''
        else:
            buf += bytes([c])
    draw()
";

/// The real python interpreter (so the pane's foreground command is
/// stable); `None` when python3 is missing and not required.
fn python() -> Option<PathBuf> {
    if !have_python() {
        return None;
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import os,sys;print(os.path.realpath(sys.executable))",
        ])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// A home whose config knows the `standin` harness, with short ring timers.
pub fn standin_home() -> Option<(TestHome, PathBuf)> {
    let py = python()?;
    let comm = py.file_name()?.to_string_lossy().into_owned();
    let h = TestHome::new();
    h.write(
        "config/firstmate.toml",
        format!(
            "[send]\nsettle_ms = 20\nenter_wait_ms = 250\n\n[harness.standin]\nlaunch = [\"x\"]\nagent_commands = [\"{comm}\"]\ncomposer_regex = \"^stand-in> ?(.*)$\"\n"
        ),
    );
    Some((h, py))
}

/// Opens a stand-in window; returns its pane id once it drew its composer.
#[track_caller]
pub fn standin(t: &Tmux, py: &Path, name: &str, log: &Path, swallow: u32) -> String {
    let pane = t.window(
        name,
        &[
            py.to_str().unwrap(),
            "-c",
            STANDIN,
            log.to_str().unwrap(),
            &swallow.to_string(),
        ],
    );
    assert!(
        wait_until(10.0, || t.capture(&pane).contains("stand-in>")),
        "stand-in did not start: {}",
        t.capture(&pane)
    );
    pane
}

fn meta(h: &TestHome, id: &str, lines: &str) {
    h.write(&format!("state/{id}.meta"), format!("kind=ship\n{lines}"));
}

fn doorbell(h: &TestHome, id: &str) -> String {
    let home = firstmate::Home::at(&h.root()).unwrap();
    firstmate::tmux::deliver::doorbell(&home, &firstmate::TaskId::parse(id).unwrap())
}

fn log_of(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_default()
}

fn without_cr(b: &[u8]) -> Vec<u8> {
    b.iter().copied().filter(|&c| c != b'\r').collect()
}

fn record_body(h: &TestHome, id: &str, seq: u64) -> Vec<u8> {
    let bytes = h.read(&format!("state/{id}.inbox/{seq:03}.msg"));
    firstmate::inbox::parse(seq, &bytes).expect("a record").body
}

#[test]
fn the_pane_gets_the_doorbell_and_never_a_byte_of_the_body() {
    let Some(t) = Tmux::start() else { return };
    let Some((h, py)) = standin_home() else {
        return;
    };
    let log = h.path("pane.log");
    let pane = standin(&t, &py, "w", &log, 0);
    meta(
        &h,
        "t1",
        &format!("pane={pane}\ntmux_socket={}\nharness=standin\n", t.socket),
    );
    let bodies: Vec<&[u8]> = vec![
        b"$(touch /tmp/pwned) and `id`",
        b"a; rm -rf b; 'single' \"double\"",
        b"line one\nline two\n\n",
        b"\x1b[31mred\x1b[0m \x07 bell",
        b"Enter",
        b"before\nEnter\nafter\n",
    ];
    for (i, body) in bodies.iter().enumerate() {
        h.fm("send")
            .args(["t1", "-"])
            .stdin(*body)
            .stdout(format!("queued t1 {:03}.msg \u{b7} doorbell rang\n", i + 1))
            .run();
        assert_eq!(record_body(&h, "t1", i as u64 + 1), *body);
    }
    let expected = doorbell(&h, "t1").repeat(bodies.len());
    assert!(wait_until(5.0, || without_cr(&log_of(&log)) == expected.as_bytes()));
    let raw = log_of(&log);
    assert_eq!(raw.iter().filter(|&&c| c == b'\r').count(), bodies.len());
}

#[test]
fn senders_ringing_at_once_never_type_two_doorbells_into_one_line() {
    let Some(t) = Tmux::start() else { return };
    let Some((h, py)) = standin_home() else {
        return;
    };
    // The default settle: each ringer waits 300 ms between its typing and
    // its Enter, time enough for another to type into the same line.
    let cfg = String::from_utf8(h.read("config/firstmate.toml")).unwrap();
    h.write(
        "config/firstmate.toml",
        cfg.replace("settle_ms = 20", "settle_ms = 300"),
    );
    let log = h.path("pane.log");
    let pane = standin(&t, &py, "w", &log, 0);
    meta(
        &h,
        "t1",
        &format!("pane={pane}\ntmux_socket={}\nharness=standin\n", t.socket),
    );
    let root = h.root();
    let senders: Vec<_> = (0..3)
        .map(|n| {
            let root = root.clone();
            std::thread::spawn(move || {
                Cmd::new(bin("fm-send"))
                    .env("FM_HOME", &root)
                    .args(["t1", &format!("message {n}")])
                    .stdout_has("doorbell rang")
                    .run();
            })
        })
        .collect();
    for s in senders {
        s.join().unwrap();
    }
    // Every line the agent got is one doorbell, and it got one per send.
    let door = doorbell(&h, "t1");
    assert!(wait_until(5.0, || log_of(&log)
        .iter()
        .filter(|&&c| c == b'\r')
        .count()
        >= 3));
    let raw = log_of(&log);
    let lines: Vec<&[u8]> = raw
        .split(|&c| c == b'\r')
        .filter(|l| !l.is_empty())
        .collect();
    for l in &lines {
        assert_eq!(
            String::from_utf8_lossy(l),
            door,
            "a line holds more than one doorbell"
        );
    }
    assert_eq!(lines.len(), 3);
}

#[test]
fn a_swallowed_enter_is_pressed_again_and_the_doorbell_typed_once() {
    let Some(t) = Tmux::start() else { return };
    let Some((h, py)) = standin_home() else {
        return;
    };
    let log = h.path("pane.log");
    let pane = standin(&t, &py, "w", &log, 1);
    meta(
        &h,
        "t1",
        &format!("pane={pane}\ntmux_socket={}\nharness=standin\n", t.socket),
    );
    h.fm("send")
        .args(["t1", "please", "rebase"])
        .stdout_has("doorbell rang")
        .run();
    let raw = log_of(&log);
    assert_eq!(without_cr(&raw), doorbell(&h, "t1").as_bytes());
    assert_eq!(raw.iter().filter(|&&c| c == b'\r').count(), 2);
    assert!(t.capture(&pane).contains("got: : 'firstmate inbox"));
}

#[test]
fn renamed_or_killed_windows_never_redirect_a_send() {
    let Some(t) = Tmux::start() else { return };
    let Some((h, py)) = standin_home() else {
        return;
    };
    let (log_a, log_b) = (h.path("a.log"), h.path("b.log"));
    let a = standin(&t, &py, "a", &log_a, 0);
    let b = standin(&t, &py, "b", &log_b, 0);
    meta(
        &h,
        "t1",
        &format!(
            "pane={a}\ntmux_socket={}\nharness=standin\nwindow=a\n",
            t.socket
        ),
    );
    t.run(["rename-window", "-t", &a, "b-now"]);
    t.run(["rename-window", "-t", &b, "a"]);
    h.fm("send")
        .args(["t1", "hi"])
        .stdout_has("doorbell rang")
        .run();
    assert_eq!(without_cr(&log_of(&log_a)), doorbell(&h, "t1").as_bytes());
    t.run(["kill-window", "-t", &a]);
    h.fm("send")
        .args(["t1", "again"])
        .stdout("queued t1 002.msg \u{b7} doorbell dead\n")
        .stderr_has("will not re-ring")
        .run();
    // Whatever reached pane b before this marker was typed is logged
    // before it.
    t.run(["send-keys", "-t", &b, "-l", "MARK"]);
    wait_for("pane b to log the marker", 10.0, || {
        log_of(&log_b).ends_with(b"MARK")
    });
    assert_eq!(log_of(&log_b), b"MARK", "another pane got bytes");
}

#[test]
fn an_exited_agent_is_not_typed_into() {
    let Some(t) = Tmux::start() else { return };
    let Some((h, _py)) = standin_home() else {
        return;
    };
    let pane = t.window("w", &["sh"]);
    meta(
        &h,
        "t1",
        &format!("pane={pane}\ntmux_socket={}\nharness=standin\n", t.socket),
    );
    h.fm("send")
        .args(["t1", "hello"])
        .stdout("queued t1 001.msg \u{b7} doorbell dead\n")
        .stderr_has("the watcher will not re-ring")
        .run();
    assert!(h.exists("state/t1.inbox/001.msg"));
    assert!(!t.capture(&pane).contains("firstmate"));
}

#[test]
fn no_pane_or_no_tmux_still_records_and_says_the_watcher_re_rings() {
    let h = TestHome::new();
    meta(&h, "t1", "");
    h.fm("send")
        .args(["t1", "hello"])
        .stdout("queued t1 001.msg \u{b7} doorbell no-pane\n")
        .stderr_has("the watcher will re-ring")
        .run();
    meta(&h, "t2", "pane=%1\ntmux_socket=fm-test-nowhere\n");
    h.fm("send")
        .env("PATH", "/nonexistent")
        .args(["t2", "hello"])
        .stdout("queued t2 001.msg \u{b7} doorbell failed\n")
        .stderr_has("the watcher will re-ring")
        .run();
    h.fm("send")
        .args(["t2", "--fire-and-forget", "--json", "x"])
        .env("PATH", "/nonexistent")
        .stderr_has("will not re-ring")
        .stdout_regex(
            r#"\{"task":"t2","seq":2,"path":"/[^"]+/state/t2\.inbox/002\.msg","doorbell":"failed"\}\n"#,
        )
        .run();
    let rec = h.read("state/t2.inbox/002.msg");
    assert!(String::from_utf8_lossy(&rec).contains("\ndelivery=fire-and-forget\n--\nx"));
}

#[test]
fn quiet_json_from_dedupe_file_and_resolve_key() {
    let h = TestHome::new();
    meta(&h, "t1", "");
    let r = h
        .fm("send")
        .args([
            "t1", "--quiet", "--json", "--from", "lead", "use", "postgres",
        ])
        .stdout_json()
        .run();
    let j = r.json();
    assert_eq!(j["seq"], 1);
    assert_eq!(j["doorbell"], "quiet");
    assert_eq!(
        j["path"].as_str().unwrap(),
        h.path("state/t1.inbox/001.msg").to_str().unwrap()
    );
    let rec = String::from_utf8(h.read("state/t1.inbox/001.msg")).unwrap();
    assert!(rec.starts_with("schema=fm-inbox.v1\nat="));
    assert!(rec.ends_with("\nfrom=lead\n--\nuse postgres"));
    h.fm("send")
        .args(["t1", "--dedupe", "--quiet", "use", "postgres"])
        .stdout_has("queued t1 001.msg")
        .stdout_has("duplicate")
        .run();
    assert!(!h.exists("state/t1.inbox/002.msg"));
    let body = b"\xff\xfe not utf-8\n\n--\ntrailing\n\n".to_vec();
    h.write("body.bin", &body);
    h.fm("send")
        .args([
            "t1",
            "--quiet",
            "--resolve-key",
            "db",
            "--resolve-key",
            "x.y",
        ])
        .arg("--file")
        .arg(h.path("body.bin"))
        .stdout_has("002.msg")
        .run();
    assert_eq!(record_body(&h, "t1", 2), body);
    let status = String::from_utf8(h.read("state/t1.status")).unwrap();
    let lines: Vec<&str> = status.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with("resolved [at="));
    assert!(lines[0].ends_with("[key=db]: answered: \u{fffd}\u{fffd} not utf-8  -- trailing"));
    assert!(lines[1].contains("[key=x.y]: answered:"));
    let events = String::from_utf8(h.read("state/events.jsonl")).unwrap();
    assert_eq!(events.matches("\"inbox.queued\"").count(), 2);
    assert!(events.contains("\"actor\":\"lead\""));
}

#[test]
fn refusals_write_nothing() {
    let h = TestHome::new();
    meta(&h, "t1", "");
    let before = h.tree();
    let empty = "fm-send: error: empty message body (t1)\n";
    for (args, why) in [
        (vec!["t1", ""], empty),
        (vec!["t1", "  ", "\t"], empty),
        (
            vec!["../x", "hi"],
            "fm-send: error: invalid task id \"../x\": must start with a letter or digit\n",
        ),
        (
            vec!["t1", "hi", "--key", "Enter"],
            "fm-send: error: \"--key\" inside the message text: give either text or --key, not both; options go before the text, and `--` before the text sends it literally\n",
        ),
        (
            vec!["t1", "--key", "Nope"],
            "fm-send: error: invalid value 'Nope' for '--key <KEY>'\n  [possible values: Enter, Escape, C-c, Tab, Up, Down]\n\nFor more information, try '--help'.\n",
        ),
        (
            vec!["t1", "--resolve-key", "bad key", "hi"],
            "fm-send: error: malformed --resolve-key \"bad key\" (letters, digits, '.', '_', '-')\n",
        ),
        (
            vec!["t1"],
            "fm-send: error: no message: give text, `-` for stdin, or --file F\n",
        ),
    ] {
        h.fm("send").args(&args).status(2).stderr(why).run();
    }
    h.fm("send")
        .args(["t1", "-"])
        .stdin(" \n\n")
        .status(2)
        .stderr("fm-send: error: empty message body (t1)\n")
        .run();
    h.fm("send")
        .env("FM_SEND_MAX_BODY_BYTES", "10")
        .args(["t1", "eleven bytes"])
        .status(2)
        .stderr_has("limit")
        .run();
    h.fm("send")
        .args(["ghost", "hi"])
        .status(1)
        .stderr_has("unknown task ghost")
        .run();
    assert_eq!(h.tree(), before);
    // A symlinked inbox is refused, never followed.
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), h.path("state/t1.inbox")).unwrap();
    h.fm("send")
        .args(["t1", "hi"])
        .status(1)
        .stderr_has("fm-send: error: refusing to follow symlink")
        .run();
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
}

#[test]
fn broadcast_reaches_live_agents_only_and_key_presses_one_key() {
    let Some(t) = Tmux::start() else { return };
    let Some((h, py)) = standin_home() else {
        return;
    };
    let log = h.path("a.log");
    let a = standin(&t, &py, "a", &log, 0);
    let dead = t.window("d", &["sh"]);
    let sock = &t.socket;
    meta(
        &h,
        "alive",
        &format!("pane={a}\ntmux_socket={sock}\nharness=standin\n"),
    );
    meta(
        &h,
        "dead",
        &format!("pane={dead}\ntmux_socket={sock}\nharness=standin\n"),
    );
    meta(&h, "gone", &format!("pane=%999\ntmux_socket={sock}\n"));
    meta(&h, "nopane", "");
    h.fm("send")
        .args(["--all", "freeze", "main"])
        .stdout("queued alive 001.msg \u{b7} doorbell rang\n")
        .run();
    for id in ["dead", "gone", "nopane"] {
        assert!(!h.exists(&format!("state/{id}.inbox/001.msg")), "{id}");
    }
    let before = log_of(&log).len();
    h.fm("send")
        .args(["alive", "--key", "C-c"])
        .stdout_has("key C-c")
        .run();
    h.fm("send")
        .args(["alive", "--key", "Escape", "--json"])
        .stdout_regex(r#"\{"task":"alive","key":"Escape","pane":"%\d+"\}\n"#)
        .run();
    assert!(wait_until(5.0, || log_of(&log)[before..] == *b"\x03\x1b"));
    assert!(!h.exists("state/alive.inbox/002.msg"));
    h.fm("send")
        .args(["nopane", "--key", "Enter"])
        .status(1)
        .stderr("fm-send: error: no pane recorded for nopane\n")
        .run();
}

#[test]
fn concurrent_senders_number_without_gaps_or_duplicates() {
    let h = TestHome::new();
    meta(&h, "t1", "");
    let root = h.root();
    let threads: Vec<_> = (0..32)
        .map(|w| {
            let root = root.clone();
            std::thread::spawn(move || {
                for m in 0..50 {
                    Cmd::new(bin("fm-send"))
                        .env("FM_HOME", &root)
                        .args(["t1", "--quiet", &format!("w{w} m{m}")])
                        .stdout_regex(r"queued t1 \d{3,4}\.msg . doorbell quiet\n")
                        .run();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut names: Vec<String> = std::fs::read_dir(h.path("state/t1.inbox"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".msg"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 1600);
    let mut bodies = std::collections::BTreeSet::new();
    for seq in 1..=1600u64 {
        bodies.insert(record_body(&h, "t1", seq));
    }
    assert_eq!(bodies.len(), 1600);
    for w in 0..32 {
        for m in 0..50 {
            assert!(bodies.contains(format!("w{w} m{m}").as_bytes()));
        }
    }
    h.fm("ack")
        .args(["t1", "--list", "--json"])
        .stdout_has("\"seq\":1600")
        .run();
}

#[test]
fn killed_senders_never_leave_a_partial_record() {
    let h = TestHome::new();
    meta(&h, "t1", "");
    let body: Vec<u8> = (0..1_000_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    h.write("big.bin", &body);
    let mut seed = u64::from(std::process::id());
    for _ in 0..30 {
        let mut child = Command::new(bin("fm-send"))
            .env("FM_HOME", h.root())
            .args(["t1", "--quiet", "--file"])
            .arg(h.path("big.bin"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        std::thread::sleep(std::time::Duration::from_micros((seed >> 33) % 15_000));
        let _ = child.kill();
        let _ = child.wait();
    }
    let home = firstmate::Home::at(&h.root()).unwrap();
    let id = firstmate::TaskId::parse("t1").unwrap();
    let seqs = firstmate::inbox::pending(&home, &id).unwrap();
    for &s in &seqs {
        assert_eq!(record_body(&h, "t1", s), body, "record {s} is partial");
    }
    let next = seqs.last().copied().unwrap_or(0) + 1;
    h.fm("send")
        .args(["t1", "--quiet", "after"])
        .stdout_has(&format!("{next:03}.msg"))
        .run();
}

/// Runs `cmd` with its stdout closed before it writes a byte (a reader
/// like `| head -0` that went away); returns the exit code. A closed pipe
/// is no error: nothing may be said on stderr (docs/spec/cli.md#exit-codes).
#[track_caller]
fn with_closed_stdout(mut cmd: Command) -> i32 {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "stderr");
    out.status.code().unwrap_or(-1)
}

/// A reader that stops reading must not stop the work: every recipient of
/// a broadcast gets its record, every record asked for is acknowledged.
#[test]
fn a_closed_stdout_stops_the_printing_not_the_work() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    for id in ["b1", "b2", "b3", "b4"] {
        let pane = t.window(id, &["cat"]);
        meta(&h, id, &format!("pane={pane}\ntmux_socket={}\n", t.socket));
    }
    let mut send = Command::new(bin("fm-send"));
    send.env("FM_HOME", h.root())
        .args(["--all", "--quiet", "stand", "down"]);
    assert_eq!(with_closed_stdout(send), 0);
    for id in ["b1", "b2", "b3", "b4"] {
        assert_eq!(record_body(&h, id, 1), b"stand down", "{id}");
    }
    for i in 0..5 {
        h.fm("send")
            .args(["b1", "--quiet", &format!("m{i}")])
            .stdout(format!(
                "queued b1 {:03}.msg \u{b7} doorbell quiet\n",
                i + 2
            ))
            .run();
    }
    let mut ack = Command::new(bin("fm-ack"));
    ack.env("FM_HOME", h.root()).args(["b1", "--through", "6"]);
    assert_eq!(with_closed_stdout(ack), 0);
    let pending = firstmate::fsx::list_numbered(&h.path("state/b1.inbox"), "msg").unwrap();
    assert_eq!(pending, Vec::<u64>::new());
}

/// `--file /dev/zero` or an endless stdin is refused at the size limit,
/// without reading it all.
#[test]
fn an_endless_body_is_refused_at_the_limit() {
    let h = TestHome::new();
    meta(&h, "t1", "");
    let before = h.tree();
    for stdin_endless in [false, true] {
        let mut cmd = Command::new(bin("fm-send"));
        cmd.env("FM_HOME", h.root())
            .env("FM_SEND_MAX_BODY_BYTES", "4096")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if stdin_endless {
            cmd.args(["t1", "-"])
                .stdin(std::fs::File::open("/dev/zero").unwrap());
        } else {
            cmd.args(["t1", "--file", "/dev/zero"]);
        }
        let mut child = cmd.spawn().unwrap();
        let done = wait_until(10.0, || child.try_wait().unwrap().is_some());
        if !done {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fm-send kept reading an endless body (stdin {stdin_endless})");
        }
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with("fm-send: error: ")
                && err.contains("limit")
                && err.lines().count() == 1,
            "{err}"
        );
    }
    assert_eq!(h.tree(), before);
}

/// A `--dedupe` hit still resolves the keys asked for; a broadcast skips a
/// task whose meta cannot be read instead of failing for everyone.
#[test]
fn dedupe_still_resolves_and_a_bad_meta_does_not_stop_a_broadcast() {
    let h = TestHome::new();
    meta(&h, "t1", "");
    h.fm("status")
        .args(["t1", "needs-decision", "--key", "db", "which db?"])
        .run();
    h.fm("send")
        .args(["t1", "--quiet", "use postgres"])
        .stdout("queued t1 001.msg \u{b7} doorbell quiet\n")
        .run();
    h.fm("send")
        .args(["t1", "--dedupe", "--resolve-key", "db", "use postgres"])
        .stdout_has("duplicate of a pending record")
        .stderr("fm-send: t1: doorbell no-pane: meta records no pane for this task; the message is recorded and the watcher will re-ring it\n").run();
    let st = h
        .fm("status")
        .args(["t1", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(st["open"], serde_json::json!([]), "{st}");
    let Some(t) = Tmux::start() else { return };
    let pane = t.window("ok", &["cat"]);
    meta(
        &h,
        "ok",
        &format!("pane={pane}\ntmux_socket={}\n", t.socket),
    );
    std::os::unix::fs::symlink(h.path("state/ok.meta"), h.path("state/aaa.meta")).unwrap();
    h.fm("send")
        .args(["--all", "--quiet", "hello"])
        .stderr_has("aaa: skipped")
        .stdout("queued ok 001.msg \u{b7} doorbell quiet\n")
        .run();
    assert_eq!(record_body(&h, "ok", 1), b"hello");
}

/// `--all --only <ids>` under a key (how a captain's broadcast reaches a
/// host's tasks): only the tasks named, each record keyed, so the same
/// call again writes nothing and prints the first answers, even for a
/// task whose pane went away meanwhile.
#[test]
fn a_keyed_broadcast_to_named_tasks_is_written_once() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    for id in ["b1", "b2", "b3"] {
        let pane = t.window(id, &["cat"]);
        meta(&h, id, &format!("pane={pane}\ntmux_socket={}\n", t.socket));
    }
    let first =
        "queued b1 001.msg \u{b7} doorbell quiet\nqueued b3 001.msg \u{b7} doorbell quiet\n";
    let send = || {
        h.fm("send")
            .args(["--all", "--only", "b3,b1", "--idempotency-key", "cap-all-1"])
            .args(["--quiet", "-"])
            .stdin("stand down\n")
    };
    send().stdout(first).stderr("").run();
    assert!(!h.exists("state/b2.inbox/001.msg"));
    // b3's pane goes away: the retry still answers for it, from its key.
    meta(&h, "b3", &format!("pane=%999\ntmux_socket={}\n", t.socket));
    send().stdout(first).stderr("").run();
    for id in ["b1", "b3"] {
        assert_eq!(record_body(&h, id, 1), b"stand down\n", "{id}");
        assert!(!h.exists(&format!("state/{id}.inbox/002.msg")), "{id}");
        assert_eq!(
            h.read_string(&format!("state/{id}.seen")).lines().count(),
            1
        );
    }
    // None of the named tasks live: nothing to do, no refusal.
    h.fm("send")
        .args(["--all", "--only", "b3", "--quiet", "again"])
        .stdout("")
        .stderr("")
        .run();
    h.fm("send")
        .args(["--only", "b1", "b1", "hello"])
        .status(2)
        .stdout("")
        .stderr_has("--all")
        .run();
    h.fm("send")
        .args(["--all", "--only", "../x", "hello"])
        .status(2)
        .stdout("")
        .stderr_has("invalid task id")
        .run();
}

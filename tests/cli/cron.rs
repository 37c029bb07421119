//! Cron's environment: `env -i` with only HOME, LOGNAME, SHELL=/bin/sh and
//! PATH=/usr/bin:/bin — no locale at all. Every tool must read a live
//! worker's pane there exactly as in a UTF-8 shell, and the line
//! `fm-watch --crontab` prints must run there, ring, raise no false
//! `dead-agent` wake, and keep its output in a bounded log under `state/`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::control::{queue, task};
use crate::harness::{Cmd, TestHome, Tmux, bin, wait_until};

/// The directory tmux is found in on this machine's PATH.
fn tmux_dir() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find(|d| d.join("tmux").is_file())
}

/// cron's PATH, plus tmux's directory when it is elsewhere (a tool that
/// cannot find tmux at all is a different failure, not the one tested).
fn cron_path() -> OsString {
    let mut dirs = vec![PathBuf::from("/usr/bin"), PathBuf::from("/bin")];
    if let Some(d) = tmux_dir().filter(|d| !dirs.contains(d)) {
        dirs.push(d);
    }
    std::env::join_paths(dirs).unwrap()
}

/// `env -i` with cron's variables only, then `argv`.
fn cron_env(h: &TestHome) -> Cmd {
    let mut home = OsString::from("HOME=");
    home.push(h.root());
    let mut path = OsString::from("PATH=");
    path.push(cron_path());
    Cmd::new("env")
        .arg("-i")
        .arg(home)
        .args(["LOGNAME=fm", "SHELL=/bin/sh"])
        .arg(path)
}

/// A firstmate tool under cron's environment, with `FM_HOME` set (as a
/// crontab line or a script run from one would).
fn cron_tool(h: &TestHome, tool: &str) -> Cmd {
    let mut fm_home = OsString::from("FM_HOME=");
    fm_home.push(h.root());
    cron_env(h).arg(fm_home).arg(bin(tool))
}

fn acked(h: &TestHome, id: &str, seq: u64) -> bool {
    !h.exists(&format!("state/{id}.inbox/{seq:03}.msg"))
        && h.exists(&format!("state/{id}.inbox/handled/{seq:03}.msg"))
}

#[test]
fn crew_state_send_and_exit_read_live_panes_under_cron_env() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (_wt, pane) = task(&h, &t, "t1", "direct-PR");
    let idle = "state: idle \u{b7} source: pane \u{b7} agent alive, no status yet\n";
    h.fm("crew-state").arg("t1").stdout(idle).run();
    cron_tool(&h, "fm-crew-state").arg("t1").stdout(idle).run();
    cron_tool(&h, "fm-send")
        .args(["t1", "hello from cron"])
        .stdout("queued t1 001.msg \u{b7} doorbell rang\n")
        .run();
    assert!(
        wait_until(10.0, || acked(&h, "t1", 1)),
        "the stand-in never acknowledged the ring: {}",
        t.capture(&pane)
    );
    cron_tool(&h, "fm-control")
        .args(["t1", "exit"])
        .env("FM_CONTROL_EXIT_WAIT_SECS", "5")
        .stdout("stopped t1\n")
        .run();
    cron_tool(&h, "fm-crew-state")
        .arg("t1")
        .stdout_has("state: exited")
        .run();
}

/// The command part of a crontab line: the five time fields dropped and
/// cron's `\%` turned back into `%`.
fn command_of(line: &str) -> String {
    let mut rest = line.trim_end_matches('\n');
    for _ in 0..5 {
        rest = rest.trim_start().split_once(' ').unwrap().1;
    }
    rest.replace("\\%", "%")
}

fn run_line(h: &TestHome, command: &str) {
    cron_env(h)
        .args(["/bin/sh", "-c", command])
        .stdout("")
        .stderr("")
        .run();
}

#[test]
fn the_crontab_line_rings_live_workers_under_cron_env_and_logs_bounded() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let (_wt, pane) = task(&h, &t, "t2", "direct-PR");
    h.write("config/firstmate.toml", "[watch]\ngrace_secs = 0\n");
    queue(&h, "t2", "ring me from cron");
    let line = h.fm("watch").arg("--crontab").stdout_any().run().stdout();
    let log = h.path("state/watch.log");
    assert!(
        line.contains(&format!("{} 2>&1", quoted(&log))),
        "no log under state/: {line}"
    );
    assert!(line.contains(" PATH='"), "no PATH: {line}");
    let command = command_of(&line);
    run_line(&h, &command);
    assert!(
        wait_until(10.0, || acked(&h, "t2", 1)),
        "the ring never landed: {}",
        t.capture(&pane)
    );
    let wakes =
        firstmate::wakes::parse_all(&std::fs::read(h.path("state/wakes.log")).unwrap_or_default());
    assert!(
        wakes.iter().all(|w| w.kind != "dead-agent"),
        "a false dead-agent wake: {wakes:?}"
    );
    let events = h.read_string("state/events.jsonl");
    assert!(events.contains("\"doorbell\":\"rang\""), "{events}");
    assert!(log.is_file(), "the line left no log");
    // The log is bounded: past 1 MiB it moves to watch.log.1 (one
    // generation kept) and the next run starts a fresh one.
    std::fs::write(&log, vec![b'x'; 1024 * 1024 + 1]).unwrap();
    run_line(&h, &command);
    let old = h.path("state/watch.log.1");
    assert!(std::fs::metadata(&old).unwrap().len() > 1024 * 1024);
    assert!(std::fs::metadata(&log).map_or(0, |m| m.len()) < 4096);
}

fn quoted(p: &Path) -> String {
    format!("'{}'", p.display())
}

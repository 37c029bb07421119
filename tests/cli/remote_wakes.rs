//! The captain's feed across hosts over a real sshd: `fm-watch --drain`
//! merges every host's wakes with its own, in time order, each once, and
//! none is lost while a host was unreachable; `fm-watch --until-wake` ends
//! on a host's new wake and never waits on a host.

use std::time::{Duration, Instant};

use super::harness::{TestHome, wait_until};
use super::sshd::Sshd;

fn wake(seq: u64, epoch: u64, task: &str, text: &str) -> String {
    format!("{seq}\t{epoch}\t{task}\tstatus\t{text}\n")
}

fn iso(epoch: u64) -> String {
    firstmate::clock::rfc3339(epoch)
}

#[test]
fn drain_merges_the_hosts_wakes_once_and_keeps_those_of_a_host_that_was_down() {
    let Some(mut sshd) = Sshd::start() else {
        return;
    };
    let h = TestHome::new();
    h.write("config/firstmate.toml", sshd.host_toml("far", 5_000));
    let now = firstmate::clock::now();
    h.write("state/wakes.log", wake(1, now - 100, "l1", "local one"));
    let mut far_log = wake(1, now - 150, "r1", "far one") + &wake(2, now - 50, "r1", "far two");
    sshd.far_write("state/wakes.log", &far_log);

    h.fm("watch")
        .arg("--drain")
        .stdout(format!(
            "wake 1 {} r1 status \u{b7} far one \u{b7} host far\n\
             wake 1 {} l1 status \u{b7} local one\n\
             wake 2 {} r1 status \u{b7} far two \u{b7} host far\n",
            iso(now - 150),
            iso(now - 100),
            iso(now - 50)
        ))
        .stderr("")
        .run();
    h.fm("watch").arg("--drain").stdout("").stderr("").run();

    // The host goes down; its watcher raises wakes meanwhile.
    sshd.kill();
    far_log += &wake(3, now - 5, "r1", "far three");
    far_log += &wake(4, now - 4, "r2", "far four");
    sshd.far_write("state/wakes.log", &far_log);
    h.write(
        "state/wakes.log",
        wake(1, now - 100, "l1", "local one") + &wake(2, now - 3, "l1", "local two"),
    );
    h.fm("watch")
        .args(["--drain", "--json"])
        .stdout(format!(
            "[{{\"seq\":2,\"epoch\":{},\"task\":\"l1\",\"kind\":\"status\",\"text\":\"local two\"}}]\n",
            now - 3
        ))
        .stderr_regex(
            r"^fm-watch: warning: host far: no wakes this time \(unreachable: .*Connection refused\); they come with a later drain\n$",
        )
        .run();

    // Back up: what it raised while down arrives, once.
    sshd.restart();
    h.fm("watch")
        .args(["--drain", "--json"])
        .stdout(format!(
            "[{{\"seq\":3,\"epoch\":{},\"task\":\"r1\",\"kind\":\"status\",\"text\":\"far three\",\"host\":\"far\"}},\
             {{\"seq\":4,\"epoch\":{},\"task\":\"r2\",\"kind\":\"status\",\"text\":\"far four\",\"host\":\"far\"}}]\n",
            now - 5,
            now - 4
        ))
        .stderr("")
        .run();
    h.fm("watch").arg("--drain").stdout("").stderr("").run();
    // The far side's own cursor never moved: its captain is this drain.
    assert!(!sshd.far_home.join("state/.wakes.cursor").exists());
}

/// Whether the captain's ssh master connection to a host is up.
fn connected(h: &TestHome) -> bool {
    std::fs::read_dir(h.path("state/ssh")).is_ok_and(|d| d.count() > 0)
}

#[test]
fn until_wake_returns_on_a_hosts_new_wake_and_never_waits_on_a_stopped_host() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let h = TestHome::new();
    h.write("config/firstmate.toml", sshd.host_toml("far", 5_000));
    let now = firstmate::clock::now();
    let old = wake(1, now - 50, "r1", "far one");
    sshd.far_write("state/wakes.log", &old);

    // A long poll: the host's wake must end the wait by itself.
    let mut waiting = h
        .fm("watch")
        .arg("--until-wake")
        .env("FM_WATCH_POLL_SECS", "30")
        .stdout(format!(
            "wake 2 {} r1 status \u{b7} far two \u{b7} host far\n",
            iso(now - 1)
        ))
        .stderr("")
        .start();
    assert!(wait_until(10.0, || connected(&h)), "{}", sshd.log());
    // The host's first answer (its start) is in; the wake before it is old.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert_eq!(waiting.exited(), None, "{}", waiting.stdout_so_far());
    sshd.far_write(
        "state/wakes.log",
        old.clone() + &wake(2, now - 1, "r1", "far two"),
    );
    let began = Instant::now();
    waiting.wait(10.0);
    assert!(
        began.elapsed() < Duration::from_secs(6),
        "{:?}",
        began.elapsed()
    );
    // It moved no cursor: the drain still has both of the host's wakes.
    h.fm("watch")
        .arg("--drain")
        .stdout(format!(
            "wake 1 {} r1 status \u{b7} far one \u{b7} host far\n\
             wake 2 {} r1 status \u{b7} far two \u{b7} host far\n",
            iso(now - 50),
            iso(now - 1)
        ))
        .stderr("")
        .run();

    // The host hangs: a local wake still ends the wait at once.
    sshd.freeze();
    let waiting = h
        .fm("watch")
        .arg("--until-wake")
        .env("FM_WATCH_POLL_SECS", "1")
        .stdout(format!("wake 1 {} l1 status \u{b7} local one\n", iso(now)))
        .stderr("")
        .start();
    std::thread::sleep(Duration::from_millis(1500));
    h.write("state/wakes.log", wake(1, now, "l1", "local one"));
    let began = Instant::now();
    waiting.wait(10.0);
    assert!(
        began.elapsed() < Duration::from_secs(4),
        "{:?}",
        began.elapsed()
    );
    sshd.thaw();

    // Another watcher holds the lock: the waiting one follows it, and a
    // host's new wake ends its wait too.
    let d = h
        .fm("watch")
        .env("FM_WATCH_POLL_SECS", "30")
        .status_any()
        .stdout_any()
        .stderr_any()
        .start();
    let pid = format!("{}\n", d.pid());
    assert!(wait_until(10.0, || h.exists("state/.watch.lock")
        && h.read("state/.watch.lock") == pid.as_bytes()));
    let follower = h
        .fm("watch")
        .arg("--until-wake")
        .stdout(format!(
            "wake 3 {} r2 status \u{b7} far three \u{b7} host far\n",
            iso(now)
        ))
        .stderr("")
        .start();
    std::thread::sleep(Duration::from_millis(2500));
    sshd.far_write(
        "state/wakes.log",
        old + &wake(2, now - 1, "r1", "far two") + &wake(3, now, "r2", "far three"),
    );
    follower.wait(15.0);
    d.signal(libc::SIGTERM);
    d.wait(10.0);
}

/// The first mate's packet holds a host's wakes beside the local ones;
/// the ack moves each feed's own offset, and a host that was down keeps
/// its wakes for a later packet.
#[test]
fn the_first_mates_packet_holds_the_hosts_wakes_and_acks_each_feed() {
    let Some(mut sshd) = Sshd::start() else {
        return;
    };
    let h = TestHome::new();
    h.write("config/firstmate.toml", sshd.host_toml("far", 5_000));
    let now = firstmate::clock::now();
    // A host first read has a past: it is not news (the ledger starts at
    // each feed's end, as it does at the local log's with `fm mate init`).
    let mut far_log = wake(1, now - 500, "r0", "done: old history");
    sshd.far_write("state/wakes.log", &far_log);
    let first = h.fm("fm").arg("wake").stdout_any().run().stdout();
    assert!(first.starts_with("no news"), "{first}");
    assert!(!first.contains("old history"), "{first}");
    h.write(
        "state/wakes.log",
        wake(1, now - 100, "l1", "needs-decision key=db: local question"),
    );
    far_log += &wake(2, now - 50, "r1", "blocked: far reason");
    sshd.far_write("state/wakes.log", &far_log);
    let v = h
        .fm("fm")
        .args(["wake", "--json"])
        .stdout_json()
        .run()
        .json();
    assert_eq!(v["token"], "w1", "{v}");
    let tasks: Vec<(String, Option<String>)> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["task"].as_str().unwrap().to_string(),
                i["host"].as_str().map(str::to_string),
            )
        })
        .collect();
    assert_eq!(
        tasks,
        [("l1".into(), None), ("r1".into(), Some("far".into()))],
        "{v}"
    );
    let text = h.fm("fm").arg("wake").stdout_any().run().stdout();
    assert!(text.contains("r1@far: "), "{text}");
    h.fm("fm").args(["wake", "--ack", "w1"]).stdout_any().run();
    let cursor = h.read_string("state/.mate.cursor");
    assert!(
        cursor
            .lines()
            .any(|l| l == format!("far\t{}", far_log.len())),
        "{cursor}"
    );
    assert!(
        !h.fm("fm")
            .args(["wake", "--json"])
            .stdout_json()
            .run()
            .json()["token"]
            .is_string()
    );

    // Down: the packet says so and the host's new wake waits for it.
    sshd.kill();
    far_log += &wake(3, now - 5, "r1", "failed: far crash");
    sshd.far_write("state/wakes.log", &far_log);
    let down = h.fm("fm").arg("wake").stdout_any().run().stdout();
    assert!(
        down.contains("warning: host far: no wakes this time"),
        "{down}"
    );
    assert!(!down.contains("far crash"), "{down}");
    sshd.restart();
    let up = h.fm("fm").arg("wake").stdout_any().run().stdout();
    assert!(up.starts_with("wake w2: 1 worker with news"), "{up}");
    assert!(up.contains("failed") && up.contains("far crash"), "{up}");
    // The far side's cursors never moved.
    assert!(!sshd.far_home.join("state/.mate.cursor").exists());

    // The host's log replaced by a shorter one: its wakes count again
    // from its start, not never.
    h.fm("fm").args(["wake", "--ack", "w2"]).stdout_any().run();
    sshd.far_write(
        "state/wakes.log",
        wake(1, now - 1, "r2", "done: after a reset"),
    );
    let reset = h.fm("fm").arg("wake").stdout_any().run().stdout();
    assert!(reset.starts_with("wake w3: 1 worker with news"), "{reset}");
    assert!(reset.contains("after a reset"), "{reset}");
}

/// The first mate's wait ends on a host's wake that was logged while the
/// host was down: when it answers again, the wake is past what the lead
/// saw, not the start of a new "now".
#[test]
fn the_first_mates_wait_hears_a_wake_a_host_logged_while_down() {
    let Some(mut sshd) = Sshd::start() else {
        return;
    };
    let h = TestHome::new();
    h.write("config/firstmate.toml", sshd.host_toml("far", 5_000));
    let now = firstmate::clock::now();
    let mut far_log = wake(1, now - 500, "r0", "done: old history");
    sshd.far_write("state/wakes.log", &far_log);
    // First contact: the host's past is not news.
    let first = h.fm("fm").arg("wake").stdout_any().run().stdout();
    assert!(first.starts_with("no news"), "{first}");
    sshd.kill();
    let waiter = h
        .fm("fm")
        .args(["wake", "--wait", "--timeout", "60"])
        .stdout_any()
        .stderr_any()
        .start();
    std::thread::sleep(Duration::from_secs(3));
    far_log += &wake(2, now - 1, "r1", "needs-decision key=db: asked while down");
    sshd.far_write("state/wakes.log", &far_log);
    std::thread::sleep(Duration::from_secs(3));
    sshd.restart();
    // Well before the wait's own timeout (60 s).
    let out = waiter.wait(40.0).stdout();
    assert!(out.starts_with("wake w1: 1 worker with news"), "{out}");
    assert!(out.contains("asked while down"), "{out}");
}

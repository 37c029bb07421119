//! The captain's feed across hosts over a real sshd: `fm-watch --drain`
//! merges every host's wakes with its own, in time order, each once, and
//! none is lost while a host was unreachable.

use super::harness::TestHome;
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

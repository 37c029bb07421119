//! Class 11: crash debris is swept. A writer killed between writing its
//! dot-temp file and renaming it leaves the temp behind; readers never
//! list it, the next send to that inbox removes the stale ones, and
//! `fm doctor` sweeps the whole home and says what it removed. A temp
//! young enough to belong to a live write is never touched.

use crate::harness::TestHome;

const TWO_HOURS: u64 = 2 * 3600;

#[test]
fn the_next_send_sweeps_stale_staged_files_and_keeps_live_ones() {
    let h = TestHome::new();
    h.write("state/t1.meta", "kind=ship\n");
    h.write("state/t1.inbox/.staged.tmp.4242.0", "schema=fm-inbox.v1\n");
    h.backdate("state/t1.inbox/.staged.tmp.4242.0", TWO_HOURS);
    h.write("state/t1.inbox/.staged.tmp.4243.0", "being written");
    h.fm("ack")
        .args(["t1", "--list"])
        .stdout_any()
        .stdout_lacks("staged")
        .run();
    h.fm("send")
        .args(["t1", "--quiet", "one"])
        .stdout("queued t1 001.msg \u{b7} doorbell quiet\n")
        .run();
    assert!(!h.exists("state/t1.inbox/.staged.tmp.4242.0"));
    assert!(h.exists("state/t1.inbox/.staged.tmp.4243.0"));
}

#[test]
fn doctor_sweeps_stale_temp_files_everywhere_and_reports_them() {
    let h = TestHome::new();
    h.write("state/t1.meta", "kind=ship\n");
    let stale = [
        "state/.t1.meta.tmp.17.3",
        "state/t1.inbox/.staged.tmp.17.0",
        "state/t1.inbox/handled/.staged.tmp.17.1",
        "data/t1/.brief.md.tmp.17.2",
        "data/t1/brief.history/.staged.tmp.17.4",
        "data/board/.T-001.task.tmp.17.5",
    ];
    for rel in stale {
        h.write(rel, "partial");
        h.backdate(rel, TWO_HOURS);
    }
    h.write("state/t1.inbox/.staged.tmp.18.0", "live");
    // A stale name that is not a temp file of ours is left alone.
    h.write("state/t1.inbox/.staged.tmp.x", "not ours");
    h.backdate("state/t1.inbox/.staged.tmp.x", TWO_HOURS);
    let r = h.fm("fm").arg("doctor").status_any().stdout_any().run();
    let out = r.stdout();
    let line = out
        .lines()
        .find(|l| l.starts_with("warn debris: "))
        .unwrap_or_else(|| panic!("no debris line in {out}"));
    assert!(
        line.contains("swept 6 stale temp file(s) left by killed writers: ")
            && line.contains("and 1 more"),
        "{line}"
    );
    for rel in stale {
        assert!(!h.exists(rel), "{rel} was not swept");
    }
    assert!(h.exists("state/t1.inbox/.staged.tmp.18.0"));
    assert!(h.exists("state/t1.inbox/.staged.tmp.x"));
    h.fm("fm")
        .arg("doctor")
        .status_any()
        .stdout_lacks("debris")
        .stdout_any()
        .run();
}

//! Class 8: offsets and clocks that lie. A status log cut in place and
//! grown again past the watcher's saved offset is read again from its
//! start; a saved offset past the end is not trusted; a record stamped in
//! the future (a clock stepped back) starts its ladder when the watcher
//! first sees it instead of silencing it until the clock gets there.

use std::io::Write;

use crate::harness::{Cmd, TestHome};

fn once(h: &TestHome) -> Cmd {
    h.fm("watch")
        .args(["--once"])
        .env("FM_WATCH_GRACE_SECS", "0")
        .env("FM_WATCH_MAX_RINGS", "1")
}

fn wake_re(task: &str, kind: &str, text: &str) -> String {
    format!(r"wake \d+ \S+Z {task} {kind} . {text}\n")
}

fn wakes(h: &TestHome) -> Vec<firstmate::wakes::Wake> {
    firstmate::wakes::parse_all(&std::fs::read(h.path("state/wakes.log")).unwrap_or_default())
}

#[test]
fn a_status_log_cut_in_place_and_regrown_loses_no_wake() {
    let h = TestHome::new();
    h.write("state/t1.status", "working: a\ndone: first\n");
    once(&h)
        .stdout_regex(&wake_re("t1", "status", "done: first"))
        .run();
    // `echo … > log` instead of `>>`: same file, cut to nothing, then a
    // line longer than everything before it.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(h.path("state/t1.status"))
        .unwrap();
    f.write_all(b"needs-decision [key=db]: postgres or sqlite for the cache?\n")
        .unwrap();
    drop(f);
    once(&h)
        .stdout_regex(&wake_re(
            "t1",
            "status",
            "needs-decision key=db: postgres or sqlite for the cache\\?",
        ))
        .run();
    once(&h).run();
    // An offsets file that says the log was read past its end.
    let offsets = h.read_string("state/.watch.offsets");
    let lying: String = offsets
        .lines()
        .map(|l| {
            let mut f: Vec<&str> = l.split('\t').collect();
            f[1] = "99999";
            f.join("\t") + "\n"
        })
        .collect();
    assert_ne!(lying, offsets);
    h.write("state/.watch.offsets", lying);
    once(&h)
        .stdout_regex(&wake_re(
            "t1",
            "status",
            "needs-decision key=db: postgres or sqlite for the cache\\?",
        ))
        .run();
    let texts: Vec<String> = wakes(&h).into_iter().map(|w| w.text).collect();
    assert_eq!(texts.len(), 3, "{texts:?}");
}

#[test]
fn a_record_stamped_in_the_future_still_rings_and_escalates() {
    let h = TestHome::new();
    h.write("state/t9.meta", "kind=ship\n");
    // Queued, then the clock stepped back ten years.
    let at = firstmate::clock::rfc3339(firstmate::clock::now() + 10 * 365 * 86400);
    h.write(
        "state/t9.inbox/001.msg",
        firstmate::inbox::render(&at, "captain", false, b"please look\n"),
    );
    // The first pass notes when the ladder first saw it; the ladder
    // counts from then.
    once(&h).run();
    once(&h)
        .stdout("rang t9 001.msg (attempt 1) \u{b7} no-pane\n")
        .run();
    once(&h)
        .stdout_regex(&wake_re(
            "t9",
            "escalation",
            "001.msg unacknowledged after 1 ring\\(s\\): please look",
        ))
        .run();
}

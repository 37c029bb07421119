//! `d` and `L` in `fm top`, in a real terminal: the dashboard in a pane
//! of a private tmux server over a spawned stand-in worker whose branch
//! is finished; keys by `send-keys`, the screen by `capture-pane`.

use crate::harness::{TestHome, Tmux, bin, git, wait_until};
use crate::land::{finished, snapshot};

const SECS: f64 = 15.0;

pub(crate) struct Dash<'a> {
    t: &'a Tmux,
    pane: String,
}

impl Dash<'_> {
    pub(crate) fn start<'a>(t: &'a Tmux, h: &TestHome) -> Dash<'a> {
        let home = format!("FM_HOME={}", h.root().display());
        let fm = bin("fm").display().to_string();
        let pane = t.window(
            "dash",
            &["--", "env", &home, "TERM=xterm-256color", &fm, "top"],
        );
        t.run(["set-option", "-p", "-t", &pane, "remain-on-exit", "on"]);
        Dash { t, pane }
    }

    #[track_caller]
    pub(crate) fn wait(&self, what: &str, f: impl Fn(&str) -> bool) {
        let ok = wait_until(SECS, || f(&self.t.capture(&self.pane)));
        assert!(
            ok,
            "gave up waiting for {what}; the screen:\n{}",
            self.t.capture(&self.pane)
        );
    }

    pub(crate) fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.t.run(["send-keys", "-t", &self.pane, k]);
        }
    }
}

#[test]
fn d_reviews_the_row_file_by_file_and_l_lands_it_after_asking() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let wt = finished(&h, &t, "v1", "local-only", "");
    for f in ["a.txt", "b.txt"] {
        std::fs::write(wt.join(f), format!("file {f}\n")).unwrap();
    }
    git(&wt, &["add", "a.txt", "b.txt"]);
    git(&wt, &["commit", "-q", "-m", "two more files"]);
    h.fm("status")
        .args(["v1", "done", "ready in branch fm/v1"])
        .run();
    let proj = h.root().join("project");
    let d = Dash::start(&t, &h);
    d.wait("the row", |x| x.contains("v1 "));

    d.keys(&["d"]);
    d.wait("the review", |x| {
        x.contains("review v1 \u{b7} file 0/3")
            && x.contains("gate: accepted")
            && x.contains("commits (2):")
    });
    d.keys(&["n"]);
    d.wait("the first file", |x| {
        x.contains("file 1/3")
            && x.lines()
                .nth(2)
                .is_some_and(|l| l.contains("diff --git a/a.txt"))
    });
    d.keys(&["n"]);
    d.wait("the second file", |x| {
        x.contains("file 2/3") && x.contains("+file b.txt")
    });
    d.keys(&["N"]);
    d.wait("back to the first", |x| x.contains("file 1/3"));
    d.keys(&["q"]);
    d.wait("the list", |x| {
        !x.contains("review v1") && x.contains("v1 ")
    });

    // L asks once; anything but y lands nothing.
    let before = snapshot(&proj);
    d.keys(&["L"]);
    d.wait("the question", |x| {
        x.contains("land v1 the way its mode says (fm land v1)? y/n")
    });
    d.keys(&["n"]);
    d.wait("the cancel", |x| x.contains("v1: not landed"));
    assert_eq!(snapshot(&proj), before);
    // A refusal is shown as it is, and changes nothing.
    std::fs::write(proj.join("README"), "captain's edit\n").unwrap();
    let before = snapshot(&proj);
    d.keys(&["L", "y"]);
    d.wait("the refusal", |x| {
        x.contains("uncommitted changes (README)")
    });
    assert_eq!(snapshot(&proj), before);
    git(&proj, &["checkout", "--", "README"]);
    d.keys(&["L", "y"]);
    d.wait("the landing", |x| {
        x.contains("landed v1: main fast-forwarded to")
    });
    assert_eq!(
        git(&proj, &["rev-parse", "main"]),
        git(&wt, &["rev-parse", "HEAD"])
    );
    d.keys(&["q"]);
}

//! `fm top` acting on workers in a real terminal: `n` writes a brief and
//! spawns a stand-in worker in a real git project; `i` interrupts it, `R`
//! relaunches it and `X` tears it down after asking once (and refuses,
//! with `fm-control`'s words, while its work is uncommitted); a long
//! decision is read whole at 80 columns. The dashboard runs in an
//! 80×24 session of a private tmux server, driven with `send-keys` and
//! read with `capture-pane`.

use crate::control::project;
use crate::harness::{TestHome, Tmux, bin, wait_until};

const SECS: f64 = 20.0;

/// The dashboard's pane.
struct Dash<'a> {
    t: &'a Tmux,
    pane: String,
}

impl Dash<'_> {
    /// `fm top` over `h` in a new 80×24 session; spawns go to `t`'s server.
    fn start<'a>(h: &TestHome, t: &'a Tmux) -> Dash<'a> {
        let pane = t
            .run([
                "new-session",
                "-d",
                "-P",
                "-F",
                "#{pane_id}",
                "-s",
                "dash",
                "-x",
                "80",
                "-y",
                "24",
                "--",
                "env",
                &format!("FM_HOME={}", h.root().display()),
                &format!("FM_TMUX_SOCKET={}", t.socket),
                "FM_CONTROL_EXIT_WAIT_SECS=2",
                "TERM=xterm-256color",
                bin("fm").to_str().unwrap(),
                "top",
            ])
            .trim()
            .to_string();
        t.run(["set-option", "-p", "-t", &pane, "remain-on-exit", "on"]);
        Dash { t, pane }
    }

    fn text(&self) -> String {
        self.t.capture(&self.pane)
    }

    #[track_caller]
    fn wait(&self, what: &str, f: impl Fn(&str) -> bool) {
        let ok = wait_until(SECS, || f(&self.text()));
        assert!(
            ok,
            "gave up waiting for {what}; the screen:\n{}",
            self.text()
        );
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.t.run(["send-keys", "-t", &self.pane, k]);
        }
    }

    fn type_text(&self, text: &str) {
        self.t.run(["send-keys", "-t", &self.pane, "-l", text]);
    }
}

#[test]
fn n_writes_the_brief_and_spawns_then_i_r_and_x_act_on_the_row() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let proj = project(&h);
    let d = Dash::start(&h, &t);
    d.wait("the empty fleet", |s| s.contains("no tasks yet"));
    d.keys(&["n"]);
    d.wait("the project question", |s| {
        s.contains("new worker \u{b7} project (path)")
    });
    d.type_text(proj.to_str().unwrap());
    d.keys(&["Enter"]);
    d.wait("the mode question", |s| s.contains("mode (Tab:"));
    d.keys(&["Tab", "Tab"]);
    d.wait("no-mistakes after two Tabs", |s| {
        s.contains("\u{203a} no-mistakes")
    });
    d.keys(&["C-u"]);
    d.type_text("local-only");
    d.keys(&["Enter"]);
    d.wait("the intent question", |s| s.contains("intent, one line"));
    d.type_text("Make the login page fast");
    d.keys(&["Enter"]);
    d.wait("the harness question", |s| {
        s.contains("harness \u{203a} claude")
    });
    d.keys(&["C-u"]);
    d.type_text("stand-in");
    d.keys(&["Enter"]);
    let id = "make-the-login-page-fast";
    d.wait("the derived task id", |s| {
        s.contains(&format!("task id \u{203a} {id}"))
    });
    d.keys(&["Enter"]);
    d.wait("the spawn's answer", |s| {
        s.contains(&format!("spawned {id}"))
    });
    let brief = h.read_string(&format!("data/{id}/brief.md"));
    assert!(
        brief.contains("Make the login page fast") && brief.contains("mode: local-only"),
        "{brief}"
    );
    let meta = h.read_string(&format!("state/{id}.meta"));
    assert!(
        meta.contains("harness=stand-in\n") && meta.contains("pane=%"),
        "{meta}"
    );
    let pane = meta
        .lines()
        .find_map(|l| l.strip_prefix("pane="))
        .unwrap()
        .to_string();
    assert!(
        wait_until(SECS, || t.capture(&pane).contains("stand-in>")),
        "{}",
        t.capture(&pane)
    );
    d.wait("the new row", |s| s.contains(&format!("\u{203a} {id}")));

    // Interrupt: at once, no question.
    d.keys(&["i"]);
    d.wait("the interrupt's answer", |s| {
        s.contains("interrupt-delivered")
    });
    assert!(wait_until(SECS, || t
        .capture(&pane)
        .contains("interrupted")));

    // Teardown asks once; any key but y does nothing.
    let wt = h.root().join("worktrees").join(id);
    std::fs::write(wt.join("draft.txt"), "unsaved\n").unwrap();
    d.keys(&["X"]);
    d.wait("the teardown question", |s| {
        s.contains(&format!("tear down {id}? (y/n) worktree removed"))
    });
    d.keys(&["n"]);
    d.wait("nothing done", |s| {
        s.contains("nothing done (did not tear down)")
    });
    assert!(wt.exists());
    // Yes, but the work is uncommitted: refused, with the reason, and
    // nothing torn down.
    d.keys(&["X"]);
    d.wait("the teardown question again", |s| s.contains("(y/n)"));
    d.keys(&["y"]);
    d.wait("the refusal", |s| s.contains("has uncommitted changes"));
    assert!(wt.join("draft.txt").exists());
    assert!(h.exists(&format!("state/{id}.meta")));

    // Relaunch asks its note, then y/n, then restarts the agent.
    d.keys(&["R"]);
    d.wait("the note's prompt", |s| {
        s.contains("note for the new agent")
    });
    d.type_text("the interrupt was a test");
    d.keys(&["Enter"]);
    d.wait("the relaunch question", |s| {
        s.contains(&format!("relaunch {id}? (y/n) the agent restarts"))
    });
    d.keys(&["y"]);
    d.wait("the relaunch's answer", |s| {
        s.contains(&format!("relaunched {id}"))
    });

    // Committed (local-only: a local branch keeps it): torn down.
    crate::harness::git(&wt, &["checkout", "-q", "-b", id]);
    crate::harness::git(&wt, &["add", "draft.txt"]);
    crate::harness::git(
        &wt,
        &[
            "-c",
            "user.email=t@x.invalid",
            "-c",
            "user.name=t",
            "commit",
            "-q",
            "-m",
            "draft",
        ],
    );
    d.keys(&["X"]);
    d.wait("the teardown question once more", |s| s.contains("(y/n)"));
    d.keys(&["y"]);
    d.wait("the teardown's answer", |s| {
        s.contains(&format!("torn-down {id}"))
    });
    assert!(!wt.exists());
    d.wait("the row gone", |s| s.contains("no tasks yet"));
}

#[test]
fn a_long_decision_is_read_whole_at_80_columns_and_above_the_answer() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    let question = "Should the importer keep reading rows after a malformed line, logging and counting each one, or stop at the first one so that nothing partial is ever committed to the ledger?";
    h.write("state/import.meta", "kind=scout\nrepo=ledger\n");
    h.write(
        "state/import.status",
        format!(
            "needs-decision [at={}] [key=bad-rows]: {question}\n",
            firstmate::clock::now() - 30
        ),
    );
    let d = Dash::start(&h, &t);
    let joined = |s: &str| s.lines().map(str::trim_end).collect::<Vec<_>>().join(" ");
    d.wait("the whole question under the list", |s| {
        s.contains("import asks [bad-rows]") && joined(s).contains(question)
    });
    assert!(d.text().lines().all(|l| l.chars().count() <= 80));
    d.keys(&["r"]);
    d.wait("the question above the answer prompt", |s| {
        s.contains("answering import [bad-rows]")
            && joined(s).contains(question)
            && s.contains("answer import [bad-rows] \u{203a}")
    });
}

/// A remote row is acted on on its host, through the same route as
/// `fm-control`: an interrupt with no agent there is refused in the far
/// side's words, and a teardown (asked once) archives the task there and
/// the captain's files here.
#[test]
fn interrupt_and_teardown_of_a_remote_row_act_on_its_host() {
    let Some(sshd) = super::sshd::Sshd::start() else {
        return;
    };
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    h.write("config/firstmate.toml", sshd.host_toml("far", 10_000));
    h.write("state/far1.meta", "kind=secondmate\nrepo=shop\nhost=far\n");
    sshd.far_write("state/far1.meta", "kind=secondmate\nrepo=shop\n");
    sshd.far_write(
        "state/far1.status",
        format!("working [at={}]: on it\n", firstmate::clock::now() - 10),
    );
    sshd.chown_far();
    let d = Dash::start(&h, &t);
    d.wait("the remote row", |s| {
        s.contains("far1") && s.contains("on it")
    });
    d.keys(&["i"]);
    d.wait("the far refusal", |s| {
        s.contains("far1: cannot interrupt: nothing to interrupt: no live agent for far1")
    });
    d.keys(&["X"]);
    d.wait("the teardown question", |s| {
        s.contains("tear down far1? (y/n)")
    });
    d.keys(&["y"]);
    d.wait("the far teardown", |s| s.contains("torn-down far1"));
    assert!(!sshd.far_home.join("state/far1.meta").exists());
    assert!(!h.exists("state/far1.meta"));
    assert!(h.exists("state/archive"));
}

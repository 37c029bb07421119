//! `fm-send` argument rules and what happens after the record is written:
//! option words in the text are refused unless `--` comes first, `--resolve-key`
//! failures only warn, and the doorbell in a plain shell pane (no composer
//! regex) is a no-op that never lands on someone's half-typed command.

use crate::harness::{TestHome, Tmux, bin, wait_until};

fn meta(h: &TestHome, id: &str, lines: &str) {
    h.write(&format!("state/{id}.meta"), format!("kind=ship\n{lines}"));
}

fn body(h: &TestHome, id: &str, seq: u64) -> String {
    let bytes = h.read(&format!("state/{id}.inbox/{seq:03}.msg"));
    String::from_utf8(firstmate::inbox::parse(seq, &bytes).expect("a record").body).unwrap()
}

const NO_PANE_T1: &str = "fm-send: t1: doorbell no-pane: meta records no pane for this task; the message is recorded and the watcher will re-ring it\n";
const NO_PANE_D1: &str = "fm-send: d1: doorbell no-pane: meta records no pane for this task; the message is recorded and the watcher will re-ring it\n";
const SKIPPED_T1: &str = "fm-send: t1: doorbell skipped: nothing was typed: the composer holds someone else's text, the pane is in tmux copy mode, or no composer the harness profile recognises is on the screen; the message is recorded and the watcher will re-ring it\n";

#[test]
fn option_words_in_the_text_are_refused_unless_after_a_separator() {
    let h = TestHome::new();
    meta(&h, "t6", "");
    meta(&h, "d1", "");
    meta(&h, "other", "");
    let before = h.tree();
    // An option typed after the text would become part of the message and
    // not take effect: `--resolve-key db` would leave the decision open.
    for args in [
        vec!["t6", "do", "not", "pass", "--all", "to", "the", "script"],
        vec!["d1", "use", "staging", "--resolve-key", "db", "--quiet"],
        vec!["d1", "please", "be", "--quiet=yes", "about", "it"],
        vec!["d1", "hello", "--json"],
    ] {
        h.fm("send")
            .args(&args)
            .status(2)
            .stderr_has("inside the message text")
            .stderr_has("`--` before the text")
            .run();
    }
    assert_eq!(h.tree(), before);
    // After `--` every word is text, for t6 only.
    h.fm("send")
        .args([
            "t6", "--", "do", "not", "pass", "--all", "to", "the", "script",
        ])
        .stdout("queued t6 001.msg \u{b7} doorbell no-pane\n")
        .stderr("fm-send: t6: doorbell no-pane: meta records no pane for this task; the message is recorded and the watcher will re-ring it\n").run();
    assert_eq!(body(&h, "t6", 1), "do not pass --all to the script");
    assert!(!h.exists("state/d1.inbox/001.msg"));
    assert!(!h.exists("state/other.inbox/001.msg"));
    // Words that merely start with dashes, or name no option, are text.
    h.fm("send")
        .args(["d1", "please", "be", "--calm", "about", "it"])
        .stdout("queued d1 001.msg \u{b7} doorbell no-pane\n")
        .stderr(NO_PANE_D1)
        .run();
    assert_eq!(body(&h, "d1", 1), "please be --calm about it");
    // Options before the text still apply, before or after the id.
    for args in [["--quiet", "d1", "hello"], ["d1", "--quiet", "hello"]] {
        h.fm("send").args(args).stdout_has("doorbell quiet").run();
    }
    assert_eq!(body(&h, "d1", 3), "hello");
    h.fm("send")
        .args(["d1", "-", "x"])
        .stdout("queued d1 004.msg \u{b7} doorbell no-pane\n")
        .stderr(NO_PANE_D1)
        .run();
    assert_eq!(body(&h, "d1", 4), "- x");
}

#[test]
fn a_key_option_typed_after_the_text_is_refused_unless_after_a_separator() {
    let h = TestHome::new();
    meta(&h, "t1", "");
    let before = h.tree();
    for args in [
        vec!["t1", "x", "--key", "Enter"],
        vec!["t1", "x", "--key=Enter"],
        vec!["--all", "x", "y", "--key", "Enter"],
    ] {
        h.fm("send")
            .args(&args)
            .status(2)
            .stderr_has("fm-send: error: \"--key")
            .stderr_has("`--` before the text")
            .run();
    }
    assert_eq!(h.tree(), before);
    h.fm("send")
        .args(["t1", "--", "x", "--key", "Enter"])
        .stdout("queued t1 001.msg \u{b7} doorbell no-pane\n")
        .stderr(NO_PANE_T1)
        .run();
    assert_eq!(body(&h, "t1", 1), "x --key Enter");
}

#[test]
fn a_failed_resolve_after_the_record_warns_and_exits_0() {
    let h = TestHome::new();
    meta(&h, "t1", "");
    std::fs::create_dir_all(h.path("state/t1.status")).unwrap();
    let r = h
        .fm("send")
        .args([
            "t1",
            "--resolve-key",
            "db",
            "--resolve-key",
            "x",
            "use",
            "pg",
        ])
        .stdout("queued t1 001.msg \u{b7} doorbell no-pane\n")
        .stderr_has(
            "fm-send: warning: t1: message recorded, but decision key db was not resolved: ",
        )
        .stderr_has("decision key x was not resolved")
        .run();
    assert!(r.stderr().contains("t1.status"), "{}", r.stderr());
    assert_eq!(body(&h, "t1", 1), "use pg");
    // A symlinked status log is refused, never followed, and still exit 0.
    meta(&h, "t2", "");
    let elsewhere = h.path("elsewhere.status");
    h.write("elsewhere.status", "");
    std::os::unix::fs::symlink(&elsewhere, h.path("state/t2.status")).unwrap();
    h.fm("send")
        .args(["t2", "--json", "--resolve-key", "db", "hi"])
        .stdout_has("\"seq\":1")
        .stderr_has("decision key db was not resolved")
        .run();
    assert_eq!(h.read("elsewhere.status"), b"");
}

#[test]
fn usage_errors_name_the_tool_and_help_still_succeeds() {
    for tool in [
        "fm-send",
        "fm-ack",
        "fm-status",
        "fm-brief",
        "fm-crew-state",
        "fm-dod",
        "fm-control",
        "fm-watch",
        "fm-board",
        "fm",
    ] {
        let out = std::process::Command::new(bin(tool))
            .arg("--no-such-option")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{tool}");
        assert!(out.stdout.is_empty(), "{tool}: nothing on stdout");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with(&format!("{tool}: error: ")),
            "{tool}: {err}"
        );
        assert!(err.contains("Usage:"), "{tool}: {err}");
        let help = std::process::Command::new(bin(tool))
            .arg("--help")
            .output()
            .unwrap();
        assert_eq!(help.status.code(), Some(0), "{tool}");
        assert!(help.stderr.is_empty(), "{tool}: nothing on stderr");
        assert!(
            String::from_utf8_lossy(&help.stdout).contains("Usage:"),
            "{tool}: help on stdout"
        );
    }
    let h = TestHome::new();
    meta(&h, "t1", "");
    h.fm("send")
        .args(["t1", " "])
        .status(2)
        .stderr_has("fm-send: error: empty message body (t1)")
        .run();
}

/// A bash pane with a `$ ` prompt and no harness profile (no composer regex).
#[track_caller]
fn bash_pane(t: &Tmux) -> String {
    let pane = t.window(
        "sh",
        &[
            "env",
            "PS1=$ ",
            "HOME=/nonexistent",
            "bash",
            "--norc",
            "--noprofile",
            "-i",
        ],
    );
    assert!(
        wait_until(10.0, || t.capture(&pane).trim_end().ends_with('$')),
        "no prompt: {}",
        t.capture(&pane)
    );
    pane
}

#[test]
fn a_plain_shell_pane_is_never_typed_over_and_the_doorbell_is_a_no_op() {
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    h.write(
        "config/firstmate.toml",
        "[send]\nsettle_ms = 20\nenter_wait_ms = 200\n",
    );
    let pane = bash_pane(&t);
    meta(
        &h,
        "t1",
        &format!("pane={pane}\ntmux_socket={}\n", t.socket),
    );
    // Someone's half-typed command: skipped, nothing typed.
    t.run(["send-keys", "-t", &pane, "-l", "echo HALF"]);
    assert!(wait_until(5.0, || t.capture(&pane).contains("$ echo HALF")));
    h.fm("send")
        .args(["t1", "hello"])
        .stdout("queued t1 001.msg \u{b7} doorbell skipped\n")
        .stderr(SKIPPED_T1)
        .run();
    // Keys tmux got before this marker are on the screen before it.
    t.run(["send-keys", "-t", &pane, "-l", "+MARK"]);
    assert!(wait_until(5.0, || t.capture(&pane).contains("HALF+MARK")));
    let screen = t.capture(&pane);
    assert!(!screen.contains("firstmate"), "{screen}");
    assert!(screen.trim_end().ends_with("$ echo HALF+MARK"), "{screen}");
    // Copy mode: skipped, nothing typed (the keys would drive the mode).
    t.run(["send-keys", "-t", &pane, "C-u"]);
    t.run(["copy-mode", "-t", &pane]);
    h.fm("send")
        .args(["t1", "again"])
        .stdout("queued t1 002.msg \u{b7} doorbell skipped\n")
        .stderr(SKIPPED_T1)
        .run();
    t.run(["send-keys", "-t", &pane, "-X", "cancel"]);
    assert!(wait_until(5.0, || t
        .capture(&pane)
        .trim_end()
        .ends_with('$')));
    assert!(!t.capture(&pane).contains("firstmate"));
    // A bare prompt: rung, and bash runs the line as a no-op — no error,
    // no output, no file named `n` from a `<n>` redirection.
    let cwd = tempfile::tempdir().unwrap();
    let cd = format!("cd {}", firstmate::shq::quote_path(cwd.path()));
    t.run(["send-keys", "-t", &pane, "-l", &cd]);
    t.run(["send-keys", "-t", &pane, "Enter"]);
    assert!(wait_until(5.0, || t
        .capture(&pane)
        .trim_end()
        .ends_with('$')
        && t.capture(&pane).contains("$ cd ")));
    h.fm("send")
        .args(["t1", "now"])
        .stdout("queued t1 003.msg \u{b7} doorbell rang\n")
        .run();
    t.run(["send-keys", "-t", &pane, "-l", "echo rc=$?"]);
    t.run(["send-keys", "-t", &pane, "Enter"]);
    assert!(
        wait_until(5.0, || t.capture(&pane).contains("\nrc=0")),
        "{}",
        t.capture(&pane)
    );
    let screen = t.capture(&pane);
    assert!(
        screen.contains("$ : 'firstmate inbox: new mail in "),
        "{screen}"
    );
    for bad in ["syntax error", "No such file", "unexpected"] {
        assert!(!screen.contains(bad), "{screen}");
    }
    assert_eq!(std::fs::read_dir(cwd.path()).unwrap().count(), 0);
}

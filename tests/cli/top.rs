//! `fm top`, `fm peek` and `fm attach` in a real terminal: the dashboard
//! runs in a pane of a private tmux server over a fixture fleet whose
//! workers are live stand-in agents; the tests type with `send-keys`, read
//! the screen with `capture-pane` and wait on what it shows. A real tmux
//! client (a pane of a second private server running `tmux attach`) is
//! what Enter must move.

use std::path::PathBuf;

use crate::harness::{Cmd, TestHome, Tmux, bin, wait_for, wait_until};

/// Generous bound for what a screen must come to show.
const SECS: f64 = 15.0;

/// A fleet of stand-in workers on a private server, and its home.
pub(crate) struct Fleet {
    pub(crate) h: TestHome,
    pub(crate) t: Tmux,
}

fn now() -> u64 {
    firstmate::clock::now()
}

impl Fleet {
    /// Tasks, attention first: `schema` waits on a decision, `deaf` on an
    /// escalated message, `gone` has lost its pane; `login` works and
    /// `docs` is done. Every pane but `gone`'s runs a stand-in.
    pub(crate) fn new() -> Option<Fleet> {
        let t = Tmux::start()?;
        let h = TestHome::new();
        let fleet = Fleet { h, t };
        for id in ["schema", "deaf", "login", "docs"] {
            fleet.worker(id);
        }
        let h = &fleet.h;
        let t = now();
        h.write(
            "state/schema.status",
            format!(
                "needs-decision [at={}] [key=schema]: postgres or sqlite?\n",
                t - 200
            ),
        );
        h.write(
            "state/login.status",
            format!("working [at={}]: typing\n", t - 30),
        );
        h.write(
            "state/docs.status",
            format!("done [at={}]: report written\n", t - 500),
        );
        h.write(
            "state/deaf.inbox/001.msg",
            firstmate::inbox::render(&firstmate::clock::rfc3339(t - 400), "captain", false, b"hi"),
        );
        h.write(
            "state/deaf.inbox/.ring-state",
            format!("001.msg\t3\t{}\n", t - 60),
        );
        h.write("state/deaf.inbox/.escalated", "001.msg\n");
        h.write(
            "state/gone.meta",
            format!(
                "kind=secondmate\nrepo=web\npane=%999\ntmux_socket={}\n",
                fleet.t.socket
            ),
        );
        Some(fleet)
    }

    /// A stand-in worker for `id` in window `fm-<id>`; returns its pane.
    fn worker(&self, id: &str) -> String {
        let home = self.h.root();
        let pane = self.t.window(
            &format!("fm-{id}"),
            &[
                "-e",
                &format!("FM_HOME={}", home.display()),
                "--",
                bin("fm-stand-in").to_str().unwrap(),
                "--home",
                home.to_str().unwrap(),
                id,
            ],
        );
        self.h.write(
            &format!("state/{id}.meta"),
            format!(
                "kind=secondmate\nrepo=shop\nharness=stand-in\npane={pane}\ntmux_socket={}\n",
                self.t.socket
            ),
        );
        wait_for("the stand-in's composer", SECS, || {
            self.t.capture(&pane).contains("stand-in>")
        });
        pane
    }

    fn pane_of(&self, id: &str) -> String {
        let meta = self.h.read_string(&format!("state/{id}.meta"));
        meta.lines()
            .find_map(|l| l.strip_prefix("pane="))
            .unwrap()
            .to_string()
    }

    /// The argv that runs the dashboard in this home (no shell).
    fn top_argv(&self, extra: &[&str]) -> Vec<String> {
        let mut v = vec![
            "env".to_string(),
            format!("FM_HOME={}", self.h.root().display()),
            "TERM=xterm-256color".into(),
            bin("fm").display().to_string(),
            "top".into(),
        ];
        v.extend(extra.iter().map(std::string::ToString::to_string));
        v
    }

    /// Starts `fm top` in a window of the fleet's own server (so `$TMUX`
    /// names the workers' server) and waits for its rows.
    fn dashboard(&self, extra: &[&str]) -> Screen<'_> {
        self.dashboard_argv(&self.top_argv(extra))
    }

    /// [`Fleet::dashboard`] running `argv`.
    fn dashboard_argv(&self, argv: &[String]) -> Screen<'_> {
        let mut args = vec![
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-t",
            "fm-test",
            "-n",
            "dash",
            "--",
        ];
        args.extend(argv.iter().map(String::as_str));
        let pane = self.t.run(args).trim().to_string();
        self.t
            .run(["set-option", "-p", "-t", &pane, "remain-on-exit", "on"]);
        let s = Screen { t: &self.t, pane };
        s.wait("the fleet's rows", |x| x.contains("docs"));
        s
    }
}

/// The dashboard's pane.
struct Screen<'a> {
    t: &'a Tmux,
    pane: String,
}

impl Screen<'_> {
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

    /// The line index of the row of `id` (the first line starting with it
    /// after the selection mark).
    fn row(&self, id: &str) -> Option<usize> {
        let want = format!("{id} ");
        self.text().lines().position(|l| {
            let rest: String = l.chars().skip(2).collect();
            rest.starts_with(&want)
        })
    }

    fn format(&self, f: &str) -> String {
        self.t
            .run(["display-message", "-p", "-t", &self.pane, f])
            .trim()
            .to_string()
    }
}

#[test]
fn rows_come_attention_first_with_their_reasons_and_p_peeks() {
    let Some(f) = Fleet::new() else { return };
    let s = f.dashboard(&[]);
    let order: Vec<usize> = ["schema", "deaf", "gone", "login", "docs"]
        .iter()
        .map(|id| {
            s.row(id)
                .unwrap_or_else(|| panic!("no row {id}:\n{}", s.text()))
        })
        .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "{order:?}\n{}",
        s.text()
    );
    let screen = s.text();
    for reason in [
        "needs decision: schema \u{2014} postgres or sqlite?",
        "1 message unread after 3 rings",
        "dead agent: pane gone",
        "3 need you",
    ] {
        assert!(screen.contains(reason), "{reason}:\n{screen}");
    }
    // The first row is selected; p shows its worker's screen.
    s.keys(&["p"]);
    s.wait("the peeked screen", |x| {
        x.contains("peek schema") && x.contains("stand-in agent for schema")
    });
    // The peek follows the pane: what the worker prints next shows up.
    f.t.run(["send-keys", "-t", &f.pane_of("schema"), "-l", "hello there"]);
    s.wait("the refreshed peek", |x| {
        x.contains("stand-in> hello there")
    });
    // Escape alone first: read together with the next key, a terminal
    // reader takes Escape then j for Alt-j.
    s.keys(&["Escape"]);
    s.wait("the list again", |x| !x.contains("peek schema"));
    s.keys(&["j", "j", "p"]);
    s.wait("an error for a gone pane", |x| {
        x.contains("gone: cannot peek")
    });
}

#[test]
fn s_sends_a_message_and_r_answers_the_decision() {
    let Some(f) = Fleet::new() else { return };
    let s = f.dashboard(&[]);
    s.keys(&["s"]);
    s.wait("the send prompt", |x| x.contains("send to schema \u{203a}"));
    s.type_text("use the staging db");
    s.keys(&["Enter"]);
    s.wait("the send report", |x| x.contains("schema: queued 001.msg"));
    // The record landed, was rung, and the stand-in read and acked it.
    wait_for("the stand-in to ack 001.msg", SECS, || {
        f.h.exists("state/schema.inbox/handled/001.msg")
    });
    assert!(
        f.h.read_string("state/schema.inbox/handled/001.msg")
            .ends_with("\n--\nuse the staging db")
    );
    let events = f.h.read_string("state/events.jsonl");
    assert!(
        events.contains(r#""action":"inbox.queued","actor":"captain","bytes":18,"doorbell":"rang","seq":1,"task":"schema","tool":"fm-top""#),
        "{events}"
    );
    // r: one open decision, so straight to the answer.
    s.keys(&["r"]);
    s.wait("the answer prompt", |x| {
        x.contains("answer schema [schema] \u{203a}")
    });
    s.type_text("sqlite");
    s.keys(&["Enter"]);
    s.wait("the answer report", |x| x.contains("resolved schema"));
    let log = f.h.read_string("state/schema.status");
    let last = log.lines().last().unwrap();
    assert!(
        last.starts_with("resolved [at=") && last.ends_with("] [key=schema]: answered: sqlite"),
        "{log}"
    );
    wait_for("the answer record acked", SECS, || {
        f.h.exists("state/schema.inbox/handled/002.msg")
    });
    assert!(
        f.h.read_string("state/schema.inbox/handled/002.msg")
            .ends_with("\n--\ndecision schema: sqlite")
    );
    // The decision is closed: schema no longer needs the captain.
    s.wait("schema leaving the top", |x| {
        !x.contains("needs decision") && x.contains("2 need you")
    });
    Cmd::new(bin("fm-status"))
        .args(["schema", "--json"])
        .env("FM_HOME", f.h.root())
        .stdout_regex(r#".*"open":\[\].*"#)
        .run();
}

#[test]
fn enter_switches_a_real_client_to_the_workers_pane() {
    let Some(f) = Fleet::new() else { return };
    let s = f.dashboard(&[]);
    // A real client on the fleet's server, shown in a pane of another one.
    let Some(outer) = Tmux::start() else { return };
    outer.window(
        "client",
        &[
            "env",
            "-u",
            "TMUX",
            "tmux",
            "-L",
            &f.t.socket,
            "attach-session",
            "-t",
            &s.pane,
        ],
    );
    let clients = || f.t.run(["list-clients", "-F", "#{pane_id}"]);
    wait_for("the client to attach", SECS, || clients().trim() == s.pane);
    // The login row, then Enter.
    let login = f.pane_of("login");
    s.keys(&["/"]);
    s.type_text("login");
    s.keys(&["Enter"]);
    s.wait("the filtered list", |x| x.contains("1 shown"));
    s.keys(&["Enter"]);
    wait_for("the client on login's pane", SECS, || {
        clients().trim() == login
    });
    s.wait("the switch report", |x| {
        x.contains("switched your client to login")
    });
    // fm attach from a shell in that server does the same.
    let docs = f.pane_of("docs");
    f.t.run([
        "new-window",
        "-d",
        "-t",
        "fm-test",
        "-e",
        &format!("FM_HOME={}", f.h.root().display()),
        "--",
        bin("fm").to_str().unwrap(),
        "attach",
        "docs",
    ]);
    wait_for("the client on docs's pane", SECS, || {
        clients().trim() == docs
    });
}

#[test]
fn enter_outside_tmux_attaches_and_detaching_comes_back() {
    let Some(f) = Fleet::new() else { return };
    let Some(outer) = Tmux::start() else { return };
    // The dashboard on another server, with no $TMUX: it must attach.
    let mut argv = vec!["env".to_string(), "-u".into(), "TMUX".into()];
    argv.extend(f.top_argv(&[]));
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let pane = outer.window("dash", &argv);
    let s = Screen { t: &outer, pane };
    s.wait("the fleet's rows", |x| x.contains("docs"));
    s.keys(&["Enter"]);
    let schema = f.pane_of("schema");
    let clients = || f.t.run(["list-clients", "-F", "#{pane_id}"]);
    wait_for("a client on schema's pane", SECS, || {
        clients().trim() == schema
    });
    s.wait("the worker's screen", |x| {
        x.contains("stand-in agent for schema")
    });
    // The captain detaches: the dashboard takes the terminal back.
    f.t.run(["detach-client", "-s", "fm-test"]);
    s.wait("the dashboard again", |x| x.contains("back from schema"));
    assert_eq!(clients().trim(), "");
}

/// The captain's own tmux is another server (`captain`, whose client is
/// shown in a pane of a third server, the captain's terminal): Enter must
/// not nest a client of the workers' server in the dashboard's pane (the
/// prefix would reach the captain's client, and `prefix d` detach it). The
/// worker opens in a popup of the captain's server, `prefix d` closes that
/// popup and leaves the captain attached; `fm attach` does the same.
#[test]
fn enter_inside_another_tmux_opens_a_popup_and_never_nests_a_client() {
    let Some(f) = Fleet::new() else { return };
    let Some(captain) = Tmux::start() else { return };
    let Some(terminal) = Tmux::start() else {
        return;
    };
    let argv = f.top_argv(&[]);
    let mut args = vec![
        "new-window",
        "-P",
        "-F",
        "#{pane_id}",
        "-t",
        "fm-test",
        "-n",
        "dash",
        "--",
    ];
    args.extend(argv.iter().map(String::as_str));
    let dash = captain.run(args).trim().to_string();
    let tty_of = |t: &Tmux, pane: &str| {
        t.run(["display-message", "-p", "-t", pane, "#{pane_tty}"])
            .trim()
            .to_string()
    };
    let dash_tty = tty_of(&captain, &dash);
    let term = terminal.window(
        "captain",
        &[
            "env",
            "-u",
            "TMUX",
            "tmux",
            "-L",
            &captain.socket,
            "attach-session",
            "-t",
            "fm-test",
        ],
    );
    wait_for("the captain's client", SECS, || {
        !captain.run(["list-clients"]).trim().is_empty()
    });
    let s = Screen {
        t: &captain,
        pane: dash.clone(),
    };
    s.wait("the fleet's rows", |x| x.contains("docs"));
    // The first row is schema's.
    s.keys(&["Enter"]);
    let schema = f.pane_of("schema");
    let workers_clients = || f.t.run(["list-clients", "-F", "#{client_tty} #{pane_id}"]);
    wait_for("a client on schema's pane", SECS, || {
        workers_clients().contains(&schema)
    });
    let clients = workers_clients();
    assert_eq!(clients.lines().count(), 1, "{clients}");
    assert!(
        !clients.starts_with(&format!("{dash_tty} ")),
        "a client nested in the dashboard's pane: {clients}"
    );
    // The captain's terminal shows the worker over the dashboard, whose
    // own pane still shows the dashboard.
    wait_for(
        "the worker's screen in the captain's terminal",
        SECS,
        || {
            terminal
                .capture(&term)
                .contains("stand-in agent for schema")
        },
    );
    assert!(
        !s.text().contains("stand-in agent for schema"),
        "{}",
        s.text()
    );
    assert!(s.text().contains("docs"), "{}", s.text());
    // prefix then d: the popup closes, the captain stays attached.
    let prefix = captain.run(["show-options", "-gv", "prefix"]);
    terminal.run(["send-keys", "-t", &term, prefix.trim(), "d"]);
    wait_for("the worker's client to go", SECS, || {
        workers_clients().trim().is_empty()
    });
    s.wait("the dashboard's report", |x| x.contains("back from schema"));
    assert!(
        !captain.run(["list-clients"]).trim().is_empty(),
        "the captain's own client was detached"
    );
    // fm attach from a shell of the captain's server: the same popup.
    let shell = captain.run([
        "new-window",
        "-d",
        "-P",
        "-F",
        "#{pane_id}",
        "-t",
        "fm-test",
        "-e",
        &format!("FM_HOME={}", f.h.root().display()),
        "--",
        "sh",
        "-c",
        &format!(
            "{} attach docs; echo fm-attach-exit=$?; sleep 60",
            bin("fm").display()
        ),
    ]);
    let shell = shell.trim();
    let shell_tty = tty_of(&captain, shell);
    let docs = f.pane_of("docs");
    wait_for("a client on docs's pane", SECS, || {
        workers_clients().contains(&docs)
    });
    let clients = workers_clients();
    assert!(
        !clients.starts_with(&format!("{shell_tty} ")),
        "a client nested in the shell's pane: {clients}"
    );
    wait_for("docs in the captain's terminal", SECS, || {
        terminal.capture(&term).contains("stand-in agent for docs")
    });
    terminal.run(["send-keys", "-t", &term, prefix.trim(), "d"]);
    wait_for("fm attach to come back", SECS, || {
        let x = captain.capture(shell);
        x.contains("back from docs") && x.contains("fm-attach-exit=0")
    });
    assert!(!captain.run(["list-clients"]).trim().is_empty());
}

/// Where no popup can open (no client shows the captain's session), the
/// worker opens in a new window of the captain's server: still never a
/// client nested in the pane the command ran from.
#[test]
fn without_a_popup_the_worker_opens_in_a_new_window_of_the_captains_server() {
    let Some(f) = Fleet::new() else { return };
    let Some(captain) = Tmux::start() else { return };
    let shell = captain.run([
        "new-window",
        "-d",
        "-P",
        "-F",
        "#{pane_id}\t#{pane_tty}",
        "-t",
        "fm-test",
        "-e",
        &format!("FM_HOME={}", f.h.root().display()),
        "--",
        "sh",
        "-c",
        &format!(
            "{} attach docs; echo fm-attach-exit=$?; sleep 60",
            bin("fm").display()
        ),
    ]);
    let (shell, shell_tty) = shell.trim().split_once('\t').unwrap();
    wait_for("fm attach to open the window", SECS, || {
        let x = captain.capture(shell);
        x.contains("opened docs in window fm-docs") && x.contains("fm-attach-exit=0")
    });
    let windows = captain.run(["list-windows", "-a", "-F", "#{window_name}\t#{pane_tty}"]);
    let window_tty = windows
        .lines()
        .find_map(|l| l.strip_prefix("fm-docs\t"))
        .unwrap_or_else(|| panic!("no window fm-docs: {windows}"))
        .to_string();
    let docs = f.pane_of("docs");
    let clients = || f.t.run(["list-clients", "-F", "#{client_tty} #{pane_id}"]);
    wait_for("a client on docs's pane", SECS, || {
        clients().contains(&docs)
    });
    assert_eq!(clients().trim(), format!("{window_tty} {docs}"));
    assert_ne!(window_tty, shell_tty);
}

#[test]
fn file_events_refresh_and_polling_is_the_fallback() {
    let Some(f) = Fleet::new() else { return };
    // No poll for an hour: only a file event can show the change.
    let s = f.dashboard(&["--interval", "3600"]);
    f.h.write(
        "state/login.status",
        format!("blocked [at={}] [key=net]: no network\n", now()),
    );
    s.wait("login blocked", |x| {
        x.contains("blocked: net \u{2014} no network")
    });
    let Some(g) = Fleet::new() else { return };
    let s = g.dashboard(&["--no-events", "--interval", "0.3"]);
    s.wait("the polling notice", |x| {
        x.contains("filesystem events unavailable (turned off); refreshing every 0.3s")
    });
    g.h.write(
        "state/login.status",
        format!("failed [at={}]: gave up\n", now()),
    );
    s.wait("login failed", |x| x.contains("failed: gave up"));
}

#[test]
fn w_shows_the_feed_and_marks_it_seen() {
    let Some(f) = Fleet::new() else { return };
    let t = now();
    f.h.write(
        "state/wakes.log",
        format!(
            "1\t{}\tschema\tstatus\tneeds-decision key=schema: postgres or sqlite?\n2\t{}\tdeaf\tescalation\t001.msg unacknowledged after 3 rings\n",
            t - 120,
            t - 60
        ),
    );
    let s = f.dashboard(&[]);
    s.wait("the new-wakes count", |x| x.contains("2 new wakes (w)"));
    s.keys(&["w"]);
    s.wait("the feed", |x| {
        x.contains("\u{25cf}   2m ago  schema  status      needs-decision key=schema")
            && x.contains("escalation  001.msg unacknowledged")
    });
    let end = f.h.read("state/wakes.log").len();
    assert_eq!(f.h.read_string("state/.top.cursor"), format!("{end}\n"));
    assert!(
        !f.h.exists("state/.wakes.cursor"),
        "--drain's cursor is not ours"
    );
    s.keys(&["Escape"]);
    s.wait("no new wakes", |x| {
        x.contains("3 need you") && !x.contains("new wake")
    });
    // A later wake is new again.
    let mut log = f.h.read_string("state/wakes.log");
    log.push_str(&format!("3\t{t}\tdocs\tstatus\tdone: report written\n"));
    f.h.write("state/wakes.log", log);
    s.wait("one new wake", |x| x.contains("1 new wake (w)"));
}

/// The feed covers every configured host, read off the drawing thread: a
/// host's wake is counted and listed as `<task>@<host>`, and a host that
/// hangs never stops the dashboard.
#[test]
fn the_feed_has_every_hosts_wakes_and_a_hung_host_never_stops_it() {
    let Some(sshd) = crate::sshd::Sshd::start() else {
        return;
    };
    let Some(f) = Fleet::new() else { return };
    f.h.write("config/firstmate.toml", sshd.host_toml("far", 2_000));
    let t = now();
    f.h.write(
        "state/wakes.log",
        format!(
            "1\t{}\tschema\tstatus\tneeds-decision key=schema: which?\n",
            t - 120
        ),
    );
    sshd.far_write(
        "state/wakes.log",
        format!("1\t{}\tapi\tstatus\tdone: far work shipped\n", t - 60),
    );
    let s = f.dashboard(&[]);
    s.wait("the new-wakes count with the host's", |x| {
        x.contains("2 new wakes (w)")
    });
    s.keys(&["w"]);
    s.wait("the host's wake in the feed", |x| {
        x.contains("schema   status  needs-decision key=schema: which?")
            && x.contains("api@far  status  done: far work shipped")
    });
    assert_eq!(f.h.read_string("state/.top-hosts.cursor"), "far\t1\n");
    assert!(
        !f.h.exists("state/.wakes-hosts.cursor"),
        "--drain's cursors are not ours"
    );
    s.keys(&["Escape"]);
    s.wait("no new wakes", |x| {
        x.contains("need you") && !x.contains("new wake")
    });

    // The host hangs: the dashboard still answers and counts a local wake.
    sshd.freeze();
    let mut log = f.h.read_string("state/wakes.log");
    log.push_str(&format!("2\t{t}\tdocs\tstatus\tdone: report written\n"));
    f.h.write("state/wakes.log", log);
    s.wait("one new wake while the host hangs", |x| {
        x.contains("1 new wake (w)")
    });
    s.keys(&["w"]);
    s.wait("the feed while the host hangs", |x| {
        x.contains("docs     status  done: report written")
    });
    sshd.thaw();
}

#[test]
fn every_way_out_restores_the_terminal() {
    let Some(f) = Fleet::new() else { return };
    // A shell runs the dashboard, then says how it ended and keeps the
    // terminal open, so its modes can be read after the dashboard left.
    let shell = |s: &Screen| {
        let tty = s.format("#{pane_tty}");
        let stty = std::process::Command::new("stty")
            .args(["-F", &tty, "-a"])
            .output()
            .unwrap();
        let modes = String::from_utf8_lossy(&stty.stdout).into_owned();
        let cooked = modes.split_whitespace().any(|m| m == "icanon")
            && modes.split_whitespace().any(|m| m == "echo");
        (cooked, s.format("#{alternate_on} #{cursor_flag}"))
    };
    let start = || {
        let mut argv = vec![
            "sh".to_string(),
            "-c".into(),
            r#""$@"; printf 'ended %s\n' "$?"; exec cat"#.into(),
            "sh".into(),
        ];
        argv.extend(f.top_argv(&[]));
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let pane = f.t.window("dash", &argv);
        let s = Screen { t: &f.t, pane };
        s.wait("the fleet's rows", |x| x.contains("docs"));
        assert_eq!(
            s.format("#{alternate_on}"),
            "1",
            "the dashboard's own screen"
        );
        s
    };
    for (keys, code) in [(&["q"][..], "0"), (&["C-c"][..], "130")] {
        let s = start();
        s.keys(keys);
        s.wait("the dashboard to end", |x| {
            x.contains(&format!("ended {code}"))
        });
        assert_eq!(shell(&s), (true, "0 1".to_string()), "{keys:?}");
    }
    let s = start();
    let sh = s.format("#{pane_pid}");
    let children = std::fs::read_to_string(format!("/proc/{sh}/task/{sh}/children")).unwrap();
    let pid = children
        .split_whitespace()
        .next()
        .expect("the dashboard's pid");
    let status = std::process::Command::new("kill")
        .args(["-TERM", pid])
        .status()
        .unwrap();
    assert!(status.success());
    s.wait("the dashboard to end", |x| x.contains("ended 0"));
    assert_eq!(shell(&s), (true, "0 1".to_string()), "SIGTERM");
    // Off a terminal it refuses.
    f.h.fm("top")
        .status(2)
        .stderr("fm-top: error: fm top needs a terminal; for a plain live view use fm-crew-state --watch\n")
        .run();
}

/// A dashboard whose terminal goes away (its tmux server is killed) ends,
/// instead of spinning on a hung-up terminal.
#[test]
fn a_dashboard_whose_terminal_is_gone_ends() {
    let Some(f) = Fleet::new() else { return };
    let Some(outer) = Tmux::start() else { return };
    let argv = f.top_argv(&[]);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let pane = outer.window("dash", &argv);
    let s = Screen { t: &outer, pane };
    s.wait("the fleet's rows", |x| x.contains("docs"));
    let pid = s.format("#{pane_pid}");
    let alive = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| {
            st.rsplit(')')
                .next()
                .is_some_and(|r| !r.trim_start().starts_with('Z'))
        })
    };
    assert!(alive(), "the dashboard runs as the pane's process");
    drop(outer);
    wait_for("the dashboard to end", SECS, || !alive());
}

#[test]
fn fm_peek_prints_the_screen_and_fm_attach_refuses_what_it_cannot_reach() {
    let Some(f) = Fleet::new() else { return };
    let pane = f.pane_of("login");
    f.t.run(["send-keys", "-t", &pane, "-l", "typed red"]);
    wait_for("the typed text", SECS, || {
        f.t.capture(&pane).contains("typed")
    });
    let out =
        f.h.fm("fm")
            .args(["peek", "login"])
            .stdout_regex(r"stand-in agent for login; home \S+\nstand-in> typed red\n")
            .run();
    assert!(!out.stdout().contains('\x1b'), "{:?}", out.stdout());
    f.h.fm("fm")
        .args(["peek", "login", "--lines", "1"])
        .stdout("stand-in> typed red\n")
        .run();
    let j =
        f.h.fm("fm")
            .args(["peek", "login", "--json"])
            .stdout_json()
            .run()
            .json();
    assert_eq!(j["pane"], pane.as_str());
    assert_eq!(j["tmux_socket"], f.t.socket.as_str());
    assert_eq!(j["lines"].as_array().unwrap().len(), 2);
    f.h.fm("fm")
        .args(["peek", "gone"])
        .status(1)
        .stderr_has("pane %999 of gone is gone")
        .run();
    f.h.fm("fm")
        .args(["attach", "nobody"])
        .status(1)
        .stderr("fm: error: unknown task nobody: no meta\n")
        .run();
    f.h.write("state/bare.meta", "kind=secondmate\n");
    f.h.fm("fm")
        .args(["attach", "bare"])
        .status(1)
        .stderr("fm: error: no pane recorded for bare\n")
        .run();
    f.h.fm("fm")
        .args(["attach", "../x"])
        .status(2)
        .stderr_has("invalid task id")
        .run();
}

/// The README names where workers live and shows both moves.
#[test]
fn the_readme_shows_peek_and_attach() {
    let readme =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .unwrap();
    for s in ["fm peek ", "fm attach ", "fm top", "tmux_socket", "session"] {
        assert!(readme.contains(s), "README lacks {s:?}");
    }
}

/// `s` and `r` on a remote task's row reach its host: the message lands
/// in the far inbox and the `resolved` line in the far status log, and
/// nothing of either in the captain's home (top once queued both here,
/// where no worker reads them).
#[test]
fn s_and_r_on_a_remote_tasks_row_write_on_its_host() {
    let Some(sshd) = super::sshd::Sshd::start() else {
        return;
    };
    let Some(t) = Tmux::start() else { return };
    let h = TestHome::new();
    h.write("config/firstmate.toml", sshd.host_toml("far", 10_000));
    h.write("state/far1.meta", "kind=secondmate\nrepo=shop\nhost=far\n");
    // A local row the dashboard waits for.
    h.write("state/docs.meta", "kind=secondmate\nrepo=web\n");
    h.write(
        "state/docs.status",
        format!("done [at={}]: report written\n", now() - 500),
    );
    sshd.far_write("state/far1.meta", "kind=secondmate\nrepo=shop\n");
    sshd.far_write(
        "state/far1.status",
        format!(
            "needs-decision [at={}] [key=db]: postgres or sqlite?\n",
            now() - 100
        ),
    );
    sshd.chown_far();
    let f = Fleet { h, t };
    let s = f.dashboard(&[]);
    s.wait("the remote row's decision", |x| {
        x.contains("needs decision: db")
    });
    assert_eq!(
        s.row("far1"),
        s.text().lines().position(|l| l.contains("far1"))
    );
    s.keys(&["s"]);
    s.wait("the send prompt", |x| x.contains("send to far1 \u{203a}"));
    s.type_text("use the staging db");
    s.keys(&["Enter"]);
    s.wait("the send report", |x| x.contains("far1: queued 001.msg"));
    let far_rec = super::remote_write::far_read(&sshd, "state/far1.inbox/001.msg");
    assert!(far_rec.ends_with("\n--\nuse the staging db"), "{far_rec}");
    assert!(!f.h.exists("state/far1.inbox"));
    s.keys(&["r"]);
    s.wait("the answer prompt", |x| {
        x.contains("answer far1 [db] \u{203a}")
    });
    s.type_text("sqlite");
    s.keys(&["Enter"]);
    s.wait("the answer report", |x| x.contains("resolved db"));
    let log = super::remote_write::far_read(&sshd, "state/far1.status");
    let last = log.lines().last().unwrap();
    assert!(
        last.starts_with("resolved [at=") && last.ends_with("] [key=db]: answered: sqlite"),
        "{log}"
    );
    let answer = super::remote_write::far_read(&sshd, "state/far1.inbox/002.msg");
    assert!(answer.ends_with("\n--\ndecision db: sqlite"), "{answer}");
    assert!(!f.h.exists("state/far1.status") && !f.h.exists("state/far1.inbox"));
}

#[test]
fn a_grants_the_first_mate_a_verb_on_the_selected_row() {
    let Some(f) = Fleet::new() else { return };
    let s = f.dashboard(&[]);
    s.keys(&["a"]);
    s.wait("the verb picker", |x| {
        x.contains("grant the first mate, once, on schema") && x.contains("teardown --force")
    });
    s.keys(&["j", "Enter"]);
    s.wait("the grant report", |x| {
        x.contains("granted schema exit until")
    });
    assert!(
        f.h.read_string("state/grants")
            .starts_with("schema\texit\t"),
        "{}",
        f.h.read_string("state/grants")
    );
    Cmd::new(bin("fm"))
        .args(["grant", "--list"])
        .env("FM_HOME", f.h.root())
        .stdout_regex(r"^schema exit until .*\n$")
        .run();
    // Esc leaves the picker without granting.
    s.keys(&["a", "Escape"]);
    s.keys(&["q"]);
    // The first mate's own dashboard cannot grant.
    let mut argv = f.top_argv(&[]);
    argv.insert(1, "FM_MATE=1".into());
    let s = f.dashboard_argv(&argv);
    s.keys(&["a", "Enter"]);
    s.wait("the refusal", |x| x.contains("cannot grant itself"));
    assert!(!f.h.read_string("state/grants").contains("teardown"));
}

//! The first mate with the real harness as the lead (docs/harnesses.md,
//! "Conformance suite"): Claude Code or Codex started by the test in a
//! pane of the world's tmux server, in a home made by `fm mate init
//! --harness <h>`, the built `fm` first on its PATH, its model the
//! loopback server scripted as a lead — it answers a wake packet by
//! running the packet's answer command with the ack chained. The worker
//! is a task meta and its status log (`fm-status` appends to it as a
//! worker would); no fm-watch runs, so the lead's own waiter (`fm mate
//! hook stop`) turns a status line into a wake.
//!
//! Every scenario checks what the model received, from the server's log:
//! a wake packet reaches it as the raw text of one user message (Claude
//! Code wraps an `asyncRewake` hook's text in a `<system-reminder>`,
//! Codex a Stop hook's in `<hook_prompt …>`), which the server's `"raw":
//! true` rules match (`tests/model_server/README.md`).

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::Harness;
use crate::harness::{Cmd, bin, wait_until};
use crate::world::{Opts, World};

/// The worker whose decision the lead answers.
pub const WORKER: &str = "fix-login";
const KEY: &str = "db";
const QUESTION: &str = "postgres or sqlite?";
/// What the scripted lead answers the decision with.
const ANSWER: &str = "scripted answer";

/// The captain's first words to the lead, and its answer.
const KICKOFF: &str = "You are the first mate. Say you are ready.";
const KICKOFF_ANSWER: &str = "first mate standing by";
/// The captain's order to discard the worker.
const DISCARD: &str = "Discard fix-login now.";
/// What the lead says once it handled a packet.
const HANDLED: &str = "fix-login answered";

/// A packet that holds an open decision: (1) its token, (2) the "shown
/// again" mark, (3) the answer command up to its placeholder, (4) the
/// token its ack line names. The placeholder is matched loosely: a
/// harness may escape its angle brackets.
const PACKET_RE: &str = r"wake (w\d+)( \(shown again: not acknowledged\))?: \d+ workers? with news.*?\$ (fm send \S+ --resolve-key \S+ -- )'[^'\n]*'.*?when handled: fm wake --ack (w\d+)";

/// What the scripted lead does with a packet.
#[derive(Debug, Clone, Copy)]
pub enum OnPacket {
    /// Answers with a line of text and nothing else.
    Note,
    /// Runs the answer command, the ack chained.
    Act,
    /// Streams a reply over this many seconds (the turn is long enough
    /// to kill the lead in it).
    Stream(u32),
}

/// The lead's rule file.
fn rules(on: OnPacket) -> Value {
    let packet = match on {
        OnPacket::Note => json!({"text": "noted"}),
        OnPacket::Act => json!({
            "command": format!("{{3}}'{ANSWER}' && fm wake --ack {{4}}"),
            "description": "Answer the decision and acknowledge the packet",
            "then": HANDLED,
        }),
        OnPacket::Stream(s) => json!({"stream_secs": s, "chunks": s * 2,
            "text": "Thinking about the decision at length before answering it."}),
    };
    let discard = json!({
        "command": format!("fm control {WORKER} teardown --force; echo \"exit=$?\""),
        "description": "Discard the worker",
        "then": "done",
    });
    json!({
        "default": {"text": "ok"},
        "side_default": {"text": "A title"},
        "rules": [
            {"name": "packet", "raw": true, "regex": PACKET_RE, "action": packet},
            {"name": "discard", "match": DISCARD, "action": discard},
            {"name": "kickoff", "match": KICKOFF, "action": {"text": KICKOFF_ANSWER}},
        ]
    })
}

/// Seconds since the epoch, as the server's `t`.
fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

pub struct Lead {
    pub w: World,
    launches: usize,
}

impl Lead {
    /// A home with one worker, made the first mate's workplace for `h`
    /// and trusted in the agent's config; the lead not started yet.
    #[track_caller]
    pub fn new(h: Harness, on: OnPacket) -> Option<Lead> {
        let w = World::new(h, Opts::default())?;
        w.home
            .write(&format!("state/{WORKER}.meta"), "kind=secondmate\n");
        let root = w.home.root();
        Cmd::new(bin("fm"))
            .args(["mate", "init", "--harness", h.name()])
            .arg(&root)
            .env("PATH", World::path())
            .stdout_has("first mate ready")
            .run();
        w.trust(&root);
        w.model.set_rules(&rules(on));
        Some(Lead { w, launches: 0 })
    }

    /// The lead started, its kickoff answered on the screen, that turn
    /// over (its requests settled) and a waiter armed.
    ///
    /// Settling matters: the waiter a turn's end starts counts a packet
    /// presented before it began and not acknowledged as one the lead
    /// left mid-wake, and shows it again at once; a worker that speaks
    /// in the moment between the kickoff answer and its turn's Stop hook
    /// would have its packet shown twice in one request (Claude Code
    /// folds both hook texts into one message).
    #[track_caller]
    pub fn started(h: Harness, on: OnPacket) -> Option<Lead> {
        let mut l = Lead::new(h, on)?;
        l.launch(KICKOFF);
        l.kicked_off();
        l.settled();
        l.armed();
        Some(l)
    }

    /// Polls `f` until it holds, failing with the screen and every
    /// request the model got when it never does.
    #[track_caller]
    pub fn wait_for(&self, what: &str, secs: f64, mut f: impl FnMut(&Lead) -> bool) {
        assert!(
            wait_until(secs, || f(self)),
            "{}: gave up after {secs} s waiting for {what}\n--- pane (dead, command)\n{}\n--- screen\n{}\n--- requests\n{}",
            self.w.h.name(),
            self.w.pane_state(),
            self.w.screen(),
            self.summary()
        );
    }

    /// `fm <args>` in the home.
    pub fn fm(&self) -> Cmd {
        Cmd::new(bin("fm"))
            .env("FM_HOME", self.w.home.root())
            .env("PATH", World::path())
    }

    /// Starts the harness in the home, in a new session of the world's
    /// tmux server, with a clean environment and `prompt` as its first
    /// prompt; returns the pane.
    #[track_caller]
    pub fn launch(&mut self, prompt: &str) -> String {
        let program = self.w.h.program().unwrap();
        self.launches += 1;
        let mut argv: Vec<String> = vec!["env".into(), "-i".into()];
        for (k, v) in self.w.agent_env() {
            argv.push(format!("{k}={v}"));
        }
        argv.push(format!("PATH={}", World::path()));
        argv.push("TERM=xterm-256color".into());
        argv.push(program.display().to_string());
        match self.w.h {
            Harness::Claude => argv.push("--dangerously-skip-permissions".into()),
            Harness::Codex => argv.extend([
                "--no-daemon".into(),
                "--dangerously-bypass-approvals-and-sandbox".into(),
                // The hooks `fm mate init` wrote, as the captain's
                // "Trust all" would run them.
                "--dangerously-bypass-hook-trust".into(),
            ]),
        }
        argv.push(prompt.into());
        let root = self.w.home.root();
        let session = format!("lead{}", self.launches);
        let mut args: Vec<String> = [
            "new-session",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-s",
            &session,
            "-x",
            "200",
            "-y",
            "50",
            "-c",
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        args.push(root.display().to_string());
        args.extend(argv);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let pane = self.w.tmux(&refs).trim().to_string();
        assert!(pane.starts_with('%'), "tmux new-session said {pane:?}");
        // A lead that ends leaves its last screen (and the server stays
        // for the next launch).
        self.w.tmux(&["set-option", "-s", "exit-empty", "off"]);
        self.w
            .tmux(&["set-option", "-w", "-t", &pane, "remain-on-exit", "on"]);
        self.w.pane.clone_from(&pane);
        pane
    }

    /// Waits until this launch's kickoff answer is on the screen.
    #[track_caller]
    pub fn kicked_off(&self) {
        self.wait_for("the kickoff answer on the screen", 90.0, |l| {
            l.w.screen().contains(KICKOFF_ANSWER)
        });
    }

    /// The worker's decision, appended as the worker does
    /// (`fm-status`); returns the time just before.
    #[track_caller]
    pub fn decide(&self) -> f64 {
        let t0 = now();
        self.w
            .fm("status")
            .args([WORKER, "needs-decision", "--key", KEY, QUESTION])
            .run();
        t0
    }

    /// The lead's main requests whose last user message (raw, as the
    /// hook's text arrives) presents packet `token`, each the first of
    /// its turn; with `again`, only a showing marked "shown again".
    pub fn presenting(&self, token: &str, again: bool) -> Vec<Value> {
        let first = format!("wake {token}: ");
        let second = format!("wake {token} (shown again: not acknowledged): ");
        self.w
            .model
            .main_requests()
            .into_iter()
            .filter(|r| r["raw_steps"] == json!(0))
            .filter(|r| {
                let raw = r["raw_prompt"].as_str().unwrap_or("");
                raw.contains(&second) || (!again && raw.contains(&first))
            })
            .collect()
    }

    /// Waits for packet `token` at the model; returns that request.
    #[track_caller]
    pub fn presented(&self, token: &str, secs: f64) -> Value {
        self.wait_for(&format!("packet {token} at the model"), secs, |_| {
            !self.presenting(token, false).is_empty()
        });
        self.presenting(token, false).remove(0)
    }

    /// The waiter's pid in `state/.mate.waiter`, when that process lives.
    pub fn waiter(&self) -> Option<i32> {
        let text = std::fs::read_to_string(self.w.home.path("state/.mate.waiter")).ok()?;
        let pid: i32 = text.split('\t').next()?.trim().parse().ok()?;
        // SAFETY: signal 0 only checks that the process exists.
        (unsafe { libc::kill(pid, 0) } == 0).then_some(pid)
    }

    /// Waits until a waiter is armed (a live `fm mate hook stop`).
    #[track_caller]
    pub fn armed(&self) {
        self.wait_for("a live waiter", 30.0, |l| l.waiter().is_some());
    }

    /// Waits until the turn's own requests are in: none logged for a
    /// second (Codex asks for a thread title alongside the first turn).
    #[track_caller]
    pub fn settled(&self) {
        let mut n = self.logged();
        let mut since = Instant::now();
        self.wait_for("the requests to settle", 30.0, |_| {
            let now = self.logged();
            if now != n {
                n = now;
                since = Instant::now();
            }
            since.elapsed() >= Duration::from_secs(1)
        });
    }

    /// Holds "no request reaches the model" for `secs`, failing with
    /// what came.
    #[track_caller]
    pub fn silent_for(&self, secs: f64) {
        let n = self.logged();
        let end = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < end {
            assert!(
                self.logged() == n,
                "{}: a request reached the model while the lead waited (it had {n}):\n{}\n--- screen\n{}",
                self.w.h.name(),
                self.summary(),
                self.w.screen()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// How many requests the server logged (its complete lines: a line
    /// being written is not counted yet).
    pub fn logged(&self) -> usize {
        std::fs::read(&self.w.model.log)
            .unwrap_or_default()
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
    }

    /// One line per request so far (time, main, rule, raw steps, the
    /// raw prompt's start), for a failure's message.
    pub fn summary(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        for r in self.w.model.requests() {
            let raw = r["raw_prompt"].as_str().unwrap_or("");
            // The whole of a packet, the start of anything else.
            let raw: String = match raw.find("wake w") {
                Some(at) => raw[at..].to_string(),
                None => raw.chars().take(160).collect(),
            };
            let _ = writeln!(
                out,
                "{} main={} rule={} raw_steps={} {raw:?}",
                r["t"], r["main"], r["rule"], r["raw_steps"]
            );
        }
        out
    }

    /// The last request the model got was the answer's own last step
    /// (the text after the command's output): nothing came after it.
    #[track_caller]
    pub fn last_was_the_answer(&self) {
        let reqs = self.w.model.requests();
        let last = reqs.last().expect("a request");
        assert!(
            last["rule"] == "packet" && last["raw_steps"] == json!(1),
            "{}: a request came after the answer:\n{}",
            self.w.h.name(),
            self.summary()
        );
    }

    /// The worker's status log.
    pub fn status_log(&self) -> String {
        std::fs::read_to_string(self.w.home.path(&format!("state/{WORKER}.status")))
            .unwrap_or_default()
    }

    /// Waits until the lead's answer reached the worker (its status log
    /// says the decision is resolved).
    #[track_caller]
    pub fn answered(&self, secs: f64) {
        self.wait_for("the resolved line in the status log", secs, |l| {
            l.status_log().contains("resolved [")
        });
    }

    /// The inbox records of the worker (pending and handled), as text.
    pub fn inbox(&self) -> Vec<String> {
        let dir = self.w.home.path(&format!("state/{WORKER}.inbox"));
        let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "msg"))
            .collect();
        names.sort();
        names
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect()
    }

    /// Kills the lead's process group (the harness and what it runs),
    /// as a crash would end it, and waits until its pane is dead.
    #[track_caller]
    pub fn kill(&self) {
        let pid: i32 = self
            .w
            .tmux(&["display-message", "-p", "-t", &self.w.pane, "#{pane_pid}"])
            .trim()
            .parse()
            .expect("the lead's pane pid");
        // SAFETY: the process group of the pane this test started.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        assert!(
            wait_until(10.0, || self.w.pane_state().starts_with("1 ")),
            "the lead outlived SIGKILL"
        );
    }
}

impl Drop for Lead {
    /// Ends the lead, then the waiters it left: a harness killed with its
    /// tmux server may leave its hook running (Codex does), and a waiter
    /// waits up to a day. Only this home's waiters, by pid.
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.w.socket, "kill-server"])
            .output();
        let home = format!("--home\0{}\0", self.w.home.root().display());
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline);
            if cmdline.contains("\0mate\0hook\0") && cmdline.contains(&home) {
                // SAFETY: a waiter of this test's own home.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
        }
    }
}

/// 1. The session-start digest is in the lead's first request: Claude
///    Code hands a `SessionStart` hook's stdout as a `system` message
///    (`SessionStart:startup hook success: …`), Codex as a `developer`
///    message of its own.
pub fn digest_at_session_start(h: Harness) {
    let Some(mut l) = Lead::new(h, OnPacket::Note) else {
        return;
    };
    let digest = l
        .fm()
        .args(["mate", "hook", "session-start", "--harness", h.name()])
        .stdout_any()
        .run()
        .stdout();
    assert!(digest.starts_with("firstmate digest"), "{digest}");
    l.launch(KICKOFF);
    l.kicked_off();
    let reqs = l.w.model.main_requests();
    let first = reqs.first().expect("a main request");
    assert!(
        first["prompt"].as_str().unwrap_or("").contains(KICKOFF),
        "the first request is the kickoff: {}",
        first["prompt"]
    );
    let want = digest.trim_end();
    let body = &first["body"];
    match h {
        Harness::Claude => {
            let found = body["messages"].as_array().unwrap().iter().any(|m| {
                m["role"] == "system"
                    && texts(&m["content"]).iter().any(|t| {
                        t.starts_with(&format!("SessionStart:startup hook success: {want}"))
                    })
            });
            assert!(
                found,
                "no SessionStart system message holds the digest:\n{body:#}"
            );
        }
        Harness::Codex => {
            let found = body["input"].as_array().unwrap().iter().any(|it| {
                it["role"] == "developer"
                    && texts(&it["content"]).iter().any(|t| t.trim_end() == want)
            });
            assert!(found, "no developer message is the digest:\n{body:#}");
        }
    }
}

/// The text blocks of a message's content (a string or a list of blocks).
fn texts(content: &Value) -> Vec<String> {
    match content {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(|b| b["text"].as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// 2. No model request at all while the lead waits: its turn ended, a
///    waiter is armed, the worker is quiet — 30 s, not one request.
pub fn no_request_while_waiting(h: Harness) {
    let Some(l) = Lead::started(h, OnPacket::Note) else {
        return;
    };
    l.silent_for(30.0);
    assert!(l.waiter().is_some(), "the waiter still armed");
}

/// 3. A worker's `needs-decision` reaches the model within 2 s, as one
///    request whose last user message holds the key, the question and
///    the command that answers it. (The lead acts on it and acknowledges
///    it: a packet left unacknowledged comes once more to the next
///    waiter, scenario 6.)
pub fn decision_reaches_the_model_at_once(h: Harness) {
    let Some(l) = Lead::started(h, OnPacket::Act) else {
        return;
    };
    let t0 = l.decide();
    let req = l.presented("w1", 15.0);
    let latency = req["t"].as_f64().unwrap() - t0;
    // Straight to stderr, past the test harness's capture: every run
    // says what it measured.
    let _ = writeln!(
        std::io::stderr().lock(),
        "mate {} {}: needs-decision to the model's request in {latency:.3} s",
        h.name(),
        h.version_under_test()
    );
    let raw = req["raw_prompt"].as_str().unwrap();
    assert!(latency < 2.0, "the packet took {latency:.3} s:\n{raw}");
    for want in [
        format!("{WORKER}: parked"),
        format!("decision {KEY} ("),
        QUESTION.to_string(),
        format!("$ fm send {WORKER} --resolve-key {KEY} -- '"),
        "when handled: fm wake --ack w1".to_string(),
    ] {
        assert!(raw.contains(&want), "the packet lacks {want:?}:\n{raw}");
    }
    let wrapped = match h {
        Harness::Claude => raw.starts_with("<system-reminder>"),
        Harness::Codex => raw.starts_with("<hook_prompt ") && raw.ends_with("</hook_prompt>"),
    };
    assert!(wrapped, "the hook's wrapper:\n{raw}");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(l.presenting("w1", false).len(), 1, "{}", l.summary());
}

/// 4. The scripted lead runs the packet's command with an answer, the
///    ack chained: the worker's inbox holds the answer and its status
///    log the `resolved` line for the key; the packet is acknowledged.
pub fn answer_reaches_the_worker(h: Harness) {
    let Some(l) = Lead::started(h, OnPacket::Act) else {
        return;
    };
    l.decide();
    l.presented("w1", 15.0);
    l.answered(30.0);
    let inbox = l.inbox();
    assert_eq!(inbox.len(), 1, "{inbox:#?}");
    assert!(
        inbox[0].starts_with("schema=fm-inbox.v1\n")
            && inbox[0].ends_with(&format!("\n--\n{ANSWER}")),
        "{:?}",
        inbox[0]
    );
    let log = l.status_log();
    let last = log.lines().last().unwrap_or("");
    assert!(
        last.starts_with("resolved [at=")
            && last.ends_with(&format!("] [key={KEY}]: answered: {ANSWER}")),
        "{log}"
    );
    l.wait_for("the packet acknowledged", 10.0, |l| {
        l.fm()
            .args(["wake", "--ack", "w1"])
            .stdout_any()
            .run()
            .stdout()
            == "already acknowledged w1\n"
    });
}

/// 5. After the ack the same items are not presented again: no request
///    for 10 s after the lead's turn, and `fm wake` has no token.
pub fn acked_items_not_presented_again(h: Harness) {
    let Some(l) = Lead::started(h, OnPacket::Act) else {
        return;
    };
    l.decide();
    l.presented("w1", 15.0);
    l.answered(30.0);
    l.wait_for("the lead's turn over", 30.0, |l| {
        l.w.screen().contains(HANDLED)
    });
    l.armed();
    l.silent_for(10.0);
    l.last_was_the_answer();
    assert_eq!(l.presenting("w1", false).len(), 1);
    let shown = l.fm().args(["wake"]).stdout_any().run().stdout();
    assert!(
        shown.starts_with("no news") && !shown.contains("when handled"),
        "{shown}"
    );
    let json = l.fm().args(["wake", "--json"]).stdout_json().run().json();
    assert_eq!(json["token"], Value::Null, "{json:#}");
}

/// 6. A lead killed mid-wake (the packet's turn still streaming) and
///    started again in the same home handles the un-acknowledged items
///    once: exactly one more request presents the packet, marked shown
///    again; it answers, and then nothing more comes.
pub fn killed_mid_wake_handles_it_once(h: Harness) {
    let Some(mut l) = Lead::started(h, OnPacket::Stream(120)) else {
        return;
    };
    l.decide();
    l.presented("w1", 15.0);
    std::thread::sleep(Duration::from_secs(1));
    l.kill();
    assert!(l.inbox().is_empty(), "answered before the kill");
    l.w.model.set_rules(&rules(OnPacket::Act));
    l.launch(KICKOFF);
    l.wait_for("the packet shown again", 60.0, |l| {
        !l.presenting("w1", true).is_empty()
    });
    l.answered(30.0);
    l.wait_for("the lead's turn over", 30.0, |l| {
        l.w.screen().contains(HANDLED)
    });
    l.armed();
    l.silent_for(10.0);
    l.last_was_the_answer();
    assert_eq!(l.presenting("w1", true).len(), 1, "shown again once");
    assert_eq!(l.presenting("w1", false).len(), 2, "shown twice in all");
    assert_eq!(l.inbox().len(), 1, "answered once");
    let shown = l.fm().args(["wake"]).stdout_any().run().stdout();
    assert!(shown.starts_with("no news"), "{shown}");
}

/// 7. A destructive verb without the captain's grant is refused: the
///    lead's `fm control <id> teardown --force` fails naming `fm grant`,
///    and the worker is still there.
pub fn destructive_verb_refused_without_grant(h: Harness) {
    let Some(mut l) = Lead::new(h, OnPacket::Note) else {
        return;
    };
    l.launch(DISCARD);
    l.wait_for("the teardown's output back at the model", 90.0, |l| {
        l.w.model
            .main_requests()
            .iter()
            .any(|r| r["steps"] == json!(1) && r["prompt"].as_str() == Some(DISCARD))
    });
    let reqs = l.w.model.main_requests();
    let after = reqs
        .iter()
        .find(|r| r["steps"] == json!(1))
        .unwrap()
        .to_string();
    let refusal = format!(
        "teardown --force of {WORKER} needs the captain's grant; the captain runs: fm grant {WORKER} teardown"
    );
    assert!(
        after.contains(&refusal),
        "the refusal names the grant:\n{after}"
    );
    assert!(
        after.contains("exit=1") && !after.contains("exit=0"),
        "teardown --force failed:\n{after}"
    );
    assert!(l.w.home.exists(&format!("state/{WORKER}.meta")));
}

/// 8. A worker that speaks while the lead's turn runs has its packet
///    reach the lead once, after that turn, and never "shown again".
///    (Claude Code's waiter from the session's start presents it
///    mid-turn and the harness starts the next turn with it at once, no
///    Stop hook between. The narrower window — a packet presented just
///    before a turn's Stop hook starts, which then must not take it for
///    abandoned — is not reproducible on demand with the real harness;
///    `tests/cli/mate.rs` drives the hook through it with payloads.)
pub fn decision_during_the_leads_turn_is_shown_once(h: Harness) {
    let Some(mut l) = Lead::new(h, OnPacket::Act) else {
        return;
    };
    let mut slow = rules(OnPacket::Act);
    slow["rules"][2]["action"] = json!({"stream_secs": 8, "chunks": 16, "text": KICKOFF_ANSWER});
    l.w.model.set_rules(&slow);
    l.launch(KICKOFF);
    l.wait_for("the kickoff turn streaming", 90.0, |l| {
        l.w.model
            .main_requests()
            .iter()
            .any(|r| r["prompt"].as_str() == Some(KICKOFF))
    });
    std::thread::sleep(Duration::from_secs(2));
    l.decide();
    l.answered(60.0);
    l.wait_for("the lead's turn over", 30.0, |l| {
        l.w.screen().contains(HANDLED)
    });
    l.settled();
    l.armed();
    l.silent_for(10.0);
    assert_eq!(l.presenting("w1", false).len(), 1, "handed over once");
    assert!(l.presenting("w1", true).is_empty(), "never shown again");
    assert_eq!(l.inbox().len(), 1, "answered once");
}

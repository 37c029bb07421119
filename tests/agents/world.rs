//! One test's world: a firstmate home whose config points the real agent
//! at a loopback model server, a throwaway agent home (HOME, `CODEX_HOME`),
//! a git project, and a private tmux server (`tmux -L fm-agents-<pid>-<n>`)
//! that `fm-control spawn` starts and the world kills on drop.
//!
//! Everything the agent needs to run offline lives in the agent home (what
//! a captain's own `~/.claude.json`, `~/.claude/settings.json` or
//! `~/.codex/config.toml` would hold: onboarding done, the model provider,
//! a trusted worktree, the permission mode); its environment (the agent
//! home, the loopback model's address) is the environment `fm-control
//! spawn` runs in, which the tmux server it starts hands every pane.
//! firstmate's own profile is left at its defaults except for the program
//! path.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::agents::Harness;
use crate::harness::{Cmd, Started, TestHome, bin, git, wait_until};
use crate::model::ModelServer;

/// The task every test works on.
pub const ID: &str = "t1";

thread_local! {
    /// Whether this test's worlds use the harness's delivery leg
    /// ([`with_leg`]); otherwise every doorbell is typed (`[send] legs =
    /// false`), as the scenarios were first written for.
    static LEG: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` (a scenario) with its worlds on the harness's delivery leg
/// (docs/spec/ring.md#legs): a scenario is parametrised by leg, not copied.
pub fn with_leg(f: impl FnOnce()) {
    LEG.with(|l| l.set(true));
    f();
}

/// What the model answers the kickoff prompt (see [`rules`]).
const KICKOFF_ANSWER: &str = "read it";

/// Claude Code remembers an approved API key by its last 20 characters.
const API_KEY: &str = "sk-ant-fm-loopback-test-key-000000000000";

/// How the world is set up.
#[derive(Debug, Clone)]
pub struct Opts {
    /// The worktree is trusted in the agent's own config (no trust dialog).
    pub trusted: bool,
    /// firstmate launches the agent with `approval = "prompt"` (it asks
    /// before running a command); otherwise with the default `bypass`, as a
    /// ship worker in its disposable worktree runs. The agent's own config
    /// carries no approval posture: the suite tests firstmate's.
    pub prompts: bool,
    /// `[watch]` `grace_secs` and `max_rings`.
    pub grace_secs: u64,
    pub max_rings: u64,
    /// The agent's own busy/idle hooks (`[harness.<name>] hooks`).
    pub hooks: bool,
    /// `[send] legs`: the doorbell through the harness's delivery leg
    /// (docs/spec/ring.md#legs). Off unless a scenario is about the leg:
    /// the other scenarios are the typed doorbell's.
    pub legs: bool,
}

impl Default for Opts {
    fn default() -> Opts {
        Opts {
            trusted: true,
            prompts: false,
            grace_secs: 3600,
            max_rings: 3,
            hooks: true,
            legs: false,
        }
    }
}

/// What the model answers a doorbell with.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A short text; the message stays unread.
    Text,
    /// Runs `fm-ack t1 --through …` through its shell tool, then answers.
    Ack,
    /// Silent this many seconds before the first token, then answers.
    Silent(u32),
    /// Streams its answer over this many seconds.
    Stream(u32),
    /// Runs this command through its shell tool (escalated for Codex).
    Command(&'static str),
    /// Runs `sleep <secs>` through its shell tool and waits for it (Codex
    /// otherwise hands the model a command still running after a short
    /// yield, leaves it in the background and the turn ends).
    Tool(u32),
}

static N: AtomicUsize = AtomicUsize::new(0);

pub struct World {
    pub h: Harness,
    pub home: TestHome,
    pub socket: String,
    pub model: ModelServer,
    pub agent_home: PathBuf,
    pub project: PathBuf,
    pub pane: String,
    /// The doorbell goes through the harness's delivery leg ([`with_leg`]).
    pub leg: bool,
    watcher: Option<Started>,
    _scratch: tempfile::TempDir,
}

impl World {
    /// A world for `h`, or `None` when the program (or tmux, python3) is
    /// missing and not required.
    #[track_caller]
    pub fn new(h: Harness, opts: Opts) -> Option<World> {
        let program = h.require()?;
        if !crate::harness::have_tmux() || !crate::harness::have_python() {
            return None;
        }
        let scratch = tempfile::Builder::new()
            .prefix("fm-agents-")
            .tempdir()
            .unwrap();
        let dir = scratch.path().canonicalize().unwrap();
        let home = TestHome::new();
        let socket = format!(
            "fm-agents-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let leg = LEG.with(std::cell::Cell::get);
        let model = ModelServer::start(&dir, &rules(&Reply::Text, leg));
        let agent_home = dir.join("agent-home");
        std::fs::create_dir_all(&agent_home).unwrap();
        let project = dir.join("project");
        std::fs::create_dir_all(&project).unwrap();
        git(&project, &["init", "-q", "-b", "main"]);
        std::fs::write(project.join("README.md"), "a project\n").unwrap();
        git(&project, &["add", "."]);
        git(&project, &["commit", "-q", "-m", "init"]);
        let w = World {
            h,
            home,
            socket,
            model,
            agent_home,
            project,
            pane: String::new(),
            leg,
            watcher: None,
            _scratch: scratch,
        };
        w.write_agent_home(&opts);
        w.write_config(&program, &opts);
        Some(w)
    }

    /// The worktree `fm-control spawn` creates for the task.
    pub fn worktree(&self) -> PathBuf {
        self.home.root().join("worktrees").join(ID)
    }

    fn write_agent_home(&self, opts: &Opts) {
        let wt = self.worktree().display().to_string();
        match self.h {
            Harness::Claude => {
                let mut projects = serde_json::Map::new();
                if opts.trusted {
                    projects.insert(
                        wt,
                        json!({"hasTrustDialogAccepted": true,
                               "hasCompletedProjectOnboarding": true,
                               "allowedTools": []}),
                    );
                }
                let state = json!({
                    "hasCompletedOnboarding": true,
                    "lastOnboardingVersion": self.h.version_under_test(),
                    "lastReleaseNotesSeen": self.h.version_under_test(),
                    "numStartups": 1,
                    "theme": "dark",
                    "autoUpdates": false,
                    "customApiKeyResponses": {"approved": [&API_KEY[API_KEY.len() - 20..]], "rejected": []},
                    "bypassPermissionsModeAccepted": true,
                    "projects": projects,
                });
                std::fs::write(
                    self.agent_home.join(".claude.json"),
                    serde_json::to_vec_pretty(&state).unwrap(),
                )
                .unwrap();
                std::fs::create_dir_all(self.agent_home.join(".claude")).unwrap();
                let settings = json!({
                    "autoUpdates": false,
                    "includeCoAuthoredBy": false,
                    "skipDangerousModePermissionPrompt": true,
                    // Else a "Make auto mode your default?" offer comes up
                    // after the first turn (bypass mode).
                    "disableAutoMode": "disable",
                });
                std::fs::write(
                    self.agent_home.join(".claude/settings.json"),
                    serde_json::to_vec_pretty(&settings).unwrap(),
                )
                .unwrap();
            }
            Harness::Codex => {
                let ch = self.agent_home.join(".codex");
                std::fs::create_dir_all(&ch).unwrap();
                let mut cfg = format!(
                    r#"model = "gpt-5.5"
model_provider = "fmloop"
check_for_update_on_startup = false
model_reasoning_effort = "low"
{sandbox}
# A login shell's profile would reset PATH and lose the fm-* tools.
allow_login_shell = false

[model_providers.fmloop]
name = "fm loopback"
base_url = "http://127.0.0.1:{port}/v1"
env_key = "FM_LOOPBACK_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
supports_websockets = false

[analytics]
enabled = false

[feedback]
enabled = false

[notice]
hide_full_access_warning = true
hide_rate_limit_model_nudge = true

[notice.model_migrations]
"gpt-5.5" = "gpt-6-sol"
"#,
                    port = self.model.port,
                    // The approval policy comes from firstmate's flags; the
                    // sandbox a prompting agent runs in is the agent's own.
                    sandbox = if opts.prompts {
                        "sandbox_mode = \"workspace-write\""
                    } else {
                        ""
                    },
                );
                if opts.trusted {
                    cfg.push_str(&format!(
                        "\n[projects.\"{wt}\"]\ntrust_level = \"trusted\"\n"
                    ));
                }
                std::fs::write(ch.join("config.toml"), cfg).unwrap();
            }
        }
    }

    /// Trusts `dir` as well in the agent's own config (no trust dialog
    /// there): what a captain who starts the agent in that directory did
    /// once.
    pub fn trust(&self, dir: &Path) {
        let d = dir.display().to_string();
        match self.h {
            Harness::Claude => {
                let path = self.agent_home.join(".claude.json");
                let mut state: Value =
                    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
                state["projects"][d] = json!({"hasTrustDialogAccepted": true,
                    "hasCompletedProjectOnboarding": true,
                    "allowedTools": []});
                std::fs::write(&path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();
            }
            Harness::Codex => {
                let path = self.agent_home.join(".codex/config.toml");
                let mut cfg = std::fs::read_to_string(&path).unwrap();
                cfg.push_str(&format!(
                    "\n[projects.\"{d}\"]\ntrust_level = \"trusted\"\n"
                ));
                std::fs::write(&path, cfg).unwrap();
            }
        }
    }

    /// The agent's environment: its throwaway home and the loopback model.
    pub fn agent_env(&self) -> Vec<(&'static str, String)> {
        let home = self.agent_home.display().to_string();
        let mut env = vec![("HOME", home.clone()), ("LANG", "C.UTF-8".into())];
        match self.h {
            Harness::Claude => env.extend([
                (
                    "ANTHROPIC_BASE_URL",
                    format!("http://127.0.0.1:{}", self.model.port),
                ),
                ("ANTHROPIC_API_KEY", API_KEY.into()),
                // As root, bypassing permissions is refused without it.
                ("IS_SANDBOX", "1".into()),
                ("DISABLE_AUTOUPDATER", "1".into()),
                ("DISABLE_TELEMETRY", "1".into()),
                ("DISABLE_ERROR_REPORTING", "1".into()),
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
                (
                    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL",
                    "1".into(),
                ),
                ("CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY", "1".into()),
            ]),
            Harness::Codex => env.extend([
                ("CODEX_HOME", format!("{home}/.codex")),
                ("FM_LOOPBACK_API_KEY", API_KEY.into()),
            ]),
        }
        env
    }

    fn write_config(&self, program: &Path, opts: &Opts) {
        let toml_list = |v: &[String]| {
            let items: Vec<String> = v.iter().map(|s| toml_str(s)).collect();
            format!("[{}]", items.join(", "))
        };
        let mut launch = vec![program.display().to_string()];
        if self.h == Harness::Codex {
            launch.push("--no-daemon".into());
        }
        launch.push("Read the brief at {brief} and follow it.".into());
        // Claude Code resumes as its built-in profile says; Codex with
        // `--no-daemon` too, as it is launched (`fm restore`).
        let resume = if self.h == Harness::Codex {
            let r = [&launch[0], "resume", "--no-daemon", "{session}"].map(String::from);
            format!("resume = {}\n", toml_list(&r))
        } else {
            String::new()
        };
        let cfg = format!(
            "[tmux]\nsocket = {socket}\n\n[send]\nlegs = {legs}\n\n[watch]\ngrace_secs = {grace}\nmax_rings = {rings}\npoll_secs = 1\n\n[harness.{name}]\nlaunch = {launch}\napproval = {approval}\nhooks = {hooks}\n{resume}",
            socket = toml_str(&self.socket),
            grace = opts.grace_secs,
            rings = opts.max_rings,
            name = self.h.name(),
            launch = toml_list(&launch),
            approval = toml_str(if opts.prompts { "prompt" } else { "bypass" }),
            hooks = opts.hooks,
            legs = self.leg || opts.legs,
        );
        self.home.write("config/firstmate.toml", cfg);
    }

    /// PATH for every tool and the agent: the built binaries first.
    pub fn path() -> String {
        let bins = bin("fm").parent().unwrap().display().to_string();
        format!("{bins}:/usr/local/bin:/usr/bin:/bin")
    }

    /// `fm-<tool>` against this world's home.
    pub fn fm(&self, tool: &str) -> Cmd {
        Cmd::new(bin(&format!("fm-{tool}")))
            .env("FM_HOME", self.home.root())
            .env("PATH", Self::path())
    }

    /// Writes the brief and spawns the agent; returns the pane id.
    #[track_caller]
    pub fn spawn(&mut self) -> String {
        self.fm("brief")
            .args([
                ID,
                "conformance",
                "--mode",
                "local-only",
                "--force",
                "--intent",
                "answer the captain",
                "--spec",
                "nothing to build",
            ])
            .stdout_any()
            .run();
        let mut spawn = self.fm("control");
        for (k, v) in self.agent_env() {
            spawn = spawn.env(k, v);
        }
        let out = spawn
            .args([ID, "spawn", "--project"])
            .arg(&self.project)
            .args(["--harness", self.h.name()])
            .stdout_regex(&format!(
                r"^spawned {ID} pane=%\d+ worktree=\S+ harness={}\n$",
                self.h.name()
            ))
            .run()
            .stdout();
        self.pane = out
            .split("pane=")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .unwrap()
            .to_string();
        self.pane.clone()
    }

    /// Spawns and waits until the agent answered its kickoff prompt and
    /// reads idle.
    #[track_caller]
    pub fn spawn_ready(&mut self) -> String {
        let pane = self.spawn();
        self.wait_for("the kickoff prompt to reach the model", 60.0, |w| {
            w.model
                .user_blocks()
                .iter()
                .any(|b| b.starts_with("Read the brief at "))
        });
        // Idle only once the answer is on the screen: right after the
        // request went out the screen may not show the turn yet.
        self.wait_for("the kickoff answer on the screen", 30.0, |w| {
            w.screen().contains(KICKOFF_ANSWER)
        });
        self.wait_idle(30.0);
        pane
    }

    /// Waits until `fm-crew-state` reads working: the turn is on the
    /// screen (or in the busy record), not only at the model.
    #[track_caller]
    pub fn wait_working(&self, secs: f64) {
        self.wait_for("the agent to read working", secs, |w| {
            w.crew().starts_with("state: working")
        });
    }

    /// Holds `fm-crew-state` matching `want` for `secs`, failing with the
    /// line it read at the first moment it did not.
    #[track_caller]
    pub fn crew_holds(&self, what: &str, secs: f64, want: impl Fn(&str) -> bool) {
        let mut seen = String::new();
        let end = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < end {
            seen = self.crew();
            if !want(&seen) {
                break;
            }
            seen.clear();
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(
            seen.is_empty(),
            "{}: {what} stopped holding: crew state read {seen:?}\n--- screen\n{}\n--- user turns\n{:#?}",
            self.h.name(),
            self.screen(),
            self.model.user_turns()
        );
    }

    /// Waits until `fm-crew-state` reads idle.
    #[track_caller]
    pub fn wait_idle(&self, secs: f64) {
        self.wait_for("the agent to read idle", secs, |w| {
            w.crew().starts_with("state: idle")
        });
    }

    /// `fm-crew-state t1`, one line.
    pub fn crew(&self) -> String {
        self.fm("crew-state")
            .arg(ID)
            .stdout_any()
            .run()
            .stdout()
            .trim_end()
            .to_string()
    }

    /// `fm-send t1 <text>`: returns the doorbell outcome it reported.
    #[track_caller]
    pub fn send(&self, text: &str) -> String {
        let out = self
            .fm("send")
            .args([ID, text])
            .stdout_regex(&format!(
                r"^queued {ID} \d{{3}}\.msg · doorbell [a-z-]+( · leg [a-z]+)?\n$"
            ))
            .stderr_any()
            .run()
            .stdout();
        let line = out.trim_end();
        // A leg's ring is `rang` and names its leg; without the leg none may.
        let leg = line.split(" · leg ").nth(1);
        assert!(
            self.leg || leg.is_none(),
            "a leg took the doorbell with the legs off: {line}"
        );
        line.split(" · ")
            .nth(1)
            .unwrap()
            .rsplit(' ')
            .next()
            .unwrap()
            .to_string()
    }

    /// `fm-send t1 <text>`: the outcome and the leg it reported (`typed`
    /// when none).
    #[track_caller]
    pub fn send_leg(&self, text: &str) -> (String, String) {
        let out = self
            .fm("send")
            .args(["--json", ID, text])
            .stdout_any()
            .stderr_any()
            .run()
            .stdout();
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        (
            v["doorbell"].as_str().unwrap().to_string(),
            v["leg"].as_str().unwrap_or("typed").to_string(),
        )
    }

    /// `fm-send t1 <text>`, which must report doorbell `want`; otherwise
    /// the test fails showing what the pane showed (escapes kept).
    #[track_caller]
    pub fn sends(&self, text: &str, want: &str) {
        let got = self.send(text);
        assert!(
            got == want,
            "{}: fm-send {text:?}: doorbell {got}, wanted {want}\n--- crew state\n{}\n--- screen (-e)\n{}",
            self.h.name(),
            self.crew(),
            self.screen_escaped()
        );
    }

    /// The pane's screen with its escapes, one debug-quoted line each
    /// (blank lines dropped).
    pub fn screen_escaped(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        for l in self
            .tmux(&["capture-pane", "-p", "-e", "-J", "-t", &self.pane])
            .lines()
            .filter(|l| !l.trim().is_empty())
        {
            let _ = writeln!(out, "{l:?}");
        }
        out
    }

    /// The doorbell line firstmate types for the task.
    pub fn doorbell(&self) -> String {
        let home = firstmate::Home::at(&self.home.root()).unwrap();
        firstmate::tmux::deliver::doorbell(&home, &firstmate::TaskId::parse(ID).unwrap())
    }

    /// The doorbell's notice, as a delivery leg hands it over.
    pub fn notice(&self) -> String {
        let home = firstmate::Home::at(&self.home.root()).unwrap();
        firstmate::tmux::deliver::notice(&home, &firstmate::TaskId::parse(ID).unwrap())
    }

    /// Every user text block of the latest main request, synthetic ones
    /// (a hook's notification) included, message by message.
    fn raw_user_messages(&self) -> Vec<Vec<String>> {
        let Some(last) = self.model.main_requests().pop() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for m in last["body"]["messages"].as_array().into_iter().flatten() {
            if m["role"] != "user" {
                continue;
            }
            let texts = match &m["content"] {
                Value::String(s) => vec![s.clone()],
                Value::Array(bs) => bs
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .map(|b| b["text"].as_str().unwrap_or("").to_string())
                    .collect(),
                _ => Vec::new(),
            };
            out.push(texts);
        }
        out
    }

    /// How many doorbells a hook handed the model: user text blocks
    /// holding `…hook blocking error from command "<event>": <notice>`.
    /// Fails the test if one holds the notice twice or a piece of it.
    #[track_caller]
    fn hook_doorbells(&self) -> usize {
        let notice = self.notice();
        let mut n = 0;
        for b in self.raw_user_messages().into_iter().flatten() {
            if !b.starts_with("<system-reminder>") || !b.contains("firstmate inbox") {
                continue;
            }
            assert_eq!(b.matches("firstmate inbox").count(), 1, "{b}");
            assert!(
                b.contains(&format!("\": {}", notice_head(&notice))),
                "a hook block without the whole notice: {b}"
            );
            n += 1;
        }
        n
    }

    /// How many doorbells reached the model: typed ones (user text blocks
    /// that are exactly the doorbell) and, on the leg, those a hook handed
    /// over. Fails the test if any block holds the doorbell with anything
    /// else (glued to other text) or a piece of it, and, on the leg, if a
    /// doorbell was typed at all: the leg types nothing.
    #[track_caller]
    pub fn doorbells_received(&self) -> usize {
        let door = self.doorbell();
        let blocks = self.model.user_blocks();
        for b in &blocks {
            if b.contains("firstmate inbox") {
                assert_eq!(b.trim(), door, "a user block holds more than the doorbell");
            }
        }
        let typed = blocks.iter().filter(|b| b.trim() == door).count();
        if !self.leg {
            return typed;
        }
        assert_eq!(
            typed,
            0,
            "a doorbell was typed on the leg:\n{}",
            self.screen()
        );
        assert!(
            !self.screen().contains(": 'firstmate inbox"),
            "the typed doorbell showed in the pane:\n{}",
            self.screen()
        );
        self.hook_doorbells()
    }

    /// The last user turn is exactly one doorbell (on the leg: the last
    /// user message is the hook's, holding the notice once).
    pub fn last_turn_is_the_doorbell(&self) -> bool {
        if self.leg {
            let notice = self.notice();
            return self.raw_user_messages().last().is_some_and(|t| {
                t.iter().filter(|b| b.contains("firstmate inbox")).count() == 1
                    && t.iter()
                        .any(|b| b.contains(&format!("\": {}", notice_head(&notice))))
            });
        }
        let door = self.doorbell();
        self.model
            .user_turns()
            .last()
            .is_some_and(|t| t.len() == 1 && t[0].trim() == door)
    }

    /// Sets what the model answers a doorbell with.
    pub fn reply(&self, r: Reply) {
        self.model.set_rules(&rules(&r, self.leg));
    }

    pub fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The pane's visible screen, plain.
    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-J", "-t", &self.pane])
    }

    /// Types `text` into the pane as the captain would.
    pub fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", &self.pane, "-l", text]);
    }

    /// Presses keys in the pane as the captain would: one at a time (two
    /// Escapes in one burst read as a single Alt-Escape).
    pub fn keys(&self, keys: &[&str]) {
        for (i, k) in keys.iter().enumerate() {
            if i > 0 {
                std::thread::sleep(Duration::from_millis(200));
            }
            self.tmux(&["send-keys", "-t", &self.pane, k]);
        }
    }

    /// `pane_dead pane_current_command` of the task's pane.
    pub fn pane_state(&self) -> String {
        self.tmux(&[
            "display-message",
            "-p",
            "-t",
            &self.pane,
            "#{pane_dead} #{pane_current_command}",
        ])
        .trim()
        .to_string()
    }

    /// The lines of `state/wakes.log` of `kind`.
    pub fn wakes(&self, kind: &str) -> Vec<String> {
        let path = self.home.path("state/wakes.log");
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.split('\t').nth(3) == Some(kind))
            .map(str::to_string)
            .collect()
    }

    /// Starts the watcher daemon (stopped on drop).
    pub fn start_watcher(&mut self) {
        let w = self
            .fm("watch")
            .stdout_any()
            .stderr_any()
            .status_any()
            .start();
        self.watcher = Some(w);
    }

    /// The watcher daemon's output so far.
    pub fn watcher_out(&self) -> String {
        self.watcher
            .as_ref()
            .map(super::harness::Started::stdout_so_far)
            .unwrap_or_default()
    }

    /// Polls `f` until it holds, failing with the screen and the model's
    /// view when it never does.
    #[track_caller]
    pub fn wait_for(&self, what: &str, secs: f64, mut f: impl FnMut(&World) -> bool) {
        assert!(
            wait_until(secs, || f(self)),
            "{}: gave up after {secs} s waiting for {what}\n--- crew state\n{}\n--- screen\n{}\n--- user turns\n{:#?}\n--- watcher\n{}",
            self.h.name(),
            self.crew(),
            self.screen(),
            self.model.user_turns(),
            self.watcher_out()
        );
    }

    /// Holds `f` true for `secs` (checked every 100 ms); fails at the first
    /// moment it is false.
    #[track_caller]
    pub fn holds_for(&self, what: &str, secs: f64, mut f: impl FnMut(&World) -> bool) {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < end {
            assert!(
                f(self),
                "{}: {what} stopped holding\n--- crew state\n{}\n--- screen\n{}\n--- user turns\n{:#?}",
                self.h.name(),
                self.crew(),
                self.screen(),
                self.model.user_turns()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if let Some(w) = self.watcher.take() {
            w.signal(libc::SIGTERM);
            drop(w);
        }
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// The notice up to its `<n>` (the harness may escape the `<` and `>`).
fn notice_head(notice: &str) -> &str {
    notice.split(" <n>").next().unwrap_or(notice)
}

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// The model's rule file: the kickoff prompt gets a short answer; a
/// doorbell gets `r`. On the leg the doorbell is matched in the raw last
/// user message: a hook's notification is a synthetic block.
pub fn rules(r: &Reply, leg: bool) -> Value {
    let ack = format!("fm-ack {ID} --through 999999");
    let doorbell = match r {
        Reply::Text => json!({"text": "noted"}),
        Reply::Ack => json!({"command": ack, "then": "acked"}),
        Reply::Silent(s) => json!({"silent": s, "text": "finished after silence"}),
        Reply::Stream(s) => json!({"stream_secs": s, "chunks": s * 4,
            "text": "Streaming line one of the answer.\nLine two goes on with more words.\nLine three.\nLine four.\nLine five ends it."}),
        Reply::Command(c) => json!({"command": c, "sandbox_permissions": "require_escalated",
            "justification": "the test asks for it", "then": "ran it"}),
        Reply::Tool(s) => json!({"command": format!("sleep {s}"),
            "yield_time_ms": (s + 5) * 1000, "then": "ran it"}),
    };
    json!({
        "default": {"text": "ok"},
        "side_default": {"text": "A title"},
        "rules": [
            {"name": "doorbell", "match": "firstmate inbox: new mail in", "raw": leg, "action": doorbell},
            {"name": "kickoff", "match": "Read the brief at ", "action": {"text": KICKOFF_ANSWER}},
        ]
    })
}

//! Where the agent programs are: `scripts/agents.sh` installs the pinned
//! ones into `${FM_AGENTS_DIR:-$HOME/.cache/firstmate/agents}/<name>-<version>/`
//! (versions in `scripts/agents.versions`); `FM_CLAUDE_BIN` and
//! `FM_CODEX_BIN` (the native Codex binary) point elsewhere — at the
//! newest releases `scripts/agents.sh --newest --env FILE` installs, for
//! one. The version under test is what the program itself reports; each
//! is printed once per run (`agents under test: codex 0.171.0 (…)`).
//!
//! A missing program skips the suite with a printed reason, or fails it
//! under `FM_REQUIRE_AGENTS=1` (which `.ci/run` sets).

use std::io::Write;
use std::path::{Path, PathBuf};

/// The agent programs the suite drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Harness {
    Claude,
    Codex,
}

impl Harness {
    /// The firstmate profile name (and `scripts/agents.versions` key).
    pub fn name(self) -> &'static str {
        match self {
            Harness::Claude => "claude",
            Harness::Codex => "codex",
        }
    }

    /// The pinned version.
    pub fn version(self) -> String {
        let versions = include_str!("../../scripts/agents.versions");
        let key = format!("{}=", self.name());
        versions
            .lines()
            .find_map(|l| l.trim().strip_prefix(&key))
            .map_or_else(
                || panic!("no {} in scripts/agents.versions", self.name()),
                |v| v.split_whitespace().next().unwrap_or("").to_string(),
            )
    }

    fn env_var(self) -> &'static str {
        match self {
            Harness::Claude => "FM_CLAUDE_BIN",
            Harness::Codex => "FM_CODEX_BIN",
        }
    }

    /// The executable, if installed.
    pub fn program(self) -> Option<PathBuf> {
        if let Some(p) = std::env::var_os(self.env_var()) {
            return Some(PathBuf::from(p)).filter(|p| executable(p));
        }
        let root = match std::env::var_os("FM_AGENTS_DIR") {
            Some(d) => PathBuf::from(d),
            None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/firstmate/agents"),
        };
        let dir = root.join(format!("{}-{}", self.name(), self.version()));
        match self {
            Harness::Claude => Some(dir.join("node_modules/.bin/claude")).filter(|p| executable(p)),
            // The native binary: the npm launcher on an older node stays
            // the pane's foreground process as `node`.
            Harness::Codex => {
                let scope = dir.join("node_modules/@openai");
                let rd = std::fs::read_dir(scope).ok()?;
                rd.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with("codex-"))
                    .flat_map(|e| {
                        std::fs::read_dir(e.path().join("vendor"))
                            .into_iter()
                            .flatten()
                    })
                    .flatten()
                    .map(|t| t.path().join("bin/codex"))
                    .find(|p| executable(p))
            }
        }
    }

    /// The version the program reports (`codex-cli 0.171.0` → `0.171.0`),
    /// asked once per run in a throwaway home and printed; the pinned
    /// version when it cannot be asked.
    pub fn version_under_test(self) -> String {
        static SEEN: [std::sync::OnceLock<String>; 2] =
            [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
        SEEN[self as usize]
            .get_or_init(|| {
                let Some(p) = self.program() else {
                    return self.version();
                };
                let h = tempfile::tempdir().unwrap();
                let out = std::process::Command::new(&p)
                    .arg("--version")
                    .env("HOME", h.path())
                    .env("CODEX_HOME", h.path().join(".codex"))
                    .env("DISABLE_AUTOUPDATER", "1")
                    .stdin(std::process::Stdio::null())
                    .output();
                let text = out
                    .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                    .unwrap_or_default();
                let v = text
                    .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
                    .find(|w| w.contains('.') && w.chars().all(|c| c.is_ascii_digit() || c == '.'))
                    .map_or_else(|| self.version(), str::to_string);
                // Straight to stderr, past the test harness's capture:
                // every run names what it tested.
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "agents under test: {} {v} ({}; pinned {})",
                    self.name(),
                    p.display(),
                    self.version()
                );
                v
            })
            .clone()
    }

    /// The executable, or `None` after printing why the test is skipped;
    /// under `FM_REQUIRE_AGENTS=1` a missing program fails the test.
    #[track_caller]
    pub fn require(self) -> Option<PathBuf> {
        if let Some(p) = self.program() {
            self.version_under_test();
            return Some(p);
        }
        let what = format!(
            "{} {} (install with scripts/agents.sh, or set {})",
            self.name(),
            self.version(),
            self.env_var()
        );
        assert!(
            std::env::var("FM_REQUIRE_AGENTS").as_deref() != Ok("1"),
            "{what} is required (FM_REQUIRE_AGENTS=1) but missing"
        );
        eprintln!("skipped: {what} missing (set FM_REQUIRE_AGENTS=1 to fail instead)");
        None
    }
}

fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

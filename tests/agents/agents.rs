//! Where the pinned agent programs are: `scripts/agents.sh` installs them
//! into `${FM_AGENTS_DIR:-$HOME/.cache/firstmate/agents}/<name>-<version>/`
//! (versions in `scripts/agents.versions`); `FM_CLAUDE_BIN` and
//! `FM_CODEX_BIN` (the native Codex binary) point elsewhere.
//!
//! A missing program skips the suite with a printed reason, or fails it
//! under `FM_REQUIRE_AGENTS=1` (which `.ci/run` sets).

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

    /// The executable, or `None` after printing why the test is skipped;
    /// under `FM_REQUIRE_AGENTS=1` a missing program fails the test.
    #[track_caller]
    pub fn require(self) -> Option<PathBuf> {
        if let Some(p) = self.program() {
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

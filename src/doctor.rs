//! `fm doctor` (SPEC §13): one line per check of the things firstmate needs
//! — tmux, git, the home's layout and permissions, the watcher, inotify.
//! A check is `ok`, `warn` or `fail`; only `fail` makes the exit non-zero.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use serde::Serialize;

use crate::config::Config;
use crate::fsx;
use crate::home::Home;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ok,
    Warn,
    Fail,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub check: &'static str,
    pub level: Level,
    pub detail: String,
}

impl Check {
    fn new(check: &'static str, level: Level, detail: impl Into<String>) -> Check {
        Check {
            check,
            level,
            detail: detail.into(),
        }
    }

    pub fn line(&self) -> String {
        let level = match self.level {
            Level::Ok => "ok  ",
            Level::Warn => "warn",
            Level::Fail => "fail",
        };
        format!("{level} {}: {}", self.check, self.detail)
    }
}

fn version_of(program: &str, arg: &str) -> Result<String, String> {
    match Command::new(program).arg(arg).output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string()),
        Ok(o) => Err(format!("`{program} {arg}` exited with {}", o.status)),
        Err(e) => Err(format!("not found on PATH ({e})")),
    }
}

/// Runs every check against `home` (whose config may fail to load).
pub fn run(home: &Home) -> Vec<Check> {
    let mut checks = Vec::new();
    checks.push(match version_of("tmux", "-V") {
        Ok(v) => Check::new("tmux", Level::Ok, v),
        Err(e) => Check::new("tmux", Level::Fail, e),
    });
    checks.push(match version_of("git", "--version") {
        Ok(v) => Check::new("git", Level::Ok, v),
        Err(e) => Check::new("git", Level::Fail, e),
    });
    let cfg_path = home.config_file();
    checks.push(match Config::load(&cfg_path) {
        Ok(c) if !cfg_path.exists() => {
            let _ = c;
            Check::new(
                "config",
                Level::Warn,
                format!("{} missing; using defaults", cfg_path.display()),
            )
        }
        Ok(c) if !c.warnings.is_empty() => Check::new("config", Level::Warn, c.warnings.join("; ")),
        Ok(_) => Check::new("config", Level::Ok, cfg_path.display().to_string()),
        Err(e) => Check::new("config", Level::Fail, e.to_string()),
    });
    for (name, dir) in [
        ("data dir", home.data_dir()),
        ("state dir", home.state_dir()),
    ] {
        checks.push(match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.file_type().is_symlink() => {
                Check::new(name, Level::Fail, format!("{} is a symlink", dir.display()))
            }
            Ok(m) if !m.is_dir() => Check::new(
                name,
                Level::Fail,
                format!("{} is not a directory", dir.display()),
            ),
            Ok(m) if m.permissions().mode() & 0o077 != 0 => Check::new(
                name,
                Level::Warn,
                format!(
                    "{} is mode {:o}; 700 keeps other users out",
                    dir.display(),
                    m.permissions().mode() & 0o777
                ),
            ),
            Ok(_) => Check::new(name, Level::Ok, format!("{} (mode 700)", dir.display())),
            Err(_) => Check::new(
                name,
                Level::Fail,
                format!("{} missing (run `fm init`)", dir.display()),
            ),
        });
    }
    checks.push(watcher_check(home));
    checks.push(
        match std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches") {
            Ok(n) => Check::new(
                "inotify",
                Level::Ok,
                format!("available (max_user_watches {})", n.trim()),
            ),
            Err(_) => Check::new(
                "inotify",
                Level::Warn,
                "not available; the watcher will poll",
            ),
        },
    );
    checks
}

fn watcher_check(home: &Home) -> Check {
    if !home.state_dir().is_dir() {
        return Check::new("watcher", Level::Warn, "not running (no state dir)");
    }
    let lock = home.watch_lock();
    if !lock.exists() {
        return Check::new(
            "watcher",
            Level::Warn,
            "not running (start `fm-watch` or add `fm-watch --crontab` to cron)",
        );
    }
    match fsx::try_lock(&lock) {
        Ok(Some(_free)) => Check::new(
            "watcher",
            Level::Warn,
            "not running (start `fm-watch` or add `fm-watch --crontab` to cron)",
        ),
        Ok(None) => {
            let beat = std::fs::metadata(home.watch_beat())
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok())
                .map(|d| format!("heartbeat {} ago", crate::clock::age(d.as_secs())))
                .unwrap_or_else(|| "no heartbeat yet".into());
            Check::new("watcher", Level::Ok, format!("running ({beat})"))
        }
        Err(e) => Check::new("watcher", Level::Fail, e.to_string()),
    }
}

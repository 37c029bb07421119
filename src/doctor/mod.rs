//! `fm doctor` (docs/spec/fm.md): one line per check of the things firstmate needs
//! — tmux, git, the home's layout and permissions, the watcher, inotify.
//! A check is `ok`, `warn` or `fail`; only `fail` makes the exit non-zero.

mod hosts;
mod legs;
mod records;
mod tools;

pub(crate) use tools::tmux_check;

use std::os::unix::fs::PermissionsExt;

use serde::Serialize;

use crate::config::Config;
use crate::fsx;
use crate::home::Home;
use records::{debris_check, panes_check, task_records_check, watcher_check};
use tools::{harness_checks, tmux_locale_check, version_of};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Level {
    Ok,
    Warn,
    Fail,
}

#[derive(Debug, Clone, Serialize)]
#[allow(
    clippy::struct_field_names,
    reason = "the field names are the keys of `fm doctor --json`"
)]
pub(crate) struct Check {
    pub(crate) check: std::borrow::Cow<'static, str>,
    pub(crate) level: Level,
    pub(crate) detail: String,
}

impl Check {
    fn new(
        check: impl Into<std::borrow::Cow<'static, str>>,
        level: Level,
        detail: impl Into<String>,
    ) -> Check {
        Check {
            check: check.into(),
            level,
            detail: detail.into(),
        }
    }

    pub(crate) fn line(&self) -> String {
        let level = match self.level {
            Level::Ok => "ok  ",
            Level::Warn => "warn",
            Level::Fail => "fail",
        };
        format!("{level} {}: {}", self.check, self.detail)
    }
}

/// Runs every check. `home` is the resolved home, or why none resolved:
/// tmux, git and inotify are checked either way, and an unresolved home
/// is one `fail home: …` line.
pub fn run(home: std::result::Result<&Home, String>) -> Vec<Check> {
    let mut checks = Vec::new();
    let tmux = version_of("tmux", "-V");
    let tmux_found = tmux.is_ok();
    checks.push(match tmux {
        Ok(v) => tmux_check(&v),
        Err(e) => Check::new("tmux", Level::Fail, e),
    });
    checks.push(tmux_locale_check(tmux_found));
    checks.push(match version_of("git", "--version") {
        Ok(v) => Check::new("git", Level::Ok, v),
        Err(e) => Check::new("git", Level::Fail, e),
    });
    let overrides = home
        .as_ref()
        .ok()
        .and_then(|h| Config::load(&h.config_file()).ok())
        .map(|c| c.harness)
        .unwrap_or_default();
    match home {
        Ok(home) => home_checks(home, &mut checks),
        Err(e) => checks.push(Check::new("home", Level::Fail, e)),
    }
    #[expect(
        clippy::disallowed_methods,
        reason = "outside the home: a kernel limit"
    )]
    let watches = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches");
    checks.push(match watches {
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
    });
    checks.extend(harness_checks(&overrides));
    checks
}

/// The format firstmate's pane reads depend on: tab-separated fields and a
/// non-ASCII character. A client without a UTF-8 locale gets `_` for both.
fn home_checks(home: &Home, checks: &mut Vec<Check>) {
    let cfg_path = home.config_file();
    let loaded = Config::load(&cfg_path);
    let poll_secs = loaded
        .as_ref()
        .map_or(Config::default().watch.poll_secs, |c| c.watch.poll_secs);
    checks.push(match &loaded {
        Ok(_) if !fsx::exists(&cfg_path).unwrap_or(false) => Check::new(
            "config",
            Level::Warn,
            format!("{} missing; using defaults", cfg_path.display()),
        ),
        Ok(c) if !c.warnings.is_empty() => Check::new("config", Level::Warn, c.warnings.join("; ")),
        Ok(_) => Check::new("config", Level::Ok, cfg_path.display().to_string()),
        Err(e) => Check::new("config", Level::Fail, e.to_string()),
    });
    // A far doctor asked by another home's doctor checks its home, not
    // its own hosts: two homes naming each other would ask on forever.
    let hosts_wanted = std::env::var_os(hosts::NO_HOSTS_VAR).is_none();
    if let (Ok(cfg), true) = (&loaded, hosts_wanted) {
        for (name, r) in hosts::check_all(home, &cfg.hosts) {
            checks.push(Check::new(format!("host {name}"), r.level, r.detail));
        }
    }
    for (name, dir) in [
        ("data dir", home.data_dir()),
        ("state dir", home.state_dir()),
    ] {
        checks.push(match fsx::stat(&dir) {
            Ok(None) => Check::new(
                name,
                Level::Fail,
                format!("{} missing (run `fm init`)", dir.display()),
            ),
            Ok(Some(m)) if m.file_type().is_symlink() => {
                Check::new(name, Level::Fail, format!("{} is a symlink", dir.display()))
            }
            Ok(Some(m)) if !m.is_dir() => Check::new(
                name,
                Level::Fail,
                format!("{} is not a directory", dir.display()),
            ),
            Ok(Some(m)) if m.permissions().mode() & 0o077 != 0 => Check::new(
                name,
                Level::Warn,
                format!(
                    "{} is mode {:o}; 700 keeps other users out",
                    dir.display(),
                    m.permissions().mode() & 0o777
                ),
            ),
            Ok(_) => Check::new(name, Level::Ok, format!("{} (mode 700)", dir.display())),
            Err(e) => Check::new(name, Level::Fail, e.to_string()),
        });
    }
    if let Ok(cfg) = &loaded {
        checks.push(task_records_check(home, cfg));
        checks.extend(panes_check(home, cfg));
        checks.extend(legs::legs_check(home, cfg));
    }
    checks.extend(debris_check(home));
    checks.push(watcher_check(home, poll_secs));
    if let Some((warn, detail)) = crate::mate::pack::health(home) {
        let level = if warn { Level::Warn } else { Level::Ok };
        checks.push(Check::new("first mate", level, detail));
    }
}

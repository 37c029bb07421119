//! `fm doctor` (SPEC §13): one line per check of the things firstmate needs
//! — tmux, git, the home's layout and permissions, the watcher, inotify.
//! A check is `ok`, `warn` or `fail`; only `fail` makes the exit non-zero.

use std::os::unix::fs::PermissionsExt;

use serde::Serialize;

use crate::config::Config;
use crate::fsx;
use crate::home::Home;

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

fn version_of(program: &str, arg: &str) -> Result<String, String> {
    match crate::proc::Cmd::new(program).arg(arg).run() {
        Ok(o) if o.success() => Ok(o.stdout.lines().next().unwrap_or("").trim().to_string()),
        Ok(o) => Err(format!("`{program} {arg}` exited with {}", o.status)),
        Err(f) => Err(match f.cause {
            crate::proc::Cause::NotFound => "not found on PATH".to_string(),
            cause => cause.to_string(),
        }),
    }
}

/// The oldest tmux firstmate supports: `set-option -p`, `new-window -e`
/// and `respawn-pane -e` need 3.0.
pub(crate) const TMUX_MIN: (u32, u32) = (3, 0);

/// `(major, minor)` of a `tmux -V` line such as `tmux 3.3a`,
/// `tmux next-3.4` or `tmux openbsd-7.1`'s `tmux 3.2`; `None` when the
/// line names no version (`tmux master`).
pub(crate) fn tmux_version(line: &str) -> Option<(u32, u32)> {
    let v = line.split_whitespace().nth(1)?;
    let v = v.rsplit('-').next()?;
    let mut parts = v.splitn(2, '.');
    let major = parts.next()?.parse().ok()?;
    let minor: String = parts
        .next()
        .unwrap_or("0")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((major, minor.parse().unwrap_or(0)))
}

/// The tmux check from its `tmux -V` line.
pub(crate) fn tmux_check(line: &str) -> Check {
    match tmux_version(line) {
        Some(v) if v < TMUX_MIN => Check::new(
            "tmux",
            Level::Fail,
            format!(
                "{line}: firstmate needs tmux {}.{} or newer",
                TMUX_MIN.0, TMUX_MIN.1
            ),
        ),
        Some(_) => Check::new("tmux", Level::Ok, line),
        None => Check::new(
            "tmux",
            Level::Warn,
            format!(
                "{line}: version not recognised (needs {}.{} or newer)",
                TMUX_MIN.0, TMUX_MIN.1
            ),
        ),
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
    checks.push(
        // Outside the home: a kernel limit.
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
    checks.extend(harness_checks(&overrides));
    checks
}

/// The format firstmate's pane reads depend on: tab-separated fields and a
/// non-ASCII character. A client without a UTF-8 locale gets `_` for both.
const LOCALE_PROBE: &str = "#{session_name}\t#{window_index}\t\u{2713}";

/// Starts a private tmux server and reads [`LOCALE_PROBE`] through the same
/// runner every pane read uses, in this environment (cron's, if doctor runs
/// from cron). Fails when the read comes back mangled: every live worker
/// would then read as gone.
fn tmux_locale_check(tmux_found: bool) -> Check {
    const NAME: &str = "tmux locale";
    if !tmux_found {
        return Check::new(NAME, Level::Warn, "not probed (no tmux)");
    }
    let socket = format!("fm-doctor-{}", std::process::id());
    let tmux = || {
        crate::proc::Cmd::tmux(Some(&socket))
            .arg("-f")
            .arg("/dev/null")
    };
    let started = tmux()
        .args(["new-session", "-d", "-s", "probe", "-x", "80", "-y", "5"])
        .args(["sleep", "30"])
        .run();
    let read = tmux()
        .args(["display-message", "-p", "-t", "probe", LOCALE_PROBE])
        .run();
    let _ = tmux().arg("kill-server").run();
    let env = match crate::proc::utf8_locale(|k| std::env::var_os(k)) {
        None => "the locale is UTF-8".to_string(),
        Some((var, value)) => {
            format!("the locale is not UTF-8 here; firstmate runs tmux with -u and {var}={value}")
        }
    };
    match (started, read) {
        (Ok(s), _) if !s.success() => Check::new(
            NAME,
            Level::Warn,
            format!(
                "not probed: a private tmux server did not start ({})",
                s.stderr.trim()
            ),
        ),
        (Err(f), _) | (_, Err(f)) => {
            Check::new(NAME, Level::Warn, format!("not probed: {}", f.cause))
        }
        (Ok(_), Ok(r)) => {
            let got = r.stdout.trim_end_matches('\n');
            if got == "probe\t0\t\u{2713}" {
                Check::new(
                    NAME,
                    Level::Ok,
                    format!("tab-separated reads survive ({env})"),
                )
            } else {
                Check::new(
                    NAME,
                    Level::Fail,
                    format!(
                        "tmux prints {got:?} for {:?}: every live pane would read as gone ({env}); set LANG=C.UTF-8",
                        "probe\t0\t\u{2713}"
                    ),
                )
            }
        }
    }
}

/// The versions the real-agent suite pins (`name=version` lines).
const PINNED: &str = include_str!("../scripts/agents.versions");

fn pinned(name: &str) -> Option<&'static str> {
    PINNED.lines().find_map(|l| {
        let v = l.trim().strip_prefix(name)?.strip_prefix('=')?;
        v.split_whitespace().next()
    })
}

/// The versions a full conformance-suite run passed on
/// (`<name>.verified=<version> <version> …` lines), the pinned one
/// always among them.
fn verified(name: &str) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = pinned(name).into_iter().collect();
    for l in PINNED.lines() {
        let Some(rest) = l
            .trim()
            .strip_prefix(name)
            .and_then(|r| r.strip_prefix(".verified="))
        else {
            continue;
        };
        for w in rest.split_whitespace() {
            if !v.contains(&w) {
                v.push(w);
            }
        }
    }
    v
}

/// Harnesses the conformance suite (tests/agents) drives.
const SUITE_HARNESSES: &[&str] = &["claude", "codex"];

/// The first word of `text` that looks like a version (`2.1.332`).
fn version_word(text: &str) -> Option<&str> {
    text.split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .map(|w| w.trim_start_matches('v'))
        .find(|w| w.contains('.') && w.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// One line per agent harness (the built-in agent profiles and every
/// `[harness.<name>]` table): its program, whether it is installed, and its
/// version against the one the conformance suite pins. A built-in nobody
/// installed is fine (`ok`); a configured one that is missing warns.
fn harness_checks(overrides: &crate::harness::Overrides) -> Vec<Check> {
    let mut names: Vec<&str> = ["claude", "codex", "opencode", "pi"].to_vec();
    for n in overrides.keys() {
        if !names.contains(&n.as_str()) && n != "shell" && n != "stand-in" {
            names.push(n);
        }
    }
    let path = std::env::var_os("PATH");
    names
        .into_iter()
        .filter_map(|name| {
            let p = crate::harness::profile(overrides, name)?;
            let program = p.launch.first().cloned().unwrap_or_default();
            let configured = overrides.contains_key(name);
            // A posture or hooks that do not reach the agent: a warning.
            let note = p.flag_plan_note();
            let posture = match &note {
                Some(note) => format!("{}; {note}", p.approval_summary()),
                None => p.approval_summary(),
            };
            let check = |level, detail: String| Check {
                check: "harness".into(),
                level: if note.is_some() && level == Level::Ok {
                    Level::Warn
                } else {
                    level
                },
                detail: format!("{name}: {detail}; {posture}"),
            };
            if !crate::harness::program_exists(&program, path.as_deref()) {
                let level = if configured { Level::Warn } else { Level::Ok };
                return Some(check(level, format!("`{program}` not installed")));
            }
            let suite = SUITE_HARNESSES.contains(&name);
            let Some(want) = pinned(name).filter(|_| suite) else {
                return Some(check(
                    Level::Ok,
                    format!("`{program}` installed; no conformance suite verifies this profile"),
                ));
            };
            let verified = verified(name);
            Some(match program_version(&program) {
                Ok(v) if version_word(&v) == Some(want) => {
                    check(Level::Ok, format!("`{program}` {want} (the version the profile is built for)"))
                }
                Ok(v) if version_word(&v).is_some_and(|w| verified.contains(&w)) => check(
                    Level::Ok,
                    format!(
                        "`{program}` {} (verified by the conformance suite; the profile is built for {want})",
                        version_word(&v).unwrap_or_default()
                    ),
                ),
                Ok(v) if version_word(&v).is_some() => check(
                    Level::Warn,
                    format!(
                        "{program} {}: not verified by the conformance suite (verified: {})",
                        version_word(&v).unwrap_or_default(),
                        verified.join(", ")
                    ),
                ),
                Ok(v) => check(
                    Level::Warn,
                    format!("`{program}` reports {:?}; the profile is built for {want} (scripts/agents.versions)", v.trim()),
                ),
                Err(e) => check(Level::Warn, format!("`{program} --version`: {e}")),
            })
        })
        .collect()
}

/// `program --version` in a throwaway home: some agents write their
/// config directory on any start.
fn program_version(program: &str) -> Result<String, String> {
    use std::os::unix::fs::DirBuilderExt;
    // A new private directory: one that already exists (perhaps planted by
    // another user of the shared temp dir) is refused, never reused.
    let h = std::env::temp_dir().join(format!("fm-doctor-{}", std::process::id()));
    // Outside the home: a private directory in the temp dir.
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&h)
        .map_err(|e| format!("{}: {e}", h.display()))?;
    let out = crate::proc::Cmd::new(program)
        .arg("--version")
        .env("HOME", &h)
        .env("CODEX_HOME", h.join(".codex"))
        .env("CLAUDE_CONFIG_DIR", h.join(".claude"))
        .env("DISABLE_AUTOUPDATER", "1")
        .run();
    // Outside the home: that private directory.
    let _ = std::fs::remove_dir_all(&h);
    let out = out.map_err(|f| f.cause.to_string())?;
    if !out.success() {
        return Err(format!("exit {}", out.status));
    }
    Ok(out
        .stdout
        .lines()
        .find(|l| !l.starts_with("WARNING"))
        .unwrap_or("")
        .to_string())
}

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
    let hosts_wanted = std::env::var_os(crate::remote::doctor::NO_HOSTS_VAR).is_none();
    if let (Ok(cfg), true) = (&loaded, hosts_wanted) {
        for (name, r) in crate::remote::doctor::check_all(home, &cfg.hosts) {
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
    }
    checks.extend(debris_check(home));
    checks.push(watcher_check(home, poll_secs));
}

/// Sweeps the stale temp files killed writers left under `state/` and
/// `data/` (two levels down: inboxes and `handled/`, task dirs and their
/// brief history) and reports them; no line when there were none.
fn debris_check(home: &Home) -> Option<Check> {
    let mut dirs = Vec::new();
    for top in [home.state_dir(), home.data_dir()] {
        let mut level = vec![top];
        for _ in 0..3 {
            let mut next = Vec::new();
            for d in &level {
                next.extend(subdirs(d));
            }
            dirs.append(&mut level);
            level = next;
        }
    }
    let mut swept = Vec::new();
    let mut errors = Vec::new();
    for d in &dirs {
        match fsx::sweep_temps(d, fsx::STALE_TEMP) {
            Ok(s) => swept.extend(s),
            Err(e) => errors.push(e.to_string()),
        }
    }
    if swept.is_empty() && errors.is_empty() {
        return None;
    }
    let mut detail = Vec::new();
    if !swept.is_empty() {
        let shown: Vec<String> = swept
            .iter()
            .take(5)
            .map(|p| p.display().to_string())
            .collect();
        let more = swept.len().saturating_sub(shown.len());
        detail.push(format!(
            "swept {} stale temp file(s) left by killed writers: {}{}",
            swept.len(),
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    detail.extend(errors);
    Some(Check::new("debris", Level::Warn, detail.join("; ")))
}

/// The directories directly in `dir`, not through symlinks.
fn subdirs(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(names) = fsx::list_dir(dir) else {
        return Vec::new();
    };
    names
        .into_iter()
        .map(|n| dir.join(n))
        .filter(|p| fsx::stat(p).is_ok_and(|m| m.is_some_and(|m| m.file_type().is_dir())))
        .collect()
}

/// Every task's meta can be read (no symlink, a regular file), keeps other
/// users out (mode 600) and names a harness that exists; every board file
/// parses. One line: the first few problems, unreadable ones failing.
fn task_records_check(home: &Home, cfg: &Config) -> Check {
    use std::os::unix::fs::PermissionsExt;
    let ids = match home.task_ids_with_meta() {
        Ok(ids) => ids,
        Err(e) => return Check::new("tasks", Level::Fail, e.to_string()),
    };
    let mut fails = Vec::new();
    let mut warns = Vec::new();
    for id in &ids {
        match crate::meta::TaskMeta::load(home, id) {
            Err(e) => fails.push(format!("{id}: {e}")),
            Ok(m) => {
                let m = m.unwrap_or_default();
                if let Ok(Some(md)) = fsx::stat(&home.meta(id))
                    && md.permissions().mode() & 0o077 != 0
                {
                    warns.push(format!(
                        "{id}.meta is mode {:o}",
                        md.permissions().mode() & 0o777
                    ));
                }
                if let Some(h) = &m.harness
                    && crate::harness::profile(&cfg.harness, h).is_none()
                {
                    warns.push(format!("{id}: unknown harness {h:?}"));
                }
            }
        }
    }
    match crate::board::store::load_all(home) {
        Ok((_, skipped)) => warns.extend(skipped.into_iter().map(|w| format!("board: {w}"))),
        Err(e) => fails.push(format!("board: {e}")),
    }
    let (level, problems) = if !fails.is_empty() {
        (Level::Fail, [fails, warns].concat())
    } else if !warns.is_empty() {
        (Level::Warn, warns)
    } else {
        return Check::new(
            "tasks",
            Level::Ok,
            format!("{} task(s), board readable", ids.len()),
        );
    };
    let shown: Vec<&str> = problems.iter().take(5).map(String::as_str).collect();
    let more = problems.len().saturating_sub(shown.len());
    let tail = if more > 0 {
        format!(" (+{more} more)")
    } else {
        String::new()
    };
    Check::new("tasks", level, format!("{}{tail}", shown.join("; ")))
}

/// Whether every task's recorded pane is still its own
/// ([`crate::tmux::owner`]): a pane gone (its server restarted, or the id
/// now another's) and a pane two tasks record are named. Local tasks
/// only (a far host's doctor checks its own); one tmux call per socket.
fn panes_check(home: &Home, cfg: &Config) -> Option<Check> {
    use crate::tmux::owner::{Claim, Lost};
    use crate::tmux::pane::{Pane, Tmux};
    use std::collections::BTreeMap;
    let mut by_socket: BTreeMap<String, Vec<Claim>> = BTreeMap::new();
    for id in home.task_ids_with_meta().ok()? {
        let Ok(Some(m)) = crate::meta::TaskMeta::load(home, &id) else {
            continue;
        };
        if m.host_name().is_some() {
            continue;
        }
        if let Some(c) = Claim::of(&id, &m) {
            by_socket
                .entry(m.socket(cfg).to_string())
                .or_default()
                .push(c);
        }
    }
    if by_socket.is_empty() {
        return None;
    }
    let (mut gone, mut twice, mut proven) = (Vec::new(), Vec::new(), 0);
    for (socket, claims) in &by_socket {
        let Ok(list) = Tmux::new(socket).list() else {
            continue;
        };
        let mut holders: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for c in claims {
            holders.entry(&c.pane).or_default().push(c.task.as_str());
            match c.check_in(&list) {
                Ok(()) => proven += 1,
                // A pane closed on the server it was opened on is a
                // finished task's ordinary end, not a problem.
                Err(Lost::Closed) => {}
                Err(lost) => gone.push(format!("{}: {}", c.task, lost.words())),
            }
        }
        for (pane, tasks) in holders {
            if tasks.len() > 1 {
                twice.push(format!("pane {pane} is recorded by {}", tasks.join(", ")));
            }
        }
    }
    if gone.is_empty() && twice.is_empty() {
        return Some(Check::new(
            "panes",
            Level::Ok,
            format!("{proven} task pane(s) proven theirs"),
        ));
    }
    let mut problems = [twice, gone].concat();
    let more = problems.len().saturating_sub(5);
    problems.truncate(5);
    let tail = if more > 0 {
        format!(" (+{more} more)")
    } else {
        String::new()
    };
    Some(Check::new(
        "panes",
        Level::Warn,
        format!(
            "{}{tail}; `fm-control <id> relaunch` opens a new window for a task whose pane is gone",
            problems.join("; ")
        ),
    ))
}

/// The watcher line from the lock and the heartbeat's age: a holder whose
/// heartbeat is older than `2 × poll_secs + 10` s is probably hung.
pub(crate) fn watcher_line(held: bool, beat_age: Option<u64>, poll_secs: u64) -> (Level, String) {
    if !held {
        return (
            Level::Warn,
            "not running (start `fm-watch` or add `fm-watch --crontab` to cron)".into(),
        );
    }
    let limit = poll_secs.saturating_mul(2).saturating_add(10);
    match beat_age {
        Some(age) if age > limit => (
            Level::Warn,
            format!("watcher holds the lock but its heartbeat is {age}s old: hung?"),
        ),
        Some(age) => (
            Level::Ok,
            format!("running (heartbeat {} ago)", crate::clock::age(age)),
        ),
        None => (Level::Ok, "running (no heartbeat yet)".into()),
    }
}

fn watcher_check(home: &Home, poll_secs: u64) -> Check {
    if !fsx::is_dir(&home.state_dir()).unwrap_or(false) {
        return Check::new("watcher", Level::Warn, "not running (no state dir)");
    }
    let lock = home.watch_lock();
    if !fsx::exists(&lock).unwrap_or(false) {
        return Check::new(
            "watcher",
            Level::Warn,
            "not running (start `fm-watch` or add `fm-watch --crontab` to cron)",
        );
    }
    let held = match fsx::try_lock(&lock) {
        Ok(free) => free.is_none(),
        Err(e) => return Check::new("watcher", Level::Fail, e.to_string()),
    };
    let beat_age = fsx::stat(&home.watch_beat())
        .ok()
        .flatten()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.elapsed().ok())
        .map(|d| d.as_secs());
    let (level, detail) = watcher_line(held, beat_age, poll_secs);
    Check::new("watcher", level, detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmux_versions() {
        assert_eq!(tmux_version("tmux 3.3a"), Some((3, 3)));
        assert_eq!(tmux_version("tmux next-3.4"), Some((3, 4)));
        assert_eq!(tmux_version("tmux 2.9a"), Some((2, 9)));
        assert_eq!(tmux_version("tmux 10"), Some((10, 0)));
        assert_eq!(tmux_version("tmux master"), None);
        assert_eq!(tmux_check("tmux 2.9a").level, Level::Fail);
        assert_eq!(tmux_check("tmux 3.0").level, Level::Ok);
        assert_eq!(tmux_check("tmux master").level, Level::Warn);
    }

    #[test]
    fn a_stale_heartbeat_under_a_held_lock_is_a_warning() {
        assert_eq!(watcher_line(true, Some(40), 15).0, Level::Ok);
        let (level, detail) = watcher_line(true, Some(41), 15);
        assert_eq!(level, Level::Warn);
        assert_eq!(
            detail,
            "watcher holds the lock but its heartbeat is 41s old: hung?"
        );
        assert_eq!(watcher_line(true, None, 15).0, Level::Ok);
        assert_eq!(watcher_line(false, Some(1), 15).0, Level::Warn);
    }
}

//! The doctor's checks of programs: tmux (its version, the locale its
//! client reads in), git, and the harnesses' pinned versions.

use super::{Check, Level};

pub(super) fn version_of(program: &str, arg: &str) -> Result<String, String> {
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
const LOCALE_PROBE: &str = "#{session_name}\t#{window_index}\t\u{2713}";

/// Starts a private tmux server and reads [`LOCALE_PROBE`] through the same
/// runner every pane read uses, in this environment (cron's, if doctor runs
/// from cron). Fails when the read comes back mangled: every live worker
/// would then read as gone.
pub(super) fn tmux_locale_check(tmux_found: bool) -> Check {
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
const PINNED: &str = include_str!("../../scripts/agents.versions");

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
pub(super) fn harness_checks(overrides: &crate::harness::Overrides) -> Vec<Check> {
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
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: a private directory in the temp dir"
)]
fn program_version(program: &str) -> Result<String, String> {
    use std::os::unix::fs::DirBuilderExt;
    // A new private directory: one that already exists (perhaps planted by
    // another user of the shared temp dir) is refused, never reused.
    let h = std::env::temp_dir().join(format!("fm-doctor-{}", std::process::id()));
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
}

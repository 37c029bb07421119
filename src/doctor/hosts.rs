//! `fm doctor`'s check of one configured host: reachable, firstmate
//! installed there and of a compatible version, tmux and git present, and
//! the far home sound by the far side's own doctor (its layout, its
//! permissions, its watcher) — one round trip (docs/remote.md, "Version
//! compatibility").

use serde::Deserialize;

use super::Level;
use crate::config::HostCfg;
use crate::home::Home;
use crate::remote::Ssh;
use crate::shq::quote;

/// Set for the far doctor: it leaves out its own hosts' checks.
pub(crate) const NO_HOSTS_VAR: &str = "FM_DOCTOR_NO_HOSTS";

/// Time the far doctor may take beyond the host's bound (its harness and
/// tmux probes run one after another there).
const FAR_DOCTOR_EXTRA: std::time::Duration = std::time::Duration::from_secs(10);

/// The verdict for one host: its level, and what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostReport {
    pub(crate) level: Level,
    pub(crate) detail: String,
}

/// One line of the far `fm doctor --json`, read leniently: a field this
/// side does not know is ignored, a missing one is empty.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct FarCheck {
    check: String,
    level: String,
    detail: String,
}

/// Checks every configured host, each on its own thread, so the doctor
/// costs the slowest host, not their sum; in the hosts' order.
pub(crate) fn check_all(home: &Home, hosts: &crate::config::Hosts) -> Vec<(String, HostReport)> {
    std::thread::scope(|s| {
        let running: Vec<_> = hosts
            .iter()
            .map(|(name, cfg)| (name, s.spawn(move || check(home, name, cfg))))
            .collect();
        running
            .into_iter()
            .map(|(name, h)| {
                let r = h.join().unwrap_or_else(|_| HostReport {
                    level: Level::Fail,
                    detail: "the check panicked".into(),
                });
                (name.clone(), r)
            })
            .collect()
    })
}

/// Asks host `name` for `fm --version`, `tmux -V`, `git --version` and
/// its own `fm doctor --json` on the far home.
pub(crate) fn check(home: &Home, name: &str, cfg: &HostCfg) -> HostReport {
    let fail = |detail: String| HostReport {
        level: Level::Fail,
        detail,
    };
    let ssh = match Ssh::new(home, name, cfg) {
        Ok(s) => s.with_extra_time(FAR_DOCTOR_EXTRA),
        Err(e) => return fail(e.to_string()),
    };
    // Each probe prints one line of its own, prefixed, whatever it says.
    let probe =
        |key: &str, cmd: &str| format!("printf '{key}=%s\\n' \"$({cmd} 2>&1 | head -n 1)\"");
    let fm = format!("{} --version", quote(&cfg.tool("fm")));
    // The far doctor's stderr is left out: its one JSON line is the answer.
    let far_doctor = format!(
        "FM_HOME={} {NO_HOSTS_VAR}=1 {} doctor --json 2>/dev/null | head -n 1",
        quote(&cfg.home.to_string_lossy()),
        quote(&cfg.tool("fm"))
    );
    let line = [
        probe("fm", &fm),
        probe("tmux", "tmux -V"),
        probe("git", "git --version"),
        format!("printf 'doctor=%s\\n' \"$({far_doctor})\""),
    ]
    .join("; ");
    let reply = match ssh.shell(&line) {
        Ok(r) => r,
        Err(u) => return fail(format!("unreachable: {u}")),
    };
    let field = |k: &str| {
        reply
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let (fm, tmux, git) = (field("fm"), field("tmux"), field("git"));
    let mut report = verdict(&fm, &tmux, &git, env!("CARGO_PKG_VERSION"));
    if report.level != Level::Fail {
        report = with_far_doctor(report, &cfg.home.to_string_lossy(), &field("doctor"));
    }
    report
}

/// The far doctor's verdict on the far home, added to a report whose
/// probes passed: its `fail` checks make the host fail, its `warn` checks
/// make it warn, each named `there: <check>: <detail>`. The far side's own
/// host checks are left out (they are that side's hosts, not ours; it is
/// asked not to make them), and so are its tmux and git checks that
/// passed (the probes found those tools). An answer that is not
/// the doctor's JSON is a failure naming it.
pub(crate) fn with_far_doctor(report: HostReport, far_home: &str, json: &str) -> HostReport {
    let Ok(checks) = serde_json::from_str::<Vec<FarCheck>>(json) else {
        let shown: String = json.chars().take(200).collect();
        let shown = if shown.is_empty() {
            "no output".to_string()
        } else {
            shown
        };
        return HostReport {
            level: Level::Fail,
            detail: format!("the far doctor of home {far_home} gave no report ({shown})"),
        };
    };
    let mut level = report.level;
    let mut notes = Vec::new();
    for c in checks {
        let probed = matches!(c.check.as_str(), "tmux" | "git") && c.level == "ok";
        if c.check.starts_with("host ") || probed {
            continue;
        }
        let this = match c.level.as_str() {
            "ok" => continue,
            "warn" => Level::Warn,
            _ => Level::Fail,
        };
        if this == Level::Fail || level == Level::Ok {
            level = this;
        }
        notes.push(format!("there: {}: {}", c.check, c.detail));
    }
    let mut detail = format!("{}, home {far_home}", report.detail);
    if !notes.is_empty() {
        detail = format!("{detail}; {}", notes.join("; "));
    }
    HostReport { level, detail }
}

/// The pure part: the three probe lines against this side's version.
pub(crate) fn verdict(fm: &str, tmux: &str, git: &str, ours: &str) -> HostReport {
    let mut problems = Vec::new();
    match fm.strip_prefix("fm ") {
        Some(theirs) if compatible(theirs.trim(), ours) => {}
        Some(theirs) => problems.push(format!(
            "firstmate {} there is not compatible with {ours} here",
            theirs.trim()
        )),
        None => problems.push(format!("firstmate not found there ({fm})")),
    }
    if !tmux.starts_with("tmux ") {
        problems.push(format!("tmux not found there ({tmux})"));
    }
    if !git.starts_with("git version") {
        problems.push(format!("git not found there ({git})"));
    }
    let found = format!("{fm}, {tmux}, {git}");
    if problems.is_empty() {
        HostReport {
            level: Level::Ok,
            detail: found,
        }
    } else {
        HostReport {
            level: Level::Fail,
            detail: problems.join("; "),
        }
    }
}

/// Same `0.MINOR` before 1.0, same `MAJOR` after.
pub(crate) fn compatible(theirs: &str, ours: &str) -> bool {
    let parts = |v: &str| -> Option<(u64, u64)> {
        let mut it = v.split('.');
        Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
    };
    match (parts(theirs), parts(ours)) {
        (Some(t), Some(o)) if t.0 == 0 || o.0 == 0 => t == o,
        (Some(t), Some(o)) => t.0 == o.0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_compatible_within_a_release_line() {
        assert!(compatible("0.1.0", "0.1.7"));
        assert!(!compatible("0.2.0", "0.1.0"));
        assert!(compatible("1.4.0", "1.0.2"));
        assert!(!compatible("2.0.0", "1.9.9"));
        assert!(!compatible("x", "0.1.0"));
    }

    #[test]
    fn the_verdict_names_every_problem() {
        let ok = verdict("fm 0.1.0", "tmux 3.3a", "git version 2.39.5", "0.1.0");
        assert_eq!(ok.level, Level::Ok, "{ok:?}");
        assert_eq!(ok.detail, "fm 0.1.0, tmux 3.3a, git version 2.39.5");
        let bad = verdict(
            "sh: 1: fm: not found",
            "tmux 3.3a",
            "sh: git: not found",
            "0.1.0",
        );
        assert_eq!(bad.level, Level::Fail);
        assert_eq!(
            bad.detail,
            "firstmate not found there (sh: 1: fm: not found); git not found there (sh: git: not found)"
        );
        let old = verdict("fm 0.0.9", "tmux 3.3a", "git version 2", "0.1.0");
        assert_eq!(
            old.detail,
            "firstmate 0.0.9 there is not compatible with 0.1.0 here"
        );
    }

    #[test]
    fn the_far_doctor_raises_the_hosts_level_and_names_its_checks() {
        let ok = || HostReport {
            level: Level::Ok,
            detail: "fm 0.1.0".into(),
        };
        let clean = r#"[{"check":"tmux","level":"ok","detail":"x"},{"check":"home","level":"ok","detail":"/h"},{"check":"host z","level":"fail","detail":"down"}]"#;
        let r = with_far_doctor(ok(), "/h", clean);
        assert_eq!(r.level, Level::Ok, "{r:?}");
        assert_eq!(r.detail, "fm 0.1.0, home /h");
        let warned = r#"[{"check":"watcher","level":"warn","detail":"not running","new":1}]"#;
        let r = with_far_doctor(ok(), "/h", warned);
        assert_eq!(r.level, Level::Warn);
        assert_eq!(r.detail, "fm 0.1.0, home /h; there: watcher: not running");
        let failed = r#"[{"check":"home","level":"fail","detail":"missing"},{"check":"watcher","level":"warn","detail":"off"}]"#;
        let r = with_far_doctor(ok(), "/h", failed);
        assert_eq!(r.level, Level::Fail);
        assert_eq!(
            r.detail,
            "fm 0.1.0, home /h; there: home: missing; there: watcher: off"
        );
        let old_tmux = r#"[{"check":"tmux","level":"fail","detail":"tmux 2.9 is older than 3.0"}]"#;
        let r = with_far_doctor(ok(), "/h", old_tmux);
        assert_eq!(r.level, Level::Fail);
        assert_eq!(
            r.detail,
            "fm 0.1.0, home /h; there: tmux: tmux 2.9 is older than 3.0"
        );
        let r = with_far_doctor(ok(), "/h", "");
        assert_eq!(r.level, Level::Fail);
        assert_eq!(
            r.detail,
            "the far doctor of home /h gave no report (no output)"
        );
    }
}

//! `fm doctor`'s check of one configured host: reachable, firstmate
//! installed there and of a compatible version, tmux and git present —
//! one round trip (docs/remote.md, "Version compatibility").

use super::host::HostCfg;
use super::ssh::Ssh;
use crate::home::Home;
use crate::shq::quote;

/// The verdict for one host: whether it passes, and what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostReport {
    pub(crate) ok: bool,
    pub(crate) detail: String,
}

/// Checks every configured host, each on its own thread, so the doctor
/// costs the slowest host, not their sum; in the hosts' order.
pub(crate) fn check_all(home: &Home, hosts: &super::Hosts) -> Vec<(String, HostReport)> {
    std::thread::scope(|s| {
        let running: Vec<_> = hosts
            .iter()
            .map(|(name, cfg)| (name, s.spawn(move || check(home, name, cfg))))
            .collect();
        running
            .into_iter()
            .map(|(name, h)| {
                let r = h.join().unwrap_or_else(|_| HostReport {
                    ok: false,
                    detail: "the check panicked".into(),
                });
                (name.clone(), r)
            })
            .collect()
    })
}

/// Asks host `name` for `fm --version`, `tmux -V` and `git --version`.
pub(crate) fn check(home: &Home, name: &str, cfg: &HostCfg) -> HostReport {
    let fail = |detail: String| HostReport { ok: false, detail };
    let ssh = match Ssh::new(home, name, cfg) {
        Ok(s) => s,
        Err(e) => return fail(e.to_string()),
    };
    // Each probe prints one line of its own, prefixed, whatever it says.
    let probe =
        |key: &str, cmd: &str| format!("printf '{key}=%s\\n' \"$({cmd} 2>&1 | head -n 1)\"");
    let fm = format!("{} --version", quote(&cfg.tool("fm")));
    let line = [
        probe("fm", &fm),
        probe("tmux", "tmux -V"),
        probe("git", "git --version"),
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
    verdict(&fm, &tmux, &git, env!("CARGO_PKG_VERSION"))
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
            ok: true,
            detail: found,
        }
    } else {
        HostReport {
            ok: false,
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
        assert!(ok.ok, "{ok:?}");
        assert_eq!(ok.detail, "fm 0.1.0, tmux 3.3a, git version 2.39.5");
        let bad = verdict(
            "sh: 1: fm: not found",
            "tmux 3.3a",
            "sh: git: not found",
            "0.1.0",
        );
        assert!(!bad.ok);
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
}

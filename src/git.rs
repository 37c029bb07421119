//! git as a bounded subprocess (docs/spec/dod.md#gate, docs/spec/cli.md#boundaries), run by
//! [`crate::proc`]:
//! always an argument vector, never a shell, with git's environment rules
//! ([`crate::proc::Cmd::git`]); every call ends within [`TIMEOUT`] (the
//! child is killed and the call fails with [`Error::External`] when it
//! does not).
//!
//! Only the handful of read-only questions the tools ask live here.

use std::path::Path;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::proc::Cmd;

/// Bound on every git call.
pub const TIMEOUT: Duration = crate::proc::GIT_TIMEOUT;

/// What one git call produced (output with trailing whitespace trimmed).
#[derive(Debug, Clone)]
pub struct Output {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `git -C dir args…` with a [`TIMEOUT`] bound. A git that cannot be
/// started or runs too long is an error; a non-zero exit is not.
pub fn run(dir: &Path, args: &[&str]) -> Result<Output> {
    run_bounded(dir, args, TIMEOUT)
}

/// [`run`] with another time bound.
pub fn run_bounded(dir: &Path, args: &[&str], timeout: Duration) -> Result<Output> {
    let out = Cmd::git(dir).args(args).timeout(timeout).run()?;
    Ok(Output {
        ok: out.success(),
        stdout: out.stdout.trim_end().to_string(),
        stderr: out.stderr.trim_end().to_string(),
    })
}

/// Whether `reported` (a `git rev-parse --show-toplevel` line) is `dir`
/// itself. `git -C dir` searches upward, so a plain directory inside some
/// other repository would otherwise answer for that repository; both sides
/// are compared physically (symlinks resolved).
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: a repository's directories"
)]
pub fn is_toplevel(dir: &Path, reported: &str) -> bool {
    if reported.is_empty() {
        return false;
    }
    match (dir.canonicalize(), Path::new(reported).canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The error for a directory that is not the top level of a repository.
fn not_a_repo(dir: &Path) -> Error {
    Error::External {
        program: "git".into(),
        msg: format!("not a git repository ({})", dir.display()),
    }
}

/// The commit `HEAD` names in the repository whose top level is `dir`, or
/// `None` when there is none (an unborn branch). Errors when `dir` is not
/// the top level of a git repository — a directory nested inside another
/// repository included. One git call.
pub fn head(dir: &Path) -> Result<Option<String>> {
    let out = run(
        dir,
        &[
            "rev-parse",
            "--show-toplevel",
            "--verify",
            "--quiet",
            "HEAD^{commit}",
        ],
    )?;
    let mut lines = out.stdout.lines();
    if !is_toplevel(dir, lines.next().unwrap_or("").trim()) {
        return Err(not_a_repo(dir));
    }
    Ok(lines
        .next()
        .map(str::trim)
        .filter(|sha| out.ok && !sha.is_empty())
        .map(str::to_string))
}

/// The first ref under any of `prefixes` (e.g. `refs/remotes/`) in the
/// repository at `dir` that contains `sha`. A repository that lacks the
/// commit entirely contains it nowhere.
pub fn ref_containing(dir: &Path, sha: &str, prefixes: &[&str]) -> Result<Option<String>> {
    let mut args = vec![
        "for-each-ref",
        "--count=1",
        "--format=%(refname)",
        "--contains",
        sha,
    ];
    args.extend_from_slice(prefixes);
    let out = run(dir, &args)?;
    if !out.ok {
        return Ok(None);
    }
    Ok(out
        .stdout
        .lines()
        .next()
        .filter(|l| !l.is_empty())
        .map(str::to_string))
}

/// Where a new worktree of the project at `dir` starts when no base is
/// given: the branch `refs/remotes/origin/HEAD` points at, then
/// `configured` (config `brief.default_branch`), then `main`, then
/// `master` — the first that names a commit. `Err` lists what was tried.
pub fn default_base(dir: &Path, configured: &str) -> Result<std::result::Result<String, String>> {
    let origin = run(
        dir,
        &[
            "symbolic-ref",
            "--quiet",
            "--short",
            "refs/remotes/origin/HEAD",
        ],
    )?;
    let mut tried = vec!["refs/remotes/origin/HEAD".to_string()];
    let mut candidates = Vec::new();
    if origin.ok && !origin.stdout.is_empty() {
        candidates.push(origin.stdout.clone());
    }
    for name in [configured, "main", "master"] {
        if !name.is_empty() && !candidates.iter().any(|c| c == name) {
            candidates.push(name.to_string());
            tried.push(name.to_string());
        }
    }
    for c in candidates {
        let commit = format!("{c}^{{commit}}");
        if run(dir, &["rev-parse", "--verify", "--quiet", &commit])?.ok {
            return Ok(Ok(c));
        }
    }
    Ok(Err(tried.join(", ")))
}

/// Git fixtures for unit tests in this crate.
#[cfg(test)]
pub(crate) mod fixture {
    use std::path::Path;

    /// Runs git in `dir`, failing the test on an error.
    pub fn git(dir: &Path, args: &[&str]) {
        let out = super::run(dir, args).unwrap();
        assert!(out.ok, "git {args:?}: {}", out.stderr);
    }

    /// One empty commit on the current branch, with a throwaway identity.
    pub fn commit_empty(dir: &Path) {
        git(
            dir,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.invalid",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "x",
            ],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::{commit_empty, git};
    use super::*;

    #[test]
    fn a_hung_command_is_killed_within_the_bound() {
        let d = tempfile::tempdir().unwrap();
        // `git -C dir hash-object --stdin` would wait on stdin forever; stdin is
        // null here, so use a command that blocks on a fifo instead.
        let fifo = d.path().join("f");
        crate::fsx::test_fifo::make(&fifo);
        let t = std::time::Instant::now();
        let err = run_bounded(
            d.path(),
            &["hash-object", fifo.to_str().unwrap()],
            Duration::from_millis(300),
        )
        .unwrap_err();
        assert!(err.to_string().contains("timed out"), "{err}");
        assert!(t.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn not_a_repository_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let err = head(d.path()).unwrap_err();
        assert!(err.to_string().contains("not a git repository"), "{err}");
    }

    #[test]
    fn a_directory_inside_another_repository_is_not_one() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("r");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        assert_eq!(head(&repo).unwrap(), None, "unborn");
        commit_empty(&repo);
        let sha = head(&repo).unwrap().unwrap();
        assert_eq!(sha.len(), 40);
        let nested = repo.join("worktrees/t9");
        std::fs::create_dir_all(&nested).unwrap();
        let err = head(&nested).unwrap_err();
        assert!(err.to_string().contains("not a git repository"), "{err}");
        // Reached through a symlink, the top level is still itself.
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&repo, &link).unwrap();
        assert_eq!(head(&link).unwrap(), Some(sha));
    }
}

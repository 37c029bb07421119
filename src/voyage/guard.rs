//! What a local landing checks of the project's checkouts just before it
//! moves the target branch (docs/spec/land.md#land): that no worktree is
//! in the middle of a rebase or bisect of it, that the checkout about to
//! be fast-forwarded still has it checked out, and which files git
//! refused to overwrite.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Every worktree of the repository at `project` (the main one first),
/// from `git worktree list`.
pub(super) fn worktrees(project: &Path) -> Result<Vec<PathBuf>> {
    let list = super::work::git(project, &["worktree", "list", "--porcelain", "-z"])?;
    Ok(list
        .split('\0')
        .filter_map(|f| f.strip_prefix("worktree "))
        .map(PathBuf::from)
        .collect())
}

/// Refuses a landing on `target` (`refs/heads/<target>`) while a worktree
/// is rebasing or bisecting it: during a rebase the checkout shows a
/// detached `HEAD`, and `git rebase --abort` (or its end) would reset the
/// branch over the landing; a bisect checks the branch out again at its
/// end. A worktree git cannot read (gone from disk) holds no such state.
pub(super) fn not_in_use(project: &Path, target: &str) -> Result<()> {
    let target_ref = format!("refs/heads/{target}");
    for wt in worktrees(project)? {
        let Ok(out) = crate::git::run(
            &wt,
            &[
                "rev-parse",
                "--path-format=absolute",
                "--git-path",
                "rebase-merge/head-name",
                "--git-path",
                "rebase-apply/head-name",
                "--git-path",
                "BISECT_START",
            ],
        ) else {
            continue;
        };
        if !out.ok {
            continue;
        }
        let mut paths = out.stdout.lines().map(|l| PathBuf::from(l.trim()));
        let (merge, apply, bisect) = (paths.next(), paths.next(), paths.next());
        for (what, path) in [
            ("a rebase", merge),
            ("a rebase", apply),
            ("a bisect", bisect),
        ] {
            let Some(text) = path.as_deref().and_then(read_small) else {
                continue;
            };
            let named = text.trim();
            // A rebase names the ref, a bisect the branch it started on.
            if named == target_ref || named == target {
                return Err(Error::refused(format!(
                    "{target} is in the middle of {what} in {}: finish or abort it first \
                     (git would move {target} again at its end); nothing was landed",
                    wt.display()
                )));
            }
        }
    }
    Ok(())
}

/// A small state file of git's, if it exists.
fn read_small(p: &Path) -> Option<String> {
    // Outside the home: a state file in the project's git directory.
    #[expect(
        clippy::disallowed_methods,
        reason = "outside the home: the project's git directory"
    )]
    let bytes = std::fs::read(p).ok()?;
    Some(String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).into_owned())
}

/// Refuses unless the checkout `dir` still has `refs/heads/<target>`
/// checked out (it may have switched since it was found).
pub(super) fn still_checked_out(dir: &Path, target: &str) -> Result<()> {
    let out = crate::git::run(dir, &["symbolic-ref", "-q", "HEAD"])?;
    let head = out.stdout.trim();
    if out.ok && head == format!("refs/heads/{target}") {
        return Ok(());
    }
    Err(Error::refused(format!(
        "the checkout {} switched from {target} to {} meanwhile: land again; nothing was landed",
        dir.display(),
        if out.ok && !head.is_empty() {
            head.strip_prefix("refs/heads/").unwrap_or(head)
        } else {
            "a detached HEAD"
        }
    )))
}

/// The files git's refusal to merge lists as in the way (its lines that
/// start with a tab, after "would be overwritten" / "would be removed").
pub(super) fn in_the_way(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix('\t'))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_in_the_way_are_read_from_gits_refusal() {
        let err = "error: The following untracked working tree files would be overwritten by merge:\n\t.env\n\tconf/a b\nPlease move or remove them before you merge.\nAborting\n";
        assert_eq!(in_the_way(err), [".env", "conf/a b"]);
        assert!(in_the_way("fatal: Not possible to fast-forward\n").is_empty());
    }

    #[test]
    fn a_checkout_that_left_the_target_is_refused() {
        use crate::git::fixture::git;
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        git(dir, &["init", "-q", "-b", "main"]);
        git(
            dir,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@x",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "a",
            ],
        );
        still_checked_out(dir, "main").unwrap();
        git(dir, &["checkout", "-q", "-b", "other"]);
        let e = still_checked_out(dir, "main").unwrap_err();
        assert!(e.to_string().contains("switched from main to other"), "{e}");
        git(dir, &["checkout", "-q", "--detach"]);
        let e = still_checked_out(dir, "main").unwrap_err();
        assert!(e.to_string().contains("to a detached HEAD"), "{e}");
        not_in_use(dir, "main").unwrap();
    }
}

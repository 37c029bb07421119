//! A base branch behind its remote-tracking branch: a new worktree made
//! from it misses work that is already fetched. Reported at spawn, from
//! what was last fetched (no network).

use std::path::Path;

use super::super::git;

/// `(upstream, n)` when the local branch `base` has an upstream and lacks
/// `n > 0` of its commits; `None` for a base that is not a local branch
/// with an upstream, or is not behind it.
pub(crate) fn behind(project: &Path, base: &str) -> Option<(String, u64)> {
    let full = format!("refs/heads/{base}");
    let out = git(
        project,
        &[
            "for-each-ref",
            "--format=%(refname) %(upstream) %(upstream:short)",
            &full,
        ],
    )
    .ok()?;
    // Exactly that branch (for-each-ref also matches a prefix's children).
    let rest = out
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{full} ")))?;
    let (upstream, short) = rest.split_once(' ')?;
    if upstream.is_empty() {
        return None;
    }
    let count = git(
        project,
        &["rev-list", "--count", &format!("{full}..{upstream}")],
    )
    .ok()?;
    let n: u64 = count.trim().parse().ok()?;
    (n > 0).then(|| (short.to_string(), n))
}

/// The warning line for a base `n` commits behind `upstream`.
pub(crate) fn warning(project: &Path, base: &str, upstream: &str, n: u64) -> String {
    let commits = if n == 1 { "commit" } else { "commits" };
    let dir = crate::shq::quote_path(project);
    format!(
        "base {base} is {n} {commits} behind {upstream} as last fetched: the worktree starts without them; to update it, run `git -C {dir} pull --ff-only` (or `git -C {dir} fetch` to see newer work), or spawn with --base {upstream}"
    )
}

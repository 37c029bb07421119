//! The facts review and landing share about a task's branch: where git
//! is asked (the worktree, else the project clone), the branch and its
//! tip, the base commit and the branch the work goes back to
//! (docs/spec/land.md#base).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::meta::TaskMeta;
use crate::task_id::TaskId;

/// Bound on a git call that may walk much history (a diff, a push).
pub(crate) const LONG: Duration = Duration::from_secs(120);

/// A task's branch, resolved once.
#[derive(Debug, Clone)]
pub struct Work {
    /// Where git is asked: the worktree when it exists, else the project.
    pub(crate) repo: PathBuf,
    /// The captain's checkout (meta `project`).
    pub(crate) project: Option<PathBuf>,
    /// The branch, when it exists (`None`: the worktree's detached HEAD).
    pub(crate) branch: Option<String>,
    /// The commit reviewed and landed.
    pub(crate) tip: String,
    /// The worktree's `HEAD`, when the worktree exists: the commit the
    /// done gate checked.
    pub(crate) head: Option<String>,
    /// The commit the work started from.
    pub(crate) base: String,
    /// The branch the work goes back to (`main`), when one is known.
    pub(crate) target: Option<String>,
}

/// Runs git in `dir`; its stdout, or an error naming the command.
pub(crate) fn git(dir: &Path, args: &[&str]) -> Result<String> {
    git_bounded(dir, args, crate::git::TIMEOUT)
}

/// [`git`] with another bound.
pub(crate) fn git_bounded(dir: &Path, args: &[&str], limit: Duration) -> Result<String> {
    let out = crate::git::run_bounded(dir, args, limit)?;
    if !out.ok {
        return Err(Error::External {
            program: "git".into(),
            msg: format!("git {}: {}", args.join(" "), out.stderr.trim()),
        });
    }
    Ok(out.stdout)
}

/// The commit `rev` names in `dir`, if any.
pub(crate) fn commit_of(dir: &Path, rev: &str) -> Result<Option<String>> {
    let spec = format!("{rev}^{{commit}}");
    let out = crate::git::run(dir, &["rev-parse", "--verify", "--quiet", &spec])?;
    Ok((out.ok && !out.stdout.is_empty()).then(|| out.stdout.trim().to_string()))
}

/// Whether commit `a` is an ancestor of (or equal to) commit `b`.
pub(crate) fn is_ancestor(dir: &Path, a: &str, b: &str) -> Result<bool> {
    Ok(crate::git::run(dir, &["merge-base", "--is-ancestor", a, b])?.ok)
}

/// The branch a base ref names: `main` for `main` or `origin/main`, when
/// the project has that local branch.
fn target_of(dir: &Path, base_ref: &str) -> Result<Option<String>> {
    let mut names = vec![base_ref.to_string()];
    if let Some((_, rest)) = base_ref.split_once('/') {
        names.push(rest.to_string());
    }
    for n in names {
        if crate::brief::validate_branch(&n).is_ok()
            && commit_of(dir, &format!("refs/heads/{n}"))?.is_some()
        {
            return Ok(Some(n));
        }
    }
    Ok(None)
}

impl Work {
    /// Resolves task `id`'s branch from its meta (and brief, for the
    /// branch name). A task with no worktree and no project, or no commit
    /// to show, is refused (exit 1).
    pub fn of(home: &Home, cfg: &Config, id: &TaskId, meta: &TaskMeta) -> Result<Work> {
        let worktree = crate::meta::worktree_of(home, cfg, id, meta);
        let has_worktree =
            crate::fsx::is_dir(&worktree).unwrap_or(false) && crate::git::head(&worktree).is_ok();
        let repo = match (&meta.project, has_worktree) {
            (_, true) => worktree.clone(),
            (Some(p), false) => p.clone(),
            (None, false) => {
                return Err(Error::refused(format!(
                    "{id} has no worktree ({}) and no project recorded: nothing to review",
                    worktree.display()
                )));
            }
        };
        let name = meta.branch.clone().or_else(|| {
            crate::brief::BriefHeader::of_task(home, id)
                .ok()
                .and_then(|h| h.branch)
        });
        let name = name.filter(|n| !n.is_empty());
        if let Some(n) = &name
            && let Err(e) = crate::brief::validate_branch(n)
        {
            // A name git would not take as a branch (`main~1`) must not
            // reach rev-parse, where it would name another commit.
            return Err(Error::refused(format!(
                "{id}: the branch its meta or brief records is refused: {e}"
            )));
        }
        let head = if has_worktree {
            crate::git::head(&worktree)?
        } else {
            None
        };
        let mut branch = None;
        let mut tip = None;
        if let Some(n) = name
            && let Some(sha) = commit_of(&repo, &format!("refs/heads/{n}"))?
        {
            branch = Some(n);
            tip = Some(sha);
        }
        if tip.is_none() {
            tip.clone_from(&head);
        }
        let Some(tip) = tip else {
            return Err(Error::refused(format!(
                "{id} has no branch and no commit in {}",
                repo.display()
            )));
        };
        let base_ref = meta.raw.get("base_ref").map_or("", str::trim);
        let mut target = if base_ref.is_empty() {
            None
        } else {
            target_of(&repo, base_ref)?
        };
        if target.is_none() {
            let dir = meta.project.as_deref().unwrap_or(&repo);
            if let Ok(name) = crate::git::default_base(dir, &cfg.brief.default_branch)? {
                target = target_of(&repo, &name)?;
            }
        }
        let recorded = meta.raw.get("base").map_or("", str::trim);
        // Only a commit id is asked of git (a hand-edited value is no option).
        let recorded = if recorded.is_empty() || !recorded.bytes().all(|b| b.is_ascii_hexdigit()) {
            None
        } else {
            commit_of(&repo, recorded)?
        };
        let base = if let Some(sha) = recorded {
            sha
        } else {
            // A task spawned before `base=` was recorded: where the
            // branch left its target.
            let Some(t) = &target else {
                return Err(Error::refused(format!(
                    "{id}: no base recorded and no base branch found (tried {})",
                    if base_ref.is_empty() {
                        cfg.brief.default_branch.as_str()
                    } else {
                        base_ref
                    }
                )));
            };
            git(&repo, &["merge-base", &format!("refs/heads/{t}"), &tip])?
                .trim()
                .to_string()
        };
        Ok(Work {
            repo,
            project: meta.project.clone(),
            branch,
            tip,
            head,
            base,
            target,
        })
    }

    /// Refuses work whose worktree has moved away from the branch: the
    /// done gate checked the worktree's `HEAD`, and what is delivered is
    /// the branch's tip; they must be one commit.
    pub(crate) fn checked_is_tip(&self, id: &str) -> Result<()> {
        match (&self.head, &self.branch) {
            (Some(head), Some(b)) if *head != self.tip => Err(Error::refused(format!(
                "the worktree of {id} is at {} but its branch {b} is at {}: the done gate \
                 checked the worktree's HEAD, not the branch: check {b} out there (or move \
                 {b} to that commit) and land again; nothing was landed",
                short(head),
                short(&self.tip)
            ))),
            _ => Ok(()),
        }
    }

    /// The branch as shown: its name, else `HEAD`.
    pub(crate) fn shown(&self) -> &str {
        self.branch.as_deref().unwrap_or("HEAD")
    }
}

/// The first 12 digits of a commit.
pub(crate) fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

//! `fm land` (docs/spec/land.md#land): delivers a task's branch the way
//! its mode says, and only what the done gate accepts.
//!
//! - `local-only`: the project's base branch is fast-forwarded to the
//!   branch (with `merge`, a merge commit when it is not a fast-forward).
//!   A checkout of the base branch with uncommitted changes is a refusal,
//!   never a stash; a base branch no checkout holds is moved with
//!   `git update-ref <new> <old>` (the old value checked).
//! - `direct-PR`: the branch is pushed to `origin` and a pull request
//!   opened with `gh` when it is installed and signed in; a PR the task
//!   already names (meta `pr`, the done line) is kept.
//! - `no-mistakes`: the validation pipeline pushed and opened the PR;
//!   the gate's accepted `PR <url> checks green` is recorded, nothing
//!   pushed.
//!
//! Every refusal is decided before anything changes (docs/voyage.md);
//! what changed is recorded once: meta `landed=<commit>`, a `note`
//! status line and a `task.landed` event.

use serde::{Deserialize, Serialize};

use super::guard;
use super::work::{self, Work, commit_of, git, is_ancestor, short};
use crate::config::Config;
use crate::dod::Verdict;
use crate::error::{Error, Result};
use crate::events::{Entry, Event, Tool};
use crate::home::Home;
use crate::meta::{Mode, TaskMeta};
use crate::proc::Cmd;
use crate::route::Task;
use crate::route::dod::{CheckRequest, check_here};

/// What a landing asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandRequest {
    /// local-only: a merge commit when the base branch has moved on.
    #[serde(default)]
    pub merge: bool,
    /// Who lands (recorded in the event and the status line's event).
    #[serde(default)]
    pub actor: String,
}

/// How the work was delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum How {
    /// The base branch moved forward to the branch's tip.
    FastForward,
    /// A merge commit joined the branch into the base branch.
    Merge,
    /// The base branch already held the tip: nothing moved.
    Already,
    /// The branch was pushed (and a pull request opened or named).
    Pushed,
    /// no-mistakes: the validation pipeline pushed and opened the PR;
    /// its green checks are recorded as the landing, nothing is pushed.
    Recorded,
}

impl How {
    pub fn as_str(self) -> &'static str {
        match self {
            How::FastForward => "fast-forward",
            How::Merge => "merge",
            How::Already => "already",
            How::Pushed => "pushed",
            How::Recorded => "recorded",
        }
    }
}

/// What a landing did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Landed {
    pub task: String,
    pub mode: String,
    pub how: How,
    /// The branch's tip that was landed (meta `landed`).
    pub commit: String,
    pub branch: Option<String>,
    /// local-only: the base branch moved; PR modes: the PR's base.
    pub target: Option<String>,
    /// The merge commit made (`--merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_commit: Option<String>,
    /// The pull request, when one is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr: Option<String>,
    /// How to open the pull request by hand, when `gh` could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_pr: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Landed {
    /// One line (then the hint and warnings, each on its own line).
    pub fn text(&self) -> String {
        let b = self.branch.as_deref().unwrap_or("HEAD");
        let t = self.target.as_deref().unwrap_or("?");
        let c = short(&self.commit);
        let mut s = match self.how {
            How::FastForward => format!("landed {}: {t} fast-forwarded to {c} ({b})", self.task),
            How::Merge => format!(
                "landed {}: merged {b} ({c}) into {t} as {}",
                self.task,
                short(self.merge_commit.as_deref().unwrap_or(""))
            ),
            How::Already => format!("landed {}: {t} already holds {c} ({b})", self.task),
            How::Pushed => match &self.pr {
                Some(pr) => format!("landed {}: pushed {b} ({c}); PR {pr}", self.task),
                None => format!("landed {}: pushed {b} ({c}); no PR opened", self.task),
            },
            How::Recorded => format!(
                "landed {}: {b} ({c}) delivered by its pipeline; PR {}",
                self.task,
                self.pr.as_deref().unwrap_or("?")
            ),
        };
        if let Some(h) = &self.open_pr {
            s.push_str(&format!("\nopen the PR: {h}"));
        }
        for w in &self.warnings {
            s.push_str(&format!("\nwarning: {w}"));
        }
        s
    }
}

/// Lands `task`, which lives here (the grant, when one is needed, is the
/// caller's: [`crate::route::land::land`]).
pub fn land_here(home: &Home, cfg: &Config, task: &Task, req: &LandRequest) -> Result<Landed> {
    task.here()?;
    let id = task.id();
    if !crate::meta::task_known(home, id)? {
        return Err(crate::error::Error::refused(format!(
            "unknown task {id}: no meta and no brief"
        )));
    }
    let meta = TaskMeta::load(home, id)?.unwrap_or_default();
    let check = check_here(home, cfg, task, &CheckRequest { line: None })?;
    match &check.verdict {
        Verdict::Accepted(_) => {}
        Verdict::Refused(why) => {
            return Err(Error::refused(format!(
                "the done gate refuses {id}: {why}; nothing was landed"
            )));
        }
        Verdict::NotGated(why) => {
            return Err(Error::refused(format!(
                "{id} has no gated done to land ({why}); nothing was landed"
            )));
        }
    }
    let w = Work::of(home, cfg, id, &meta)?;
    w.checked_is_tip(id.as_str())?;
    let mode = crate::dod::gate::mode_of(home, id, &meta);
    let mut landed = match mode {
        Some(Mode::LocalOnly) => local(&w, id.as_str(), req.merge)?,
        Some(Mode::DirectPr) => {
            let line = check.line.as_deref().unwrap_or("");
            pull_request(&w, &meta, line)?
        }
        Some(Mode::NoMistakes) => {
            let line = check.line.as_deref().unwrap_or("");
            pipeline(&w, &meta, line)
        }
        None => {
            return Err(Error::refused(format!(
                "{id} records no delivery mode ({}): nothing was landed",
                crate::meta::MODES
            )));
        }
    };
    landed.task = id.to_string();
    landed.mode = mode.map_or("", Mode::as_str).to_string();
    // A landing asked again records nothing new: only the first one of
    // this commit gets the status note and the event.
    let first = meta.raw.get("landed").map(str::trim) != Some(landed.commit.as_str());
    record(home, cfg, id, &landed, &req.actor, first)?;
    Ok(landed)
}

fn blank(w: &Work, how: How) -> Landed {
    Landed {
        task: String::new(),
        mode: String::new(),
        how,
        commit: w.tip.clone(),
        branch: w.branch.clone(),
        target: w.target.clone(),
        merge_commit: None,
        pr: None,
        open_pr: None,
        warnings: Vec::new(),
    }
}

/// local-only: the base branch moves to the tip (or a merge of it).
fn local(w: &Work, id: &str, merge: bool) -> Result<Landed> {
    let Some(project) = &w.project else {
        return Err(Error::refused(format!(
            "{id} records no project: no base branch to land on"
        )));
    };
    let Some(target) = &w.target else {
        return Err(Error::refused(format!(
            "no base branch found in {} to land {id} on",
            project.display()
        )));
    };
    let target_ref = format!("refs/heads/{target}");
    let Some(old) = commit_of(project, &target_ref)? else {
        return Err(Error::refused(format!(
            "no branch {target} in {}",
            project.display()
        )));
    };
    if is_ancestor(project, &w.tip, &old)? {
        return Ok(blank(w, How::Already));
    }
    guard::not_in_use(project, target)?;
    let checkout = checkout_of(project, &target_ref)?;
    if let Some(dir) = &checkout {
        let dirty = git(
            dir,
            &[
                "status",
                "--porcelain",
                "-z",
                "--no-renames",
                "--untracked-files=no",
            ],
        )?;
        let paths: Vec<&str> = dirty
            .split('\0')
            .filter(|r| r.len() > 3)
            .map(|r| &r[3..])
            .collect();
        if !paths.is_empty() {
            return Err(Error::refused(format!(
                "{target} is checked out in {} with uncommitted changes ({}): commit or \
                 put them away first; nothing was landed",
                dir.display(),
                paths.join(", ")
            )));
        }
    }
    let (new, how, merge_commit) = if is_ancestor(project, &old, &w.tip)? {
        (w.tip.clone(), How::FastForward, None)
    } else if !merge {
        return Err(Error::refused(format!(
            "{target} ({}) has moved on: {} ({}) is not a fast-forward of it; rebase the \
             branch onto {target}, or land with --merge for a merge commit; nothing was landed",
            short(&old),
            w.shown(),
            short(&w.tip)
        )));
    } else {
        let m = merge_commit(project, &old, w, target, id)?;
        (m.clone(), How::Merge, Some(m))
    };
    if let Some(dir) = &checkout {
        guard::still_checked_out(dir, target)?;
        // Not git's default `--overwrite-ignore`: an ignored file of the
        // captain's (a `.env`) the branch tracks is in the way too.
        let out = crate::git::run_bounded(
            dir,
            &[
                "merge",
                "--ff-only",
                "--no-overwrite-ignore",
                "--quiet",
                &new,
            ],
            work::LONG,
        )?;
        if !out.ok {
            let files = guard::in_the_way(&out.stderr);
            if !files.is_empty() {
                return Err(Error::refused(format!(
                    "git refused to move the checkout {} of {target}: untracked or ignored \
                     files there would be overwritten ({}): move them away first; nothing was \
                     landed",
                    dir.display(),
                    files.join(", ")
                )));
            }
            return Err(Error::refused(format!(
                "git refused to move the checkout {} of {target}: {}; nothing was landed",
                dir.display(),
                out.stderr.trim()
            )));
        }
    } else {
        let msg = format!("fm land {id}");
        git(
            project,
            &["update-ref", "-m", &msg, &target_ref, &new, &old],
        )?;
    }

    let mut l = blank(w, how);
    l.merge_commit = merge_commit;
    Ok(l)
}

/// The checkout (of any worktree of the project) that has `target_ref`
/// checked out.
fn checkout_of(project: &std::path::Path, target_ref: &str) -> Result<Option<std::path::PathBuf>> {
    let list = git(project, &["worktree", "list", "--porcelain", "-z"])?;
    let mut path = None;
    for field in list.split('\0') {
        if let Some(p) = field.strip_prefix("worktree ") {
            path = Some(std::path::PathBuf::from(p));
        } else if field.strip_prefix("branch ") == Some(target_ref) {
            return Ok(path);
        }
    }
    Ok(None)
}

/// A merge commit of `w.tip` into `old`, made without touching any
/// checkout: the tree by `git merge-tree`, the commit by `commit-tree`.
/// Conflicts are a refusal naming the files.
fn merge_commit(
    project: &std::path::Path,
    old: &str,
    w: &Work,
    target: &str,
    id: &str,
) -> Result<String> {
    let out = crate::git::run_bounded(
        project,
        &[
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            old,
            &w.tip,
        ],
        work::LONG,
    )?;
    let mut lines = out.stdout.lines();
    let tree = lines.next().unwrap_or("").trim().to_string();
    if !out.ok {
        let files: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
        if files.is_empty() || tree.len() < 40 {
            return Err(Error::External {
                program: "git".into(),
                msg: format!("git merge-tree: {}", out.stderr.trim()),
            });
        }
        return Err(Error::refused(format!(
            "merging {} into {target} conflicts in {}: rebase the branch onto {target}; \
             nothing was landed",
            w.shown(),
            files.join(", ")
        )));
    }
    let msg = format!("Merge branch '{}' into {target} (fm land {id})", w.shown());
    Ok(git(
        project,
        &["commit-tree", &tree, "-p", old, "-p", &w.tip, "-m", &msg],
    )?
    .trim()
    .to_string())
}

/// no-mistakes: the pipeline owns the branch and its PR (it may have
/// rewritten the branch): the accepted `PR <url> checks green` is
/// recorded, nothing pushed, no PR opened.
fn pipeline(w: &Work, meta: &TaskMeta, done_line: &str) -> Landed {
    let mut l = blank(w, How::Recorded);
    l.pr = crate::dod::pr_url(done_line)
        .map(str::to_string)
        .or_else(|| meta.pr.clone());
    l
}

/// direct-PR: push the branch; open a PR with `gh`
/// unless one is known.
fn pull_request(w: &Work, meta: &TaskMeta, done_line: &str) -> Result<Landed> {
    let Some(branch) = &w.branch else {
        return Err(Error::refused(
            "the worktree has no branch to push (its HEAD is detached); nothing was landed",
        ));
    };
    let url = crate::git::run(&w.repo, &["remote", "get-url", "origin"])?;
    if !url.ok {
        return Err(Error::refused(
            "the project has no remote origin to push to; nothing was landed",
        ));
    }
    let spec = push_spec(w, branch);
    let pushed = crate::git::run_bounded(
        &w.repo,
        &["push", "--quiet", "-u", "origin", &spec],
        work::LONG,
    )?;
    if !pushed.ok {
        return Err(Error::refused(format!(
            "git push of {branch} to origin failed: {}; nothing was landed",
            pushed.stderr.trim()
        )));
    }
    // `-u` sets no upstream for a commit pushed by id: set it as `-u`
    // would have (best effort; the push is what counts).
    let upstream = format!("refs/remotes/origin/{branch}");
    let _ = crate::git::run(
        &w.repo,
        &["branch", "--quiet", "--set-upstream-to", &upstream, branch],
    );
    let mut l = blank(w, How::Pushed);
    let base = w.target.clone().unwrap_or_else(|| "main".into());
    l.target = Some(base.clone());
    let known = meta
        .pr
        .clone()
        .or_else(|| crate::dod::pr_url(done_line).map(str::to_string));
    if let Some(pr) = known {
        l.pr = Some(pr);
        return Ok(l);
    }
    let command = format!(
        "gh pr create --head {} --base {} --fill",
        word(branch),
        word(&base)
    );
    if let Err(why) = gh_ready() {
        l.open_pr = Some(match compare_url(&url.stdout, &base, branch) {
            Some(u) => format!("{u} (or: {command}); {why}"),
            None => format!("{command}; {why}"),
        });
    } else {
        let out = Cmd::new("gh")
            .args(["pr", "create", "--head", branch, "--base", &base, "--fill"])
            .cwd(&w.repo)
            .timeout(work::LONG)
            .run();
        match out {
            Ok(o) if o.success() => {
                l.pr = o
                    .stdout
                    .lines()
                    .rev()
                    .map(str::trim)
                    .find(|s| s.starts_with("https://"))
                    .map(str::to_string);
                if l.pr.is_none() {
                    l.warnings.push("gh pr create printed no PR URL".into());
                }
            }
            Ok(o) => {
                l.open_pr = Some(command);
                l.warnings.push(format!(
                    "gh pr create failed: {}",
                    o.stderr.trim().lines().last().unwrap_or("")
                ));
            }
            Err(e) => {
                l.open_pr = Some(command);
                l.warnings.push(format!("gh pr create failed: {e}"));
            }
        }
    }
    Ok(l)
}

/// What direct-PR pushes: the commit the gate checked, by id, not
/// whatever the branch names by now.
fn push_spec(w: &Work, branch: &str) -> String {
    format!("{}:refs/heads/{branch}", w.tip)
}

/// `s` as one shell word: as it is when plain, else quoted.
fn word(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/-_.".contains(&b))
    {
        s.to_string()
    } else {
        crate::shq::quote(s)
    }
}

/// `gh` is on PATH and signed in; else why not.
fn gh_ready() -> std::result::Result<(), String> {
    if !crate::harness::program_exists("gh", std::env::var_os("PATH").as_deref()) {
        return Err("gh is not installed".into());
    }
    match Cmd::new("gh").args(["auth", "status"]).run() {
        Ok(o) if o.success() => Ok(()),
        Ok(_) => Err("gh is not signed in (gh auth login)".into()),
        Err(e) => Err(format!("gh auth status failed: {e}")),
    }
}

/// A forge's compare page for a GitHub remote (`git@github.com:o/r.git`,
/// `https://github.com/o/r`).
fn compare_url(remote: &str, base: &str, branch: &str) -> Option<String> {
    let r = remote.trim();
    let path = r
        .strip_prefix("git@github.com:")
        .or_else(|| r.strip_prefix("https://github.com/"))
        .or_else(|| r.strip_prefix("ssh://git@github.com/"))?;
    let path = path.trim_end_matches('/').trim_end_matches(".git");
    Some(format!(
        "https://github.com/{path}/compare/{}...{}?expand=1",
        url_path(base),
        url_path(branch)
    ))
}

/// `s` percent-encoded for a URL's path, its `/` kept.
fn url_path(s: &str) -> String {
    s.bytes().fold(String::new(), |mut out, b| {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
        out
    })
}

/// Meta `landed` (and `pr`, `pr_head` for a PR opened now), and when
/// this is the `first` landing of the commit a `note` status line and the
/// `task.landed` event.
fn record(
    home: &Home,
    cfg: &Config,
    id: &crate::task_id::TaskId,
    l: &Landed,
    actor: &str,
    first: bool,
) -> Result<()> {
    let actor = if actor.is_empty() { "captain" } else { actor };
    crate::meta::update(home, id, |m| {
        m.set("landed", &l.commit);
        if let Some(pr) = &l.pr
            && m.get("pr").is_none_or(|p| p.trim().is_empty())
        {
            m.set("pr", pr);
            m.set("pr_head", &l.commit);
        }
    })?;
    if !first {
        return Ok(());
    }
    let now = crate::clock::now();
    let target = l.target.as_deref().unwrap_or("?");
    let text = match l.how {
        How::Pushed | How::Recorded => format!(
            "landed {} {}{}",
            short(&l.commit),
            l.how.as_str(),
            l.pr.as_deref()
                .map(|p| format!(", PR {p}"))
                .unwrap_or_default()
        ),
        how => format!("landed {} on {target} ({})", short(&l.commit), how.as_str()),
    };
    crate::status::Append::new("note", now, None, &text, &cfg.brief.paused_verb)
        .map_err(|e| crate::error::naming(e, id.as_str()))?
        .write(home, id, Tool::Fm, actor, now)?;
    let event = Event::TaskLanded {
        commit: l.commit.clone(),
        mode: l.mode.clone(),
        how: l.how.as_str(),
        target: l.target.clone(),
        pr: l.pr.clone(),
    };
    Entry::new(now, Tool::Fm, id.as_str(), event)
        .by(actor)
        .record(home);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_pr_pushes_the_checked_commit_by_id() {
        let tip = "0123456789abcdef0123456789abcdef01234567";
        let w = Work {
            repo: "/r".into(),
            project: None,
            branch: Some("fm/t1".into()),
            tip: tip.into(),
            head: Some(tip.into()),
            base: String::new(),
            target: None,
        };
        assert_eq!(push_spec(&w, "fm/t1"), format!("{tip}:refs/heads/fm/t1"));
    }

    #[test]
    fn a_github_remote_gives_a_compare_page() {
        for r in [
            "git@github.com:o/r.git",
            "https://github.com/o/r",
            "https://github.com/o/r.git/",
        ] {
            assert_eq!(
                compare_url(r, "main", "fm/t1").as_deref(),
                Some("https://github.com/o/r/compare/main...fm/t1?expand=1"),
                "{r}"
            );
        }
        assert_eq!(compare_url("/srv/git/r.git", "main", "b"), None);
        assert_eq!(
            compare_url("git@github.com:o/r.git", "rel 1", "fm/a#b?c&d%").as_deref(),
            Some("https://github.com/o/r/compare/rel%201...fm/a%23b%3Fc%26d%25?expand=1")
        );
    }
}

//! STAND-IN for the §8.2 done gate, until the library's own `dod` module
//! provides it; crew state only needs a [`Gate`] verdict as an input, so
//! swapping this for the real gate changes one function pointer.
//!
//! It follows SPEC §8.2: only `kind=ship` is gated; the no-mistakes
//! hand-off (no `PR` + `checks green`) is not; the named head is the
//! worktree's HEAD; a recorded `pr`/`pr_head` shortcut in no-mistakes mode;
//! otherwise HEAD must be contained in a `refs/remotes/*` ref of the
//! worktree or the project clone (`refs/heads/*` of the clone also count
//! for local-only). git runs with an argument vector and a 10 s bound.

use std::path::Path;
use std::process::Command;

use super::facts::{GIT_TIMEOUT, worktree_path};
use super::resolve::Gate;
use crate::config::Config;
use crate::home::Home;
use crate::meta::Meta;
use crate::pane::run_bounded;
use crate::task_id::TaskId;

fn git(dir: &Path, args: &[&str]) -> Option<(i32, String)> {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir).args(args);
    let (code, out, _) = run_bounded(cmd, GIT_TIMEOUT).ok()?;
    Some((code?, out))
}

fn contained(dir: &Path, sha: &str, patterns: &[&str]) -> bool {
    let mut args = vec!["for-each-ref", "--format=%(refname)", "--contains", sha];
    args.extend_from_slice(patterns);
    matches!(git(dir, &args), Some((0, out)) if !out.trim().is_empty())
}

/// The verdict on `line` (a `done` status line) of task `id`.
pub fn gate(home: &Home, cfg: &Config, id: &TaskId, meta: &Meta, line: &str) -> Gate {
    if meta.kind() != "ship" {
        return Gate::NotGated;
    }
    let text = line.split_once(':').map(|(_, t)| t.trim()).unwrap_or(line);
    let mode = meta.str("mode");
    let names_pr = text.split_whitespace().any(|w| w == "PR");
    if mode == "no-mistakes" && !(names_pr && text.contains("checks green")) {
        return Gate::NotGated;
    }
    let wt = worktree_path(home, cfg, id, meta);
    if !wt.is_dir() {
        return Gate::Refused(format!("worktree missing ({})", wt.display()));
    }
    match git(&wt, &["rev-parse", "--git-dir"]) {
        Some((0, _)) => {}
        _ => {
            return Gate::Refused(format!(
                "worktree is not a git repository ({})",
                wt.display()
            ));
        }
    }
    let head = match git(&wt, &["rev-parse", "--verify", "-q", "HEAD"]) {
        Some((0, out)) if !out.trim().is_empty() => out.trim().to_string(),
        _ => return Gate::Refused(format!("worktree has no HEAD ({})", wt.display())),
    };
    if mode == "no-mistakes" && !meta.str("pr").is_empty() && !meta.str("pr_head").is_empty() {
        let mut words = text.split_whitespace();
        while let Some(w) = words.next() {
            if w == "PR" && words.next() == Some(meta.str("pr")) {
                return Gate::Accepted;
            }
        }
    }
    if contained(&wt, &head, &["refs/remotes"]) {
        return Gate::Accepted;
    }
    let project = meta.str("project");
    if !project.is_empty() {
        let p = Path::new(project);
        let mut patterns = vec!["refs/remotes"];
        if mode == "local-only" {
            patterns.push("refs/heads");
        }
        if contained(p, &head, &patterns) {
            return Gate::Accepted;
        }
    }
    Gate::Refused(format!(
        "named head {head} is unreachable outside the worker copy"
    ))
}

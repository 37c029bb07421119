//! `fm review` (docs/spec/land.md#review): what a worker changed — the
//! commits from its base to its branch, a stat per file, the patch —,
//! whether the branch is pushed, and the done gate's verdict beside it.
//!
//! The report is data ([`Review`]); the human form ([`Review::text`]) and
//! the JSON summary are both made from it. Worker-written text (subjects,
//! paths, the patch) is sanitised where it is shown, and the patch is
//! coloured by this module, line by line, never by git: a control
//! sequence inside a changed file reaches the terminal made harmless.

use serde::{Deserialize, Serialize};

use super::work::{self, Work, git, git_bounded, short};
use crate::config::Config;
use crate::dod::Verdict;
use crate::error::Result;
use crate::home::Home;
use crate::output::{Sgr, Text, sanitize};
use crate::route::Task;
use crate::route::dod::{CheckRequest, check_here};

/// The most patch bytes a review carries; past it the patch is cut (and
/// `patch_truncated` set).
pub const MAX_PATCH: usize = 4 << 20;

/// What a review asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewRequest {
    /// Include the patch (the JSON summary does not).
    #[serde(default)]
    pub patch: bool,
}

/// One commit of the branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    pub sha: String,
    pub subject: String,
}

/// One file's change; `null` counts for a binary file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStat {
    pub path: String,
    pub added: Option<u64>,
    pub deleted: Option<u64>,
}

/// Where the branch stands against its remote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PushState {
    /// The remote branch holds exactly the tip.
    Pushed,
    /// The tip has commits the remote branch lacks (and maybe the other way).
    Ahead,
    /// The remote branch has commits the tip lacks, and the tip none of its own.
    Behind,
    /// The project has a remote, but no branch of this name on it.
    NotPushed,
    /// The project has no remote at all.
    NoRemote,
}

/// The branch against its remote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pushed {
    pub state: PushState,
    /// The remote-tracking ref compared (`origin/fm/t1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_ref: Option<String>,
    #[serde(default)]
    pub ahead: u64,
    #[serde(default)]
    pub behind: u64,
}

/// A task's review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Review {
    pub task: String,
    /// The branch (`null`: the worktree's detached HEAD).
    pub branch: Option<String>,
    pub tip: String,
    pub base: String,
    /// The branch the work goes back to, when known.
    pub target: Option<String>,
    pub commits: Vec<Commit>,
    pub files: Vec<FileStat>,
    pub pushed: Pushed,
    /// The done gate on the task's latest `done` line.
    pub gate: Verdict,
    /// The commit `fm land` landed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landed: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub patch_truncated: bool,
}

/// Reviews `task`, which lives here.
pub fn review_here(home: &Home, cfg: &Config, task: &Task, req: &ReviewRequest) -> Result<Review> {
    task.here()?;
    let id = task.id();
    if !crate::meta::task_known(home, id)? {
        return Err(crate::error::Error::refused(format!(
            "unknown task {id}: no meta and no brief"
        )));
    }
    let meta = crate::meta::TaskMeta::load(home, id)?.unwrap_or_default();
    let w = Work::of(home, cfg, id, &meta)?;
    let range = format!("{}..{}", w.base, w.tip);
    let log = git_bounded(
        &w.repo,
        &["log", "--no-color", "--format=%H%x09%s", &range, "--"],
        work::LONG,
    )?;
    let commits = log
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(sha, subject)| Commit {
            sha: sha.to_string(),
            subject: subject.to_string(),
        })
        .collect();
    let numstat = git_bounded(
        &w.repo,
        &[
            "diff",
            "--no-ext-diff",
            "--no-renames",
            "--numstat",
            "-z",
            &w.base,
            &w.tip,
            "--",
        ],
        work::LONG,
    )?;
    let files = parse_numstat(&numstat);
    let (patch, patch_truncated) = if req.patch {
        let mut p = git_bounded(
            &w.repo,
            &[
                "diff",
                "--no-ext-diff",
                "--no-renames",
                "--no-color",
                &w.base,
                &w.tip,
                "--",
            ],
            work::LONG,
        )?;
        let cut = p.len() > MAX_PATCH;
        if cut {
            let mut end = MAX_PATCH;
            while !p.is_char_boundary(end) {
                end -= 1;
            }
            p.truncate(end);
        }
        (Some(p), cut)
    } else {
        (None, false)
    };
    let pushed = pushed(&w)?;
    let gate = check_here(home, cfg, task, &CheckRequest { line: None })?.verdict;
    Ok(Review {
        task: id.to_string(),
        branch: w.branch.clone(),
        tip: w.tip.clone(),
        base: w.base.clone(),
        target: w.target.clone(),
        commits,
        files,
        pushed,
        gate,
        landed: meta
            .raw
            .get("landed")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        patch,
        patch_truncated,
    })
}

/// `git diff --numstat -z`: `added\tdeleted\tpath\0` per file (`-` for
/// a binary file's counts).
fn parse_numstat(out: &str) -> Vec<FileStat> {
    out.split('\0')
        .filter_map(|rec| {
            let rec = rec.trim_start_matches('\n');
            let mut f = rec.splitn(3, '\t');
            let (a, d, p) = (f.next()?, f.next()?, f.next()?);
            Some(FileStat {
                path: p.to_string(),
                added: a.parse().ok(),
                deleted: d.parse().ok(),
            })
        })
        .collect()
}

/// The branch against its upstream, else `<remote>/<branch>` of the
/// first remote (`origin` first).
fn pushed(w: &Work) -> Result<Pushed> {
    let remotes = git(&w.repo, &["remote"])?;
    let remotes: Vec<&str> = remotes
        .lines()
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .collect();
    if remotes.is_empty() {
        return Ok(Pushed {
            state: PushState::NoRemote,
            remote_ref: None,
            ahead: 0,
            behind: 0,
        });
    }
    let not_pushed = Pushed {
        state: PushState::NotPushed,
        remote_ref: None,
        ahead: 0,
        behind: 0,
    };
    let Some(branch) = &w.branch else {
        return Ok(not_pushed);
    };
    let local = format!("refs/heads/{branch}");
    let upstream = git(&w.repo, &["for-each-ref", "--format=%(upstream)", &local])?;
    let remote = if remotes.contains(&"origin") {
        "origin"
    } else {
        remotes[0]
    };
    let candidate = match upstream.trim() {
        u if u.starts_with("refs/remotes/") => u.to_string(),
        _ => format!("refs/remotes/{remote}/{branch}"),
    };
    let Some(theirs) = work::commit_of(&w.repo, &candidate)? else {
        return Ok(not_pushed);
    };
    let counts = git(
        &w.repo,
        &[
            "rev-list",
            "--left-right",
            "--count",
            &format!("{}...{theirs}", w.tip),
        ],
    )?;
    let mut n = counts
        .split_whitespace()
        .map(|x| x.parse::<u64>().unwrap_or(0));
    let (ahead, behind) = (n.next().unwrap_or(0), n.next().unwrap_or(0));
    let state = match (ahead, behind) {
        (0, 0) => PushState::Pushed,
        (0, _) => PushState::Behind,
        _ => PushState::Ahead,
    };
    Ok(Pushed {
        state,
        remote_ref: Some(candidate.trim_start_matches("refs/remotes/").to_string()),
        ahead,
        behind,
    })
}

impl Pushed {
    /// `pushed (origin/fm/t1)`, `ahead of origin/fm/t1 by 2`, …
    pub fn line(&self) -> String {
        let r = self.remote_ref.as_deref().unwrap_or("");
        match self.state {
            PushState::Pushed => format!("pushed ({r})"),
            PushState::Ahead if self.behind > 0 => format!(
                "diverged from {r}: {} ahead, {} behind",
                self.ahead, self.behind
            ),
            PushState::Ahead => format!("ahead of {r} by {}", self.ahead),
            PushState::Behind => format!("behind {r} by {}", self.behind),
            PushState::NotPushed => "not pushed".into(),
            PushState::NoRemote => "no remote".into(),
        }
    }
}

impl Review {
    /// The summary lines (no patch), painted when `color`.
    pub fn summary(&self, color: bool) -> Vec<Text> {
        let mut lines = Vec::new();
        let mut head = Text::new();
        head.paint(&format!("review {}", self.task), Sgr::Cyan, color);
        head.push(&format!(
            ": {} {} against {}{}",
            sanitize(self.branch.as_deref().unwrap_or("HEAD")),
            short(&self.tip),
            self.target
                .as_deref()
                .map(|t| format!("{} ", sanitize(t)))
                .unwrap_or_default(),
            short(&self.base)
        ));
        lines.push(head);
        let (word, sgr) = match &self.gate {
            Verdict::Accepted(_) => ("accepted", Sgr::Green),
            Verdict::Refused(_) => ("refused", Sgr::BoldRed),
            Verdict::NotGated(_) => ("not gated", Sgr::Yellow),
        };
        let mut gate = Text::new();
        gate.push("gate: ")
            .paint(word, sgr, color)
            .push(&format!(": {}", sanitize(self.gate.reason())));
        lines.push(gate);
        let mut push = Text::new();
        push.push(&format!("push: {}", sanitize(&self.pushed.line())));
        lines.push(push);
        if let Some(l) = &self.landed {
            let mut t = Text::new();
            t.push(&format!("landed: {}", short(l)));
            lines.push(t);
        }
        let mut c = Text::new();
        c.push(&format!("commits ({}):", self.commits.len()));
        lines.push(c);
        for commit in &self.commits {
            let mut t = Text::new();
            t.push("  ")
                .paint(short(&commit.sha), Sgr::Yellow, color)
                .push(&format!(" {}", sanitize(&commit.subject)));
            lines.push(t);
        }
        let (mut plus, mut minus) = (0, 0);
        let mut stat = Vec::new();
        for f in &self.files {
            let mut t = Text::new();
            t.push(&format!("  {} ", sanitize(&f.path)));
            match (f.added, f.deleted) {
                (Some(a), Some(d)) => {
                    plus += a;
                    minus += d;
                    t.paint(&format!("+{a}"), Sgr::Green, color)
                        .push(" ")
                        .paint(&format!("-{d}"), Sgr::Red, color);
                }
                _ => {
                    t.push("binary");
                }
            }
            stat.push(t);
        }
        let mut s = Text::new();
        s.push(&format!("files ({}): +{plus} -{minus}", self.files.len()));
        lines.push(s);
        lines.extend(stat);
        lines
    }

    /// The patch's lines, sanitised and painted when `color`.
    pub fn patch_lines(&self, color: bool) -> Vec<Text> {
        let mut out = Vec::new();
        for l in self.patch.as_deref().unwrap_or("").lines() {
            let clean = sanitize(l);
            let mut t = Text::new();
            let sgr = if l.starts_with("diff --git ") {
                Some(Sgr::Blue)
            } else if l.starts_with("@@") {
                Some(Sgr::Cyan)
            } else if l.starts_with("+++ ") || l.starts_with("--- ") {
                None
            } else if l.starts_with('+') {
                Some(Sgr::Green)
            } else if l.starts_with('-') {
                Some(Sgr::Red)
            } else {
                None
            };
            match sgr {
                Some(s) => t.paint(&clean, s, color),
                None => t.push(&clean),
            };
            out.push(t);
        }
        if self.patch_truncated {
            let mut t = Text::new();
            t.push(&format!("… patch cut at {MAX_PATCH} bytes"));
            out.push(t);
        }
        out
    }

    /// The whole review as text: the summary, a blank line, the patch.
    pub fn text(&self, color: bool) -> String {
        let mut s = String::new();
        for t in self.summary(color) {
            s.push_str(t.as_str());
            s.push('\n');
        }
        if self.patch.is_some() {
            s.push('\n');
            for t in self.patch_lines(color) {
                s.push_str(t.as_str());
                s.push('\n');
            }
        }
        s
    }

    /// The index of each file's first line in [`Review::patch_lines`].
    pub fn file_starts(&self) -> Vec<usize> {
        self.patch
            .as_deref()
            .unwrap_or("")
            .lines()
            .enumerate()
            .filter(|(_, l)| l.starts_with("diff --git "))
            .map(|(i, _)| i)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numstat_reads_counts_binaries_and_odd_paths() {
        let got = parse_numstat("3\t1\ta b.rs\0-\t-\timg.png\0");
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].path, "a b.rs");
        assert_eq!((got[0].added, got[0].deleted), (Some(3), Some(1)));
        assert_eq!((got[1].added, got[1].deleted), (None, None));
    }

    #[test]
    fn a_patch_is_painted_line_by_line_and_its_escapes_made_harmless() {
        let r = Review {
            task: "t".into(),
            branch: Some("b".into()),
            tip: "a".repeat(40),
            base: "b".repeat(40),
            target: None,
            commits: vec![],
            files: vec![],
            pushed: Pushed {
                state: PushState::NoRemote,
                remote_ref: None,
                ahead: 0,
                behind: 0,
            },
            gate: Verdict::Accepted("ok".into()),
            landed: None,
            patch: Some("diff --git a/x b/x\n+\x1b[31mred\n-old\n".into()),
            patch_truncated: false,
        };
        let plain = r.text(false);
        assert!(plain.contains("+\\x1b[31mred"), "{plain}");
        assert!(!plain.contains('\x1b'), "{plain}");
        assert!(r.text(true).contains('\x1b'));
        assert_eq!(r.file_starts(), vec![0]);
    }
}

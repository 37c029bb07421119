//! The inputs of the resolution beyond a task's own files (docs/spec/crew-state.md#resolution,
//! docs/spec/dod.md#gate): the git
//! facts that attribute a run record, what tmux says about the recorded
//! panes, their screens, and the done gate's verdict.
//!
//! - git: branch and HEAD come from git's files ([`crate::gitfiles`]),
//!   git itself only for a layout the reader does not follow; the ancestry
//!   question of rule 2 (asked only when the run's head is not HEAD) is
//!   memoised per (worktree, HEAD, run head).
//! - tmux: one call per socket ([`crate::tmux::batch`]) lists the panes and
//!   captures the screens of exactly the panes whose rules would reach the
//!   harness `busy_regex` if the pane were alive; a reader kept across
//!   frames lists first and captures only the screens that may have
//!   changed since it last captured them.
//! - the gate: [`super::done_check`], for every ship whose current line is
//!   `done`, per repository.
//!
//! Every external program runs with an argument vector and a time bound,
//! never a shell.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::facts::{Facts, GitFacts, PaneFact, WorktreeFact};
use super::resolve::{Need, step};
use crate::config::Config;
use crate::gitfiles::{GitFiles, Head};
use crate::status::{StatusLine, Verb};
use crate::tmux::batch::{self, Capture, Listed, ScreenKey};
use crate::tmux::owner::{Claim, Lost};
use crate::tmux::pane::{PaneInfo, Tmux};

/// Runs `git -C dir args…` through [`crate::git`] (its time bound and
/// environment); `None` when git could not run or answered non-zero.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    crate::git::run(dir, args)
        .ok()
        .filter(|o| o.ok)
        .map(|o| o.stdout)
}

/// Branch and HEAD of a worktree (one git call). A directory that is not
/// the top level of its own repository (a plain directory inside some other
/// clone, say) has none: git would otherwise answer for the outer one.
///
/// The branch is the full ref HEAD points at (`--symbolic-full-name HEAD`,
/// what `git symbolic-ref -q HEAD` prints, asked in the same call) with
/// `refs/heads/` stripped. `--abbrev-ref` would not do: it shortens to
/// `heads/<name>` when a tag has the branch's name.
pub(crate) fn git_facts(worktree: &Path) -> Option<GitFacts> {
    let out = git(
        worktree,
        &[
            "rev-parse",
            "--show-toplevel",
            "HEAD",
            "--symbolic-full-name",
            "HEAD",
        ],
    )?;
    let mut lines = out.lines();
    if !crate::git::is_toplevel(worktree, lines.next()?.trim()) {
        return None;
    }
    let head = lines.next()?.trim().to_string();
    // A detached HEAD prints `HEAD`: no branch.
    let branch = lines
        .next()
        .and_then(|l| l.trim().strip_prefix("refs/heads/"))
        .filter(|b| !b.is_empty())
        .map(str::to_string);
    Some(GitFacts { branch, head })
}

/// [`git_facts`] from git's files when they are laid out as usual.
pub(crate) fn git_facts_read(files: &GitFiles, worktree: &Path) -> Option<GitFacts> {
    match files.head(worktree) {
        Head::Found(h) => Some(GitFacts {
            branch: h.branch,
            head: h.head,
        }),
        Head::NotRepo => None,
        Head::Unusual(_) => git_facts(worktree),
    }
}

fn is_sha(s: &str) -> bool {
    (4..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Answers of `merge-base --is-ancestor HEAD <run head>` (commits do not
/// change, so an answer holds while both stay what they are).
#[derive(Debug, Default)]
pub(crate) struct Ancestry {
    memo: Mutex<HashMap<(PathBuf, String, String), bool>>,
}

impl Ancestry {
    fn is_ancestor(&self, worktree: &Path, head: &str, run_head: &str) -> bool {
        let key = (
            worktree.to_path_buf(),
            head.to_string(),
            run_head.to_string(),
        );
        if let Some(&a) = self.memo.lock().expect("ancestry memo").get(&key) {
            return a;
        }
        let out = crate::git::run(worktree, &["merge-base", "--is-ancestor", "HEAD", run_head]);
        let answer = out.as_ref().is_ok_and(|o| o.ok);
        // Keep only clear answers: yes, or no without a complaint (a
        // missing commit or a failing git is asked again next time).
        if out.is_ok_and(|o| o.ok || o.stderr.is_empty()) {
            self.memo.lock().expect("ancestry memo").insert(key, answer);
        }
        answer
    }
}

/// Adds the git facts a run record needs to be attributed (rule 2).
pub(crate) fn attribute_run(f: &mut Facts, files: &GitFiles, ancestry: &Ancestry) {
    let (Some(meta), Some(run)) = (&f.meta, &f.run) else {
        return;
    };
    if f.worktree != WorktreeFact::Present || run.branch.is_empty() {
        return;
    }
    let Some(wt) = meta.worktree.clone() else {
        return;
    };
    f.git = git_facts_read(files, &wt);
    if let Some(g) = &f.git
        && g.branch.as_deref() == Some(run.branch.as_str())
        && g.head != run.head
        && is_sha(&run.head)
    {
        f.run_contains_head = ancestry.is_ancestor(&wt, &g.head, &run.head);
    }
}

/// Whether attributing the run record needs git at all.
pub(crate) fn needs_attribution(f: &Facts) -> bool {
    matches!((&f.meta, &f.run), (Some(m), Some(run))
        if f.worktree == WorktreeFact::Present && !run.branch.is_empty() && m.worktree.is_some())
}

/// The `done` line handed to the gate: the fold's current line.
pub(crate) fn done_line(f: &Facts) -> StatusLine {
    let c = f.fold.current_ref();
    StatusLine {
        verb: "done".into(),
        kind: Verb::Done,
        key: crate::status::key_word(c.map_or("default", |c| c.key)),
        text: c.map(|c| c.text.to_string()).unwrap_or_default(),
        at: c.and_then(|c| c.at),
    }
}

/// A foreground command the harness counts as alive (for asking which
/// rule a live pane would reach), if there is one.
fn alive_probe(f: &Facts) -> Option<PaneFact> {
    let profile = f.profile.as_deref();
    let command = match profile.and_then(|p| p.agent_commands.as_ref()) {
        Some(cmds) => cmds.first()?.clone(),
        None => "fm-probe".to_string(),
    };
    crate::harness::is_alive(profile, false, &command).then_some(PaneFact::Present {
        dead: false,
        command,
    })
}

/// Whether the rules would ask for this task's screen were its pane alive.
fn wants_screen(f: &mut Facts) -> bool {
    let Some(probe) = alive_probe(f) else {
        return false;
    };
    let real = std::mem::replace(&mut f.pane, probe);
    let wants = step(f) == Err(Need::Screen);
    f.pane = real;
    wants
}

/// The pane's process id, from its screen key (`<server>:<pane>:…`).
fn pane_pid(key: &ScreenKey) -> Option<u32> {
    key.shape.split(':').nth(1)?.parse().ok()
}

/// The tmux side of a view, and what a kept reader remembers of it.
#[derive(Debug, Default)]
pub(crate) struct Panes {
    /// Keep captures for the next view.
    keep: bool,
    /// Per socket, the captures of the last view.
    kept: HashMap<String, HashMap<String, Capture>>,
}

impl Panes {
    /// Panes that keep their captures from view to view.
    pub(crate) fn kept() -> Panes {
        Panes {
            keep: true,
            kept: HashMap::new(),
        }
    }

    /// Fills pane facts and, where the rules reach them, screens for the
    /// tasks that record a pane; warnings (tmux could not be asked) are
    /// pushed for the caller to print.
    pub(crate) fn gather(
        &mut self,
        cfg: &Config,
        tasks: &mut [&mut Facts],
        now: u64,
        warnings: &mut Vec<String>,
    ) {
        let mut by_socket: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, f) in tasks.iter().enumerate() {
            if let Some(m) = &f.meta
                && m.pane.is_some()
            {
                by_socket
                    .entry(m.socket(cfg).to_string())
                    .or_default()
                    .push(i);
            }
        }
        let mut kept = HashMap::new();
        for (socket, idx) in by_socket {
            let mut wanted: Vec<String> = Vec::new();
            for &i in &idx {
                if wants_screen(tasks[i]) {
                    let pane = tasks[i].meta.as_ref().and_then(|m| m.pane.clone());
                    if let Some(p) = pane
                        && !wanted.contains(&p)
                    {
                        wanted.push(p);
                    }
                }
            }
            let tmux = Tmux::new(&socket);
            let before = self.kept.remove(&socket);
            let read = self.read(&tmux, before, &wanted, now);
            let (panes, screens) = match read {
                Ok(r) => r,
                Err(e) => {
                    warnings.push(format!("tmux: {e}; pane states not read"));
                    for &i in &idx {
                        tasks[i].pane = PaneFact::Unknown;
                    }
                    continue;
                }
            };
            let by_id: HashMap<&str, &PaneInfo> = panes
                .iter()
                .map(|p| (p.info.id.as_str(), &p.info))
                .collect();
            let pids: HashMap<&str, u32> = panes
                .iter()
                .filter_map(|p| Some((p.info.id.as_str(), pane_pid(&p.key)?)))
                .collect();
            let server = panes.first().map(|p| p.info.server.as_str());
            for &i in &idx {
                let f = &mut *tasks[i];
                let pane = f
                    .meta
                    .as_ref()
                    .and_then(|m| m.pane.clone())
                    .unwrap_or_default();
                let claim = f.meta.as_ref().and_then(|m| Claim::of(&f.id, m));
                let found = by_id.get(pane.as_str()).copied();
                f.pane = match claim.map(|c| c.check(found, server)) {
                    Some(Err(Lost::Closed)) => PaneFact::Gone,
                    Some(Err(lost)) => PaneFact::Lost(lost.words()),
                    _ => match found {
                        Some(p) => PaneFact::Present {
                            dead: p.dead,
                            command: p.command.clone(),
                        },
                        None => PaneFact::Gone,
                    },
                };
                if let (Some(config), PaneFact::Present { dead, command }) =
                    (&f.agent_config, &f.pane)
                    && crate::harness::is_alive(f.profile.as_deref(), *dead, command)
                    && let Some(&pid) = pids.get(pane.as_str())
                {
                    f.agent_session = super::agent_session::read(config, pid);
                }
                if step(f) == Err(Need::Screen) {
                    let text = match screens.get(&pane) {
                        Some(c) => c.text.clone(),
                        // Not foreseen: asked on its own, as a capture of
                        // any one pane is.
                        None => {
                            crate::tmux::pane::Pane::capture(&tmux, &pane, 0).unwrap_or_default()
                        }
                    };
                    f.screen = Some(text);
                }
            }
            if self.keep {
                kept.insert(socket, screens);
            }
        }
        self.kept = kept;
    }

    /// One socket's panes and the screens of `wanted` (reusing a kept
    /// capture that still shows its pane).
    fn read(
        &self,
        tmux: &Tmux,
        before: Option<HashMap<String, Capture>>,
        wanted: &[String],
        now: u64,
    ) -> crate::Result<(Vec<Listed>, HashMap<String, Capture>)> {
        let wanted_refs: Vec<&str> = wanted.iter().map(String::as_str).collect();
        let Some(mut before) = before.filter(|_| self.keep) else {
            let snap = batch::snapshot(tmux, true, &wanted_refs, now)?;
            return Ok((snap.panes.unwrap_or_default(), snap.screens));
        };
        let snap = batch::snapshot(tmux, true, &[], now)?;
        let listed = snap.panes.unwrap_or_default();
        let mut screens = HashMap::new();
        let mut stale: Vec<&str> = Vec::new();
        for w in &wanted_refs {
            let key = listed.iter().find(|p| p.info.id == *w).map(|p| &p.key);
            match (before.remove(*w), key) {
                (Some(c), Some(k)) if c.still(k) => {
                    screens.insert(w.to_string(), c);
                }
                _ => stale.push(w),
            }
        }
        if !stale.is_empty() {
            let fresh = batch::snapshot(tmux, false, &stale, now)?;
            for (pane, mut c) in fresh.screens {
                if let Some(p) = listed.iter().find(|p| p.info.id == pane) {
                    c.key = p.key.clone();
                }
                screens.insert(pane, c);
            }
        }
        Ok((listed, screens))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::fixture;

    #[test]
    fn a_tag_named_like_the_branch_does_not_hide_the_branch() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path();
        let git = |args: &[&str]| fixture::git(repo, args);
        git(&["init", "-q", "-b", "main"]);
        fixture::commit_empty(repo);
        git(&["checkout", "-q", "-b", "fm/x"]);
        git(&["tag", "fm/x"]);
        let files = GitFiles::new();
        for facts in [
            git_facts(repo).unwrap(),
            git_facts_read(&files, repo).unwrap(),
        ] {
            assert_eq!(facts.branch.as_deref(), Some("fm/x"));
        }
        git(&["checkout", "-q", "--detach"]);
        for facts in [
            git_facts(repo).unwrap(),
            git_facts_read(&files, repo).unwrap(),
        ] {
            assert_eq!((facts.branch, facts.head.len()), (None, 40));
        }
    }

    #[test]
    fn a_plain_directory_inside_a_clone_has_no_git_facts() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("home");
        std::fs::create_dir(&repo).unwrap();
        fixture::git(&repo, &["init", "-q", "-b", "master"]);
        fixture::commit_empty(&repo);
        let files = GitFiles::new();
        for facts in [
            git_facts(&repo).unwrap(),
            git_facts_read(&files, &repo).unwrap(),
        ] {
            assert_eq!(facts.branch.as_deref(), Some("master"));
            assert_eq!(facts.head.len(), 40);
        }
        let nested = repo.join("worktrees/t9");
        std::fs::create_dir_all(&nested).unwrap();
        assert_eq!(git_facts(&nested), None);
        assert_eq!(git_facts_read(&files, &nested), None);
    }
}

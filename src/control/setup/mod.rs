//! A new worktree's set-up (docs/spec/setup.md): the untracked files a
//! project lists are copied from its checkout, then its commands run in
//! the worktree, after `git worktree add` and before the agent starts.
//!
//! The set-up of a project comes from two places, in this order: the
//! home's `[projects.<name>]` table ([`crate::config::ProjectCfg`]) and
//! the project's own `.firstmate/setup.toml` ([`source`]). Nothing of it
//! runs until the captain has approved exactly this content: its hash
//! ([`Plan::hash`]) is recorded by `fm setup approve` in
//! `state/setup-approved` ([`approval`], the one writer), and a set-up
//! that is new or changed since is refused at spawn with that command.
//!
//! The commands run bounded in time, in their own process group, with a
//! clean environment ([`run`]); their output's tail is kept in
//! `state/<id>.setup.log`. A spawn whose set-up fails removes the
//! worktree it created (spawn's rule: a failed spawn leaves nothing but
//! the log).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::task_id::TaskId;

pub(crate) mod approval;
mod behind;
mod copy;
mod run;
mod scripts;
mod show;
mod source;

pub(crate) use approval::Approval;
pub(crate) use behind::behind;
pub(crate) use scripts::Named;
pub(crate) use show::{Report, approve, show};

/// What a step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    /// Copy an untracked file from the checkout into the worktree.
    Copy,
    /// Run a shell command in the worktree.
    Run,
}

impl Kind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Copy => "copy",
            Kind::Run => "run",
        }
    }
}

/// One step of a set-up, and where it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Step {
    pub kind: Kind,
    pub value: String,
    /// `[projects.<name>]` or `.firstmate/setup.toml`.
    pub source: String,
}

/// A project's set-up: every copy first, then every command, each list
/// in source order (the home's table, then the project's file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Plan {
    /// The project's top directory.
    pub project: PathBuf,
    pub steps: Vec<Step>,
    pub timeout_secs: u64,
    /// The project's files the commands name, as the base tracks them
    /// ([`scripts`]); empty when no command names one.
    pub files: Vec<Named>,
    /// The ref those files were read at (`None` without files).
    pub base: Option<String>,
    /// `base` was asked for, not the project's default base: the
    /// approving command must name it.
    #[serde(skip)]
    pub base_given: bool,
}

impl Plan {
    /// The set-up of the project whose top directory is `project`.
    pub(crate) fn load(cfg: &Config, project: &Path) -> Result<Plan> {
        let mut copies = Vec::new();
        let mut runs = Vec::new();
        for (name, lists) in source::lists(cfg, project)? {
            copies.extend(lists.copy.into_iter().map(|value| Step {
                kind: Kind::Copy,
                value,
                source: name.clone(),
            }));
            runs.extend(lists.setup.into_iter().map(|value| Step {
                kind: Kind::Run,
                value,
                source: name.clone(),
            }));
        }
        for s in &copies {
            copy::check_rel(&s.value).map_err(|why| {
                Error::refused(format!(
                    "set-up of {}: copy entry {} ({}) {why}",
                    project.display(),
                    crate::error::quoted(&s.value),
                    s.source
                ))
            })?;
        }
        copies.extend(runs);
        Ok(Plan {
            project: project.to_path_buf(),
            steps: copies,
            timeout_secs: cfg.control.setup_timeout_secs,
            files: Vec::new(),
            base: None,
            base_given: false,
        })
    }

    /// The set-up of the project at `project` for a worktree checked out
    /// at `base` (the project's default base when `None`): with the
    /// project's files its commands name, read at that base.
    pub(crate) fn load_at(cfg: &Config, project: &Path, base: Option<&str>) -> Result<Plan> {
        let mut plan = Plan::load(cfg, project)?;
        let mut paths: Vec<String> = Vec::new();
        for s in plan.steps.iter().filter(|s| s.kind == Kind::Run) {
            for p in scripts::named_paths(&s.value) {
                if !paths.contains(&p) {
                    paths.push(p);
                }
            }
        }
        if paths.is_empty() {
            return Ok(plan);
        }
        let default = crate::git::default_base(project, &cfg.brief.default_branch)?.ok();
        let base = match (base, &default) {
            (Some(b), _) => b.to_string(),
            (None, Some(d)) => d.clone(),
            (None, None) => {
                return Err(Error::refused(format!(
                    "the set-up of {} names files of the project and it has no default branch \
                     to read them at: give --base <ref>",
                    project.display()
                )));
            }
        };
        plan.files = scripts::read_at(project, &base, &paths)?;
        plan.base_given = default.as_deref() != Some(base.as_str());
        plan.base = Some(base);
        Ok(plan)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// SHA-256 over the steps' kinds and values, in order (not their
    /// sources: moving a command from the config to the project's file
    /// changes nothing that runs), then the files the commands name with
    /// their object ids at the base (not the base itself: a new commit
    /// that leaves them alone changes nothing), hex.
    pub(crate) fn hash(&self) -> String {
        let mut h = Sha256::new();
        for s in &self.steps {
            h.update(format!("{} {}\n", s.kind.as_str(), s.value.len()));
            h.update(s.value.as_bytes());
            h.update(b"\n");
        }
        for f in &self.files {
            h.update(format!("file {}\n", f.path.len()));
            h.update(f.path.as_bytes());
            h.update(format!("\n{}\n", f.object.as_deref().unwrap_or("-")));
        }
        h.finalize().iter().fold(String::new(), |mut s, b| {
            use std::fmt::Write;
            let _ = write!(s, "{b:02x}");
            s
        })
    }

    /// The command that approves this set-up, as the captain types it.
    pub(crate) fn approve_command(&self) -> String {
        match &self.base {
            Some(b) if self.base_given => format!(
                "fm setup approve --base {} {}",
                crate::shq::quote(b),
                crate::shq::quote_path(&self.project)
            ),
            _ => format!("fm setup approve {}", crate::shq::quote_path(&self.project)),
        }
    }

    /// The command that shows this set-up.
    pub(crate) fn show_command(&self) -> String {
        match &self.base {
            Some(b) if self.base_given => format!(
                "fm setup show --base {} {}",
                crate::shq::quote(b),
                crate::shq::quote_path(&self.project)
            ),
            _ => format!("fm setup show {}", crate::shq::quote_path(&self.project)),
        }
    }
}

/// Before a worktree is created at `base`: the project's set-up, refused
/// unless the captain approved exactly this content (with the files its
/// commands name as `base` holds them). An empty set-up needs nothing.
pub(crate) fn approved_plan(home: &Home, cfg: &Config, project: &Path, base: &str) -> Result<Plan> {
    let plan = Plan::load_at(cfg, project, Some(base))?;
    if plan.is_empty() {
        return Ok(plan);
    }
    match approval::state(home, &plan)? {
        Approval::Approved => Ok(plan),
        other => Err(Error::refused(format!(
            "the set-up of {} is {}: nothing created; see it with `{}`, then approve it with `{}`",
            plan.project.display(),
            other.as_str(),
            plan.show_command(),
            plan.approve_command()
        ))),
    }
}

/// Runs `plan` in the new `worktree` of task `id`: copies, then commands,
/// within `plan.timeout_secs` for all of them. The log is written in
/// every case; an error names it.
pub(crate) fn run_plan(home: &Home, id: &TaskId, plan: &Plan, worktree: &Path) -> Result<()> {
    if plan.is_empty() {
        return Ok(());
    }
    let log_path = home.setup_log(id);
    let mut log = run::Log::new(id, worktree);
    let outcome = steps(id, plan, worktree, home, &mut log);
    crate::fsx::atomic_write(&log_path, &log.finish())?;
    outcome.map_err(|why| {
        Error::refused(format!(
            "the set-up of {id} failed: {why}; the worktree was removed; log: {}",
            log_path.display()
        ))
    })
}

/// The steps in order; the first failure, in words.
fn steps(
    id: &TaskId,
    plan: &Plan,
    worktree: &Path,
    home: &Home,
    log: &mut run::Log,
) -> std::result::Result<(), String> {
    let limit = Duration::from_secs(plan.timeout_secs);
    let start = Instant::now();
    let env = run::clean_env(home, id, &plan.project, worktree);
    for s in &plan.steps {
        match s.kind {
            Kind::Copy => {
                log.note(&format!("copy {}", s.value));
                copy::copy(&plan.project, worktree, &s.value).map_err(|why| {
                    log.note(&format!("copy failed: {why}"));
                    format!("copy {}: {why}", crate::error::quoted(&s.value))
                })?;
            }
            Kind::Run => {
                let left = limit.saturating_sub(start.elapsed());
                let end = run::command(&s.value, worktree, &env, left, log);
                match end {
                    run::End::Exited(0) => {}
                    run::End::Exited(code) => {
                        return Err(format!("`{}` exited with {code}", s.value));
                    }
                    run::End::Signal(sig) => {
                        return Err(format!("`{}` was killed by signal {sig}", s.value));
                    }
                    run::End::TimedOut => {
                        return Err(format!(
                            "`{}` was still running when the set-up's {}s ran out (killed)",
                            s.value, plan.timeout_secs
                        ));
                    }
                    run::End::NotStarted(e) => {
                        return Err(format!("`{}` could not start: {e}", s.value));
                    }
                }
            }
        }
    }
    Ok(())
}

impl super::Ctl<'_> {
    /// In a worktree spawn has just created from `base`: reports a base
    /// behind its fetched upstream, then runs `plan`. A failed set-up
    /// removes the worktree again (no meta points at it yet).
    pub(super) fn set_up(
        &self,
        project: &Path,
        worktree: &Path,
        base: &str,
        plan: &Plan,
    ) -> Result<()> {
        if let Some((upstream, n)) = behind(project, base) {
            crate::output::err_line(&format!(
                "{}: warning: {}",
                super::TOOL,
                behind::warning(project, base, &upstream, n)
            ));
        }
        if let Err(e) = run_plan(self.home, self.id, plan, worktree) {
            let wt = worktree.display().to_string();
            let _ = super::git(project, &["worktree", "remove", "--force", &wt]);
            return Err(e);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> Config {
        Config::from_parts(Path::new("firstmate.toml"), Some(text), &[]).unwrap()
    }

    #[test]
    fn copies_come_first_and_the_hash_is_of_what_runs_not_where_it_is_written() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path().join("app");
        std::fs::create_dir_all(top.join(".firstmate")).unwrap();
        std::fs::write(
            top.join(source::PROJECT_FILE),
            "copy = [\"b\"]\nsetup = [\"two\"]\n",
        )
        .unwrap();
        let p = Plan::load(
            &cfg("[projects.app]\nsetup = [\"one\"]\ncopy = [\"a\"]\n"),
            &top,
        )
        .unwrap();
        let got: Vec<_> = p
            .steps
            .iter()
            .map(|s| (s.kind.as_str(), s.value.as_str(), s.source.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("copy", "a", "[projects.app]"),
                ("copy", "b", ".firstmate/setup.toml"),
                ("run", "one", "[projects.app]"),
                ("run", "two", ".firstmate/setup.toml"),
            ]
        );
        // The same steps from the other source: the same hash.
        std::fs::write(top.join(source::PROJECT_FILE), "").unwrap();
        let moved = Plan::load(
            &cfg("[projects.app]\ncopy = [\"a\", \"b\"]\nsetup = [\"one\", \"two\"]\n"),
            &top,
        )
        .unwrap();
        assert_eq!(moved.hash(), p.hash());
        // Any change to what runs changes it; so does splitting a value.
        let changed = Plan::load(
            &cfg("[projects.app]\ncopy = [\"a\", \"b\"]\nsetup = [\"one\", \"two \"]\n"),
            &top,
        )
        .unwrap();
        assert_ne!(changed.hash(), p.hash());
        let split = Plan::load(
            &cfg("[projects.app]\ncopy = [\"a\", \"b\"]\nsetup = [\"one\\nrun 3\\ntwo\"]\n"),
            &top,
        )
        .unwrap();
        assert_ne!(split.hash(), p.hash());
        assert_eq!(p.hash().len(), 64);
    }

    #[test]
    fn a_named_script_is_read_at_the_base_and_another_base_is_named_to_approve() {
        use crate::git::fixture::git;
        let d = tempfile::tempdir().unwrap();
        let top = d.path().join("app");
        std::fs::create_dir_all(top.join("scripts")).unwrap();
        git(&top, &["init", "-q", "-b", "main"]);
        let commit = |text: &str| {
            std::fs::write(top.join("scripts/s.sh"), text).unwrap();
            git(&top, &["add", "scripts/s.sh"]);
            git(
                &top,
                &[
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@x",
                    "commit",
                    "-q",
                    "-m",
                    text,
                ],
            );
        };
        commit("one");
        let c = cfg("[projects.app]\nsetup = [\"./scripts/s.sh --fast\"]\n");
        let one = Plan::load_at(&c, &top, None).unwrap();
        assert_eq!(one.base.as_deref(), Some("main"));
        assert_eq!(one.files.len(), 1);
        assert_ne!(one.hash(), Plan::load(&c, &top).unwrap().hash());
        assert_eq!(
            one.approve_command(),
            format!("fm setup approve {}", crate::shq::quote_path(&top))
        );
        git(&top, &["branch", "old"]);
        commit("two");
        let two = Plan::load_at(&c, &top, Some("main")).unwrap();
        assert_ne!(two.hash(), one.hash());
        let old = Plan::load_at(&c, &top, Some("old")).unwrap();
        assert_eq!(old.hash(), one.hash());
        assert!(
            old.approve_command()
                .starts_with("fm setup approve --base 'old' "),
            "{}",
            old.approve_command()
        );
    }

    #[test]
    fn an_escaping_copy_entry_is_refused_when_the_set_up_is_read() {
        let d = tempfile::tempdir().unwrap();
        let e = Plan::load(
            &cfg("[projects.app]\ncopy = [\"../x\"]\n"),
            &d.path().join("app"),
        )
        .unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert!(
            e.to_string()
                .ends_with("copy entry \"../x\" ([projects.app]) leaves the project (..)"),
            "{e}"
        );
    }
}

//! What `fm setup` shows and approves: the project an argument names,
//! and the report of its set-up (docs/spec/setup.md#show-and-approve).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Approval, Named, Plan, Step, approval, source};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::home::Home;

/// The top directory of the project `arg` names: a `[projects.<name>]`
/// table's `path`, else a directory inside a git checkout.
pub(crate) fn project_top(cfg: &Config, arg: &Path) -> Result<PathBuf> {
    if let Some(name) = arg.to_str()
        && !name.contains('/')
        && let Some(p) = cfg.projects.get(name)
    {
        match &p.path {
            Some(path) => return top_of(path),
            // A directory of that name in the current one is still it.
            None if !exists_here(arg) => {
                return Err(Error::usage(format!(
                    "[projects.{name}] has no path: give the project's checkout (a directory)"
                )));
            }
            None => {}
        }
    }
    top_of(arg)
}

/// What `git rev-parse --show-toplevel` says of `dir`, made physical.
fn top_of(dir: &Path) -> Result<PathBuf> {
    #[expect(
        clippy::disallowed_methods,
        reason = "outside the home: the captain's project"
    )]
    let dir = dir
        .canonicalize()
        .map_err(|e| Error::io("open project", dir, e))?;
    let top = super::super::git(&dir, &["rev-parse", "--show-toplevel"])?;
    Ok(PathBuf::from(top.trim()))
}

/// Whether `p` names something (from the current directory).
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the captain's working directory"
)]
fn exists_here(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

/// `fm setup show`'s and `approve`'s report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Report {
    pub project: PathBuf,
    pub steps: Vec<Step>,
    pub timeout_secs: u64,
    /// The project's files the commands name, at `base` (part of the
    /// hash).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<Named>,
    /// The ref `files` were read at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Empty for a project without set-up.
    pub hash: String,
    /// `None` for a project without set-up (nothing to approve).
    pub approval: Option<Approval>,
    /// The command that approves it, while it is not approved.
    pub approve_with: Option<String>,
}

impl Report {
    fn of(home: &Home, plan: Plan) -> Result<Report> {
        let approval = if plan.is_empty() {
            None
        } else {
            Some(approval::state(home, &plan)?)
        };
        Ok(Report {
            approve_with: approval
                .filter(|a| *a != Approval::Approved)
                .map(|_| plan.approve_command()),
            hash: if plan.is_empty() {
                String::new()
            } else {
                plan.hash()
            },
            approval,
            project: plan.project,
            steps: plan.steps,
            timeout_secs: plan.timeout_secs,
            files: plan.files,
            base: plan.base,
        })
    }

    /// The human form, one line each.
    pub(crate) fn lines(&self) -> Vec<String> {
        let mut out = vec![format!("set-up of {}", self.project.display())];
        if self.steps.is_empty() {
            out.push(format!(
                "  none (no [projects.<name>] table names it, no {})",
                source::PROJECT_FILE
            ));
            return out;
        }
        for s in &self.steps {
            out.push(format!(
                "  {:<4} {}    ({})",
                s.kind.as_str(),
                s.value,
                s.source
            ));
        }
        for f in &self.files {
            let at = self.base.as_deref().unwrap_or("?");
            out.push(match &f.object {
                Some(o) => format!("  file {} at {at}: {}", f.path, &o[..o.len().min(12)]),
                None => format!("  file {} at {at}: not tracked", f.path),
            });
        }
        out.push(format!(
            "  within {}s, hash {}",
            self.timeout_secs,
            &self.hash[..12]
        ));
        if let Some(a) = self.approval {
            out.push(match &self.approve_with {
                Some(cmd) => format!("{}: approve it with `{cmd}`", a.as_str()),
                None => a.as_str().to_string(),
            });
        }
        out
    }
}

/// The set-up of the project `arg` names for a worktree at `base` (the
/// default base when `None`), and whether it is approved.
pub(crate) fn show(home: &Home, cfg: &Config, arg: &Path, base: Option<&str>) -> Result<Report> {
    let top = project_top(cfg, arg)?;
    Report::of(home, Plan::load_at(cfg, &top, base)?)
}

/// Fewest hex digits `--hash` takes.
pub(crate) const MIN_HASH: usize = 12;

/// Approves the set-up of the project `arg` names, as it is now; with
/// `hash`, only when its hash starts with it (what `fm setup show`
/// printed). The report says what was approved. Nothing to approve is no
/// error, unless a hash was given.
pub(crate) fn approve(
    home: &Home,
    cfg: &Config,
    actor: crate::grant::Actor,
    arg: &Path,
    base: Option<&str>,
    hash: Option<&str>,
) -> Result<Report> {
    // Refused before anything is read.
    approval::captain_only(actor)?;
    let want = hash.map(check_hash).transpose()?;
    let top = project_top(cfg, arg)?;
    let plan = Plan::load_at(cfg, &top, base)?;
    if let Some(want) = &want {
        let now = plan.hash();
        if plan.is_empty() || !now.starts_with(want.as_str()) {
            return Err(Error::refused(format!(
                "the set-up of {} is not the one shown (hash {want}): it is now {}; see it \
                 again with `{}`; nothing was approved",
                top.display(),
                if plan.is_empty() {
                    "empty".to_string()
                } else {
                    format!("hash {}", &now[..MIN_HASH])
                },
                plan.show_command()
            )));
        }
    }
    if !plan.is_empty() {
        approval::approve(home, actor, &plan)?;
    }
    Report::of(home, plan)
}

/// `--hash`, lower-case: at least [`MIN_HASH`] hex digits.
fn check_hash(h: &str) -> Result<String> {
    let h = h.trim().to_ascii_lowercase();
    if h.len() < MIN_HASH || h.len() > 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::usage(format!(
            "--hash {}: give at least {MIN_HASH} hex digits of the hash `fm setup show` printed",
            crate::error::quoted(&h)
        )));
    }
    Ok(h)
}

//! Briefs (docs/spec/brief.md): everything a stateless worker knows comes from the
//! file `data/<id>/brief.md`. This module owns what a brief is made of
//! ([`BriefSpec`]) and the limits on its inputs; `request` validates what
//! the captain asked for into a spec; `render` turns a spec into Markdown
//! as a pure function, [`check`] validates a filled brief, `store` writes,
//! re-applies and revokes with history, and `apply` is `fm-brief`'s use
//! cases (with their events and the live worker's notice). [`response`]
//! owns a worker's `data/<id>/response.md`.
//!
//! Guarantees: identical specs render byte-identical briefs (the timestamp
//! is part of the spec); every path in a brief is absolute, and every path
//! in a command is single-quoted so it can be pasted into a shell.

use std::path::PathBuf;

use crate::meta::Mode;
use crate::task_id::TaskId;

pub(crate) mod apply;
pub mod check;
pub mod header;
pub(crate) mod render;
pub(crate) mod request;
pub mod response;
pub(crate) mod store;
mod validate;

pub use check::check_brief;
pub use header::BriefHeader;
pub(crate) use header::MetaSync;
pub(crate) use render::render;
pub(crate) use validate::{
    validate_branch, validate_constraints, validate_include, validate_intent, validate_mission,
    validate_shares, worker_label,
};

/// The scaffold placeholders, each present exactly once in a scaffold.
pub(crate) const TASK_PLACEHOLDER: &str = "{TASK}";
pub(crate) const SPEC_PLACEHOLDER: &str = "{FIRSTMATE_SPEC}";

pub(crate) const PROTOCOL_VERSION: &str = "1.0.0";
pub(crate) const MAX_MISSION_BYTES: usize = 500;
pub(crate) const MAX_CONSTRAINTS: usize = 20;
pub(crate) const MAX_SHARES: usize = 10;
/// Depth limit of a delegation chain when neither the parent nor `--max-depth` sets one.
pub(crate) const DEFAULT_MAX_DEPTH: u32 = 3;

/// Which of the three brief shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BriefKind {
    Ship(Mode),
    Scout,
    Secondmate,
}

impl BriefKind {
    pub fn name(self) -> &'static str {
        match self {
            BriefKind::Ship(_) => "ship",
            BriefKind::Scout => "scout",
            BriefKind::Secondmate => "secondmate",
        }
    }

    pub(crate) fn mode(self) -> Option<Mode> {
        match self {
            BriefKind::Ship(m) => Some(m),
            _ => None,
        }
    }
}

/// A shared-memory pointer: `TIER[/KEY]` the worker may read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Share {
    pub(crate) target: String,
    pub reason: String,
}

/// Where a brief sits in a delegation chain (docs/spec/chains.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lineage {
    pub(crate) parent: Option<TaskId>,
    pub(crate) max_depth: u32,
    pub(crate) depth: u32,
}

/// Absolute paths a brief hands to its worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BriefPaths {
    pub(crate) worktree: PathBuf,
    pub status: PathBuf,
    pub(crate) inbox: PathBuf,
    pub(crate) report: PathBuf,
}

impl BriefPaths {
    /// The paths a brief of task `id` names in `home`.
    pub(crate) fn of(
        home: &crate::home::Home,
        cfg: &crate::config::Config,
        id: &TaskId,
        meta: &crate::meta::TaskMeta,
    ) -> BriefPaths {
        BriefPaths {
            worktree: crate::meta::worktree_of(home, cfg, id, meta),
            status: home.status(id),
            inbox: home.inbox(id),
            report: home.report(id),
        }
    }

    /// The four paths, in the order `fm-control spawn --brief-paths`
    /// takes them: worktree, status log, inbox, report.
    pub(crate) fn to_vec(&self) -> Vec<PathBuf> {
        vec![
            self.worktree.clone(),
            self.status.clone(),
            self.inbox.clone(),
            self.report.clone(),
        ]
    }

    /// [`BriefPaths::to_vec`]'s inverse; `None` unless exactly four.
    pub(crate) fn from_slice(p: &[PathBuf]) -> Option<BriefPaths> {
        let [worktree, status, inbox, report] = p else {
            return None;
        };
        Some(BriefPaths {
            worktree: worktree.clone(),
            status: status.clone(),
            inbox: inbox.clone(),
            report: report.clone(),
        })
    }

    /// A brief written for these paths, rewritten for the paths `to` (a
    /// brief made on the captain's side for a worker on another host,
    /// whose home is elsewhere). Each path is replaced in both forms a
    /// brief writes it (as shown, and shell-quoted), in one pass over
    /// the text, the longest match first, so a replacement is never
    /// matched again; a match must be the whole path (what follows it is
    /// no name character).
    pub(crate) fn rehome(&self, text: &str, to: &BriefPaths) -> String {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for (f, t) in self.to_vec().iter().zip(to.to_vec()) {
            pairs.push((crate::shq::quote_path(f), crate::shq::quote_path(&t)));
            pairs.push((
                f.to_string_lossy().into_owned(),
                t.to_string_lossy().into_owned(),
            ));
        }
        pairs.retain(|(f, t)| !f.is_empty() && f != t);
        pairs.sort_by_key(|(f, _)| std::cmp::Reverse(f.len()));
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        'scan: while !rest.is_empty() {
            for (f, t) in &pairs {
                // A whole path only: `/h/worktrees/t1` is not the start of
                // `/h/worktrees/t10` (a quoted form ends in its quote).
                let whole = |after: &str| {
                    !after
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
                };
                if let Some(after) = rest.strip_prefix(f.as_str())
                    && whole(after)
                {
                    out.push_str(t);
                    rest = after;
                    continue 'scan;
                }
            }
            let c = rest.chars().next().unwrap_or_default();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
        out
    }
}

/// Everything a brief is rendered from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BriefSpec {
    pub id: TaskId,
    pub kind: BriefKind,
    /// Display name of the repository (empty for a secondmate).
    pub(crate) repo: String,
    pub(crate) delegator: String,
    /// Branch the worker creates (ship only).
    pub branch: String,
    /// RFC 3339 UTC.
    pub timestamp: String,
    pub(crate) intent: Option<String>,
    pub(crate) spec: Option<String>,
    pub(crate) mission: Option<String>,
    pub(crate) constraints: Vec<String>,
    pub(crate) shares: Vec<Share>,
    pub(crate) lineage: Option<Lineage>,
    /// Non-blank content of `config/brief-include.md` (ship and scout).
    pub(crate) include: Option<String>,
    pub(crate) projects: Vec<PathBuf>,
    pub(crate) charter: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) paths: BriefPaths,
    pub(crate) default_branch: String,
    pub(crate) paused_verb: String,
    pub(crate) tools: Vec<String>,
}

impl BriefSpec {
    /// Placeholders a rendering of this spec still holds, in order.
    pub(crate) fn placeholders(&self) -> Vec<&'static str> {
        match self.kind {
            BriefKind::Secondmate => self
                .charter
                .is_none()
                .then_some(TASK_PLACEHOLDER)
                .into_iter()
                .collect(),
            _ => [
                (self.intent.is_none(), TASK_PLACEHOLDER),
                (self.spec.is_none(), SPEC_PLACEHOLDER),
            ]
            .into_iter()
            .filter_map(|(missing, p)| missing.then_some(p))
            .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(root: &str) -> BriefPaths {
        BriefPaths {
            worktree: PathBuf::from(format!("{root}/worktrees/t1")),
            status: PathBuf::from(format!("{root}/state/t1.status")),
            inbox: PathBuf::from(format!("{root}/state/t1.inbox")),
            report: PathBuf::from(format!("{root}/data/t1/report.md")),
        }
    }

    #[test]
    fn a_rehomed_brief_names_the_far_paths_in_both_forms_once() {
        // The far home holds the captain's path: a second pass would
        // rewrite a replacement again.
        let (here, there) = ("/c/fm", "/x/c/fm");
        let text = "print `/c/fm/worktrees/t1`.\n>> '/c/fm/state/t1.status'\nin `/c/fm/state/t1.inbox`, \
                    ls '/c/fm/state/t1.inbox'; `/c/fm/data/t1/report.md`; /c/fm/elsewhere\n";
        let out = paths(here).rehome(text, &paths(there));
        assert_eq!(
            out,
            "print `/x/c/fm/worktrees/t1`.\n>> '/x/c/fm/state/t1.status'\nin `/x/c/fm/state/t1.inbox`, \
             ls '/x/c/fm/state/t1.inbox'; `/x/c/fm/data/t1/report.md`; /c/fm/elsewhere\n"
        );
        // A path with an apostrophe is matched in its shell-quoted form.
        let odd = paths("/it's");
        let quoted = crate::shq::quote_path(&odd.status);
        let out = odd.rehome(&format!(">> {quoted} é\n"), &paths("/far"));
        assert_eq!(out, ">> '/far/state/t1.status' é\n");
        // A longer name that starts like a path is another path.
        let out = paths(here).rehome(
            "`/c/fm/worktrees/t10` /c/fm/state/t1.status.x\n",
            &paths(there),
        );
        assert_eq!(out, "`/c/fm/worktrees/t10` /c/fm/state/t1.status.x\n");
        // Paths that do not differ change nothing.
        assert_eq!(paths(here).rehome(text, &paths(here)), text);
    }
}

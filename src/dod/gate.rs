//! The done gate (docs/spec/dod.md#gate): a ship worker's `done` is accepted only when
//! the commit its worktree's `HEAD` names is reachable outside that worktree.
//!
//! For other tools (crew-state reads a refused `done` as `blocked`):
//!
//! ```ignore
//! let verdict = firstmate::dod::gate(&home, &cfg, &id, &meta, &line);
//! // Verdict::Accepted(why) | Verdict::Refused(why) | Verdict::NotGated(why)
//! ```
//!
//! The decision is split so the rules stay pure: [`precheck`] settles what
//! needs no git (kind, the no-mistakes hand-off, the `pr`/`pr_head`
//! shortcut); [`judge`] turns the git facts gathered by [`gate`] into a
//! verdict. Only [`gate`] touches the disk and runs git (bounded, docs/spec/dod.md#gate).
//! The kind and the mode come from meta `kind`/`mode`, or from the brief's
//! frontmatter when meta has none; the worktree from meta `worktree`, else
//! the default location under `paths.worktrees`. The worktree must be the
//! top level of a repository of its own: a plain directory inside another
//! clone is "not a git repository", never judged by the outer clone.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::done_line::{is_checks_green, pr_url};
use crate::config::Config;
use crate::home::Home;
use crate::meta::{Kind, Mode, TaskMeta};
use crate::status::{StatusLine, Verb};
use crate::task_id::TaskId;
use crate::{fsx, git};

/// What the gate says about one `done` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "verdict", content = "reason", rename_all = "kebab-case")]
pub enum Verdict {
    Accepted(String),
    Refused(String),
    NotGated(String),
}

impl Verdict {
    /// `accepted`, `refused` or `not gated`, as printed.
    pub(crate) fn word(&self) -> &'static str {
        match self {
            Verdict::Accepted(_) => "accepted",
            Verdict::Refused(_) => "refused",
            Verdict::NotGated(_) => "not gated",
        }
    }

    pub fn reason(&self) -> &str {
        match self {
            Verdict::Accepted(r) | Verdict::Refused(r) | Verdict::NotGated(r) => r,
        }
    }

    /// 1 for a refusal, 0 otherwise (docs/spec/dod.md#gate).
    pub(crate) fn exit_code(&self) -> u8 {
        u8::from(matches!(self, Verdict::Refused(_)))
    }
}

/// Everything decided without git. `None` means: ask git about HEAD.
pub(crate) fn precheck(
    kind: &Kind,
    mode: Option<Mode>,
    line: &StatusLine,
    meta_pr: &str,
    meta_pr_head: &str,
) -> Option<Verdict> {
    if line.kind != Verb::Done {
        return Some(Verdict::NotGated(format!(
            "{} lines are not gated; only done is",
            line.verb
        )));
    }
    if *kind != Kind::Ship {
        return Some(Verdict::NotGated(format!("{kind} tasks are never gated")));
    }
    if mode == Some(Mode::NoMistakes) {
        if !is_checks_green(&line.text) {
            return Some(Verdict::NotGated(
                "no-mistakes hand-off (the pipeline's PR … checks green line is gated)".into(),
            ));
        }
        if let Some(url) = pr_url(&line.text)
            && !meta_pr.is_empty()
            && url == meta_pr
            && !meta_pr_head.is_empty()
        {
            return Some(Verdict::Accepted(format!(
                "PR {url} matches meta pr with pr_head {meta_pr_head}"
            )));
        }
    }
    None
}

/// What git says about the worktree's HEAD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeadFact {
    Missing,
    NotRepo,
    NoHead,
    Head(String),
    /// git itself failed (not installed, timed out).
    GitError(String),
}

/// The verdict from the worktree's HEAD and the first outside ref holding it.
pub(crate) fn judge(worktree: &Path, head: &HeadFact, reach: Option<&str>) -> Verdict {
    let wt = worktree.display();
    match head {
        HeadFact::Missing => Verdict::Refused(format!("worktree missing ({wt})")),
        HeadFact::NotRepo => Verdict::Refused(format!("worktree is not a git repository ({wt})")),
        HeadFact::NoHead => Verdict::Refused(format!("worktree has no HEAD commit ({wt})")),
        HeadFact::GitError(e) => Verdict::Refused(format!("could not verify HEAD: {e}")),
        HeadFact::Head(sha) => match reach {
            Some(r) => Verdict::Accepted(format!("head {sha} is on {r}")),
            None => Verdict::Refused(format!(
                "named head {sha} is unreachable outside the worker copy"
            )),
        },
    }
}

/// What git says about the worktree's HEAD (one bounded git call).
pub(crate) fn head_fact(worktree: &Path) -> HeadFact {
    match fsx::is_dir(worktree) {
        Ok(true) => {}
        Ok(false) | Err(_) => return HeadFact::Missing,
    }
    match git::head(worktree) {
        Ok(Some(sha)) => HeadFact::Head(sha),
        Ok(None) => HeadFact::NoHead,
        Err(e) if e.to_string().contains("not a git repository") => HeadFact::NotRepo,
        Err(e) => HeadFact::GitError(e.to_string()),
    }
}

/// The task's brief header, if the brief reads.
fn brief_header(home: &Home, id: &TaskId) -> Option<crate::brief::BriefHeader> {
    crate::brief::BriefHeader::of_task(home, id).ok()
}

/// The task's mode: meta `mode`, else the brief's frontmatter.
pub(crate) fn mode_of(home: &Home, id: &TaskId, meta: &TaskMeta) -> Option<Mode> {
    if let Some(m) = meta.mode {
        return Some(m);
    }
    Mode::parse(&brief_header(home, id)?.mode?).ok()
}

/// The `kind` in the task's brief frontmatter, if the brief reads.
pub(crate) fn brief_kind(home: &Home, id: &TaskId) -> Option<Kind> {
    brief_header(home, id)?.kind()
}

/// The task's kind: meta `kind`, else the brief's frontmatter, else ship.
pub(crate) fn kind_of(home: &Home, id: &TaskId, meta: &TaskMeta) -> Kind {
    match &meta.kind {
        Some(k) => k.clone(),
        None => brief_kind(home, id).unwrap_or(Kind::Ship),
    }
}

/// Where the gate looks once no rule without git has decided: the
/// worktree's HEAD, then the refs that count as outside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Check {
    /// The worktree whose `HEAD` is named ([`crate::meta::worktree_of`]).
    pub(crate) worktree: PathBuf,
    /// The project clone, whose refs also count.
    pub(crate) project: Option<PathBuf>,
    /// local-only: the project's `refs/heads/*` count too.
    pub(crate) local_only: bool,
}

/// The gate up to git: a verdict when none is needed, else what to ask.
pub(crate) enum Plan {
    Decided(Verdict),
    Check(Check),
}

/// Everything the gate decides before git (kind, mode, the no-mistakes
/// hand-off and shortcut), reading meta and, where meta is silent, the brief.
pub(crate) fn plan(
    home: &Home,
    cfg: &Config,
    id: &TaskId,
    meta: &TaskMeta,
    line: &StatusLine,
) -> Plan {
    plan_with(home, cfg, id, meta, line, &crate::home::physical)
}

/// [`plan`], the worktree made physical by `physical` (which answers as
/// [`crate::home::physical`] does: the fleet view's looks relative to
/// directories opened once).
pub(crate) fn plan_with(
    home: &Home,
    cfg: &Config,
    id: &TaskId,
    meta: &TaskMeta,
    line: &StatusLine,
    physical: &dyn Fn(&Path) -> PathBuf,
) -> Plan {
    let mode = mode_of(home, id, meta);
    let kind = kind_of(home, id, meta);
    let (pr, pr_head) = (meta.pr.as_deref(), meta.pr_head.as_deref());
    if let Some(v) = precheck(&kind, mode, line, pr.unwrap_or(""), pr_head.unwrap_or("")) {
        return Plan::Decided(v);
    }
    Plan::Check(Check {
        worktree: crate::meta::worktree_with(home, cfg, id, meta, physical),
        project: meta.project.clone(),
        local_only: mode == Some(Mode::LocalOnly),
    })
}

/// The first ref outside the worktree holding `sha`: the worktree's
/// `refs/remotes/*`, then the project's (and its `refs/heads/*` for
/// local-only). At most two bounded git calls.
pub(crate) fn reach(check: &Check, sha: &str) -> crate::Result<Option<String>> {
    let mut reach = git::ref_containing(&check.worktree, sha, &["refs/remotes/"]);
    if matches!(reach, Ok(None))
        && let Some(project) = &check.project
    {
        let shown = project.display();
        reach = git::ref_containing(project, sha, check.project_prefixes())
            .map(|r| r.map(|r| format!("{r} of {shown}")));
    }
    reach
}

impl Check {
    /// The ref prefixes of the project that count.
    pub(crate) fn project_prefixes(&self) -> &'static [&'static str] {
        if self.local_only {
            &["refs/remotes/", "refs/heads/"]
        } else {
            &["refs/remotes/"]
        }
    }

    /// Asks git: the worktree's HEAD, then [`reach`].
    pub(crate) fn run(&self) -> Verdict {
        let head = head_fact(&self.worktree);
        let HeadFact::Head(sha) = &head else {
            return judge(&self.worktree, &head, None);
        };
        let reach = reach(self, sha);
        self.verdict(&head, reach)
    }

    /// The verdict from the worktree's HEAD and what [`reach`] found.
    pub(crate) fn verdict(&self, head: &HeadFact, reach: crate::Result<Option<String>>) -> Verdict {
        match reach {
            Ok(r) => judge(&self.worktree, head, r.as_deref()),
            Err(e) => judge(&self.worktree, &HeadFact::GitError(e.to_string()), None),
        }
    }
}

/// Judges `line` for task `id` (docs/spec/dod.md#gate). Runs at most three bounded git calls.
pub fn gate(home: &Home, cfg: &Config, id: &TaskId, meta: &TaskMeta, line: &StatusLine) -> Verdict {
    match plan(home, cfg, id, meta, line) {
        Plan::Decided(v) => v,
        Plan::Check(c) => c.run(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{Parsed, parse_line};

    fn line(s: &str) -> StatusLine {
        match parse_line(s.as_bytes(), "paused") {
            Parsed::Line(l) => l,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn scout_and_secondmate_are_never_gated() {
        for k in ["scout", "secondmate"] {
            let v = precheck(&Kind::parse(k), None, &line("done: found it"), "", "");
            assert!(matches!(v, Some(Verdict::NotGated(_))), "{v:?}");
        }
        assert_eq!(
            precheck(
                &Kind::parse(""),
                Some(Mode::DirectPr),
                &line("done: PR https://x/1"),
                "",
                ""
            ),
            None
        );
    }

    #[test]
    fn no_mistakes_hand_off_is_not_gated_but_checks_green_is() {
        let nm = Some(Mode::NoMistakes);
        assert!(matches!(
            precheck(
                &Kind::parse("ship"),
                nm,
                &line("done: parser rewritten"),
                "",
                ""
            ),
            Some(Verdict::NotGated(_))
        ));
        assert_eq!(
            precheck(
                &Kind::parse("ship"),
                nm,
                &line("done: PR https://h/p/1 checks green"),
                "",
                ""
            ),
            None
        );
        let v = precheck(
            &Kind::parse("ship"),
            nm,
            &line("done: PR https://h/p/1 checks green"),
            "https://h/p/1",
            "abc",
        );
        assert!(matches!(v, Some(Verdict::Accepted(_))), "{v:?}");
        // The shortcut is no-mistakes only, and needs pr_head.
        assert_eq!(
            precheck(
                &Kind::parse("ship"),
                nm,
                &line("done: PR https://h/p/1 checks green"),
                "https://h/p/1",
                ""
            ),
            None
        );
        assert_eq!(
            precheck(
                &Kind::parse("ship"),
                Some(Mode::DirectPr),
                &line("done: PR https://h/p/1"),
                "https://h/p/1",
                "abc"
            ),
            None
        );
    }

    #[test]
    fn judge_names_the_head_and_the_problem() {
        let wt = Path::new("/w/t");
        assert!(
            judge(wt, &HeadFact::Missing, None)
                .reason()
                .contains("worktree missing")
        );
        assert!(
            judge(wt, &HeadFact::NotRepo, None)
                .reason()
                .contains("not a git repository")
        );
        let v = judge(wt, &HeadFact::Head("abc123".into()), None);
        assert_eq!(
            v,
            Verdict::Refused("named head abc123 is unreachable outside the worker copy".into())
        );
        assert_eq!(v.exit_code(), 1);
        assert!(matches!(
            judge(
                wt,
                &HeadFact::Head("a".into()),
                Some("refs/remotes/origin/x")
            ),
            Verdict::Accepted(_)
        ));
    }

    #[test]
    fn final_lines_in_every_form_are_gated_and_only_a_plain_hand_off_is_not() {
        let nm = Some(Mode::NoMistakes);
        for text in [
            "PR https://g/o/r/pull/3 checks green",
            "PR: https://g/o/r/pull/3 checks green",
            "PR #3 checks green",
            "pr https://g/o/r/pull/3 checks green",
            "PR http://forge.local/o/r/pull/3",
            "PR https://g/o/r/pull/3",
            "PR#3 merged-ready",
            "pipeline green (PR #12).",
            "all Checks Green",
        ] {
            assert_eq!(
                precheck(
                    &Kind::parse("ship"),
                    nm,
                    &line(&format!("done: {text}")),
                    "",
                    ""
                ),
                None,
                "{text}"
            );
        }
        for text in [
            "parser rewritten",
            "prepared the pipeline run",
            "express routes done",
            "addressed the PR feedback from last week",
            "PR review comments answered; pipeline started",
            "PR: pending, pipeline started",
            "reworked PR #abc",
            "opened https://g/o/r/pull/3",
        ] {
            assert!(
                matches!(
                    precheck(
                        &Kind::parse("ship"),
                        nm,
                        &line(&format!("done: {text}")),
                        "",
                        ""
                    ),
                    Some(Verdict::NotGated(_))
                ),
                "{text}"
            );
        }
        let v = precheck(
            &Kind::parse("ship"),
            nm,
            &line("done: PR: https://h/p/pull/1, checks green"),
            "https://h/p/pull/1",
            "abc",
        );
        assert!(matches!(v, Some(Verdict::Accepted(_))), "{v:?}");
    }
}

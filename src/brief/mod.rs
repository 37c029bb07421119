//! Briefs (SPEC §7): everything a stateless worker knows comes from the
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

use crate::error::{Error, Result};
use crate::meta::Mode;
use crate::task_id::TaskId;

pub(crate) mod apply;
pub mod check;
pub(crate) mod render;
pub(crate) mod request;
pub mod response;
pub(crate) mod store;

pub use check::check_brief;
pub(crate) use render::render;

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

/// Where a brief sits in a delegation chain (SPEC §11.2).
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
            worktree: crate::dod::gate::worktree_of(home, cfg, id, meta),
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

/// The label a worker-addressed line opens with (`Captain:`, `Captain's ask:`,
/// `To the worker:` …), if any. The intent is the captain's own words, never
/// a note addressed to the worker.
pub(crate) fn worker_label(line: &str) -> Option<String> {
    let l = line
        .trim_start()
        .trim_start_matches(['*', '_', '>', '#', '-', ' ']);
    let (label, _) = l.split_once(':')?;
    let norm = label
        .trim()
        .trim_end_matches(['*', '_'])
        .trim()
        .to_lowercase()
        .replace('\u{2019}', "'");
    let addressed = norm == "captain"
        || norm.starts_with("captain's ")
        || norm.starts_with("the captain")
        || norm.starts_with("from the captain")
        || norm.starts_with("message from the captain")
        || matches!(
            norm.as_str(),
            "worker"
                | "to the worker"
                | "note to worker"
                | "note to the worker"
                | "for the worker"
                | "agent"
                | "to the agent"
                | "instructions for the worker"
        );
    (addressed && norm.len() <= 40).then(|| format!("{}:", label.trim()))
}

/// Refuses an intent that is blank, too long, or holds a worker-addressed label.
pub(crate) fn validate_intent(intent: &str, max_bytes: u64) -> Result<()> {
    if intent.trim().is_empty() {
        return Err(Error::usage("the intent is blank"));
    }
    if intent.len() as u64 > max_bytes {
        return Err(Error::usage(format!(
            "the intent is {} bytes; the limit is {max_bytes} (brief.max_intent_bytes)",
            intent.len()
        )));
    }
    for line in intent.lines() {
        if let Some(label) = worker_label(line) {
            return Err(Error::usage(format!(
                "the intent line {:?} opens with the label {label:?}: pass the captain's words themselves, not a note to the worker",
                line.trim()
            )));
        }
    }
    Ok(())
}

pub(crate) fn validate_mission(m: &str) -> Result<()> {
    if m.trim().is_empty() {
        return Err(Error::usage("the mission is blank"));
    }
    if m.len() > MAX_MISSION_BYTES {
        return Err(Error::usage(format!(
            "the mission is {} bytes; the limit is {MAX_MISSION_BYTES}",
            m.len()
        )));
    }
    if m.trim().contains('\n') {
        return Err(Error::usage(
            "the mission must be one paragraph (it contains a newline)",
        ));
    }
    Ok(())
}

pub(crate) fn validate_constraints(cs: &[String]) -> Result<()> {
    if cs.len() > MAX_CONSTRAINTS {
        return Err(Error::usage(format!(
            "{} constraints given; the limit is {MAX_CONSTRAINTS}",
            cs.len()
        )));
    }
    for (i, c) in cs.iter().enumerate() {
        if c.trim().is_empty() {
            return Err(Error::usage(format!("constraint {} is blank", i + 1)));
        }
        if c.contains('\n') {
            return Err(Error::usage(format!(
                "constraint {} must be one line",
                i + 1
            )));
        }
    }
    Ok(())
}

/// Parses `TIER[/KEY]=REASON`.
pub(crate) fn parse_share(raw: &str) -> Result<Share> {
    let (target, reason) = raw.split_once('=').unwrap_or((raw, ""));
    let target = target.trim();
    if target.is_empty()
        || target.contains(char::is_whitespace)
        || target.starts_with('/')
        || target.ends_with('/')
    {
        return Err(Error::usage(format!(
            "share {}: expected TIER[/KEY]=REASON",
            crate::cli::common::quoted(raw)
        )));
    }
    if reason.trim().is_empty() {
        return Err(Error::usage(format!(
            "share {} has no reason (TIER[/KEY]=REASON)",
            crate::cli::common::quoted(target)
        )));
    }
    if reason.contains('\n') {
        return Err(Error::usage(format!(
            "share {}: the reason must be one line",
            crate::cli::common::quoted(target)
        )));
    }
    Ok(Share {
        target: target.to_string(),
        reason: reason.trim().to_string(),
    })
}

pub(crate) fn validate_shares(raw: &[String]) -> Result<Vec<Share>> {
    if raw.len() > MAX_SHARES {
        return Err(Error::usage(format!(
            "{} shares given; the limit is {MAX_SHARES}",
            raw.len()
        )));
    }
    raw.iter().map(|s| parse_share(s)).collect()
}

/// Refuses a branch name git would reject (the rules of `git check-ref-format --branch`).
pub(crate) fn validate_branch(b: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::usage(format!(
            "invalid branch name {}: {why}",
            crate::cli::common::quoted(b)
        )))
    };
    if b.is_empty() {
        return bad("empty");
    }
    if b.starts_with('-') {
        return bad("starts with '-'");
    }
    if b == "@" || b == "HEAD" {
        return bad("is '@' or 'HEAD'");
    }
    if let Some(c) = b.chars().find(|c| {
        c.is_ascii_control()
            || matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\' | '\u{7f}')
    }) {
        return bad(&format!("contains {c:?}"));
    }
    // Legal for git, but the brief pastes the branch into shell commands
    // (inside double quotes in the done line): refuse what a shell would
    // expand there rather than hand the worker a command that breaks or
    // runs something.
    if let Some(c) = b.chars().find(|c| matches!(c, '"' | '$' | '`' | '!')) {
        return bad(&format!("contains {c:?}, which a shell would expand"));
    }
    if b.contains("..") || b.contains("@{") || b.contains("//") {
        return bad("contains '..', '@{' or '//'");
    }
    if b.starts_with('/') || b.ends_with('/') || b.ends_with('.') {
        return bad("starts or ends with '/' or ends with '.'");
    }
    #[allow(
        clippy::case_sensitive_file_extension_comparisons,
        reason = "git's ref-name rule is case-sensitive"
    )]
    if b.split('/')
        .any(|c| c.starts_with('.') || c.ends_with(".lock"))
    {
        return bad("a component starts with '.' or ends with '.lock'");
    }
    Ok(())
}

/// Refuses include text that would confuse the brief's machine-read lines.
pub(crate) fn validate_include(text: &str) -> Result<()> {
    if text
        .lines()
        .any(|l| l.trim_start().starts_with("Delivery contract:"))
    {
        return Err(Error::usage(
            "config/brief-include.md contains a `Delivery contract:` line; only the definition of done may",
        ));
    }
    let lines: Vec<&str> = text.lines().collect();
    if let Some(h) = check::headings(&lines)
        .into_iter()
        .find(|h| h.level == 1 && h.title == "Definition of done")
    {
        // The include comes last, so its heading would become the brief's
        // last `# Definition of done` and hide the real delivery contract.
        return Err(Error::usage(format!(
            "config/brief-include.md line {} is a `# Definition of done` heading; only the brief's own \
             definition of done may use it (rename the heading or make it level 2 or deeper)",
            h.line + 1
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_labels() {
        for l in [
            "Captain: do it",
            "Captain's ask: fix",
            "**Captain:** x",
            "captain’s request: y",
            "To the worker: z",
        ] {
            assert!(worker_label(l).is_some(), "{l}");
        }
        for l in [
            "The login page breaks: fix it",
            "Note: the API is slow",
            "https://x",
            "captainship matters",
        ] {
            assert!(worker_label(l).is_none(), "{l}");
        }
    }

    #[test]
    fn caps_at_their_edges() {
        assert!(validate_mission(&"m".repeat(500)).is_ok());
        assert_eq!(
            validate_mission(&"m".repeat(501)).unwrap_err().exit_code(),
            2
        );
        assert!(validate_constraints(&vec!["c".into(); 20]).is_ok());
        assert!(validate_constraints(&vec!["c".into(); 21]).is_err());
        assert!(validate_constraints(&["ok".into(), " ".into()]).is_err());
        assert!(validate_shares(&vec!["team/k=why".into(); 10]).is_ok());
        assert!(validate_shares(&vec!["team/k=why".into(); 11]).is_err());
        assert!(validate_shares(&["team/k".into()]).is_err());
        assert!(validate_shares(&["team/k= ".into()]).is_err());
        assert_eq!(
            parse_share("team=because").unwrap(),
            Share {
                target: "team".into(),
                reason: "because".into()
            }
        );
    }

    #[test]
    fn branch_names_follow_git() {
        for ok in ["fm/t1", "feature/x.y", "a-b_c"] {
            assert!(validate_branch(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", "-x", "a..b", "a b", "a~1", "a:b", "x.lock", "a/.b", "a/", "/a", "a//b", "a@{1",
            "@", "a.", "a\tb",
        ] {
            assert!(validate_branch(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn branch_check_agrees_with_git() {
        for name in [
            "fm/t1", "a..b", "a b", "x.lock", "a/.b", "ok-1.2", "a@{1", "a^", "a.", "é",
        ] {
            let git = std::process::Command::new("git")
                .args(["check-ref-format", "--branch", name])
                .output();
            let Ok(git) = git else { return };
            assert_eq!(
                validate_branch(name).is_ok(),
                git.status.success(),
                "{name}"
            );
        }
    }

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

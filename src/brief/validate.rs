//! The limits on what the captain asks for in a brief: the intent, the
//! mission, constraints, shares, the branch name and the include, each
//! refused with the reason (exit 2) before anything is written.

use super::{MAX_CONSTRAINTS, MAX_MISSION_BYTES, MAX_SHARES, Share, check};
use crate::error::{Error, Result};

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
}

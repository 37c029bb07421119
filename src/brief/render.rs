//! Rendering a [`BriefSpec`] to Markdown (docs/spec/brief.md#anatomy): a pure function.
//!
//! Sections are built as strings without trailing newlines and joined by
//! one blank line; the file ends with exactly one newline. Empty optional
//! sections are left out entirely. Text given by the captain (intent,
//! spec, mission, charter, scope) is pasted verbatim except that its
//! level-1/2 headings outside code fences are escaped (`\# …`), so it
//! cannot end its own section early.

use super::{
    BriefHeader, BriefKind, BriefSpec, PROTOCOL_VERSION, SPEC_PLACEHOLDER, TASK_PLACEHOLDER,
};
use crate::dod;
use crate::meta::Mode;
use crate::shq;

/// The whole brief.
pub fn render(s: &BriefSpec) -> String {
    let mut sections = vec![frontmatter(s).trim_end().to_string(), preamble(s)];
    match s.kind {
        BriefKind::Ship(mode) => {
            sections.extend(task(s));
            sections.push(setup(s, true));
            sections.push(rules(s, Some(mode)));
            sections.push(inbox(s));
            sections.push(project_memory());
            sections.push(
                dod::block(mode, &s.branch, &s.default_branch, &s.paths.status)
                    .trim_end()
                    .to_string(),
            );
            sections.extend(include(s));
        }
        BriefKind::Scout => {
            sections.extend(task(s));
            sections.push(setup(s, false));
            sections.push(rules(s, None));
            sections.push(inbox(s));
            sections.push(scout_done(s));
            sections.extend(include(s));
        }
        BriefKind::Secondmate => {
            sections.push(format!(
                "# Charter\n\n{}",
                text_or(s.charter.as_ref(), TASK_PLACEHOLDER)
            ));
            sections.push(format!(
                "# Routing scope\n\n{}",
                s.scope.as_deref().map_or_else(|| {
                    "Take on the work this charter describes and route it to workers within the project clones \
                     below. Anything outside that goes up as a `needs-decision` line."
                        .to_string()
                }, verbatim)
            ));
            sections.push(projects(s));
            sections.push(inbox(s));
            sections.push(escalation(s));
            sections.push(format!(
                "# Definition of done\n\nThis charter is persistent: it has no final done. Report each finished piece \
                 of work through the status log with a done line, then keep serving your inbox:\n\n`{}`",
                shq::status_append("done", "<what was finished>", &s.paths.status)
            ));
        }
    }
    let mut out = sections.join("\n\n");
    out.push('\n');
    out
}

/// Verbatim text with leading blank lines and trailing whitespace removed.
fn clean(t: &str) -> String {
    t.trim_start_matches(['\n', '\r']).trim_end().to_string()
}

/// The captain's (or delegator's) words as they go into a section: clean,
/// with level-1/2 headings escaped so they cannot split the brief.
fn verbatim(t: &str) -> String {
    super::check::escape_headings(&clean(t))
}

fn text_or(t: Option<&String>, placeholder: &str) -> String {
    t.map(String::as_str)
        .map_or_else(|| placeholder.to_string(), verbatim)
}

fn frontmatter(s: &BriefSpec) -> String {
    let ship = matches!(s.kind, BriefKind::Ship(_));
    BriefHeader {
        id: Some(s.id.to_string()),
        protocol_version: Some(PROTOCOL_VERSION.into()),
        delegator: Some(s.delegator.clone()),
        delegatee: Some(s.id.to_string()),
        timestamp: Some(s.timestamp.clone()),
        kind: Some(s.kind.name().into()),
        mode: s.kind.mode().map(|m| m.to_string()),
        repo: (s.kind != BriefKind::Secondmate).then(|| s.repo.clone()),
        branch: ship.then(|| s.branch.clone()),
        parent_id: s
            .lineage
            .as_ref()
            .and_then(|l| l.parent.as_ref())
            .map(ToString::to_string),
        max_depth: s.lineage.as_ref().map(|l| l.max_depth.to_string()),
        current_depth: s.lineage.as_ref().map(|l| l.depth.to_string()),
    }
    .render()
}

fn preamble(s: &BriefSpec) -> String {
    match s.kind {
        BriefKind::Secondmate => format!(
            "You are the secondmate `{}`: a persistent coordinator who works without waiting for a human. \
             This charter stays in force until it is replaced or revoked.",
            s.id
        ),
        _ => format!(
            "You are an autonomous worker on task `{}`. Work through this brief without waiting for a human: \
             nobody watches this pane, and questions go through the status log described below.",
            s.id
        ),
    }
}

fn task(s: &BriefSpec) -> Vec<String> {
    let mut out = vec![
        "# Task".to_string(),
        format!(
            "## Captain's intent\n\n{}",
            text_or(s.intent.as_ref(), TASK_PLACEHOLDER)
        ),
        format!(
            "## Firstmate spec\n\n{}",
            text_or(s.spec.as_ref(), SPEC_PLACEHOLDER)
        ),
    ];
    if let Some(m) = &s.mission {
        out.push(format!("## Mission\n\n{}", verbatim(m)));
    }
    if !s.shares.is_empty() {
        let lines: Vec<String> = s
            .shares
            .iter()
            .map(|sh| format!("- {} \u{2014} {}", sh.target, sh.reason))
            .collect();
        out.push(format!(
            "## Shared memory (read-allow)\n\n{}",
            lines.join("\n")
        ));
    }
    if !s.constraints.is_empty() {
        let lines: Vec<String> = s
            .constraints
            .iter()
            .map(|c| format!("- {}", c.trim()))
            .collect();
        out.push(format!("## Constraints\n\n{}", lines.join("\n")));
    }
    out
}

fn setup(s: &BriefSpec, ship: bool) -> String {
    let wt = s.paths.worktree.display();
    let mut t = format!(
        "# Setup\n\nProve you are isolated before you change anything:\n\n\
         1. Run `pwd -P` and `git rev-parse --show-toplevel`. Both must print `{wt}`.\n\
         2. If either prints anything else, append a `blocked` line saying what you saw (see Rules), and stop."
    );
    if ship {
        t.push_str(&format!(
            "\n3. Create your branch: `git checkout -b {} --`",
            shq::quote(&s.branch)
        ));
    } else {
        t.push_str(&format!(
            "\n\nYour worktree is scratch space: create no branch and push nothing. Your deliverable is the report \
             at `{}`.",
            s.paths.report.display()
        ));
    }
    t
}

fn mode_rule(s: &BriefSpec, mode: Mode) -> String {
    let def = &s.default_branch;
    match mode {
        Mode::DirectPr => format!(
            "Never push `{def}` and never merge anything. The only thing you may push is your branch `{}`.",
            s.branch
        ),
        Mode::LocalOnly => format!(
            "Push nothing and merge nothing: this task has no remote side. Never commit to `{def}`."
        ),
        Mode::NoMistakes => format!(
            "Never push `{def}` and never merge anything: the validation pipeline pushes your branch and opens the pull request."
        ),
    }
}

fn status_rules(s: &BriefSpec) -> Vec<String> {
    vec![
        format!(
            "Report every change of phase by appending one line to your status log:\n   `{}`\n   \
             Verbs: `working`, `needs-decision`, `blocked`, `{}`, `done`, `failed`, `resolved`, `note`. \
             Take `[at=<epoch>]` from `date +%s`; name a decision with `[key=<slug>]` before the colon.",
            shq::status_append("working", "<what you are doing now>", &s.paths.status),
            s.paused_verb
        ),
        "When the same obstacle stops you twice, append a `blocked` line saying what you tried, and stop.".into(),
        "A decision above you (scope, product, anything this brief leaves open) goes in one `needs-decision` \
         line with a key; then stop and wait."
            .into(),
        "An open decision stays open until a `resolved` line with its key appears; a later `working` or `done` \
         does not close it."
            .into(),
        "Never administer infrastructure that other tasks share: no restarting shared services, no global \
         configuration changes, no touching other tasks' worktrees or branches."
            .into(),
    ]
}

fn rules(s: &BriefSpec, mode: Option<Mode>) -> String {
    let mut rules = Vec::new();
    if let Some(m) = mode {
        rules.push(mode_rule(s, m));
    }
    rules.push(format!(
        "Stay inside your worktree `{}`; outside it, touch only {}.",
        s.paths.worktree.display(),
        match mode {
            Some(_) => "your status log and your inbox".to_string(),
            None => format!(
                "your status log, your inbox and your report `{}`",
                s.paths.report.display()
            ),
        }
    ));
    rules.extend(
        s.tools
            .iter()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty()),
    );
    rules.extend(status_rules(s));
    numbered("# Rules", &rules)
}

fn numbered(heading: &str, items: &[String]) -> String {
    let mut t = format!("{heading}\n");
    for (i, r) in items.iter().enumerate() {
        t.push_str(&format!("\n{}. {r}", i + 1));
    }
    t
}

fn inbox(s: &BriefSpec) -> String {
    format!(
        "# Firstmate instruction inbox\n\nSteering messages arrive as numbered files in `{}`.\n\n\
         Whenever a doorbell line mentions it, and at every natural pause, read each `*.msg` there in numeric \
         order and act on it, then acknowledge it with `fm-ack {id} <n>` (or move it into `handled/`). \
         List them with `ls {}`. A message left unacknowledged is rung again and then escalated to the captain.",
        s.paths.inbox.display(),
        shq::quote_path(&s.paths.inbox),
        id = s.id
    )
}

fn project_memory() -> String {
    "# Project memory\n\nThe project's AGENTS.md or CLAUDE.md is memory every worker shares. Edit it only to \
     correct a fact that is wrong; do not add notes about this task."
        .into()
}

fn scout_done(s: &BriefSpec) -> String {
    format!(
        "# Definition of done\n\n\
         1. Write the report to `{}`: what you did, what you found (with evidence: commands, output, files and \
         lines), and what you recommend.\n\
         2. Append your one-line conclusion:\n   `{}`",
        s.paths.report.display(),
        shq::status_append("done", "<one-line conclusion>", &s.paths.status)
    )
}

fn projects(s: &BriefSpec) -> String {
    if s.projects.is_empty() {
        return "# Project clones\n\nNo project clones are assigned: this charter works without a repository \
                (planning, triage, coordination). Ask with a `needs-decision` line before touching any clone."
            .into();
    }
    let lines: Vec<String> = s
        .projects
        .iter()
        .map(|p| format!("- `{}`", p.display()))
        .collect();
    format!("# Project clones\n\n{}", lines.join("\n"))
}

fn escalation(s: &BriefSpec) -> String {
    let mut items = status_rules(s);
    items.insert(0, "Never push a default branch, merge, or spawn work outside your routing scope without asking first.".into());
    numbered("# Escalation", &items)
}

fn include(s: &BriefSpec) -> Option<String> {
    let text = s.include.as_deref().map(clean).filter(|t| !t.is_empty())?;
    Some(format!(
        "# Home brief additions\n\nThe text below is standing guidance from this home; where it conflicts with any \
         other section of this brief, the other section wins.\n\n{text}"
    ))
}

//! `fm-brief --check` (docs/spec/brief.md#check): is a filled brief fit to launch?
//!
//! [`problems`] is a pure function of the brief's text; [`check_brief`] is
//! the entry point the lifecycle tool calls before spawning. Headings are
//! ATX headings outside fenced code blocks (```` ``` ```` or `~~~`), so a brief that
//! quotes Markdown in a code block cannot fake or hide a section.

use std::path::PathBuf;

use serde::Serialize;

use super::{BriefHeader, SPEC_PLACEHOLDER, TASK_PLACEHOLDER, worker_label};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::fsx;
use crate::home::Home;
use crate::meta::Mode;
use crate::task_id::TaskId;

/// One heading: its level, title and 0-based line index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Heading {
    pub(crate) level: usize,
    pub(crate) title: String,
    pub(crate) line: usize,
}

fn fence_of(line: &str) -> Option<(char, usize)> {
    let t = line
        .strip_prefix("   ")
        .or_else(|| line.strip_prefix("  "))
        .or_else(|| line.strip_prefix(' '))
        .unwrap_or(line);
    let c = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = t.chars().take_while(|x| *x == c).count();
    (n >= 3).then_some((c, n))
}

fn atx(line: &str) -> Option<(usize, String)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let t = &line[indent..];
    let level = t.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &t[level..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    let title = rest.trim().trim_end_matches('#').trim_end().to_string();
    Some((level, title))
}

/// Calls `f(index, line)` for every line outside fenced code; returns
/// whether a fence is still open after the last line.
fn each_unfenced<'a>(lines: &[&'a str], mut f: impl FnMut(usize, &'a str)) -> bool {
    let mut fence: Option<(char, usize)> = None;
    for (i, line) in lines.iter().enumerate() {
        if let Some((c, n)) = fence {
            if let Some((c2, n2)) = fence_of(line)
                && c2 == c
                && n2 >= n
                && line.trim().chars().all(|x| x == c)
            {
                fence = None;
            }
            continue;
        }
        if let Some(f) = fence_of(line) {
            fence = Some(f);
            continue;
        }
        f(i, line);
    }
    fence.is_some()
}

/// Whether `text` opens a fenced code block (a ```` ``` ```` or `~~~` fence) it never closes:
/// pasted into a brief, it would hide every heading after it.
pub(crate) fn leaves_a_fence_open(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    each_unfenced(&lines, |_, _| {})
}

/// Every heading outside fenced code, in order.
pub(crate) fn headings(lines: &[&str]) -> Vec<Heading> {
    let mut out = Vec::new();
    each_unfenced(lines, |i, line| {
        if let Some((level, title)) = atx(line) {
            out.push(Heading {
                level,
                title,
                line: i,
            });
        }
    });
    out
}

/// Deepest heading level that structures a brief: `# Section` and
/// `## Subsection` end the section a text is pasted into.
pub(crate) const STRUCTURAL_LEVEL: usize = 2;

/// `text` with every level-1 or level-2 ATX heading outside fenced code
/// escaped as `\#…`, which Markdown shows as the literal line. Pasted into
/// a brief, the captain's words then stay inside their own section instead
/// of splitting the brief; deeper headings and fenced code are untouched.
pub(crate) fn escape_headings(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<String> = lines.iter().map(std::string::ToString::to_string).collect();
    each_unfenced(&lines, |i, line| {
        if atx(line).is_some_and(|(level, _)| level <= STRUCTURAL_LEVEL) {
            let indent = line.len() - line.trim_start_matches(' ').len();
            out[i] = format!("{}\\{}", &line[..indent], &line[indent..]);
        }
    });
    out.join("\n")
}

/// The body under heading `h`: up to the next heading of the same or a higher level, trimmed.
fn body(lines: &[&str], hs: &[Heading], idx: usize) -> String {
    let h = &hs[idx];
    let end = hs[idx + 1..]
        .iter()
        .find(|n| n.level <= h.level)
        .map_or(lines.len(), |n| n.line);
    lines[h.line + 1..end].join("\n").trim().to_string()
}

fn find(hs: &[Heading], level: usize, title: &str) -> Option<usize> {
    hs.iter().position(|h| h.level == level && h.title == title)
}

/// Every reason the brief is not fit to launch; empty means it passes.
/// `mode` is the expected delivery mode (`--mode`), else the frontmatter's.
pub fn problems(text: &str, mode: Option<Mode>) -> Vec<String> {
    let mut out = Vec::new();
    let header = BriefHeader::parse(text).unwrap_or_else(|e| {
        out.push(format!("frontmatter missing or unparsable: {e}"));
        BriefHeader::default()
    });
    let kind = header.kind.clone().unwrap_or_else(|| "ship".into());
    let lines: Vec<&str> = text.lines().collect();
    let hs = headings(&lines);
    if kind == "secondmate" {
        match find(&hs, 1, "Charter") {
            None => out.push("missing `# Charter`".into()),
            Some(i) => {
                let b = body(&lines, &hs, i);
                if b.is_empty() {
                    out.push("`# Charter` is blank".into());
                } else if b.contains(TASK_PLACEHOLDER) {
                    out.push(format!(
                        "placeholder {TASK_PLACEHOLDER} is still in `# Charter`"
                    ));
                }
            }
        }
        if let Some(m) = mode {
            out.push(format!("delivery mismatch: a secondmate charter has no delivery contract, expected mode={m}"));
        }
        return out;
    }
    for (title, placeholder) in [
        ("Captain's intent", TASK_PLACEHOLDER),
        ("Firstmate spec", SPEC_PLACEHOLDER),
    ] {
        match find(&hs, 2, title) {
            None => out.push(format!("missing `## {title}`")),
            Some(i) => {
                let b = body(&lines, &hs, i);
                if b.is_empty() {
                    out.push(format!("`## {title}` is blank"));
                } else if b == placeholder {
                    out.push(format!(
                        "placeholder {placeholder} still fills `## {title}`"
                    ));
                } else if title == "Captain's intent"
                    && let Some(label) = b
                        .lines()
                        .find(|l| !l.trim().is_empty())
                        .and_then(worker_label)
                {
                    out.push(format!("the intent opens with the worker-addressed label {label:?}; it must be the captain's words"));
                }
            }
        }
    }
    let expected = mode.map(|m| m.to_string()).or(header.mode);
    let dod = hs
        .iter()
        .rposition(|h| h.level == 1 && h.title == "Definition of done");
    let contract = dod
        .and_then(|i| {
            lines[hs[i].line + 1..]
                .iter()
                .find(|l| !l.trim().is_empty())
        })
        .map(|l| l.trim());
    let found = contract.and_then(|l| l.strip_prefix("Delivery contract: mode="));
    match (kind.as_str(), expected, found) {
        ("scout", None, _) => {}
        (_, None, _) => out.push("no delivery mode: the frontmatter names none and --mode was not given".into()),
        (_, Some(want), Some(got)) if got == want => {}
        (_, Some(want), Some(got)) => out.push(format!("delivery mismatch: the brief says mode={got}, expected mode={want}")),
        (_, Some(want), None) if dod.is_none() => out.push(format!("delivery mismatch: no `# Definition of done`, expected mode={want}")),
        (_, Some(want), None) => out.push(format!(
            "delivery mismatch: no `Delivery contract: mode={want}` line directly under `# Definition of done`"
        )),
    }
    out
}

/// The outcome of checking one brief.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub path: PathBuf,
    pub ok: bool,
    pub problems: Vec<String>,
}

/// Checks task `id`'s brief (docs/spec/brief.md#check). `mode` is `--mode` as given; an
/// unknown mode is a usage error, a missing brief a refusal.
pub fn check_brief(
    home: &Home,
    _cfg: &Config,
    id: &TaskId,
    mode: Option<&str>,
) -> Result<CheckReport> {
    let mode = mode.map(Mode::parse).transpose()?;
    fsx::refuse_symlink(&home.task_data(id))?;
    let path = home.brief(id);
    let bytes = fsx::read_optional(&path)?.ok_or_else(|| Error::NoBrief {
        id: id.to_string(),
        path: path.clone(),
    })?;
    let problems = problems(&String::from_utf8_lossy(&bytes), mode);
    Ok(CheckReport {
        ok: problems.is_empty(),
        path,
        problems,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FM: &str = "---\nid: t\nkind: ship\nmode: direct-PR\n---\n";

    fn brief(intent: &str, spec: &str, dod: &str) -> String {
        format!(
            "{FM}\n# Task\n\n## Captain's intent\n\n{intent}\n\n## Firstmate spec\n\n{spec}\n\n# Definition of done\n\n{dod}\n"
        )
    }

    #[test]
    fn a_filled_brief_passes() {
        let b = brief(
            "Make login fast.",
            "Profile, then fix.",
            "Delivery contract: mode=direct-PR\nShip branch: fm/t",
        );
        assert_eq!(problems(&b, None), Vec::<String>::new());
        assert_eq!(problems(&b, Some(Mode::DirectPr)), Vec::<String>::new());
        assert!(problems(&b, Some(Mode::LocalOnly))[0].contains("delivery mismatch"));
    }

    #[test]
    fn scaffolds_blanks_and_labels_are_refused() {
        let ok_dod = "Delivery contract: mode=direct-PR";
        let p = problems(&brief("{TASK}", "{FIRSTMATE_SPEC}", ok_dod), None);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(problems(&brief("  ", "x", ok_dod), None)[0].contains("blank"));
        assert!(problems(&brief("Captain: fix it", "x", ok_dod), None)[0].contains("label"));
        assert!(problems("no frontmatter\n", None)[0].contains("frontmatter"));
    }

    #[test]
    fn an_unclosed_fence_is_told_from_a_closed_one() {
        assert!(leaves_a_fence_open("see:\n```\nunclosed"));
        assert!(leaves_a_fence_open("~~~~\nx\n~~~\n"));
        assert!(!leaves_a_fence_open("see:\n```rust\nfn x() {}\n```\nfine"));
        assert!(!leaves_a_fence_open("no fences at all"));
    }

    #[test]
    fn headings_in_fences_do_not_count() {
        let b = format!(
            "{FM}\n## Captain's intent\n\nquote:\n```md\n## Firstmate spec\n\nfake\n# Definition of done\n\nDelivery contract: mode=direct-PR\n```\n"
        );
        let p = problems(&b, None);
        assert!(
            p.iter().any(|x| x.contains("missing `## Firstmate spec`")),
            "{p:?}"
        );
        assert!(
            p.iter().any(|x| x.contains("no `# Definition of done`")),
            "{p:?}"
        );
        let lines: Vec<&str> = "~~~~\n# a\n~~~\n# b\n~~~~\n# c".lines().collect();
        assert_eq!(
            headings(&lines)
                .iter()
                .map(|h| h.title.as_str())
                .collect::<Vec<_>>(),
            ["c"]
        );
    }

    #[test]
    fn contract_must_sit_directly_under_the_last_dod() {
        let b = brief(
            "i",
            "s",
            "Some words first.\n\nDelivery contract: mode=direct-PR",
        );
        assert!(problems(&b, None)[0].contains("directly under"));
    }

    #[test]
    fn escaped_headings_are_text_and_the_rest_is_unchanged() {
        let t = "# Background\nwords\n  ## Goal ##\n### Detail\n```\n# quoted\n```\n#hashtag";
        let e = escape_headings(t);
        assert_eq!(
            e,
            "\\# Background\nwords\n  \\## Goal ##\n### Detail\n```\n# quoted\n```\n#hashtag"
        );
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(
            headings(&lines).iter().map(|h| h.level).collect::<Vec<_>>(),
            [3]
        );
        let b = brief(&e, "s", "Delivery contract: mode=direct-PR");
        assert_eq!(problems(&b, None), Vec::<String>::new());
    }

    proptest::proptest! {
        #[test]
        fn escaping_leaves_no_structural_heading(s in "([ #`~a-z]{0,12}\n){0,10}") {
            let e = escape_headings(&s);
            let lines: Vec<&str> = e.lines().collect();
            proptest::prop_assert!(headings(&lines).iter().all(|h| h.level > STRUCTURAL_LEVEL));
            proptest::prop_assert_eq!(e.replace('\\', ""), s.replace('\\', ""));
        }
    }
}

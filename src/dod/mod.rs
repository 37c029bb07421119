//! The definition of done (docs/spec/dod.md): the `# Definition of done` section a
//! ship brief embeds (and `fm-dod <mode> <id>` prints, from this same
//! renderer), and — in [`gate`] — the check that a worker's `done` is real.
//!
//! The section's first line below the heading is the machine-read marker
//! `Delivery contract: mode=<mode>`, then `Ship branch: <branch>`; both are
//! exact, because `fm-brief --check` and people's scripts read them.

use std::path::Path;

use crate::meta::Mode;
use crate::shq;

mod done_line;
pub mod gate;
pub(crate) use done_line::pr_url;
pub use gate::{Verdict, gate};

/// The marker line `fm-brief --check` reads directly under the heading.
pub(crate) fn contract_line(mode: Mode) -> String {
    format!("Delivery contract: mode={mode}")
}

/// The whole `# Definition of done` section of a ship brief, ending in `\n`.
pub(crate) fn block(mode: Mode, branch: &str, default_branch: &str, status_path: &Path) -> String {
    let append = |text: &str| format!("`{}`", shq::status_append("done", text, status_path));
    let qb = shq::quote(branch);
    let mut s = format!(
        "# Definition of done\n\n{}\nShip branch: {branch}\n\n\
         The work counts only once it is committed on `{branch}`: uncommitted \
         changes do not exist for anyone but you.\n\n",
        contract_line(mode)
    );
    let steps: Vec<String> = match mode {
        Mode::DirectPr => vec![
            format!("Push only your branch: `git push -u origin {qb}`. Never push any other branch."),
            "Open a ready pull request (not a draft) from that branch.".into(),
            format!("Append the done line with the pull request's full https URL:\n   {}", append("PR <full https URL>")),
        ],
        Mode::LocalOnly => vec![
            "Add no remote, push nothing and open no pull request.".into(),
            format!(
                "Keep `{branch}` a fast-forward of `{default_branch}`: if `{default_branch}` moved, \
                 rebase onto it (`git rebase {}`) and test again.",
                shq::quote(default_branch)
            ),
            format!("Append the done line:\n   {}", append(&format!("ready in branch {branch}"))),
        ],
        Mode::NoMistakes => vec![
            format!(
                "Hand off to the validation pipeline by appending a done line with a one-line summary:\n   {}",
                append("<summary>")
            ),
            "Drive the pipeline by answering its gates. Never fix code by hand while a run is in \
             progress, and never approve automatically with `--yes`."
                .into(),
            "When the pipeline asks the user about findings, escalate them as one `needs-decision` \
             line with a key, and wait for its `resolved` line."
                .into(),
            format!("When CI is green, append the final done line:\n   {}", append("PR <url> checks green")),
        ],
    };
    for (i, step) in steps.iter().enumerate() {
        s.push_str(&format!("{}. {step}\n", i + 1));
    }
    s.push_str(
        "\nYour done line is verified, not trusted: it is accepted only when the commit your \
         worktree's HEAD names is reachable outside your worktree.\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_opens_with_the_machine_read_lines() {
        for m in Mode::ALL {
            let b = block(m, "fm/t1", "main", Path::new("/h/it's/state/t1.status"));
            let mut lines = b.lines();
            assert_eq!(lines.next(), Some("# Definition of done"));
            assert_eq!(lines.next(), Some(""));
            assert_eq!(lines.next(), Some(contract_line(m).as_str()));
            assert_eq!(lines.next(), Some("Ship branch: fm/t1"));
            assert!(b.contains(">> '/h/it'\\''s/state/t1.status'"), "{b}");
            assert!(b.ends_with(".\n"));
        }
    }
}

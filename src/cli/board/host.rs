//! `fm-board --host <name> list|show`: the far host's own `fm-board`
//! reading that host's board (docs/remote.md, "The board of another
//! host").

use super::{Args, Cmd, TOOL};
use crate::cli::common::Ctx;
use crate::error::Result;
use crate::route::{self, Place};

/// `fm-board --host <name> list|show`: read on that host's board by the
/// far host's own `fm-board` (a read is safe to repeat). A change or a
/// dispatch is a typed request of the far entry
/// ([`crate::route::board`]).
pub(super) fn remote_read(a: &Args, ctx: &Ctx, place: &Place) -> Result<u8> {
    let Place::Host(host) = place else {
        return Ok(0);
    };
    let mut words = far_words(&a.cmd);
    if a.json {
        words.insert(0, "--json".into());
    }
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    route::read::relay(&ctx.home, host, TOOL, &words)
}

/// The far `fm-board` arguments of a command, as the far side parses them
/// (`--flag=value`, so a value starting with `-` stays a value).
fn far_words(cmd: &Cmd) -> Vec<String> {
    let mut w: Vec<String> = Vec::new();
    let mut push = |words: &[&str]| w.extend(words.iter().map(|s| (*s).to_string()));
    match cmd {
        Cmd::List { status } => {
            push(&["list"]);
            if let Some(st) = status {
                push(&[&format!("--status={st}")]);
            }
        }
        Cmd::Show { task } => push(&["show", task]),
        _ => {}
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn the_far_words_parse_back_to_the_same_command() {
        let cases: &[&[&str]] = &[
            &["list", "--status", "pending"],
            &["list"],
            &["show", "T-1"],
        ];
        for argv in cases {
            let a = Args::try_parse_from(std::iter::once("fm-board").chain(argv.iter().copied()))
                .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
            let words = far_words(&a.cmd);
            let b = Args::try_parse_from(
                std::iter::once("fm-board".to_string()).chain(words.iter().cloned()),
            )
            .unwrap_or_else(|e| panic!("{words:?}: {e}"));
            assert_eq!(format!("{:?}", a.cmd), format!("{:?}", b.cmd), "{words:?}");
        }
    }

    #[test]
    fn every_board_change_travels_as_data_and_parses_back_the_same() {
        // Values that look like options, quotes, `$`, a newline: data,
        // never a command line.
        let cases: &[&[&str]] = &[
            &[
                "add",
                "--description=-n it's\nx",
                "--priority=-3",
                "--",
                "-subject",
            ],
            &[
                "add",
                "s",
                "--assignee",
                "w1",
                "--blocked-by",
                "T-1,2",
                "--require-approval",
            ],
            &["claim", "T-1", "--as", "w1"],
            &["complete", "1", "--result=-r $x", "--as", "w1"],
            &["complete", "1", "--result", "ok"],
            &["reject", "1", "--reason=-no"],
            &["cancel", "1", "--reason", "x"],
            &["fail", "1", "--reason", "x"],
            &["retry", "1"],
            &["review", "1"],
            &["approve", "1"],
            &[
                "comment",
                "1",
                "--blocker",
                "--as",
                "w1",
                "--",
                "--as",
                "x",
                "-",
            ],
            &["comment", "1", "plain", "words"],
            &["progress", "1", "40", "--step=-s", "--as", "w1"],
        ];
        for argv in cases {
            let a = Args::try_parse_from(std::iter::once("fm-board").chain(argv.iter().copied()))
                .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
            let w = super::super::write_of(a.cmd).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
            let line = serde_json::to_string(&w).unwrap();
            let back: crate::route::board::BoardWrite = serde_json::from_str(&line).unwrap();
            assert_eq!(back, w, "{line}");
        }
    }
}

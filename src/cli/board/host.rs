//! `fm-board --host <name>`: the far host's own `fm-board` on that
//! host's board, its arguments travelling on stdin (docs/remote.md, "The
//! board of another host").

use std::ffi::OsString;

use super::{Args, Cmd, MAX_TEXT, TOOL};
use crate::error::{Error, Result};
use crate::route;

/// The far side of a board change across hosts: `fm-board
/// [--idempotency-key K] --args-stdin` takes the rest of its arguments
/// from stdin, NUL-separated, so a comment, a result or a description
/// never travels on a command line. Only in that place (first, or right
/// after the key): a word of the text is never read as this flag.
pub(super) fn args_from_stdin(mut args: Vec<OsString>) -> Result<Vec<OsString>> {
    const FLAG: &str = "--args-stdin";
    let at = match args.get(1).and_then(|a| a.to_str()) {
        Some(FLAG) => 1,
        Some("--idempotency-key") if args.get(3).is_some_and(|a| a == FLAG) => 3,
        _ => return Ok(args),
    };
    if args.len() != at + 1 {
        return Err(Error::usage(format!("{FLAG} must be the last argument")));
    }
    let mut buf = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::io::stdin().lock(), 4 * MAX_TEXT as u64),
        &mut buf,
    )
    .map_err(|e| Error::io("read", "<stdin>", e))?;
    args.pop();
    let text = String::from_utf8(buf).map_err(|_| Error::usage("arguments are not UTF-8"))?;
    let text = text.strip_suffix('\0').unwrap_or(&text);
    args.extend(text.split('\0').map(OsString::from));
    Ok(args)
}

/// `fm-board --host <name> …`: the far host's own `fm-board`, on that
/// host's board. A change or a dispatch travels with an idempotency key
/// and its arguments on stdin ([`args_from_stdin`]), so a retry after a
/// dropped connection changes the board once and dispatches each task
/// once; `list` and `show` are read there (docs/remote.md).
pub(super) fn remote_board(a: &Args, name: &str) -> Result<u8> {
    let ctx = a.home.ctx(TOOL)?;
    let host = route::host_named(&ctx.cfg, name)?;
    let mut words = far_words(&a.cmd);
    if a.json {
        words.insert(0, "--json".into());
    }
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    match &a.cmd {
        Cmd::List { .. } | Cmd::Show { .. } => route::read::relay(&ctx.home, &host, TOOL, &words),
        _ => {
            let stdin = words.join("\0");
            route::tool::write(
                &ctx.home,
                &host,
                "board",
                TOOL,
                &["--args-stdin"],
                Some(stdin.as_bytes()),
                a.idempotency_key.as_deref(),
            )
        }
    }
}

/// The far `fm-board` arguments of a command, as the far side parses them
/// (`--flag=value`, so a value starting with `-` stays a value).
fn far_words(cmd: &Cmd) -> Vec<String> {
    let mut w: Vec<String> = Vec::new();
    let mut push = |words: &[&str]| w.extend(words.iter().map(|s| (*s).to_string()));
    match cmd {
        Cmd::Add {
            subject,
            description,
            assignee,
            blocked_by,
            priority,
            require_approval,
        } => {
            push(&["add"]);
            if let Some(d) = description {
                push(&[&format!("--description={d}")]);
            }
            if let Some(x) = assignee {
                push(&[&format!("--assignee={x}")]);
            }
            if !blocked_by.is_empty() {
                push(&[&format!("--blocked-by={}", blocked_by.join(","))]);
            }
            push(&[&format!("--priority={priority}")]);
            if *require_approval {
                push(&["--require-approval"]);
            }
            push(&["--", subject]);
        }
        Cmd::Claim { task, by } => push(&["claim", task, &format!("--as={by}")]),
        Cmd::Complete { task, result, by } => {
            push(&["complete", task, &format!("--result={result}")]);
            if let Some(b) = by {
                push(&[&format!("--as={b}")]);
            }
        }
        Cmd::Review { task } => push(&["review", task]),
        Cmd::Approve { task } => push(&["approve", task]),
        Cmd::Reject { task, reason } => push(&["reject", task, &format!("--reason={reason}")]),
        Cmd::Cancel { task, reason } => push(&["cancel", task, &format!("--reason={reason}")]),
        Cmd::Fail { task, reason } => push(&["fail", task, &format!("--reason={reason}")]),
        Cmd::Retry { task } => push(&["retry", task]),
        Cmd::Comment {
            task,
            text,
            blocker,
            by,
        } => {
            push(&["comment", task]);
            if *blocker {
                push(&["--blocker"]);
            }
            if let Some(b) = by {
                push(&[&format!("--as={b}")]);
            }
            push(&["--"]);
            w.extend(text.iter().cloned());
        }
        Cmd::Progress {
            task,
            percent,
            step,
            by,
        } => {
            push(&["progress", task, &percent.to_string()]);
            if let Some(st) = step {
                push(&[&format!("--step={st}")]);
            }
            if let Some(b) = by {
                push(&[&format!("--as={b}")]);
            }
        }
        Cmd::List { status } => {
            push(&["list"]);
            if let Some(st) = status {
                push(&[&format!("--status={st}")]);
            }
        }
        Cmd::Show { task } => push(&["show", task]),
        Cmd::Dispatch => push(&["dispatch"]),
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
            &["list", "--status", "pending"],
            &["show", "T-1"],
            &["dispatch"],
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
    fn arguments_come_from_stdin_only_in_the_far_place() {
        let os = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        // Anywhere else the flag is left to clap (a text word, or an error).
        for v in [
            &["fm-board", "comment", "1", "--args-stdin"][..],
            &["fm-board", "--json", "--args-stdin"],
            &["fm-board", "list"],
        ] {
            assert_eq!(args_from_stdin(os(v)).unwrap(), os(v));
        }
        let e = args_from_stdin(os(&["fm-board", "--args-stdin", "list"])).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }
}

//! `fm-board` (SPEC §11.1): the task board's command line. Parsing and
//! printing live here; transitions are in [`crate::board::ops`] and every
//! write goes through [`crate::board::store`] under the board lock.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use super::common::{self, Ctx, HomeArg};
use crate::board::ops::Op;
use crate::board::store::{self, NewTask};
use crate::board::{BoardId, Status, Task, apply, dispatch};
use crate::clock;
use crate::error::{Error, Result};
use crate::remote;
use crate::task_id::TaskId;

const TOOL: &str = "fm-board";
const MAX_SUBJECT: usize = 1000;
const MAX_TEXT: usize = 65536;

/// Task board: claims, dependencies, approvals and dispatch into inboxes.
#[derive(Debug, Parser)]
#[command(
    name = "fm-board",
    version,
    after_help = "Task ids: T-001, T-1 or 1.\n\nExamples:\n  fm-board add 'Fix the login form' --assignee fix-login --priority 2\n  fm-board add 'Ship the release' --blocked-by T-1,T-2 --require-approval\n  fm-board claim T-1 --as fix-login\n  fm-board complete 1 --result 'PR #42 merged' --as fix-login\n  fm-board comment T-3 --blocker 'no credentials for staging' --as worker-2\n  fm-board list --status pending --json\n  fm-board dispatch"
)]
pub(crate) struct Args {
    #[command(subcommand)]
    cmd: Cmd,
    /// Print JSON (the task object; an array for list and dispatch)
    #[arg(long, global = true)]
    json: bool,
    /// Act on the board of this configured host, over ssh (docs/remote.md)
    #[arg(long, value_name = "NAME", global = true)]
    host: Option<String>,
    /// Key of a board change made across hosts: a key already served
    /// prints that call's answer again and changes nothing
    #[arg(long = "idempotency-key", value_name = "KEY")]
    idempotency_key: Option<String>,
    #[command(flatten)]
    home: HomeArg,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Add a task; prints "<id> <status>"
    Add {
        subject: String,
        #[arg(long, value_name = "T")]
        description: Option<String>,
        /// Worker (task id) that dispatch hands the task to
        #[arg(long, value_name = "ID")]
        assignee: Option<String>,
        /// Tasks that must finish first (comma-separated)
        #[arg(long, value_name = "T-1,T-2", value_delimiter = ',')]
        blocked_by: Vec<String>,
        #[arg(
            long,
            value_name = "N",
            default_value_t = 0,
            allow_negative_numbers = true
        )]
        priority: i64,
        /// Completion goes through review and approve
        #[arg(long)]
        require_approval: bool,
    },
    /// Take a pending task
    Claim {
        task: String,
        #[arg(long = "as", value_name = "ID")]
        by: String,
    },
    /// Finish a task (a pending one is claimed first)
    Complete {
        task: String,
        #[arg(long, value_name = "T")]
        result: String,
        #[arg(long = "as", value_name = "ID")]
        by: Option<String>,
    },
    /// Submit an in-progress task for approval (--require-approval tasks)
    Review { task: String },
    /// Approve a task in review: it completes
    Approve { task: String },
    /// Reject a task in review: it is cancelled
    Reject {
        task: String,
        #[arg(long, value_name = "R")]
        reason: String,
    },
    /// Cancel a task
    Cancel {
        task: String,
        #[arg(long, value_name = "R")]
        reason: String,
    },
    /// Fail a task
    Fail {
        task: String,
        #[arg(long, value_name = "R")]
        reason: String,
    },
    /// Put a failed, cancelled or stale task back in the queue
    Retry { task: String },
    /// Comment on a task; --blocker fails it and wakes the captain
    Comment {
        task: String,
        /// Comment text (words are joined with spaces; put `--` before text that starts with '-')
        #[arg(required = true, num_args = 1..)]
        text: Vec<String>,
        #[arg(long)]
        blocker: bool,
        #[arg(long = "as", value_name = "ID")]
        by: Option<String>,
    },
    /// Record progress on an in-progress task
    Progress {
        task: String,
        #[arg(value_parser = clap::value_parser!(u8).range(0..=100))]
        percent: u8,
        #[arg(long, value_name = "S")]
        step: Option<String>,
        #[arg(long = "as", value_name = "ID")]
        by: Option<String>,
    },
    /// List tasks (sorted by id)
    List {
        #[arg(long, value_name = "S", value_parser = Status::ALL.map(Status::as_str))]
        status: Option<String>,
    },
    /// Show one task
    Show { task: String },
    /// Queue pending assigned tasks into their assignees' inboxes; re-send unacknowledged ones
    Dispatch,
}

pub(crate) fn command() -> clap::Command {
    Args::command()
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    match args_from_stdin(args) {
        Ok(args) => common::run_tool(TOOL, args, run),
        Err(e) => {
            crate::output::error(TOOL, &e.to_string());
            ExitCode::from(e.exit_code())
        }
    }
}

/// The far side of a board change across hosts: `fm-board
/// [--idempotency-key K] --args-stdin` takes the rest of its arguments
/// from stdin, NUL-separated, so a comment, a result or a description
/// never travels on a command line. Only in that place (first, or right
/// after the key): a word of the text is never read as this flag.
fn args_from_stdin(mut args: Vec<OsString>) -> Result<Vec<OsString>> {
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

fn text(what: &str, s: &str, max: usize) -> Result<String> {
    if s.trim().is_empty() {
        return Err(Error::usage(format!("{what} is empty")));
    }
    if s.len() > max {
        return Err(Error::usage(format!("{what} is longer than {max} bytes")));
    }
    Ok(s.to_string())
}

fn worker(raw: &str) -> Result<String> {
    Ok(TaskId::parse(raw)?.as_str().to_string())
}

/// A board change, its arguments checked, not yet made.
enum Write {
    Add(NewTask),
    Change {
        task: BoardId,
        op: Op,
        actor: String,
    },
}

fn change_of(task: &str, op: Op, actor: &str) -> Result<Write> {
    Ok(Write::Change {
        task: BoardId::parse(task)?,
        op,
        actor: actor.to_string(),
    })
}

fn run(a: Args) -> Result<u8> {
    if let Some(name) = a.host.as_deref() {
        return remote_board(&a, name);
    }
    let now = clock::now();
    // What a keyed change asks for (the key is bound to it): the command
    // with its arguments as given, and the output form.
    let asked = format!("{:?} json={}", a.cmd, a.json);
    let write = match a.cmd {
        Cmd::List { status } => {
            let ctx = a.home.ctx(TOOL)?;
            return super::board_view::list(
                &ctx,
                status.as_deref().and_then(Status::parse),
                a.json,
            );
        }
        Cmd::Show { task } => {
            let id = BoardId::parse(&task)?;
            let ctx = a.home.ctx(TOOL)?;
            let t = store::load(&ctx.home, id)?;
            return super::board_view::show(&t, a.json);
        }
        Cmd::Dispatch => {
            let ctx = a.home.ctx(TOOL)?;
            return match a.idempotency_key.as_deref() {
                None => run_dispatch(&ctx, a.json, now),
                Some(k) => run_dispatch_keyed(&ctx, k, &asked, a.json, now),
            };
        }
        cmd => write_of(cmd)?,
    };
    let ctx = a.home.ctx(TOOL)?;
    // Across hosts: a key already served answers again and changes
    // nothing; a new one is kept with the answer before it is printed.
    let fresh = match a.idempotency_key.as_deref() {
        None => None,
        Some(k) => match remote::seen::lookup_board(&ctx.home, k, &board_request(&asked))? {
            remote::seen::Lookup::Seen(answer) => return answer.replay(),
            remote::seen::Lookup::Fresh(f) => Some(f),
        },
    };
    let report = make(&ctx, write, a.json, now)?;
    if let Some(f) = fresh {
        let answer = remote::seen::Answer {
            code: 0,
            stdout: report.clone(),
        };
        if let Err(e) = f.remember(&answer) {
            crate::output::err_line(&format!(
                "{TOOL}: warning: board changed, but its idempotency key was not kept: {e}"
            ));
        }
    }
    crate::output::out_block(&report)?;
    Ok(0)
}

/// Checks a change's arguments.
fn write_of(cmd: Cmd) -> Result<Write> {
    match cmd {
        Cmd::Add {
            subject,
            description,
            assignee,
            blocked_by,
            priority,
            require_approval,
        } => {
            let subject = text("subject", &subject, MAX_SUBJECT)?;
            if subject.contains(['\n', '\r']) {
                return Err(Error::usage("subject must be one line"));
            }
            Ok(Write::Add(NewTask {
                subject,
                description: description
                    .map(|d| text("description", &d, MAX_TEXT))
                    .transpose()?
                    .unwrap_or_default(),
                assignee: assignee.as_deref().map(worker).transpose()?,
                blocked_by: blocked_by
                    .iter()
                    .map(|b| BoardId::parse(b.trim()))
                    .collect::<Result<_>>()?,
                priority,
                require_approval,
            }))
        }
        Cmd::Claim { task, by } => {
            let by = worker(&by)?;
            change_of(&task, Op::Claim { by: by.clone() }, &by)
        }
        Cmd::Complete { task, result, by } => {
            let by = by.as_deref().map(worker).transpose()?;
            let op = Op::Complete {
                result: text("--result", &result, MAX_TEXT)?,
                by: by.clone(),
            };
            change_of(&task, op, by.as_deref().unwrap_or(""))
        }
        Cmd::Review { task } => change_of(&task, Op::Review, ""),
        Cmd::Approve { task } => change_of(&task, Op::Approve, ""),
        Cmd::Reject { task, reason } => {
            let op = Op::Reject {
                reason: text("--reason", &reason, MAX_TEXT)?,
            };
            change_of(&task, op, "")
        }
        Cmd::Cancel { task, reason } => {
            let op = Op::Cancel {
                reason: text("--reason", &reason, MAX_TEXT)?,
            };
            change_of(&task, op, "")
        }
        Cmd::Fail { task, reason } => {
            let op = Op::Fail {
                reason: text("--reason", &reason, MAX_TEXT)?,
            };
            change_of(&task, op, "")
        }
        Cmd::Retry { task } => change_of(&task, Op::Retry, ""),
        Cmd::Comment {
            task,
            text: words,
            blocker,
            by,
        } => {
            let by = by
                .as_deref()
                .map(worker)
                .transpose()?
                .unwrap_or_else(|| "captain".into());
            let op = Op::Comment {
                text: text("comment", &words.join(" "), MAX_TEXT)?,
                by: by.clone(),
                blocker,
            };
            change_of(&task, op, &by)
        }
        Cmd::Progress {
            task,
            percent,
            step,
            by,
        } => {
            let by = by.as_deref().map(worker).transpose()?;
            let step = step.map(|s| text("--step", &s, MAX_SUBJECT)).transpose()?;
            change_of(
                &task,
                Op::Progress { percent, step },
                by.as_deref().unwrap_or(""),
            )
        }
        Cmd::List { .. } | Cmd::Show { .. } | Cmd::Dispatch => {
            Err(Error::usage("not a board change"))
        }
    }
}

/// Makes the change (the library records its events and, for a blocker
/// comment, the wake) and returns what it prints.
fn make(ctx: &Ctx, write: Write, json: bool, now: u64) -> Result<String> {
    match write {
        Write::Add(new) => {
            let t = apply::add(&ctx.home, new, now)?;
            task_line(&t, json)
        }
        Write::Change { task, op, actor } => {
            let c = apply::change(&ctx.home, &ctx.cfg, task, &op, &actor, now)?;
            let mut report = task_line(&c.after, json)?;
            if !json {
                for r in &c.released {
                    report.push_str(&format!("released {} {}\n", r.id, r.status));
                }
            }
            Ok(report)
        }
    }
}

/// The line of one task: `<id> <status>`, or its JSON object.
fn task_line(t: &Task, json: bool) -> Result<String> {
    let mut line = if json {
        crate::output::json_line(t)?
    } else {
        format!("{} {}", t.id, t.status)
    };
    line.push('\n');
    Ok(line)
}

fn run_dispatch(ctx: &Ctx, json: bool, now: u64) -> Result<u8> {
    let outcomes = dispatch::dispatch(&ctx.home, &ctx.cfg, now)?;
    super::board_view::dispatch_report(&outcomes, json)?;
    Ok(u8::from(outcomes.iter().any(|o| o.action == "error")))
}

/// The far side of `fm-board --host <name> dispatch`: a dispatch under a
/// key. A key already served prints its answer again and does nothing; a
/// new one runs the dispatch with each task's step noted beside the key
/// ([`dispatch::Journal`]), so a run killed midway and retried under the
/// same key finishes what it began and acts on no task twice. Once the
/// records are queued the answer is kept with the doorbells `ringing`
/// and the key lock released (a retry during the rings gets it at once),
/// then the final answer after the rings (docs/remote.md).
fn run_dispatch_keyed(ctx: &Ctx, key: &str, asked: &str, json: bool, now: u64) -> Result<u8> {
    let fresh = match remote::seen::lookup_board(&ctx.home, key, &board_request(asked))? {
        remote::seen::Lookup::Seen(answer) => return answer.replay(),
        remote::seen::Lookup::Fresh(f) => f,
    };
    let mut journal = KeyJournal(&fresh);
    let mut outcomes = dispatch::queue_all(&ctx.home, &ctx.cfg, now, Some(&mut journal))?;
    let code = u8::from(outcomes.iter().any(|o| o.action == "error"));
    let mut ringing = outcomes.clone();
    for o in ringing
        .iter_mut()
        .filter(|o| matches!(o.action, "dispatched" | "resent"))
    {
        o.doorbell = Some("ringing".into());
    }
    let provisional = remote::seen::Answer {
        code,
        stdout: super::board_view::dispatch_text(&ringing, json)?,
    };
    let held = fresh.hold(&provisional);
    dispatch::ring_and_record(&ctx.home, &ctx.cfg, now, &mut outcomes);
    let answer = remote::seen::Answer {
        code,
        stdout: super::board_view::dispatch_text(&outcomes, json)?,
    };
    if let Err(e) = held.and_then(|h| h.finish(&answer)) {
        crate::output::err_line(&format!(
            "{TOOL}: warning: dispatched, but its idempotency key was not kept: {e}"
        ));
    }
    answer.replay()
}

/// The request a board key is bound to: `asked` is the command as given.
fn board_request(asked: &str) -> remote::seen::Request {
    remote::seen::Request::new(TOOL, "board", &[asked.as_bytes()])
}

/// A keyed dispatch's notes, one per task, beside its key in the board's
/// keys (`<key>#T-NNN`, the note as JSON).
struct KeyJournal<'a>(&'a remote::seen::Fresh);

impl dispatch::Journal for KeyJournal<'_> {
    fn get(&mut self, task: BoardId) -> Result<Option<dispatch::Note>> {
        Ok(self
            .0
            .noted(&task.to_string())?
            .and_then(|a| serde_json::from_str(&a.stdout).ok()))
    }

    fn put(&mut self, task: BoardId, note: &dispatch::Note) -> Result<()> {
        let stdout = serde_json::to_string(note).map_err(|e| Error::External {
            program: "serde_json".into(),
            msg: e.to_string(),
        })?;
        self.0
            .note(&task.to_string(), &remote::seen::Answer { code: 0, stdout })
    }
}

/// `fm-board --host <name> …`: the far host's own `fm-board`, on that
/// host's board. A change or a dispatch travels with an idempotency key
/// and its arguments on stdin ([`args_from_stdin`]), so a retry after a
/// dropped connection changes the board once and dispatches each task
/// once; `list` and `show` are read there (docs/remote.md).
fn remote_board(a: &Args, name: &str) -> Result<u8> {
    let ctx = a.home.ctx(TOOL)?;
    let host = remote::call::named(&ctx.cfg, name)?;
    let mut words = far_words(&a.cmd);
    if a.json {
        words.insert(0, "--json".into());
    }
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    match &a.cmd {
        Cmd::List { .. } | Cmd::Show { .. } => remote::call::relay(&ctx.home, &host, TOOL, &words),
        _ => {
            let stdin = words.join("\0");
            remote::call::write_for(
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

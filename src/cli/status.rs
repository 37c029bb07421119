//! `fm-status` (docs/spec/status.md#fm-status, docs/spec/crew-state.md#busy-record): append a
//! status line, write the busy
//! record, or show the fold.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use serde::Serialize;

use super::common::{self, HomeArg};
use crate::error::{Error, Result};
use crate::route::status::AppendRequest;
use crate::route::{self, Task};
use crate::status::{self, Current, Decision, Fold, Parsed};
use crate::task_id::TaskId;
use crate::{clock, fsx};

const TOOL: &str = "fm-status";

/// Append to a task's status log, record busy/idle, or show its state.
#[derive(Debug, Parser)]
#[command(
    name = "fm-status",
    version,
    after_help = "Options go before the text. A text word that is one of this tool's options (--key, --json, …) is refused unless `--` comes before the text.\n\nExamples:\n  fm-status fix-login working compiling the parser\n  fm-status fix-login needs-decision --key db which database should I use?\n  fm-status fix-login --busy --source prompt-hook\n  fm-status fix-login --json\n  fm-status fix-login note -- --force was not needed"
)]
pub(crate) struct Args {
    /// Task id
    #[arg(value_name = "ID")]
    id: OsString,
    /// Verb to append: working, needs-decision, blocked, paused, done, failed, resolved, note
    #[arg(value_name = "VERB")]
    verb: Option<String>,
    /// Text of the line (joined with spaces)
    #[arg(
        value_name = "TEXT",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    text: Vec<String>,
    /// Decision key for the appended line
    #[arg(long, value_name = "K")]
    key: Option<String>,
    /// Write the busy record: busy
    #[arg(long, conflicts_with_all = ["idle", "verb", "json", "log"])]
    busy: bool,
    /// Write the busy record: idle
    #[arg(long, conflicts_with_all = ["verb", "json", "log"])]
    idle: bool,
    /// Who reports busy/idle (a hook name)
    #[arg(long, value_name = "S", default_value = "hook")]
    source: String,
    /// Print the fold as JSON
    #[arg(long)]
    json: bool,
    /// List every parsed line
    #[arg(long)]
    log: bool,
    /// Actor recorded in the event (default: the task id)
    #[arg(long, value_name = "NAME", default_value = "")]
    from: String,
    /// Read the text of the appended line from stdin (one line)
    #[arg(long = "text-stdin", requires = "verb")]
    text_stdin: bool,
    /// Key of an append made across hosts: a key already served writes
    /// nothing again
    #[arg(long = "idempotency-key", value_name = "KEY", requires = "verb")]
    idempotency_key: Option<String>,
    #[command(flatten)]
    home: HomeArg,
}

pub(crate) fn command() -> clap::Command {
    Args::command()
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    let seps = common::separators(&args);
    common::run_tool(TOOL, args, |a: Args| {
        let Some(flag) = common::flag_in_text(&a.text, &common::long_flags(&command()), seps)
        else {
            return run(a);
        };
        Err(Error::usage(format!(
            "{} inside the status text: put options before the text (fm-status <id> <verb> --key K <text…>), or put `--` before the text to write it literally",
            crate::cli::common::quoted(&flag)
        )))
    })
}

#[derive(Debug, Serialize)]
struct LogEntry {
    n: usize,
    kind: &'static str,
    verb: Option<String>,
    key: Option<String>,
    at: Option<u64>,
    text: String,
}

#[derive(Debug, Serialize)]
struct Report {
    id: TaskId,
    current: Option<Current>,
    open: Vec<Decision>,
    lines: usize,
    malformed: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    log: Option<Vec<LogEntry>>,
}

fn run(a: Args) -> Result<u8> {
    let id = TaskId::parse_os(&a.id)?;
    if a.key.is_some() && a.verb.is_none() {
        return Err(Error::usage("--key needs a verb and text to append"));
    }
    let ctx = a.home.ctx(TOOL)?;
    let (home, cfg) = (&ctx.home, &ctx.cfg);
    let task = Task::open(home, cfg, &id)?;
    let actor = if a.from.is_empty() {
        id.as_str()
    } else {
        a.from.as_str()
    };
    if let Some(verb) = &a.verb {
        let req = AppendRequest {
            verb: verb.clone(),
            key: a.key.clone(),
            text: text_of(&a)?,
            actor: actor.to_string(),
        };
        let done = route::status::append(home, cfg, &task, &req, a.idempotency_key.as_deref())?;
        for w in &done.warnings {
            crate::output::err_line(&format!("{TOOL}: warning: {id}: {w}"));
        }
        return Ok(0);
    }
    if let Some(host) = task.host() {
        return remote_read(&ctx, &a, &id, host);
    }
    let now = clock::now();
    if a.busy || a.idle {
        status::busy::write(home, &id, a.busy, now, &a.source, actor)?;
        return Ok(0);
    }
    show(&ctx, &id, &a, now)
}

/// The text to append: the words, or (`--text-stdin`) stdin's one line.
fn text_of(a: &Args) -> Result<String> {
    if !a.text_stdin {
        return Ok(a.text.join(" "));
    }
    if !a.text.is_empty() {
        return Err(Error::usage(
            "give the text as words or --text-stdin, not both",
        ));
    }
    let mut buf = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::io::stdin().lock(), status::MAX_TEXT as u64 + 2),
        &mut buf,
    )
    .map_err(|e| Error::io("read", "<stdin>", e))?;
    let text = String::from_utf8(buf).map_err(|_| Error::usage("status text is not UTF-8"))?;
    Ok(text.strip_suffix('\n').unwrap_or(&text).to_string())
}

/// `fm-status` on a task of another host, but for an append (a typed
/// use case): the show and busy/idle run there as given.
fn remote_read(ctx: &common::Ctx, a: &Args, id: &TaskId, host: &route::Remote) -> Result<u8> {
    let mut far: Vec<&str> = Vec::new();
    if !a.from.is_empty() {
        far.extend(["--from", a.from.as_str()]);
    }
    if a.busy || a.idle {
        far.extend([if a.busy { "--busy" } else { "--idle" }, "--source"]);
        far.push(a.source.as_str());
    }
    for (on, flag) in [(a.json, "--json"), (a.log, "--log")] {
        if on {
            far.push(flag);
        }
    }
    far.push(id.as_str());
    route::read::relay(&ctx.home, host, TOOL, &far)
}

fn show(ctx: &common::Ctx, id: &TaskId, a: &Args, now: u64) -> Result<u8> {
    let path = ctx.home.status(id);
    let bytes = fsx::read_optional(&path)?.unwrap_or_default();
    let paused = &ctx.cfg.brief.paused_verb;
    let fold = Fold::from_bytes(&bytes, paused);
    let log = a.log.then(|| log_entries(&bytes, paused));
    let report = Report {
        id: id.clone(),
        current: fold.current(),
        open: fold.open.clone(),
        lines: fold.lines,
        malformed: fold.malformed,
        log,
    };
    if a.json {
        common::out_json(&report)?;
        return Ok(0);
    }
    let mtime = fsx::stat(&path)
        .ok()
        .flatten()
        .and_then(|m| m.modified().ok())
        .and_then(|t| {
            t.duration_since(std::time::UNIX_EPOCH)
                .ok()
                .map(|d| d.as_secs())
        });
    let mut lines = Vec::with_capacity(1 + report.open.len());
    match &report.current {
        Some(c) => {
            let key = if c.key == "default" {
                String::new()
            } else {
                format!(" key={}", c.key)
            };
            let age =
                c.at.or(mtime)
                    .map_or_else(|| "?".into(), |t| clock::age(now.saturating_sub(t)));
            lines.push(format!(
                "current: {}{key} \u{b7} {} \u{b7} {age}",
                c.verb, c.text
            ));
        }
        None => lines.push("current: none".to_string()),
    }
    for d in &report.open {
        lines.push(format!("open: {} {} \u{b7} {}", d.key, d.verb, d.text));
    }
    for e in report.log.iter().flatten() {
        let at = e.at.map_or_else(|| "-".into(), |t| clock::ago(t, now));
        let verb = e.verb.as_deref().unwrap_or(e.kind);
        let key = e.key.as_deref().unwrap_or("-");
        lines.push(format!(
            "{:>5} {:<8} {verb} {key} {at} {}",
            e.n, e.kind, e.text
        ));
    }
    // One write for the whole report, every line sanitised.
    crate::output::out_lines(&lines)?;
    Ok(0)
}

fn log_entries(bytes: &[u8], paused: &str) -> Vec<LogEntry> {
    let mut out = Vec::new();
    for (i, raw) in fsx::complete_lines(bytes)
        .split(|&b| b == b'\n')
        .enumerate()
    {
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let text = String::from_utf8_lossy(raw).trim_end().to_string();
        out.push(match status::parse_line(raw, paused) {
            Parsed::Line(l) => LogEntry {
                n: i + 1,
                kind: "line",
                verb: Some(l.verb.into_owned()),
                key: Some(l.key.into_owned()),
                at: l.at,
                text: l.text,
            },
            Parsed::Prose => LogEntry {
                n: i + 1,
                kind: "prose",
                verb: None,
                key: None,
                at: None,
                text,
            },
            Parsed::Invalid(why) => LogEntry {
                n: i + 1,
                kind: "invalid",
                verb: None,
                key: None,
                at: None,
                text: format!("{text} ({why})"),
            },
        });
    }
    out
}

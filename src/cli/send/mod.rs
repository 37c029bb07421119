//! `fm-send` (docs/spec/send.md): record a steering message in a task's inbox, then
//! ring the doorbell in its pane. The record is the message; the ring is a
//! courtesy the watcher retries, so the exit code only reports the record.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use super::common::{self, HomeArg};
use crate::error::{Error, Result};
use crate::events::Tool;
use crate::inbox;
use crate::route::send::{SendReport, SendRequest};
use crate::route::{self, Task};
use crate::status;
use crate::task_id::TaskId;

mod all;
mod key;

const TOOL: &str = "fm-send";

/// Keys `--key` may press.
pub(crate) const KEYS: &[&str] = &["Enter", "Escape", "C-c", "Tab", "Up", "Down"];

/// Queue a steering message for a worker and ring its doorbell.
#[derive(Debug, Parser)]
#[command(
    name = "fm-send",
    version,
    after_help = "Options go before the message text. A text word that is one of this tool's options (--quiet, --all, --resolve-key, --key, …) is refused unless `--` comes before the text: it is nearly always an option typed too late, which would otherwise become part of the message and not take effect.\n\nExamples:\n  fm-send fix-login use the staging database, not prod\n  fm-send --quiet fix-login use the staging database\n  git diff | fm-send fix-login -\n  fm-send fix-login --file review.md --resolve-key db\n  fm-send --all --quiet stand down, we are freezing main\n  fm-send fix-login -- --force is not allowed here\n  fm-send fix-login --key Escape"
)]
pub(crate) struct Args {
    /// Task id (with --all, the first word of the text)
    #[arg(value_name = "ID")]
    id: Option<OsString>,
    /// Message text, joined with spaces; a lone `-` reads the body from stdin.
    /// Options go before it (after `--`, every word is text)
    #[arg(
        value_name = "TEXT",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    text: Vec<OsString>,
    /// Read the body from a file (byte-exact)
    #[arg(long, value_name = "F")]
    file: Option<PathBuf>,
    /// After recording, resolve this status-log decision key (repeatable)
    #[arg(long = "resolve-key", value_name = "K")]
    resolve_key: Vec<String>,
    /// Record only; the watcher rings later
    #[arg(long)]
    quiet: bool,
    /// Mark the record fire-and-forget: it never enters the re-ring ladder
    #[arg(long = "fire-and-forget")]
    fire_and_forget: bool,
    /// If an identical body is already pending or handled, return that record and write nothing
    #[arg(long)]
    dedupe: bool,
    /// Sender recorded in the header and the event
    #[arg(long, value_name = "NAME", default_value = "captain")]
    from: String,
    /// Broadcast: one record per task whose pane exists and whose agent is
    /// alive, on this host and on every configured host
    #[arg(long)]
    all: bool,
    /// With --all: only these tasks (comma-separated ids)
    #[arg(
        long,
        value_name = "ID,ID,...",
        requires = "all",
        value_delimiter = ','
    )]
    only: Vec<String>,
    /// Press one key in the task's pane instead of sending a message (no record)
    #[arg(long, value_name = "KEY", value_parser = KEYS.to_vec())]
    key: Option<String>,
    /// One JSON object per line
    #[arg(long)]
    json: bool,
    /// Key of a write made across hosts: a key already served prints that
    /// call's answer again and writes nothing
    #[arg(long = "idempotency-key", value_name = "KEY")]
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
        // `fm-send t x --key Enter` meant a key press, not the message
        // "x --key Enter" (docs/spec/send.md "text plus --key"); `fm-send t use
        // staging --resolve-key db` meant to resolve db. Refuse instead of
        // recording the option as text and silently ignoring it.
        if let Some(w) = common::flag_in_text(&a.text, &common::long_flags(&command()), seps) {
            let what = if w.starts_with("--key") {
                "give either text or --key, not both; "
            } else {
                ""
            };
            return Err(Error::usage(format!(
                "{} inside the message text: {what}options go before the text, and `--` before the text sends it literally",
                crate::cli::common::quoted(&w)
            )));
        }
        run(a)
    })
}

fn run(mut a: Args) -> Result<u8> {
    if let Some(key) = a.key.clone() {
        return key::press_key(&a, &key);
    }
    let id = if a.all {
        if let Some(first) = a.id.take() {
            a.text.insert(0, first);
        }
        if !a.resolve_key.is_empty() {
            return Err(Error::usage("--resolve-key cannot be combined with --all"));
        }
        None
    } else {
        let raw =
            a.id.as_deref()
                .ok_or_else(|| Error::usage("missing task id (or --all)"))?;
        Some(TaskId::parse_os(raw)?)
    };
    for k in &a.resolve_key {
        if !status::valid_key(k) {
            return Err(Error::usage(format!(
                "malformed --resolve-key {} (letters, digits, '.', '_', '-')",
                crate::cli::common::quoted(k)
            )));
        }
    }
    let ctx = a.home.ctx(TOOL)?;
    let body = read_body(&a, ctx.cfg.send.max_body_bytes)?;
    inbox::validate_body(&ctx.cfg, &body).map_err(|e| match &id {
        Some(id) => common::naming(e, id.as_str()),
        None => e,
    })?;
    let req = request(&a, body);
    match id {
        Some(id) => {
            let task = Task::open(&ctx.home, &ctx.cfg, &id)?;
            let report = route::send::send(
                &ctx.home,
                &ctx.cfg,
                &task,
                &req,
                a.idempotency_key.as_deref(),
            )?;
            print_report(&a, &report)
        }
        None => all::send_all(&ctx, &a, &req),
    }
}

/// What this call asks for, typed: the sender, the flags that change what
/// is done, the decision keys to resolve and the body.
fn request(a: &Args, body: Vec<u8>) -> SendRequest {
    SendRequest {
        from: a.from.clone(),
        body,
        quiet: a.quiet,
        fire_and_forget: a.fire_and_forget,
        dedupe: a.dedupe,
        resolve: a.resolve_key.clone(),
        answer: None,
        tool: Tool::Send,
    }
}

/// Prints a send's report (human, or the record as JSON), then on
/// stderr the doorbell's note and the warnings. The same whether the
/// task is here or on a host.
fn print_report(a: &Args, report: &SendReport) -> Result<u8> {
    if a.json {
        common::out_json(&report.json())?;
    } else {
        common::out(&report.to_string())?;
    }
    let id = &report.task;
    if let Some(n) = &report.note {
        crate::output::err_line(&format!("{TOOL}: {id}: {n}"));
    }
    for w in &report.warnings {
        crate::output::err_line(&format!("{TOOL}: warning: {id}: {w}"));
    }
    for u in &report.unresolved {
        crate::output::err_line(&format!(
            "{TOOL}: warning: {id}: message recorded, but decision key {} was not resolved: {}",
            u.key, u.why
        ));
    }
    Ok(0)
}

/// The body from text arguments, stdin (`-`) or `--file`, byte-exact.
/// Stdin and files are read up to one byte past `max` (enough for the
/// size check to refuse), never in full: `--file /dev/zero` or `yes |`
/// must not eat the machine's memory.
fn read_body(a: &Args, max: u64) -> Result<Vec<u8>> {
    let bounded = |r: &mut dyn Read, what: &Path| {
        let mut buf = Vec::new();
        r.take(max.saturating_add(1))
            .read_to_end(&mut buf)
            .map_err(|e| Error::io("read", what, e))?;
        Ok(buf)
    };
    match (&a.file, a.text.as_slice()) {
        (Some(_), [_, ..]) => Err(Error::usage("give the body as text or --file, not both")),
        (Some(f), []) => {
            #[expect(
                clippy::disallowed_methods,
                reason = "outside the home: a file named on the command line"
            )]
            let mut file = std::fs::File::open(f).map_err(|e| Error::io("read --file", f, e))?;
            bounded(&mut file, f)
        }
        (None, [one]) if one == "-" => bounded(&mut std::io::stdin().lock(), Path::new("<stdin>")),
        (None, []) => Err(Error::usage(
            "no message: give text, `-` for stdin, or --file F",
        )),
        (None, words) => Ok(words
            .iter()
            .map(|w| w.as_bytes())
            .collect::<Vec<_>>()
            .join(&b' ')),
    }
}

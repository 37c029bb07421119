//! `fm-ack` (docs/spec/inbox.md#fm-ack), the worker's side of the inbox: acknowledge
//! records (move them into `handled/`), list what is pending, read a body.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use serde::Serialize;

use super::common::{self, Ctx, HomeArg};
use crate::error::{Error, Result};
use crate::inbox::record_name;
use crate::inbox::{self, Record};
use crate::route::ack::{AckReport, AckRequest, NotAcked};
use crate::route::{self, Task};
use crate::task_id::TaskId;

const TOOL: &str = "fm-ack";

/// Acknowledge, list and read a task's steering messages.
#[derive(Debug, Parser)]
#[command(
    name = "fm-ack",
    version,
    after_help = "--list prints every readable pending record; each record it cannot read (a symlink, no `--` line) is reported on stderr as a warning and makes the exit 1 after the listing.\n\nExamples:\n  fm-ack fix-login --list\n  fm-ack fix-login --read > /tmp/msg.txt\n  fm-ack fix-login 2 003.msg\n  fm-ack fix-login --through 7"
)]
pub(crate) struct Args {
    /// Task id
    #[arg(value_name = "ID")]
    id: OsString,
    /// Records to acknowledge: 2, 002, 2.msg or 002.msg
    #[arg(value_name = "SEQ", conflicts_with_all = ["through", "list", "read"])]
    seqs: Vec<String>,
    /// Acknowledge every pending record numbered ≤ N
    #[arg(long, value_name = "N", conflicts_with_all = ["list", "read"])]
    through: Option<String>,
    /// List pending records: seq, at, from, bytes, first line
    #[arg(long, conflicts_with = "read")]
    list: bool,
    /// Print the body of the oldest (or the given) pending record, byte-exact
    #[arg(long, value_name = "SEQ", num_args = 0..=1)]
    read: Option<Option<String>>,
    /// JSON output
    #[arg(long)]
    json: bool,
    /// Actor recorded in the `inbox.acked` event (default: the task id)
    #[arg(long, value_name = "NAME")]
    from: Option<String>,
    /// Key of an acknowledgement made across hosts: a key already served
    /// prints that call's answer again and moves nothing
    #[arg(long = "idempotency-key", value_name = "KEY", conflicts_with_all = ["list", "read"])]
    idempotency_key: Option<String>,
    #[command(flatten)]
    home: HomeArg,
}

pub(crate) fn command() -> clap::Command {
    Args::command()
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    common::run_tool(TOOL, args, run)
}

/// One pending record in `--list` (and `--read --json`, with its body).
#[derive(Debug, Serialize)]
struct Listed {
    seq: u64,
    at: String,
    from: String,
    bytes: usize,
    first_line: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<String>,
}

impl From<&Record> for Listed {
    fn from(r: &Record) -> Listed {
        Listed {
            seq: r.seq,
            at: r.at.clone(),
            from: r.from.clone(),
            bytes: r.body.len(),
            first_line: r.first_line(),
            body: None,
        }
    }
}

fn run(a: Args) -> Result<u8> {
    let id = TaskId::parse_os(&a.id)?;
    let read_seq = match &a.read {
        Some(Some(s)) => Some(inbox::parse_seq(s)?),
        _ => None,
    };
    let through = a.through.as_deref().map(inbox::parse_seq).transpose()?;
    let seqs = a
        .seqs
        .iter()
        .map(|s| inbox::parse_seq(s))
        .collect::<Result<Vec<_>>>()?;
    if seqs.is_empty() && through.is_none() && !a.list && a.read.is_none() {
        return Err(Error::usage(
            "nothing to do: give message numbers, --through N, --list or --read",
        ));
    }
    let ctx = a.home.ctx(TOOL)?;
    let task = Task::open(&ctx.home, &ctx.cfg, &id)?;
    if a.list || a.read.is_some() {
        if let Some(host) = task.host() {
            return remote_read(&ctx, &a, &id, host);
        }
        if !inbox::has_inbox(&ctx.home, &id)? {
            return Err(Error::NoInbox { id: id.to_string() });
        }
        if a.list {
            return list(&ctx, &id, a.json);
        }
        return read(&ctx, &id, read_seq, a.json);
    }
    let req = AckRequest {
        actor: a.from.as_deref().unwrap_or(id.as_str()).to_string(),
        seqs,
        through,
    };
    let report = route::ack::ack(
        &ctx.home,
        &ctx.cfg,
        &task,
        &req,
        a.idempotency_key.as_deref(),
    )?;
    print_acks(&report, a.json)
}

/// Prints an acknowledgement's report, the same for a local and a remote
/// task: a line per record acknowledged, then on stderr each record not
/// acknowledged and the warnings. A reader that stopped reading (`| head
/// -1`) stops the printing only: every record asked for was tried.
fn print_acks(report: &AckReport, json: bool) -> Result<u8> {
    let mut pipe_closed = false;
    for acked in &report.acked {
        let printed = if json {
            common::out_json(acked)
        } else {
            common::out(&acked.to_string())
        };
        match printed {
            Ok(()) => {}
            Err(Error::ClosedPipe) => {
                pipe_closed = true;
                break;
            }
            Err(e) => return Err(e),
        }
    }
    for n in &report.not_acked {
        crate::output::err_line(&match n {
            NotAcked::Missing(seq) => format!("no message {seq}"),
            NotAcked::Refused(why) => format!("{TOOL}: error: {why}"),
        });
    }
    for w in &report.warnings {
        crate::output::err_line(&format!("{TOOL}: warning: {}: {w}", report.task));
    }
    if pipe_closed && report.code == 0 {
        return Err(Error::ClosedPipe);
    }
    Ok(report.code)
}

/// `fm-ack --list` and `--read` on a task of another host: they run there
/// as given (a body is printed byte-exact).
fn remote_read(ctx: &Ctx, a: &Args, id: &TaskId, host: &route::Remote) -> Result<u8> {
    let mut far: Vec<&str> = Vec::new();
    if let Some(f) = &a.from {
        far.extend(["--from", f.as_str()]);
    }
    if a.json {
        far.push("--json");
    }
    if a.list {
        far.push("--list");
    }
    match &a.read {
        Some(Some(seq)) => far.extend(["--read", seq.as_str()]),
        Some(None) => far.push("--read"),
        None => {}
    }
    far.push(id.as_str());
    if a.read.is_some() {
        return route::read::relay_body(&ctx.home, host, TOOL, &far);
    }
    route::read::relay(&ctx.home, host, TOOL, &far)
}

/// Lists the readable records, then warns about each unreadable one; the
/// exit is 1 when any was unreadable (after the listing, never instead).
fn list(ctx: &Ctx, id: &TaskId, json: bool) -> Result<u8> {
    let listing = inbox::list(&ctx.home, id)?;
    let records: Vec<Listed> = listing.records.iter().map(Listed::from).collect();
    if json {
        common::out_json(&records)?;
    } else {
        for r in &records {
            common::out(&format!(
                "{} \u{b7} {} \u{b7} {} \u{b7} {} bytes \u{b7} {}",
                record_name(r.seq),
                r.at,
                r.from,
                r.bytes,
                r.first_line
            ))?;
        }
    }
    for (seq, e) in &listing.bad {
        crate::output::err_line(&format!(
            "{TOOL}: warning: {} not listed: {}",
            record_name(*seq),
            common::describe(e)
        ));
    }
    Ok(u8::from(!listing.bad.is_empty()))
}

fn read(ctx: &Ctx, id: &TaskId, seq: Option<u64>, json: bool) -> Result<u8> {
    let seq = match seq {
        Some(s) => s,
        None => match inbox::pending(&ctx.home, id)?.first() {
            Some(&s) => s,
            None => return Err(Error::refused(format!("no pending message for {id}"))),
        },
    };
    let Some(rec) = inbox::load_record(&ctx.home, id, seq)? else {
        return Err(Error::refused(format!("no message {seq}")));
    };
    if json {
        let mut l = Listed::from(&rec);
        l.body = Some(String::from_utf8_lossy(&rec.body).into_owned());
        common::out_json(&l)?;
    } else {
        crate::output::out_body(&rec.body)?;
    }
    Ok(0)
}

//! `fm-ack` (SPEC §5.5), the worker's side of the inbox: acknowledge
//! records (move them into `handled/`), list what is pending, read a body.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use serde::Serialize;

use super::common::{self, Ctx, HomeArg};
use crate::error::{Error, Result};
use crate::inbox::record_name;
use crate::inbox::{self, AckOutcome, Record};
use crate::remote;
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

/// One acknowledged (or missing) record.
#[derive(Debug, Serialize)]
struct Acked {
    seq: u64,
    name: String,
    result: &'static str,
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
    if let Some(host) = remote::call::host_of(&ctx.home, &ctx.cfg, &id)? {
        return remote_ack(&ctx, &a, &id, &host);
    }
    if !inbox::has_inbox(&ctx.home, &id)? {
        return Err(Error::refused(format!("task {id} has no inbox")));
    }
    if a.list {
        return list(&ctx, &id, a.json);
    }
    let actor = a.from.as_deref().unwrap_or(id.as_str()).to_string();
    if a.read.is_some() {
        return read(&ctx, &id, read_seq, a.json);
    }
    let fresh = match a.idempotency_key.as_deref() {
        None => None,
        Some(k) => match remote::seen::lookup(
            &ctx.home,
            &id,
            k,
            &ack_request(&id, &actor, &seqs, through, a.json),
        )? {
            remote::seen::Lookup::Seen(answer) => return answer.replay(),
            remote::seen::Lookup::Fresh(f) => Some(f),
        },
    };
    let (seqs, quiet_missing) = match through {
        Some(n) => {
            let upto: Vec<u64> = inbox::pending(&ctx.home, &id)?
                .into_iter()
                .filter(|&s| s <= n)
                .collect();
            (upto, true)
        }
        None => (seqs, false),
    };
    let Some(fresh) = fresh else {
        return acknowledge(&ctx, &id, &actor, &seqs, a.json, quiet_missing, None);
    };
    // With a key, the answer is kept with it before it is printed.
    let mut lines = Vec::new();
    let code = acknowledge(
        &ctx,
        &id,
        &actor,
        &seqs,
        a.json,
        quiet_missing,
        Some(&mut lines),
    )?;
    let mut stdout = lines.join("\n");
    if !stdout.is_empty() {
        stdout.push('\n');
    }
    // The acks are done: a key that cannot be kept is a warning, never a
    // failure after the fact.
    if let Err(e) = fresh.remember(&remote::seen::Answer { code, stdout }) {
        crate::output::err_line(&format!(
            "{TOOL}: warning: {id}: acknowledged, but its idempotency key was not kept: {e}"
        ));
    }
    crate::output::out_lines(&lines)?;
    Ok(code)
}

/// What a keyed acknowledgement asks for (the key is bound to it): the
/// task, the actor, the records named (or `--through N`) and the output
/// form.
fn ack_request(
    id: &TaskId,
    actor: &str,
    seqs: &[u64],
    through: Option<u64>,
    json: bool,
) -> remote::seen::Request {
    let what = format!("seqs={seqs:?} through={through:?} json={json}");
    remote::seen::Request::new(TOOL, id.as_str(), &[actor.as_bytes(), what.as_bytes()])
}

/// `fm-ack` on a task of another host: acknowledging travels with an
/// idempotency key; `--list` and `--read` run there as given (a body is
/// printed byte-exact).
fn remote_ack(ctx: &Ctx, a: &Args, id: &TaskId, host: &remote::call::Remote) -> Result<u8> {
    let mut far: Vec<&str> = Vec::new();
    if let Some(f) = &a.from {
        far.extend(["--from", f.as_str()]);
    }
    if a.json {
        far.push("--json");
    }
    if a.list || a.read.is_some() {
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
            return remote::call::relay_body(&ctx.home, host, TOOL, &far);
        }
        return remote::call::relay(&ctx.home, host, TOOL, &far);
    }
    if let Some(n) = &a.through {
        far.extend(["--through", n.as_str()]);
    }
    far.push(id.as_str());
    far.extend(a.seqs.iter().map(String::as_str));
    remote::call::write(
        &ctx.home,
        host,
        id,
        TOOL,
        &far,
        None,
        a.idempotency_key.as_deref(),
    )
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

/// Acknowledges each seq; missing ones and per-record refusals are reported
/// and make the exit 1 after every seq was tried. `quiet_missing` skips
/// records that vanished meanwhile (`--through`).
fn acknowledge(
    ctx: &Ctx,
    id: &TaskId,
    actor: &str,
    seqs: &[u64],
    json: bool,
    quiet_missing: bool,
    mut keep: Option<&mut Vec<String>>,
) -> Result<u8> {
    let mut code = 0;
    let mut pipe_closed = false;
    for &seq in seqs {
        let name = record_name(seq);
        let result = match inbox::acknowledge(&ctx.home, id, seq, actor) {
            Ok(AckOutcome::Handled) => "handled",
            Ok(AckOutcome::Already) => "already",
            Ok(AckOutcome::Missing) => {
                if !quiet_missing {
                    crate::output::err_line(&format!("no message {seq}"));
                    code = 1;
                }
                continue;
            }
            Err(e) if e.exit_code() == 1 => {
                crate::output::err_line(&format!("{TOOL}: error: {e}"));
                code = 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        let acked = Acked { seq, name, result };
        if let Some(lines) = keep.as_deref_mut() {
            lines.push(if json {
                crate::output::json_line(&acked)?
            } else {
                format!("{} {}", acked.result, acked.name)
            });
            continue;
        }
        if pipe_closed {
            continue;
        }
        // A reader that stopped reading (`| head -1`) must not stop the
        // acknowledgement of the records asked for: only printing stops.
        let printed = if json {
            common::out_json(&acked)
        } else {
            common::out(&format!("{} {}", acked.result, acked.name))
        };
        match printed {
            Ok(()) => {}
            Err(Error::ClosedPipe) => pipe_closed = true,
            Err(e) => return Err(e),
        }
    }
    if pipe_closed && code == 0 {
        return Err(Error::ClosedPipe);
    }
    Ok(code)
}

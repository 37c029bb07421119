//! `fm-send` (SPEC §5.4): record a steering message in a task's inbox, then
//! ring the doorbell in its pane. The record is the message; the ring is a
//! courtesy the watcher retries, so the exit code only reports the record.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use serde::Serialize;

use super::common::{self, Ctx, HomeArg};
use crate::clock;
use crate::error::{Error, Result};
use crate::events::Tool;
use crate::inbox::{self, Existing, Outgoing, Ring, Sent};
use crate::remote;
use crate::status;
use crate::task_id::TaskId;
use crate::tmux::deliver::Outcome;
use crate::tmux::recipient::{self, Recipient};

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
        // "x --key Enter" (SPEC §5.4 "text plus --key"); `fm-send t use
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

/// The human line of one recorded message (`--json` prints the
/// [`Sent`] itself).
fn human(sent: &Sent) -> String {
    human_with(sent, sent.doorbell.unwrap_or(Outcome::Quiet).as_str())
}

/// [`human`] with the doorbell word given.
fn human_with(sent: &Sent, doorbell: &str) -> String {
    let mut s = format!(
        "queued {} {} \u{b7} doorbell {doorbell}",
        sent.task,
        crate::inbox::record_name(sent.seq),
    );
    if let Some(d) = sent.duplicate {
        let place = match d {
            Existing::Pending => "pending",
            Existing::Handled => "handled",
        };
        s.push_str(&format!(" \u{b7} duplicate of a {place} record"));
    }
    s
}

fn run(mut a: Args) -> Result<u8> {
    if let Some(key) = a.key.clone() {
        return press_key(&a, &key);
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
    match id {
        Some(id) => {
            if let Some(host) = remote::call::host_of(&ctx.home, &ctx.cfg, &id)? {
                return remote::call::write(
                    &ctx.home,
                    &host,
                    &id,
                    TOOL,
                    &far_args(&a, &id),
                    Some(&body),
                    a.idempotency_key.as_deref(),
                );
            }
            let fresh = match a.idempotency_key.as_deref() {
                None => None,
                Some(k) => match remote::seen::lookup(&ctx.home, &id, k, &request(&a, &id, &body))?
                {
                    remote::seen::Lookup::Seen(answer) => return answer.replay(),
                    remote::seen::Lookup::Fresh(f) => Some(f),
                },
            };
            let r = Recipient::load(&ctx.home, &ctx.cfg, &id)?;
            send_one(&ctx, &a, &id, &body, Ring::Now(&r), fresh)
        }
        None => send_all(&ctx, &a, &body),
    }
}

/// What a keyed send asks for (the key is bound to it): the task, the
/// sender, the flags that change what is done or printed, the decision
/// keys to resolve and the body. A broadcast's part for one task is the
/// same request as a single send to it with the same options.
fn request(a: &Args, id: &TaskId, body: &[u8]) -> remote::seen::Request {
    let flags = format!(
        "quiet={} fire-and-forget={} dedupe={} json={}",
        a.quiet, a.fire_and_forget, a.dedupe, a.json
    );
    let resolve = a.resolve_key.join("\n");
    remote::seen::Request::new(
        TOOL,
        id.as_str(),
        &[
            a.from.as_bytes(),
            flags.as_bytes(),
            resolve.as_bytes(),
            body,
        ],
    )
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
            // Outside the home: a file named on the command line.
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

/// The options of this call a far `fm-send` repeats: the sender and the
/// flags given.
fn far_options(a: &Args) -> Vec<&str> {
    let mut v = vec!["--from", a.from.as_str()];
    for (on, flag) in [
        (a.quiet, "--quiet"),
        (a.fire_and_forget, "--fire-and-forget"),
        (a.dedupe, "--dedupe"),
        (a.json, "--json"),
    ] {
        if on {
            v.push(flag);
        }
    }
    v
}

/// The far `fm-send` arguments for a remote task: this call's options,
/// the id, and `-` (the body goes on stdin).
fn far_args<'a>(a: &'a Args, id: &'a TaskId) -> Vec<&'a str> {
    let mut v = far_options(a);
    for k in &a.resolve_key {
        v.extend(["--resolve-key", k.as_str()]);
    }
    v.extend([id.as_str(), "-"]);
    v
}

/// Records one message and rings (unless quiet), then resolves the
/// `--resolve-key` decisions and prints the report. With `fresh` (a new
/// idempotency key), the report is kept with the key before it is printed.
fn send_one(
    ctx: &Ctx,
    a: &Args,
    id: &TaskId,
    body: &[u8],
    ring: Ring,
    fresh: Option<remote::seen::Fresh>,
) -> Result<u8> {
    let now = clock::now();
    let msg = Outgoing {
        from: &a.from,
        body,
        fire_and_forget: a.fire_and_forget,
        dedupe: a.dedupe,
    };
    let ring = if a.quiet { Ring::Quiet } else { ring };
    // Under a key, the answer is kept as soon as the record is written,
    // with the doorbell `ringing`, and the key's lock released: a retry
    // arriving while a slow ring runs gets that answer at once, never a
    // lock timeout. The final answer replaces it after the ring.
    let mut fresh = fresh;
    let mut held = None;
    let rings = !matches!(ring, Ring::Quiet);
    let sent = inbox::send_then(
        &ctx.home,
        &ctx.cfg,
        Tool::Send,
        id,
        &msg,
        ring,
        now,
        |queued| {
            if !rings {
                return;
            }
            let Some(f) = fresh.take() else { return };
            let kept = provisional(a, queued).and_then(|stdout| {
                f.hold(&remote::seen::Answer {
                    code: 0,
                    stdout: format!("{stdout}\n"),
                })
            });
            match kept {
                Ok(h) => held = Some(h),
                Err(e) => key_not_kept(id, &e),
            }
        },
    )
    .map_err(|e| common::naming(e, id.as_str()))?;
    // A duplicate still answers: the captain asked for these keys to be
    // resolved, whichever record carries the answer.
    let unresolved = resolve_keys(ctx, a, id, body, now);
    let report = if a.json {
        crate::output::json_line(&sent)?
    } else {
        human(&sent)
    };
    let answer = remote::seen::Answer {
        code: 0,
        stdout: format!("{report}\n"),
    };
    let kept = match (held, fresh) {
        (Some(h), _) => h.remember(&ctx.home, id, &answer),
        (None, Some(f)) => f.remember(&answer),
        (None, None) => Ok(()),
    };
    if let Err(e) = kept {
        key_not_kept(id, &e);
    }
    if a.json {
        common::out_json(&sent)?;
    } else {
        common::out(&report)?;
    }
    if let Some(n) = sent.doorbell.and_then(|d| note(d, a.fire_and_forget)) {
        crate::output::err_line(&format!("{TOOL}: {id}: {n}"));
    }
    for (key, e) in &unresolved {
        crate::output::err_line(&format!(
            "{TOOL}: warning: {id}: message recorded, but decision key {key} was not resolved: {}",
            common::describe(e)
        ));
    }
    Ok(0)
}

/// The report of a record whose doorbell is still ringing.
fn provisional(a: &Args, queued: &Sent) -> Result<String> {
    if !a.json {
        return Ok(human_with(queued, "ringing"));
    }
    let mut v = serde_json::to_value(queued)
        .map_err(|e| Error::io("serialize", "<stdout>", std::io::Error::other(e)))?;
    if let Some(o) = v.as_object_mut() {
        o.insert("doorbell".into(), "ringing".into());
    }
    crate::output::json_line(&v)
}

fn key_not_kept(id: &TaskId, e: &Error) {
    crate::output::err_line(&format!(
        "{TOOL}: warning: {id}: message recorded, but its idempotency key was not kept: {e}"
    ));
}

/// Appends `resolved … [key=K]: answered: <first 120 bytes>` per key.
/// Runs after the record is written, so a failure here never fails the
/// send (SPEC §5.4: exit 0 whenever the record was written): each key that
/// could not be resolved is returned with its cause, and the others are
/// still tried.
fn resolve_keys(ctx: &Ctx, a: &Args, id: &TaskId, body: &[u8], now: u64) -> Vec<(String, Error)> {
    let mut failed = Vec::new();
    if a.resolve_key.is_empty() {
        return failed;
    }
    for k in &a.resolve_key {
        let paused = &ctx.cfg.brief.paused_verb;
        let answer = status::Answer {
            key: k,
            body,
            tool: Tool::Send,
            actor: &a.from,
        };
        let appended = status::resolve_answered(&ctx.home, paused, id, &answer, now);
        if let Err(e) = appended {
            failed.push((k.clone(), e));
        }
    }
    failed
}

/// What stderr says about a ring that did not land (SPEC §5.4).
pub(crate) fn note(outcome: Outcome, fire_and_forget: bool) -> Option<String> {
    let why = match outcome {
        Outcome::Rang | Outcome::Quiet => return None,
        Outcome::Dead => {
            return Some(
                "doorbell dead: the agent is not alive (pane gone or agent exited); the message is recorded but the watcher will not re-ring it (it raises a dead-agent wake)"
                    .into(),
            );
        }
        Outcome::Queued => {
            "doorbell queued: the agent is busy and its harness will see the message"
        }
        Outcome::Skipped => {
            "doorbell skipped: nothing was typed: the composer holds someone else's text, the pane is in tmux copy mode, or no composer the harness profile recognises is on the screen"
        }
        Outcome::RingLocked => {
            "doorbell queued: another ring of this task is in progress (ring lock held, by a ring under way or one stopped mid-way, such as an fm-send suspended with Ctrl-Z); nothing was typed"
        }
        Outcome::Booting => {
            "doorbell booting: the agent started moments ago and does not take input yet; nothing was submitted"
        }
        Outcome::Failed => "doorbell failed (tmux error or the Enter did not take)",
        Outcome::NoPane => "doorbell no-pane: meta records no pane for this task",
        Outcome::Dialog => {
            "doorbell dialog: a dialog owns the agent's keyboard and nothing was typed (fm-crew-state names it)"
        }
    };
    Some(if fire_and_forget {
        format!(
            "{why}; the message is recorded, and as fire-and-forget the watcher will not re-ring it"
        )
    } else {
        format!("{why}; the message is recorded and the watcher will re-ring it")
    })
}

/// `--all`: one record per task whose pane exists and whose agent is
/// alive, here and on every configured host (docs/remote.md, "Broadcasts
/// across hosts"). The remote tasks of each host are sent in one keyed
/// ssh call, `fm-send --all --only <ids>` there, the hosts in parallel and
/// while the local records are written; their lines are printed after the
/// local ones, hosts in name order. A task that could not be sent is
/// reported on stderr and the others are still sent; the exit code is the
/// highest of the failures (3 for the tasks of an unreachable host).
fn send_all(ctx: &Ctx, a: &Args, body: &[u8]) -> Result<u8> {
    let only = parse_only(&a.only)?;
    if let Some(k) = &a.idempotency_key {
        remote::seen::validate(k)?;
    }
    let wanted = |id: &TaskId| only.as_ref().is_none_or(|o| o.contains(id));
    let mut hosts = remote::call::tasks_by_host(&ctx.home)?;
    for ids in hosts.values_mut() {
        ids.retain(|id| wanted(id));
    }
    hosts.retain(|_, ids| !ids.is_empty());
    let remote_ids: BTreeSet<&TaskId> = hosts.values().flatten().collect();
    let mut jobs: BTreeMap<TaskId, Job> = recipient::live(&ctx.home, &ctx.cfg)?
        .into_iter()
        .filter(|(r, _)| wanted(&r.id) && !remote_ids.contains(&r.id))
        .map(|(r, info)| (r.id.clone(), Job::Live(Box::new((r, info)))))
        .collect();
    // Under a key, a task named by --only that is not live now but was
    // sent by an earlier attempt with this key gets that answer again.
    if let (Some(key), Some(only)) = (&a.idempotency_key, &only) {
        for id in only {
            if jobs.contains_key(id) || remote_ids.contains(id) {
                continue;
            }
            if let Some(answer) =
                remote::seen::find_in(&ctx.home.seen_keys(id), key, &request(a, id, body))?
            {
                jobs.insert(id.clone(), Job::Replay(answer));
            }
        }
    }
    let key = a
        .idempotency_key
        .clone()
        .unwrap_or_else(|| remote::call::new_key_for("all"));
    let mut tally = Tally::default();
    std::thread::scope(|s| {
        let far: Vec<_> = hosts
            .iter()
            .map(|(name, ids)| {
                let key = key.as_str();
                let call = s.spawn(move || far_all(ctx, a, name, ids, key, body));
                (name, ids, call)
            })
            .collect();
        for (id, job) in &jobs {
            let sent = match job {
                Job::Live(live) => send_keyed(ctx, a, &live.0, &live.1, body),
                Job::Replay(answer) => answer.replay(),
            };
            tally.local(id, sent);
        }
        for (name, ids, call) in far {
            let got = call
                .join()
                .unwrap_or_else(|_| Far::Failed(Error::refused("the host's call panicked")));
            tally.far(name, ids, &key, got);
        }
    });
    if tally.pipe_closed && tally.code == 0 {
        return Err(Error::ClosedPipe);
    }
    if tally.sent == 0 && tally.code == 0 && only.is_none() {
        return Err(Error::refused("no task has a live pane; nothing sent"));
    }
    Ok(tally.code)
}

/// A local task of a broadcast: live, or sent already under this key.
enum Job {
    Live(Box<(Recipient, crate::tmux::pane::PaneInfo)>),
    Replay(remote::seen::Answer),
}

/// The ids of `--only`, checked; `None` when not given.
fn parse_only(raw: &[String]) -> Result<Option<BTreeSet<TaskId>>> {
    if raw.is_empty() {
        return Ok(None);
    }
    raw.iter()
        .map(|s| TaskId::parse(s.trim()))
        .collect::<Result<BTreeSet<_>>>()
        .map(Some)
}

/// One live task of a broadcast: sent, under the call's key when it has
/// one (a key already served for the task replays its answer).
fn send_keyed(
    ctx: &Ctx,
    a: &Args,
    r: &Recipient,
    info: &crate::tmux::pane::PaneInfo,
    body: &[u8],
) -> Result<u8> {
    let fresh = match a.idempotency_key.as_deref() {
        None => None,
        Some(k) => match remote::seen::lookup(&ctx.home, &r.id, k, &request(a, &r.id, body))? {
            remote::seen::Lookup::Seen(answer) => return answer.replay(),
            remote::seen::Lookup::Fresh(f) => Some(f),
        },
    };
    send_one(ctx, a, &r.id, body, Ring::Known(r, info), fresh)
}

/// What a host's part of a broadcast came to.
enum Far {
    /// The host is not configured.
    Unconfigured(Error),
    Called(remote::call::Keyed),
    Failed(Error),
}

/// The host's part of a broadcast: one keyed `fm-send --all --only
/// <ids>` there, the body on stdin.
fn far_all(ctx: &Ctx, a: &Args, name: &str, ids: &[TaskId], key: &str, body: &[u8]) -> Far {
    let Some(cfg) = ctx.cfg.hosts.get(name) else {
        return Far::Unconfigured(Error::refused(format!(
            "runs on host {name}, which config does not define ([hosts.{name}])"
        )));
    };
    let host = remote::call::Remote {
        name: name.to_string(),
        cfg: cfg.clone(),
    };
    let list = ids.iter().map(TaskId::as_str).collect::<Vec<_>>().join(",");
    let mut args = vec!["--all", "--only", list.as_str()];
    args.extend(far_options(a));
    args.push("-");
    Far::Called(remote::call::keyed(
        &ctx.home,
        &host,
        key,
        TOOL,
        &args,
        Some(body),
    ))
}

/// The running account of a broadcast.
#[derive(Default)]
struct Tally {
    /// Records reported (local lines and far lines).
    sent: usize,
    code: u8,
    pipe_closed: bool,
}

impl Tally {
    fn local(&mut self, id: &TaskId, got: Result<u8>) {
        match got {
            Ok(c) => {
                self.sent += 1;
                self.code = self.code.max(c);
            }
            // A reader that stopped reading (`| head -1`) must not stop
            // the broadcast: every recipient still gets its record; only
            // the printing stops (each record is queued before its line
            // is printed).
            Err(Error::ClosedPipe) => {
                self.sent += 1;
                self.pipe_closed = true;
            }
            Err(e) => {
                let e = common::naming(e, id.as_str());
                crate::output::err_line(&format!("{TOOL}: error: {}", common::describe(&e)));
                self.code = self.code.max(e.exit_code());
            }
        }
    }

    fn far(&mut self, name: &str, ids: &[TaskId], key: &str, got: Far) {
        let each = |why: &str| {
            for id in ids {
                crate::output::err_line(&format!("{TOOL}: error: {id}: {why}"));
            }
        };
        match got {
            Far::Called(remote::call::Keyed::Answered(reply)) => {
                let lines: Vec<&str> = reply.stdout.lines().collect();
                self.sent += lines.len();
                if !self.pipe_closed && !lines.is_empty() {
                    match crate::output::out_lines(&lines) {
                        Ok(()) => {}
                        Err(Error::ClosedPipe) => self.pipe_closed = true,
                        Err(e) => crate::output::err_line(&format!("{TOOL}: error: {e}")),
                    }
                }
                for line in reply.stderr.lines() {
                    crate::output::err_line(line);
                }
                self.code = self
                    .code
                    .max(u8::try_from(reply.code).unwrap_or(crate::error::exit::ENV));
            }
            Far::Called(remote::call::Keyed::Unreachable(why)) => {
                each(&format!(
                    "host {name} unreachable: {why} ({} attempts; the message may have landed there: key {key})",
                    remote::call::ATTEMPTS
                ));
                self.code = self.code.max(crate::error::exit::ENV);
            }
            Far::Called(remote::call::Keyed::Failed(e)) | Far::Unconfigured(e) | Far::Failed(e) => {
                each(&common::describe(&e));
                self.code = self.code.max(e.exit_code());
            }
        }
    }
}

/// JSON/human report of `--key`.
#[derive(Debug, Serialize)]
struct Pressed {
    task: String,
    key: String,
    pane: String,
}

fn press_key(a: &Args, key: &str) -> Result<u8> {
    if a.all {
        return Err(Error::usage(
            "--key presses a key in one task's pane, not --all",
        ));
    }
    if !a.text.is_empty() || a.file.is_some() {
        return Err(Error::usage("give either message text or --key, not both"));
    }
    let raw =
        a.id.as_deref()
            .ok_or_else(|| Error::usage("missing task id"))?;
    let id = TaskId::parse_os(raw)?;
    let ctx = a.home.ctx(TOOL)?;
    if let Some(host) = remote::call::host_of(&ctx.home, &ctx.cfg, &id)? {
        let mut far = vec!["--from", a.from.as_str(), "--key", key];
        if a.json {
            far.push("--json");
        }
        far.push(id.as_str());
        return remote::call::relay(&ctx.home, &host, TOOL, &far);
    }
    let r = Recipient::load(&ctx.home, &ctx.cfg, &id)?;
    let pane = r.press(&ctx.home, key, &a.from)?;
    let p = Pressed {
        task: id.to_string(),
        key: key.to_string(),
        pane,
    };
    if a.json {
        common::out_json(&p)?;
    } else {
        common::out(&format!("key {} \u{b7} {} {}", p.key, p.task, p.pane))?;
    }
    Ok(0)
}

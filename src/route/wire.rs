//! The captain's side of the far entry (docs/remote.md, "The far
//! entry"): a typed request sent as data to a host's `fm far`, the round
//! trip retried while the host is unreachable with the same key, so a
//! dropped connection after the far write costs a retry, never a second
//! record; a host that stays unreachable is exit 3 naming the host, ssh's
//! reason and the key. Each use case names its own operation
//! ([`FarRequest::OP`]); the far side ([`super::far`]) reads the same line
//! back into its typed operations. This module imports no use case.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};
use crate::home::Home;
use crate::remote::Ssh;
use crate::remote::call::{ATTEMPTS, RETRY_PAUSE, Remote, unreachable_write};

/// The far tool and its hidden subcommand.
pub const TOOL: &str = "fm";
pub const SUBCOMMAND: &str = "far";

/// A request the far entry serves: its operation's name on the wire.
pub(crate) trait FarRequest: Serialize {
    const OP: &'static str;
}

/// One far call as it travels: the idempotency key (made before the
/// first attempt and reused on every retry), the task (none for a board's
/// operation or a broadcast), the operation and its request. One JSON
/// line, then the body's bytes.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Envelope<R: FarRequest> {
    pub key: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub task: String,
    op: &'static str,
    pub request: R,
}

impl<R: FarRequest> Envelope<R> {
    pub(crate) fn new(key: String, task: String, request: R) -> Envelope<R> {
        Envelope {
            key,
            task,
            op: R::OP,
            request,
        }
    }
}

/// The far side's failure line.
#[derive(serde::Deserialize)]
struct Failure {
    error: String,
}

fn to_line(report: &impl Serialize) -> Result<String> {
    serde_json::to_string(report).map_err(|e| Error::External {
        program: "serde_json".into(),
        msg: e.to_string(),
    })
}

/// The round trip of `env` (and `body`) to `host`'s far entry, retried
/// while the host is unreachable; the far report, or the far failure as
/// [`Error::Far`] with its exit code. The far side's stderr lines are
/// left out: its warnings travel in the report.
pub(crate) fn call<R: DeserializeOwned>(
    home: &Home,
    host: &Remote,
    env: &Envelope<impl FarRequest>,
    body: &[u8],
) -> Result<R> {
    match attempts(home, host, env, body)? {
        Ok(report) => Ok(report),
        Err(why) => Err(unreachable_write(&host.name, &why, &env.key, "the write")),
    }
}

/// The attempts of [`call`]: the far report (or failure), or, when no
/// attempt reached the host, ssh's last reason, for the caller to word.
pub(crate) fn attempts<R: DeserializeOwned>(
    home: &Home,
    host: &Remote,
    env: &Envelope<impl FarRequest>,
    body: &[u8],
) -> Result<std::result::Result<R, String>> {
    attempts_with(home, host, env, body, std::time::Duration::ZERO)
}

/// [`attempts`] for a request that may take `extra` beyond the host's
/// bound (a lifecycle action: a worktree made, an agent's exit awaited).
pub(crate) fn attempts_with<R: DeserializeOwned>(
    home: &Home,
    host: &Remote,
    env: &Envelope<impl FarRequest>,
    body: &[u8],
    extra: std::time::Duration,
) -> Result<std::result::Result<R, String>> {
    let mut ssh = Ssh::new(home, &host.name, &host.cfg)?;
    if !extra.is_zero() {
        ssh = ssh.with_extra_time(extra);
    }
    let mut input = to_line(env)?.into_bytes();
    input.push(b'\n');
    input.extend_from_slice(body);
    let mut why = String::new();
    for attempt in 1..=ATTEMPTS {
        if attempt > 1 {
            std::thread::sleep(RETRY_PAUSE);
        }
        match ssh.tool(TOOL, &[SUBCOMMAND], Some(input.clone())) {
            Ok(reply) => return answer(&host.name, &reply).map(Ok),
            Err(u) => why = u.0,
        }
    }
    Ok(Err(why))
}

/// [`call`] made once, for a request that must not be repeated (a key
/// press) or may take long (the done gate) and has no body; `extra` is
/// the time it may take beyond the host's bound.
pub(crate) fn call_once<R: DeserializeOwned>(
    home: &Home,
    host: &Remote,
    env: &Envelope<impl FarRequest>,
    extra: std::time::Duration,
) -> Result<R> {
    let ssh = Ssh::new(home, &host.name, &host.cfg)?.with_extra_time(extra);
    let mut input = to_line(env)?.into_bytes();
    input.push(b'\n');
    let reply = ssh.tool_or_err(TOOL, &[SUBCOMMAND], Some(input))?;
    answer(&host.name, &reply)
}

/// The far entry's answer as the report or its failure.
fn answer<R: DeserializeOwned>(host: &str, reply: &crate::remote::Reply) -> Result<R> {
    let line = reply.stdout.trim_end();
    if reply.code == 0 {
        return serde_json::from_str(line).map_err(|e| Error::External {
            program: format!("fm far on host {host}"),
            msg: format!("unreadable report: {e}"),
        });
    }
    if let Ok(f) = serde_json::from_str::<Failure>(line) {
        return Err(Error::Far {
            code: u8::try_from(reply.code).unwrap_or(crate::error::exit::ENV),
            msg: f.error,
        });
    }
    // No answer of the far entry: what the runner made of the far
    // shell's (a missing or unrunnable `fm`), given as the far error.
    let last = reply.stderr.lines().rfind(|l| !l.trim().is_empty());
    let last = last.unwrap_or("").trim();
    let msg = last.strip_prefix("fm: error: ").unwrap_or(last);
    Err(Error::Far {
        code: u8::try_from(reply.code).unwrap_or(crate::error::exit::ENV),
        msg: if msg.is_empty() {
            format!("fm far on host {host}: exit {}", reply.code)
        } else {
            msg.to_string()
        },
    })
}

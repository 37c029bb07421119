//! The captain's side of a call to a host: the host's table, the keys a
//! write is made under, the retry's bounds, and the relay of a read (the
//! far host's own `fm-*` tool, its answer printed as if the tool had run
//! here: its stdout, its stderr lines, its exit code).
//!
//! A write is a typed request of the far entry (`crate::route::far`)
//! under an idempotency key made before the first attempt and reused on
//! every retry; the far side keeps the report under the key
//! ([`super::kept`]), so a connection that dropped after the far write
//! and before the answer costs a retry, never a second record. A host
//! that stays unreachable through every attempt is exit 3, naming the
//! host, ssh's reason and the key ([`unreachable_write`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::ssh::{Reply, Ssh};
use crate::config::HostCfg;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::task_id::TaskId;

/// Attempts of one write before the host is given up on.
pub const ATTEMPTS: u32 = 3;

/// Pause between two attempts.
pub(crate) const RETRY_PAUSE: Duration = Duration::from_millis(700);

/// A remote task's host: its name and table.
#[derive(Debug, Clone)]
pub struct Remote {
    pub name: String,
    pub cfg: HostCfg,
}

/// The tasks whose meta names a host, by host name, each host's in id
/// order. A meta that cannot be read is left out: the local side of a
/// broadcast warns about it.
pub fn tasks_by_host(home: &Home) -> Result<BTreeMap<String, Vec<TaskId>>> {
    let mut by: BTreeMap<String, Vec<TaskId>> = BTreeMap::new();
    for id in home.task_ids_with_meta()? {
        if let Ok(Some(host)) =
            crate::meta::TaskMeta::load(home, &id).map(|m| m.and_then(|m| m.host))
        {
            by.entry(host).or_default().push(id);
        }
    }
    Ok(by)
}

static SERIAL: AtomicU32 = AtomicU32::new(0);

/// A new key for a write on task `id`:
/// `<captain host>-<task>-<epoch ms>-<pid>-<n>`, at most 128 bytes of
/// `[A-Za-z0-9._-]`.
pub fn new_key(id: &TaskId) -> String {
    new_key_for(id.as_str())
}

/// [`new_key`] for a write on what `subject` names (`board` for a host's
/// board); `subject` is a task id or a word of ours.
pub fn new_key_for(subject: &str) -> String {
    let uname = rustix::system::uname();
    let host: String = uname
        .nodename()
        .to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(32)
        .collect();
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let n = SERIAL.fetch_add(1, Ordering::Relaxed);
    let host = if host.is_empty() {
        "captain".into()
    } else {
        host
    };
    format!("{host}-{subject}-{ms}-{}-{n}", std::process::id())
}

/// Runs `tool args…` on the host once (a read, or a write that is safe to
/// repeat), and relays the answer.
pub fn relay(home: &Home, host: &Remote, tool: &str, args: &[&str]) -> Result<u8> {
    relay_stdin(home, host, tool, args, None)
}

/// [`relay`] with `stdin` on the far tool's stdin (a text that must not
/// travel on a command line).
pub fn relay_stdin(
    home: &Home,
    host: &Remote,
    tool: &str,
    args: &[&str],
    stdin: Option<&[u8]>,
) -> Result<u8> {
    let ssh = Ssh::new(home, &host.name, &host.cfg)?;
    let reply = ssh.tool_or_err(tool, args, stdin.map(<[u8]>::to_vec))?;
    Ok(print(&reply))
}

/// [`relay`] for a tool printing a message body: its stdout is printed
/// byte-exact, as the far tool printed it.
pub fn relay_body(home: &Home, host: &Remote, tool: &str, args: &[&str]) -> Result<u8> {
    let ssh = Ssh::new(home, &host.name, &host.cfg)?;
    let reply = ssh.tool_or_err(tool, args, None)?;
    crate::output::out_body(reply.stdout.as_bytes())?;
    for line in reply.stderr.lines() {
        crate::output::err_line(line);
    }
    Ok(u8::try_from(reply.code).unwrap_or(1))
}

/// Exit 3 for a keyed write no attempt of which got an answer: `what`
/// may have happened there.
pub fn unreachable_write(host: &str, why: &str, key: &str, what: &str) -> Error {
    Error::External {
        program: "ssh".into(),
        msg: format!(
            "host {host} unreachable: {why} ({ATTEMPTS} attempts; {what} may have landed there: key {key})"
        ),
    }
}

/// Prints the far answer as this tool's own and returns its exit code.
pub fn print(reply: &Reply) -> u8 {
    if !reply.stdout.is_empty() {
        let lines: Vec<&str> = reply.stdout.lines().collect();
        if let Err(e) = crate::output::out_lines(&lines) {
            crate::output::err_line(&e.to_string());
        }
    }
    for line in reply.stderr.lines() {
        crate::output::err_line(line);
    }
    u8::try_from(reply.code).unwrap_or(1)
}

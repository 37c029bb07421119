//! One error type for the whole library, and the one place that maps an
//! error to an exit code (docs/spec/cli.md#exit-codes).
//!
//! Every variant carries the id or path it is about, so that the message a
//! user sees names the thing that went wrong. The binaries never choose exit
//! codes themselves: they call [`Error::exit_code`].

use std::path::PathBuf;

/// Exit codes of docs/spec/cli.md#exit-codes.
pub mod exit {
    pub(crate) const OK: u8 = 0;
    pub(crate) const REFUSED: u8 = 1;
    pub(crate) const USAGE: u8 = 2;
    pub(crate) const ENV: u8 = 3;
    pub(crate) const INTERRUPTED: u8 = 130;
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A task id that fails docs/spec/home.md#task-ids.
    #[error("invalid task id {}: {reason}", quoted(id))]
    InvalidId { id: String, reason: &'static str },

    /// Bad arguments or bad input (empty body, unknown verb, …).
    #[error("{0}")]
    Usage(String),

    /// The command understood the request and says no (exit 1).
    #[error("{0}")]
    Refused(String),

    /// A path component that must not be a symlink is one.
    #[error("refusing to follow symlink ({})", .0.display())]
    Symlink(PathBuf),

    /// No home could be resolved.
    #[error("no firstmate home found: pass --home, set FM_HOME, or create one with `fm init` ({})", .0.display())]
    NoHome(PathBuf),

    /// A directory named by `--home` or `FM_HOME` holds no config file.
    #[error("{} is not a firstmate home (no config/firstmate.toml); create one with `fm init {}`", .0.display(), .0.display())]
    NotAHome(PathBuf),

    /// The config file does not parse or holds a value of the wrong type.
    #[error("{}:{line}: {key}: {msg}", path.display())]
    Config {
        path: PathBuf,
        line: usize,
        key: String,
        msg: String,
    },

    /// An `FM_*` environment override does not parse.
    #[error("environment variable {var}: {msg}")]
    EnvVar { var: String, msg: String },

    /// A bounded lock wait ran out.
    #[error("timed out after {secs}s waiting for lock ({})", path.display())]
    LockTimeout { path: PathBuf, secs: u64 },

    /// An I/O operation failed.
    #[error("{op} failed ({}): {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// An external program (tmux, git) is missing or failed.
    #[error("{program}: {msg}")]
    External { program: String, msg: String },

    /// The user pressed Ctrl-C.
    #[error("interrupted")]
    Interrupted,

    /// A task this home knows nothing of (exit 1); `lacks` says what is
    /// missing (`no meta and no brief`, `no meta` …).
    #[error("unknown task {id}: {lacks}")]
    UnknownTask { id: String, lacks: &'static str },

    /// A task whose meta records no pane (exit 1).
    #[error("no pane recorded for {id}")]
    NoPane { id: String },

    /// The pane meta records is not the task's any more (exit 1): gone,
    /// or another's since a tmux server restart. `why` says how it is
    /// known; `then` what was not done (`; no key pressed`).
    #[error("pane {pane} of {id} is gone{}{then}", why.as_deref().map(|w| format!(" ({w})")).unwrap_or_default())]
    PaneGone {
        id: String,
        pane: String,
        why: Option<String>,
        then: &'static str,
    },

    /// A task with no inbox directory (exit 1).
    #[error("task {id} has no inbox")]
    NoInbox { id: String },

    /// No board task by that id (exit 1).
    #[error("no board task {id}")]
    NoBoardTask { id: String },

    /// A task with no brief at `path` (exit 1).
    #[error("no brief for {id} ({})", path.display())]
    NoBrief { id: String, path: PathBuf },

    /// A task's meta names a host the config does not define (exit 1).
    #[error("task {id} runs on host {host}, which config does not define ([hosts.{host}])")]
    HostNotConfigured { id: String, host: String },

    /// A host named on the command line that the config does not define
    /// (exit 2).
    #[error(
        "unknown host {} (configured: {}; define [hosts.{}])",
        quoted(name),
        known_hosts(known),
        hint_name(name)
    )]
    UnknownHost { name: String, known: Vec<String> },

    /// A local write to a task that lives on a host (exit 1).
    #[error("task {id} runs on host {host}: its records are there, not in this home")]
    OnHost { id: String, host: String },

    /// What a far tool answered with a failure: its exit code and its
    /// message, given as the far side gave it.
    #[error("{msg}")]
    Far { code: u8, msg: String },

    /// Writing to stdout hit a closed pipe: not an error for the user
    /// (docs/spec/cli.md#exit-codes).
    #[error("closed pipe")]
    ClosedPipe,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `e` with ` (<id>)` appended when it is a usage error or refusal whose
/// message does not name the task yet (docs/spec/cli.md#errors: errors name the id).
pub(crate) fn naming(e: Error, id: &str) -> Error {
    match e {
        Error::Usage(m) if !m.contains(id) => Error::Usage(format!("{m} ({id})")),
        Error::Refused(m) if !m.contains(id) => Error::Refused(format!("{m} ({id})")),
        other => other,
    }
}

/// An error as one line with its cause chain (what `<tool>: error:` prints).
pub(crate) fn describe(e: &Error) -> String {
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        let s_msg = s.to_string();
        if !msg.contains(&s_msg) {
            msg.push_str(": ");
            msg.push_str(&s_msg);
        }
        src = s.source();
    }
    msg
}

fn known_hosts(known: &[String]) -> String {
    if known.is_empty() {
        "none".to_string()
    } else {
        known.join(", ")
    }
}

/// Most characters of user input an error quotes (a whole task id, or a
/// whole idempotency key, fits).
pub(crate) const QUOTED_CHARS: usize = 128;

/// User input (a key, an id, an argument) as an error quotes it: in
/// quotes with control characters, quotes and backslashes escaped, at
/// most its first 128 characters; a longer input is cut, marked `…`, and
/// its whole length given (`"abc"… (102400 bytes)`). Every error that
/// echoes what a user typed goes through here, so a 100 KB argument
/// gives a one-line error.
pub(crate) fn quoted(s: &str) -> String {
    match s.char_indices().nth(QUOTED_CHARS) {
        None => format!("{s:?}"),
        Some((cut, _)) => format!("{:?}\u{2026} ({} bytes)", &s[..cut], s.len()),
    }
}

/// `name` as a config table's name in a hint (`[hosts.<name>]`): itself
/// when it is short and plain, else `<name>` (the error quotes it once,
/// bounded, already).
pub(crate) fn hint_name(name: &str) -> &str {
    let plain = !name.is_empty()
        && name.len() <= QUOTED_CHARS
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if plain { name } else { "<name>" }
}

impl Error {
    /// The single mapping from errors to the exit codes of docs/spec/cli.md#exit-codes.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::InvalidId { .. } | Error::Usage(_) | Error::UnknownHost { .. } => exit::USAGE,
            Error::Refused(_)
            | Error::Symlink(_)
            | Error::UnknownTask { .. }
            | Error::NoPane { .. }
            | Error::PaneGone { .. }
            | Error::NoInbox { .. }
            | Error::NoBoardTask { .. }
            | Error::NoBrief { .. }
            | Error::HostNotConfigured { .. }
            | Error::OnHost { .. } => exit::REFUSED,
            Error::Far { code, .. } => *code,
            Error::NoHome(_)
            | Error::NotAHome(_)
            | Error::Config { .. }
            | Error::EnvVar { .. }
            | Error::LockTimeout { .. }
            | Error::Io { .. }
            | Error::External { .. } => exit::ENV,
            Error::Interrupted => exit::INTERRUPTED,
            Error::ClosedPipe => exit::OK,
        }
    }

    /// Shorthand for an [`Error::Io`].
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn usage(msg: impl Into<String>) -> Self {
        Error::Usage(msg.into())
    }

    pub(crate) fn refused(msg: impl Into<String>) -> Self {
        Error::Refused(msg.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_spec_14() {
        assert_eq!(Error::usage("x").exit_code(), 2);
        assert_eq!(
            Error::InvalidId {
                id: "a/b".into(),
                reason: "r"
            }
            .exit_code(),
            2
        );
        assert_eq!(Error::refused("x").exit_code(), 1);
        assert_eq!(Error::Symlink("p".into()).exit_code(), 1);
        assert_eq!(
            Error::LockTimeout {
                path: "p".into(),
                secs: 5
            }
            .exit_code(),
            3
        );
        assert_eq!(Error::NoHome("p".into()).exit_code(), 3);
        assert_eq!(Error::Interrupted.exit_code(), 130);
        assert_eq!(Error::ClosedPipe.exit_code(), 0);
    }
}

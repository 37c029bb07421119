//! The channels a notification can take, chosen in `[notify]`: a message
//! and a bell in the captain's tmux clients, a desktop notification, an
//! HTTP POST, a command. Each delivery is bounded in time and answers
//! `Err` with the reason when it did not arrive.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::http;
use super::note::Note;
use crate::config::Config;
use crate::proc::Cmd;
use crate::tmux::pane::Tmux;

/// Longest a desktop notifier or a notification command may run.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Channel {
    /// Every client attached to the workers' server (`[tmux] socket`).
    Tmux {
        socket: String,
        display_ms: u64,
    },
    /// `notify-send`, found on `PATH` when the watcher started.
    Desktop {
        program: PathBuf,
    },
    Http {
        url: String,
        timeout: Duration,
    },
    /// An argv template (`{task}`, `{kind}`, `{text}`).
    Command {
        argv: Vec<String>,
    },
}

impl Channel {
    /// The name in log lines and in the channel's cursor file.
    pub fn name(&self) -> &'static str {
        match self {
            Channel::Tmux { .. } => "tmux",
            Channel::Desktop { .. } => "desktop",
            Channel::Http { .. } => "http",
            Channel::Command { .. } => "command",
        }
    }

    /// Delivers `note`; `Err` says why it did not arrive.
    pub fn send(&self, note: &Note) -> Result<(), Miss> {
        let failed = |f: crate::proc::Failure| Miss::Failed(f.cause.to_string());
        match self {
            Channel::Tmux { socket, display_ms } => tmux(socket, *display_ms, note),
            // `--` ends the options: a title or body starting with `-` is
            // shown, never read as one.
            Channel::Desktop { program } => Cmd::new(program)
                .args(["-a", "firstmate", "--", &note.title(), &note.body()])
                .timeout(COMMAND_TIMEOUT)
                .run_ok()
                .map(drop)
                .map_err(failed),
            Channel::Http { url, timeout } => http::post(url, *timeout, note).map_err(Miss::Failed),
            Channel::Command { argv } => {
                let (task, kind, text) = note.fields();
                let argv = crate::watch::hook::argv(argv, &task, &kind, &text);
                let Some((program, args)) = argv.split_first() else {
                    return Ok(());
                };
                Cmd::new(program)
                    .args(args)
                    .timeout(COMMAND_TIMEOUT)
                    .run_ok()
                    .map(drop)
                    .map_err(failed)
            }
        }
    }
}

/// Why a notification did not go out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    /// Nobody to show it to: no tmux client is attached to the workers'
    /// server (or that server is not running). Not a failure: the lane
    /// looks again every [`CLIENT_POLL`] and delivers as soon as a client
    /// attaches, with no backoff.
    Nobody,
    /// The delivery failed: retried with backoff.
    Failed(String),
}

impl std::fmt::Display for Miss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Miss::Nobody => f.write_str("no tmux client is attached to the workers' server"),
            Miss::Failed(e) => f.write_str(e),
        }
    }
}

/// How often a lane with wakes waiting and no tmux client attached looks
/// for one (one `list-clients`).
pub const CLIENT_POLL: Duration = Duration::from_secs(1);

/// The configured channels, and a warning for each one asked for that
/// cannot work here.
pub fn configured(cfg: &Config, path: Option<&std::ffi::OsStr>) -> (Vec<Channel>, Vec<String>) {
    let n = &cfg.notify;
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    if n.tmux {
        out.push(Channel::Tmux {
            socket: cfg.tmux.socket.clone(),
            display_ms: n.tmux_display_ms,
        });
    }
    if n.desktop {
        match find_on_path("notify-send", path) {
            Some(program) => out.push(Channel::Desktop { program }),
            None => warnings.push(
                "desktop notifications are on but notify-send is not installed; that channel is off"
                    .into(),
            ),
        }
    }
    if !n.url.is_empty() {
        if n.url.starts_with("http://") || n.url.starts_with("https://") {
            out.push(Channel::Http {
                url: n.url.clone(),
                timeout: Duration::from_millis(n.url_timeout_ms.max(1)),
            });
        } else {
            warnings.push(format!(
                "notify.url {:?} is not an http:// or https:// URL; that channel is off",
                n.url
            ));
        }
    }
    if !n.command.is_empty() {
        out.push(Channel::Command {
            argv: n.command.clone(),
        });
    }
    (out, warnings)
}

fn find_on_path(program: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: programs on PATH"
)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A message in every client on the server, and a bell on each client's
/// terminal. Delivered when at least one client showed it; a client that
/// failed while another showed it is only logged (a retry would repeat
/// the message on the others).
fn tmux(socket: &str, display_ms: u64, note: &Note) -> Result<(), Miss> {
    let t = Tmux::new(socket);
    let clients = match t.run(&["list-clients", "-F", "#{client_name}\t#{client_tty}"]) {
        Ok(out) => out,
        Err(e) if crate::tmux::pane::no_server(&e) => String::new(),
        Err(e) => return Err(Miss::Failed(e.to_string())),
    };
    let clients: Vec<(&str, &str)> = clients.lines().filter_map(|l| l.split_once('\t')).collect();
    if clients.is_empty() {
        return Err(Miss::Nobody);
    }
    // display-message expands formats: a literal # is written ##.
    let text = note.line().replace('#', "##");
    let ms = display_ms.to_string();
    let mut shown = 0;
    let mut errors = Vec::new();
    for (name, tty) in &clients {
        match t.run(&["display-message", "-c", name, "-d", &ms, &text]) {
            Ok(_) => {
                shown += 1;
                if let Err(e) = bell(Path::new(tty)) {
                    errors.push(format!("bell on {tty}: {e}"));
                }
            }
            Err(e) => errors.push(format!("client {name}: {e}")),
        }
    }
    match (shown, errors.is_empty()) {
        (0, _) => Err(Miss::Failed(errors.join("; "))),
        (_, true) => Ok(()),
        (_, false) => {
            crate::output::warn(
                "fm-watch",
                &format!(
                    "notify tmux: {} (shown on {shown} other client(s))",
                    errors.join("; ")
                ),
            );
            Ok(())
        }
    }
}

/// A BEL on the client's own terminal: what tmux passes through from a
/// pane, written directly since no tmux command rings a client.
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the captain's tty"
)]
fn bell(tty: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open(tty)?;
    f.write_all(b"\x07")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_is_configured_and_can_work() {
        let mut cfg = Config::default();
        assert_eq!(configured(&cfg, None), (vec![], vec![]));
        cfg.notify.tmux = true;
        cfg.notify.desktop = true;
        cfg.notify.url = "mailto:x".into();
        cfg.notify.command = vec!["echo".into(), "{task}".into()];
        let dir = tempfile::tempdir().unwrap();
        let (chans, warnings) = configured(&cfg, Some(dir.path().as_os_str()));
        assert_eq!(
            chans.iter().map(Channel::name).collect::<Vec<_>>(),
            ["tmux", "command"]
        );
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("notify-send is not installed"));
        assert!(warnings[1].contains("mailto:x"));
        let ns = dir.path().join("notify-send");
        std::fs::write(&ns, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&ns, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        cfg.notify.url = "http://127.0.0.1:9/x".into();
        let (chans, warnings) = configured(&cfg, Some(dir.path().as_os_str()));
        assert!(warnings.is_empty());
        assert_eq!(
            chans.iter().map(Channel::name).collect::<Vec<_>>(),
            ["tmux", "desktop", "http", "command"]
        );
        assert_eq!(chans[1], Channel::Desktop { program: ns });
    }
}

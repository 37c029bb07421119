//! One round trip to a host: `ssh … <destination> <command>`, through the
//! one subprocess runner ([`crate::proc`]).
//!
//! Every call multiplexes over one connection per host: `ControlMaster=auto`
//! with `ControlPersist`, the socket in `state/ssh/` (mode 0700, so only
//! the captain's account can use the connection). `BatchMode=yes` (a
//! missing key or an unknown host key fails, never prompts),
//! `ConnectTimeout` and the runner's bound keep a dead or stopped host to
//! the host's `timeout_ms`. Our options come before the host's
//! `ssh_options`: ssh keeps the first value of an option, so these hold.
//!
//! The far command is one line for the login's shell (which must be a
//! POSIX one: sh, dash, bash, zsh): `FM_HOME='<home>' exec '<tool>' '<arg>'…`,
//! every word single-quoted. A body goes on stdin.
//!
//! ssh exits 255 for its own failures (no route, refused, authentication,
//! a dropped connection) and otherwise with the far command's code; our
//! tools never exit 255, so 255 and a timeout are [`Unreachable`], and any
//! other exit is the tool's [`Reply`]. A reply is only ever one of the
//! documented exit codes (docs/spec/cli.md#exit-codes): the far shell's 127 (no such tool on
//! its PATH) or 126 (not executable), or any other code no tool of ours
//! gives (a crash, a signal), becomes exit 3 with a `<tool>: error:` line
//! naming the host and what happened ([`outside_contract`]).

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::home::Home;
use crate::proc::{Cause, Cmd, Output};
use crate::shq::quote;

use crate::config::HostCfg;

/// How long an idle master connection stays up after the last call.
pub const CONTROL_PERSIST_SECS: u64 = 300;

/// ssh's exit code for its own failures.
const SSH_FAILED: i32 = 255;

/// What the far tool answered (any exit code but ssh's own).
#[derive(Debug, Clone)]
pub struct Reply {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Why a host gave no answer: a short line for `host unreachable: <why>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unreachable(pub String);

/// The runner for one host.
#[derive(Debug, Clone)]
pub struct Ssh {
    name: String,
    cfg: HostCfg,
    control_dir: PathBuf,
    /// Bound on a whole call, when longer than the host's `timeout_ms`
    /// (a lifecycle action waits for git and for an agent to exit).
    call_timeout: Option<std::time::Duration>,
}

impl Ssh {
    /// The runner for host `name`; creates the socket directory.
    pub fn new(home: &Home, name: &str, cfg: &HostCfg) -> Result<Ssh> {
        let control_dir = home.ssh_dir();
        crate::fsx::ensure_dir(&control_dir)?;
        Ok(Ssh {
            name: name.to_string(),
            cfg: cfg.clone(),
            control_dir,
            call_timeout: None,
        })
    }

    /// This runner with each call bounded by `timeout_ms` plus `extra`;
    /// connecting stays bounded by the host's own `timeout_ms`.
    #[must_use]
    pub fn with_extra_time(mut self, extra: std::time::Duration) -> Ssh {
        self.call_timeout = Some(self.cfg.timeout() + extra);
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn cfg(&self) -> &HostCfg {
        &self.cfg
    }

    /// `ssh` with our options, the host's, and the destination.
    fn ssh(&self) -> Cmd {
        let timeout = self.cfg.timeout();
        let connect = timeout.as_secs().max(1);
        let control = self.control_dir.join("%C");
        Cmd::new("ssh")
            .timeout(self.call_timeout.unwrap_or(timeout))
            .env("LC_ALL", "C")
            .args(["-T", "-o", "BatchMode=yes"])
            .arg("-o")
            .arg(format!("ConnectTimeout={connect}"))
            .args(["-o", "ControlMaster=auto"])
            .arg("-o")
            .arg(format!("ControlPath={}", control.display()))
            .arg("-o")
            .arg(format!("ControlPersist={CONTROL_PERSIST_SECS}"))
            .args(&self.cfg.ssh_options)
            .arg("--")
            .arg(&self.cfg.destination)
    }

    /// The far command line for `tool args…` in the host's home.
    pub fn command_line(&self, tool: &str, args: &[&str]) -> String {
        let mut line = format!(
            "FM_HOME={} exec {}",
            quote(&self.cfg.home.to_string_lossy()),
            quote(&self.cfg.tool(tool))
        );
        for a in args {
            line.push(' ');
            line.push_str(&quote(a));
        }
        line
    }

    /// Runs the far host's `tool args…`, `stdin` on its stdin.
    pub fn tool(
        &self,
        tool: &str,
        args: &[&str],
        stdin: Option<Vec<u8>>,
    ) -> std::result::Result<Reply, Unreachable> {
        let mut cmd = self.ssh().arg(self.command_line(tool, args));
        if let Some(bytes) = stdin {
            cmd = cmd.stdin(bytes);
        }
        classify(cmd.run()).map(|r| self.outside_contract(tool, r))
    }

    /// `reply` itself when its code is a documented one; otherwise exit 3
    /// with nothing on stdout (what a crashed or missing tool printed is
    /// no answer) and one `<tool>: error:` line naming the host, what the
    /// code means and the far side's last line.
    fn outside_contract(&self, tool: &str, reply: Reply) -> Reply {
        if super::documented_exit(reply.code) {
            return reply;
        }
        let prog = self.cfg.tool(tool);
        let on_path = if prog == tool { " on its PATH" } else { "" };
        let host = &self.name;
        let code = reply.code;
        let what = match code {
            127 => format!("host {host} has no {prog}{on_path} (exit 127)"),
            126 => format!("host {host} cannot run {prog}: not executable (exit 126)"),
            _ => format!(
                "host {host}: {prog} ended with exit {code}, which is none of its documented codes (0, 1, 2, 3, 130)"
            ),
        };
        let said = last_line(&reply.stderr, "");
        let said = if said.is_empty() {
            String::new()
        } else {
            format!("; it said: {}", bounded(&said))
        };
        Reply {
            code: i32::from(crate::error::exit::ENV),
            stdout: String::new(),
            stderr: format!("{tool}: error: {what}{said}\n"),
        }
    }

    /// Runs one fixed line of ours in the far login shell (the doctor's
    /// probes); never a line holding anything a user wrote.
    pub(crate) fn shell(&self, line: &str) -> std::result::Result<Reply, Unreachable> {
        classify(self.ssh().arg(line).run())
    }

    /// Closes the host's master connection, if one is up.
    pub fn close(&self) {
        let _ = self.ssh().args(["-O", "exit"]).run();
    }

    /// [`Ssh::tool`] as a library error: unreachable is an
    /// [`Error::External`] naming the host.
    pub fn tool_or_err(&self, tool: &str, args: &[&str], stdin: Option<Vec<u8>>) -> Result<Reply> {
        self.tool(tool, args, stdin).map_err(|u| Error::External {
            program: "ssh".into(),
            msg: format!("host {} unreachable: {u}", self.name),
        })
    }
}

/// A run of `ssh` as the far tool's reply or the reason there was none.
fn classify(
    run: std::result::Result<Output, crate::proc::Failure>,
) -> std::result::Result<Reply, Unreachable> {
    let out = match run {
        Ok(out) => out,
        Err(f) => {
            return Err(Unreachable(match f.cause {
                Cause::NotFound => "ssh is not installed".into(),
                other => other.to_string(),
            }));
        }
    };
    match out.code() {
        Some(SSH_FAILED) => Err(Unreachable(last_line(&out.stderr, "ssh failed"))),
        None => Err(Unreachable("ssh was killed by a signal".into())),
        Some(code) => Ok(Reply {
            code,
            stdout: out.stdout,
            stderr: out.stderr,
        }),
    }
}

/// At most 200 characters of a far line, cut with `…`.
fn bounded(line: &str) -> String {
    match line.char_indices().nth(200) {
        None => line.to_string(),
        Some((cut, _)) => format!("{}\u{2026}", &line[..cut]),
    }
}

/// The last non-empty line of ssh's stderr (its reason), with control
/// characters blanked, or `default`.
fn last_line(stderr: &str, default: &str) -> String {
    stderr
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .map_or_else(
            || default.to_string(),
            |l| {
                l.chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .collect()
            },
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(bin: &str) -> Ssh {
        Ssh {
            name: "box".into(),
            cfg: HostCfg {
                destination: "me@box".into(),
                home: "/srv/it's fm".into(),
                ssh_options: vec!["-F".into(), "/c".into()],
                bin: bin.into(),
                timeout_ms: 2500,
            },
            control_dir: "/h/state/ssh".into(),
            call_timeout: None,
        }
    }

    #[test]
    fn the_far_command_quotes_every_word() {
        assert_eq!(
            host("").command_line("fm-send", &["t1", "a b", "-"]),
            r"FM_HOME='/srv/it'\''s fm' exec 'fm-send' 't1' 'a b' '-'"
        );
        assert_eq!(
            host("/opt/fm").command_line("fm-crew-state", &["--json"]),
            r"FM_HOME='/srv/it'\''s fm' exec '/opt/fm/fm-crew-state' '--json'"
        );
    }

    #[test]
    fn our_options_come_first_and_the_destination_last() {
        let cmd = format!("{:?}", host("").ssh());
        let want = r#"args: ["-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=2", "-o", "ControlMaster=auto", "-o", "ControlPath=/h/state/ssh/%C", "-o", "ControlPersist=300", "-F", "/c", "--", "me@box"]"#;
        assert!(cmd.contains(want), "{cmd}");
    }

    #[test]
    fn exits_outside_the_contract_are_exit_3_naming_the_host() {
        let reply = |code: i32, stderr: &str| Reply {
            code,
            stdout: "partial".into(),
            stderr: stderr.into(),
        };
        let r =
            host("").outside_contract("fm-send", reply(127, "sh: 1: exec: fm-send: not found\n"));
        assert_eq!(
            (r.code, &*r.stdout, &*r.stderr),
            (
                3,
                "",
                "fm-send: error: host box has no fm-send on its PATH (exit 127); it said: sh: 1: exec: fm-send: not found\n"
            )
        );
        let r = host("/opt/fm").outside_contract("fm-ack", reply(126, ""));
        assert_eq!(
            r.stderr,
            "fm-ack: error: host box cannot run /opt/fm/fm-ack: not executable (exit 126)\n"
        );
        let r = host("").outside_contract("fm-status", reply(134, "boom\n"));
        assert_eq!(r.code, 3);
        assert!(r.stderr.contains("ended with exit 134"), "{}", r.stderr);
        for code in [0, 1, 2, 3, 130] {
            let r = host("").outside_contract("fm-send", reply(code, "x\n"));
            assert_eq!((r.code, &*r.stdout, &*r.stderr), (code, "partial", "x\n"));
        }
    }

    #[test]
    fn ssh_failures_are_unreachable_and_other_exits_are_replies() {
        let sh = |s: &str| Cmd::new("sh").arg("-c").arg(s).run();
        let r = classify(sh(
            "echo 'ssh: connect to host b port 22: Connection refused' >&2; exit 255",
        ));
        assert_eq!(
            r.unwrap_err().0,
            "ssh: connect to host b port 22: Connection refused"
        );
        let r = classify(sh("exit 255")).unwrap_err();
        assert_eq!(r.0, "ssh failed");
        let r = classify(sh("echo out; echo no >&2; exit 1")).unwrap();
        assert_eq!((r.code, &*r.stdout, &*r.stderr), (1, "out\n", "no\n"));
        let r = classify(
            Cmd::new("sh")
                .arg("-c")
                .arg("sleep 5")
                .timeout(std::time::Duration::from_millis(100))
                .run(),
        );
        assert_eq!(r.unwrap_err().0, "timed out after 0.1s");
        let r = classify(Cmd::new("definitely-not-ssh-fm").run());
        assert_eq!(r.unwrap_err().0, "ssh is not installed");
    }
}

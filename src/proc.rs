//! The one runner for child processes the tools start and wait for: tmux,
//! git, ssh, the `on_wake` hook and the demo's tools.
//!
//! Guarantees of [`Cmd::run`]:
//! - an argument vector, never a shell; stdin is `/dev/null` unless
//!   [`Cmd::stdin`] gives bytes to write to it (a body sent over ssh);
//! - bounded in time: at the bound the child is killed by its pid (which is
//!   still ours: it is not reaped until then) and reaped, and the call
//!   fails with [`Cause::TimedOut`];
//! - bounded output: at most [`MAX_OUTPUT`] bytes of each stream are
//!   kept and the rest is read and dropped, so a chatty child never blocks
//!   on a full pipe and never fills memory;
//! - a child that exits while something it started still holds its pipes
//!   open (a hook that backgrounds a job) does not hold the caller: output
//!   is collected for [`DRAIN`] after the exit, then the call returns;
//! - one environment rule per program, here and nowhere else: git runs
//!   without prompts, optional locks or translations ([`Cmd::git`]); tmux
//!   runs as a UTF-8 client ([`Cmd::tmux`]);
//! - one error shape: [`Failure`] names the program, a summary of the
//!   arguments and the cause, and becomes [`Error::External`] (exit 3).
//!
//! Long-running children the tools leave running (the demo's watcher, the
//! agents in their panes) are not this module's: it only runs children to
//! completion.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::error::Error;

/// Bound on one tmux call.
pub const TMUX_TIMEOUT: Duration = Duration::from_secs(5);

/// Bound on one git call.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(10);

/// Bound on each of stdout and stderr.
pub const MAX_OUTPUT: usize = 16 << 20;

/// How long output is still collected after the child exited.
pub const DRAIN: Duration = Duration::from_millis(250);

/// A child process to run to completion.
#[derive(Debug, Clone)]
pub struct Cmd {
    program: OsString,
    args: Vec<OsString>,
    /// Variables to set (`Some`) or remove (`None`), in order.
    env: Vec<(OsString, Option<OsString>)>,
    timeout: Duration,
    /// Bytes written to the child's stdin, then closed.
    stdin: Option<Vec<u8>>,
    /// The child's working directory (default: this process's).
    cwd: Option<std::path::PathBuf>,
}

/// What a child that ran to completion produced.
#[derive(Debug, Clone)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// The exit code; `None` when a signal ended the child.
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    pub fn success(&self) -> bool {
        self.status.success()
    }
}

/// Why a child did not produce an [`Output`] (or, for [`Cmd::run_ok`],
/// a successful one).
#[derive(Debug, thiserror::Error)]
pub enum Cause {
    #[error("not installed (not found on PATH)")]
    NotFound,
    #[error("cannot start: {0}")]
    Spawn(std::io::Error),
    #[error("timed out after {}", secs(*.0))]
    TimedOut(Duration),
    #[error("cannot wait for it: {0}")]
    Wait(std::io::Error),
    #[error("{}", exit_text(*.code, .stderr))]
    Exit { code: Option<i32>, stderr: String },
}

/// A child that could not be run, ran too long or (for [`Cmd::run_ok`])
/// failed.
#[derive(Debug, thiserror::Error)]
#[error("{program} {args}: {cause}")]
pub struct Failure {
    pub program: String,
    /// The arguments, shortened for a message.
    pub args: String,
    pub cause: Cause,
}

impl From<Failure> for Error {
    fn from(f: Failure) -> Error {
        Error::External {
            msg: format!("{}: {}", f.args, f.cause),
            program: f.program,
        }
    }
}

fn secs(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

fn exit_text(code: Option<i32>, stderr: &str) -> String {
    let how = code.map_or_else(|| "killed by a signal".into(), |c| format!("exit {c}"));
    match stderr.trim() {
        "" => how,
        e => format!("{how}: {e}"),
    }
}

/// Longest argument summary in a message.
const ARGS_SHOWN: usize = 120;

impl Cmd {
    /// `program` with no arguments, bounded by [`GIT_TIMEOUT`] until
    /// [`Cmd::timeout`] says otherwise.
    pub fn new(program: impl AsRef<OsStr>) -> Cmd {
        Cmd {
            program: program.as_ref().to_os_string(),
            args: Vec::new(),
            env: Vec::new(),
            timeout: GIT_TIMEOUT,
            stdin: None,
            cwd: None,
        }
    }

    /// `git -C dir`: no credential prompts (`GIT_TERMINAL_PROMPT=0`), no
    /// optional locks a concurrent `git commit` in the worktree would trip
    /// over (`GIT_OPTIONAL_LOCKS=0`), untranslated messages (`LC_ALL=C`).
    pub fn git(dir: &Path) -> Cmd {
        Cmd::new("git")
            .arg("-C")
            .arg(dir)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("LC_ALL", "C")
    }

    /// `tmux -u [-L socket]`. A client that does not think its terminal is
    /// UTF-8 gets format output with every non-ASCII or control character
    /// (the tab between `list-panes -F` fields included) replaced by `_`;
    /// with no locale in the environment (cron) that is every read. `-u`
    /// declares the client UTF-8, and a UTF-8 `LC_CTYPE` is set when the
    /// caller's locale is not one, so a server this call starts (and the
    /// panes it spawns) has one too.
    pub fn tmux(socket: Option<&str>) -> Cmd {
        let mut cmd = Cmd::new("tmux").timeout(TMUX_TIMEOUT).arg("-u");
        if let Some(s) = socket {
            cmd = cmd.arg("-L").arg(s);
        }
        match utf8_locale(|k| std::env::var_os(k)) {
            Some((var, value)) => cmd.env(var, value),
            None => cmd,
        }
    }

    pub fn arg(mut self, a: impl AsRef<OsStr>) -> Cmd {
        self.args.push(a.as_ref().to_os_string());
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, args: I) -> Cmd {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Cmd {
        self.env.push((
            key.as_ref().to_os_string(),
            Some(value.as_ref().to_os_string()),
        ));
        self
    }

    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Cmd {
        self.env.push((key.as_ref().to_os_string(), None));
        self
    }

    /// Runs the child in `dir` (a program that reads its repository from
    /// its working directory, as `gh` does).
    pub fn cwd(mut self, dir: &Path) -> Cmd {
        self.cwd = Some(dir.to_path_buf());
        self
    }

    pub fn timeout(mut self, limit: Duration) -> Cmd {
        self.timeout = limit;
        self
    }

    /// Writes `bytes` to the child's stdin (from a thread, so a child that
    /// does not read cannot block the caller past the time bound).
    pub fn stdin(mut self, bytes: Vec<u8>) -> Cmd {
        self.stdin = Some(bytes);
        self
    }

    fn failure(&self, cause: Cause) -> Failure {
        let mut args = String::new();
        for a in &self.args {
            if !args.is_empty() {
                args.push(' ');
            }
            args.extend(
                a.to_string_lossy()
                    .chars()
                    .map(|c| if c.is_control() { ' ' } else { c }),
            );
        }
        if args.chars().count() > ARGS_SHOWN {
            args = args.chars().take(ARGS_SHOWN).collect::<String>() + "…";
        }
        Failure {
            program: self.program.to_string_lossy().into_owned(),
            args,
            cause,
        }
    }

    /// Runs the child to completion. A non-zero exit is an [`Output`], not
    /// an error: the caller decides what it means.
    pub fn run(&self) -> Result<Output, Failure> {
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        for (k, v) in &self.env {
            match v {
                Some(v) => command.env(k, v),
                None => command.env_remove(k),
            };
        }
        if let Some(d) = &self.cwd {
            command.current_dir(d);
        }
        command
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = command.spawn().map_err(|e| {
            self.failure(if e.kind() == std::io::ErrorKind::NotFound {
                Cause::NotFound
            } else {
                Cause::Spawn(e)
            })
        })?;
        self.wait(child)
    }

    /// [`Cmd::run`], and a non-zero exit is a [`Cause::Exit`] carrying
    /// stderr; on success, stdout.
    pub fn run_ok(&self) -> Result<String, Failure> {
        let out = self.run()?;
        if out.success() {
            return Ok(out.stdout);
        }
        Err(self.failure(Cause::Exit {
            code: out.code(),
            stderr: out.stderr,
        }))
    }

    fn wait(&self, mut child: Child) -> Result<Output, Failure> {
        let deadline = Instant::now() + self.timeout;
        if let (Some(mut pipe), Some(bytes)) = (child.stdin.take(), self.stdin.clone()) {
            std::thread::spawn(move || {
                use std::io::Write;
                // A child that exits without reading gets a broken pipe.
                let _ = pipe.write_all(&bytes);
            });
        }
        let (tx, rx) = mpsc::channel();
        for (stream, pipe) in [
            (
                Stream::Out,
                child
                    .stdout
                    .take()
                    .map(|p| Box::new(p) as Box<dyn Read + Send>),
            ),
            (
                Stream::Err,
                child
                    .stderr
                    .take()
                    .map(|p| Box::new(p) as Box<dyn Read + Send>),
            ),
        ] {
            let tx = tx.clone();
            let pipe = pipe.expect("piped at spawn");
            std::thread::spawn(move || {
                let _ = tx.send(Event::Read(stream, read_bounded(pipe, MAX_OUTPUT)));
            });
        }
        watch_exit(&child, tx);
        let (mut out, mut err, mut exited) = (None, None, false);
        let mut until = deadline;
        while !(exited && out.is_some() && err.is_some()) {
            let left = until.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(Event::Exited) => {
                    exited = true;
                    until = until.min(Instant::now() + DRAIN);
                }
                Ok(Event::Read(Stream::Out, r)) => out = Some(r),
                Ok(Event::Read(Stream::Err, r)) => err = Some(r),
                Err(_) => break,
            }
        }
        if !exited {
            // Not reaped yet, so the pid is still this child's.
            let _ = child.kill();
            let _ = child.wait();
            return Err(self.failure(Cause::TimedOut(self.timeout)));
        }
        let status = child.wait().map_err(|e| self.failure(Cause::Wait(e)))?;
        let text =
            |r: Option<Vec<u8>>| String::from_utf8_lossy(&r.unwrap_or_default()).into_owned();
        Ok(Output {
            status,
            stdout: text(out),
            stderr: text(err),
        })
    }
}

#[derive(Debug, Clone, Copy)]
enum Stream {
    Out,
    Err,
}

enum Event {
    Read(Stream, Vec<u8>),
    Exited,
}

/// Everything `pipe` yields until end of file, keeping the first `max`
/// bytes: the rest is read and dropped, so the writer never blocks.
fn read_bounded(mut pipe: impl Read, max: usize) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match pipe.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                let room = max.saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..n.min(room)]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    kept
}

/// Sends [`Event::Exited`] once `child` has exited, without reaping it
/// (`waitid` with `WNOWAIT`): until the runner reaps it, its pid cannot be
/// reused, so a kill at the time bound can only reach this child.
fn watch_exit(child: &Child, tx: mpsc::Sender<Event>) {
    use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
    let Some(pid) = i32::try_from(child.id()).ok().and_then(Pid::from_raw) else {
        let _ = tx.send(Event::Exited);
        return;
    };
    std::thread::spawn(move || {
        // Exited, or waiting failed (`Child::wait` then says why).
        let opts = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
        while let Err(rustix::io::Errno::INTR) = waitid(WaitId::Pid(pid), opts) {}
        let _ = tx.send(Event::Exited);
    });
}

/// The variable and value that give tmux a UTF-8 character type, or `None`
/// when the caller's locale already is one. The character type is the
/// first of `LC_ALL`, `LC_CTYPE`, `LANG` that is set and not empty; a set
/// `LC_ALL` can only be overridden by `LC_ALL`. `C.UTF-8` exists on every
/// glibc system (built in since glibc 2.35, shipped by Debian before).
pub fn utf8_locale(var: impl Fn(&str) -> Option<OsString>) -> Option<(&'static str, &'static str)> {
    let set = |k: &'static str| var(k).filter(|v| !v.is_empty()).map(|v| (k, v));
    let effective = set("LC_ALL")
        .or_else(|| set("LC_CTYPE"))
        .or_else(|| set("LANG"));
    match effective {
        Some((_, v)) if is_utf8(&v) => None,
        Some(("LC_ALL", _)) => Some(("LC_ALL", "C.UTF-8")),
        _ => Some(("LC_CTYPE", "C.UTF-8")),
    }
}

fn is_utf8(locale: &OsStr) -> bool {
    let l = locale.to_string_lossy().to_ascii_lowercase();
    l.contains("utf-8") || l.contains("utf8")
}

#[cfg(test)]
#[path = "proc_tests.rs"]
mod tests;

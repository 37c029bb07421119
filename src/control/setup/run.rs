//! Running one set-up command, and the log its output goes to.
//!
//! Not [`crate::proc::Cmd`]: that runner takes an argument vector and
//! keeps the head of each stream, while a set-up command is a line of
//! shell the captain wrote and approved, whose useful output is the end
//! of both streams together (the error after a long install). So:
//! `/bin/sh -c <command>` in the worktree, stdin `/dev/null`, stdout and
//! stderr into one pipe of which the last [`KEEP`] bytes are kept, in a
//! process group of its own. At the time bound the whole group is killed
//! (`SIGKILL`), and so is whatever the command leaves running in it once
//! it has exited (nothing started by a set-up outlives it). The
//! environment is [`clean_env`], nothing else of the caller's.

use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};

use crate::home::Home;
use crate::task_id::TaskId;

/// Most bytes of output kept, per command and for the whole log.
pub(super) const KEEP: usize = 1 << 20;

/// How long output is still read after the command's group is gone.
const DRAIN: Duration = Duration::from_millis(500);

/// The longest bound a command is given (a larger `setup_timeout_secs`
/// is this much: ten years).
const MAX_LIMIT: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// How often a running command is looked at.
const POLL: Duration = Duration::from_millis(20);

/// The caller's variables a set-up command gets, when set.
pub(crate) const PASSED: [&str; 8] = [
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR",
];

/// The environment of a set-up command: [`PASSED`] from the caller, and
/// `FM_HOME`, `FM_TASK`, `FM_PROJECT`, `FM_WORKTREE`.
pub(super) fn clean_env(
    home: &Home,
    id: &TaskId,
    project: &Path,
    worktree: &Path,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = PASSED
        .iter()
        .filter_map(|k| Some(((*k).into(), std::env::var_os(k)?)))
        .collect();
    env.push(("FM_HOME".into(), home.root().into()));
    env.push(("FM_TASK".into(), id.as_str().into()));
    env.push(("FM_PROJECT".into(), project.into()));
    env.push(("FM_WORKTREE".into(), worktree.into()));
    env
}

/// How a command ended.
#[derive(Debug)]
pub(super) enum End {
    Exited(i32),
    Signal(i32),
    TimedOut,
    NotStarted(std::io::Error),
}

/// The set-up log: a header, then per step what ran and how it ended.
pub(super) struct Log {
    bytes: Vec<u8>,
}

impl Log {
    pub(super) fn new(id: &TaskId, worktree: &Path) -> Log {
        let now = crate::clock::now();
        Log {
            bytes: format!(
                "# set-up of {id} in {} at {}\n",
                worktree.display(),
                crate::clock::rfc3339(now)
            )
            .into_bytes(),
        }
    }

    pub(super) fn note(&mut self, line: &str) {
        self.bytes
            .extend_from_slice(format!("# {line}\n").as_bytes());
    }

    /// The log's bytes, at most [`KEEP`] of them: its first line, then
    /// the end of the rest.
    pub(super) fn finish(self) -> Vec<u8> {
        if self.bytes.len() <= KEEP {
            return self.bytes;
        }
        let head = self
            .bytes
            .iter()
            .position(|&b| b == b'\n')
            .map_or(0, |i| i + 1)
            .min(KEEP / 2);
        // The note's length barely depends on the count it holds: sized
        // with the largest count, the whole stays within KEEP.
        let note = |n: usize| format!("# (the log's next {n} bytes were dropped)\n");
        let room = KEEP - head - note(self.bytes.len()).len();
        let cut = self.bytes.len() - room;
        let mut out = self.bytes[..head].to_vec();
        out.extend_from_slice(note(cut - head).as_bytes());
        out.extend_from_slice(&self.bytes[cut..]);
        out
    }
}

/// Runs `command` in `cwd` with exactly `env`, for at most `limit`; its
/// output's tail and how it ended go to `log`.
pub(super) fn command(
    command: &str,
    cwd: &Path,
    env: &[(OsString, OsString)],
    limit: Duration,
    log: &mut Log,
) -> End {
    log.note(&format!("$ {command}"));
    let start = Instant::now();
    let end = spawn_and_wait(command, cwd, env, limit, log);
    let took = format!("{:.1}s", start.elapsed().as_secs_f64());
    log.note(&match &end {
        End::Exited(c) => format!("exit {c} after {took}"),
        End::Signal(s) => format!("killed by signal {s} after {took}"),
        End::TimedOut => format!("timed out after {took}: its process group was killed"),
        End::NotStarted(e) => format!("could not start: {e}"),
    });
    end
}

fn spawn_and_wait(
    command: &str,
    cwd: &Path,
    env: &[(OsString, OsString)],
    limit: Duration,
    log: &mut Log,
) -> End {
    let (reader, writer) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => return End::NotStarted(e),
    };
    let child = {
        // The command holds the pipe's write ends: it goes at the end of
        // this block, so the reader sees the end of file once the
        // command's group is gone.
        let mut cmd = Command::new("/bin/sh");
        let stderr = match writer.try_clone() {
            Ok(w) => w,
            Err(e) => return End::NotStarted(e),
        };
        cmd.arg("-c")
            .arg(command)
            .current_dir(cwd)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(stderr);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        cmd.spawn()
    };
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return End::NotStarted(e),
    };
    // What was read is shared as it comes: a process that escaped the
    // group (`setsid`) may hold the pipe open long after the command
    // ended, and what was read before must still be logged.
    let tail = Arc::new(Shared::default());
    let reading = Arc::clone(&tail);
    std::thread::spawn(move || read_tail(reader, KEEP, &reading));
    let pid = i32::try_from(child.id()).ok().and_then(Pid::from_raw);
    let now = Instant::now();
    // Never past what an Instant holds, however large the bound.
    let deadline = now
        .checked_add(limit.min(MAX_LIMIT))
        .unwrap_or(now + Duration::from_secs(3600));
    let mut timed_out = false;
    // Looked at without reaping: until it is reaped, the pid (and so the
    // group's id) cannot be reused, and the kill below reaches only this
    // command's group.
    let opts = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG;
    while let Some(pid) = pid {
        match rustix::process::waitid(WaitId::Pid(pid), opts) {
            Ok(Some(_)) | Err(_) => break,
            Ok(None) => {}
        }
        if Instant::now() >= deadline {
            timed_out = true;
            break;
        }
        std::thread::sleep(POLL);
    }
    if let Some(pid) = pid {
        let _ = rustix::process::kill_process_group(pid, Signal::KILL);
    }
    let status = child.wait();
    let (tail, dropped, open) = tail.take_after(DRAIN);
    if open {
        log.note(
            "(its output was still held open by a process that left its group: \
             what was read by then is logged)",
        );
    }
    if dropped > 0 {
        log.note(&format!(
            "(the first {dropped} bytes of its output were dropped)"
        ));
    }
    log.bytes.extend_from_slice(&tail);
    if !tail.is_empty() && !tail.ends_with(b"\n") {
        log.bytes.push(b'\n');
    }
    if timed_out {
        return End::TimedOut;
    }
    match status {
        Ok(s) => {
            use std::os::unix::process::ExitStatusExt;
            match (s.code(), s.signal()) {
                (Some(c), _) => End::Exited(c),
                (None, Some(sig)) => End::Signal(sig),
                (None, None) => End::Exited(-1),
            }
        }
        Err(e) => End::NotStarted(e),
    }
}

/// The output read so far, shared by the reading thread.
#[derive(Default)]
struct Shared {
    tail: Mutex<Tail>,
    ended: Condvar,
}

#[derive(Default)]
struct Tail {
    kept: Vec<u8>,
    dropped: u64,
    /// End of file was read.
    done: bool,
}

impl Tail {
    /// Keeps at most `keep` bytes, counting those dropped.
    fn trim(&mut self, keep: usize) {
        if self.kept.len() > keep {
            let cut = self.kept.len() - keep;
            self.kept.drain(..cut);
            self.dropped += cut as u64;
        }
    }
}

impl Shared {
    /// What was read once end of file came, or `wait` passed: the last
    /// [`KEEP`] bytes, the count dropped, and whether the pipe was still
    /// open.
    fn take_after(&self, wait: Duration) -> (Vec<u8>, u64, bool) {
        let guard = self
            .tail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (mut t, _) = self
            .ended
            .wait_timeout_while(guard, wait, |t| !t.done)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        t.trim(KEEP);
        let open = !t.done;
        (std::mem::take(&mut t.kept), t.dropped, open)
    }
}

/// Reads `pipe` until end of file into `shared`, keeping (about) the
/// last `keep` bytes.
fn read_tail(mut pipe: impl Read, keep: usize, shared: &Shared) {
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match pipe.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => 0,
        };
        let mut t = shared
            .tail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if n == 0 {
            t.done = true;
            shared.ended.notify_all();
            return;
        }
        t.kept.extend_from_slice(&chunk[..n]);
        if t.kept.len() > 2 * keep {
            t.trim(keep);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cmd: &str, secs: u64) -> (End, String) {
        let d = tempfile::tempdir().unwrap();
        let id = TaskId::parse("t1").unwrap();
        let mut log = Log::new(&id, d.path());
        let env = vec![("PATH".into(), std::env::var_os("PATH").unwrap())];
        let end = command(cmd, d.path(), &env, Duration::from_secs(secs), &mut log);
        (end, String::from_utf8(log.finish()).unwrap())
    }

    #[test]
    fn output_of_both_streams_and_the_exit_code_are_logged() {
        let (end, log) = run("echo out; echo err >&2; exit 3", 10);
        assert!(matches!(end, End::Exited(3)), "{end:?}");
        assert!(
            log.contains("# $ echo out; echo err >&2; exit 3\nout\nerr\n# exit 3 after"),
            "{log}"
        );
    }

    #[test]
    fn the_environment_is_only_what_was_given() {
        let (end, log) = run("env", 10);
        assert!(matches!(end, End::Exited(0)), "{end:?}");
        let vars: Vec<&str> = log
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split_once('=').map(|(k, _)| k))
            .collect();
        // sh may add PWD, SHLVL and `_` itself.
        assert!(
            vars.iter()
                .all(|v| ["PATH", "PWD", "SHLVL", "_", "OLDPWD"].contains(v)),
            "{vars:?}"
        );
    }

    #[test]
    fn a_hanging_command_and_what_it_started_are_killed_at_the_bound() {
        let t = Instant::now();
        let (end, log) = run("sleep 30 & sleep 30; echo never", 1);
        assert!(matches!(end, End::TimedOut), "{end:?}");
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert!(
            !log.lines().any(|l| l == "never") && log.contains("timed out after 1."),
            "{log}"
        );
    }

    #[test]
    fn a_huge_bound_is_no_overflow() {
        let (end, log) = run("echo fine", u64::MAX);
        assert!(matches!(end, End::Exited(0)), "{end:?}");
        assert!(log.contains("\nfine\n# exit 0 after"), "{log}");
    }

    #[test]
    fn output_read_before_an_escaped_process_holds_the_pipe_is_logged() {
        let t = Instant::now();
        // The escaped process outlives the bound below by far, so waiting
        // for the pipe to close would show; a loaded machine has room.
        let (end, log) = run("echo before; setsid sleep 20 & echo after", 60);
        assert!(matches!(end, End::Exited(0)), "{end:?}");
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        assert!(
            log.contains("before\nafter\n") && log.contains("still held open"),
            "{log}"
        );
    }

    #[test]
    fn a_chatty_command_keeps_only_the_end() {
        let (end, log) = run(
            "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo last",
            30,
        );
        assert!(matches!(end, End::Exited(0)), "{end:?}");
        assert!(log.len() <= KEEP, "{}", log.len());
        assert!(log.starts_with("# set-up of t1 in "), "{}", &log[..100]);
        assert!(
            log.contains("last\n# exit 0 after"),
            "{}",
            &log[log.len() - 200..]
        );
    }
}

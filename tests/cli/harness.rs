//! A tiny harness for driving the real binaries in a temp home.
//!
//! A run states what it expects before it runs, and `run()` checks all of
//! it — exit code, stdout and stderr — reporting every mismatch at the
//! test's own line:
//!
//! ```ignore
//! h.fm("ack")
//!     .args(["t1", "2", "9"])
//!     .status(1)
//!     .stdout("already 002.msg\n")
//!     .stderr_has("no message 9")
//!     .run();
//! ```
//!
//! Unless the test says otherwise the exit code must be 0 and both streams
//! must be empty. `*_has`, `*_regex` and `stdout_json` replace a stream's
//! emptiness check by the check the test chose; `*_any` says the test reads
//! that stream itself afterwards. `*_lacks` adds to whatever else applies.
//! Each test gets a private tmux server, killed on drop.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use regex::Regex;

/// Path of a built binary (`fm`, `fm-status`, …).
pub fn bin(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_BIN_EXE_fm"))
        .parent()
        .unwrap()
        .to_path_buf();
    dir.join(name)
}

/// A temporary firstmate home, initialised like `fm init`.
pub struct TestHome {
    pub dir: tempfile::TempDir,
}

impl TestHome {
    pub fn new() -> TestHome {
        let dir = tempfile::Builder::new()
            .prefix("fm-test-")
            .tempdir()
            .unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["config", "data", "state"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("config/firstmate.toml"), "").unwrap();
        TestHome { dir }
    }

    /// An empty directory with no config (not a home yet).
    pub fn bare() -> TestHome {
        TestHome {
            dir: tempfile::Builder::new()
                .prefix("fm-test-")
                .tempdir()
                .unwrap(),
        }
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    #[track_caller]
    pub fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    #[track_caller]
    pub fn read(&self, rel: &str) -> Vec<u8> {
        match std::fs::read(self.path(rel)) {
            Ok(b) => b,
            Err(e) => panic!("read {rel}: {e}"),
        }
    }

    #[track_caller]
    pub fn read_string(&self, rel: &str) -> String {
        match String::from_utf8(self.read(rel)) {
            Ok(s) => s,
            Err(e) => panic!("{rel} is not UTF-8: {e}"),
        }
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).symlink_metadata().is_ok()
    }

    /// Sets the modification time of `rel` to `secs_ago` seconds before now.
    #[track_caller]
    pub fn backdate(&self, rel: &str, secs_ago: u64) {
        let t = SystemTime::now() - Duration::from_secs(secs_ago);
        let set = std::fs::File::options()
            .write(true)
            .open(self.path(rel))
            .and_then(|f| f.set_modified(t));
        if let Err(e) = set {
            panic!("backdate {rel}: {e}");
        }
    }

    /// Every path under the home, relative, sorted (to prove nothing was created).
    pub fn tree(&self) -> Vec<String> {
        fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                out.push(p.strip_prefix(root).unwrap().display().to_string());
                if p.is_dir() && !p.is_symlink() {
                    walk(root, &p, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.root(), &self.root(), &mut out);
        out.sort();
        out
    }

    /// `fm-<tool>` (or `fm` for "fm") with `FM_HOME` set to this home.
    pub fn fm(&self, tool: &str) -> Cmd {
        let name = if tool == "fm" {
            "fm".to_string()
        } else {
            format!("fm-{tool}")
        };
        Cmd::new(bin(&name)).env("FM_HOME", self.root())
    }
}

/// What one output stream must look like.
#[derive(Default)]
struct Expect {
    exact: Option<Vec<u8>>,
    has: Vec<String>,
    lacks: Vec<String>,
    regex: Vec<Regex>,
    json: bool,
    any: bool,
}

impl Expect {
    /// The mismatches of `got` against this expectation, as readable lines.
    fn check(&self, name: &str, got: &[u8]) -> Vec<String> {
        let text = String::from_utf8_lossy(got);
        let mut bad = Vec::new();
        let chosen =
            self.exact.is_some() || !self.has.is_empty() || !self.regex.is_empty() || self.json;
        if let Some(want) = &self.exact {
            if got != want.as_slice() {
                bad.push(format!(
                    "{name} differs:\n  want {:?}\n  have {:?}",
                    String::from_utf8_lossy(want),
                    clip(&text)
                ));
            }
        } else if !chosen && !self.any && !got.is_empty() {
            bad.push(format!("{name} should be empty, have {:?}", clip(&text)));
        }
        for s in &self.has {
            if !text.contains(s.as_str()) {
                bad.push(format!("{name} lacks {s:?}"));
            }
        }
        for s in &self.lacks {
            if text.contains(s.as_str()) {
                bad.push(format!("{name} should not contain {s:?}"));
            }
        }
        for re in &self.regex {
            if !re.is_match(&text) {
                bad.push(format!("{name} does not match /{}/", re.as_str()));
            }
        }
        if self.json
            && let Err(e) = serde_json::from_slice::<serde_json::Value>(got)
        {
            bad.push(format!("{name} is not one JSON document: {e}"));
        }
        bad
    }
}

/// At most 2,000 characters of `s`, for a failure message.
fn clip(s: &str) -> String {
    match s.char_indices().nth(2000) {
        Some((i, _)) => format!("{}… ({} bytes in all)", &s[..i], s.len()),
        None => s.to_string(),
    }
}

/// A whole-stream regex: `^` and `$` match at line ends, `.` matches a
/// newline, and the pattern must match the whole stream.
fn whole(pattern: &str) -> Regex {
    Regex::new(&format!(r"(?ms)\A(?:{pattern})\z"))
        .unwrap_or_else(|e| panic!("bad test regex {pattern:?}: {e}"))
}

/// A command under test, with what it must do.
#[must_use = "a Cmd does nothing until run()"]
#[allow(
    clippy::struct_field_names,
    reason = "a command builder around its command"
)]
pub struct Cmd {
    cmd: Command,
    stdin: Option<Vec<u8>>,
    status: Option<i32>,
    stdout: Expect,
    stderr: Expect,
}

impl Cmd {
    pub fn new(program: impl AsRef<OsStr>) -> Cmd {
        let mut cmd = Command::new(program);
        cmd.env_remove("NO_COLOR").env_remove("FM_HOME");
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("FM_") && k != "FM_REQUIRE_TMUX" {
                cmd.env_remove(k);
            }
        }
        Cmd {
            cmd,
            stdin: None,
            status: Some(0),
            stdout: Expect::default(),
            stderr: Expect::default(),
        }
    }

    pub fn arg(mut self, a: impl AsRef<OsStr>) -> Cmd {
        self.cmd.arg(a);
        self
    }

    pub fn args<I, S>(mut self, a: I) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd.args(a);
        self
    }

    pub fn env(mut self, k: &str, v: impl AsRef<OsStr>) -> Cmd {
        self.cmd.env(k, v);
        self
    }

    pub fn current_dir(mut self, d: impl AsRef<Path>) -> Cmd {
        self.cmd.current_dir(d);
        self
    }

    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Cmd {
        self.stdin = Some(bytes.into());
        self
    }

    /// The exit code it must end with (0 unless said otherwise).
    pub fn status(mut self, code: i32) -> Cmd {
        self.status = Some(code);
        self
    }

    /// Any exit code (the test inspects `Output::code` itself).
    pub fn status_any(mut self) -> Cmd {
        self.status = None;
        self
    }

    /// Stdout must be exactly `s`.
    pub fn stdout(mut self, s: impl AsRef<[u8]>) -> Cmd {
        self.stdout.exact = Some(s.as_ref().to_vec());
        self
    }

    pub fn stdout_has(mut self, s: &str) -> Cmd {
        self.stdout.has.push(s.to_string());
        self
    }

    pub fn stdout_lacks(mut self, s: &str) -> Cmd {
        self.stdout.lacks.push(s.to_string());
        self
    }

    /// Stdout as a whole matches `pattern` (see [`whole`]).
    pub fn stdout_regex(mut self, pattern: &str) -> Cmd {
        self.stdout.regex.push(whole(pattern));
        self
    }

    /// Stdout is one JSON document, which the test then reads.
    pub fn stdout_json(mut self) -> Cmd {
        self.stdout.json = true;
        self
    }

    /// Stdout is not checked here; the test reads it from the `Output`.
    pub fn stdout_any(mut self) -> Cmd {
        self.stdout.any = true;
        self
    }

    /// Stderr must be exactly `s`.
    pub fn stderr(mut self, s: impl AsRef<[u8]>) -> Cmd {
        self.stderr.exact = Some(s.as_ref().to_vec());
        self
    }

    pub fn stderr_has(mut self, s: &str) -> Cmd {
        self.stderr.has.push(s.to_string());
        self
    }

    pub fn stderr_lacks(mut self, s: &str) -> Cmd {
        self.stderr.lacks.push(s.to_string());
        self
    }

    /// Stderr as a whole matches `pattern` (see [`whole`]).
    pub fn stderr_regex(mut self, pattern: &str) -> Cmd {
        self.stderr.regex.push(whole(pattern));
        self
    }

    /// Stderr is not checked here; the test reads it from the `Output`.
    pub fn stderr_any(mut self) -> Cmd {
        self.stderr.any = true;
        self
    }

    /// The command itself, for a test that starts it in the background
    /// and checks what it did by other means.
    pub fn into_command(self) -> Command {
        self.cmd
    }

    /// Runs to completion and checks the exit code and both streams; a
    /// mismatch fails the test at the caller's line with the whole output.
    #[track_caller]
    pub fn run(self) -> Output {
        let mut started = self.start();
        let code = started.child.wait().unwrap().code().unwrap_or(-1);
        started.check(code)
    }

    /// Starts the command in the background with its output captured; the
    /// test waits on what it prints ([`Started::stdout_so_far`]), signals
    /// it, and [`Started::wait`] checks the expectations when it ends.
    #[track_caller]
    pub fn start(mut self) -> Started {
        use std::io::{Read, Write};
        self.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        self.cmd.stdin(if self.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let mut child = match self.cmd.spawn() {
            Ok(c) => c,
            Err(e) => panic!("spawn {}: {e}", self.cmd.get_program().display()),
        };
        if let Some(bytes) = self.stdin.take() {
            let mut si = child.stdin.take().unwrap();
            std::thread::spawn(move || {
                let _ = si.write_all(&bytes);
            });
        }
        let mut readers = Vec::new();
        let mut pipe = |r: Option<Box<dyn Read + Send>>| {
            let buf = Arc::new(Mutex::new(Vec::new()));
            let sink = Arc::clone(&buf);
            let mut r = r.unwrap();
            readers.push(std::thread::spawn(move || {
                let mut chunk = [0u8; 8192];
                while let Ok(n) = r.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    sink.lock().unwrap().extend_from_slice(&chunk[..n]);
                }
            }));
            buf
        };
        let stdout = pipe(child.stdout.take().map(|p| Box::new(p) as _));
        let stderr = pipe(child.stderr.take().map(|p| Box::new(p) as _));
        let label = std::iter::once(self.cmd.get_program())
            .chain(self.cmd.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        Started {
            child,
            stdout,
            stderr,
            readers,
            label,
            status: self.status,
            expect_stdout: std::mem::take(&mut self.stdout),
            expect_stderr: std::mem::take(&mut self.stderr),
        }
    }
}

/// A command running in the background; killed (by its pid) if the test
/// drops it before it ends.
#[must_use = "wait() checks what it did"]
pub struct Started {
    child: std::process::Child,
    stdout: Arc<Mutex<Vec<u8>>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    readers: Vec<std::thread::JoinHandle<()>>,
    label: String,
    status: Option<i32>,
    expect_stdout: Expect,
    expect_stderr: Expect,
}

impl Started {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn stdout_so_far(&self) -> String {
        String::from_utf8_lossy(&self.stdout.lock().unwrap()).into_owned()
    }

    pub fn stderr_so_far(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// Sends `sig` to the process (by its pid).
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on the pid of a child this harness spawned and
        // has not reaped yet.
        unsafe { libc::kill(self.child.id().cast_signed(), sig) };
    }

    /// Its exit code if it has ended (-1 for a signal), without waiting.
    pub fn exited(&mut self) -> Option<i32> {
        self.child
            .try_wait()
            .unwrap()
            .map(|st| st.code().unwrap_or(-1))
    }

    /// Waits at most `secs` for it to end (failing the test if it does not)
    /// and checks the exit code and both streams.
    #[track_caller]
    pub fn wait(mut self, secs: f64) -> Output {
        let code = if wait_until(secs, || self.exited().is_some()) {
            self.exited().unwrap()
        } else {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.join_readers();
            panic!(
                "{}: still running after {secs} s\n--- stdout\n{}\n--- stderr\n{}",
                self.label,
                self.stdout_so_far(),
                self.stderr_so_far()
            );
        };
        self.check(code)
    }

    /// Collects the output of the ended process and checks it.
    #[track_caller]
    fn check(mut self, code: i32) -> Output {
        self.join_readers();
        let output = Output {
            code,
            stdout_bytes: std::mem::take(&mut *self.stdout.lock().unwrap()),
            stderr_bytes: std::mem::take(&mut *self.stderr.lock().unwrap()),
        };
        let mut bad = Vec::new();
        if let Some(want) = self.status
            && output.code != want
        {
            bad.push(format!("exit code {} (want {want})", output.code));
        }
        bad.extend(self.expect_stdout.check("stdout", &output.stdout_bytes));
        bad.extend(self.expect_stderr.check("stderr", &output.stderr_bytes));
        assert!(
            bad.is_empty(),
            "{}:\n{}\n{}",
            self.label,
            bad.join("\n"),
            output.context()
        );
        output
    }

    fn join_readers(&mut self) {
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A finished command whose expectations held.
pub struct Output {
    pub code: i32,
    pub stdout_bytes: Vec<u8>,
    pub stderr_bytes: Vec<u8>,
}

impl Output {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout_bytes).into_owned()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr_bytes).into_owned()
    }

    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        match serde_json::from_slice(&self.stdout_bytes) {
            Ok(v) => v,
            Err(e) => panic!("not JSON ({e}): {}", self.context()),
        }
    }

    fn context(&self) -> String {
        format!(
            "--- exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code,
            clip(&self.stdout()),
            clip(&self.stderr())
        )
    }
}

/// Whether `what` is here. When it is not: with `flag=1` in the
/// environment the test fails; without, it prints why and the caller
/// returns (the test is skipped).
#[track_caller]
fn requirement(present: bool, what: &str, flags: &[&str]) -> bool {
    if present {
        return true;
    }
    if let Some(f) = flags
        .iter()
        .find(|f| std::env::var(f).as_deref() == Ok("1"))
    {
        panic!("{what} is required ({f}=1) but missing");
    }
    eprintln!(
        "skipped: {what} missing (set {}=1 to fail instead)",
        flags.join("=1 or ")
    );
    false
}

fn runs(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// tmux, required by `FM_REQUIRE_TMUX=1`.
#[track_caller]
pub fn have_tmux() -> bool {
    requirement(runs("tmux", "-V"), "tmux", &["FM_REQUIRE_TMUX"])
}

/// python3, for the scripted stand-in agents. Required by
/// `FM_REQUIRE_PYTHON=1`, and by `FM_REQUIRE_TMUX=1` (the stand-ins are
/// what the tmux tests drive).
#[track_caller]
pub fn have_python() -> bool {
    requirement(
        runs("python3", "--version"),
        "python3",
        &["FM_REQUIRE_PYTHON", "FM_REQUIRE_TMUX"],
    )
}

/// A failed requirement that has a reason (e.g. a mount that failed):
/// fails the test under `flag=1`, else prints why; returns false.
#[track_caller]
pub fn unmet(what: &str, flag: &str) -> bool {
    requirement(false, what, &[flag])
}

static TMUX_N: AtomicUsize = AtomicUsize::new(0);

/// A private tmux server (`tmux -L fm-test-<pid>-<n>`), killed on drop.
pub struct Tmux {
    pub socket: String,
}

impl Tmux {
    /// A new server, or `None` (with a printed reason) when tmux is missing;
    /// with `FM_REQUIRE_TMUX=1` a missing tmux fails the test instead.
    #[track_caller]
    pub fn start() -> Option<Tmux> {
        if !have_tmux() {
            return None;
        }
        let n = TMUX_N.fetch_add(1, Ordering::Relaxed);
        let socket = format!("fm-test-{}-{n}", std::process::id());
        let t = Tmux { socket };
        t.run([
            "new-session",
            "-d",
            "-s",
            "fm-test",
            "-x",
            "200",
            "-y",
            "50",
        ]);
        Some(t)
    }

    /// A new server and python3 for the stand-in agents, or `None` when
    /// either is missing (see [`have_python`]).
    #[track_caller]
    pub fn with_python() -> Option<Tmux> {
        let t = Tmux::start()?;
        have_python().then_some(t)
    }

    #[track_caller]
    pub fn run<I, S>(&self, args: I) -> String
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tmux failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Opens a window running `argv` (no shell), returning its pane id.
    #[track_caller]
    pub fn window(&self, name: &str, argv: &[&str]) -> String {
        let mut args = vec![
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-t",
            "fm-test",
            "-n",
            name,
        ];
        args.extend_from_slice(argv);
        self.run(args).trim().to_string()
    }

    #[track_caller]
    pub fn capture(&self, pane: &str) -> String {
        self.run(["capture-pane", "-p", "-t", pane])
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// Polls `f` every 10 ms until it returns true or `secs` pass; returns
/// as soon as it holds. The bound is generous: it only decides how long a
/// failing test takes to say so.
pub fn wait_until(secs: f64, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    f()
}

/// [`wait_until`], failing the test at the caller's line with `what` when
/// the condition never holds.
#[track_caller]
pub fn wait_for(what: &str, secs: f64, f: impl FnMut() -> bool) {
    assert!(
        wait_until(secs, f),
        "gave up after {secs} s waiting for {what}"
    );
}

/// Runs `git -C dir args…` with a fixed identity; panics on failure and
/// returns stdout trimmed.
#[track_caller]
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

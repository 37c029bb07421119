//! A tiny harness for driving the real binaries in a temp home:
//! `Home::new().fm("status").args([..]).run().success().stdout_has("..")`,
//! and a private tmux server per test that is killed on drop.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

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

    pub fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.path(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).symlink_metadata().is_ok()
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

    /// `fm-<tool>` (or `fm` for "fm") with `--home` set to this home.
    pub fn fm(&self, tool: &str) -> Cmd {
        let name = if tool == "fm" {
            "fm".to_string()
        } else {
            format!("fm-{tool}")
        };
        let mut c = Cmd::new(bin(&name));
        c.cmd.env("FM_HOME", self.root());
        c
    }
}

/// A command under test.
pub struct Cmd {
    pub cmd: Command,
    stdin: Option<Vec<u8>>,
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
        Cmd { cmd, stdin: None }
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

    pub fn run(mut self) -> Run {
        use std::io::Write;
        self.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        self.cmd.stdin(if self.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let mut child = self.cmd.spawn().expect("spawn binary under test");
        if let Some(bytes) = self.stdin.take() {
            let mut si = child.stdin.take().unwrap();
            std::thread::spawn(move || {
                let _ = si.write_all(&bytes);
            });
        }
        Run {
            out: child.wait_with_output().unwrap(),
        }
    }
}

/// A finished command, with assertions that print everything on failure.
pub struct Run {
    pub out: Output,
}

impl Run {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    pub fn code(&self) -> i32 {
        self.out.status.code().unwrap_or(-1)
    }
    fn context(&self) -> String {
        format!(
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code(),
            self.stdout(),
            self.stderr()
        )
    }
    pub fn status(self, code: i32) -> Run {
        assert_eq!(self.code(), code, "{}", self.context());
        self
    }
    pub fn success(self) -> Run {
        self.status(0)
    }
    pub fn stdout_has(self, s: &str) -> Run {
        assert!(
            self.stdout().contains(s),
            "stdout lacks {s:?}\n{}",
            self.context()
        );
        self
    }
    pub fn stderr_has(self, s: &str) -> Run {
        assert!(
            self.stderr().contains(s),
            "stderr lacks {s:?}\n{}",
            self.context()
        );
        self
    }
    pub fn stdout_is(self, s: &str) -> Run {
        assert_eq!(self.stdout(), s, "{}", self.context());
        self
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout())
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.context()))
    }
}

static TMUX_N: AtomicUsize = AtomicUsize::new(0);

/// A private tmux server (`tmux -L fm-test-<pid>-<n>`), killed on drop.
pub struct Tmux {
    pub socket: String,
}

impl Tmux {
    /// A new server, or `None` (with a printed reason) when tmux is missing;
    /// with `FM_REQUIRE_TMUX=1` a missing tmux fails the test instead.
    pub fn start() -> Option<Tmux> {
        let ok = Command::new("tmux")
            .arg("-V")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !ok {
            if std::env::var("FM_REQUIRE_TMUX").as_deref() == Ok("1") {
                panic!("tmux is required (FM_REQUIRE_TMUX=1) but not installed");
            }
            eprintln!("skipped: tmux not installed");
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

/// Polls `f` every 20 ms until it returns true or `secs` pass.
pub fn wait_until(secs: f64, mut f: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs);
    while std::time::Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    f()
}

/// Runs `git -C dir args…` with a fixed identity; panics on failure and
/// returns stdout trimmed.
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

//! The torture suite's world: one home, its tasks (pane-less ones and a few
//! with a logging agent in a private tmux pane), a seeded random source,
//! and a way to run a real binary and SIGKILL it after a delay.

use std::collections::HashSet;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use crate::harness::{Cmd, TestHome, Tmux, wait_until};

/// A small xorshift generator: reproducible from the printed seed, no crate.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

/// The scripted agent for pane tasks: logs every line it is typed and
/// never acknowledges, so the watcher's ladder rings it and escalates.
/// It reads in cooked mode, so an Enter typed ahead is echoed before the
/// agent prints its next prompt and prompts can pile up on one line
/// (`deaf> deaf>`); the harness's composer regex reads the text after the
/// last prompt, as a real agent's composer would show it.
const AGENT: &str = r#"
import sys
log = sys.argv[1]
sys.stdout.write("deaf> "); sys.stdout.flush()
while True:
    line = sys.stdin.readline()
    if not line:
        break
    with open(log, "a") as f:
        f.write(line)
    sys.stdout.write("deaf> "); sys.stdout.flush()
"#;

const HARNESS: &str = r#"
[harness.deaf]
launch = ["python3"]
agent_commands = ["python3"]
composer_regex = "^(?:deaf> ?)+(.*)$"
busy_regex = "^BUSY"
"#;

/// Timers shortened so ladders move within a short run.
pub const ENV: &[(&str, &str)] = &[
    ("FM_WATCH_GRACE_SECS", "1"),
    ("FM_WATCH_MAX_RINGS", "2"),
    ("FM_WATCH_POLL_SECS", "1"),
    ("FM_SEND_SETTLE_MS", "0"),
    ("FM_SEND_ENTER_WAIT_MS", "30"),
    ("FM_SEND_ENTER_RETRIES", "1"),
];

/// The home under torture.
pub struct World {
    pub home: TestHome,
    pub scratch: tempfile::TempDir,
    pub tmux: Option<Tmux>,
    /// Every task id; `pane_tasks` is the subset with a real pane.
    pub tasks: Vec<String>,
    pub pane_tasks: Vec<String>,
    /// Pids of participants that died by SIGKILL.
    pub killed: Mutex<HashSet<u32>>,
}

impl World {
    pub fn new(paneless: usize, panes: usize) -> World {
        let home = TestHome::new();
        // Pane tasks need tmux and python3 (their stand-in agent); without
        // them (and without FM_REQUIRE_TMUX=1) the storm runs paneless.
        let tmux = if panes > 0 { Tmux::with_python() } else { None };
        home.write("config/firstmate.toml", HARNESS);
        let scratch = tempfile::Builder::new()
            .prefix("fm-torture-")
            .tempdir()
            .unwrap();
        std::fs::write(scratch.path().join("agent.py"), AGENT).unwrap();
        let mut w = World {
            home,
            scratch,
            tmux,
            tasks: Vec::new(),
            pane_tasks: Vec::new(),
            killed: Mutex::new(HashSet::new()),
        };
        for i in 0..paneless {
            let id = format!("t{i}");
            w.home.write(&format!("state/{id}.meta"), "kind=ship\n");
            w.tasks.push(id);
        }
        if w.tmux.is_some() {
            for i in 0..panes {
                let id = format!("p{i}");
                w.add_pane_task(&id);
                w.tasks.push(id.clone());
                w.pane_tasks.push(id);
            }
        }
        w
    }

    fn add_pane_task(&self, id: &str) {
        let tmux = self.tmux.as_ref().unwrap();
        let script = self.scratch.path().join("agent.py");
        let log = self.agent_log(id);
        let pane = tmux.window(
            id,
            &["python3", script.to_str().unwrap(), log.to_str().unwrap()],
        );
        assert!(wait_until(10.0, || tmux.capture(&pane).contains("deaf>")));
        self.home.write(
            &format!("state/{id}.meta"),
            format!(
                "kind=ship\nharness=deaf\npane={pane}\ntmux_socket={}\n",
                tmux.socket
            ),
        );
    }

    /// Lines the agent of pane task `id` was typed.
    pub fn agent_log(&self, id: &str) -> PathBuf {
        self.scratch.path().join(format!("{id}.agent.log"))
    }

    pub fn state(&self) -> PathBuf {
        self.home.path("state")
    }

    /// `fm-<tool>` on this home with the shortened timers.
    pub fn fm(&self, tool: &str) -> Command {
        let mut c = self.home.fm(tool).into_command();
        for (k, v) in ENV {
            c.env(k, v);
        }
        if let Some(t) = &self.tmux {
            c.env("FM_TMUX_SOCKET", &t.socket);
        }
        c
    }

    /// `sh -c 'echo "$1" >> "$2"'`: a worker appending by hand. The line
    /// and path are arguments, never interpolated into the script.
    #[allow(clippy::unused_self, reason = "called on the world like its siblings")]
    pub fn echo_append(&self, line: &str, path: &Path) -> Command {
        let mut c = Cmd::new("sh").into_command();
        c.args(["-c", "echo \"$1\" >> \"$2\"", "sh", line])
            .arg(path);
        c
    }

    pub fn note_killed(&self, pid: u32) {
        self.killed.lock().unwrap().insert(pid);
    }
}

/// What running one participant process came to.
#[derive(Debug, Clone)]
pub struct Ran {
    pub pid: u32,
    /// Died by SIGKILL (ours).
    pub killed: bool,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cmd` to the end, feeding `stdin`; with `kill_after`, sends
/// SIGKILL after that delay if it is still running.
pub fn run(
    world: &World,
    mut cmd: Command,
    stdin: Option<Vec<u8>>,
    kill_after: Option<Duration>,
) -> Ran {
    use std::io::Write;
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = cmd.spawn().expect("spawn participant");
    let pid = child.id();
    let feeder = stdin.map(|bytes| {
        let mut si = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            let _ = si.write_all(&bytes);
        })
    });
    if let Some(d) = kill_after {
        std::thread::sleep(d);
        if child.try_wait().unwrap().is_none() {
            // SAFETY: kill(2) on our own unreaped child's pid.
            unsafe { libc::kill(pid.cast_signed(), libc::SIGKILL) };
        }
    }
    let out = child.wait_with_output().unwrap();
    if let Some(f) = feeder {
        let _ = f.join();
    }
    let killed = out.status.signal() == Some(libc::SIGKILL);
    if killed {
        world.note_killed(pid);
    }
    Ran {
        pid,
        killed,
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

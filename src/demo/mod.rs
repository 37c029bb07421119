//! `fm demo` (docs/spec/fm.md): the whole loop, unattended, narrated and checked.
//!
//! It builds a temporary home and a throwaway git project (with a bare
//! "remote"), starts a private tmux server, and drives the real binaries:
//! brief → spawn a stand-in worker → send → the worker acknowledges → a
//! deaf worker is re-rung and escalated by the watcher (shortened timers) →
//! the worker commits and says done → the gate refuses the unpushed head →
//! push → the gate accepts → the fleet view. Every step checks what it
//! expects; the first failure stops the demo with exit 1. It cleans up (the
//! tmux server it started and the temporary home) unless `--keep`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::home::Home;
use crate::proc::Cmd;
use crate::stand_in::sibling_bin;
use crate::task_id::TaskId;
use crate::tmux::pane::{Pane, Tmux};
use crate::{fsx, inbox};

mod steps;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

struct Demo {
    root: PathBuf,
    socket: String,
    project: PathBuf,
    started: Instant,
    step: usize,
    /// The watcher daemon this demo started (stopped by pid at cleanup).
    watcher: Option<std::process::Child>,
}

/// The outcome of one command the demo ran.
struct Ran {
    code: Option<i32>,
    out: String,
    err: String,
}

fn fail(msg: impl Into<String>) -> Error {
    Error::refused(msg.into())
}

#[allow(
    clippy::unused_self,
    reason = "every step helper is a method, so the steps read alike"
)]
impl Demo {
    fn say(&mut self, text: &str) {
        self.step += 1;
        crate::output::out_say(&format!(
            "\n[{:>4.1}s] {}. {text}",
            self.started.elapsed().as_secs_f64(),
            self.step
        ));
    }

    fn ok(&self, text: &str) {
        crate::output::out_say(&format!("        ok: {text}"));
    }

    fn check_interrupt(&self) -> Result<()> {
        if INTERRUPTED.load(Ordering::SeqCst) {
            Err(Error::Interrupted)
        } else {
            Ok(())
        }
    }

    fn tmux(&self) -> Tmux {
        Tmux::new(&self.socket)
    }

    /// Runs `fm-<tool> args…` against the demo home and echoes the command.
    fn fm(&self, tool: &str, args: &[&str]) -> Result<Ran> {
        self.check_interrupt()?;
        crate::output::out_say(&format!(
            "        $ fm-{tool} {}",
            args.iter()
                .map(|a| if a.contains(' ') {
                    format!("'{a}'")
                } else {
                    a.to_string()
                })
                .collect::<Vec<_>>()
                .join(" ")
        ));
        let ran = Cmd::new(sibling_bin(&format!("fm-{tool}")))
            .args(args)
            .env("FM_HOME", &self.root)
            .env_remove("NO_COLOR")
            .timeout(Duration::from_secs(60))
            .run()?;
        let (code, out, err) = (ran.code(), ran.stdout, ran.stderr);
        for l in out.lines() {
            crate::output::out_say(&format!("          {l}"));
        }
        Ok(Ran { code, out, err })
    }

    fn expect_ok(&self, tool: &str, args: &[&str]) -> Result<String> {
        let r = self.fm(tool, args)?;
        if r.code != Some(0) {
            return Err(fail(format!(
                "fm-{tool} exited {:?}: {}",
                r.code,
                r.err.trim()
            )));
        }
        Ok(r.out)
    }

    fn git(&self, dir: &Path, args: &[&str]) -> Result<String> {
        let ran = Cmd::git(dir)
            .args(args)
            .timeout(Duration::from_secs(30))
            .run()?;
        if !ran.success() {
            return Err(Error::External {
                program: "git".into(),
                msg: format!("git {}: {}", args.join(" "), ran.stderr.trim()),
            });
        }
        Ok(ran.stdout)
    }

    /// Polls `f` every 100 ms for up to `secs`.
    fn wait(&self, secs: u64, mut f: impl FnMut() -> Result<bool>) -> Result<bool> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            self.check_interrupt()?;
            if f()? {
                return Ok(true);
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn home(&self) -> Result<Home> {
        Home::at(&self.root)
    }

    fn pane_of(&self, id: &str) -> Result<String> {
        let home = self.home()?;
        let id = TaskId::parse(id)?;
        Ok(crate::meta::TaskMeta::load(&home, &id)?
            .and_then(|m| m.pane)
            .unwrap_or_default())
    }

    fn pending(&self, id: &str) -> Result<Vec<u64>> {
        inbox::pending(&self.home()?, &TaskId::parse(id)?)
    }

    fn wakes(&self) -> Result<String> {
        Ok(
            String::from_utf8_lossy(
                &fsx::read_optional(&self.home()?.wakes())?.unwrap_or_default(),
            )
            .into_owned(),
        )
    }

    fn cleanup(&mut self, keep: bool) {
        if let Some(mut child) = self.watcher.take() {
            // SIGTERM, not kill(): the watcher then releases its lock cleanly.
            // The child is not reaped yet, so its pid is still ours.
            if let Some(pid) = rustix::process::Pid::from_raw(child.id().cast_signed()) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
            let _ = child.wait();
        }
        if keep {
            crate::output::out_say(&format!(
                "\nkept: home {} · attach with: tmux -L {} attach",
                self.root.display(),
                self.socket
            ));
            return;
        }
        let _ = self.tmux().run(&["kill-server"]);
        #[expect(
            clippy::disallowed_methods,
            reason = "outside the home: the demo's own temporary directory, home and projects"
        )]
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn preflight() -> Result<()> {
    for (program, arg) in [("tmux", "-V"), ("git", "--version")] {
        let ok = Cmd::new(program).arg(arg).run().is_ok_and(|o| o.success());
        if !ok {
            return Err(Error::External {
                program: program.into(),
                msg:
                    "not installed; the demo needs tmux and git (e.g. apt-get install -y tmux git)"
                        .into(),
            });
        }
    }
    // The demo drives the tools as separate programs, next to this one;
    // `cargo run --bin fm` alone builds only `fm`.
    let missing: Vec<&str> = DEMO_TOOLS
        .iter()
        .copied()
        .filter(|t| !sibling_bin(t).is_absolute())
        .collect();
    if !missing.is_empty() {
        return Err(Error::External {
            program: missing[0].into(),
            msg: format!(
                "not next to this program ({} missing): build every binary first, e.g. `cargo build --release --bins`",
                missing.join(", ")
            ),
        });
    }
    Ok(())
}

/// The programs the demo runs (itself, its stand-in workers and the watcher).
const DEMO_TOOLS: &[&str] = &[
    "fm-brief",
    "fm-control",
    "fm-send",
    "fm-ack",
    "fm-status",
    "fm-watch",
    "fm-crew-state",
    "fm-dod",
    "fm-stand-in",
];

/// Runs the demo; exit 0 when every expectation held.
pub fn run(keep: bool) -> Result<u8> {
    preflight()?;
    // Ctrl-C ends the demo at the next step, after its cleanup.
    let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, &INTERRUPTED);
    let stamp = crate::clock::now();
    let root = std::env::temp_dir().join(format!("fm-demo-{}-{stamp}", std::process::id()));
    fsx::ensure_dir(&root)?;
    #[expect(
        clippy::disallowed_methods,
        reason = "outside the home: the demo's own temporary directory"
    )]
    let root = root
        .canonicalize()
        .map_err(|e| Error::io("resolve", &root, e))?;
    let mut demo = Demo {
        project: root.join("project"),
        root,
        socket: format!("fm-demo-{}", std::process::id()),
        started: Instant::now(),
        step: 0,
        watcher: None,
    };
    crate::output::out_say("firstmate demo: the whole loop, unattended, on a private tmux server");
    let result = (|| {
        demo.setup()?;
        demo.brief_and_spawn(
            "demo-ship",
            "Add feature.txt describing the small change, on your branch.",
        )?;
        demo.send_and_ack("demo-ship")?;
        demo.start_watcher()?;
        demo.brief_and_spawn("demo-deaf", "Add a note to the README.")?;
        demo.deaf_and_escalate("demo-deaf")?;
        demo.done_and_gate("demo-ship")?;
        demo.fleet()
    })();
    demo.cleanup(keep);
    match result {
        Ok(()) => {
            crate::output::out_say(&format!(
                "\ndemo passed: every expectation held ({:.1}s)",
                demo.started.elapsed().as_secs_f64()
            ));
            Ok(0)
        }
        Err(e) => {
            crate::output::out_say(&format!("\ndemo FAILED at step {}: {e}", demo.step));
            Err(e)
        }
    }
}

//! A private tmux server for the fleet tests, killed on drop.

use std::path::Path;

use crate::tmux::pane::Tmux;

/// A private tmux server, killed on drop.
pub(super) struct Server {
    pub(super) tmux: Tmux,
    /// The next window index: each window gets its own, as tmux's own
    /// choice of the next free index can collide ("index 5 in use").
    next: std::cell::Cell<u32>,
}

impl Server {
    /// `None` when tmux is missing (a failure with `FM_REQUIRE_TMUX=1`).
    pub(super) fn start(tag: &str) -> Option<Server> {
        let ok = std::process::Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            assert!(
                std::env::var_os("FM_REQUIRE_TMUX").is_none(),
                "tmux is required (FM_REQUIRE_TMUX) but missing"
            );
            crate::output::err_line("skipped: tmux is not installed");
            return None;
        }
        let socket = format!("fm-test-{tag}-{}", std::process::id());
        let s = Server {
            tmux: Tmux::new(&socket),
            next: std::cell::Cell::new(100),
        };
        s.run(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "120",
            "-y",
            "40",
        ]);
        s.run(&["set", "-g", "remain-on-exit", "on"]);
        Some(s)
    }

    pub(super) fn socket(&self) -> &str {
        self.tmux.socket.as_deref().unwrap()
    }

    pub(super) fn run(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("tmux")
            .args(["-L", self.socket()])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A window running `script` under `sh`; its pane id.
    pub(super) fn window(&self, script: &str) -> String {
        // Each window gets its own index, and a failure says what tmux
        // said (a busy machine has been seen to refuse one).
        let mut said = String::new();
        for _ in 0..5 {
            let target = format!("t:{}", self.next.get());
            self.next.set(self.next.get() + 1);
            let args = [
                "new-window",
                "-d",
                "-P",
                "-F",
                "#{pane_id}",
                "-t",
                &target,
                "sh",
                "-c",
                script,
            ];
            let out = std::process::Command::new("tmux")
                .args(["-L", self.socket()])
                .args(args)
                .output()
                .unwrap();
            let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if out.status.success() && id.starts_with('%') {
                return id;
            }
            said = format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr));
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("tmux new-window failed: {said}");
    }

    /// A window drawing a captured harness screen, then running `program`
    /// (a name tmux shows as the foreground command).
    pub(super) fn screen(&self, name: &str, program: &Path) -> String {
        let file = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("tests/fixtures/screens/{name}.ansi.txt"));
        assert!(file.is_file(), "{}", file.display());
        self.window(&format!(
            "printf '\\033[H\\033[2J'; head -c -1 '{}'; exec '{}' 100000",
            file.display(),
            program.display()
        ))
    }

    pub(super) fn command_of(&self, pane: &str) -> String {
        self.run(&[
            "display-message",
            "-p",
            "-t",
            pane,
            "#{pane_current_command}",
        ])
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

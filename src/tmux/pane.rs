//! Panes (docs/spec/ring.md#delivery, docs/spec/crew-state.md#resolution, docs/spec/control.md):
//! everything firstmate asks tmux, behind a
//! [`Pane`] trait so decisions can be tested against [`FakePane`].
//!
//! Guarantees of [`Tmux`]: tmux always runs with an argument vector (never a
//! shell), on the configured `-L` socket, and targets panes only by their id
//! (`%N`) — never by window name, because tmux falls back to another window
//! when a name is gone. Every call is bounded in time and runs as a UTF-8
//! client ([`crate::proc::Cmd::tmux`]), whatever the caller's locale.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::proc::{Cause, Cmd, Failure};

/// Longest a single tmux call may take.
pub const TMUX_TIMEOUT: Duration = crate::proc::TMUX_TIMEOUT;

/// What tmux says about one pane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PaneInfo {
    /// `%N`
    pub id: String,
    pub dead: bool,
    /// The pane is in a tmux mode (copy mode, choose-tree, …:
    /// `pane_in_mode`): keys sent now would drive the mode, not the program.
    pub in_mode: bool,
    /// Foreground command (`pane_current_command`).
    pub command: String,
    pub session: String,
    pub window: String,
    /// The pane's mark ([`super::owner::MARK_OPTION`]); empty when unmarked.
    #[serde(skip)]
    pub mark: String,
    /// The identity of the server that listed it ([`super::owner::SERVER_FORMAT`]).
    #[serde(skip)]
    pub server: String,
}

/// The operations delivery, the watcher and crew-state need.
pub trait Pane {
    /// Every pane on the server, in one call. No server → empty.
    fn list(&self) -> Result<Vec<PaneInfo>>;
    /// One pane by id; `None` when it does not exist.
    fn info(&self, pane: &str) -> Result<Option<PaneInfo>> {
        Ok(self.list()?.into_iter().find(|p| p.id == pane))
    }
    /// The visible screen plus `history` lines of scrollback, as text.
    fn capture(&self, pane: &str, history: usize) -> Result<String>;
    /// The text of the line the cursor is on (not joined with wrapped
    /// neighbours); `None` when the pane cannot say.
    fn cursor_line(&self, pane: &str) -> Result<Option<String>> {
        let _ = pane;
        Ok(None)
    }
    /// Types `text` literally (`send-keys -l`).
    fn type_text(&self, pane: &str, text: &str) -> Result<()>;
    /// Presses one named key (`Enter`, `Escape`, `C-c`, …).
    fn press(&self, pane: &str, key: &str) -> Result<()>;
}

/// The real tmux, on the default server or a `-L` socket.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tmux {
    pub socket: Option<String>,
}

impl Tmux {
    /// `socket` empty means the default server.
    pub fn new(socket: &str) -> Tmux {
        Tmux {
            socket: (!socket.is_empty()).then(|| socket.to_string()),
        }
    }

    /// Runs `tmux [-L socket] args…` and returns stdout. Every argument
    /// arrives as written: tmux reads a trailing `;` as a command separator
    /// (and would silently drop it from a path, an environment value or
    /// typed text), so such an argument is passed with that `;` escaped.
    pub fn run<S: AsRef<str>>(&self, args: &[S]) -> Result<String> {
        let escaped: Vec<std::borrow::Cow<str>> =
            args.iter().map(|a| literal_arg(a.as_ref())).collect();
        self.run_raw(&escaped)
    }

    /// [`Tmux::run`] without escaping: a `";"` argument separates commands.
    fn run_raw<S: AsRef<str>>(&self, args: &[S]) -> Result<String> {
        let cmd =
            Cmd::tmux(self.socket.as_deref()).args(args.iter().map(std::convert::AsRef::as_ref));
        match cmd.run_ok() {
            Ok(stdout) => Ok(stdout),
            // tmux's own complaint, named by its command: `can't find
            // pane: %9 (display-message)`, as [`no_server`] and callers read it.
            Err(Failure {
                cause: Cause::Exit { stderr, .. },
                ..
            }) => Err(Error::External {
                program: "tmux".into(),
                msg: format!(
                    "{} ({})",
                    stderr.trim(),
                    args.first().map_or("", std::convert::AsRef::as_ref)
                ),
            }),
            Err(f) => Err(f.into()),
        }
    }
}

/// `arg` as tmux must receive it on its command line to read it back
/// unchanged: a trailing `;` becomes `\;` (tmux turns that back into `;`
/// instead of ending the command there). Nothing else is special.
pub fn literal_arg(arg: &str) -> std::borrow::Cow<'_, str> {
    match arg.strip_suffix(';') {
        Some(head) => format!("{head}\\;").into(),
        None => arg.into(),
    }
}

/// tmux's way of saying "there is no server": not an error for a reader.
pub(crate) fn no_server(e: &Error) -> bool {
    match e {
        Error::External { msg, .. } => {
            msg.contains("no server running")
                || msg.contains("error connecting to")
                || msg.contains("No such file or directory")
        }
        _ => false,
    }
}

/// The fields of a pane, one line each; the window name last (it may hold
/// tabs). The mark and the server identity come in the same call as the
/// pane itself, so a pane is never used without its proof.
///
/// The two fields a pane's program can choose (its command name, through
/// its argv\[0\], and its mark, through `set-option`) come with every byte
/// outside printable ASCII replaced by `_`: a tab or a newline in them
/// would forge a field or a whole line for another pane. tmux escapes the
/// window name itself.
pub(crate) const LIST_FORMAT: &str = "#{pane_id}\t#{pane_dead}\t#{pane_in_mode}\t#{s/[^ -~]/_/:pane_current_command}\t#{session_name}\t#{s/[^ -~]/_/:@fm_task}\t#{pid}-#{start_time}\t#{window_name}";

/// Parses `list-panes -a -F LIST_FORMAT` output.
pub fn parse_list(out: &str) -> Vec<PaneInfo> {
    out.lines()
        .filter_map(|l| {
            let mut f = l.splitn(8, '\t');
            let id = f.next()?.to_string();
            if !id.starts_with('%') {
                return None;
            }
            Some(PaneInfo {
                id,
                dead: f.next()? == "1",
                in_mode: f.next()? == "1",
                command: f.next()?.to_string(),
                session: f.next()?.to_string(),
                mark: f.next()?.to_string(),
                server: f.next()?.to_string(),
                window: f.next().unwrap_or("").to_string(),
            })
        })
        .collect()
}

impl Pane for Tmux {
    fn list(&self) -> Result<Vec<PaneInfo>> {
        match self.run(&["list-panes", "-a", "-F", LIST_FORMAT]) {
            Ok(out) => Ok(parse_list(&out)),
            Err(e) if no_server(&e) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    fn info(&self, pane: &str) -> Result<Option<PaneInfo>> {
        match self.run(&["display-message", "-p", "-t", pane, LIST_FORMAT]) {
            Ok(out) => Ok(parse_list(&out).into_iter().find(|p| p.id == pane)),
            Err(e) if no_server(&e) => Ok(None),
            Err(Error::External { msg, .. }) if msg.contains("can't find") => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn capture(&self, pane: &str, history: usize) -> Result<String> {
        let start = format!("-{history}");
        // -e: dim text (a composer's placeholder) is told from typed text.
        self.run(&["capture-pane", "-p", "-e", "-J", "-t", pane, "-S", &start])
    }

    fn cursor_line(&self, pane: &str) -> Result<Option<String>> {
        // One tmux invocation: `;` as its own argument separates commands.
        let out = self.run_raw(&[
            "display-message",
            "-p",
            "-t",
            pane,
            "#{cursor_y}",
            ";",
            "capture-pane",
            "-p",
            "-t",
            pane,
        ])?;
        let mut lines = out.split('\n');
        let Some(y) = lines.next().and_then(|y| y.trim().parse::<usize>().ok()) else {
            return Ok(None);
        };
        Ok(Some(lines.nth(y).unwrap_or("").to_string()))
    }

    fn type_text(&self, pane: &str, text: &str) -> Result<()> {
        self.run(&["send-keys", "-t", pane, "-l", "--", text])
            .map(drop)
    }

    fn press(&self, pane: &str, key: &str) -> Result<()> {
        self.run(&["send-keys", "-t", pane, key]).map(drop)
    }
}

/// One pane of the [`FakePane`].
#[derive(Debug, Clone, Default)]
pub struct FakeScreen {
    pub dead: bool,
    /// In a tmux mode (copy mode).
    pub in_mode: bool,
    pub command: String,
    /// Submitted lines, oldest first.
    pub history: Vec<String>,
    /// What sits in the composer, unsent.
    pub composer: String,
    /// Enters to swallow before one submits.
    pub swallow_enters: usize,
    /// Draws no composer line (an agent still starting up).
    pub no_composer: bool,
    /// Drops whatever is typed (an agent that does not read its input yet).
    pub deaf: bool,
    /// Every call made, for assertions: `type:<text>` or `key:<name>`.
    pub calls: Vec<String>,
    /// The pane's mark ([`super::owner::MARK_OPTION`]).
    pub mark: String,
}

/// An in-memory stand-in for tmux, for unit tests of delivery and state
/// decisions. The composer line is shown as `> <text>` on the last line.
#[derive(Debug, Default)]
pub struct FakePane {
    pub panes: RefCell<BTreeMap<String, FakeScreen>>,
    /// When set, every call fails like a broken tmux.
    pub broken: bool,
}

impl FakePane {
    pub fn with(id: &str, command: &str) -> FakePane {
        let f = FakePane::default();
        f.add(id, command);
        f
    }

    pub fn add(&self, id: &str, command: &str) {
        self.panes.borrow_mut().insert(
            id.into(),
            FakeScreen {
                command: command.into(),
                ..Default::default()
            },
        );
    }

    pub fn screen(&self, id: &str) -> FakeScreen {
        self.panes.borrow().get(id).cloned().unwrap_or_default()
    }

    pub fn edit(&self, id: &str, f: impl FnOnce(&mut FakeScreen)) {
        if let Some(s) = self.panes.borrow_mut().get_mut(id) {
            f(s);
        }
    }

    fn check(&self, pane: &str) -> Result<()> {
        if self.broken {
            return Err(Error::External {
                program: "tmux".into(),
                msg: "broken".into(),
            });
        }
        if !self.panes.borrow().contains_key(pane) {
            return Err(Error::External {
                program: "tmux".into(),
                msg: format!("can't find pane: {pane}"),
            });
        }
        Ok(())
    }
}

impl Pane for FakePane {
    fn list(&self) -> Result<Vec<PaneInfo>> {
        if self.broken {
            return Err(Error::External {
                program: "tmux".into(),
                msg: "broken".into(),
            });
        }
        Ok(self
            .panes
            .borrow()
            .iter()
            .map(|(id, s)| PaneInfo {
                id: id.clone(),
                dead: s.dead,
                in_mode: s.in_mode,
                command: s.command.clone(),
                session: "fm".into(),
                window: format!("fm-{id}"),
                mark: s.mark.clone(),
                server: "fake".into(),
            })
            .collect())
    }

    fn capture(&self, pane: &str, _history: usize) -> Result<String> {
        self.check(pane)?;
        let s = self.screen(pane);
        let mut out = s.history.join("\n");
        if !out.is_empty() {
            out.push('\n');
        }
        if !s.no_composer {
            out.push_str("> ");
            out.push_str(&s.composer);
            out.push('\n');
        }
        Ok(out)
    }

    fn cursor_line(&self, pane: &str) -> Result<Option<String>> {
        self.check(pane)?;
        Ok(Some(format!("> {}", self.screen(pane).composer)))
    }

    fn type_text(&self, pane: &str, text: &str) -> Result<()> {
        self.check(pane)?;
        self.edit(pane, |s| {
            s.calls.push(format!("type:{text}"));
            if !s.deaf {
                s.composer.push_str(text);
            }
        });
        Ok(())
    }

    fn press(&self, pane: &str, key: &str) -> Result<()> {
        self.check(pane)?;
        self.edit(pane, |s| {
            s.calls.push(format!("key:{key}"));
            if key == "Enter" {
                if s.swallow_enters > 0 {
                    s.swallow_enters -= 1;
                } else {
                    let line = std::mem::take(&mut s.composer);
                    s.history.push(line);
                }
            }
        });
        Ok(())
    }
}

#[cfg(test)]
#[path = "pane_tests.rs"]
mod tests;

//! Where a worker lives and the two moves to it (`fm peek`, `fm attach`,
//! and `fm top`'s `p` and Enter): read its pane's screen, or go there.
//!
//! A worker is one pane, named by the id meta records (`pane=%N`), on the
//! tmux server of meta's `tmux_socket` (else the config's `tmux.socket`;
//! empty is the default server), in a window `fm-<id>` of the configured
//! session. Going there switches the captain's own client when the captain
//! is inside tmux on that same server (`switch-client`, so the captain's
//! terminal stays one client), and otherwise attaches a new client on the
//! worker's socket (`attach-session`) from a plain shell. A captain inside
//! tmux on *another* server never gets a client nested in the pane they
//! ran the command from (the tmux prefix would then reach their own
//! client, and `prefix d` detach it): the worker opens in a popup of the
//! captain's own server (`display-popup -E` running `tmux attach` on the
//! worker's server, `$TMUX` removed for that child), where every key,
//! the prefix included, goes to the worker's client, so `prefix d`
//! closes the popup and nothing else. Where a popup cannot open (tmux
//! before 3.2, or no client shows the captain's session) the same attach
//! opens in a new window of the captain's session instead. All of them
//! target the pane id, so tmux also selects its window and the pane.
//!
//! A screen read is `capture-pane -p` (plain text: tmux leaves the
//! escape sequences out); [`clean_line`] strips whatever control bytes a
//! program left in the text anyway, so nothing read here can drive the
//! captain's terminal.

use std::process::Command;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::meta::TaskMeta;
use crate::task_id::TaskId;
use crate::tmux::owner::Claim;
use crate::tmux::pane::{Pane, PaneInfo, Tmux};

/// A worker's pane and server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub id: TaskId,
    /// `%N`.
    pub pane: String,
    /// The `-L` socket name; "" is the default server.
    pub socket: String,
}

impl Location {
    /// The task's pane as meta records it, once tmux shows it is the
    /// task's ([`crate::tmux::owner`]). An unknown task, one with no pane
    /// recorded, or one whose pane is gone or does not prove it is the
    /// task's (a restarted server's pane of the same id) is refused (exit 1).
    pub fn load(home: &Home, cfg: &Config, id: &TaskId) -> Result<Location> {
        let Some(meta) = TaskMeta::load(home, id)? else {
            return Err(Error::UnknownTask {
                id: id.to_string(),
                lacks: "no meta",
            });
        };
        let loc =
            Location::of(cfg, id, &meta).ok_or_else(|| Error::NoPane { id: id.to_string() })?;
        if let Some(claim) = Claim::of(id, &meta)
            && let Err(lost) = claim.check(loc.tmux().info(&loc.pane)?.as_ref(), None)
        {
            return Err(Error::PaneGone {
                id: id.to_string(),
                why: Some(lost.reason().unwrap_or_else(|| {
                    format!("tmux{} has no such pane", socket_words(&loc.socket))
                })),
                pane: loc.pane,
                then: "",
            });
        }
        Ok(loc)
    }

    /// The location meta records, if it records a pane.
    pub fn of(cfg: &Config, id: &TaskId, meta: &TaskMeta) -> Option<Location> {
        Some(Location {
            id: id.clone(),
            pane: meta.pane.clone()?,
            socket: meta.socket(cfg).to_string(),
        })
    }

    pub fn tmux(&self) -> Tmux {
        Tmux::new(&self.socket)
    }

    /// The pane as tmux sees it; refused (exit 1) when it is gone.
    pub fn info(&self) -> Result<PaneInfo> {
        self.tmux()
            .info(&self.pane)?
            .ok_or_else(|| Error::PaneGone {
                id: self.id.to_string(),
                pane: self.pane.clone(),
                why: Some(format!(
                    "tmux{} has no such pane",
                    socket_words(&self.socket)
                )),
                then: "",
            })
    }

    /// `tmux [-L socket]`, as a person would type it.
    pub fn tmux_words(&self) -> String {
        if self.socket.is_empty() {
            "tmux".into()
        } else {
            format!("tmux -L {}", self.socket)
        }
    }
}

fn socket_words(socket: &str) -> String {
    if socket.is_empty() {
        String::new()
    } else {
        format!(" -L {socket}")
    }
}

/// A line of a captured screen made safe to print: escape sequences
/// removed, other control characters (tab included) turned into spaces.
pub fn clean_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                // CSI: parameters and intermediates up to a final byte.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC, DCS, APC, PM, SOS: up to BEL or ST (ESC \).
                Some(']' | 'P' | '_' | '^' | 'X') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' {
                            break;
                        }
                        if c == '\x1b' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                // A two-byte sequence (ESC c, ESC 7, …).
                _ => {}
            },
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The lines of a capture, cleaned, with trailing blank lines dropped, and
/// at most the last `lines` of them when given.
pub fn screen_lines(captured: &str, lines: Option<usize>) -> Vec<String> {
    let mut v: Vec<String> = captured
        .lines()
        .map(|l| clean_line(l).trim_end().to_string())
        .collect();
    while v.last().is_some_and(std::string::String::is_empty) {
        v.pop();
    }
    if let Some(n) = lines {
        let cut = v.len().saturating_sub(n);
        v.drain(..cut);
    }
    v
}

/// The pane's screen: the visible lines, or with `lines` the last `lines`
/// (reaching into the scrollback when the screen holds fewer).
pub fn peek(pane: &dyn Pane, id: &str, lines: Option<usize>) -> Result<Vec<String>> {
    let captured = pane.capture(id, lines.unwrap_or(0))?;
    Ok(screen_lines(&captured, lines))
}

/// How to go to a worker from where the captain is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Jump {
    /// The captain's client is on the worker's server: switch it.
    Switch,
    /// The captain is inside tmux on another server: a client of the
    /// worker's server (at this `#{socket_path}`) in a popup, or else a
    /// new window, of the captain's own server; never nested in place.
    Popup { server: String },
    /// Not inside tmux: attach a client on the worker's socket.
    Attach,
}

/// The socket path of `$TMUX` (`<path>,<pid>,<session>`), if set.
pub fn client_socket(tmux_env: Option<&str>) -> Option<&str> {
    let v = tmux_env?.trim();
    let path = v.rsplitn(3, ',').last()?;
    (!path.is_empty()).then_some(path)
}

/// Switch when the captain's `$TMUX` names the worker's server, a popup
/// when it names another one, else attach. `server_path` is the worker
/// server's `#{socket_path}`.
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: tmux's socket paths"
)]
pub fn plan(tmux_env: Option<&str>, server_path: Option<&str>) -> Jump {
    let same = |a: &str, b: &str| {
        let canon = |p: &str| std::fs::canonicalize(p).unwrap_or_else(|_| p.into());
        a == b || canon(a) == canon(b)
    };
    match (client_socket(tmux_env), server_path.map(str::trim)) {
        (Some(a), Some(b)) if same(a, b) => Jump::Switch,
        (Some(_), Some(b)) if !b.is_empty() => Jump::Popup { server: b.into() },
        _ => Jump::Attach,
    }
}

/// Decides how to go to `loc` from this process's `$TMUX`.
pub fn plan_for(loc: &Location) -> Result<Jump> {
    let env = std::env::var("TMUX").ok();
    if client_socket(env.as_deref()).is_none() {
        return Ok(Jump::Attach);
    }
    let path = loc
        .tmux()
        .run(&["display-message", "-p", "-t", &loc.pane, "#{socket_path}"])?;
    Ok(plan(env.as_deref(), Some(path.trim())))
}

/// Moves the captain's current client (the one `$TMUX` names) to the pane.
pub fn switch(loc: &Location) -> Result<()> {
    loc.tmux()
        .run(&["switch-client", "-t", &loc.pane])
        .map(drop)
}

/// What came of [`open_beside`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opened {
    /// The popup was shown and is closed again (the captain detached).
    Popup,
    /// A new window of the captain's session shows the worker.
    Window,
}

/// The command a popup or window of the captain's server runs: `env -u
/// TMUX tmux -S <server> attach-session -t %N`, each word single-quoted
/// (tmux hands it to the captain's shell, whichever it is).
pub fn nested_attach_line(loc: &Location, server: &str) -> String {
    use crate::shq::quote;
    format!(
        "env -u TMUX tmux -S {} attach-session -t {}",
        quote(server),
        quote(&loc.pane)
    )
}

/// `tmux display-popup -E -w 100% -h 100% <attach>` on the captain's own
/// server (the one `$TMUX` names): it returns when the popup closes.
pub fn popup_command(loc: &Location, server: &str) -> Command {
    let mut cmd = Command::new("tmux");
    cmd.args(["display-popup", "-E", "-w", "100%", "-h", "100%"])
        .arg(nested_attach_line(loc, server));
    cmd
}

/// `tmux new-window -n fm-<id> <attach>` on the captain's own server.
pub fn window_command(loc: &Location, server: &str) -> Command {
    let mut cmd = Command::new("tmux");
    cmd.args(["new-window", "-n", &format!("fm-{}", loc.id)])
        .arg(nested_attach_line(loc, server));
    cmd
}

/// Shows the worker beside the captain's pane, never inside it: a popup,
/// or where tmux cannot open one, a new window. Waits while the popup is
/// open. Both failing is an error naming both reasons.
pub fn open_beside(loc: &Location, server: &str) -> Result<Opened> {
    let run = |mut cmd: Command| -> std::result::Result<(), String> {
        let out = cmd
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("cannot run tmux: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    };
    let popup = match run(popup_command(loc, server)) {
        Ok(()) => return Ok(Opened::Popup),
        Err(e) => e,
    };
    match run(window_command(loc, server)) {
        Ok(()) => Ok(Opened::Window),
        Err(e) => Err(Error::External {
            program: "tmux".into(),
            msg: format!("cannot open a popup ({popup}) nor a window ({e})"),
        }),
    }
}

/// `tmux [-L socket] attach-session -t %N`, with `$TMUX` removed, to run
/// on the captain's terminal (stdio inherited) when it is not in tmux.
pub fn attach_command(loc: &Location) -> Command {
    let mut cmd = Command::new("tmux");
    if !loc.socket.is_empty() {
        cmd.args(["-L", &loc.socket]);
    }
    cmd.args(["attach-session", "-t", &loc.pane]);
    cmd.env_remove("TMUX");
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tmux::pane::FakePane;

    #[test]
    fn escape_sequences_and_controls_are_stripped() {
        assert_eq!(clean_line("\x1b[1;31mred\x1b[0m text"), "red text");
        assert_eq!(clean_line("a\x1b]0;title\x07b"), "ab");
        assert_eq!(
            clean_line("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"),
            "alink"
        );
        assert_eq!(clean_line("tab\there\rx\x08"), "tab here x ");
        assert_eq!(clean_line("\x1bcreset"), "reset");
        assert_eq!(clean_line("plain — ünïcode"), "plain — ünïcode");
    }

    #[test]
    fn screen_lines_trim_the_blank_tail_and_keep_the_last_n() {
        let cap = "one\ntwo  \nthree\n\n\n";
        assert_eq!(screen_lines(cap, None), ["one", "two", "three"]);
        assert_eq!(screen_lines(cap, Some(2)), ["two", "three"]);
        assert_eq!(screen_lines(cap, Some(10)).len(), 3);
        assert!(screen_lines("\n\n", None).is_empty());
        let f = FakePane::with("%1", "claude");
        f.edit("%1", |s| {
            s.history = vec!["hello".into(), "\x1b[32mok\x1b[0m".into()];
        });
        assert_eq!(peek(&f, "%1", None).unwrap(), ["hello", "ok", ">"]);
        assert!(peek(&f, "%9", None).is_err());
    }

    #[test]
    fn switch_only_on_the_same_server() {
        let env = Some("/tmp/tmux-0/fm,123,4");
        assert_eq!(client_socket(env), Some("/tmp/tmux-0/fm"));
        assert_eq!(client_socket(Some("/a,b/c,1,2")), Some("/a,b/c"));
        assert_eq!(client_socket(Some("")), None);
        assert_eq!(client_socket(None), None);
        assert_eq!(plan(env, Some("/tmp/tmux-0/fm\n")), Jump::Switch);
        assert_eq!(
            plan(env, Some("/tmp/tmux-0/other\n")),
            Jump::Popup {
                server: "/tmp/tmux-0/other".into()
            }
        );
        assert_eq!(plan(None, Some("/tmp/tmux-0/fm")), Jump::Attach);
        assert_eq!(plan(env, None), Jump::Attach);
    }

    #[test]
    fn attach_targets_the_pane_on_its_socket_without_tmux_env() {
        let loc = Location {
            id: TaskId::parse("t1").unwrap(),
            pane: "%7".into(),
            socket: "fleet".into(),
        };
        let c = attach_command(&loc);
        let args: Vec<_> = c.get_args().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(args, ["-L", "fleet", "attach-session", "-t", "%7"]);
        assert!(c.get_envs().any(|(k, v)| k == "TMUX" && v.is_none()));
        assert_eq!(loc.tmux_words(), "tmux -L fleet");
    }

    #[test]
    fn a_popup_or_window_attaches_on_the_workers_server_without_tmux_env() {
        let loc = Location {
            id: TaskId::parse("t1").unwrap(),
            pane: "%7".into(),
            socket: "fleet".into(),
        };
        let line = nested_attach_line(&loc, "/tmp/it's here/fleet");
        assert_eq!(
            line,
            "env -u TMUX tmux -S '/tmp/it'\\''s here/fleet' attach-session -t '%7'"
        );
        let args = |c: &Command| -> Vec<String> {
            c.get_args()
                .map(|a| a.to_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(
            args(&popup_command(&loc, "/s")),
            [
                "display-popup",
                "-E",
                "-w",
                "100%",
                "-h",
                "100%",
                "env -u TMUX tmux -S '/s' attach-session -t '%7'"
            ]
        );
        assert_eq!(
            args(&window_command(&loc, "/s")),
            [
                "new-window",
                "-n",
                "fm-t1",
                "env -u TMUX tmux -S '/s' attach-session -t '%7'"
            ]
        );
    }
}

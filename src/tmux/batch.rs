//! Many panes in one tmux call (docs/spec/crew-state.md#resolution): the server's pane list and the
//! screens of any number of panes, as one command list read by `tmux
//! source-file -` from stdin, so a view costs one tmux process per server
//! however many panes it reads (argv could not carry them: tmux refuses a
//! command line over 16 KiB, ~200 captures).
//!
//! Each capture is preceded by a marker line printed by `display-message`:
//! a per-call random nonce and the capture's index. A pane's program cannot
//! know the nonce, so it cannot forge a marker; the markers must all appear,
//! in order, or the call fails rather than guess. A capture that fails (a
//! pane that vanished since the list) prints nothing — a captured screen is
//! never empty — and tmux goes on with the next command. Only pane ids of
//! the form `%N` are put in the command list (nothing else can be quoted
//! into it unread); [`snapshot`] captures any other target with its own
//! argument-vector call, as before.
//!
//! Every pane comes with a [`ScreenKey`]: what its screen's content
//! depends on (server, pane process, size, history, and the second of the
//! window's last output). A reader that keeps a capture may reuse it while
//! the key is unchanged and the capture was taken in a later second than
//! that output (see [`Capture::still`]).

use std::collections::HashMap;

use super::pane::{LIST_FORMAT, PaneInfo, TMUX_TIMEOUT, Tmux, parse_list};
use crate::error::{Error, Result};
use crate::proc::Cmd;

/// The key fields, before [`LIST_FORMAT`] (whose last field, the window
/// name, may hold tabs).
const KEY_FORMAT: &str =
    "#{pid}:#{pane_pid}:#{pane_width}x#{pane_height}:#{history_size}:#{window_activity}";

/// What a pane's captured screen depends on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ScreenKey {
    /// Server pid, pane pid, size and history length.
    pub(crate) shape: String,
    /// The second of the window's last output.
    pub(crate) activity: u64,
}

/// One pane of the list, with its screen key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub info: PaneInfo,
    pub key: ScreenKey,
}

/// A captured screen, with what it was captured under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    pub text: String,
    pub(crate) key: ScreenKey,
    /// The second the capture was asked for (wall clock).
    pub(crate) at: u64,
}

impl Capture {
    /// Whether this capture still shows the pane listed with `key`: same
    /// pane process, size and history, and no output since the second
    /// before the capture.
    pub fn still(&self, key: &ScreenKey) -> bool {
        self.key == *key && key.activity < self.at
    }
}

/// What one call said.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Every pane on the server (empty when no server runs); `None` when
    /// the list was not asked for.
    pub panes: Option<Vec<Listed>>,
    /// The screens captured, by pane id; a pane that could not be captured
    /// is absent.
    pub screens: HashMap<String, Capture>,
}

/// tmux's way of saying "there is no server": not an error for a reader.
fn no_server(stderr: &str) -> bool {
    stderr.contains("no server running")
        || stderr.contains("error connecting to")
        || stderr.contains("No such file or directory")
}

fn nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    let a = h.finish();
    let b = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    format!("fm-cut-{a:016x}{b:016x}-")
}

fn parse_keyed(out: &str) -> Vec<Listed> {
    out.lines()
        .filter_map(|l| {
            let (key, rest) = l.split_once('\t')?;
            let (shape, activity) = key.rsplit_once(':')?;
            let info = parse_list(rest).into_iter().next()?;
            Some(Listed {
                info,
                key: ScreenKey {
                    shape: shape.to_string(),
                    activity: activity.parse().unwrap_or(u64::MAX),
                },
            })
        })
        .collect()
}

/// Whether `pane` is a pane id (`%N`), the only target put in a command list.
fn is_pane_id(pane: &str) -> bool {
    pane.len() > 1 && pane.starts_with('%') && pane[1..].bytes().all(|b| b.is_ascii_digit())
}

/// Lists the server's panes (when `list`) and captures `captures` (their
/// visible screens, `capture-pane -p -J`) in one tmux call. `now` is the
/// current second, recorded with each capture.
///
/// The captures are plain text, without `-e`'s escapes: the fleet view
/// reads only the screen's characters (its busy and dialog rules), and
/// tmux draws a screen without escapes in about half the time. The text is
/// the same as an escaped capture's once its escapes are parsed away
/// ([`super::screen::Screen::parse_text`]), which is how a screen captured
/// on its own is read.
pub fn snapshot(tmux: &Tmux, list: bool, captures: &[&str], now: u64) -> Result<Snapshot> {
    let mut snap = Snapshot::default();
    let (batched, odd): (Vec<&str>, Vec<&str>) = captures.iter().partition(|p| is_pane_id(p));
    if list || !batched.is_empty() {
        let cut = nonce();
        let mut script = String::new();
        if list {
            script.push_str(&format!("list-panes -a -F '{KEY_FORMAT}\t{LIST_FORMAT}'\n"));
        }
        for (k, pane) in batched.iter().enumerate() {
            script.push_str(&format!(
                "display-message -p '{cut}{k}'\ncapture-pane -p -J -t '{pane}' -S -0\n"
            ));
        }
        let out = Cmd::tmux(tmux.socket.as_deref())
            .args(["source-file", "-"])
            .timeout(TMUX_TIMEOUT)
            .stdin(script.into())
            .run()?;
        let (code, stdout, stderr) = (out.code(), out.stdout, out.stderr);
        let stderr = stderr.trim();
        let (head, parts) = split_markers(&stdout, &cut);
        if parts.is_empty() && code != Some(0) && (head.is_empty() || !list) {
            if no_server(stderr) {
                snap.panes = list.then(Vec::new);
                return Ok(snap);
            }
            return Err(Error::External {
                program: "tmux".into(),
                msg: format!("{stderr} (list-panes)"),
            });
        }
        if parts.len() != batched.len() {
            return Err(Error::External {
                program: "tmux".into(),
                msg: format!(
                    "{} of {} captures came back ({stderr})",
                    parts.len(),
                    batched.len()
                ),
            });
        }
        if list {
            snap.panes = Some(parse_keyed(head));
        }
        for (pane, text) in batched.iter().zip(parts) {
            if text.is_empty() {
                continue;
            }
            let key = snap.key_of(pane);
            snap.screens.insert(
                pane.to_string(),
                Capture {
                    text: text.to_string(),
                    key,
                    at: now,
                },
            );
        }
    }
    for pane in odd {
        if let Ok(text) = super::pane::Pane::capture(tmux, pane, 0) {
            let key = snap.key_of(pane);
            snap.screens
                .insert(pane.to_string(), Capture { text, key, at: now });
        }
    }
    Ok(snap)
}

impl Snapshot {
    /// The screen key of a listed pane; one that never matches otherwise.
    fn key_of(&self, pane: &str) -> ScreenKey {
        self.panes
            .as_ref()
            .and_then(|ps| ps.iter().find(|p| p.info.id == pane))
            .map_or_else(
                || ScreenKey {
                    shape: String::new(),
                    activity: u64::MAX,
                },
                |p| p.key.clone(),
            )
    }
}

/// Splits `out` at the marker lines `<cut>0`, `<cut>1`, … (in order): what
/// came before the first, and what followed each.
fn split_markers<'a>(out: &'a str, cut: &str) -> (&'a str, Vec<&'a str>) {
    let mut parts = Vec::new();
    let mut head = out;
    let mut rest: Option<&str> = None;
    let mut k = 0;
    loop {
        let marker = format!("{cut}{k}\n");
        let hay = rest.unwrap_or(out);
        let pos = if hay.starts_with(&marker) {
            Some(0)
        } else {
            hay.find(&format!("\n{marker}")).map(|p| p + 1)
        };
        let Some(pos) = pos else { break };
        match rest {
            None => head = &hay[..pos],
            Some(_) => parts.push(&hay[..pos]),
        }
        rest = Some(&hay[pos + marker.len()..]);
        k += 1;
    }
    if let Some(r) = rest {
        parts.push(r);
    }
    (head, parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_split_the_output_in_order() {
        let out = "%1 a\n%2 b\ncut0\nscreen one\n\ncut1\ncut2\nscreen three\ncut1\n";
        let (head, parts) = split_markers(out, "cut");
        assert_eq!(head, "%1 a\n%2 b\n");
        // The second capture failed (nothing between its marker and the
        // next); a later line that looks like a marker is screen text.
        assert_eq!(parts, ["screen one\n\n", "", "screen three\ncut1\n"]);
        // Nothing before the first marker, and no marker at all.
        assert_eq!(split_markers("cut0\nx\n", "cut"), ("", vec!["x\n"]));
        assert_eq!(split_markers("%1\n", "cut"), ("%1\n", vec![]));
        assert!(is_pane_id("%12") && !is_pane_id("%") && !is_pane_id("%1 x") && !is_pane_id("w"));
    }

    #[test]
    fn keyed_list_lines_keep_tabs_in_window_names() {
        let out = "123:456:120x40:0:1700000000\t%1\t0\t0\tclaude\tfm\tt/1\t123-5\tw\tx\nbad line\n";
        let v = parse_keyed(out);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].info.id, "%1");
        assert_eq!(v[0].info.window, "w\tx");
        assert_eq!(v[0].key.shape, "123:456:120x40:0");
        assert_eq!(v[0].key.activity, 1_700_000_000);
    }

    #[test]
    fn a_capture_is_still_good_only_without_later_output() {
        let key = |activity| ScreenKey {
            shape: "1:2:80x24:0".into(),
            activity,
        };
        let c = Capture {
            text: "x".into(),
            key: key(10),
            at: 11,
        };
        assert!(c.still(&key(10)));
        assert!(!c.still(&key(11)), "output since");
        let same_second = Capture {
            at: 10,
            ..c.clone()
        };
        assert!(
            !same_second.still(&key(10)),
            "output in the capture's second"
        );
        assert!(!c.still(&ScreenKey {
            shape: "1:3:80x24:0".into(),
            activity: 10
        }));
    }
}

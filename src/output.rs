//! The one way text reaches the captain's terminal (docs/spec/cli.md#output): every
//! human-readable line a tool prints, on stdout or stderr, goes through
//! here, and here every control character is made visible.
//!
//! Workers write status lines, board text, message bodies and file names;
//! any of them may hold escape sequences (an OSC 52 clipboard write, a
//! clear-screen, a title change, a cursor move that overwrites an earlier
//! line). Printed raw they would drive the captain's terminal. [`sanitize`]
//! turns each C0 control but tab, DEL, each C1 control and each
//! bidirectional-override character into a visible escape (`\x1b`,
//! `\u{9b}`, `\u{202e}`), so the text reads as what it is and nothing in it
//! acts.
//!
//! - [`out`], [`out_lines`] and [`warn`]/[`error`] sanitise whole lines.
//! - [`Text`] is a line built from data (sanitised as it is pushed) and the
//!   tool's own colour ([`Text::paint`], which takes only a fixed [`Sgr`]):
//!   a worker's text can never carry an escape into it.
//! - [`out_json`] keeps the exact text: JSON escapes C0 controls itself,
//!   and DEL, C1 and bidi controls are written `\u007f` etc., so the
//!   document still decodes to the same strings and nothing raw reaches a
//!   terminal.
//! - [`out_body`] is the one byte-exact path: a message body printed for
//!   the worker that reads it (`fm-ack --read`, docs/spec/inbox.md#record), whose stdout
//!   is the agent's, not the captain's.
//! - [`out_generated`] prints text the tool generated from its own
//!   definitions (shell completions); [`terminal`] writes the live view's
//!   own cursor and screen controls.
//!
//! No other module writes to stdout or stderr: a test reads `src/` and
//! fails on a `println!`, `eprintln!` or `std::io::stdout()` outside this
//! file, so a new tool cannot skip the layer by accident.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_macros,
    reason = "the one layer that writes the terminal; it is what clippy.toml sends everyone else to"
)]

use std::borrow::Cow;
use std::io::Write;

use crate::error::{Error, Result};

/// Whether `c` must not reach a terminal raw.
fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

/// Whether every byte is printable ASCII (space to `~`), looked at eight
/// at a time.
#[inline]
pub(crate) fn printable_ascii(b: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let (words, rest) = b.as_chunks::<8>();
    words.iter().all(|w| {
        let x = u64::from_le_bytes(*w);
        // A byte below 0x20 (its high bit clear, and set after taking
        // 0x20), or above 0x7e (0x7f, DEL, gains it by adding one; the
        // rest have it).
        let below = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
        let above = (x.wrapping_add(ONES) | x) & HIGH;
        below | above == 0
    }) && rest.iter().all(|c| matches!(c, b' '..=b'~'))
}

/// `s` with every control character but tab (and every bidi control)
/// made visible: `\x1b` for C0 and DEL, `\u{9b}` for C1 and the rest.
/// Idempotent: what it returns is printable and unchanged by a second
/// pass.
pub fn sanitize(s: &str) -> Cow<'_, str> {
    // Most text is printable ASCII: nothing to look at by char.
    if printable_ascii(s.as_bytes()) || !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if !is_unsafe(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    Cow::Owned(out)
}

/// The colours a tool paints its own words with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sgr {
    Green,
    Dim,
    Yellow,
    BoldRed,
    Cyan,
    Blue,
    Red,
    Magenta,
}

impl Sgr {
    fn code(self) -> &'static str {
        match self {
            Sgr::Green => "32",
            Sgr::Dim => "2",
            Sgr::Yellow => "33",
            Sgr::BoldRed => "1;31",
            Sgr::Cyan => "36",
            Sgr::Blue => "34",
            Sgr::Red => "31",
            Sgr::Magenta => "35",
        }
    }
}

/// A line of human output: data pushed through [`sanitize`], plus colour
/// the tool itself adds. The only escape sequences a `Text` can hold are
/// the SGR codes of [`Sgr`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text(String);

impl Text {
    pub fn new() -> Text {
        Text::default()
    }

    /// Appends `s`, sanitised.
    pub fn push(&mut self, s: &str) -> &mut Text {
        if printable_ascii(s.as_bytes()) {
            self.0.push_str(s);
        } else {
            self.0.push_str(&sanitize(s));
        }
        self
    }

    /// Appends `s` (sanitised) in colour `sgr` when `on`.
    pub fn paint(&mut self, s: &str, sgr: Sgr, on: bool) -> &mut Text {
        if on {
            self.0.push_str("\x1b[");
            self.0.push_str(sgr.code());
            self.0.push('m');
            self.push(s);
            self.0.push_str("\x1b[0m");
        } else {
            self.push(s);
        }
        self
    }

    /// Appends `n` spaces.
    pub fn pad(&mut self, n: usize) -> &mut Text {
        const SPACES: &str = "                                ";
        let mut n = n;
        while n > 0 {
            let k = n.min(SPACES.len());
            self.0.push_str(&SPACES[..k]);
            n -= k;
        }
        self
    }

    /// Ends a line: a `Text` may hold several, printed as one block.
    pub fn line_break(&mut self) -> &mut Text {
        self.0.push('\n');
        self
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Forgets what is held, keeping the room.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Drops trailing spaces.
    pub fn trim_end(&mut self) -> &mut Text {
        let keep = self.0.trim_end_matches(' ').len();
        self.0.truncate(keep);
        self
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// Text that only ever went in through [`sanitize`] and holds no colour:
/// no control character and no escape sequence at all, so any piece of it
/// is safe to print as it is ([`Text::push_clean`]). The fleet table keeps
/// its cells in one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Clean(String);

impl Clean {
    /// Appends what `write` writes, sanitised as it lands.
    pub fn push_with(&mut self, write: impl FnOnce(&mut String)) {
        let from = self.0.len();
        write(&mut self.0);
        if !printable_ascii(&self.0.as_bytes()[from..])
            && let Cow::Owned(clean) = sanitize(&self.0[from..])
        {
            self.0.truncate(from);
            self.0.push_str(&clean);
        }
    }

    /// Empty, with room for `n` bytes.
    pub fn with_capacity(n: usize) -> Clean {
        Clean(String::with_capacity(n))
    }

    /// `s` as it is when it is printable ASCII only (nothing to sanitise);
    /// `Err(s)` back otherwise.
    pub fn of_printable(s: String) -> std::result::Result<Clean, String> {
        if printable_ascii(s.as_bytes()) {
            Ok(Clean(s))
        } else {
            Err(s)
        }
    }

    /// Appends clean text as it is (clean joined to clean stays clean).
    pub fn append(&mut self, other: &Clean) {
        self.0.push_str(&other.0);
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Text {
    /// Appends the piece `range` of clean text as it is (nothing when the
    /// range does not fall on its characters' boundaries).
    pub fn push_clean(&mut self, clean: &Clean, range: std::ops::Range<usize>) -> &mut Text {
        if let Some(piece) = clean.0.get(range) {
            self.0.push_str(piece);
        }
        self
    }
}

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        let mut t = Text::new();
        t.push(s);
        t
    }
}

fn stdout_err(e: std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Error::ClosedPipe
    } else {
        Error::io("write", "<stdout>", e)
    }
}

/// Writes `bytes` to stdout and flushes; a closed pipe is
/// [`Error::ClosedPipe`].
fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut so = std::io::stdout().lock();
    so.write_all(bytes)
        .and_then(|()| so.flush())
        .map_err(stdout_err)
}

/// Prints one line, sanitised (a `\n` inside it is shown as `\x0a`: one
/// call is one line).
pub fn out(line: &str) -> Result<()> {
    let mut s = sanitize(line).into_owned();
    s.push('\n');
    write_stdout(s.as_bytes())
}

/// Prints lines, each sanitised, in one write.
pub fn out_lines<I, S>(lines: I) -> Result<()>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut s = String::new();
    for l in lines {
        s.push_str(&sanitize(l.as_ref()));
        s.push('\n');
    }
    write_stdout(s.as_bytes())
}

/// Prints a block of lines (split on `\n`), each sanitised; the block's
/// own line breaks are kept.
pub fn out_block(block: &str) -> Result<()> {
    let body = block.strip_suffix('\n').unwrap_or(block);
    out_lines(body.split('\n'))
}

/// Prints built [`Text`] lines in one write.
pub fn out_text<'a>(lines: impl IntoIterator<Item = &'a Text>) -> Result<()> {
    let mut s = String::new();
    for l in lines {
        s.push_str(l.as_str());
        s.push('\n');
    }
    write_stdout(s.as_bytes())
}

/// Prints a block of built [`Text`] lines, each ended by its own line
/// break ([`Text::line_break`]), in one write.
pub fn out_block_text(block: &Text) -> Result<()> {
    write_stdout(block.as_str().as_bytes())
}

/// `json` (a serialised document) with DEL, C1 and bidi controls written
/// as `\uXXXX`. They can only sit inside strings there, so the document
/// decodes to the same values.
pub fn escape_json(json: &str) -> Cow<'_, str> {
    if !json.chars().any(is_unsafe) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if is_unsafe(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Serialises `value` as one line of JSON, escaped by [`escape_json`].
pub fn json_line<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    let s = serde_json::to_string(value)
        .map_err(|e| Error::io("serialize", "<stdout>", std::io::Error::other(e)))?;
    Ok(escape_json(&s).into_owned())
}

/// Prints a value as one line of JSON: exact text, escaped.
pub fn out_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<()> {
    let mut s = json_line(value)?;
    s.push('\n');
    write_stdout(s.as_bytes())
}

/// A JSON array printed element by element as the elements come, on one
/// line: the same bytes as [`out_json`] of the whole array.
pub struct JsonArray {
    so: std::io::BufWriter<std::io::StdoutLock<'static>>,
    first: bool,
}

impl JsonArray {
    /// Starts the array (nothing is written until the first element).
    pub fn new() -> JsonArray {
        JsonArray {
            so: std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock()),
            first: true,
        }
    }

    /// Writes one element, escaped by [`escape_json`].
    pub fn push<T: serde::Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        let open: &[u8] = if self.first { b"[" } else { b"," };
        self.first = false;
        let v = json_line(value)?;
        self.so
            .write_all(open)
            .and_then(|()| self.so.write_all(v.as_bytes()))
            .map_err(stdout_err)
    }

    /// Closes the array, ends the line and flushes.
    pub fn finish(mut self) -> Result<()> {
        let close: &[u8] = if self.first { b"[]\n" } else { b"]\n" };
        self.so
            .write_all(close)
            .and_then(|()| self.so.flush())
            .map_err(stdout_err)
    }
}

impl Default for JsonArray {
    fn default() -> JsonArray {
        JsonArray::new()
    }
}

/// Prints a message body byte-exact, for the worker reading its own inbox
/// (docs/spec/inbox.md#record); never use it for text the captain reads.
pub fn out_body(bytes: &[u8]) -> Result<()> {
    write_stdout(bytes)
}

/// Prints text the tool generated from its own definitions (shell
/// completion scripts), unchanged.
pub fn out_generated(bytes: &[u8]) -> Result<()> {
    write_stdout(bytes)
}

/// Writes a frame of the live view: the view's own cursor and screen
/// controls around [`Text`] it built.
pub fn terminal(bytes: &[u8]) -> Result<()> {
    write_stdout(bytes)
}

/// Whether stdout is a terminal.
pub fn stdout_is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal()
}

/// Prints narration (`fm demo`): each line sanitised; a failed write is
/// ignored, as the narration is not the demo's result.
pub fn out_say(text: &str) {
    let _ = out_block(text);
}

/// Writes one line to stderr, sanitised. Errors writing stderr are
/// ignored: there is nowhere left to report them.
pub fn err_line(line: &str) {
    let mut s = sanitize(line).into_owned();
    s.push('\n');
    let _ = std::io::stderr().lock().write_all(s.as_bytes());
}

/// `<tool>: warning: <msg>` on stderr.
pub fn warn(tool: &str, msg: &str) {
    err_line(&format!("{tool}: warning: {msg}"));
}

/// `<tool>: error: <msg>` on stderr.
pub fn error(tool: &str, msg: &str) {
    err_line(&format!("{tool}: error: {msg}"));
}

/// Writes clap's rendered usage or help text to stderr (its own text and
/// the arguments it quotes), sanitised line by line.
pub fn err_block(block: &str) {
    let body = block.strip_suffix('\n').unwrap_or(block);
    for l in body.split('\n') {
        err_line(l);
    }
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;

/// Whether stdout is a terminal that says what it is: `TERM` set and
/// not `dumb` (none under `env -i`). Paging needs one, and so does a
/// review's colour.
pub fn rich_terminal() -> bool {
    let term = std::env::var("TERM").unwrap_or_default();
    stdout_is_terminal() && !term.is_empty() && term != "dumb"
}

/// Shows built [`Text`] lines through the captain's pager when stdout is
/// a terminal with a `TERM` (not `dumb`): `$PAGER`, split at whitespace
/// and run without a shell, default `less -R`. Anywhere else (a pipe,
/// `env -i`), or when the pager cannot start, the lines are printed.
pub fn page<'a>(lines: impl IntoIterator<Item = &'a Text>) -> Result<()> {
    let mut s = String::new();
    for l in lines {
        s.push_str(l.as_str());
        s.push('\n');
    }
    if !rich_terminal() {
        return write_stdout(s.as_bytes());
    }
    let pager = std::env::var("PAGER")
        .ok()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| "less -R".into());
    let mut words = pager.split_whitespace();
    let Some(program) = words.next() else {
        return write_stdout(s.as_bytes());
    };
    // The pager owns the terminal until the captain leaves it: not a
    // bounded child of crate::proc, which captures output.
    let child = std::process::Command::new(program)
        .args(words)
        .stdin(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        return write_stdout(s.as_bytes());
    };
    if let Some(mut input) = child.stdin.take() {
        // A pager quit before reading everything closes its stdin: fine.
        let _ = input.write_all(s.as_bytes());
    }
    let _ = child.wait();
    Ok(())
}

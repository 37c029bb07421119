//! The stand-in agent (docs/spec/harness.md): a real program that sits in a tmux pane
//! like a coding agent, so tests and `fm demo` can drive the whole loop.
//!
//! It shows a composer line (`stand-in> …`), reads keys in raw mode, and on
//! any submitted line reads its inbox in numeric order, acts on each
//! message, and acknowledges it with `fm-ack` — unless told to go deaf.
//! Message bodies may hold instructions, one per line:
//!
//! | line | effect |
//! |---|---|
//! | `status <verb> [--key K] <text>` | `fm-status <id> <verb> …` |
//! | `commit <file> <text…>` | write the file in the worktree, `git add`, `git commit` |
//! | `deaf` | never acknowledge again (this message included) |
//! | `swallow-enter` | ignore the next Enter key |
//! | `ignore-exit` | ignore the harness exit command |
//! | `busy <secs>` | show the busy line for that long |
//! | `dialog <name>` | then show a modal dialog (`permission` or `trust`); several such lines show one after another, the next as soon as the previous is answered (an agent asking for two tool calls) |
//! | `exit` | acknowledge, then exit |
//!
//! Anything else is just read. The busy line and the composer share the
//! last screen line, so the `^stand-in: busy` regex only matches while busy.
//!
//! A dialog takes the composer's place, as a real agent's permission or
//! folder-trust prompt does: typed text is swallowed, Enter answers it and
//! Escape cancels it, and either brings the composer back.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::Result;
use crate::home::Home;
use crate::inbox;
use crate::proc::Cmd;
use crate::task_id::TaskId;

/// Bound on each tool or git call the stand-in makes.
const TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// Where the sibling `fm-*` binaries are: beside this executable, else PATH.
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the running binary's own directory"
)]
pub fn sibling_bin(name: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join(name)))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// The agent's state between keys.
#[derive(Debug, Default)]
pub struct Agent {
    pub deaf: bool,
    pub swallow_enter: bool,
    pub ignore_exit: bool,
    pub exit: bool,
    /// The dialog on screen, if any.
    pub dialog: Option<String>,
    /// Dialogs to show once the one on screen is answered.
    pub next_dialogs: std::collections::VecDeque<String>,
    buf: String,
}

/// What one instruction line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Instruction {
    Status(Vec<String>),
    Commit { file: String, text: String },
    Deaf,
    SwallowEnter,
    IgnoreExit,
    Busy(u64),
    Dialog(String),
    Exit,
    Other,
}

/// Reads one line of a message body.
pub fn instruction(line: &str) -> Instruction {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["status", rest @ ..] if rest.len() >= 2 => {
            Instruction::Status(rest.iter().map(std::string::ToString::to_string).collect())
        }
        ["commit", file, text @ ..] => Instruction::Commit {
            file: file.to_string(),
            text: text.join(" "),
        },
        ["deaf"] => Instruction::Deaf,
        ["swallow-enter"] => Instruction::SwallowEnter,
        ["ignore-exit"] => Instruction::IgnoreExit,
        ["busy", secs] => secs.parse().map_or(Instruction::Other, Instruction::Busy),
        ["dialog", name @ ("permission" | "trust")] => Instruction::Dialog((*name).to_string()),
        ["exit"] => Instruction::Exit,
        _ => Instruction::Other,
    }
}

struct Io<'a> {
    home: &'a Home,
    id: &'a TaskId,
    out: std::io::Stdout,
}

impl Io<'_> {
    fn say(&mut self, text: &str) {
        let _ = write!(self.out, "\r\x1b[K{text}\r\n");
        let _ = self.out.flush();
    }

    fn composer(&mut self, buf: &str) {
        let _ = write!(self.out, "\r\x1b[Kstand-in> {buf}");
        let _ = self.out.flush();
    }

    fn dialog(&mut self, name: &str) {
        let _ = write!(
            self.out,
            "\r\x1b[Kstand-in dialog: {name}? Enter to answer, Esc to cancel"
        );
        let _ = self.out.flush();
    }

    fn busy(&mut self, what: &str) {
        let _ = write!(self.out, "\r\x1b[Kstand-in: busy ({what})");
        let _ = self.out.flush();
    }

    fn run(&mut self, program: &str, args: &[&str]) -> bool {
        let st = Cmd::new(sibling_bin(program))
            .args(args)
            .env("FM_HOME", self.home.root())
            .timeout(TOOL_TIMEOUT)
            .run();
        match st {
            Ok(o) if o.success() => true,
            Ok(o) => {
                self.say(&format!("{program} failed: {}", o.stderr.trim()));
                false
            }
            Err(f) => {
                self.say(&format!("{program}: {}", f.cause));
                false
            }
        }
    }

    fn commit(&mut self, file: &str, text: &str) {
        if file.contains("..") || file.starts_with('/') {
            self.say(&format!("refusing to write outside the worktree: {file}"));
            return;
        }
        #[expect(
            clippy::disallowed_methods,
            reason = "outside the home: the stand-in agent writes in its worktree"
        )]
        let written = std::fs::write(file, format!("{text}\n"));
        if let Err(e) = written {
            self.say(&format!("write {file}: {e}"));
            return;
        }
        let git = |args: &[&str]| {
            Cmd::git(Path::new("."))
                .args(args)
                .timeout(TOOL_TIMEOUT)
                .run()
                .is_ok_and(|o| o.success())
        };
        let ok =
            git(&["add", "--", file]) && git(&["commit", "-q", "-m", &format!("stand-in: {file}")]);
        self.say(&if ok {
            format!("committed {file}")
        } else {
            format!("git commit of {file} failed")
        });
    }
}

impl Agent {
    /// Reads and acts on every pending message, oldest first.
    fn read_inbox(&mut self, io: &mut Io) {
        let Ok(seqs) = inbox::pending(io.home, io.id) else {
            io.say("cannot read my inbox");
            return;
        };
        for seq in seqs {
            if self.deaf {
                break;
            }
            let Ok(Some(rec)) = inbox::load_pending(io.home, io.id, seq) else {
                continue;
            };
            io.busy(&format!("reading {seq:03}.msg"));
            io.say(&format!(
                "read {seq:03}.msg from {}: {}",
                rec.from,
                rec.first_line()
            ));
            let body = String::from_utf8_lossy(&rec.body).into_owned();
            for line in body.lines() {
                match instruction(line) {
                    Instruction::Status(args) => {
                        let mut a: Vec<&str> = vec![io.id.as_str()];
                        a.extend(args.iter().map(String::as_str));
                        io.run("fm-status", &a);
                    }
                    Instruction::Commit { file, text } => io.commit(&file, &text),
                    Instruction::Deaf => {
                        self.deaf = true;
                        io.say("going deaf: no more acknowledgements");
                    }
                    Instruction::SwallowEnter => self.swallow_enter = true,
                    Instruction::IgnoreExit => self.ignore_exit = true,
                    Instruction::Busy(secs) => {
                        io.busy("working");
                        std::thread::sleep(Duration::from_secs(secs.min(600)));
                    }
                    Instruction::Dialog(name) if self.dialog.is_some() => {
                        self.next_dialogs.push_back(name);
                    }
                    Instruction::Dialog(name) => self.dialog = Some(name),
                    Instruction::Exit => self.exit = true,
                    Instruction::Other => {}
                }
            }
            if !self.deaf {
                let seq_s = seq.to_string();
                if io.run("fm-ack", &[io.id.as_str(), &seq_s]) {
                    io.say(&format!("acknowledged {seq:03}.msg"));
                }
            }
            if self.exit {
                return;
            }
        }
    }

    /// Handles one input byte. Returns false when the agent should exit.
    fn key(&mut self, b: u8, io: &mut Io) -> bool {
        if let Some(name) = &self.dialog {
            let how = match b {
                b'\r' | b'\n' => "answered",
                0x1b => "cancelled",
                _ => return true,
            };
            io.say(&format!("dialog {name} {how}"));
            self.dialog = self.next_dialogs.pop_front();
            match &self.dialog {
                Some(next) => io.dialog(next),
                None => io.composer(&self.buf),
            }
            return true;
        }
        match b {
            b'\r' | b'\n' => {
                if self.swallow_enter {
                    self.swallow_enter = false;
                    return true;
                }
                let line = std::mem::take(&mut self.buf);
                // Rewrite the submitted line so it no longer looks like the composer.
                let _ = write!(io.out, "\r\x1b[Ksubmitted: {line}\r\n");
                if line.trim() == "/exit" {
                    if !self.ignore_exit {
                        io.say("bye");
                        return false;
                    }
                    io.say("ignoring /exit");
                } else {
                    self.read_inbox(io);
                    if self.exit {
                        io.say("exiting as instructed");
                        return false;
                    }
                }
            }
            0x03 => {
                self.buf.clear();
                io.say("interrupted");
            }
            0x7f | 0x08 => {
                self.buf.pop();
            }
            b if b >= 0x20 => self.buf.push(b as char),
            _ => {}
        }
        match &self.dialog {
            Some(name) => io.dialog(name),
            None => io.composer(&self.buf),
        }
        true
    }
}

/// Puts the terminal in raw mode; restores it on drop.
struct RawMode(Option<rustix::termios::Termios>);

impl RawMode {
    fn enable() -> RawMode {
        use rustix::termios::{
            InputModes, LocalModes, OptionalActions, SpecialCodeIndex, tcgetattr, tcsetattr,
        };
        let stdin = std::io::stdin();
        let Ok(saved) = tcgetattr(&stdin) else {
            return RawMode(None);
        };
        let mut t = saved.clone();
        t.local_modes &=
            !(LocalModes::ICANON | LocalModes::ECHO | LocalModes::ISIG | LocalModes::IEXTEN);
        t.input_modes &= !(InputModes::IXON | InputModes::ICRNL);
        t.special_codes[SpecialCodeIndex::VMIN] = 1;
        t.special_codes[SpecialCodeIndex::VTIME] = 0;
        let _ = tcsetattr(&stdin, OptionalActions::Now, &t);
        RawMode(Some(saved))
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        if let Some(t) = &self.0 {
            let _ = rustix::termios::tcsetattr(
                std::io::stdin(),
                rustix::termios::OptionalActions::Now,
                t,
            );
        }
    }
}

/// How the stand-in starts up: like a real agent, it may take a while
/// before it reads its input, and may draw its composer before then.
#[derive(Debug, Clone, Copy, Default)]
pub struct Boot {
    /// How long it ignores its input after starting; what was typed
    /// meanwhile is thrown away (as a TUI entering raw mode flushes it).
    pub ms: u64,
    /// Draw the composer at once, before the input is read.
    pub composer_early: bool,
    /// Run the hook leg's waiter as Claude Code does (docs/spec/ring.md#legs):
    /// `fm leg-wait` at the start and after every turn; its exit 2 starts a
    /// turn with its stderr (`hook: <text>`), after a dialog is answered.
    pub leg: bool,
}

/// What the main loop reacts to.
enum Input {
    Key(u8),
    /// A waiter's doorbell (its stderr, exit 2).
    Wake(String),
    End,
}

/// Starts a waiter (`fm leg-wait <id>`) whose doorbell comes back on `tx`.
fn start_waiter(home: &Home, id: &TaskId, tx: &std::sync::mpsc::Sender<Input>) {
    let child = std::process::Command::new(sibling_bin("fm"))
        .args(["leg-wait", "--home"])
        .arg(home.root())
        .arg(id.as_str())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(child) = child else { return };
    let tx = tx.clone();
    std::thread::spawn(move || {
        if let Ok(out) = child.wait_with_output()
            && out.status.code() == Some(2)
        {
            let text = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
            let _ = tx.send(Input::Wake(text));
        }
    });
}

/// Runs the stand-in until `/exit`, an `exit` instruction or end of input.
pub fn run(home_dir: &Path, id: &TaskId) -> Result<u8> {
    run_booting(home_dir, id, Boot::default())
}

/// [`run`] with a start-up delay ([`Boot`]).
pub fn run_booting(home_dir: &Path, id: &TaskId, boot: Boot) -> Result<u8> {
    let home = Home::at(home_dir)?;
    let _raw = RawMode::enable();
    let mut io = Io {
        home: &home,
        id,
        #[expect(
            clippy::disallowed_methods,
            reason = "the stand-in agent is a worker: its stdout is its own pane"
        )]
        out: std::io::stdout(),
    };
    if boot.ms > 0 {
        if boot.composer_early {
            io.composer("");
        }
        std::thread::sleep(Duration::from_millis(boot.ms));
        let _ = rustix::termios::tcflush(std::io::stdin(), rustix::termios::QueueSelector::IFlush);
    }
    io.say(&format!(
        "stand-in agent for {id}; home {}",
        home.root().display()
    ));
    let mut agent = Agent::default();
    io.composer("");
    if !boot.leg {
        let mut stdin = std::io::stdin().lock();
        let mut byte = [0u8; 1];
        loop {
            match stdin.read(&mut byte) {
                Ok(0) | Err(_) => return Ok(0),
                Ok(_) => {
                    if !agent.key(byte[0], &mut io) {
                        return Ok(0);
                    }
                }
            }
        }
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let keys = tx.clone();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut byte = [0u8; 1];
        loop {
            match stdin.read(&mut byte) {
                Ok(0) | Err(_) => {
                    let _ = keys.send(Input::End);
                    return;
                }
                Ok(_) => {
                    if keys.send(Input::Key(byte[0])).is_err() {
                        return;
                    }
                }
            }
        }
    });
    start_waiter(&home, id, &tx);
    let mut held: Vec<String> = Vec::new();
    while let Ok(input) = rx.recv() {
        match input {
            Input::End => return Ok(0),
            Input::Key(b) => {
                let submitted = matches!(b, b'\r' | b'\n') && agent.dialog.is_none();
                if !agent.key(b, &mut io) {
                    return Ok(0);
                }
                if submitted {
                    // A turn ended: its Stop hook starts a waiter.
                    start_waiter(&home, id, &tx);
                }
            }
            Input::Wake(text) => held.push(text),
        }
        // A wake starts a turn once no dialog holds the keyboard.
        while agent.dialog.is_none() && !held.is_empty() {
            let text = held.remove(0);
            io.say(&format!("hook: {text}"));
            agent.read_inbox(&mut io);
            if agent.exit {
                io.say("exiting as instructed");
                return Ok(0);
            }
            match &agent.dialog {
                Some(name) => io.dialog(name),
                None => io.composer(&agent.buf),
            }
            start_waiter(&home, id, &tx);
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions() {
        assert_eq!(
            instruction("status done all good"),
            Instruction::Status(vec!["done".into(), "all".into(), "good".into()])
        );
        assert_eq!(
            instruction("commit a.txt hello world"),
            Instruction::Commit {
                file: "a.txt".into(),
                text: "hello world".into()
            }
        );
        assert_eq!(instruction("deaf"), Instruction::Deaf);
        assert_eq!(instruction("busy 3"), Instruction::Busy(3));
        assert_eq!(instruction("busy x"), Instruction::Other);
        assert_eq!(
            instruction("dialog trust"),
            Instruction::Dialog("trust".into())
        );
        assert_eq!(instruction("dialog other"), Instruction::Other);
        assert_eq!(instruction("please fix the bug"), Instruction::Other);
        assert_eq!(instruction("status"), Instruction::Other);
    }
}

//! The `--watch` live view (SPEC §9.1, §14): redraws the fleet table in
//! place every interval until Ctrl-C, with the wake feed's latest lines
//! under it.
//!
//! Ctrl-C is caught (SIGINT sets a flag; the loop notices within 50 ms),
//! the terminal is left with its colours reset and the cursor on a fresh
//! line, and the view exits with 130 (SPEC §14 "interrupted"). Off a
//! terminal each frame is printed in full, followed by a blank line, so the
//! view can be piped or tested.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Result, exit};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

fn install_sigint() {
    let handler: extern "C" fn(libc::c_int) = on_sigint;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
    }
}

/// The last `n` complete lines of a file, reading at most its last 64 KiB.
pub fn tail_lines(path: &Path, n: usize) -> Vec<String> {
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(64 * 1024);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return Vec::new();
    }
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(crate::fsx::complete_lines(&buf)).into_owned();
    let mut lines: Vec<String> = text
        .lines()
        .skip(usize::from(start > 0))
        .map(str::to_string)
        .collect();
    let cut = lines.len().saturating_sub(n);
    lines.drain(..cut);
    lines
}

fn write_out(bytes: &[u8]) -> Result<()> {
    crate::output::terminal(bytes)
}

/// Redraws `frame()` every `interval` until Ctrl-C; returns the exit code.
pub fn run(interval: Duration, tty: bool, mut frame: impl FnMut() -> Result<String>) -> Result<u8> {
    install_sigint();
    if tty {
        write_out(b"\x1b[?25l")?;
    }
    let result = (|| loop {
        let text = frame()?;
        if tty {
            write_out(format!("\x1b[H\x1b[2J{text}").as_bytes())?;
        } else {
            write_out(format!("{text}\n").as_bytes())?;
        }
        let until = Instant::now() + interval;
        while Instant::now() < until {
            if INTERRUPTED.load(Ordering::SeqCst) {
                return Ok(exit::INTERRUPTED);
            }
            std::thread::sleep(Duration::from_millis(50).min(interval));
        }
        if INTERRUPTED.load(Ordering::SeqCst) {
            return Ok(exit::INTERRUPTED);
        }
    })();
    if tty {
        let _ = write_out(b"\x1b[0m\x1b[?25h\n");
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_reads_only_complete_last_lines() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("w.log");
        std::fs::write(&p, "a\nb\nc\ntorn").unwrap();
        assert_eq!(tail_lines(&p, 2), vec!["b", "c"]);
        assert!(tail_lines(&d.path().join("none"), 2).is_empty());
        let big: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&p, big).unwrap();
        assert_eq!(tail_lines(&p, 1), vec!["line 19999"]);
    }
}

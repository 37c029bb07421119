//! The `--watch` live view (docs/spec/crew-state.md#output, docs/spec/cli.md): redraws the fleet
//! table in
//! place every interval until Ctrl-C, with the wake feed's latest lines
//! under it.
//!
//! Ctrl-C is caught (SIGINT sets a flag and wakes the wait between frames
//! through a socket pair, so an idle view makes one wait per frame rather
//! than waking every 50 ms to look at the flag),
//! the terminal is left with its colours reset and the cursor on a fresh
//! line, and the view exits with 130 (docs/spec/cli.md#exit-codes "interrupted"). Off a
//! terminal each frame is printed in full, followed by a blank line, so the
//! view can be piped or tested.

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Result, exit};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Catches SIGINT; returns the end a SIGINT writes a byte to, when one
/// could be made (else the wait looks at the flag every 50 ms).
fn install_sigint() -> Option<UnixStream> {
    // Without the flag Ctrl-C would kill the view with the cursor hidden.
    let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, &INTERRUPTED);
    let (rx, tx) = UnixStream::pair().ok()?;
    signal_hook::low_level::pipe::register(signal_hook::consts::SIGINT, tx).ok()?;
    Some(rx)
}

/// Waits up to `d`, less when a SIGINT's byte arrives on `wake`; whether
/// one did.
fn wait(wake: Option<&mut UnixStream>, d: Duration) -> bool {
    let d = d.max(Duration::from_millis(1));
    match wake {
        Some(w) if w.set_read_timeout(Some(d)).is_ok() => {
            let mut buf = [0u8; 16];
            w.read(&mut buf).is_ok_and(|n| n > 0)
        }
        _ => {
            std::thread::sleep(Duration::from_millis(50).min(d));
            false
        }
    }
}

/// The last `n` complete lines of a file, reading at most its last 64 KiB.
pub fn tail_lines(path: &Path, n: usize) -> Vec<String> {
    let Ok(Some((buf, start, _))) =
        crate::fsx::read_from(path, crate::fsx::Start::Tail(64 * 1024), 64 * 1024)
    else {
        return Vec::new();
    };
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

/// The last `n` lines of the wake feed as a person reads them:
/// `3m ago  <task>  <kind>  <text>`; a line that is not a wake is shown as
/// written.
pub fn recent_wakes(path: &Path, n: usize, now: u64) -> Vec<String> {
    tail_lines(path, n)
        .into_iter()
        .map(|l| match crate::wakes::parse_line(l.as_bytes()) {
            Some(w) => format!(
                "{:>8}  {}  {}  {}",
                crate::clock::ago(w.epoch, now),
                w.task,
                w.kind,
                w.text
            ),
            None => l,
        })
        .collect()
}

fn write_out(bytes: &[u8]) -> Result<()> {
    crate::output::terminal(bytes)
}

/// Redraws `frame()` every `interval` until Ctrl-C; returns the exit code.
pub fn run(interval: Duration, tty: bool, mut frame: impl FnMut() -> Result<String>) -> Result<u8> {
    let mut wake = install_sigint();
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
        loop {
            if INTERRUPTED.load(Ordering::SeqCst) {
                return Ok(exit::INTERRUPTED);
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            if wait(wake.as_mut(), left) {
                return Ok(exit::INTERRUPTED);
            }
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
        let big: String = (0..20_000)
            .map(|i| format!("line {i}\n"))
            .collect::<Vec<_>>()
            .concat();
        std::fs::write(&p, big).unwrap();
        assert_eq!(tail_lines(&p, 1), vec!["line 19999"]);
    }

    #[test]
    fn wakes_show_their_age_not_their_epoch() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("wakes.log");
        std::fs::write(
            &p,
            "1\t1000\ta\tescalation\tno ack after 3 rings\nhand note\n2\t1900\tb\tstatus\tdone: shipped\n",
        )
        .unwrap();
        assert_eq!(
            recent_wakes(&p, 5, 4600),
            [
                "  1h ago  a  escalation  no ack after 3 rings",
                "hand note",
                " 45m ago  b  status  done: shipped",
            ]
        );
    }
}

//! The first mate's harness hooks (docs/spec/mate.md#hooks): what
//! `fm mate hook <event> --harness <h>` does when the lead's harness runs
//! it, in that harness's protocol.
//!
//! - `session-start`: prints the fleet's digest on stdout (both harnesses
//!   add a start hook's stdout to the lead's context) and exits 0. It
//!   presents no packet: the waiter does.
//! - `stop`: waits (`fm wake --wait`) and hands the packet over by exiting
//!   2 with it on stderr — Claude Code (an `asyncRewake` hook: the lead is
//!   idle meanwhile, and the exit starts its next turn) and Codex (a
//!   blocking Stop hook: the exit continues the turn with the packet as
//!   its prompt). A waiter superseded by a newer one, or ended by a
//!   signal, exits 0 and says nothing. Near the harness's own timeout it
//!   exits 2 with a one-line note, so the lead's next turn re-arms it
//!   (the only wake that is not news: at most one a day). At a turn's
//!   end, a packet left unacknowledged is shown again only if the
//!   turn's transcript shows the lead had it.

use std::path::Path;

use super::pack::WAIT_SECS;
use super::wait::Waited;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::home::Home;

/// Seconds before the harness's timeout that the waiter gives up itself.
const MARGIN_SECS: f64 = 60.0;

/// The exit that hands stderr to the model (both harnesses).
const HAND_OVER: u8 = 2;

/// What the hook's payload says (the harness writes it to stdin as one
/// JSON object): the event and where the lead's conversation is kept.
#[derive(Debug, Default)]
struct Payload {
    event: String,
    transcript: Option<std::path::PathBuf>,
    session: Option<String>,
}

/// Reads the payload: at most 1 MiB, for at most 2 s (a harness that
/// keeps stdin open must not hold the hook), in a thread that goes on
/// draining what is left. Anything unreadable is an empty payload.
fn payload() -> Payload {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::Read;
        let mut buf = Vec::new();
        let mut stdin = std::io::stdin().lock();
        let mut chunk = [0u8; 8192];
        let mut sent = false;
        loop {
            match stdin.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) if buf.len() < 1 << 20 => buf.extend_from_slice(&chunk[..n]),
                Ok(_) => {
                    if !sent {
                        let _ = tx.send(std::mem::take(&mut buf));
                        sent = true;
                    }
                }
            }
        }
        if !sent {
            let _ = tx.send(buf);
        }
    });
    let Ok(bytes) = rx.recv_timeout(std::time::Duration::from_secs(2)) else {
        return Payload::default();
    };
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    Payload {
        event: v["hook_event_name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        transcript: v["transcript_path"]
            .as_str()
            .filter(|p| p.starts_with('/'))
            .map(std::path::PathBuf::from),
        session: v["session_id"]
            .as_str()
            .filter(|s| super::ledger::valid_session(s))
            .map(str::to_string),
    }
}

/// Whether the lead's conversation (`transcript`, the harness's own
/// JSONL) shows packet `token` as handed over (`wake <token>:` or
/// `wake <token> (`), in its last 8 MiB. An unreadable one says yes: the
/// packet is then shown again, as without a transcript.
#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the harness's own transcript, read only"
)]
pub fn mentions(transcript: &Path, token: &str) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::OpenOptionsExt;
    const TAIL: u64 = 8 << 20;
    // Non-blocking, and only a regular file is read: a FIFO named as the
    // transcript must not hold the hook (it runs under the ledger's lock).
    let Ok(mut f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed())
        .open(transcript)
    else {
        return true;
    };
    let Ok(md) = f.metadata() else {
        return true;
    };
    if !md.is_file() {
        return true;
    }
    let len = md.len();
    if f.seek(SeekFrom::Start(len.saturating_sub(TAIL))).is_err() {
        return true;
    }
    let mut bytes = Vec::new();
    if f.take(TAIL).read_to_end(&mut bytes).is_err() {
        return true;
    }
    [format!("wake {token}:"), format!("wake {token} (")]
        .iter()
        .any(|needle| memchr::memmem::find(&bytes, needle.as_bytes()).is_some())
}

/// Ends this process when its parent (the harness that ran the hook)
/// goes away: a harness killed outright leaves its hooks running, and an
/// orphaned waiter must not wake a lead that no longer exists.
pub(crate) fn orphan_guard() {
    // Only a change counts: a harness may itself be process 1 (a
    // container's entrypoint).
    let parent = rustix::process::getppid();
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(std::time::Duration::from_millis(500));
            if rustix::process::getppid() != parent {
                std::process::exit(0);
            }
        }
    });
}

/// The digest a session starts with: the fleet in numbers, what needs
/// the captain, every open decision, and how the wakes will come.
pub fn digest(home: &Home, cfg: &Config, now: u64) -> Result<String> {
    let (rows, warnings) = crate::route::fleet::fleet(home, cfg, now)?;
    let mut p = super::packet::build(&rows, &[], now);
    p.warnings = warnings;
    let unacked = super::ledger::Ledger::load(home)?;
    let waiting = crate::wakes::read_since(home, unacked.cursor.local)?
        .0
        .len();
    let mut out =
        String::from("firstmate digest (you are the first mate; AGENTS.md is your manual)\n");
    out.push_str(&p.text().replacen("no news \u{b7} ", "", 1));
    if waiting > 0 {
        out.push_str(&format!(
            "{waiting} wake{} not yet acknowledged: the next packet brings them\n",
            if waiting == 1 { "" } else { "s" }
        ));
    }
    out.push_str("packets come by themselves; `fm wake` shows the current one\n");
    Ok(out)
}

/// Runs hook `event` for `harness`; returns the exit code.
pub fn run(
    home: &Home,
    cfg: &Config,
    event: &str,
    harness: &str,
    timeout: Option<f64>,
) -> Result<u8> {
    let payload = payload();
    match event {
        "session-start" => {
            crate::output::out_block(&digest(home, cfg, crate::clock::now())?)?;
            Ok(0)
        }
        "stop" => {
            orphan_guard();
            let secs = timeout.unwrap_or(WAIT_SECS as f64 - MARGIN_SECS).max(1.0);
            crate::watch::daemon::install_signals();
            // A session that just started never saw a packet: one left
            // unacknowledged is shown again. At a turn's end, a packet
            // this session was shown comes again only if the lead had it.
            let transcript = match payload.event.as_str() {
                "SessionStart" => None,
                _ => payload.transcript.as_deref(),
            };
            // A failing wait (the home unreadable for a while, a lock
            // held too long) is tried again, pausing longer each time,
            // rather than ending the hook: a waiter that ends without a
            // packet leaves the lead unarmed until its next turn.
            let deadline = std::time::Instant::now() + super::wait::secs(secs);
            let mut pause = std::time::Duration::from_secs(1);
            let mut failing: Option<String> = None;
            loop {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                let waited = if left.is_zero() {
                    Ok(Waited::Timeout)
                } else {
                    super::wait::wait(
                        home,
                        cfg,
                        Some(left),
                        transcript,
                        payload.session.as_deref(),
                    )
                };
                match waited {
                    Ok(Waited::Packet(p)) => {
                        crate::output::err_block(&p.text());
                        return Ok(HAND_OVER);
                    }
                    Ok(Waited::Timeout) => {
                        let why = failing.map_or_else(String::new, |e| {
                            format!(" The wait kept failing: {e}; tell the captain (fm doctor).")
                        });
                        crate::output::err_line(&format!(
                            "firstmate: no news for a long while; nothing to do (this only re-arms the wait).{why} End your turn."
                        ));
                        return Ok(HAND_OVER);
                    }
                    Ok(Waited::Superseded | Waited::Signal(_)) => return Ok(0),
                    Err(e) => {
                        failing = Some(e.to_string());
                        std::thread::sleep(pause.min(left));
                        pause = (pause * 2).min(std::time::Duration::from_secs(60));
                    }
                }
            }
        }
        _ => Err(Error::Usage(format!(
            "unknown hook event {event} for {harness}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transcript_check_reads_regular_files_only() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("t.jsonl");
        std::fs::write(&t, "{\"text\":\"Stop hook feedback: wake w3: 1 worker\"}\n").unwrap();
        assert!(mentions(&t, "w3"));
        assert!(!mentions(&t, "w4"), "another packet");
        assert!(!mentions(&t, "w"), "a prefix is not a token");
        std::fs::write(&t, "wake w7 (shown again: not acknowledged): 1\n").unwrap();
        assert!(mentions(&t, "w7"));
        // A FIFO with no writer: answered at once, never waited on.
        let fifo = d.path().join("f");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let began = std::time::Instant::now();
        assert!(mentions(&fifo, "w1"), "unreadable reads as seen");
        assert!(began.elapsed() < std::time::Duration::from_secs(5));
        assert!(mentions(&d.path().join("missing"), "w1"));
    }
}

//! Claude Code's own per-process session file, a source of busy, idle and
//! waiting ahead of the screen (docs/spec/crew-state.md#agent-session).
//!
//! Claude Code writes `<config dir>/sessions/<pid>.json` while it runs
//! (config dir: its `CLAUDE_CONFIG_DIR`, else `$HOME/.claude`), one JSON
//! object holding its `pid`, `procStart` (the process's start time in
//! clock ticks, as `/proc/<pid>/stat` has it), a `status` (`busy`, `idle`,
//! `shell`, `waiting` — a dialog such as a permission prompt) and `statusUpdatedAt`
//! (milliseconds). Spawn notes the config dir (`state/<id>.agent-home`,
//! `claude <dir>`, [`crate::agent_report::note_launch`]); the pane's
//! process, or one of its children, is the pid.
//!
//! One small read per live Claude pane, no process spawned. A missing,
//! unparsable or stale file (another pid, a process that started at
//! another time) is no answer: the next source decides.

use std::io::Read;
use std::path::Path;

/// The source a state read from the session file names.
pub const SOURCE: &str = "agent-session";

/// The largest session file read (they hold some hundreds of bytes).
const MAX_BYTES: u64 = 64 * 1024;

/// At most this many children of the pane's process are looked at.
const MAX_CHILDREN: usize = 4;

/// What the session file says the agent is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// A turn runs (`busy`; `shell` is read so too).
    Busy,
    Idle,
    /// A dialog waits for an answer (a permission prompt, the rewind view).
    Waiting,
}

/// The session file's report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Session {
    pub status: Status,
    /// When the status was written (Unix seconds).
    pub at: u64,
}

/// The report of a session file written by process `pid` whose start
/// time is `proc_start` (when known); `None` for anything else.
pub(crate) fn parse(bytes: &[u8], pid: u32, proc_start: Option<&str>) -> Option<Session> {
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    if v.get("pid")?.as_u64()? != u64::from(pid) {
        return None;
    }
    if let (Some(want), Some(have)) = (proc_start, v.get("procStart").and_then(|s| s.as_str()))
        && want != have
    {
        return None;
    }
    let status = match v.get("status")?.as_str()? {
        "busy" | "shell" => Status::Busy,
        "idle" => Status::Idle,
        "waiting" => Status::Waiting,
        _ => return None,
    };
    let ms = v
        .get("statusUpdatedAt")
        .or_else(|| v.get("updatedAt"))
        .and_then(serde_json::Value::as_u64)?;
    Some(Session {
        status,
        at: ms / 1000,
    })
}

#[expect(
    clippy::disallowed_methods,
    reason = "outside the home: the agent's own config dir and /proc"
)]
fn read_small(path: &Path) -> Option<Vec<u8>> {
    // Outside the home: the agent's own config dir and /proc.
    let f = std::fs::File::open(path).ok()?;
    let mut buf = Vec::new();
    f.take(MAX_BYTES).read_to_end(&mut buf).ok()?;
    Some(buf)
}

/// Field 22 of `/proc/<pid>/stat` (the start time in clock ticks).
fn proc_start(pid: u32) -> Option<String> {
    let stat = read_small(Path::new(&format!("/proc/{pid}/stat")))?;
    let text = std::str::from_utf8(&stat).ok()?;
    // The command name (field 2) may hold spaces: count after its ')'.
    let rest = &text[text.rfind(')')? + 1..];
    rest.split_whitespace().nth(19).map(str::to_string)
}

fn children(pid: u32) -> Vec<u32> {
    read_small(Path::new(&format!("/proc/{pid}/task/{pid}/children")))
        .map(|b| {
            String::from_utf8_lossy(&b)
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .take(MAX_CHILDREN)
                .collect()
        })
        .unwrap_or_default()
}

fn of_pid(config: &Path, pid: u32) -> Option<Session> {
    let bytes = read_small(&config.join("sessions").join(format!("{pid}.json")))?;
    let start = proc_start(pid);
    parse(&bytes, pid, start.as_deref())
}

/// The report of the Claude Code running as the pane's process `pane_pid`
/// or as one of its children, with its config dir `config`.
pub(crate) fn read(config: &Path, pane_pid: u32) -> Option<Session> {
    of_pid(config, pane_pid).or_else(|| {
        children(pane_pid)
            .into_iter()
            .find_map(|c| of_pid(config, c))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(pid: u32, start: &str, status: &str) -> String {
        format!(
            r#"{{"pid":{pid},"sessionId":"6ab5","cwd":"/w","startedAt":1796590949090,"procStart":"{start}","version":"2.1.332","kind":"interactive","status":"{status}","updatedAt":1796590951275,"statusUpdatedAt":1796590951275}}"#
        )
    }

    #[test]
    fn the_status_and_its_time_are_read() {
        for (word, want) in [
            ("busy", Status::Busy),
            ("shell", Status::Busy),
            ("idle", Status::Idle),
            ("waiting", Status::Waiting),
        ] {
            assert_eq!(
                parse(file(7, "99", word).as_bytes(), 7, Some("99")),
                Some(Session {
                    status: want,
                    at: 1_796_590_951
                }),
                "{word}"
            );
        }
        // Without a start time to compare (no /proc), the pid decides.
        assert!(parse(file(7, "99", "idle").as_bytes(), 7, None).is_some());
    }

    #[test]
    fn a_stale_or_odd_file_is_no_answer() {
        // Another process's file, or the same pid started at another time.
        assert_eq!(parse(file(8, "99", "busy").as_bytes(), 7, Some("99")), None);
        assert_eq!(parse(file(7, "98", "busy").as_bytes(), 7, Some("99")), None);
        for bad in [
            "",
            "{",
            "[]",
            r#"{"pid":7}"#,
            r#"{"pid":7,"status":"busy"}"#,
        ] {
            assert_eq!(parse(bad.as_bytes(), 7, None), None, "{bad}");
        }
        assert_eq!(parse(file(7, "99", "dreaming").as_bytes(), 7, None), None);
    }

    #[test]
    fn the_file_of_the_pane_process_or_its_child_is_read() {
        let d = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let start = proc_start(me).expect("this process's start time");
        std::fs::create_dir(d.path().join("sessions")).unwrap();
        let write = |pid: u32, start: &str, status: &str| {
            std::fs::write(
                d.path().join(format!("sessions/{pid}.json")),
                file(pid, start, status),
            )
            .unwrap();
        };
        assert_eq!(read(d.path(), me), None, "no file");
        write(me, "1", "busy");
        assert_eq!(read(d.path(), me), None, "a stale file: another start");
        write(me, &start, "waiting");
        assert_eq!(read(d.path(), me).map(|s| s.status), Some(Status::Waiting));
        // A child: the pane's process is a launcher (a shell running sleep).
        let mut pane = std::process::Command::new("sh")
            .args(["-c", "sleep 30; :"])
            .spawn()
            .unwrap();
        let ppid = pane.id();
        let mut kids = Vec::new();
        for _ in 0..200 {
            kids = children(ppid);
            if !kids.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let cpid = kids[0];
        write(cpid, &proc_start(cpid).unwrap(), "idle");
        let found = read(d.path(), ppid).map(|s| s.status);
        let _ = std::process::Command::new("kill")
            .arg(cpid.to_string())
            .status();
        pane.kill().unwrap();
        pane.wait().unwrap();
        assert_eq!(found, Some(Status::Idle));
    }
}

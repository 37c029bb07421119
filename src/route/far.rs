//! The far entry point (docs/remote.md, "The far entry"): one hidden
//! subcommand, `fm far`, takes a typed request as data on stdin — one JSON
//! line (the envelope: the key, the task, the operation and its request),
//! then the body's bytes, if the request has one — runs the same use case
//! the captain's side would run locally, keeps its report under the key,
//! and prints that report as one JSON line. A failure is the line
//! `{"error": "<message>"}` and the error's own exit code. Nothing of
//! the request travels on a command line.
//!
//! The captain's side of the round trip is [`super::wire`].

use serde::{Deserialize, Serialize};

use super::Task;
use super::send::{self, SendRequest};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::task_id::TaskId;

pub use super::wire::{SUBCOMMAND, TOOL};

/// One far call as it arrives ([`super::wire::Envelope`] as sent): the
/// idempotency key, the task and the operation.
#[derive(Debug, Clone, Deserialize)]
struct Incoming {
    pub key: String,
    /// The task acted on; none for a board's operation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub task: String,
    #[serde(flatten)]
    pub op: Op,
}

/// The operations the far entry serves, each a typed request; the tag is
/// each request's [`super::wire::FarRequest::OP`].
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "op", content = "request", rename_all = "kebab-case")]
enum Op {
    Send(SendRequest),
    Press(super::press::PressRequest),
    Append(super::status::AppendRequest),
    Ack(super::ack::AckRequest),
    Check(super::dod::CheckRequest),
    Brief(super::brief::BriefChange),
    Board(super::board::BoardWrite),
    Dispatch(super::board::DispatchRequest),
    Broadcast(super::broadcast::BroadcastRequest),
    Lifecycle(super::lifecycle::LifecycleRequest),
    Review(super::review::ReviewRequest),
    Land(super::land::LandRequest),
    Setup(super::setup::SetupRequest),
}

#[derive(Serialize)]
struct Failure {
    error: String,
}

/// The most `fm far` reads of its stdin: the envelope and the largest
/// body a request takes (a message, a brief); past it the request is
/// refused as cut.
pub fn max_input(cfg: &Config) -> u64 {
    (cfg.send.max_body_bytes)
        .max(crate::remote::control::MAX_BRIEF_BYTES)
        .saturating_add(64 * 1024)
}

/// Runs the envelope of `input` (JSON line, then the body) in this home
/// and returns the exit code and the one line to print.
pub fn serve(home: &Home, cfg: &Config, input: &[u8]) -> (u8, String) {
    match serve_inner(home, cfg, input) {
        Ok(line) => (0, line),
        Err(e) => {
            let line = serde_json::to_string(&Failure {
                error: crate::error::describe(&e),
            })
            .unwrap_or_else(|_| "{\"error\":\"unprintable error\"}".into());
            (e.exit_code().max(1), line)
        }
    }
}

fn serve_inner(home: &Home, cfg: &Config, input: &[u8]) -> Result<String> {
    let (head, body) = match input.iter().position(|&b| b == b'\n') {
        Some(i) => (&input[..i], &input[i + 1..]),
        None => (input, &[][..]),
    };
    let env: Incoming = serde_json::from_slice(head)
        .map_err(|e| Error::usage(format!("fm far: unreadable request: {e}")))?;
    let key = env.key;
    // A board's operations act on this home's board, not on a task.
    let op = match env.op {
        Op::Board(write) => {
            crate::remote::kept::validate(&key)?;
            let now = crate::clock::now();
            let report = super::board::change_here(home, cfg, &write, Some(&key), now)?;
            return to_line(&report);
        }
        Op::Dispatch(_) => {
            crate::remote::kept::validate(&key)?;
            let now = crate::clock::now();
            return to_line(&super::board::dispatch_here(home, cfg, Some(&key), now)?);
        }
        // A broadcast acts on the tasks it names, each under the key.
        Op::Broadcast(mut req) => {
            crate::remote::kept::validate(&key)?;
            req.send.body = body.to_vec();
            crate::inbox::validate_body(cfg, &req.send.body)?;
            return to_line(&super::broadcast::serve_here(home, cfg, &req, &key)?);
        }
        // A project's set-up names no task.
        Op::Setup(req) => {
            let actor = crate::grant::Actor::from_env();
            return to_line(&super::setup::serve_here(home, cfg, &req, actor)?);
        }
        op => op,
    };
    let env = Incoming {
        key,
        task: env.task,
        op,
    };
    let id = TaskId::parse(&env.task)?;
    let task = Task::open(home, cfg, &id)?;
    let line = match env.op {
        Op::Send(mut req) => {
            req.body = body.to_vec();
            crate::remote::kept::validate(&env.key)?;
            crate::inbox::validate_body(cfg, &req.body)?;
            let r = crate::tmux::recipient::Recipient::load(home, cfg, &id)?;
            let report = send::send_here(
                home,
                cfg,
                &task,
                &req,
                Some(&env.key),
                crate::inbox::Ring::Now(&r),
            )?;
            to_line(&report)?
        }
        Op::Append(req) => to_line(&super::status::append_here(
            home,
            cfg,
            &task,
            &req,
            Some(&env.key),
        )?)?,
        Op::Ack(req) => to_line(&super::ack::ack_here(home, &task, &req, Some(&env.key))?)?,
        Op::Check(req) => to_line(&super::dod::check_here(home, cfg, &task, &req)?)?,
        Op::Press(req) => to_line(&super::press::press_here(home, cfg, &task, &req)?)?,
        Op::Review(req) => to_line(&crate::voyage::review::review_here(home, cfg, &task, &req)?)?,
        Op::Land(req) => to_line(&crate::voyage::land::land_here(home, cfg, &task, &req)?)?,
        Op::Board(_) | Op::Dispatch(_) | Op::Broadcast(_) | Op::Setup(_) => {
            return Err(Error::usage("fm far: this operation names no task"));
        }
        Op::Lifecycle(req) => {
            crate::remote::kept::validate(&env.key)?;
            task.here()?;
            let brief = if req.brings_brief {
                if body.len() as u64 > crate::remote::control::MAX_BRIEF_BYTES {
                    return Err(Error::usage(format!(
                        "the brief is over {} bytes",
                        crate::remote::control::MAX_BRIEF_BYTES
                    )));
                }
                Some(if req.brief_paths.is_empty() {
                    body.to_vec()
                } else {
                    super::lifecycle::rehome_brief(home, cfg, &id, body.to_vec(), &req.brief_paths)?
                })
            } else {
                None
            };
            to_line(&crate::remote::control::serve(
                home,
                cfg,
                &id,
                &req,
                Some(&env.key),
                brief,
            )?)?
        }
        Op::Brief(mut req) => {
            crate::remote::kept::validate(&env.key)?;
            if body.len() as u64 > crate::remote::control::MAX_BRIEF_BYTES {
                return Err(Error::usage(format!(
                    "the brief is over {} bytes",
                    crate::remote::control::MAX_BRIEF_BYTES
                )));
            }
            req.text = String::from_utf8(body.to_vec())
                .map_err(|_| Error::usage("the brief on stdin is not UTF-8"))?;
            to_line(&super::brief::change_here(
                home,
                cfg,
                &task,
                &req,
                Some(&env.key),
            )?)?
        }
    };
    Ok(line)
}

fn to_line(report: &impl Serialize) -> Result<String> {
    serde_json::to_string(report).map_err(|e| Error::External {
        program: "serde_json".into(),
        msg: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every operation a use case sends ([`super::super::wire::FarRequest::OP`])
    /// is one the far entry reads back: the wire and the dispatcher agree
    /// on each name without importing each other's use cases.
    #[test]
    fn every_op_sent_is_an_op_served() {
        use super::super::wire::FarRequest;
        let sent = [
            super::super::send::SendRequest::OP,
            super::super::press::PressRequest::OP,
            super::super::status::AppendRequest::OP,
            super::super::ack::AckRequest::OP,
            super::super::dod::CheckRequest::OP,
            super::super::brief::BriefChange::OP,
            super::super::board::BoardWrite::OP,
            super::super::board::DispatchRequest::OP,
            super::super::broadcast::BroadcastRequest::OP,
            super::super::lifecycle::LifecycleRequest::OP,
            super::super::review::ReviewRequest::OP,
            super::super::land::LandRequest::OP,
        ];
        for op in sent {
            let line = format!(r#"{{"key":"k","op":"{op}","request":null}}"#);
            let err = serde_json::from_str::<Incoming>(&line)
                .unwrap_err()
                .to_string();
            assert!(!err.contains("unknown variant"), "{op}: {err}");
        }
        let err = serde_json::from_str::<Incoming>(r#"{"key":"k","op":"nope","request":null}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown variant"), "{err}");
    }

    fn home() -> (tempfile::TempDir, Home, Config) {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        std::fs::create_dir_all(home.state_dir()).unwrap();
        std::fs::write(home.state_dir().join("t1.meta"), "kind=ship\n").unwrap();
        (d, home, Config::default())
    }

    fn send_line(key: &str, body: &str) -> Vec<u8> {
        let env = format!(
            r#"{{"key":"{key}","task":"t1","op":"send","request":{{"from":"captain","quiet":true,"tool":"fm-send"}}}}"#
        );
        format!("{env}\n{body}").into_bytes()
    }

    #[test]
    fn a_send_is_served_once_per_key_and_its_report_kept() {
        let (_d, home, cfg) = home();
        let (code, line) = serve(&home, &cfg, &send_line("k.1", "hello\n"));
        assert_eq!(code, 0, "{line}");
        let report: send::SendReport = serde_json::from_str(&line).unwrap();
        assert_eq!(
            report.to_string(),
            "queued t1 001.msg \u{b7} doorbell quiet"
        );
        // The same key and request: the kept report, no second record.
        assert_eq!(serve(&home, &cfg, &send_line("k.1", "hello\n")), (0, line));
        let inbox: Vec<_> = std::fs::read_dir(home.inbox(&TaskId::parse("t1").unwrap()))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".msg"))
            .collect();
        assert_eq!(inbox.len(), 1);
        // The key is bound to its request.
        let (code, line) = serve(&home, &cfg, &send_line("k.1", "other\n"));
        assert_eq!(code, 2);
        assert!(line.contains("was used for another request"), "{line}");
        // A request that does not parse is a usage error, as a line.
        let (code, line) = serve(&home, &cfg, b"{\"op\":\"nope\"}\n");
        assert_eq!(code, 2);
        assert!(
            line.starts_with("{\"error\":\"fm far: unreadable request"),
            "{line}"
        );
    }

    #[test]
    fn a_board_write_is_served_once_per_key_and_names_no_task() {
        let (_d, home, cfg) = home();
        let add = |key: &str, subject: &str| {
            format!(
                r#"{{"key":"{key}","op":"board","request":{{"write":"add","subject":"{subject}","description":"","assignee":null,"blocked_by":[],"priority":0,"require_approval":false}}}}"#
            )
            .into_bytes()
        };
        let (code, line) = serve(&home, &cfg, &add("b.1", "Fix it"));
        assert_eq!(code, 0, "{line}");
        let r: super::super::board::Changed = serde_json::from_str(&line).unwrap();
        assert_eq!(r.text(false).unwrap(), "T-001 pending\n");
        // The same key and request: the kept report, no second task.
        assert_eq!(serve(&home, &cfg, &add("b.1", "Fix it")), (0, line));
        let (code, line) = serve(&home, &cfg, &add("b.1", "Other"));
        assert_eq!(code, 2, "{line}");
        let (code, line) = serve(&home, &cfg, &add("b.2", "Other"));
        assert_eq!(code, 0, "{line}");
        assert!(line.contains("\"T-002\""), "{line}");
    }

    #[test]
    fn a_task_whose_far_meta_names_another_host_is_refused_there() {
        let (_d, home, _) = home();
        std::fs::write(home.state_dir().join("t1.meta"), "kind=ship\nhost=next\n").unwrap();
        let cfg = Config::from_parts(
            std::path::Path::new("firstmate.toml"),
            Some("[hosts.next]\ndestination = \"b\"\nhome = \"/h\"\n"),
            &[],
        )
        .unwrap();
        let (code, line) = serve(&home, &cfg, &send_line("k.2", "hi\n"));
        assert_eq!(code, 1, "{line}");
        assert!(line.contains("runs on host next"), "{line}");
    }
}

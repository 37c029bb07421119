//! The board task file (docs/spec/board.md#task-file, `docs/board.md`): `key=value` lines;
//! values escape `\` as `\\`, newline as `\n` and carriage return as
//! `\r`, so every value stays on one line; `comment=` repeats, one per
//! comment; unknown keys are kept and written back. [`parse`] never panics,
//! whatever the bytes, and `parse(&render(t)) == Ok(t)` for every task.

use super::{BoardId, Comment, Status, Task};

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

fn unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            // `\\`, and a lone `\` at the end, are one backslash.
            Some('\\') | None => out.push('\\'),
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
        }
    }
    out
}

fn opt(v: Option<&String>) -> String {
    v.map(String::as_str).map(escape).unwrap_or_default()
}

/// Renders the file. `parse(&render(t)) == Ok(t)` for every task.
pub fn render(t: &Task) -> String {
    let deps: Vec<String> = t.blocked_by.iter().map(BoardId::to_string).collect();
    let mut s = String::with_capacity(512);
    let mut kv = |k: &str, v: &str| {
        s.push_str(k);
        s.push('=');
        s.push_str(v);
        s.push('\n');
    };
    kv("id", &t.id.to_string());
    kv("subject", &escape(&t.subject));
    kv("status", t.status.as_str());
    kv("priority", &t.priority.to_string());
    kv("assignee", &opt(t.assignee.as_ref()));
    kv("owner", &opt(t.owner.as_ref()));
    kv("blocked_by", &deps.join(","));
    kv(
        "require_approval",
        if t.require_approval { "true" } else { "false" },
    );
    kv("dispatches", &t.dispatches.to_string());
    kv(
        "dispatch_seq",
        &t.dispatch_seq.map(|n| n.to_string()).unwrap_or_default(),
    );
    kv("result", &opt(t.result.as_ref()));
    kv("reason", &opt(t.reason.as_ref()));
    kv(
        "progress",
        &t.progress.map(|p| p.to_string()).unwrap_or_default(),
    );
    kv("step", &opt(t.step.as_ref()));
    kv("created_at", &t.created_at.to_string());
    kv("updated_at", &t.updated_at.to_string());
    kv("description", &escape(&t.description));
    for c in &t.comments {
        let kind = if c.blocker { "blocker" } else { "note" };
        kv(
            "comment",
            &format!("{} {} {kind}: {}", c.at, escape(&c.author), escape(&c.text)),
        );
    }
    for (k, v) in &t.extra {
        kv(k, v);
    }
    s
}

fn parse_comment(v: &str) -> Option<Comment> {
    let (at, rest) = v.split_once(' ')?;
    let (author, rest) = rest.split_once(' ')?;
    let (kind, text) = rest.split_once(": ")?;
    let blocker = match kind {
        "blocker" => true,
        "note" => false,
        _ => return None,
    };
    Some(Comment {
        at: at.parse().ok()?,
        author: unescape(author),
        blocker,
        text: unescape(text),
    })
}

/// Parses a task file. Invalid UTF-8 is decoded lossily; a missing or bad
/// `id`/`status`, or a malformed known field, is an error naming the key.
pub fn parse(bytes: &[u8]) -> std::result::Result<Task, String> {
    let text = match std::str::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    };
    let mut id = None;
    let mut status = None;
    let mut t = Task::new(BoardId(0), "", 0);
    let num = |k: &str, v: &str| {
        v.parse::<u64>()
            .map_err(|_| format!("{k}: not a number: {v:?}"))
    };
    let optv = |v: &str| (!v.is_empty()).then(|| unescape(v));
    for line in text.lines() {
        // CRs at a line's end are line-ending noise (a CRLF edit, a final
        // line without `\n`): drop them all, so that what `render` writes
        // back parses to the same task (found by fuzzing).
        let line = line.trim_end_matches('\r');
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            return Err(format!("line without '=': {line:?}"));
        };
        match k {
            "id" => id = Some(BoardId::parse(v).map_err(|_| format!("id: bad task id {v:?}"))?),
            "subject" => t.subject = unescape(v),
            "status" => {
                status =
                    Some(Status::parse(v).ok_or_else(|| format!("status: unknown status {v:?}"))?);
            }
            "priority" => {
                t.priority = v
                    .parse()
                    .map_err(|_| format!("priority: not a number: {v:?}"))?;
            }
            "assignee" => t.assignee = optv(v),
            "owner" => t.owner = optv(v),
            "blocked_by" => {
                t.blocked_by = v
                    .split(',')
                    .filter(|p| !p.trim().is_empty())
                    .map(|p| {
                        BoardId::parse(p.trim())
                            .map_err(|_| format!("blocked_by: bad task id {p:?}"))
                    })
                    .collect::<std::result::Result<_, _>>()?;
            }
            "require_approval" => {
                t.require_approval = match v {
                    "true" => true,
                    "false" | "" => false,
                    _ => return Err(format!("require_approval: not true/false: {v:?}")),
                }
            }
            "dispatches" => {
                t.dispatches = v
                    .parse()
                    .map_err(|_| format!("dispatches: not a number: {v:?}"))?;
            }
            "dispatch_seq" => t.dispatch_seq = if v.is_empty() { None } else { Some(num(k, v)?) },
            "result" => t.result = optv(v),
            "reason" => t.reason = optv(v),
            "progress" => {
                t.progress = match v {
                    "" => None,
                    _ => Some(
                        v.parse::<u8>()
                            .ok()
                            .filter(|p| *p <= 100)
                            .ok_or(format!("progress: not 0-100: {v:?}"))?,
                    ),
                }
            }
            "step" => t.step = optv(v),
            "created_at" => t.created_at = num(k, v)?,
            "updated_at" => t.updated_at = num(k, v)?,
            "description" => t.description = unescape(v),
            "comment" => t
                .comments
                .push(parse_comment(v).ok_or_else(|| format!("comment: malformed: {v:?}"))?),
            _ => t.extra.push((k.to_string(), v.to_string())),
        }
    }
    t.id = id.ok_or("missing id")?;
    t.status = status.ok_or("missing status")?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Task {
        let mut t = Task::new(BoardId(7), "fix \\ the\nlogin", 100);
        t.description = "two\r\nlines \\n literal".into();
        t.assignee = Some("w1".into());
        t.blocked_by = vec![BoardId(1), BoardId(1000)];
        t.priority = -3;
        t.dispatch_seq = Some(4);
        t.progress = Some(40);
        t.comments.push(Comment {
            at: 5,
            author: "w1".into(),
            blocker: true,
            text: "stuck: on\nthis".into(),
        });
        t.extra.push(("future_key".into(), "x=y".into()));
        t
    }

    #[test]
    fn render_parse_round_trip() {
        let t = sample();
        let text = render(&t);
        assert!(text.lines().count() >= 18, "{text}");
        assert_eq!(parse(text.as_bytes()).unwrap(), t);
    }

    #[test]
    fn trailing_carriage_returns_survive_a_rewrite() {
        // Found by fuzzing: an unknown key's `\r` was kept, then lost on rewrite.
        for raw in [
            &b"id=T-7\r\nstatus=pending\r\nfuture=x\r\n"[..],
            b"id=T-7\nstatus=pending\nfuture=x\r\r\n",
            b"id=T-7\nstatus=pending\nfuture=x\r",
        ] {
            let t = parse(raw).unwrap();
            assert_eq!(t.extra, [("future".to_string(), "x".to_string())]);
            assert_eq!(parse(render(&t).as_bytes()).unwrap(), t);
        }
    }

    #[test]
    fn hand_edits_are_tolerated_or_named() {
        let t = parse(b"# note\nid=T-2\nstatus=pending\nsubject=s\n\n").unwrap();
        assert_eq!((t.id, t.status), (BoardId(2), Status::Pending));
        assert!(parse(b"id=T-2\n").unwrap_err().contains("status"));
        assert!(
            parse(b"id=T-2\nstatus=weird\n")
                .unwrap_err()
                .contains("weird")
        );
        assert!(
            parse(b"id=T-2\nstatus=pending\npriority=high\n")
                .unwrap_err()
                .contains("priority")
        );
    }
}

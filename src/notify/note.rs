//! What one notification says: the wakes it carries, their event names
//! and the title and body every channel shows.

use crate::wakes::Wake;

/// The event a wake stands for: a `status` wake's verb (its text starts
/// with it, docs/spec/watch.md#wakes), or any other wake's kind.
pub fn event_of(w: &Wake) -> &str {
    if w.kind == "status" {
        let end = w.text.find([' ', ':']).unwrap_or(w.text.len());
        &w.text[..end]
    } else {
        &w.kind
    }
}

/// The cockpit's page of the decision a `needs-decision` wake opened
/// (`fm serve`, docs/spec/serve.md): `<base>/task/<id>/decision/<key>`,
/// without the token. `None` for any other wake.
pub fn decision_link(base: &str, w: &Wake) -> Option<String> {
    let rest = w.text.strip_prefix("needs-decision")?;
    let head = rest.split(':').next()?;
    let key = head
        .split_whitespace()
        .find_map(|t| t.strip_prefix("key="))
        .unwrap_or("default");
    if w.kind != "status" || !crate::status::valid_key(key) || !crate::status::valid_key(&w.task) {
        return None;
    }
    Some(format!(
        "{}/task/{}/decision/{key}",
        base.trim_end_matches('/'),
        w.task
    ))
}

/// One notification: a wake, or several that waited together (a burst in
/// one pass, the rate limit, a retry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub wakes: Vec<Wake>,
}

impl Note {
    /// `firstmate: schema needs-decision`, or `firstmate: 3 wakes`.
    pub fn title(&self) -> String {
        match self.wakes.as_slice() {
            [w] => format!("firstmate: {} {}", w.task, event_of(w)),
            ws => format!("firstmate: {} wakes", ws.len()),
        }
    }

    /// The wake's text, or one `task event: text` line per wake.
    pub fn body(&self) -> String {
        match self.wakes.as_slice() {
            [w] => w.text.clone(),
            ws => ws
                .iter()
                .map(|w| format!("{} {}: {}", w.task, event_of(w), w.text))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// One line: the title and the body, for a tmux message.
    pub fn line(&self) -> String {
        match self.wakes.as_slice() {
            [w] => format!("firstmate: {} {}: {}", w.task, event_of(w), w.text),
            ws => format!(
                "firstmate: {} wakes: {}",
                ws.len(),
                ws.iter()
                    .map(|w| format!("{} {}", w.task, event_of(w)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// The `{task}`, `{kind}` and `{text}` of a command: the wake's own,
    /// or, for several, the tasks and events joined with commas and the
    /// body.
    pub fn fields(&self) -> (String, String, String) {
        match self.wakes.as_slice() {
            [w] => (w.task.clone(), event_of(w).to_string(), w.text.clone()),
            ws => {
                let mut tasks: Vec<&str> = Vec::new();
                let mut events: Vec<&str> = Vec::new();
                for w in ws {
                    if !tasks.contains(&w.task.as_str()) {
                        tasks.push(&w.task);
                    }
                    if !events.contains(&event_of(w)) {
                        events.push(event_of(w));
                    }
                }
                (tasks.join(","), events.join(","), self.body())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wake(seq: u64, task: &str, kind: &str, text: &str) -> Wake {
        Wake {
            seq,
            epoch: 100,
            task: task.into(),
            kind: kind.into(),
            text: text.into(),
        }
    }

    #[test]
    fn a_status_wake_is_its_verb_any_other_its_kind() {
        let w = wake(1, "t", "status", "needs-decision key=db: postgres?");
        assert_eq!(event_of(&w), "needs-decision");
        assert_eq!(event_of(&wake(1, "t", "status", "done: shipped")), "done");
        assert_eq!(event_of(&wake(1, "t", "status", "")), "");
        assert_eq!(
            event_of(&wake(1, "t", "escalation", "001.msg after 3")),
            "escalation"
        );
    }

    #[test]
    fn one_wake_and_several() {
        let one = Note {
            wakes: vec![wake(1, "schema", "status", "needs-decision key=db: pg?")],
        };
        assert_eq!(one.title(), "firstmate: schema needs-decision");
        assert_eq!(one.body(), "needs-decision key=db: pg?");
        assert_eq!(
            one.line(),
            "firstmate: schema needs-decision: needs-decision key=db: pg?"
        );
        let many = Note {
            wakes: vec![
                wake(1, "schema", "status", "blocked: net"),
                wake(2, "deaf", "escalation", "001.msg"),
                wake(3, "schema", "dead-agent", "pane gone"),
            ],
        };
        assert_eq!(many.title(), "firstmate: 3 wakes");
        assert_eq!(
            many.body(),
            "schema blocked: blocked: net\ndeaf escalation: 001.msg\nschema dead-agent: pane gone"
        );
        assert_eq!(
            many.line(),
            "firstmate: 3 wakes: schema blocked, deaf escalation, schema dead-agent"
        );
        let (t, k, x) = many.fields();
        assert_eq!(t, "schema,deaf");
        assert_eq!(k, "blocked,escalation,dead-agent");
        assert_eq!(x, many.body());
    }

    #[test]
    fn a_decisions_wake_links_its_page_without_the_token() {
        let w = wake(
            1,
            "t1",
            "status",
            "needs-decision key=db: postgres or sqlite?",
        );
        assert_eq!(
            decision_link("https://fleet.example/", &w).as_deref(),
            Some("https://fleet.example/task/t1/decision/db")
        );
        let w = wake(1, "t1", "status", "needs-decision: which?");
        assert_eq!(
            decision_link("http://h:1", &w).as_deref(),
            Some("http://h:1/task/t1/decision/default")
        );
        assert_eq!(
            decision_link("http://h", &wake(1, "t1", "status", "blocked key=x: y")),
            None
        );
        assert_eq!(
            decision_link("http://h", &wake(1, "t1", "dialog", "needs-decision")),
            None
        );
    }
}

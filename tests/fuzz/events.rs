//! Event lines (docs/spec/events.md) and task ids (docs/spec/home.md#task-ids).

use proptest::prelude::*;

use crate::{bytes, fuzz};
use firstmate::{TaskId, events};

#[test]
fn event_lines_and_task_ids() {
    let raw = prop_oneof![
        bytes(120).boxed(),
        "\\PC{0,70}".prop_map(String::into_bytes).boxed(),
        "\\{[^\n]{0,40}\\}?".prop_map(String::into_bytes).boxed()
    ];
    fuzz("events+ids/parse", raw, |b| {
        let _ = events::parse_line(&b);
        let s = String::from_utf8_lossy(&b);
        if let Ok(id) = TaskId::parse(&s) {
            // One safe path component: never `..`, a separator or hidden.
            prop_assert_eq!(std::path::Path::new(id.as_str()).components().count(), 1);
            prop_assert!(!id.as_str().contains("..") && !id.as_str().contains('/'));
            prop_assert!(id.as_str().len() <= 64 && !id.as_str().starts_with('.'));
            // Never one of the home's own names under data/ or state/.
            let lower = id.as_str().to_ascii_lowercase();
            prop_assert!(!["board", "archive", "events", "wakes"].contains(&lower.as_str()));
        }
        Ok(())
    });
}

fn entry() -> impl Strategy<Value = events::Entry> {
    use events::{Entry, Event, Tool, Transition};
    let event = prop_oneof![
        (any::<String>(), any::<String>())
            .prop_map(|(verb, key)| Event::StatusAppended { verb, key }),
        (
            any::<u64>(),
            proptest::option::of(any::<usize>()),
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(seq, bytes, rang, ff)| Event::InboxQueued {
                seq,
                bytes,
                doorbell: rang.then_some("rang"),
                delivery: ff.then_some("fire-and-forget"),
                leg: None,
            }),
        (
            any::<String>(),
            any::<bool>(),
            proptest::option::of(any::<u64>())
        )
            .prop_map(|(text, blocker, wake_seq)| Event::BoardCommented {
                change: Transition {
                    from: "pending",
                    status: "failed",
                },
                text,
                blocker,
                wake_seq,
            }),
        Just(Event::ControlStopped),
    ];
    let tool = proptest::sample::select(vec![Tool::Send, Tool::Board, Tool::Watch]);
    (any::<u64>(), tool, any::<String>(), any::<String>(), event)
        .prop_map(|(ts, tool, task, actor, event)| Entry::new(ts, tool, &task, event).by(&actor))
}

#[test]
fn event_lines_round_trip() {
    fuzz("events/render-round-trip", entry(), |e| {
        let line = e.to_line();
        prop_assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
        let m = events::parse_line(line.trim_end().as_bytes()).expect("one JSON object");
        prop_assert_eq!(m["ts"].as_u64(), Some(e.ts));
        prop_assert_eq!(m["tool"].as_str(), Some(e.tool.as_str()));
        prop_assert_eq!(m["task"].as_str(), Some(e.task.as_str()));
        prop_assert!(!e.actor.is_empty());
        prop_assert_eq!(m["actor"].as_str(), Some(e.actor.as_str()));
        let action = e.action();
        prop_assert!(action.contains('.'), "action {:?}", action);
        prop_assert_eq!(m["action"].as_str(), Some(action.as_str()));
        let keys: Vec<&String> = m.keys().collect();
        prop_assert!(
            keys.windows(2).all(|w| w[0] < w[1]),
            "keys not sorted: {:?}",
            keys
        );
        Ok(())
    });
}

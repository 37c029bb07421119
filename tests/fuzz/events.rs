//! Event lines (SPEC §12) and task ids (SPEC §1.3).

use proptest::prelude::*;

use crate::{bytes, fuzz};
use firstmate::{TaskId, events};

#[test]
fn event_lines_and_task_ids() {
    let raw = prop_oneof![
        bytes(120).boxed(),
        "\\{[^\n]{0,40}\\}?".prop_map(String::into_bytes).boxed()
    ];
    fuzz("events+ids/parse", raw, |b| {
        let _ = events::parse_line(&b);
        let s = String::from_utf8_lossy(&b);
        if let Ok(id) = TaskId::parse(&s) {
            prop_assert!(!id.as_str().contains("..") && !id.as_str().contains('/'));
            prop_assert!(id.as_str().len() <= 64 && !id.as_str().starts_with('.'));
        }
        Ok(())
    });
}

#[test]
fn event_lines_round_trip() {
    fuzz(
        "events/render-round-trip",
        (
            any::<u64>(),
            any::<String>(),
            any::<String>(),
            any::<String>(),
        ),
        |(ts, actor, key, value)| {
            let line = events::Event::at(ts, "fm-test", "t1", "x.y")
                .actor(&actor)
                .field(&format!("f{key}"), value.clone())
                .to_line();
            prop_assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
            let m = events::parse_line(line.trim_end().as_bytes()).expect("one JSON object");
            prop_assert_eq!(m["ts"].as_u64(), Some(ts));
            let want = if actor.is_empty() { "captain" } else { &actor };
            prop_assert_eq!(m["actor"].as_str(), Some(want));
            Ok(())
        },
    );
}

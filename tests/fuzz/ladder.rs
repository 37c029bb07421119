//! The ladder files (docs/spec/watch.md#ladder-files) and the busy record
//! (docs/spec/crew-state.md#busy-record).

use proptest::prelude::*;

use crate::{bytes, fuzz};
use firstmate::inbox::ladder_files;
use firstmate::status::busy::BusyRecord;

#[test]
fn ladder_files_parse_or_refuse() {
    let ring = prop_oneof![
        bytes(64).boxed(),
        "[0-9]{0,4}\\.msg\t[0-9 ]{0,22}\t[0-9a ]{0,22}(\t.{0,3})?\r?\n?"
            .prop_map(String::into_bytes)
            .boxed(),
    ];
    fuzz("ladder/parse", ring, |b| {
        if let Some(s) = ladder_files::RingState::parse(&b) {
            // A parsed state names a record: its line starts with that name.
            let name = firstmate::inbox::record_name(s.seq);
            let text = String::from_utf8_lossy(&b);
            prop_assert!(text.trim_start().starts_with(&name));
            prop_assert_eq!(ladder_files::RingState::parse(&s.render()), Some(s));
        }
        Ok(())
    });
}

#[test]
fn ladder_ring_state_round_trips() {
    fuzz(
        "ladder/render-round-trip",
        // Every record number a name can hold (1 to 19 digits).
        (1u64..10_000_000_000_000_000_000, any::<u64>(), any::<u64>()),
        |(seq, count, last)| {
            let s = ladder_files::RingState { seq, count, last };
            prop_assert_eq!(ladder_files::RingState::parse(&s.render()), Some(s));
            Ok(())
        },
    );
}

#[test]
fn busy_records_parse_or_read_as_not_busy() {
    let rec = prop_oneof![
        bytes(64).boxed(),
        "(busy|idle|BUSY|)[ \t]{0,2}[0-9a-z-]{0,22}[ \t]{0,2}[^\n]{0,8}\n?"
            .prop_map(String::into_bytes)
            .boxed(),
    ];
    fuzz(
        "busy/parse",
        (rec, proptest::option::of(any::<u64>())),
        |(b, m)| {
            let busy = BusyRecord::parse(&b).is_some_and(|r| r.busy_since(m));
            let _ = BusyRecord::parse(&b);
            if busy {
                prop_assert!(String::from_utf8_lossy(&b).trim_start().starts_with("busy"));
            }
            Ok(())
        },
    );
}

#[test]
fn busy_records_round_trip() {
    fuzz(
        "busy/render-round-trip",
        (any::<bool>(), any::<u64>(), any::<String>(), any::<u64>()),
        |(busy, at, source, mtime)| {
            let line = firstmate::status::busy::render(busy, at, &source);
            prop_assert_eq!(line.split_whitespace().count(), 3, "{:?}", line);
            prop_assert_eq!(
                BusyRecord::parse(line.as_bytes()).is_some_and(|r| r.busy_since(None)),
                busy
            );
            let rec = BusyRecord::parse(line.as_bytes()).expect("crew-state reads it");
            prop_assert_eq!((rec.busy, rec.at), (busy, at));
            prop_assert!(!rec.source.is_empty() && !rec.source.contains(char::is_whitespace));
            prop_assert_eq!(
                BusyRecord::parse(line.as_bytes()).is_some_and(|r| r.busy_since(Some(mtime))),
                busy && at >= mtime
            );
            Ok(())
        },
    );
}

#[test]
fn watcher_offsets_parse_to_a_fixed_point() {
    use firstmate::watch::status_wakes::Offsets;
    let line = "[a-z0-9]{0,6}\t[0-9]{0,21}\t[0-9a]{0,21}(\t[0-9]{0,3})?\r?"
        .prop_map(String::from)
        .boxed();
    let file = prop_oneof![bytes(200).boxed(), crate::lines_of(line, 8).boxed()];
    fuzz("watch-offsets/parse", file, |b| {
        let once = Offsets::parse(&b);
        let again = Offsets::parse(once.render().as_bytes());
        prop_assert_eq!(again.render(), once.render());
        Ok(())
    });
}

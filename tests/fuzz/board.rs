//! Board task files (docs/spec/board.md#task-file), run records
//! (docs/spec/crew-state.md#run-record), wake lines
//! (docs/spec/watch.md#wakes) and the chain trace's reading of `events.jsonl`
//! (docs/spec/chains.md).

use std::collections::HashSet;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::{Outcome, bytes, fuzz, lines_of};
use firstmate::board::{self, BoardId, Comment, Status, Task};
use firstmate::crew_state::{facts::RunRecord, trace};
use firstmate::wakes::{self, Wake};

fn board_ish() -> BoxedStrategy<String> {
    let key = proptest::sample::select(vec![
        "id",
        "subject",
        "status",
        "priority",
        "assignee",
        "blocked_by",
        "require_approval",
        "dispatches",
        "dispatch_seq",
        "progress",
        "created_at",
        "comment",
        "description",
        "future",
        "#",
        "",
    ]);
    let value = prop_oneof![
        "T-[0-9]{0,4}",
        "[0-9-]{0,22}",
        proptest::sample::select(
            board::Status::ALL
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
        )
        .prop_map(str::to_string),
        "(T-[0-9]{1,3},?){0,3}",
        "[0-9]{1,3} [a-z ]{0,5}(note|blocker|x)?: ?[^\n]{0,10}",
        "[^\n]{0,16}",
        "(true|false|yes)",
    ];
    prop_oneof![
        8 => (key, value).prop_map(|(k, v)| format!("{k}={v}")),
        1 => "[^\n]{0,12}",
    ]
    .boxed()
}

fn check_board(b: &[u8]) -> Outcome {
    if let Ok(t) = board::parse(b) {
        prop_assert!(t.id.0 > 0);
        prop_assert!(t.progress.is_none_or(|p| p <= 100));
        let again = board::parse(board::render(&t).as_bytes()).map_err(TestCaseError::fail)?;
        prop_assert_eq!(again, t, "render→parse of a parsed task changed it");
    }
    Ok(())
}

#[test]
fn board_files_from_raw_bytes() {
    fuzz("board/bytes", bytes(300), |b| check_board(&b));
}

#[test]
fn board_files_that_look_like_board_files() {
    let file = (lines_of(board_ish(), 20), any::<bool>()).prop_map(|(mut b, head)| {
        if head {
            let mut f = b"id=T-7\nstatus=pending\n".to_vec();
            f.append(&mut b);
            f
        } else {
            b
        }
    });
    fuzz("board/structured", file, |b| check_board(&b));
}

fn task() -> impl Strategy<Value = Task> {
    let id = "[A-Za-z0-9][A-Za-z0-9._-]{0,8}";
    let comment = (any::<u64>(), id, any::<bool>(), any::<String>()).prop_map(
        |(at, author, blocker, text)| Comment {
            at,
            author,
            blocker,
            text,
        },
    );
    let extra = (
        "[a-z_]{1,8}".prop_filter("an unknown key", |k| {
            !matches!(
                k.as_str(),
                "id" | "subject"
                    | "status"
                    | "priority"
                    | "assignee"
                    | "owner"
                    | "blocked_by"
                    | "require_approval"
                    | "dispatches"
                    | "dispatch_seq"
                    | "result"
                    | "reason"
                    | "progress"
                    | "step"
                    | "created_at"
                    | "updated_at"
                    | "description"
                    | "comment"
            )
        }),
        "[^\n\r]{0,12}",
    );
    let opt = || proptest::option::of(any::<String>().prop_filter("non-empty", |s| !s.is_empty()));
    (
        (
            1u64..1_000_000_000_000_000_000,
            any::<String>(),
            any::<String>(),
            proptest::sample::select(Status::ALL.to_vec()),
        ),
        (
            proptest::option::of(id),
            opt(),
            any::<i64>(),
            vec(1u64..100_000, 0..4),
        ),
        (
            any::<bool>(),
            any::<u32>(),
            proptest::option::of(any::<u64>()),
            opt(),
            opt(),
        ),
        (
            proptest::option::of(0u8..=100),
            opt(),
            vec(comment, 0..3),
            any::<u64>(),
            any::<u64>(),
        ),
        vec(extra, 0..2),
    )
        .prop_map(|(a, b, c, d, extra)| {
            let mut t = Task::new(BoardId(a.0), &a.1, d.3);
            t.description = a.2;
            t.status = a.3;
            (t.assignee, t.owner, t.priority) = (b.0, b.1, b.2);
            t.blocked_by = b.3.into_iter().map(BoardId).collect();
            (
                t.require_approval,
                t.dispatches,
                t.dispatch_seq,
                t.result,
                t.reason,
            ) = c;
            (t.progress, t.step, t.comments) = (d.0, d.1, d.2);
            t.updated_at = d.4;
            t.extra = extra;
            t
        })
}

#[test]
fn board_tasks_round_trip() {
    fuzz("board/render-round-trip", task(), |t| {
        let back = board::parse(board::render(&t).as_bytes()).map_err(TestCaseError::fail)?;
        prop_assert_eq!(back, t);
        Ok(())
    });
}

#[test]
fn board_ids_parse_or_refuse() {
    let raw = prop_oneof![
        "[Tt]?-?[0-9]{0,22}(\\.task)?",
        "T-[0-9]{1,6}\\.task",
        "[^\n]{0,10}"
    ];
    fuzz("board/ids", raw, |raw| {
        if let Ok(id) = BoardId::parse(&raw) {
            prop_assert!(id.0 > 0);
            prop_assert_eq!(BoardId::parse(&id.to_string()).ok(), Some(id));
            prop_assert_eq!(BoardId::from_file_name(&format!("{id}.task")), Some(id));
        }
        if let Some(id) = BoardId::from_file_name(&raw) {
            prop_assert_eq!(format!("{id}.task"), raw);
        }
        Ok(())
    });
}

#[test]
fn run_records_parse() {
    let line = prop_oneof![
        "(status|branch|head|gate|findings|pr)=[^\n]{0,14}",
        "[a-z]{0,6}=?[^\n]{0,8}",
    ]
    .boxed();
    let rec = prop_oneof![bytes(200).boxed(), lines_of(line, 10).boxed()];
    fuzz(
        "run-record/parse",
        (rec, proptest::option::of(any::<u64>())),
        |(b, m)| {
            let r = RunRecord::parse(&b, m);
            prop_assert_eq!(r.status.trim(), r.status.as_str());
            prop_assert_eq!(r.mtime, m);
            Ok(())
        },
    );
}

#[test]
fn wake_lines_parse_or_are_skipped() {
    let line = prop_oneof![
        "[0-9]{0,21}\t[0-9]{0,21}\t[a-z0-9-]{0,6}\t[a-z-]{0,10}\t[^\n]{0,20}",
        "[0-9\t]{0,6}[^\n]{0,12}",
    ]
    .boxed();
    let log = prop_oneof![bytes(300).boxed(), lines_of(line, 12).boxed()];
    fuzz("wakes/parse", log, |b| {
        let all = wakes::parse_all(&b);
        let complete = firstmate::fsx::complete_lines(&b);
        prop_assert!(all.len() <= complete.iter().filter(|&&c| c == b'\n').count());
        for w in all {
            let line = w.to_line();
            let back = wakes::parse_line(line.trim_end_matches('\n').as_bytes());
            prop_assert_eq!(back, Some(w));
        }
        Ok(())
    });
}

#[test]
fn wake_lines_round_trip() {
    let wake = (
        any::<u64>(),
        any::<u64>(),
        any::<String>(),
        any::<String>(),
        any::<String>(),
    );
    fuzz(
        "wakes/render-round-trip",
        wake,
        |(seq, epoch, task, kind, text)| {
            // Writers pass every field through `clean` (no control bytes).
            let w = Wake {
                seq,
                epoch,
                task: wakes::clean(&task),
                kind: wakes::clean(&kind),
                text: wakes::clean(&text),
            };
            let line = w.to_line();
            prop_assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
            prop_assert_eq!(wakes::parse_all(line.as_bytes()), vec![w]);
            Ok(())
        },
    );
}

#[test]
fn chain_trace_reads_any_event_log() {
    let line = prop_oneof![
        "\\{\"ts\":[0-9]{1,21},\"task\":\"(a|b)\",\"actor\":\"[a-z]{0,3}\",\"action\":\"[a-z.]{0,6}\"\\}",
        "[^\n]{0,20}",
    ]
    .boxed();
    let log = prop_oneof![bytes(300).boxed(), lines_of(line, 12).boxed()];
    let tasks: HashSet<&str> = ["a", "b"].into_iter().collect();
    fuzz("trace/events", log, |b| {
        let out = trace::entries(&b, &tasks);
        for m in &out {
            let _ = trace::markdown(m);
        }
        let sorted = out
            .windows(2)
            .all(|w| w[0]["ts"].as_u64().unwrap_or(0) <= w[1]["ts"].as_u64().unwrap_or(0));
        prop_assert!(sorted, "trace entries out of time order");
        Ok(())
    });
}

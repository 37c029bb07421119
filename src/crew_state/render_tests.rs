//! The fleet table and line as the captain reads them.

use super::*;
use crate::crew_state::Source;

fn row(id: &str, state: State, detail: &str) -> Row {
    Row {
        id: id.into(),
        state,
        source: Source::StatusLog,
        detail: detail.into(),
        age_secs: Some(125),
        inbox_pending: 2,
        open_decisions: vec![],
        current_at: Some(1_000),
        attention: None,
        project: None,
        pane: None,
        tmux_socket: String::new(),
        host: None,
        usage: None,
    }
}

#[test]
fn one_line_omits_an_empty_detail() {
    assert_eq!(
        line(&row("a", State::Done, "shipped"), false),
        "state: done \u{b7} source: status-log \u{b7} shipped"
    );
    assert_eq!(
        line(&row("a", State::Done, ""), false),
        "state: done \u{b7} source: status-log"
    );
    assert!(line(&row("a", State::Done, ""), true).contains("\x1b[34mdone\x1b[0m"));
}

#[test]
fn the_age_cell_words_an_age_as_the_clock_does() {
    for secs in [
        0,
        1,
        59,
        60,
        61,
        3_599,
        3_600,
        86_399,
        86_400,
        10_000_000,
        u64::MAX,
    ] {
        let mut r = row("a", State::Working, "");
        r.age_secs = Some(secs);
        let mut cell = String::new();
        push_age(&mut cell, &r);
        assert_eq!(cell, format!("{} ago", crate::clock::age(secs)), "{secs}");
    }
    let mut r = row("a", State::Working, "");
    r.age_secs = None;
    let mut cell = String::new();
    push_age(&mut cell, &r);
    assert_eq!(cell, "-");
}

#[test]
fn cells_are_sanitised_and_measured_in_characters() {
    let mut r = row("\u{e9}\u{e9}\u{e9}", State::Working, "\u{1b}[2Jwiped");
    r.attention = Some(crate::crew_state::Attention::Decision {
        key: "k\u{9b}".into(),
        text: String::new(),
        at: None,
    });
    let t = table(&[r, row("bb", State::Idle, "x")], false);
    assert_eq!(
        t[1],
        "\u{e9}\u{e9}\u{e9}  working  status-log  2m ago  2      0     decision k\\u{9b}  \\x1b[2Jwiped"
    );
    assert_eq!(
        t[2],
        "bb   idle     status-log  2m ago  2      0     -                 x"
    );
}

#[test]
fn the_table_printed_in_blocks_on_two_threads_is_the_table_written_whole() {
    let mut t = Table::new(false);
    for i in 0..200 {
        let detail = "x".repeat(i % 13);
        t.push(&row(&format!("t{i}"), State::Working, &detail));
    }
    let mut whole = Text::new();
    t.write(0..=t.len(), &mut whole);
    for batch in [1, 2, 7, 100, 201, 202, 1000] {
        let mut got = String::new();
        let mut blocks = 0;
        t.print(batch, &mut |b| {
            got.push_str(b);
            blocks += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(got, whole.as_str(), "{batch}");
        assert_eq!(blocks, 201usize.div_ceil(batch), "{batch}");
    }
    // A failing write stops the printing at once.
    let mut calls = 0;
    let err = t.print(3, &mut |_| {
        calls += 1;
        Err(crate::Error::usage("closed"))
    });
    assert!(err.is_err());
    assert_eq!(calls, 1);
}

#[test]
fn table_aligns_columns() {
    let t = table(
        &[
            row("a", State::Working, "x y"),
            row("long-id", State::Blocked, ""),
        ],
        false,
    );
    assert_eq!(
        t[0],
        "ID       STATE    SOURCE      AGE     INBOX  OPEN  WAITING  DETAIL"
    );
    assert_eq!(
        t[1],
        "a        working  status-log  2m ago  2      0     -        x y"
    );
    assert_eq!(t[2], "long-id  blocked  status-log  2m ago  2      0     -");
}

#[test]
fn table_says_why_a_worker_waits() {
    let mut r = row("q1", State::Idle, "agent alive, no status yet");
    r.attention = Some(crate::crew_state::Attention::Escalated {
        record: "001.msg".into(),
        unread: 1,
        rings: 3,
        at: None,
    });
    let t = table(&[r], false);
    assert_eq!(
        t[1],
        "q1  idle   status-log  2m ago  2      0     1 message unread, 3 rings  agent alive, no status yet"
    );
}

#[test]
fn a_host_column_follows_id_when_a_task_is_remote() {
    let mut far = row("far-1", State::Working, "x");
    far.host = Some("box".into());
    let t = table(&[row("a", State::Idle, ""), far], true);
    assert_eq!(
        t[0],
        "ID     HOST  STATE    SOURCE      AGE     INBOX  OPEN  WAITING  DETAIL"
    );
    assert_eq!(
        t[1],
        "a      -     \x1b[2midle\x1b[0m     status-log  2m ago  2      0     -"
    );
    assert_eq!(
        t[2],
        "far-1  box   \x1b[32mworking\x1b[0m  status-log  2m ago  2      0     -        x"
    );
}

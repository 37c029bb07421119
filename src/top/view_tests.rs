//! Frames of the dashboard, drawn on ratatui's `TestBackend` at a fixed
//! `now` (so every age is the same on every run) and snapshot-tested.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::{Color, Modifier};

use super::*;
use crate::crew_state::{Attention, OpenDecision, Source, State};
use crate::top::app::Effect;
use crate::top::seen::FeedLine;
use crate::wakes::Wake;

/// 2026-11-30T09:15:02Z.
const NOW: u64 = 1_796_030_102;

fn row(id: &str, state: State, detail: &str, attention: Option<Attention>) -> Row {
    Row {
        id: id.into(),
        state,
        source: Source::StatusLog,
        detail: detail.into(),
        age_secs: Some(300),
        inbox_pending: 0,
        open_decisions: vec![],
        current_at: Some(NOW - 300),
        attention,
        project: Some("shop".into()),
        pane: Some("%3".into()),
        tmux_socket: String::new(),
        host: None,
        usage: None,
    }
}

fn fleet() -> Vec<Row> {
    let mut schema = row(
        "schema",
        State::Parked,
        "postgres or sqlite?",
        Some(Attention::Decision {
            key: "schema".into(),
            text: "postgres or sqlite?".into(),
            at: Some(NOW - 180),
        }),
    );
    schema.open_decisions = vec![OpenDecision {
        key: "schema".into(),
        verb: "needs-decision".into(),
        text: "postgres or sqlite?".into(),
        at: Some(NOW - 180),
    }];
    let mut deaf = row(
        "deaf-worker",
        State::Idle,
        "agent alive, no status yet",
        Some(Attention::Escalated {
            record: "001.msg".into(),
            unread: 1,
            rings: 3,
            at: Some(NOW - 40),
        }),
    );
    deaf.inbox_pending = 1;
    deaf.current_at = None;
    deaf.project = None;
    vec![
        row("login-fix", State::Working, "busy (screen)", None),
        schema,
        deaf,
        row(
            "gone",
            State::Exited,
            "pane gone",
            Some(Attention::DeadAgent {
                which: "pane gone".into(),
                unread: 0,
            }),
        ),
        row("docs", State::Done, "PR https://x/pull/7", None),
    ]
}

fn app() -> App {
    let mut a = App::new("/fleet");
    a.set_rows(fleet());
    a.new_wakes = 2;
    a
}

fn frame(app: &mut App, w: u16, h: u16, colour: bool) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    app.scroll_into_view(list_rows(app, w, h));
    t.draw(|f| draw(f, app, NOW, Palette { colour })).unwrap();
    t
}

fn press(app: &mut App, code: KeyCode) -> Option<Effect> {
    app.key(KeyEvent::new(code, KeyModifiers::NONE))
}

#[test]
fn the_fleet_list() {
    // Two lines more than the rows need: the selected row's decision
    // shows under the list.
    let t = frame(&mut app(), 110, 12, true);
    insta::assert_snapshot!(t.backend());
}

#[test]
fn colours_per_state_and_monochrome() {
    let cell_at = |t: &Terminal<TestBackend>, x: u16, y: u16| t.backend().buffer()[(x, y)].clone();
    let t = frame(&mut app(), 110, 10, true);
    let text: Vec<String> = (0..10)
        .map(|y| {
            (0..110)
                .map(|x| cell_at(&t, x, y).symbol().to_string())
                .collect()
        })
        .collect();
    let y = text.iter().position(|l| l.contains("login-fix")).unwrap() as u16;
    let x = text[y as usize].find("working").unwrap() as u16;
    assert_eq!(cell_at(&t, x, y).fg, Color::Green);
    let y = text.iter().position(|l| l.contains("schema")).unwrap() as u16;
    let x = text[y as usize].find("needs decision").unwrap() as u16;
    let reason = cell_at(&t, x, y);
    assert_eq!(reason.fg, Color::Yellow);
    assert!(reason.modifier.contains(Modifier::BOLD));
    assert!(
        reason.modifier.contains(Modifier::REVERSED),
        "the selected row"
    );
    let mono = frame(&mut app(), 110, 10, false);
    for y in 0..10 {
        for x in 0..110 {
            let c = cell_at(&mono, x, y);
            assert_eq!((c.fg, c.bg), (Color::Reset, Color::Reset), "({x},{y})");
        }
    }
    assert!(cell_at(&mono, x, y).modifier.contains(Modifier::BOLD));
}

#[test]
fn peek_shows_the_workers_screen() {
    let mut a = app();
    a.show_peek(
        "schema",
        (1..=20)
            .map(|i| format!("line {i}"))
            .chain(["stand-in> ".into()])
            .collect(),
    );
    let t = frame(&mut a, 80, 10, true);
    insta::assert_snapshot!(t.backend());
}

#[test]
fn sending_a_message() {
    let mut a = app();
    press(&mut a, KeyCode::Char('s'));
    for c in "use sqlite".chars() {
        press(&mut a, KeyCode::Char(c));
    }
    let t = frame(&mut a, 110, 10, true);
    insta::assert_snapshot!(t.backend());
}

#[test]
fn picking_a_decision() {
    let mut a = app();
    let mut rows = fleet();
    rows[1].open_decisions.push(OpenDecision {
        key: "ui".into(),
        verb: "needs-decision".into(),
        text: "tabs or spaces?".into(),
        at: None,
    });
    a.set_rows(rows);
    press(&mut a, KeyCode::Char('r'));
    let t = frame(&mut a, 110, 14, true);
    insta::assert_snapshot!(t.backend());
}

#[test]
fn the_wakes_feed() {
    let mut a = app();
    let w = |seq, task: &str, kind: &str, text: &str, new| FeedLine {
        wake: Wake {
            seq,
            epoch: NOW - 600 + seq * 60,
            task: task.into(),
            kind: kind.into(),
            text: text.into(),
        },
        new,
        host: None,
    };
    a.show_wakes(vec![
        w(1, "docs", "status", "done: PR https://x/pull/7", false),
        w(
            2,
            "schema",
            "status",
            "needs-decision key=schema: postgres or sqlite?",
            true,
        ),
        w(
            3,
            "deaf-worker",
            "escalation",
            "001.msg unacknowledged after 3 rings",
            true,
        ),
    ]);
    let t = frame(&mut a, 90, 8, true);
    insta::assert_snapshot!(t.backend());
}

#[test]
fn a_hosts_wake_names_its_task_at_its_host() {
    let mut a = app();
    let line = |task: &str, host: Option<&str>| FeedLine {
        wake: Wake {
            seq: 1,
            epoch: NOW - 60,
            task: task.into(),
            kind: "status".into(),
            text: "done: x".into(),
        },
        new: true,
        host: host.map(String::from),
    };
    a.show_wakes(vec![line("docs", None), line("api", Some("box2"))]);
    let screen = format!("{}", frame(&mut a, 90, 8, true).backend());
    assert!(screen.contains("api@box2  status"), "{screen}");
    assert!(screen.contains("docs      status"), "{screen}");
    assert!(!screen.contains("docs@"), "{screen}");
}

#[test]
fn help_filter_and_empty_fleets() {
    let mut a = app();
    press(&mut a, KeyCode::Char('?'));
    insta::assert_snapshot!("help", frame(&mut a, 100, 24, true).backend());
    press(&mut a, KeyCode::Char('x'));
    press(&mut a, KeyCode::Char('/'));
    for c in "nothing-like-it".chars() {
        press(&mut a, KeyCode::Char(c));
    }
    press(&mut a, KeyCode::Enter);
    insta::assert_snapshot!("filtered_out", frame(&mut a, 100, 5, true).backend());
    let mut empty = App::new("/fleet");
    empty.set_rows(vec![]);
    insta::assert_snapshot!("no_tasks", frame(&mut empty, 100, 5, true).backend());
}

#[test]
fn a_thousand_rows_draw_only_the_window() {
    let mut a = App::new("/fleet");
    a.set_rows(
        (0..1000)
            .map(|i| row(&format!("task-{i:04}"), State::Working, "busy", None))
            .collect(),
    );
    for _ in 0..500 {
        press(&mut a, KeyCode::Down);
    }
    let t = frame(&mut a, 100, 12, false);
    let screen = format!("{}", t.backend());
    assert!(screen.contains("\u{203a} task-0500"), "{screen}");
    assert!(!screen.contains("task-0000"));
    assert_eq!(screen.matches("task-0").count(), 8, "{screen}");
}

/// A long question is shown whole at 80 columns, wrapped under the list
/// for the selected row and again above the answer prompt of `r`.
#[test]
fn a_long_decision_wraps_at_80_columns_and_is_repeated_when_answering() {
    let question = "Should the importer keep reading rows after a malformed line (logging and counting each one) or stop at the first one so nothing partial is ever committed to the ledger?";
    let mut a = App::new("/fleet");
    let mut q = row(
        "import",
        State::Parked,
        "x",
        Some(Attention::Decision {
            key: "bad-rows".into(),
            text: question.into(),
            at: Some(NOW - 60),
        }),
    );
    q.open_decisions = vec![OpenDecision {
        key: "bad-rows".into(),
        verb: "needs-decision".into(),
        text: question.into(),
        at: Some(NOW - 60),
    }];
    a.set_rows(vec![q, row("other", State::Working, "busy", None)]);
    let joined = |screen: &str| {
        screen
            .lines()
            .map(|l| l.trim_matches('"').trim_end())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let screen = format!("{}", frame(&mut a, 80, 14, false).backend());
    assert!(
        screen.contains("import asks [bad-rows] (r answers)"),
        "{screen}"
    );
    assert!(joined(&screen).contains(question), "{screen}");
    assert!(
        screen.contains("other"),
        "the list keeps its rows: {screen}"
    );
    press(&mut a, KeyCode::Char('r'));
    let screen = format!("{}", frame(&mut a, 80, 14, false).backend());
    assert!(screen.contains("answering import [bad-rows]"), "{screen}");
    assert!(joined(&screen).contains(question), "{screen}");
    assert!(
        screen.contains("answer import [bad-rows] \u{203a}"),
        "{screen}"
    );
    assert_eq!(
        wrap("aaaa bb cccccccccc d", 4),
        ["aaaa", "bb", "cccc", "cccc", "cc d"]
    );
}

#[test]
fn the_usage_column_shows_once_a_row_was_counted_and_destructive_keys_ask() {
    let mut a = App::new("/fleet");
    let mut counted = row("counted", State::Working, "busy", None);
    counted.usage = Some(crate::usage::Tokens {
        input: 1000,
        output: 234,
        cache_read: 11_000,
        cache_write: 0,
        cost_micro_usd: Some(1_250_000),
    });
    a.set_rows(vec![row("plain", State::Working, "busy", None)]);
    let screen = format!("{}", frame(&mut a, 100, 8, false).backend());
    assert!(!screen.contains("USAGE"), "{screen}");
    a.set_rows(vec![row("plain", State::Working, "busy", None), counted]);
    let screen = format!("{}", frame(&mut a, 100, 8, false).backend());
    assert!(screen.contains("USAGE"), "{screen}");
    assert!(screen.contains("12.2k $1.25"), "{screen}");
    press(&mut a, KeyCode::Char('X'));
    let screen = format!("{}", frame(&mut a, 100, 8, false).backend());
    assert!(
        screen.contains("tear down plain? (y/n) worktree removed, state archived"),
        "{screen}"
    );
}

use super::*;
use crate::crew_state::Source;

fn row(id: &str, state: State, attention: Option<Attention>) -> Row {
    Row {
        id: id.into(),
        state,
        source: Source::StatusLog,
        detail: String::new(),
        age_secs: Some(60),
        inbox_pending: 0,
        open_decisions: vec![],
        current_at: Some(1_000),
        attention,
        project: None,
        pane: Some("%1".into()),
        tmux_socket: String::new(),
        host: None,
        usage: None,
    }
}

const NOW: u64 = 10_000;

#[test]
fn the_rows_that_need_you_come_in_tops_order_with_their_commands() {
    let mut remote = row("far", State::Exited, None);
    remote.attention = Some(Attention::DeadAgent {
        which: "pane gone".into(),
        unread: 0,
    });
    remote.host = Some("build1".into());
    let rows = vec![
        row("w1", State::Working, None),
        remote,
        row(
            "dlg",
            State::Working,
            Some(Attention::Dialog {
                which: "permission".into(),
            }),
        ),
        row(
            "q1",
            State::Parked,
            Some(Attention::Decision {
                key: "db".into(),
                text: "postgres or sqlite?".into(),
                at: Some(NOW - 180),
            }),
        ),
        row("d1", State::Done, None),
    ];
    let r = of(rows, NOW);
    assert_eq!(r.total, 5);
    assert_eq!(
        r.text(),
        "3 need you (5 workers: 2 working, 1 parked, 1 done, 1 exited):\n\
         q1  needs decision: db \u{2014} postgres or sqlite? (3m)\n\
         \x20 fm send q1 --resolve-key db -- '<answer>'\n\
         \x20 fm peek q1\n\
         dlg  waiting in a dialog: permission (2h)\n\
         \x20 fm attach dlg\n\
         \x20 fm send dlg --key Enter|Escape\n\
         far@build1  dead agent: pane gone (2h)\n\
         \x20 fm restore far\n\
         \x20 fm control far relaunch --note '<progress so far>'\n\
         \x20 fm control far teardown\n\
         the whole fleet: fm top\n"
    );
}

#[test]
fn nothing_needing_you_says_so_with_the_counts() {
    let r = of(
        vec![
            row("a", State::Working, None),
            row("b", State::Working, None),
            row("c", State::Idle, None),
        ],
        NOW,
    );
    assert_eq!(
        r.text(),
        "nothing needs you now: 3 workers: 2 working, 1 idle\n  fm top\n"
    );
    assert_eq!(
        of(vec![], NOW).text(),
        "nothing needs you now: no workers\n  fm top\n"
    );
}

#[test]
fn a_long_list_is_capped_and_the_rest_counted() {
    let rows: Vec<Row> = (0..100)
        .map(|i| {
            row(
                &format!("t{i:03}"),
                State::Blocked,
                Some(Attention::Blocked {
                    key: Some("k k".into()),
                    text: "x".repeat(500),
                    at: Some(NOW - 100 + i),
                }),
            )
        })
        .collect();
    let r = of(rows, NOW);
    assert_eq!(r.items.len(), MAX_ROWS);
    assert_eq!(r.more, 100 - MAX_ROWS);
    assert_eq!(r.items[0].task, "t000", "the longest wait first");
    assert_eq!(
        r.items[0].commands[0],
        "fm send t000 --resolve-key 'k k' -- '<how to go on>'"
    );
    assert_eq!(r.items[0].reason.chars().count(), MAX_REASON);
    let text = r.text();
    assert!(
        text.starts_with("100 need you (100 workers: 100 blocked):\n"),
        "{text}"
    );
    assert!(text.ends_with("\u{2026} and 80 more: fm top\n"), "{text}");
    assert!(text.lines().count() < 80, "{text}");
}

//! What each key does to the dashboard's state.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::crew_state::{Attention, OpenDecision, Source, State};

pub(crate) fn row(id: &str, state: State, attention: Option<Attention>) -> Row {
    Row {
        id: id.into(),
        state,
        source: Source::StatusLog,
        detail: format!("{id} detail"),
        age_secs: Some(60),
        inbox_pending: 0,
        open_decisions: vec![],
        current_at: Some(1_000),
        attention,
        project: Some("shop".into()),
        pane: Some("%1".into()),
        tmux_socket: String::new(),
        host: None,
        usage: None,
    }
}

fn decision(key: &str, text: &str, at: u64) -> OpenDecision {
    OpenDecision {
        key: key.into(),
        verb: "needs-decision".into(),
        text: text.into(),
        at: Some(at),
    }
}

fn fleet() -> Vec<Row> {
    let mut q = row(
        "q1",
        State::Parked,
        Some(Attention::Decision {
            key: "db".into(),
            text: "which db?".into(),
            at: Some(900),
        }),
    );
    q.open_decisions = vec![decision("db", "which db?", 900)];
    vec![
        row("a-working", State::Working, None),
        row("z-done", State::Done, None),
        q,
        row(
            "dead",
            State::Exited,
            Some(Attention::DeadAgent {
                which: "pane gone".into(),
                unread: 0,
            }),
        ),
    ]
}

fn press(app: &mut App, code: KeyCode) -> Option<Effect> {
    app.key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn typed(app: &mut App, s: &str) {
    for c in s.chars() {
        assert_eq!(press(app, KeyCode::Char(c)), None);
    }
}

fn ids(app: &App) -> Vec<String> {
    app.visible().map(|r| r.id.clone()).collect()
}

#[test]
fn rows_come_attention_first_and_the_selection_follows_the_task() {
    let mut app = App::new("home");
    app.set_rows(fleet());
    assert_eq!(ids(&app), ["q1", "dead", "a-working", "z-done"]);
    assert_eq!(app.needing(), 2);
    assert_eq!(app.selected().unwrap().id, "q1");
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Char('j'));
    assert_eq!(app.selected().unwrap().id, "a-working");
    // The decision is answered: q1 drops below, the selection stays put.
    let mut rows = fleet();
    rows[2].attention = None;
    rows[2].state = State::Working;
    app.set_rows(rows);
    assert_eq!(ids(&app), ["dead", "a-working", "q1", "z-done"]);
    assert_eq!(app.selected().unwrap().id, "a-working");
    press(&mut app, KeyCode::Char('k'));
    assert_eq!(app.selected().unwrap().id, "dead");
    press(&mut app, KeyCode::Up);
    assert_eq!(app.selected().unwrap().id, "dead", "stops at the top");
    press(&mut app, KeyCode::Char('G'));
    assert_eq!(app.selected().unwrap().id, "z-done");
    // The selected task disappears: the cursor keeps its place.
    let rows: Vec<Row> = fleet().into_iter().filter(|r| r.id != "z-done").collect();
    app.set_rows(rows);
    assert_eq!(app.selected().unwrap().id, "a-working");
}

#[test]
fn quit_keys_and_their_codes() {
    let mut app = App::new("home");
    assert_eq!(press(&mut app, KeyCode::Char('q')), Some(Effect::Quit(0)));
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(app.key(ctrl_c), Some(Effect::Quit(130)));
    app.mode = Mode::Help;
    assert_eq!(
        press(&mut app, KeyCode::Char('q')),
        None,
        "q closes the help"
    );
    assert_eq!(app.mode, Mode::List);
}

#[test]
fn enter_jumps_and_p_peeks_only_where_a_pane_is_recorded() {
    let mut app = App::new("home");
    app.set_rows(fleet());
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        Some(Effect::Jump { id: "q1".into() })
    );
    assert_eq!(
        press(&mut app, KeyCode::Char('p')),
        Some(Effect::Peek { id: "q1".into() })
    );
    app.show_peek("q1", vec!["screen".into()]);
    assert_eq!(app.peeking(), Some("q1"));
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        Some(Effect::Jump { id: "q1".into() })
    );
    assert_eq!(app.peeking(), Some("q1"), "jumping keeps the peek open");
    assert_eq!(press(&mut app, KeyCode::Esc), None);
    assert_eq!(app.mode, Mode::List);
    let mut rows = fleet();
    rows[2].pane = None;
    app.set_rows(rows);
    assert_eq!(press(&mut app, KeyCode::Enter), None);
    assert!(app.notice.as_ref().unwrap().error);
    assert_eq!(app.notice.as_ref().unwrap().text, "q1: no pane recorded");
}

#[test]
fn s_types_a_message_and_enter_sends_it() {
    let mut app = App::new("home");
    app.set_rows(fleet());
    press(&mut app, KeyCode::Char('s'));
    typed(&mut app, "use stagingX");
    press(&mut app, KeyCode::Backspace);
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        Some(Effect::Send {
            id: "q1".into(),
            body: "use staging".into()
        })
    );
    assert_eq!(app.mode, Mode::List);
    // Esc cancels; an empty line sends nothing.
    press(&mut app, KeyCode::Char('s'));
    typed(&mut app, "x");
    assert_eq!(press(&mut app, KeyCode::Esc), None);
    press(&mut app, KeyCode::Char('s'));
    assert_eq!(press(&mut app, KeyCode::Enter), None);
    assert!(app.notice.as_ref().unwrap().error);
}

#[test]
fn r_answers_the_only_decision_or_lets_the_captain_pick() {
    let mut app = App::new("home");
    app.set_rows(fleet());
    press(&mut app, KeyCode::Char('r'));
    assert!(matches!(
        &app.mode,
        Mode::Input { purpose: Purpose::Answer { key, .. }, .. } if key == "db"
    ));
    typed(&mut app, "sqlite");
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        Some(Effect::Resolve {
            id: "q1".into(),
            key: "db".into(),
            answer: "sqlite".into()
        })
    );
    let mut rows = fleet();
    rows[2]
        .open_decisions
        .push(decision("ui", "tabs or spaces?", 950));
    app.set_rows(rows);
    press(&mut app, KeyCode::Char('r'));
    let Mode::PickKey { keys, at, .. } = &app.mode else {
        panic!("{:?}", app.mode)
    };
    assert_eq!((keys[0].0.as_str(), *at), ("ui", 0), "newest first");
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Enter);
    typed(&mut app, "pg");
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        Some(Effect::Resolve {
            id: "q1".into(),
            key: "db".into(),
            answer: "pg".into()
        })
    );
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::Char('r'));
    assert_eq!(app.notice.as_ref().unwrap().text, "dead: no open decision");
}

#[test]
fn slash_filters_while_typing_and_esc_restores() {
    let mut app = App::new("home");
    app.set_rows(fleet());
    press(&mut app, KeyCode::Char('/'));
    typed(&mut app, "DEC");
    assert_eq!(ids(&app), ["q1"], "matches the reason, any case");
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.visible_len(), 4);
    press(&mut app, KeyCode::Char('/'));
    typed(&mut app, "done");
    press(&mut app, KeyCode::Enter);
    assert_eq!(ids(&app), ["z-done"]);
    assert_eq!(app.selected().unwrap().id, "z-done");
    assert_eq!(app.filter, "done");
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.visible_len(), 4);
    assert_eq!(app.selected().unwrap().id, "z-done");
}

#[test]
fn w_opens_the_feed_and_scrolls() {
    let mut app = App::new("home");
    assert_eq!(press(&mut app, KeyCode::Char('w')), Some(Effect::OpenWakes));
    app.new_wakes = 3;
    let line = |seq| FeedLine {
        wake: crate::wakes::Wake {
            seq,
            epoch: 1,
            task: "t".into(),
            kind: "status".into(),
            text: "x".into(),
        },
        new: seq > 1,
        host: None,
    };
    app.show_wakes(vec![line(1), line(2)]);
    assert_eq!(app.new_wakes, 0);
    press(&mut app, KeyCode::Up);
    assert!(matches!(app.mode, Mode::Wakes { scroll: 1, .. }));
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.mode, Mode::List);
}

#[test]
fn the_list_window_follows_the_selection() {
    let mut app = App::new("home");
    app.set_rows(
        (0..30)
            .map(|i| row(&format!("t{i:02}"), State::Working, None))
            .collect(),
    );
    app.scroll_into_view(10);
    assert_eq!(app.offset, 0);
    for _ in 0..15 {
        press(&mut app, KeyCode::Down);
    }
    app.scroll_into_view(10);
    assert_eq!(app.offset, 6);
    press(&mut app, KeyCode::Home);
    app.scroll_into_view(10);
    assert_eq!(app.offset, 0);
}

#[test]
fn a_picks_a_verb_to_grant_on_the_selected_row() {
    let mut app = App::new("home");
    app.set_rows(fleet());
    let id = app.selected().unwrap().id.clone();
    assert_eq!(press(&mut app, KeyCode::Char('a')), None);
    assert_eq!(
        app.mode,
        Mode::PickVerb {
            id: id.clone(),
            at: 0
        }
    );
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Down);
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        Some(Effect::Grant {
            id: id.clone(),
            verb: Verb::Land
        })
    );
    assert_eq!(app.mode, Mode::List);
    press(&mut app, KeyCode::Char('a'));
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        Some(Effect::Grant {
            id,
            verb: Verb::Teardown
        })
    );
    press(&mut app, KeyCode::Char('a'));
    assert_eq!(press(&mut app, KeyCode::Esc), None);
    assert_eq!(app.mode, Mode::List);
    // No row, no picker.
    let mut empty = App::new("home");
    assert_eq!(press(&mut empty, KeyCode::Char('a')), None);
    assert_eq!(empty.mode, Mode::List);
}

#[test]
fn d_opens_the_review_while_it_loads_and_l_lands_only_on_y() {
    let mut app = App::new("home");
    app.set_rows(vec![row("v1", State::Done, None)]);
    assert_eq!(
        press(&mut app, KeyCode::Char('d')),
        Some(Effect::Review { id: "v1".into() })
    );
    assert!(matches!(&app.mode, Mode::Review(v) if v.id == "v1" && v.lines.is_none()));
    // A failed load closes the view and says why; a late answer for
    // another task changes nothing.
    app.show_review("v2", Err("nope".into()));
    assert!(matches!(app.mode, Mode::Review(_)));
    app.show_review("v1", Err("no worktree".into()));
    assert_eq!(app.mode, Mode::List);
    assert_eq!(
        app.notice.as_ref().unwrap().text,
        "v1: cannot review: no worktree"
    );

    assert_eq!(press(&mut app, KeyCode::Char('L')), None);
    assert_eq!(app.mode, Mode::ConfirmLand { id: "v1".into() });
    assert_eq!(press(&mut app, KeyCode::Char('n')), None);
    assert_eq!(
        (&app.mode, app.notice.as_ref().unwrap().text.as_str()),
        (&Mode::List, "v1: not landed")
    );
    press(&mut app, KeyCode::Char('L'));
    assert_eq!(
        press(&mut app, KeyCode::Char('y')),
        Some(Effect::Land { id: "v1".into() })
    );
    assert_eq!(app.mode, Mode::List);
}

#[test]
fn lifecycle_keys_act_on_the_selected_row_and_the_destructive_ones_ask_once() {
    use crate::top::actions::Act;
    let mut app = App::new("home");
    app.set_rows(fleet());
    // q1 is selected (attention first).
    assert_eq!(
        press(&mut app, KeyCode::Char('i')),
        Some(Effect::Act {
            id: "q1".into(),
            act: Act::Interrupt,
            note: None,
        })
    );
    assert_eq!(press(&mut app, KeyCode::Char('X')), None);
    assert!(matches!(
        app.mode,
        Mode::Confirm {
            act: Act::Teardown,
            ..
        }
    ));
    // Any other key is a no, said so, and nothing happens.
    assert_eq!(press(&mut app, KeyCode::Char('n')), None);
    assert_eq!(app.mode, Mode::List);
    assert!(app.notice.as_ref().unwrap().text.contains("nothing done"));
    // Relaunch asks its note first (fm-control needs one), then y/n.
    assert_eq!(press(&mut app, KeyCode::Char('R')), None);
    typed(&mut app, "tests pass");
    assert_eq!(press(&mut app, KeyCode::Enter), None);
    assert!(matches!(
        app.mode,
        Mode::Confirm {
            act: Act::Relaunch,
            ..
        }
    ));
    assert_eq!(
        press(&mut app, KeyCode::Char('y')),
        Some(Effect::Act {
            id: "q1".into(),
            act: Act::Relaunch,
            note: Some("tests pass".into()),
        })
    );
    assert_eq!(app.mode, Mode::List);
}

#[test]
fn n_asks_the_new_workers_questions_in_the_prompt_line() {
    use crate::top::actions::{Known, NewSpec};
    let mut app = App::new("home");
    app.set_rows(fleet());
    assert_eq!(press(&mut app, KeyCode::Char('n')), Some(Effect::StartNew));
    app.start_new(Known {
        projects: vec!["/src/shop".into()],
        harness: Some("stand-in".into()),
        ids: vec!["q1".into()],
    });
    let text = |app: &App| match &app.mode {
        Mode::Input { text, .. } => text.clone(),
        m => panic!("{m:?}"),
    };
    assert_eq!(text(&app), "/src/shop");
    assert_eq!(press(&mut app, KeyCode::Enter), None);
    assert_eq!(text(&app), "local-only");
    assert_eq!(press(&mut app, KeyCode::Tab), None);
    assert_eq!(text(&app), "direct-PR");
    assert_eq!(press(&mut app, KeyCode::Enter), None);
    // A blank intent is asked again.
    assert_eq!(press(&mut app, KeyCode::Enter), None);
    assert!(app.notice.as_ref().unwrap().error);
    typed(&mut app, "Speed up login");
    assert_eq!(press(&mut app, KeyCode::Enter), None);
    assert_eq!(text(&app), "stand-in");
    assert_eq!(press(&mut app, KeyCode::Enter), None);
    assert_eq!(text(&app), "speed-up-login");
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        Some(Effect::New(NewSpec {
            id: "speed-up-login".into(),
            project: "/src/shop".into(),
            mode: crate::meta::Mode::DirectPr,
            intent: "Speed up login".into(),
            harness: "stand-in".into(),
        }))
    );
}

//! Human output of crew state (SPEC §9.1): the one-line form
//! `state: S · source: SRC · detail` and the fleet table, both printed from
//! the same [`Row`] that `--json` serialises. Colour (the state word only)
//! is the caller's choice: on a terminal and never with `NO_COLOR`.
//!
//! Both are [`Text`]: every cell is sanitised as it goes in (a worker's
//! status text cannot carry an escape sequence to the captain's terminal),
//! and column widths are measured on what is printed.

use super::{Row, State};
use crate::clock;
use crate::output::{Sgr, Text, sanitize};

const SEP: &str = " \u{b7} ";

/// The colour of a state.
#[allow(clippy::match_same_arms, reason = "one row per state reads as a table")]
fn colour(state: State) -> Sgr {
    match state {
        State::Working => Sgr::Green,
        State::Idle => Sgr::Dim,
        State::Parked => Sgr::Yellow,
        State::Blocked => Sgr::BoldRed,
        State::Paused => Sgr::Cyan,
        State::Done => Sgr::Blue,
        State::Failed => Sgr::Red,
        State::Exited => Sgr::Magenta,
        State::Unknown => Sgr::Dim,
    }
}

/// `state: <S> · source: <SRC>[ · <detail>]`.
pub(crate) fn line(row: &Row, colour_on: bool) -> Text {
    let mut t = Text::new();
    t.push("state: ")
        .paint(row.state.as_str(), colour(row.state), colour_on)
        .push(SEP)
        .push("source: ")
        .push(row.source.as_str());
    if !row.detail.is_empty() {
        t.push(SEP).push(&row.detail);
    }
    t
}

/// The AGE cell: `42s ago`, `5m ago`, … or `-` without a current line.
pub(crate) fn age_cell(row: &Row) -> String {
    row.age_secs
        .map_or_else(|| "-".into(), |a| format!("{} ago", clock::age(a)))
}

/// The WAITING cell: what the captain is needed for, or `-`.
pub(crate) fn waiting_cell(row: &Row) -> String {
    row.attention
        .as_ref()
        .map_or_else(|| "-".into(), super::attention::Attention::label)
}

const COLUMNS: usize = 8;

/// The fleet table: a header and one row per task, columns padded to the
/// widest cell, DETAIL last and unpadded.
pub(crate) fn table(rows: &[Row], colour_on: bool) -> Vec<Text> {
    let header = [
        "ID", "STATE", "SOURCE", "AGE", "INBOX", "OPEN", "WAITING", "DETAIL",
    ]
    .map(String::from);
    let cells: Vec<[String; COLUMNS]> = rows
        .iter()
        .map(|r| {
            [
                r.id.clone(),
                r.state.as_str().to_string(),
                r.source.as_str().to_string(),
                age_cell(r),
                r.inbox_pending.to_string(),
                r.open_decisions.len().to_string(),
                waiting_cell(r),
                r.detail.clone(),
            ]
            .map(|c| sanitize(&c).into_owned())
        })
        .collect();
    let mut width = header.clone().map(|h| h.len());
    for c in &cells {
        for (w, cell) in width.iter_mut().zip(c.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let fmt = |cols: &[String; COLUMNS], state: Option<State>| {
        let mut t = Text::new();
        for (i, cell) in cols.iter().enumerate() {
            if i == COLUMNS - 1 {
                t.push(cell);
                break;
            }
            let pad = width[i] - cell.chars().count() + 2;
            match (i, state) {
                (1, Some(st)) => t.paint(cell, colour(st), colour_on),
                _ => t.push(cell),
            };
            t.pad(pad);
        }
        t.trim_end();
        t
    };
    let mut out = vec![fmt(&header, None)];
    for (c, r) in cells.iter().zip(rows) {
        out.push(fmt(c, Some(r.state)));
    }
    out
}

#[cfg(test)]
mod tests {
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
}

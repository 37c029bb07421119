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

/// The fleet table: a header and one row per task, columns padded to the
/// widest cell, DETAIL last and unpadded. A HOST column follows ID when
/// any task is remote (`-` for a local one).
#[cfg(test)]
pub(crate) fn table(rows: &[Row], colour_on: bool) -> Vec<Text> {
    let mut t = Table::new(colour_on);
    for r in rows {
        t.push(r);
    }
    t.lines().collect()
}

/// The table's columns, HOST included (left out when no task is remote).
const HEADER: [&str; 9] = [
    "ID", "HOST", "STATE", "SOURCE", "AGE", "INBOX", "OPEN", "WAITING", "DETAIL",
];
const HOST_COL: usize = 1;
const STATE_COL: usize = 2;

/// [`table`] built a row at a time: a row is kept only as its state and
/// its printed cells, so a fleet is aligned without holding its rows.
pub(crate) struct Table {
    colour_on: bool,
    hosts: bool,
    /// The widest cell of each column, the header's included.
    width: [usize; HEADER.len()],
    /// Each row's state and its cells, sanitised (so free of `\0`),
    /// joined by `\0`.
    rows: Vec<(State, Box<str>)>,
}

impl Table {
    pub(crate) fn new(colour_on: bool) -> Table {
        Table {
            colour_on,
            hosts: false,
            width: HEADER.map(str::len),
            rows: Vec::new(),
        }
    }

    /// Adds a row.
    pub(crate) fn push(&mut self, r: &Row) {
        self.hosts |= r.host.is_some();
        let cells = [
            r.id.as_str(),
            r.host.as_deref().unwrap_or("-"),
            r.state.as_str(),
            r.source.as_str(),
            &age_cell(r),
            &r.inbox_pending.to_string(),
            &r.open_decisions.len().to_string(),
            &waiting_cell(r),
            &r.detail,
        ];
        let mut joined = String::new();
        for (i, cell) in cells.into_iter().enumerate() {
            if i > 0 {
                joined.push('\0');
            }
            let cell = sanitize(cell);
            self.width[i] = self.width[i].max(cell.chars().count());
            joined.push_str(&cell);
        }
        self.rows.push((r.state, joined.into_boxed_str()));
    }

    /// How many rows were added.
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// The header line, then one line per row in the order added.
    pub(crate) fn lines(&self) -> impl Iterator<Item = Text> + '_ {
        std::iter::once(self.line(HEADER.into_iter(), None)).chain(
            self.rows
                .iter()
                .map(|(state, cells)| self.line(cells.split('\0'), Some(*state))),
        )
    }

    fn line<'a>(&self, cells: impl Iterator<Item = &'a str>, state: Option<State>) -> Text {
        let last = HEADER.len() - 1;
        let mut t = Text::new();
        for (i, cell) in cells.enumerate() {
            if i == HOST_COL && !self.hosts {
                continue;
            }
            if i == last {
                t.push(cell);
                break;
            }
            let pad = self.width[i] - cell.chars().count() + 2;
            match state {
                Some(st) if i == STATE_COL => t.paint(cell, colour(st), self.colour_on),
                _ => t.push(cell),
            };
            t.pad(pad);
        }
        t.trim_end();
        t
    }
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
            host: None,
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
}

//! Human output of crew state (SPEC §9.1): the one-line form
//! `state: S · source: SRC · detail` and the fleet table, both printed from
//! the same [`Row`] that `--json` serialises. Colour (the state word only)
//! is the caller's choice: on a terminal and never with `NO_COLOR`.

use super::{Row, Source, State};
use crate::clock;

const SEP: &str = " \u{b7} ";

/// The SGR colour of a state.
#[allow(clippy::match_same_arms, reason = "one row per state reads as a table")]
fn colour(state: State) -> &'static str {
    match state {
        State::Working => "32",
        State::Idle => "2",
        State::Parked => "33",
        State::Blocked => "1;31",
        State::Paused => "36",
        State::Done => "34",
        State::Failed => "31",
        State::Exited => "35",
        State::Unknown => "2",
    }
}

fn paint(text: &str, state: State, on: bool) -> String {
    if on {
        format!("\x1b[{}m{text}\x1b[0m", colour(state))
    } else {
        text.to_string()
    }
}

/// `state: <S> · source: <SRC>[ · <detail>]`.
pub(crate) fn line(row: &Row, colour: bool) -> String {
    let mut s = format!(
        "state: {}{SEP}source: {}",
        paint(row.state.as_str(), row.state, colour),
        row.source.as_str()
    );
    if !row.detail.is_empty() {
        s.push_str(SEP);
        s.push_str(&row.detail);
    }
    s
}

/// The AGE cell: `42s`, `5m`, … or `-` without a current line.
fn age_of(age_secs: Option<u64>) -> String {
    age_secs.map_or_else(|| "-".into(), clock::age)
}

/// What the fleet table shows of a row: all a fleet's table holds per
/// task (the open decisions only counted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableRow {
    id: String,
    state: State,
    source: Source,
    age_secs: Option<u64>,
    inbox_pending: usize,
    open: usize,
    detail: String,
}

impl From<Row> for TableRow {
    fn from(r: Row) -> TableRow {
        TableRow {
            open: r.open_decisions.len(),
            id: r.id,
            state: r.state,
            source: r.source,
            age_secs: r.age_secs,
            inbox_pending: r.inbox_pending,
            detail: r.detail,
        }
    }
}

const HEADER: [&str; 7] = ["ID", "STATE", "SOURCE", "AGE", "INBOX", "OPEN", "DETAIL"];

impl TableRow {
    fn cells(&self) -> [std::borrow::Cow<'_, str>; 7] {
        [
            self.id.as_str().into(),
            self.state.as_str().into(),
            self.source.as_str().into(),
            age_of(self.age_secs).into(),
            self.inbox_pending.to_string().into(),
            self.open.to_string().into(),
            self.detail.as_str().into(),
        ]
    }
}

/// The fleet table: a header and one row per task, columns padded to the
/// widest cell, DETAIL last and unpadded; each line ends in `\n`.
pub(crate) fn write_table(
    rows: &[TableRow],
    colour: bool,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut width = HEADER.map(str::len);
    for r in rows {
        for (w, cell) in width.iter_mut().zip(r.cells().iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut line = String::new();
    let mut fmt = |cols: [&str; 7], state: Option<State>, out: &mut dyn std::io::Write| {
        line.clear();
        for (i, cell) in cols.iter().enumerate() {
            if i == 6 {
                line.push_str(cell);
                break;
            }
            let pad = width[i] - cell.chars().count() + 2;
            match (i, state) {
                (1, Some(st)) => line.push_str(&paint(cell, st, colour)),
                _ => line.push_str(cell),
            }
            line.extend(std::iter::repeat_n(' ', pad));
        }
        let trimmed = line.trim_end();
        out.write_all(trimmed.as_bytes())?;
        out.write_all(b"\n")
    };
    fmt(HEADER, None, out)?;
    for r in rows {
        let c = r.cells();
        fmt(
            [&c[0], &c[1], &c[2], &c[3], &c[4], &c[5], &c[6]],
            Some(r.state),
            out,
        )?;
    }
    Ok(())
}

/// [`write_table`] as lines (without their `\n`).
#[cfg(test)]
pub(crate) fn table(rows: &[TableRow], colour: bool) -> Vec<String> {
    let mut buf = Vec::new();
    write_table(rows, colour, &mut buf).expect("writing to memory");
    String::from_utf8(buf)
        .expect("table text is UTF-8")
        .lines()
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, state: State, detail: &str) -> Row {
        Row {
            id: id.into(),
            state,
            source: Source::StatusLog,
            detail: detail.into(),
            age_secs: Some(125),
            inbox_pending: 2,
            open_decisions: vec![],
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
                row("a", State::Working, "x y").into(),
                row("long-id", State::Blocked, "").into(),
            ],
            false,
        );
        assert_eq!(
            t[0],
            "ID       STATE    SOURCE      AGE  INBOX  OPEN  DETAIL"
        );
        assert_eq!(t[1], "a        working  status-log  2m   2      0     x y");
        assert_eq!(t[2], "long-id  blocked  status-log  2m   2      0");
    }
}

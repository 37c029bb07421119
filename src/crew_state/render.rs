//! Human output of crew state (docs/spec/crew-state.md#output): the one-line form
//! `state: S · source: SRC · detail` and the fleet table, both printed from
//! the same [`Row`] that `--json` serialises. Colour (the state word only)
//! is the caller's choice: on a terminal and never with `NO_COLOR`.
//!
//! Both are [`Text`]: every cell is sanitised as it goes in (a worker's
//! status text cannot carry an escape sequence to the captain's terminal),
//! and column widths are measured on what is printed.

use super::{Row, State};
use crate::output::{Clean, Sgr, Text};

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

/// Appends `n` in decimal.
fn push_u64(out: &mut String, n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[i..] {
        out.push(char::from(d));
    }
}

/// Appends the AGE cell: `42s ago`, `5m ago`, … or `-` without a current
/// line (in `clock::age`'s units).
fn push_age(out: &mut String, row: &Row) {
    let Some(secs) = row.age_secs else {
        out.push('-');
        return;
    };
    let (n, unit) = crate::clock::age_in_units(secs);
    push_u64(out, n);
    out.push(unit);
    out.push_str(" ago");
}

/// The fleet table: a header and one row per task, columns padded to the
/// widest cell, DETAIL last and unpadded. A HOST column follows ID when
/// any task is remote (`-` for a local one).
#[cfg(test)]
pub(crate) fn table(rows: &[Row], colour_on: bool) -> Vec<String> {
    let mut t = Table::new(colour_on);
    for r in rows {
        t.push(r);
    }
    let mut text = Text::new();
    t.write(0..=t.len(), &mut text);
    text.lines().map(str::to_string).collect()
}

/// The table's columns, HOST included (left out when no task is remote).
const HEADER: [&str; COLUMNS] = [
    "ID", "HOST", "STATE", "SOURCE", "AGE", "INBOX", "OPEN", "WAITING", "DETAIL",
];
const COLUMNS: usize = 9;
const HOST_COL: usize = 1;
const STATE_COL: usize = 2;
const SOURCE_COL: usize = 3;

/// [`table`] built a row at a time: a row is kept only as its state, its
/// source and its other printed cells, all rows' cells in one string, so a
/// fleet is aligned without holding its rows.
pub(crate) struct Table {
    colour_on: bool,
    hosts: bool,
    /// The widest cell of each column, in characters, the header's
    /// included.
    width: [usize; COLUMNS],
    /// Every row's cells but STATE and SOURCE ([`KEPT`]), sanitised, one
    /// after another.
    cells: Clean,
    rows: Vec<Cells>,
}

/// The columns whose cells a row keeps as text (STATE and SOURCE are
/// printed from the row's own words).
const KEPT: [usize; COLUMNS - 2] = [0, 1, 4, 5, 6, 7, 8];

/// A row: its state and source, where its cells start in
/// [`Table::cells`], and where each of its [`KEPT`] cells ends, from that
/// start (a row is far shorter than 4 GiB: its longest cell is one line of
/// a bounded file).
struct Cells {
    state: State,
    source: super::Source,
    /// Every cell is printable ASCII (a cell's characters are its bytes).
    ascii: bool,
    start: usize,
    ends: [u32; KEPT.len()],
}

/// A row as the table keeps it: its [`KEPT`] cells, sanitised, one after
/// another, where each ends and how many characters it has, and the words
/// printed as they are. Made from the row wherever the row is (a fleet
/// view makes it on the thread that read the task, and drops the row
/// there), so adding it to the table is only a copy.
pub(crate) struct RowCells {
    state: State,
    source: super::Source,
    host: bool,
    cells: Clean,
    ends: [u32; KEPT.len()],
    chars: [u32; KEPT.len()],
    /// Every cell is printable ASCII (a cell's characters are its bytes).
    ascii: bool,
}

impl RowCells {
    pub(crate) fn of(r: &Row) -> RowCells {
        // Room for every cell as it most often is (ASCII, short ages and
        // counts): one allocation a row.
        let host = r.host.as_deref().map_or(1, str::len);
        let label = 48;
        let mut raw = String::with_capacity(r.id.len() + host + r.detail.len() + label + 24);
        let mut ends = [0u32; KEPT.len()];
        for (k, &col) in KEPT.iter().enumerate() {
            push_cell(&mut raw, r, col);
            ends[k] = u32::try_from(raw.len()).unwrap_or(u32::MAX);
        }
        // Most rows are printable ASCII throughout: nothing to sanitise,
        // and a cell's characters are its bytes. Any other row is made
        // again a cell at a time, each sanitised and measured.
        let (cells, ascii) = match Clean::of_printable(raw) {
            Ok(cells) => (cells, true),
            Err(raw) => {
                let mut cells = Clean::with_capacity(raw.capacity());
                for (k, &col) in KEPT.iter().enumerate() {
                    cells.push_with(|out| push_cell(out, r, col));
                    ends[k] = u32::try_from(cells.len()).unwrap_or(u32::MAX);
                }
                (cells, false)
            }
        };
        let mut widths = [0u32; KEPT.len()];
        let mut from = 0;
        for (w, &end) in widths.iter_mut().zip(&ends) {
            *w = if ascii {
                end - from
            } else {
                let cell = cells.as_str().get(from as usize..end as usize);
                u32::try_from(cell.map_or(0, chars)).unwrap_or(u32::MAX)
            };
            from = end;
        }
        RowCells {
            state: r.state,
            source: r.source,
            host: r.host.is_some(),
            cells,
            ends,
            chars: widths,
            ascii,
        }
    }
}

/// Appends the row's cell of column `col` (one of [`KEPT`]), unsanitised.
fn push_cell(out: &mut String, r: &Row, col: usize) {
    match col {
        0 => out.push_str(&r.id),
        1 => out.push_str(r.host.as_deref().unwrap_or("-")),
        4 => push_age(out, r),
        5 => push_u64(out, r.inbox_pending as u64),
        6 => push_u64(out, r.open_decisions.len() as u64),
        7 => match &r.attention {
            Some(a) => a.push_label(out),
            None => out.push('-'),
        },
        _ => out.push_str(&r.detail),
    }
}

/// Characters in `s` (its bytes when it is ASCII).
fn chars(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    }
}

impl Table {
    pub(crate) fn new(colour_on: bool) -> Table {
        Table {
            colour_on,
            hosts: false,
            width: HEADER.map(str::len),
            cells: Clean::default(),
            rows: Vec::new(),
        }
    }

    /// Adds a row.
    #[cfg(test)]
    pub(crate) fn push(&mut self, r: &Row) {
        self.add(RowCells::of(r));
    }

    /// Adds a row made into its cells (wherever it was made).
    pub(crate) fn add(&mut self, row: RowCells) {
        self.hosts |= row.host;
        let start = self.cells.len();
        self.cells.append(&row.cells);
        for (&col, &n) in KEPT.iter().zip(&row.chars) {
            self.width[col] = self.width[col].max(n as usize);
        }
        self.width[STATE_COL] = self.width[STATE_COL].max(row.state.as_str().len());
        self.width[SOURCE_COL] = self.width[SOURCE_COL].max(row.source.as_str().len());
        self.rows.push(Cells {
            state: row.state,
            source: row.source,
            ascii: row.ascii,
            start,
            ends: row.ends,
        });
    }

    /// How many rows were added.
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// Lines `lines` of the table (0 the header, `k` the `k`th row added),
    /// each ended by a line break.
    pub(crate) fn write(&self, lines: std::ops::RangeInclusive<usize>, out: &mut Text) {
        for k in lines {
            if k == 0 {
                self.header(out);
            } else if let Some(row) = self.rows.get(k - 1) {
                self.row(row, out);
            }
        }
    }

    /// The whole table, `batch` lines at a time, each block handed to
    /// `out` in order. A table of more than one block is written on two
    /// threads where there are two cores: this one writes the even blocks,
    /// a helper the odd ones, one block ahead at most (so the lines held
    /// stay about two blocks); where there is one core, or the helper
    /// cannot be started, this thread writes them all.
    pub(crate) fn print(
        &self,
        batch: usize,
        out: &mut dyn FnMut(&Text) -> crate::Result<()>,
    ) -> crate::Result<()> {
        let batch = batch.max(1);
        // Lines 0 (the header) to `len` (the last row).
        let blocks = (self.len() + 1).div_ceil(batch);
        let lines = |b: usize| b * batch..=((b + 1) * batch - 1).min(self.len());
        let alone = |out: &mut dyn FnMut(&Text) -> crate::Result<()>| {
            let mut text = Text::new();
            for b in 0..blocks {
                text.clear();
                self.write(lines(b), &mut text);
                out(&text)?;
            }
            Ok(())
        };
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        if blocks < 2 || cores < 2 {
            return alone(out);
        }
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Text>(1);
            let helper = std::thread::Builder::new().spawn_scoped(scope, move || {
                for b in (1..blocks).step_by(2) {
                    let mut text = Text::new();
                    self.write(lines(b), &mut text);
                    // The reader gave up (a write failed): stop.
                    if tx.send(text).is_err() {
                        break;
                    }
                }
            });
            if helper.is_err() {
                return alone(out);
            }
            let mut text = Text::new();
            for b in 0..blocks {
                if b % 2 == 0 {
                    text.clear();
                    self.write(lines(b), &mut text);
                    out(&text)?;
                } else {
                    let odd = rx.recv().expect("the helper writes every odd block");
                    out(&odd)?;
                }
            }
            Ok(())
        })
    }

    fn header(&self, out: &mut Text) {
        for (i, cell) in HEADER.iter().enumerate() {
            if i == HOST_COL && !self.hosts {
                continue;
            }
            out.push(cell);
            if i < COLUMNS - 1 {
                out.pad(self.width[i] - cell.len() + 2);
            }
        }
        out.line_break();
    }

    /// A row's line: its cells padded to their columns' widths, DETAIL
    /// last and unpadded, trailing spaces dropped.
    fn row(&self, row: &Cells, out: &mut Text) {
        let mut kept = 0;
        let mut from = row.start;
        for col in 0..COLUMNS {
            let (width, last) = (self.width[col], col == COLUMNS - 1);
            let n = match col {
                STATE_COL => {
                    let word = row.state.as_str();
                    out.paint(word, colour(row.state), self.colour_on);
                    word.len()
                }
                SOURCE_COL => {
                    let word = row.source.as_str();
                    out.push(word);
                    word.len()
                }
                _ => {
                    let end = row.start + row.ends[kept] as usize;
                    kept += 1;
                    let range = from..end;
                    from = end;
                    if col == HOST_COL && !self.hosts {
                        continue;
                    }
                    let n = if row.ascii {
                        range.len()
                    } else {
                        self.cells.as_str().get(range.clone()).map_or(0, chars)
                    };
                    out.push_clean(&self.cells, range);
                    n
                }
            };
            if !last {
                out.pad(width - n + 2);
            }
        }
        // An empty DETAIL leaves the padding of the cell before it.
        out.trim_end();
        out.line_break();
    }
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;

//! A captured screen as text: `capture-pane` output (with or without `-e`
//! escapes) split into lines, each with its plain text and, when asked,
//! its cells' attributes — dim and reverse video, the only ones a reading
//! needs (see the parent module). Pure, like the readings.

/// One character cell of a captured line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cell {
    ch: char,
    dim: bool,
    reverse: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Line {
    /// The plain characters (escapes removed).
    pub(super) text: String,
    pub(super) cells: Vec<Cell>,
}

/// A captured screen, escapes parsed away.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Screen {
    pub(super) lines: Vec<Line>,
}

impl Screen {
    /// Parses `capture-pane` output, with or without `-e` escapes. Only
    /// SGR (`ESC [ … m`) is interpreted (dim and reverse video); other
    /// escape sequences are dropped. Attributes carry over from one line
    /// to the next: tmux writes only the changes from the previous cell.
    pub fn parse(captured: &str) -> Screen {
        Screen::parse_with(captured, true)
    }

    /// [`Screen::parse`] keeping only the plain text of each line (what
    /// the busy and dialog rules read), not its cells' attributes.
    pub fn parse_text(captured: &str) -> Screen {
        Screen::parse_with(captured, false)
    }

    fn parse_with(captured: &str, cells: bool) -> Screen {
        let mut style = (false, false);
        Screen {
            lines: captured
                .split('\n')
                .map(|l| parse_line(l, &mut style, cells))
                .collect(),
        }
    }

    /// The screen as plain text, one `\n`-terminated line per line.
    #[cfg(test)]
    pub fn plain(&self) -> String {
        let mut out = String::new();
        for l in &self.lines {
            out.push_str(&l.text);
            out.push('\n');
        }
        out
    }

    pub(super) fn plain_lines(&self) -> impl DoubleEndedIterator<Item = &str> {
        self.lines.iter().map(|l| l.text.as_str())
    }
}

/// Parses one line; `style` is the (dim, reverse) state going in and out;
/// `with_cells`: keep each character's attributes too.
fn parse_line(raw: &str, style: &mut (bool, bool), with_cells: bool) -> Line {
    if !with_cells && !raw.contains(['\x1b', '\r']) {
        // Nothing to interpret: the text as it is.
        return Line {
            text: raw.to_string(),
            cells: Vec::new(),
        };
    }
    let mut line = Line::default();
    let (mut dim, mut reverse) = *style;
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            continue;
        }
        if c != '\x1b' {
            line.text.push(c);
            if with_cells {
                line.cells.push(Cell {
                    ch: c,
                    dim,
                    reverse,
                });
            }
            continue;
        }
        match chars.next() {
            Some('[') => {
                let mut params = String::new();
                let mut fin = None;
                for d in chars.by_ref() {
                    if ('\x40'..='\x7e').contains(&d) {
                        fin = Some(d);
                        break;
                    }
                    params.push(d);
                }
                if fin == Some('m') {
                    apply_sgr(&params, &mut dim, &mut reverse);
                }
            }
            Some(']') => {
                // OSC: up to BEL or ESC \.
                while let Some(d) = chars.next() {
                    if d == '\x07' {
                        break;
                    }
                    if d == '\x1b' {
                        chars.next_if_eq(&'\\');
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    *style = (dim, reverse);
    line
}

/// Applies one SGR parameter list to the dim / reverse state.
fn apply_sgr(params: &str, dim: &mut bool, reverse: &mut bool) {
    let ps: Vec<&str> = params.split([';', ':']).collect();
    let mut i = 0;
    while i < ps.len() {
        match ps[i] {
            "" | "0" => (*dim, *reverse) = (false, false),
            "2" => *dim = true,
            "22" => *dim = false,
            "7" => *reverse = true,
            "27" => *reverse = false,
            // Colours: skip their arguments (5;n or 2;r;g;b).
            "38" | "48" | "58" => {
                i += match ps.get(i + 1) {
                    Some(&"5") => 2,
                    Some(&"2") => 4,
                    _ => 0,
                };
            }
            _ => {}
        }
        i += 1;
    }
}

/// The typed text of composer cells: dim characters are a placeholder, and
/// so is a reverse-video cell directly followed by a dim one (the
/// placeholder's first letter under the cursor). No-break spaces read as
/// spaces. Trailing blanks (the cursor cell among them) are dropped.
pub(super) fn typed(cells: &[Cell]) -> String {
    let mut out = String::new();
    for (i, c) in cells.iter().enumerate() {
        if c.dim || (c.reverse && cells.get(i + 1).is_some_and(|n| n.dim)) {
            continue;
        }
        out.push(if c.ch == '\u{a0}' { ' ' } else { c.ch });
    }
    out.trim_end().to_string()
}

/// The cells of `line` that hold bytes `start..end` of its text (char
/// boundaries, as a regex match gives them).
pub(super) fn cells_of(line: &Line, start: usize, end: usize) -> &[Cell] {
    let first = line.text[..start].chars().count();
    let last = line.text[..end].chars().count();
    &line.cells[first..last]
}

pub(super) fn blank(s: &str) -> bool {
    s.chars().all(char::is_whitespace)
}

//! `d` and `L` in `fm top`: the review of the selected row as a
//! scrollable view inside the dashboard (file by file), and the landing
//! of it after one question.
//!
//! Both are the library's use cases ([`crate::route::review::review`],
//! [`crate::route::land::land`]), here or on the task's host, run on a
//! thread ([`super::run`]'s `background`): the drawing thread never waits
//! on git or ssh. The view holds the review's lines as the plain tools
//! print them (sanitised); colour is the palette's, chosen by each line's
//! first characters.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph};

use super::palette::Palette;
use crate::route::review::Review;

/// How far PgUp/PgDn move.
const PAGE: usize = 20;

/// The key hints under the review.
pub const HINTS: &str = "\u{2191}\u{2193} scroll \u{b7} PgUp/PgDn page \u{b7} n/N next/previous file \u{b7} g/G top/end \u{b7} q/Esc back";

/// The key hints while a landing is asked about.
pub const CONFIRM_HINTS: &str = "y land \u{b7} any other key cancels";

/// The question `L` asks.
pub fn question(id: &str) -> String {
    format!("land {id} the way its mode says (fm land {id})? y/n")
}

/// A task's review in the dashboard: loading, then its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewView {
    pub id: String,
    /// `None` while the review loads.
    pub lines: Option<Vec<String>>,
    /// The first line of each file's patch.
    pub files: Vec<usize>,
    /// The first line shown.
    pub scroll: usize,
}

impl ReviewView {
    pub fn loading(id: &str) -> ReviewView {
        ReviewView {
            id: id.to_string(),
            lines: None,
            files: Vec::new(),
            scroll: 0,
        }
    }

    /// The loaded review, as `fm review` prints it (uncoloured).
    pub fn show(&mut self, r: &Review) {
        let mut lines: Vec<String> = r
            .summary(false)
            .iter()
            .map(|t| t.as_str().to_string())
            .collect();
        lines.push(String::new());
        let at = lines.len();
        lines.extend(r.patch_lines(false).iter().map(|t| t.as_str().to_string()));
        self.files = r.file_starts().into_iter().map(|i| i + at).collect();
        self.lines = Some(lines);
        self.scroll = 0;
    }

    fn len(&self) -> usize {
        self.lines.as_ref().map_or(0, Vec::len)
    }

    /// Handles a key; `false` when the view closes.
    pub fn key(&mut self, k: KeyEvent) -> bool {
        let last = self.len().saturating_sub(1);
        self.scroll = match k.code {
            KeyCode::Esc | KeyCode::Char('q' | 'd') => return false,
            KeyCode::Up | KeyCode::Char('k') => self.scroll.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.scroll + 1,
            KeyCode::PageUp => self.scroll.saturating_sub(PAGE),
            KeyCode::PageDown | KeyCode::Char(' ') => self.scroll + PAGE,
            KeyCode::Home | KeyCode::Char('g') => 0,
            KeyCode::End | KeyCode::Char('G') => last,
            KeyCode::Char('n' | ']') | KeyCode::Tab => self
                .files
                .iter()
                .copied()
                .find(|&f| f > self.scroll)
                .unwrap_or(self.scroll),
            KeyCode::Char('N' | '[') | KeyCode::BackTab => self
                .files
                .iter()
                .copied()
                .rev()
                .find(|&f| f < self.scroll)
                .unwrap_or(0),
            _ => self.scroll,
        }
        .min(last);
        true
    }

    /// Which file the top line is in (1-based), of how many.
    fn file_at(&self) -> (usize, usize) {
        let n = self.files.iter().filter(|&&f| f <= self.scroll).count();
        (n, self.files.len())
    }
}

/// Draws the review into `area`.
pub fn draw(f: &mut Frame, area: Rect, v: &ReviewView, p: Palette) {
    let Some(lines) = &v.lines else {
        let block = Block::bordered().title(format!(" review {} ", v.id));
        f.render_widget(
            Paragraph::new(Line::styled("loading the review\u{2026}", p.dim())).block(block),
            area,
        );
        return;
    };
    let (file, files) = v.file_at();
    let title = format!(
        " review {} \u{b7} file {file}/{files} \u{b7} line {}/{} ",
        v.id,
        v.scroll + 1,
        lines.len()
    );
    let height = usize::from(area.height.saturating_sub(2));
    let shown: Vec<Line> = lines
        .iter()
        .skip(v.scroll)
        .take(height)
        .map(|l| Line::styled(l.clone(), style_of(l, p)))
        .collect();
    f.render_widget(
        Paragraph::new(shown).block(Block::bordered().title(title)),
        area,
    );
}

/// A patch line's colour: files, hunks, additions, removals.
fn style_of(l: &str, p: Palette) -> Style {
    // The palette dims with a colour only when colour is on.
    let on = p.dim().fg.is_some();
    let colour = |c: Color| {
        if on {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    };
    if l.starts_with("diff --git ") {
        p.title()
    } else if l.starts_with("@@") {
        colour(Color::Cyan)
    } else if l.starts_with("+++ ") || l.starts_with("--- ") {
        Style::default()
    } else if l.starts_with('+') {
        colour(Color::Green)
    } else if l.starts_with('-') {
        colour(Color::Red)
    } else {
        Style::default()
    }
}

/// Task `id`'s review with its patch, here or on its host (run off the
/// drawing thread); the error in words.
pub(crate) fn load(
    home: &crate::home::Home,
    cfg: &crate::config::Config,
    id: &str,
) -> std::result::Result<Box<Review>, String> {
    let go = || -> crate::error::Result<Review> {
        let task = crate::route::Task::open(home, cfg, &crate::task_id::TaskId::parse(id)?)?;
        let req = crate::route::review::ReviewRequest { patch: true };
        crate::route::review::review(home, cfg, &task, &req)
    };
    go().map(Box::new).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(v: &mut ReviewView, c: KeyCode) -> bool {
        v.key(KeyEvent::from(c))
    }

    #[test]
    fn keys_move_by_line_page_and_file_and_close() {
        let mut v = ReviewView::loading("t1");
        v.lines = Some((0..100).map(|i| format!("l{i}")).collect());
        v.files = vec![10, 50];
        assert!(press(&mut v, KeyCode::Char('n')));
        assert_eq!(v.scroll, 10);
        press(&mut v, KeyCode::Char('n'));
        assert_eq!((v.scroll, v.file_at()), (50, (2, 2)));
        press(&mut v, KeyCode::Char('n'));
        assert_eq!(v.scroll, 50);
        press(&mut v, KeyCode::Char('N'));
        assert_eq!(v.scroll, 10);
        press(&mut v, KeyCode::PageDown);
        assert_eq!(v.scroll, 30);
        press(&mut v, KeyCode::Char('G'));
        assert_eq!(v.scroll, 99);
        press(&mut v, KeyCode::Down);
        assert_eq!(v.scroll, 99);
        press(&mut v, KeyCode::PageUp);
        assert_eq!(v.scroll, 79);
        assert!(!press(&mut v, KeyCode::Esc));
    }
}

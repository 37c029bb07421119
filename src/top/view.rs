//! Drawing one frame of the dashboard from an [`App`] at `now`: a title
//! line, the main area (the fleet list, a peeked screen or the wakes feed,
//! with the decision picker or the help as pop-ups), a notice or input
//! line, and the key hints. Pure: the same app and `now` draw the same
//! frame, which is what the snapshot tests and the redraw benchmark use.
//! Only the rows in view are built, so a frame costs the window, not the
//! fleet.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Row as TRow, Table};

use super::app::{App, Mode, Purpose};
use super::palette::Palette;
use crate::clock;
use crate::crew_state::Row;

/// The time a row's AGE shows: when its wait began, else its current line.
fn row_time(r: &Row) -> Option<u64> {
    r.attention
        .as_ref()
        .and_then(super::super::crew_state::attention::Attention::since)
        .or(r.current_at)
}

fn ago(t: Option<u64>, now: u64) -> String {
    match t {
        Some(t) if t > now => format!("in {}", clock::age(t - now)),
        Some(t) => format!("{} ago", clock::age(now - t)),
        None => "-".into(),
    }
}

/// Rows of the list window for a main area of `height` lines (one is the
/// column header).
pub fn list_height(area_height: u16) -> usize {
    usize::from(area_height.saturating_sub(1))
}

/// The main area's height for a terminal of `height` lines.
pub fn main_height(height: u16) -> u16 {
    height.saturating_sub(3)
}

/// The most lines the decision area takes (its text wraps; longer text
/// is cut with an ellipsis).
const DETAIL_MAX: usize = 8;

/// The decision the area under the list shows: its heading and the full
/// question — the one being answered, the one picked, else the selected
/// row's open decisions.
fn detail(app: &App) -> Option<(String, String)> {
    let text_of = |id: &str, key: &str| {
        app.rows()
            .iter()
            .find(|r| r.id == id)?
            .open_decisions
            .iter()
            .find(|d| d.key == key)
            .map(|d| d.text.clone())
    };
    match &app.mode {
        Mode::Input {
            purpose: Purpose::Answer { id, key },
            ..
        } => Some((format!(" answering {id} [{key}] "), text_of(id, key)?)),
        Mode::PickKey { id, keys, at } => {
            let (key, text) = keys.get(*at)?;
            Some((format!(" {id} [{key}] "), text.clone()))
        }
        Mode::List | Mode::Confirm { .. } => {
            let row = app.selected()?;
            let text = match row.open_decisions.as_slice() {
                [] => return None,
                [d] => d.text.clone(),
                ds => ds
                    .iter()
                    .map(|d| format!("[{}] {}", d.key, d.text))
                    .collect::<Vec<_>>()
                    .join("  "),
            };
            let keys: Vec<&str> = row.open_decisions.iter().map(|d| d.key.as_str()).collect();
            Some((
                format!(" {} asks [{}] (r answers) ", row.id, keys.join(", ")),
                text,
            ))
        }
        _ => None,
    }
}

/// `text` broken into lines of at most `width` characters, at spaces
/// where it can, inside a word where it must.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    for para in text.split('\n') {
        let mut line = String::new();
        let mut len = 0;
        for word in para.split(' ') {
            let mut word: Vec<char> = word.chars().collect();
            let room = if len == 0 {
                width
            } else {
                width.saturating_sub(len + 1)
            };
            if word.len() > room && len > 0 {
                lines.push(std::mem::take(&mut line));
                len = 0;
            }
            while word.len() > width {
                let rest = word.split_off(width);
                lines.push(word.into_iter().collect());
                word = rest;
            }
            if len > 0 {
                line.push(' ');
                len += 1;
            }
            len += word.len();
            line.extend(word);
        }
        lines.push(line);
    }
    lines
}

/// The decision area's lines for a frame `width` columns wide.
fn detail_lines(app: &App, width: u16) -> Option<(String, Vec<String>)> {
    let (title, text) = detail(app)?;
    let mut lines = wrap(&text, usize::from(width.max(2)));
    if lines.len() > DETAIL_MAX {
        lines.truncate(DETAIL_MAX);
        if let Some(last) = lines.last_mut() {
            last.push('\u{2026}');
        }
    }
    Some((title, lines))
}

/// The height the decision area takes (its heading line included).
pub fn detail_height(app: &App, width: u16) -> u16 {
    detail_lines(app, width).map_or(0, |(_, l)| l.len() as u16 + 1)
}

/// The most lines a notice takes (a refusal is read whole, wrapped).
const NOTICE_MAX: usize = 4;

/// The notice's lines for a frame `width` columns wide: one, or a longer
/// notice wrapped (a prompt or a question is always one line).
fn notice_lines(app: &App, width: u16) -> usize {
    match (&app.mode, &app.notice) {
        (Mode::Input { .. } | Mode::Confirm { .. }, _) | (_, None) => 1,
        (_, Some(n)) => wrap(&n.text, usize::from(width.max(2)))
            .len()
            .clamp(1, NOTICE_MAX),
    }
}

/// Rows of the list window for a terminal of `width`×`height`.
pub fn list_rows(app: &App, width: u16, height: u16) -> usize {
    let extra = notice_lines(app, width) as u16 - 1;
    list_height(
        main_height(height)
            .saturating_sub(detail_height(app, width))
            .saturating_sub(extra),
    )
}

/// Draws the whole frame.
pub fn draw(f: &mut Frame, app: &App, now: u64, p: Palette) {
    let [title, main, notice, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(notice_lines(app, f.area().width) as u16),
        Constraint::Length(1),
    ])
    .areas(f.area());
    let shown = !matches!(
        app.mode,
        Mode::Peek { .. } | Mode::Wakes { .. } | Mode::Help
    );
    let (main, under) = match detail_lines(app, main.width).filter(|_| shown) {
        Some((heading, lines)) => {
            let [m, d] = Layout::vertical([
                Constraint::Fill(1),
                Constraint::Length(lines.len() as u16 + 1),
            ])
            .areas(main);
            (m, Some((d, heading, lines)))
        }
        None => (main, None),
    };
    if let Some((area, heading, lines)) = under {
        let block = Block::new()
            .borders(Borders::TOP)
            .title(Line::styled(heading, p.title()));
        let text: Vec<Line> = lines.into_iter().map(Line::raw).collect();
        f.render_widget(Paragraph::new(text).block(block), area);
    }
    f.render_widget(Paragraph::new(title_line(app, now, p)), title);
    match &app.mode {
        Mode::Peek { id, lines } => peek(f, main, app, id, lines, p),
        Mode::Wakes { lines, scroll } => wakes(f, main, lines, *scroll, now, p),
        Mode::Review(v) => super::review::draw(f, main, v, p),
        _ => list(f, main, app, now, p),
    }
    match &app.mode {
        Mode::PickKey { id, keys, at } => pick(
            f,
            main,
            &format!(" answer which decision of {id}? "),
            keys,
            *at,
            p,
        ),
        Mode::PickVerb { id, at } => {
            let verbs: Vec<(String, String)> = crate::grant::Verb::ALL
                .iter()
                .map(|v| (v.as_str().to_string(), v.what().to_string()))
                .collect();
            pick(
                f,
                main,
                &format!(" grant the first mate, once, on {id}: "),
                &verbs,
                *at,
                p,
            );
        }
        Mode::Help => help(f, main, p),
        _ => {}
    }
    f.render_widget(notice_text(app, notice.width, p), notice);
    f.render_widget(
        Paragraph::new(Line::styled(hints(&app.mode), p.dim())),
        keys,
    );
}

fn title_line(app: &App, now: u64, p: Palette) -> Line<'static> {
    let n = app.rows().len();
    let mut spans = vec![
        Span::styled("fm top", p.title()),
        Span::raw(format!(
            " \u{b7} {} \u{b7} {n} task{}",
            app.title,
            plural(n)
        )),
    ];
    let need = app.needing();
    if need > 0 {
        spans.push(Span::raw(" \u{b7} "));
        spans.push(Span::styled(format!("{need} need you"), p.new_mark()));
    }
    if app.new_wakes > 0 {
        spans.push(Span::raw(" \u{b7} "));
        spans.push(Span::styled(
            format!("{} new wake{} (w)", app.new_wakes, plural(app.new_wakes)),
            p.new_mark(),
        ));
    }
    if !app.filter.is_empty() {
        spans.push(Span::raw(format!(
            " \u{b7} filter \"{}\": {} shown",
            app.filter,
            app.visible_len()
        )));
    }
    spans.push(Span::styled(
        format!(" \u{b7} {}", &clock::human_utc(now)[11..]),
        p.dim(),
    ));
    Line::from(spans)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn width_of<'a>(cells: impl Iterator<Item = &'a str>, min: usize, max: usize) -> u16 {
    let w = cells.map(|c| c.chars().count()).max().unwrap_or(0);
    w.clamp(min, max) as u16
}

fn list(f: &mut Frame, area: Rect, app: &App, now: u64, p: Palette) {
    if !app.loaded {
        f.render_widget(Paragraph::new("reading the fleet\u{2026}"), area);
        return;
    }
    if app.visible_len() == 0 {
        let msg = if app.rows().is_empty() {
            "no tasks yet: write a brief and spawn a worker (fm-brief, fm-control spawn)"
        } else {
            "no task matches the filter (Esc clears it)"
        };
        f.render_widget(Paragraph::new(msg), area);
        return;
    }
    let height = list_height(area.height);
    let cursor = app.cursor();
    let window: Vec<(usize, &Row)> = app
        .visible()
        .enumerate()
        .skip(app.offset)
        .take(height)
        .collect();
    // The usage column only once some row in view was counted.
    let usage: Option<Vec<String>> = window.iter().any(|(_, r)| r.usage.is_some()).then(|| {
        window
            .iter()
            .map(|(_, r)| r.usage.map_or_else(|| "-".into(), |u| u.short()))
            .collect()
    });
    let mut widths = vec![
        Constraint::Length(1),
        Constraint::Length(width_of(window.iter().map(|(_, r)| r.id.as_str()), 2, 28)),
        Constraint::Length(7),
        Constraint::Length(width_of(
            window
                .iter()
                .map(|(_, r)| r.project.as_deref().unwrap_or("-")),
            7,
            20,
        )),
        Constraint::Length(8),
        Constraint::Length(5),
        Constraint::Length(4),
    ];
    if let Some(u) = &usage {
        widths.push(Constraint::Length(width_of(
            u.iter().map(String::as_str),
            5,
            16,
        )));
    }
    widths.push(Constraint::Fill(1));
    let rows = window.iter().enumerate().map(|(n, &(i, r))| {
        let (why, why_style) = match &r.attention {
            Some(a) => (a.reason(), p.attention(a)),
            None => (r.detail.clone(), Style::new()),
        };
        let selected = cursor == Some(i);
        let mut cells = vec![
            Span::raw(if selected { "\u{203a}" } else { " " }),
            Span::raw(r.id.clone()),
            Span::styled(r.state.as_str(), p.state(r.state)),
            Span::raw(r.project.clone().unwrap_or_else(|| "-".into())),
            Span::raw(ago(row_time(r), now)),
            Span::raw(r.inbox_pending.to_string()),
            Span::raw(r.open_decisions.len().to_string()),
        ];
        if let Some(u) = &usage {
            cells.push(Span::raw(u[n].clone()));
        }
        cells.push(Span::styled(why, why_style));
        let row = TRow::new(cells);
        if selected {
            row.style(p.selected())
        } else {
            row
        }
    });
    let mut header = vec!["", "ID", "STATE", "PROJECT", "AGE", "INBOX", "OPEN"];
    if usage.is_some() {
        header.push("USAGE");
    }
    header.push("WHY");
    let header = TRow::new(header).style(p.header());
    f.render_widget(Table::new(rows, widths).header(header), area);
}

fn peek(f: &mut Frame, area: Rect, app: &App, id: &str, lines: &[String], p: Palette) {
    let pane = app
        .rows()
        .iter()
        .find(|r| r.id == id)
        .and_then(|r| r.pane.clone())
        .unwrap_or_default();
    let block = Block::new()
        .borders(Borders::TOP)
        .title(Line::styled(format!(" peek {id} {pane} "), p.title()));
    let inner = block.inner(area);
    let fit = usize::from(inner.height);
    let from = lines.len().saturating_sub(fit);
    let text: Vec<Line> = lines[from..].iter().map(|l| Line::raw(l.clone())).collect();
    f.render_widget(Paragraph::new(text).block(block), area);
}

fn wakes(
    f: &mut Frame,
    area: Rect,
    lines: &[super::seen::FeedLine],
    scroll: usize,
    now: u64,
    p: Palette,
) {
    let block = Block::new().borders(Borders::TOP).title(Line::styled(
        " wakes (\u{25cf} new since you last looked) ",
        p.title(),
    ));
    let inner = block.inner(area);
    let end = scroll.min(lines.len());
    let from = end.saturating_sub(usize::from(inner.height));
    let shown = &lines[from..end];
    // A host's wake names its task as `<task>@<host>`.
    let task = |l: &super::seen::FeedLine| match &l.host {
        Some(h) => format!("{}@{h}", l.wake.task),
        None => l.wake.task.clone(),
    };
    let task_w = shown
        .iter()
        .map(|l| task(l).chars().count())
        .max()
        .unwrap_or(0);
    let kind_w = shown
        .iter()
        .map(|l| l.wake.kind.chars().count())
        .max()
        .unwrap_or(0);
    let text: Vec<Line> = shown
        .iter()
        .map(|l| {
            let w = &l.wake;
            Line::from(vec![
                if l.new {
                    Span::styled("\u{25cf} ", p.new_mark())
                } else {
                    Span::raw("  ")
                },
                Span::styled(format!("{:>8}  ", ago(Some(w.epoch), now)), p.dim()),
                Span::raw(format!("{:<task_w$}  ", task(l))),
                Span::styled(format!("{:<kind_w$}  ", w.kind), p.title()),
                Span::raw(w.text.clone()),
            ])
        })
        .collect();
    if text.is_empty() {
        f.render_widget(Paragraph::new("no wakes yet").block(block), area);
    } else {
        f.render_widget(Paragraph::new(text).block(block), area);
    }
}

/// A centred pop-up of `w`×`h` inside `area`.
fn popup(area: Rect, w: u16, h: u16) -> Rect {
    let [v] = Layout::vertical([Constraint::Length(h.min(area.height))])
        .flex(Flex::Center)
        .areas(area);
    let [r] = Layout::horizontal([Constraint::Length(w.min(area.width))])
        .flex(Flex::Center)
        .areas(v);
    r
}

fn pick(f: &mut Frame, area: Rect, title: &str, keys: &[(String, String)], at: usize, p: Palette) {
    let lines: Vec<Line> = keys
        .iter()
        .enumerate()
        .map(|(i, (k, t))| {
            let l = Line::raw(format!(" {k} \u{2014} {t}"));
            if i == at { l.style(p.selected()) } else { l }
        })
        .collect();
    let w = lines.iter().map(Line::width).max().unwrap_or(20) as u16 + 4;
    let r = popup(area, w.max(40), keys.len() as u16 + 2);
    f.render_widget(Clear, r);
    let block = Block::bordered().title(title.to_string());
    f.render_widget(Paragraph::new(lines).block(block), r);
}

const HELP: &[(&str, &str)] = &[
    (
        "\u{2191}/\u{2193} j/k",
        "move (PgUp/PgDn, g/G: page, first, last)",
    ),
    (
        "Enter",
        "jump into the worker's pane (switch-client, or attach)",
    ),
    ("p", "peek at the worker's screen (Esc back)"),
    ("s", "send the worker a message (as fm-send)"),
    (
        "r",
        "answer an open decision: pick the key, type the answer",
    ),
    (
        "n",
        "new worker: project, mode, intent, harness, id; brief + spawn",
    ),
    ("i", "interrupt the worker's turn (as fm-control interrupt)"),
    ("R", "relaunch the worker's agent: its note, then y/n once"),
    (
        "X",
        "tear down: worktree removed, state archived (asks y/n once)",
    ),
    (
        "d",
        "review: what the worker changed (n/N next file, q back)",
    ),
    ("L", "land the work the way its mode says (asks y/n once)"),
    ("a", "grant the first mate a verb on the task, once"),
    ("w", "the wakes feed; marks it seen"),
    ("/", "filter rows (id, project, state, reason); Esc clears"),
    ("?", "this help"),
    ("q", "quit (Ctrl-C too)"),
];

fn help(f: &mut Frame, area: Rect, p: Palette) {
    let mut lines = vec![Line::styled(
        "rows that need you come first: decision, blocked, approval, dialog, escalated, dead agent, failed",
        p.dim(),
    )];
    lines.push(Line::raw(""));
    for (k, what) in HELP {
        lines.push(Line::from(vec![
            Span::styled(format!(" {k:<12}"), p.title()),
            Span::raw(*what),
        ]));
    }
    let w = lines.iter().map(Line::width).max().unwrap_or(40) as u16 + 2;
    let r = popup(area, w, lines.len() as u16 + 2);
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" keys (any key closes) ")),
        r,
    );
}

/// The notice, wrapped to its area's `width`; a prompt or question as is.
fn notice_text(app: &App, width: u16, p: Palette) -> Paragraph<'static> {
    match (&app.mode, &app.notice) {
        (Mode::Input { .. } | Mode::Confirm { .. }, _) | (_, None) => {
            Paragraph::new(notice_line(app, p))
        }
        (_, Some(n)) => {
            let style = if n.error { p.error() } else { Style::new() };
            let mut lines = wrap(&n.text, usize::from(width.max(2)));
            lines.truncate(NOTICE_MAX);
            Paragraph::new(
                lines
                    .into_iter()
                    .map(|l| Line::styled(l, style))
                    .collect::<Vec<_>>(),
            )
        }
    }
}

fn notice_line(app: &App, p: Palette) -> Line<'static> {
    if let Mode::Input { purpose, text } = &app.mode {
        let prompt = match purpose {
            Purpose::Send { id } => format!("send to {id} \u{203a} "),
            Purpose::Answer { id, key } => format!("answer {id} [{key}] \u{203a} "),
            Purpose::Filter { .. } => "filter \u{203a} ".to_string(),
            Purpose::New(w) => w.prompt(),
            Purpose::Note { id } => {
                format!("relaunch {id} \u{b7} note for the new agent \u{203a} ")
            }
        };
        return Line::from(vec![
            Span::styled(prompt, p.title()),
            Span::raw(text.clone()),
            Span::styled("\u{2588}", p.dim()),
        ]);
    }
    if let Mode::ConfirmLand { id } = &app.mode {
        return Line::styled(super::review::question(id), p.title());
    }
    if let Mode::Confirm { id, act, .. } = &app.mode {
        return Line::styled(act.question(id), p.new_mark());
    }
    match &app.notice {
        Some(n) if n.error => Line::styled(n.text.clone(), p.error()),
        Some(n) => Line::raw(n.text.clone()),
        None => Line::raw(""),
    }
}

fn hints(mode: &Mode) -> &'static str {
    match mode {
        Mode::List => {
            "\u{2191}\u{2193} move \u{b7} \u{23ce} jump \u{b7} p peek \u{b7} s send \u{b7} r resolve \u{b7} n new \u{b7} w wakes \u{b7} / filter \u{b7} ? help \u{b7} q quit"
        }
        Mode::Peek { .. } => {
            "Esc back \u{b7} \u{23ce} jump \u{b7} s send \u{b7} r resolve (the screen refreshes every second)"
        }
        Mode::Input {
            purpose: Purpose::New(_),
            ..
        } => "\u{23ce} next \u{b7} Tab choices \u{b7} Esc cancel \u{b7} Ctrl-U clear",
        Mode::Input { .. } => "\u{23ce} send \u{b7} Esc cancel \u{b7} Ctrl-U clear",
        Mode::Confirm { .. } => "y yes \u{b7} any other key: no",
        Mode::PickKey { .. } => {
            "\u{2191}\u{2193} choose \u{b7} \u{23ce} answer it \u{b7} Esc cancel"
        }
        Mode::PickVerb { .. } => {
            "\u{2191}\u{2193} choose \u{b7} \u{23ce} grant it (1h, once) \u{b7} Esc cancel"
        }
        Mode::Wakes { .. } => "\u{2191}\u{2193} scroll \u{b7} Esc back",
        Mode::Help => "any key closes",
        Mode::Review(_) => super::review::HINTS,
        Mode::ConfirmLand { .. } => super::review::CONFIRM_HINTS,
    }
}

#[cfg(test)]
#[path = "view_tests.rs"]
mod tests;

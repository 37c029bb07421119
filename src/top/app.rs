//! The dashboard's state and what each key does, with no terminal and no
//! I/O: [`App::key`] changes the state and returns the [`Effect`] the loop
//! must carry out (jump, peek, send, resolve, open the wakes feed, start a
//! worker or act on one — [`super::actions`] — quit);
//! the loop reports back through [`App::set_rows`], [`App::show_peek`],
//! [`App::show_wakes`] and [`App::say`]. The rows are crew state's, sorted
//! attention first ([`crate::crew_state::sort_by_urgency`]); the selection
//! follows a task id, so a refresh that reorders rows never moves it to
//! another worker.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::actions::{Act, Known, NewSpec, NewWorker, Next};
use super::seen::FeedLine;
use crate::crew_state::{Row, sort_by_urgency};
use crate::grant::Verb;

/// What the main area shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    List,
    /// A worker's screen, refreshed while open.
    Peek {
        id: String,
        lines: Vec<String>,
    },
    /// A line being typed at the bottom.
    Input {
        purpose: Purpose,
        text: String,
    },
    /// Choosing which open decision to answer.
    PickKey {
        id: String,
        keys: Vec<(String, String)>,
        at: usize,
    },
    /// Choosing which verb to grant the first mate on task `id`.
    PickVerb {
        id: String,
        at: usize,
    },
    /// The wakes feed; lines after `new_from` were new when it opened.
    Wakes {
        lines: Vec<FeedLine>,
        scroll: usize,
    },
    Help,
    /// A task's review (`d`), loading or loaded.
    Review(super::review::ReviewView),
    /// `L`: asking once before landing task `id`.
    ConfirmLand {
        id: String,
    },
    /// Asking once (y/n) before a destructive `act` on task `id` (a
    /// relaunch with its `note`).
    Confirm {
        id: String,
        act: Act,
        note: Option<String>,
    },
}

/// What a typed line is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Purpose {
    /// A message to the worker.
    Send { id: String },
    /// The answer to decision `key`.
    Answer { id: String, key: String },
    /// The row filter (applied while typing; `before` is restored on Esc).
    Filter { before: String },
    /// One of the new worker's questions (`n`).
    New(Box<NewWorker>),
    /// The progress note a relaunch of `id` adds to its brief.
    Note { id: String },
}

/// What the loop must do after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Leave with this exit code.
    Quit(u8),
    /// Go to the worker's pane.
    Jump { id: String },
    /// Capture the worker's screen into [`Mode::Peek`].
    Peek { id: String },
    /// Queue a message (and ring).
    Send { id: String, body: String },
    /// Answer decision `key`: queue the answer, write the `resolved` line.
    Resolve {
        id: String,
        key: String,
        answer: String,
    },
    /// Read the feed into [`Mode::Wakes`] and mark it seen.
    OpenWakes,
    /// Grant the first mate `verb` on task `id` (`fm grant`'s use case).
    Grant { id: String, verb: Verb },
    /// Load task `id`'s review into [`Mode::Review`] (`fm review`'s use case).
    Review { id: String },
    /// Land task `id` (`fm land`'s use case).
    Land { id: String },
    /// Read what the home knows and ask the new worker's first question
    /// ([`App::start_new`]).
    StartNew,
    /// Write the brief and spawn the worker (`fm-brief`, `fm-control spawn`).
    New(NewSpec),
    /// A lifecycle verb on task `id` (`fm-control`'s use case), a
    /// relaunch with its note.
    Act {
        id: String,
        act: Act,
        note: Option<String>,
    },
}

/// A line for the status bar; `error` lines are shown as such.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub text: String,
    pub error: bool,
}

/// The dashboard.
#[derive(Debug, Clone)]
pub struct App {
    rows: Vec<Row>,
    /// Indices into `rows` that pass the filter, in order.
    visible: Vec<usize>,
    selected: Option<String>,
    /// First visible row of the list (scrolling).
    pub(crate) offset: usize,
    pub mode: Mode,
    pub filter: String,
    pub notice: Option<Notice>,
    /// Wakes after the dashboard's cursor.
    pub new_wakes: usize,
    /// Whether rows have been read at least once.
    pub loaded: bool,
    /// The home, for the title.
    pub title: String,
}

impl App {
    pub fn new(title: impl Into<String>) -> App {
        App {
            rows: Vec::new(),
            visible: Vec::new(),
            selected: None,
            offset: 0,
            mode: Mode::List,
            filter: String::new(),
            notice: None,
            new_wakes: 0,
            loaded: false,
            title: title.into(),
        }
    }

    /// Replaces the rows (sorting them) and keeps the selection on the same
    /// task when it is still shown.
    pub fn set_rows(&mut self, mut rows: Vec<Row>) {
        sort_by_urgency(&mut rows);
        let old = self.cursor();
        self.rows = rows;
        self.loaded = true;
        self.refilter_from(old);
    }

    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The rows shown, in order.
    pub fn visible(&self) -> impl Iterator<Item = &Row> {
        self.visible.iter().map(|&i| &self.rows[i])
    }

    pub fn visible_len(&self) -> usize {
        self.visible.len()
    }

    /// Position of the selection among the visible rows.
    pub fn cursor(&self) -> Option<usize> {
        let id = self.selected.as_deref()?;
        self.visible.iter().position(|&i| self.rows[i].id == id)
    }

    pub fn selected(&self) -> Option<&Row> {
        self.cursor().map(|c| &self.rows[self.visible[c]])
    }

    /// How many rows need the captain (whatever the filter).
    pub fn needing(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.urgency().needs_captain())
            .count()
    }

    fn refilter(&mut self) {
        self.refilter_from(self.cursor());
    }

    /// Recomputes the visible rows; `old` is where the selection was.
    fn refilter_from(&mut self, old: Option<usize>) {
        let needle = self.filter.to_lowercase();
        self.visible = (0..self.rows.len())
            .filter(|&i| needle.is_empty() || matches(&self.rows[i], &needle))
            .collect();
        if self.cursor().is_none() {
            // The selected task is gone or filtered out: stay at the same
            // place in the list.
            let at = old.unwrap_or(0).min(self.visible.len().saturating_sub(1));
            self.selected = self.visible.get(at).map(|&i| self.rows[i].id.clone());
        }
    }

    fn select_at(&mut self, at: usize) {
        if let Some(&i) = self.visible.get(at) {
            self.selected = Some(self.rows[i].id.clone());
        }
    }

    fn move_by(&mut self, delta: isize) {
        if self.visible.is_empty() {
            return;
        }
        let last = self.visible.len() - 1;
        let at = self.cursor().unwrap_or(0);
        let to = if delta < 0 {
            at.saturating_sub(delta.unsigned_abs())
        } else {
            at.saturating_add(delta.unsigned_abs())
        };
        self.select_at(to.min(last));
    }

    /// Keeps the selection inside a list window of `height` rows.
    pub fn scroll_into_view(&mut self, height: usize) {
        let height = height.max(1);
        let at = self.cursor().unwrap_or(0);
        if at < self.offset {
            self.offset = at;
        } else if at >= self.offset + height {
            self.offset = at + 1 - height;
        }
        let max = self.visible.len().saturating_sub(height);
        self.offset = self.offset.min(max);
    }

    pub fn say(&mut self, text: impl Into<String>) {
        self.notice = Some(Notice {
            text: text.into(),
            error: false,
        });
    }

    pub fn warn(&mut self, text: impl Into<String>) {
        self.notice = Some(Notice {
            text: text.into(),
            error: true,
        });
    }

    /// Shows (or refreshes) the peeked screen of `id`.
    pub fn show_peek(&mut self, id: &str, lines: Vec<String>) {
        self.mode = Mode::Peek {
            id: id.to_string(),
            lines,
        };
    }

    /// The id being peeked at, if any.
    pub fn peeking(&self) -> Option<&str> {
        match &self.mode {
            Mode::Peek { id, .. } => Some(id),
            _ => None,
        }
    }

    /// Task `id`'s review arrived: shown when its view is still open; a
    /// failure closes the view and says why.
    pub fn show_review(
        &mut self,
        id: &str,
        review: std::result::Result<&crate::route::review::Review, String>,
    ) {
        let Mode::Review(v) = &mut self.mode else {
            return;
        };
        if v.id != id {
            return;
        }
        match review {
            Ok(r) => v.show(r),
            Err(e) => {
                self.mode = Mode::List;
                self.warn(format!("{id}: cannot review: {e}"));
            }
        }
    }

    pub fn show_wakes(&mut self, lines: Vec<FeedLine>) {
        let scroll = lines.len();
        self.mode = Mode::Wakes { lines, scroll };
        self.new_wakes = 0;
    }

    /// Handles one key press.
    pub fn key(&mut self, k: KeyEvent) -> Option<Effect> {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && k.code == KeyCode::Char('c') {
            return Some(Effect::Quit(crate::error::exit::INTERRUPTED));
        }
        match std::mem::replace(&mut self.mode, Mode::List) {
            Mode::List => self.list_key(k),
            Mode::Help => None,
            Mode::Peek { id, lines } => self.peek_key(k, id, lines),
            Mode::Input { purpose, text } => self.input_key(k, purpose, text),
            Mode::PickKey { id, keys, at } => self.pick_key(k, id, keys, at),
            Mode::PickVerb { id, at } => self.pick_verb(k, id, at),
            Mode::Review(mut v) => {
                if v.key(k) {
                    self.mode = Mode::Review(v);
                }
                None
            }
            Mode::ConfirmLand { id } => {
                if k.code == KeyCode::Char('y') {
                    return Some(Effect::Land { id });
                }
                self.say(format!("{id}: not landed"));
                None
            }
            Mode::Confirm { id, act, note } => {
                if matches!(k.code, KeyCode::Char('y' | 'Y')) {
                    return Some(Effect::Act { id, act, note });
                }
                self.say(format!("{id}: nothing done (did not {})", act.verb()));
                None
            }
            Mode::Wakes { lines, scroll } => {
                let len = lines.len();
                let scroll = match k.code {
                    KeyCode::Up | KeyCode::Char('k') => scroll.saturating_sub(1),
                    KeyCode::Down | KeyCode::Char('j') => (scroll + 1).min(len),
                    KeyCode::PageUp => scroll.saturating_sub(10),
                    KeyCode::PageDown => (scroll + 10).min(len),
                    KeyCode::Esc | KeyCode::Char('q' | 'w') => return None,
                    _ => scroll,
                };
                self.mode = Mode::Wakes { lines, scroll };
                None
            }
        }
    }

    fn list_key(&mut self, k: KeyEvent) -> Option<Effect> {
        match k.code {
            KeyCode::Up | KeyCode::Char('k') => self.move_by(-1),
            KeyCode::Down | KeyCode::Char('j') => self.move_by(1),
            KeyCode::PageUp => self.move_by(-10),
            KeyCode::PageDown => self.move_by(10),
            KeyCode::Home | KeyCode::Char('g') => self.select_at(0),
            KeyCode::End | KeyCode::Char('G') => {
                self.select_at(self.visible.len().saturating_sub(1));
            }
            KeyCode::Char('q') => return Some(Effect::Quit(0)),
            KeyCode::Char('?') => self.mode = Mode::Help,
            KeyCode::Char('w') => return Some(Effect::OpenWakes),
            KeyCode::Char('/') => {
                self.mode = Mode::Input {
                    purpose: Purpose::Filter {
                        before: self.filter.clone(),
                    },
                    text: self.filter.clone(),
                }
            }
            KeyCode::Esc if !self.filter.is_empty() => {
                self.filter.clear();
                self.refilter();
            }
            KeyCode::Enter => return self.with_pane(|id| Effect::Jump { id }),
            KeyCode::Char('p') => return self.with_pane(|id| Effect::Peek { id }),
            KeyCode::Char('s') => self.start_send(),
            KeyCode::Char('r') => self.start_resolve(),
            KeyCode::Char('d') => {
                let id = self.selected()?.id.clone();
                self.mode = Mode::Review(super::review::ReviewView::loading(&id));
                return Some(Effect::Review { id });
            }
            KeyCode::Char('L') => {
                if let Some(row) = self.selected() {
                    self.mode = Mode::ConfirmLand { id: row.id.clone() };
                }
            }
            KeyCode::Char('n') => return Some(Effect::StartNew),
            KeyCode::Char('i') => return self.start_act(Act::Interrupt),
            KeyCode::Char('R') => return self.start_act(Act::Relaunch),
            KeyCode::Char('X') => return self.start_act(Act::Teardown),
            KeyCode::Char('a') => {
                if let Some(row) = self.selected() {
                    self.mode = Mode::PickVerb {
                        id: row.id.clone(),
                        at: 0,
                    };
                }
            }
            _ => {}
        }
        None
    }

    /// `make(id)` for the selected row when it records a pane.
    fn with_pane(&mut self, make: impl FnOnce(String) -> Effect) -> Option<Effect> {
        let row = self.selected()?;
        if row.pane.is_none() {
            let msg = format!("{}: no pane recorded", row.id);
            self.warn(msg);
            return None;
        }
        Some(make(row.id.clone()))
    }

    /// `act` on the selected row: at once, or after asking once.
    fn start_act(&mut self, act: Act) -> Option<Effect> {
        let id = self.selected()?.id.clone();
        if act == Act::Relaunch {
            // `fm-control relaunch` needs a note: asked first.
            self.mode = Mode::Input {
                purpose: Purpose::Note { id },
                text: String::new(),
            };
            return None;
        }
        if act.asks() {
            self.mode = Mode::Confirm {
                id,
                act,
                note: None,
            };
            return None;
        }
        Some(Effect::Act {
            id,
            act,
            note: None,
        })
    }

    /// Asks the new worker's first question, offering what the home knows.
    pub fn start_new(&mut self, known: Known) {
        let (w, text) = NewWorker::start(known);
        self.mode = Mode::Input {
            purpose: Purpose::New(Box::new(w)),
            text,
        };
    }

    fn start_send(&mut self) {
        if let Some(row) = self.selected() {
            self.mode = Mode::Input {
                purpose: Purpose::Send { id: row.id.clone() },
                text: String::new(),
            };
        }
    }

    fn start_resolve(&mut self) {
        let Some(row) = self.selected() else { return };
        let id = row.id.clone();
        let keys: Vec<(String, String)> = row
            .open_decisions
            .iter()
            .rev()
            .map(|d| (d.key.clone(), d.text.clone()))
            .collect();
        match keys.len() {
            0 => self.warn(format!("{id}: no open decision")),
            1 => {
                self.mode = Mode::Input {
                    purpose: Purpose::Answer {
                        id,
                        key: keys[0].0.clone(),
                    },
                    text: String::new(),
                }
            }
            _ => self.mode = Mode::PickKey { id, keys, at: 0 },
        }
    }

    fn peek_key(&mut self, k: KeyEvent, id: String, lines: Vec<String>) -> Option<Effect> {
        match k.code {
            KeyCode::Esc | KeyCode::Char('q' | 'p') => return None,
            KeyCode::Enter => {
                self.mode = Mode::Peek {
                    id: id.clone(),
                    lines,
                };
                return Some(Effect::Jump { id });
            }
            KeyCode::Char('s') => {
                self.selected = Some(id);
                self.refilter();
                self.start_send();
                return None;
            }
            KeyCode::Char('r') => {
                self.selected = Some(id);
                self.refilter();
                self.start_resolve();
                return None;
            }
            _ => {}
        }
        self.mode = Mode::Peek { id, lines };
        None
    }

    fn input_key(&mut self, k: KeyEvent, purpose: Purpose, mut text: String) -> Option<Effect> {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        match k.code {
            KeyCode::Esc => {
                if let Purpose::Filter { before } = purpose {
                    self.filter = before;
                    self.refilter();
                }
                return None;
            }
            KeyCode::Enter => return self.submit(purpose, text),
            KeyCode::Tab => {
                if let Purpose::New(w) = &purpose
                    && let Some(next) = w.tab(&text)
                {
                    text = next;
                }
            }
            KeyCode::Backspace => {
                text.pop();
            }
            KeyCode::Char('u') if ctrl => text.clear(),
            KeyCode::Char(c) if !ctrl => text.push(c),
            _ => {}
        }
        if matches!(purpose, Purpose::Filter { .. }) {
            self.filter.clone_from(&text);
            self.refilter();
        }
        self.mode = Mode::Input { purpose, text };
        None
    }

    fn submit(&mut self, purpose: Purpose, text: String) -> Option<Effect> {
        match purpose {
            Purpose::Filter { .. } => {
                self.filter = text.trim().to_string();
                self.refilter();
                None
            }
            Purpose::New(w) => match w.clone().answer(&text) {
                Ok(Next::Ask(w, text)) => {
                    self.mode = Mode::Input {
                        purpose: Purpose::New(w),
                        text,
                    };
                    None
                }
                Ok(Next::Done(spec)) => Some(Effect::New(spec)),
                Err(why) => {
                    // The same question again, the answer kept to mend.
                    self.warn(why);
                    self.mode = Mode::Input {
                        purpose: Purpose::New(w),
                        text,
                    };
                    None
                }
            },
            _ if text.trim().is_empty() => {
                self.warn("nothing typed; nothing sent");
                None
            }
            Purpose::Send { id } => Some(Effect::Send { id, body: text }),
            Purpose::Note { id } => {
                self.mode = Mode::Confirm {
                    id,
                    act: Act::Relaunch,
                    note: Some(text.trim().to_string()),
                };
                None
            }
            Purpose::Answer { id, key } => Some(Effect::Resolve {
                id,
                key,
                answer: text,
            }),
        }
    }

    fn pick_key(
        &mut self,
        k: KeyEvent,
        id: String,
        keys: Vec<(String, String)>,
        at: usize,
    ) -> Option<Effect> {
        let last = keys.len().saturating_sub(1);
        let at = match k.code {
            KeyCode::Esc | KeyCode::Char('q') => return None,
            KeyCode::Up | KeyCode::Char('k') => at.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => (at + 1).min(last),
            KeyCode::Enter => {
                self.mode = Mode::Input {
                    purpose: Purpose::Answer {
                        id,
                        key: keys[at].0.clone(),
                    },
                    text: String::new(),
                };
                return None;
            }
            _ => at,
        };
        self.mode = Mode::PickKey { id, keys, at };
        None
    }
}

impl App {
    fn pick_verb(&mut self, k: KeyEvent, id: String, at: usize) -> Option<Effect> {
        let last = Verb::ALL.len() - 1;
        let at = match k.code {
            KeyCode::Esc | KeyCode::Char('q') => return None,
            KeyCode::Up | KeyCode::Char('k') => at.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => (at + 1).min(last),
            KeyCode::Enter => {
                return Some(Effect::Grant {
                    id,
                    verb: Verb::ALL[at.min(last)],
                });
            }
            _ => at,
        };
        self.mode = Mode::PickVerb { id, at };
        None
    }
}

/// Whether the row mentions `needle` (lower case) in its id, project,
/// state, reason or detail.
fn matches(r: &Row, needle: &str) -> bool {
    let reason = r
        .attention
        .as_ref()
        .map(super::super::crew_state::attention::Attention::reason)
        .unwrap_or_default();
    [
        r.id.as_str(),
        r.project.as_deref().unwrap_or(""),
        r.state.as_str(),
        &reason,
        &r.detail,
    ]
    .iter()
    .any(|f| f.to_lowercase().contains(needle))
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;

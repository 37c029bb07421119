//! What needs the captain now (bare `fm`, docs/spec/fm.md#bare-fm): the
//! rows `fm top` puts first — those with an [`Attention`], in its order
//! ([`sort_by_urgency`]) — each with its reason and the commands that act
//! on it; or, when nothing does, the fleet's counts.
//!
//! A pure function of the fleet's rows and `now`: the caller reads them
//! with the one fleet reader every view uses (`route::fleet`). The list
//! is capped so a fleet of hundreds prints a screenful; the rest are
//! counted and `fm top` named.

use crate::crew_state::attention::Attention;
use crate::crew_state::{Row, State, sort_by_urgency};

/// Most rows listed; the others are counted.
pub const MAX_ROWS: usize = 20;

/// Longest reason printed (characters); a longer one is cut with `…`.
const MAX_REASON: usize = 120;

/// The report bare `fm` prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeedsYou {
    /// The rows that need the captain, most pressing first, at most
    /// [`MAX_ROWS`].
    pub items: Vec<Item>,
    /// How many more need the captain than are listed.
    pub more: usize,
    /// Every row of the fleet.
    pub total: usize,
    /// How many rows are in each state, in [`State`] order, zeros left out.
    pub counts: Vec<(State, usize)>,
}

/// One row that needs the captain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// `fix-login`, or `fix-login@build1` for a task on a host.
    pub task: String,
    pub reason: String,
    /// Seconds waited, when known.
    pub waiting: Option<u64>,
    /// The next commands, each a line the captain can type.
    pub commands: Vec<String>,
}

/// The report for `rows` at `now`.
pub fn of(mut rows: Vec<Row>, now: u64) -> NeedsYou {
    sort_by_urgency(&mut rows);
    let total = rows.len();
    let mut counts: Vec<(State, usize)> = Vec::new();
    for r in &rows {
        match counts.iter_mut().find(|(s, _)| *s == r.state) {
            Some((_, n)) => *n += 1,
            None => counts.push((r.state, 1)),
        }
    }
    counts.sort_by_key(|(s, _)| *s as u8);
    let needing: Vec<&Row> = rows
        .iter()
        .filter(|r| r.attention.is_some() && r.urgency().needs_captain())
        .collect();
    let more = needing.len().saturating_sub(MAX_ROWS);
    let items = needing
        .into_iter()
        .take(MAX_ROWS)
        .filter_map(|r| {
            let a = r.attention.as_ref()?;
            Some(Item {
                task: match &r.host {
                    Some(h) => format!("{}@{h}", r.id),
                    None => r.id.clone(),
                },
                reason: cut(&a.reason()),
                waiting: a.since().or(r.current_at).map(|t| now.saturating_sub(t)),
                commands: commands(&r.id, a),
            })
        })
        .collect();
    NeedsYou {
        items,
        more,
        total,
        counts,
    }
}

/// The commands that act on `a` for task `id`.
fn commands(id: &str, a: &Attention) -> Vec<String> {
    let q = word(id);
    let peek = format!("fm peek {q}");
    match a {
        Attention::Decision { key, .. } => vec![
            format!("fm send {q} --resolve-key {} -- '<answer>'", word(key)),
            peek,
        ],
        Attention::Blocked { key: Some(k), .. } => vec![
            format!("fm send {q} --resolve-key {} -- '<how to go on>'", word(k)),
            peek,
        ],
        Attention::Blocked { key: None, .. } => {
            vec![peek, format!("fm send {q} '<what to fix>'")]
        }
        Attention::Approval { .. } => vec![format!("fm crew-state {q}"), peek],
        Attention::Dialog { .. } => vec![
            format!("fm attach {q}"),
            format!("fm send {q} --key Enter|Escape"),
        ],
        Attention::Escalated { .. } => vec![peek, format!("fm attach {q}")],
        // A pane gone (its tmux server died, a reboot) is brought back
        // with the agent's own conversation by `fm restore`; an agent that
        // exited in its pane is relaunched.
        Attention::DeadAgent { which, .. } if which.starts_with("pane gone") => vec![
            format!("fm restore {q}"),
            format!("fm control {q} relaunch --note '<progress so far>'"),
            format!("fm control {q} teardown"),
        ],
        Attention::DeadAgent { .. } => vec![
            format!("fm control {q} relaunch --note '<progress so far>'"),
            format!("fm control {q} teardown"),
        ],
        Attention::Failed { .. } => vec![
            peek,
            format!("fm control {q} relaunch --note '<what to try>'"),
        ],
    }
}

/// `s` as one shell word: as it is when it is plain, else single-quoted.
fn word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-@%+=:,/".contains(c));
    if plain {
        s.to_string()
    } else {
        crate::shq::quote(s)
    }
}

fn cut(s: &str) -> String {
    if s.chars().count() <= MAX_REASON {
        return s.to_string();
    }
    let mut out: String = s.chars().take(MAX_REASON - 1).collect();
    out.push('\u{2026}');
    out
}

impl NeedsYou {
    /// The text bare `fm` prints.
    pub fn text(&self) -> String {
        let counts = self.counts_line();
        if self.items.is_empty() {
            return format!("nothing needs you now: {counts}\n  fm top\n");
        }
        let n = self.items.len() + self.more;
        let mut out = format!(
            "{n} {} you ({counts}):\n",
            if n == 1 { "needs" } else { "need" }
        );
        for it in &self.items {
            out.push_str(&it.task);
            out.push_str("  ");
            out.push_str(&it.reason);
            if let Some(w) = it.waiting {
                out.push_str(&format!(" ({})", crate::clock::age(w)));
            }
            out.push('\n');
            for c in &it.commands {
                out.push_str("  ");
                out.push_str(c);
                out.push('\n');
            }
        }
        if self.more > 0 {
            out.push_str(&format!("\u{2026} and {} more: fm top\n", self.more));
        } else {
            out.push_str("the whole fleet: fm top\n");
        }
        out
    }

    /// `12 workers: 8 working, 3 idle, 1 done`, or `no workers`.
    fn counts_line(&self) -> String {
        if self.total == 0 {
            return "no workers".to_string();
        }
        let by: Vec<String> = self
            .counts
            .iter()
            .map(|(s, n)| format!("{n} {}", s.as_str()))
            .collect();
        format!(
            "{} worker{}: {}",
            self.total,
            if self.total == 1 { "" } else { "s" },
            by.join(", ")
        )
    }
}

#[cfg(test)]
#[path = "needs_you_tests.rs"]
mod tests;

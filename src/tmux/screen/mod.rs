//! Reading a pane's screen (docs/spec/ring.md#delivery, docs/spec/crew-state.md#resolution):
//! whether the harness shows
//! the agent busy, whether a dialog owns the keyboard, what the composer
//! holds, whether a typed doorbell still sits unsent, whether the line
//! under the cursor holds someone's input.
//!
//! Pure functions of the captured text and the harness's reading rules
//! ([`Rules`]), so the ring protocol ([`super::deliver`]), the watcher,
//! `fm-control` and crew state decide from the same reading, and every rule
//! is tested without tmux — over the real agents' captured screens in
//! `tests/fixtures/screens/` among others.
//!
//! The screen is read as `capture-pane -e` gives it: SGR escapes are kept
//! so that *dim* (faint, SGR 2) text can be told from typed text — the
//! real agents draw their composer placeholder ("Ask Codex to do
//! anything", "Press up to edit queued messages") dim, and in plain text a
//! placeholder is indistinguishable from someone's half-typed words. A
//! screen without escapes (a plain capture, a test's text) reads the same
//! with nothing dim.
//!
//! The composer is recognised positively or not at all: the last line
//! matching the profile's `composer_regex`, and — when the profile has a
//! `composer_below_regex` — only when that line is followed, at the bottom
//! of the screen, by the line the agent always draws under its composer
//! (Claude Code's box rule, Codex's status line). Anything else (a dialog,
//! an overlay, a screen still booting) means "no composer": nothing may be
//! typed and no Enter pressed.

mod text;

pub use text::Screen;
use text::{Line, blank, cells_of, typed};

use crate::harness::{HarnessProfile, Rules};

/// Lines of the screen read for busy checks and, without a
/// `composer_below_regex`, for the composer line.
const TAIL_LINES: usize = 12;

/// How many lines the composer's continuation lines and the blank lines
/// after them may span before the line below the composer must come.
const BELOW_WITHIN: usize = 3;

/// Non-blank lines the agent may draw under the line below its composer
/// (footers, hints) for the composer still to count as at the bottom.
const UNDER_BELOW_MAX: usize = 3;

/// What the composer shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Composer {
    /// The profile cannot read a composer (no `composer_regex`).
    Unknown,
    /// No composer is recognised on the screen: a dialog or overlay, a
    /// screen still booting, or one the profile does not know.
    Absent,
    /// The composer, holding this text (`""` = empty; placeholders do not
    /// count; continuation lines joined with `\n`).
    Holds(String),
}

/// Reads the composer (see the module doc).
pub fn composer(rules: &Rules, screen: &Screen) -> Composer {
    let Some(re) = rules.composer else {
        return Composer::Unknown;
    };
    let lines = &screen.lines;
    let Some(i) = (0..lines.len())
        .rev()
        .find(|&i| re.is_match(&lines[i].text))
    else {
        return Composer::Absent;
    };
    let first_line = |line: &Line| {
        let caps = re.captures(&line.text)?;
        let g = caps.get(1)?;
        Some(typed(cells_of(line, g.start(), g.end())))
    };
    let Some(below) = rules.composer_below else {
        // No marker below: the composer must be among the last lines.
        let tail_start = nonblank_tail_start(screen, TAIL_LINES);
        if i < tail_start {
            return Composer::Absent;
        }
        return Composer::Holds(first_line(&lines[i]).unwrap_or_default().trim().into());
    };
    let mut text = first_line(&lines[i]).unwrap_or_default();
    let mut j = i + 1;
    // Continuation lines: indented two columns, not the marker itself.
    while j < lines.len()
        && lines[j].text.starts_with("  ")
        && !blank(&lines[j].text)
        && !below.is_match(&lines[j].text)
    {
        let cells = lines[j].cells.get(2..).unwrap_or(&[]);
        text.push('\n');
        text.push_str(&typed(cells));
        j += 1;
    }
    let marker = (j..lines.len().min(j + BELOW_WITHIN))
        .take_while(|&k| below.is_match(&lines[k].text) || blank(&lines[k].text))
        .find(|&k| below.is_match(&lines[k].text));
    let Some(k) = marker else {
        return Composer::Absent;
    };
    let under = lines[k + 1..].iter().filter(|l| !blank(&l.text)).count();
    if under > UNDER_BELOW_MAX {
        return Composer::Absent;
    }
    Composer::Holds(text.trim().to_string())
}

/// Index of the first of the last `n` non-blank lines.
fn nonblank_tail_start(screen: &Screen, n: usize) -> usize {
    let mut seen = 0;
    for (i, l) in screen.lines.iter().enumerate().rev() {
        if !blank(&l.text) {
            seen += 1;
            if seen == n {
                return i;
            }
        }
    }
    0
}

/// The dialog the screen shows, if any (the first of the profile's
/// dialogs whose regex matches a line).
pub fn dialog<'r>(rules: &Rules<'r>, screen: &Screen) -> Option<&'r str> {
    rules
        .dialogs
        .iter()
        .find(|d| screen.plain_lines().any(|l| d.regex.is_match(l)))
        .map(|d| d.name.as_str())
}

/// Whether the screen's tail matches the profile's busy regex.
pub fn busy(rules: &Rules, screen: &Screen) -> bool {
    let Some(re) = rules.busy else {
        return false;
    };
    let mut seen = 0;
    for l in screen.plain_lines().rev() {
        if blank(l) {
            continue;
        }
        if re.is_match(l) {
            return true;
        }
        seen += 1;
        if seen == TAIL_LINES {
            break;
        }
    }
    false
}

/// How long after its busy record an agent may not yet show the turn it
/// announced: Claude Code runs its prompt hooks with the submitted text
/// still in the composer and no busy line drawn.
pub const TURN_DRAW_SECS: u64 = 2;

/// Whether the screen overrules a busy record `record_age_secs` old. Only
/// for a profile whose busy regex shows for the whole of every turn
/// ([`Rules::busy_whole_turn`]), and only when the screen positively reads
/// idle: no dialog, no busy line, and a composer recognised at the bottom
/// that is empty — or that holds text once the record is older than
/// [`TURN_DRAW_SECS`] (a prompt interrupted before its first token is put
/// back into the composer). A turn interrupted from the keyboard ends with
/// no hook at all (Claude Code runs no `Stop` hook then), so the busy
/// record it began with would otherwise stay.
pub fn overrules_busy_record(rules: &Rules, screen: &Screen, record_age_secs: u64) -> bool {
    if !rules.busy_whole_turn || rules.busy.is_none() {
        return false;
    }
    if dialog(rules, screen).is_some() || busy(rules, screen) {
        return false;
    }
    match composer(rules, screen) {
        Composer::Holds(text) => text.is_empty() || record_age_secs > TURN_DRAW_SECS,
        Composer::Absent | Composer::Unknown => false,
    }
}

/// Shortest piece of the doorbell that counts as the doorbell itself: a
/// composer may show a long line scrolled or cut, but a few characters
/// (`m`, `then run`) are far more likely someone's own typing, and pressing
/// Enter on them would send it.
const DOORBELL_PIECE: usize = 20;

/// Whether `piece` is (part of) the doorbell `door`: the whole doorbell
/// (once or more, and nothing else), or a start or an end of it at least
/// [`DOORBELL_PIECE`] bytes long (or all of a shorter doorbell). Someone's
/// text with the doorbell glued to it is not: Enter would send theirs too.
fn is_doorbell_piece(piece: &str, door: &str) -> bool {
    if piece.is_empty() || door.is_empty() {
        return false;
    }
    if piece.contains(door) {
        return piece.replace(door, "").trim().is_empty();
    }
    piece.len() >= DOORBELL_PIECE.min(door.len())
        && (door.starts_with(piece) || door.ends_with(piece))
}

/// Whether composer text is (part of) the doorbell: as typed, or with the
/// composer's line breaks (a wrapped doorbell, or the newline a swallowed
/// Enter left after it) taken out.
pub fn holds_doorbell(text: &str, line: &str) -> bool {
    let door = line.trim();
    let text = text.trim();
    is_doorbell_piece(text, door)
        || (text.contains('\n') && {
            let joined: String = text.split('\n').map(str::trim).collect::<Vec<_>>().join("");
            let spaced: String = text
                .split('\n')
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ");
            is_doorbell_piece(joined.trim(), door) || is_doorbell_piece(spaced.trim(), door)
        })
}

/// Prompt endings a bare cursor line may show with nothing typed after.
const PROMPTS: &[&str] = &["$", "#", ">", "%", "\u{276f}", "\u{203a}"];

/// Whether the line under the cursor (no composer regex to read) holds
/// someone's input. Free is an empty line, or one that ends in a prompt mark
/// (`$`, `#`, `>`, `%`, `❯`, `›`, after dropping trailing blanks and
/// box-drawing borders) with no earlier mark followed by a space — that is,
/// a bare prompt. Deliberately conservative — `user@host:~$ ` and an empty
/// line are free; `$ echo HALF`, `user@host:~$ echo HALF >` (a command that
/// happens to end in a mark), or output the cursor sits after, are not —
/// because typing onto someone's half-written command is the one harm a
/// doorbell can do.
pub(crate) fn holds_input(cursor_line: &str) -> bool {
    let border = |c: char| c.is_whitespace() || ('\u{2500}'..='\u{257f}').contains(&c);
    let line = cursor_line.trim_matches(border);
    if line.is_empty() {
        return false;
    }
    let Some(head) = PROMPTS.iter().find_map(|p| line.strip_suffix(p)) else {
        return true;
    };
    PROMPTS.iter().any(|p| head.contains(&format!("{p} ")))
}

/// True while the doorbell still sits unsent on the screen. With a
/// `composer_regex` the composer decides; without one, the cursor's line
/// (when tmux reports it) or else the last non-blank line still ending in
/// the doorbell — or holding its wrapped tail — means unsent.
pub(crate) fn unsent(
    rules: &Rules,
    screen: &Screen,
    cursor_line: Option<&str>,
    line: &str,
) -> bool {
    if rules.composer.is_some() {
        return matches!(composer(rules, screen), Composer::Holds(t) if holds_doorbell(&t, line));
    }
    let door = line.trim();
    // The cursor may sit after the doorbell's wrapped tail, however short:
    // only an exact end of the doorbell counts, so someone's own text
    // rarely can.
    let shows = |l: &str| {
        let l = l.trim();
        !l.is_empty() && (l.ends_with(door) || door.ends_with(l))
    };
    match cursor_line {
        Some(l) => shows(l),
        None => screen
            .plain_lines()
            .rev()
            .find(|l| !blank(l))
            .is_some_and(shows),
    }
}

#[cfg(test)]
#[path = "screen_tests.rs"]
mod tests;

/// The reading rules of a profile (none without one).
pub(crate) fn rules_of(profile: Option<&HarnessProfile>) -> Rules<'_> {
    profile.map(HarnessProfile::rules).unwrap_or_default()
}

/// The dialog a profile recognises on a captured screen, by name.
pub(crate) fn screen_dialog(profile: Option<&HarnessProfile>, screen: &str) -> Option<String> {
    dialog(&rules_of(profile), &Screen::parse_text(screen)).map(str::to_string)
}

/// Whether the screen tail matches the profile's busy regex.
pub(crate) fn screen_busy(profile: Option<&HarnessProfile>, screen: &str) -> bool {
    busy(&rules_of(profile), &Screen::parse_text(screen))
}

/// [`overrules_busy_record`] for a profile and a captured screen.
pub(crate) fn screen_overrules_busy_record(
    profile: Option<&HarnessProfile>,
    screen: &str,
    record_age_secs: u64,
) -> bool {
    overrules_busy_record(&rules_of(profile), &Screen::parse(screen), record_age_secs)
}

/// [`unsent`] for a profile and a plain screen.
pub(crate) fn unsent_plain(
    profile: Option<&HarnessProfile>,
    screen: &str,
    cursor_line: Option<&str>,
    line: &str,
) -> bool {
    unsent(
        &rules_of(profile),
        &Screen::parse(screen),
        cursor_line,
        line,
    )
}

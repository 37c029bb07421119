//! Reading a pane's screen (SPEC §5.3, §9.2): whether the harness shows
//! the agent busy, what its composer holds, whether a typed doorbell still
//! sits unsent, whether the line under the cursor holds someone's input.
//!
//! Pure functions of the captured text and the harness profile, so the ring
//! protocol ([`super::deliver`]), the watcher and crew state decide from
//! the same reading, and every rule is tested without tmux.

use crate::harness::HarnessProfile;

/// Lines of the screen read for busy/composer checks.
const TAIL_LINES: usize = 12;

fn last_nonblank_lines(screen: &str, n: usize) -> Vec<&str> {
    let mut v: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    let cut = v.len().saturating_sub(n);
    v.drain(..cut);
    v
}

/// The composer's current text, if the profile can read it.
pub(crate) fn composer_text(profile: Option<&HarnessProfile>, screen: &str) -> Option<String> {
    let re = profile?.composer_regex.as_ref()?;
    last_nonblank_lines(screen, TAIL_LINES)
        .iter()
        .rev()
        .find_map(|l| {
            re.captures(l).map(|c| {
                c.get(1)
                    .map(|m| m.as_str().trim().to_string())
                    .unwrap_or_default()
            })
        })
}

/// Whether the screen tail matches the profile's busy regex.
pub(crate) fn screen_busy(profile: Option<&HarnessProfile>, screen: &str) -> bool {
    let Some(re) = profile.and_then(|p| p.busy_regex.as_ref()) else {
        return false;
    };
    last_nonblank_lines(screen, TAIL_LINES)
        .iter()
        .any(|l| re.is_match(l))
}

/// Shortest piece of the doorbell that counts as the doorbell itself: a
/// composer may show a long line scrolled or cut, but a few characters
/// (`m`, `then run`) are far more likely someone's own typing, and pressing
/// Enter on them would send it.
const DOORBELL_PIECE: usize = 20;

/// Whether `piece` is (part of) the doorbell `door`: it holds the whole
/// doorbell (once or more), or is a start or an end of it at least
/// [`DOORBELL_PIECE`] bytes long (or all of a shorter doorbell).
fn is_doorbell_piece(piece: &str, door: &str) -> bool {
    if piece.is_empty() || door.is_empty() {
        return false;
    }
    if piece.contains(door) {
        return true;
    }
    piece.len() >= DOORBELL_PIECE.min(door.len())
        && (door.starts_with(piece) || door.ends_with(piece))
}

/// Whether composer text is (part of) the doorbell.
pub(crate) fn holds_doorbell(text: &str, line: &str) -> bool {
    is_doorbell_piece(text.trim(), line.trim())
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
    profile: Option<&HarnessProfile>,
    screen: &str,
    cursor_line: Option<&str>,
    line: &str,
) -> bool {
    if profile.and_then(|p| p.composer_regex.as_ref()).is_some() {
        return composer_text(profile, screen).is_some_and(|t| holds_doorbell(&t, line));
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
        None => last_nonblank_lines(screen, 1)
            .first()
            .is_some_and(|l| shows(l)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_composer_regex_the_cursor_line_decides() {
        assert!(unsent(None, "", Some("$ : ring"), ": ring"));
        assert!(unsent(None, "", Some("ng"), ": ring"));
        assert!(!unsent(None, ": ring\n", Some(""), ": ring"));
        assert!(unsent(None, "x\n: ring\n\n", None, ": ring"));
    }

    #[test]
    fn cursor_lines_with_input_are_told_from_bare_prompts() {
        for free in [
            "",
            "   ",
            "$ ",
            "user@host:~/src$ ",
            "# ",
            "> ",
            "% ",
            "\u{276f} ",
            "\u{2503}  \u{2503}",
            "(venv) me@box ~ % ",
        ] {
            assert!(!holds_input(free), "{free:?}");
        }
        for busy in [
            "$ echo HALF",
            "> half a thought",
            "Loading",
            "\u{276f} git sta",
            // Commands that happen to end in a prompt mark.
            "user@host:~$ echo HALF >",
            "$ echo HALF>",
            "root@box:/# make all #",
            "me@box ~ % ls %",
        ] {
            assert!(holds_input(busy), "{busy:?}");
        }
    }
}

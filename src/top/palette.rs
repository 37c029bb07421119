//! The dashboard's styles: a colour per state (the fleet table's,
//! docs/spec/crew-state.md#output) and per attention, or — with `NO_COLOR`, or on a terminal that
//! has no colours — monochrome, where only bold, dim and reverse video
//! tell rows apart (and the words always do).

use ratatui::style::{Color, Modifier, Style};

use crate::crew_state::{Attention, State};

/// Colour or monochrome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Palette {
    pub colour: bool,
}

/// `TERM` values of terminals without colour.
fn monochrome_term(term: &str) -> bool {
    matches!(
        term,
        "dumb" | "vt52" | "vt100" | "vt102" | "vt220" | "vt320" | "ansi-mono"
    ) || term.ends_with("-mono")
        || term.ends_with("-m")
}

impl Palette {
    /// From the environment: no colour when `NO_COLOR` is set (non-empty)
    /// or `TERM` names a monochrome terminal.
    pub fn from_env(no_color: Option<&str>, term: Option<&str>) -> Palette {
        let no_color = no_color.is_some_and(|v| !v.is_empty());
        let mono = term.is_some_and(monochrome_term);
        Palette {
            colour: !(no_color || mono),
        }
    }

    fn fg(self, c: Color) -> Style {
        if self.colour {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }

    pub fn state(self, s: State) -> Style {
        match s {
            State::Working => self.fg(Color::Green),
            State::Idle | State::Unknown => self.fg(Color::DarkGray),
            State::Parked => self.fg(Color::Yellow),
            State::Blocked => self.fg(Color::Red).add_modifier(Modifier::BOLD),
            State::Paused => self.fg(Color::Cyan),
            State::Done => self.fg(Color::Blue),
            State::Failed => self.fg(Color::Red),
            State::Exited => self.fg(Color::Magenta),
        }
    }

    /// The reason of a row that needs the captain: bold, coloured by kind.
    pub fn attention(self, a: &Attention) -> Style {
        let c = match a {
            Attention::Decision { .. } | Attention::Approval { .. } => Color::Yellow,
            Attention::Blocked { .. } | Attention::Failed { .. } => Color::Red,
            Attention::Dialog { .. } | Attention::DeadAgent { .. } => Color::Magenta,
            Attention::Escalated { .. } => Color::LightRed,
        };
        self.fg(c).add_modifier(Modifier::BOLD)
    }

    pub fn dim(self) -> Style {
        if self.colour {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new().add_modifier(Modifier::DIM)
        }
    }

    pub fn title(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }

    pub fn header(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
    }

    pub fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    pub fn error(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    pub fn new_mark(self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_and_monochrome_terminals_turn_colour_off() {
        let p = |nc, t| Palette::from_env(nc, t).colour;
        assert!(p(None, Some("xterm-256color")));
        assert!(p(Some(""), Some("screen")), "an empty NO_COLOR is unset");
        assert!(!p(Some("1"), Some("xterm-256color")));
        for t in ["dumb", "vt100", "xterm-mono", "linux-m"] {
            assert!(!p(None, Some(t)), "{t}");
        }
        let mono = Palette { colour: false };
        assert_eq!(mono.state(State::Working), Style::new());
        assert_eq!(mono.state(State::Blocked).fg, None);
        assert!(Palette { colour: true }.state(State::Working).fg.is_some());
    }
}

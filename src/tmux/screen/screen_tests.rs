use super::*;
use crate::harness::Dialog;
use regex::Regex;

fn re(s: &str) -> Regex {
    Regex::new(s).unwrap()
}

fn plain(s: &str) -> Screen {
    Screen::parse(s)
}

#[test]
fn without_a_composer_regex_the_cursor_line_decides() {
    let none = Rules::default();
    assert!(unsent(&none, &plain(""), Some("$ : ring"), ": ring"));
    assert!(unsent(&none, &plain(""), Some("ng"), ": ring"));
    assert!(!unsent(&none, &plain(": ring\n"), Some(""), ": ring"));
    assert!(unsent(&none, &plain("x\n: ring\n\n"), None, ": ring"));
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

#[test]
fn escapes_are_parsed_away_and_dim_text_is_a_placeholder() {
    let s = Screen::parse("\x1b[1m\u{203a}\x1b[0m \x1b[2mAsk me\n\x1b[0mnext\x1b]8;;x\x07 line");
    assert_eq!(s.plain(), "\u{203a} Ask me\nnext line\n");
    let line = &s.lines[0];
    assert_eq!(typed(&line.cells[2..]), "");
    // Colour arguments are not attributes: 38;5;2 is a colour, not dim.
    let s = Screen::parse("\x1b[38;5;2mgreen\x1b[38;2;1;2;7mrgb");
    assert_eq!(typed(&s.lines[0].cells), "greenrgb");
    // The cursor cell over a placeholder's first letter is placeholder too.
    let s = Screen::parse("\x1b[7mP\x1b[0;2mress up\x1b[0m");
    assert_eq!(typed(&s.lines[0].cells), "");
    // A reverse cell followed by typed text is typed text; NBSP is a space.
    let s = Screen::parse("a\u{a0}b\x1b[7mc\x1b[0md \x1b[7m \x1b[0m");
    assert_eq!(typed(&s.lines[0].cells), "a bcd");
    // Attributes carry over to the next line until reset.
    let s = Screen::parse("x\x1b[2m\nstill dim\x1b[22m typed");
    assert_eq!(typed(&s.lines[1].cells), " typed");
}

#[test]
fn a_composer_needs_its_marker_below_it_at_the_bottom() {
    let comp = re("^> (.*)$");
    let below = re("^---");
    let rules = Rules {
        composer: Some(&comp),
        composer_below: Some(&below),
        ..Rules::default()
    };
    let read = |s: &str| composer(&rules, &plain(s));
    assert_eq!(
        read("out\n> hello\n---\nfooter\n"),
        Composer::Holds("hello".into())
    );
    assert_eq!(
        read("> two\n  lines\n---\n"),
        Composer::Holds("two\nlines".into())
    );
    assert_eq!(read("> \n\n---\n"), Composer::Holds(String::new()));
    // No marker, the marker too far down, or too much under it.
    assert_eq!(read("> hello\nfooter\n"), Composer::Absent);
    assert_eq!(read("> hello\n\n\n\n---\n"), Composer::Absent);
    assert_eq!(read("> hello\n---\na\nb\nc\nd\n"), Composer::Absent);
    assert_eq!(read("nothing here\n"), Composer::Absent);
    // The last composer-looking line is the one read.
    assert_eq!(
        read("> old echo\nanswer\n> now\n---\n"),
        Composer::Holds("now".into())
    );
    let none = Rules::default();
    assert_eq!(composer(&none, &plain("> x\n")), Composer::Unknown);
    // Without a marker the composer must be among the last lines.
    let tail = Rules {
        composer: Some(&comp),
        ..Rules::default()
    };
    assert_eq!(
        composer(&tail, &plain("> x\nout\n")),
        Composer::Holds("x".into())
    );
    let far: String = "> x\n".to_string() + &"out\n".repeat(TAIL_LINES);
    assert_eq!(composer(&tail, &plain(&far)), Composer::Absent);
}

#[test]
fn a_wrapped_doorbell_or_one_with_a_swallowed_enter_is_still_the_doorbell() {
    let door = ": 'firstmate inbox: new mail in /h/state/t1.inbox - read each'";
    assert!(holds_doorbell(door, door));
    assert!(holds_doorbell(&format!("{door}\n"), door));
    let (a, b) = door.split_at(30);
    assert!(holds_doorbell(&format!("{a}\n{b}"), door));
    assert!(!holds_doorbell("half typed", door));
    // Someone's text with the doorbell glued on is theirs.
    assert!(!holds_doorbell(&format!("mine\n{door}"), door));
    assert!(!holds_doorbell(&format!("mine {door}"), door));
    assert!(holds_doorbell(&format!("{door} {door}"), door));
}

/// The reading rules the built-in profiles use for the real agents, over
/// every captured screen: composer text (`None` = no composer), busy, and
/// the dialog shown, as known when each screen was captured.
mod fixtures {
    use super::*;

    /// The reading rules of a built-in profile.
    struct Owned {
        busy: Option<Regex>,
        whole_turn: bool,
        composer: Option<Regex>,
        below: Option<Regex>,
        dialogs: Vec<Dialog>,
    }

    impl Owned {
        fn rules(&self) -> Rules<'_> {
            Rules {
                busy: self.busy.as_ref(),
                busy_whole_turn: self.whole_turn,
                composer: self.composer.as_ref(),
                composer_below: self.below.as_ref(),
                dialogs: &self.dialogs,
            }
        }
    }

    /// Claude Code and Codex: the built-in profiles themselves.
    fn builtin(h: &str) -> Owned {
        if let Some(p) = crate::harness::builtin(h).filter(|_| h != "opencode") {
            return Owned {
                busy: p.busy_regex,
                whole_turn: p.busy_whole_turn,
                composer: p.composer_regex,
                below: p.composer_below_regex,
                dialogs: p.dialogs,
            };
        }
        let (busy, composer, below, dialogs): (&str, &str, &str, &[(&str, &str)]) = OPENCODE;
        let opt = |s: &str| (!s.is_empty()).then(|| re(s));
        Owned {
            busy: opt(busy),
            whole_turn: false,
            composer: opt(composer),
            below: opt(below),
            dialogs: dialogs
                .iter()
                .map(|(n, r)| Dialog {
                    name: n.to_string(),
                    regex: re(r),
                })
                .collect(),
        }
    }

    type Def = (
        &'static str,
        &'static str,
        &'static str,
        &'static [(&'static str, &'static str)],
    );

    const OPENCODE: Def = (r"esc (again to )?interrupt|working\.\.\.", "", "", &[]);

    fn dir() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/screens")
    }

    /// (composer, busy, dialog); `"?"` = not asserted.
    type Expect = (Option<&'static str>, bool, Option<&'static str>);
    const ANY: Option<&str> = Some("?");

    const EXPECT: &[(&str, Expect)] = &[
        ("claude/idle-fresh", (Some(""), false, None)),
        ("claude/idle-after-turn", (Some(""), false, None)),
        ("claude/half-typed", (Some("half typed text"), false, None)),
        (
            "claude/multi-line",
            (
                Some("half typed text\nsecond line\nthird line"),
                false,
                None,
            ),
        ),
        ("claude/busy-silent", (Some(""), true, None)),
        // A second into a slow prompt hook: busy already.
        ("claude/busy-prompt-hook", (Some(""), true, None)),
        ("claude/busy-streaming", (Some(""), true, None)),
        ("claude/busy-tool", (Some(""), true, None)),
        // Dim "Press up to edit queued messages".
        ("claude/busy-queued", (Some(""), true, None)),
        // The interrupted prompt came back into the composer.
        ("claude/after-interrupt", (Some("wait SILENT"), false, None)),
        ("claude/after-interrupt-streaming", (Some(""), false, None)),
        ("claude/slash-exit-popup", (Some("/exit"), false, None)),
        // A footer hint, not modal: keys still reach the composer.
        ("claude/ctrl-c-once-idle", (Some(""), false, None)),
        ("claude/trust-dialog", (None, false, Some("trust"))),
        (
            "claude/permission-dialog",
            (None, false, Some("permission")),
        ),
        ("claude/permission-denied", (Some(""), false, None)),
        ("claude/rewind", (None, false, Some("rewind"))),
        ("claude/transcript", (None, false, Some("transcript"))),
        (
            "claude/history-search",
            (None, false, Some("history-search")),
        ),
        ("claude/auto-mode-notice", (Some(""), false, None)),
        ("claude/after-exit", (None, false, None)),
        ("claude/exit-while-busy", (None, false, None)),
        ("codex/idle-placeholder", (Some(""), false, None)),
        ("codex/idle-after-turn", (Some(""), false, None)),
        ("codex/after-trust", (Some(""), false, None)),
        ("codex/half-typed", (Some("half typed text"), false, None)),
        (
            "codex/multi-line",
            (Some("half typed text\nsecond line"), false, None),
        ),
        // ": settle zero" plus the empty line the swallowed Enter made.
        (
            "codex/enter-swallowed",
            (Some(": settle zero"), false, None),
        ),
        ("codex/busy-silent", (Some(""), true, None)),
        ("codex/busy-tool", (Some(""), true, None)),
        ("codex/busy-tool-steer-pending", (Some(""), true, None)),
        // Busy, but nothing on the screen says so (the hooks do).
        ("codex/busy-streaming", (Some(""), false, None)),
        ("codex/busy-queued", (Some(""), false, None)),
        ("codex/after-interrupt", (Some(""), false, None)),
        ("codex/after-interrupt-streaming", (Some(""), false, None)),
        ("codex/ctrl-c-busy-nodaemon", (Some(""), false, None)),
        ("codex/ctrl-c-busy-menu", (None, false, Some("ctrl-c-menu"))),
        ("codex/trust-dialog", (None, false, Some("trust"))),
        ("codex/approval", (None, false, Some("approval"))),
        (
            "codex/hooks-untrusted-startup",
            (None, false, Some("hooks-review")),
        ),
        ("codex/backtrack", (Some(""), false, Some("backtrack"))),
        ("codex/backtrack-after-enter", (Some(""), false, None)),
        // A footer hint, not modal: typed text goes to the composer.
        ("codex/esc-once-hint", (Some(""), false, None)),
        (
            "codex/agent-command-center",
            (None, false, Some("command-center")),
        ),
        ("codex/warning-viewer", (ANY, false, Some("warnings"))),
        ("codex/shortcuts-help", (ANY, false, Some("shortcuts"))),
        ("codex/transcript", (Some(""), false, None)),
        ("codex/slash-quit-popup", (Some("/quit"), false, None)),
        (
            "codex/slash-quit-enter-swallowed",
            (Some("/quit"), false, None),
        ),
        ("codex/ctrl-c-idle-exited", (None, false, None)),
        ("opencode/idle-placeholder", (ANY, false, None)),
        ("opencode/idle-after-turn", (ANY, false, None)),
        ("opencode/busy-silent", (ANY, true, None)),
        ("opencode/busy-streaming", (ANY, true, None)),
        ("opencode/after-interrupt", (ANY, false, None)),
    ];

    fn read(name: &str) -> (String, String) {
        let f = |ext: &str| {
            let p = dir().join(format!("{name}{ext}"));
            std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        };
        (f(".txt"), f(".ansi.txt"))
    }

    #[test]
    fn every_fixture_has_an_expectation() {
        let mut missing = Vec::new();
        for h in ["claude", "codex", "opencode"] {
            for e in std::fs::read_dir(dir().join(h)).unwrap() {
                let n = e.unwrap().file_name().into_string().unwrap();
                if let Some(stem) = n.strip_suffix(".txt")
                    && std::path::Path::new(stem)
                        .extension()
                        .is_none_or(|e| e != "ansi")
                {
                    let key = format!("{h}/{stem}");
                    if !EXPECT.iter().any(|(k, _)| *k == key) {
                        missing.push(key);
                    }
                }
            }
        }
        assert!(missing.is_empty(), "no expectation for {missing:?}");
        assert!(EXPECT.len() >= 55, "{}", EXPECT.len());
    }

    #[test]
    fn the_builtin_profiles_read_every_captured_screen() {
        let mut bad = Vec::new();
        for (name, (want_comp, want_busy, want_dialog)) in EXPECT {
            let harness = name.split('/').next().unwrap();
            let profile = builtin(harness);
            let rules = profile.rules();
            let (plain_text, ansi) = read(name);
            let screen = Screen::parse(&ansi);
            // The two captures were taken moments apart (a spinner may
            // differ), but they show the same screen.
            assert_eq!(
                screen.plain().trim_end().lines().count(),
                plain_text.trim_end().lines().count(),
                "{name}: lines of the -e capture"
            );
            let comp = match composer(&rules, &screen) {
                Composer::Holds(t) => Some(t),
                Composer::Absent | Composer::Unknown => None,
            };
            let got = (comp.clone(), busy(&rules, &screen), dialog(&rules, &screen));
            let comp_ok = *want_comp == ANY || want_comp.map(str::to_string) == comp;
            if !comp_ok || got.1 != *want_busy || got.2 != *want_dialog {
                bad.push(format!(
                    "{name}: got {got:?}, want ({want_comp:?}, {want_busy}, {want_dialog:?})"
                ));
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    /// Claude Code's screen shows every turn (its footer's `esc to
    /// interrupt`), so a screen that reads idle overrules a busy record a
    /// hook left behind — an empty composer at once, one holding text (an
    /// interrupted prompt put back) only once the record is older than a
    /// turn takes to show. Busy screens, dialogs and screens without a
    /// composer never do; Codex's screen (blank while it streams) never
    /// overrules its record.
    #[test]
    fn only_a_screen_that_reads_idle_overrules_a_busy_record() {
        let old = TURN_DRAW_SECS + 1;
        let mut bad = Vec::new();
        for (name, (want_comp, want_busy, want_dialog)) in EXPECT {
            let harness = name.split('/').next().unwrap();
            let profile = builtin(harness);
            let rules = profile.rules();
            let screen = Screen::parse(&read(name).1);
            let idle = harness == "claude" && !want_busy && want_dialog.is_none();
            let want = match want_comp {
                Some("") if idle => (true, true),
                Some(_) if idle => (false, true),
                _ => (false, false),
            };
            let got = (
                overrules_busy_record(&rules, &screen, 0),
                overrules_busy_record(&rules, &screen, old),
            );
            if got != want {
                bad.push(format!("{name}: got {got:?}, want {want:?}"));
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
        let claude = builtin("claude");
        let rules = claude.rules();
        let idle = Screen::parse(&read("claude/after-interrupt-streaming").1);
        assert!(overrules_busy_record(&rules, &idle, 0));
        // Not without the whole-turn promise, nor without a busy regex.
        let off = Rules {
            busy_whole_turn: false,
            ..rules
        };
        assert!(!overrules_busy_record(&off, &idle, old));
        let no_busy = Rules {
            busy: None,
            ..rules
        };
        assert!(!overrules_busy_record(&no_busy, &idle, old));
        // The built-in says so for claude only, and an overridden busy
        // regex takes the promise away.
        for h in crate::harness::BUILTINS {
            let p = crate::harness::builtin(h).unwrap();
            assert_eq!(p.busy_whole_turn, *h == "claude", "{h}");
        }
        let mut ov = crate::harness::Overrides::new();
        ov.insert(
            "claude".into(),
            crate::harness::overrides::HarnessOverride {
                busy_regex: Some(Some(re("esc to interrupt"))),
                ..Default::default()
            },
        );
        assert!(
            !crate::harness::profile(&ov, "claude")
                .unwrap()
                .busy_whole_turn
        );
    }

    /// Claude Code's offer to change the default permission mode, as read
    /// off a pane after the first turn in bypass mode (no footer on the
    /// screen): a dialog, never the composer.
    #[test]
    fn claude_reads_the_mode_offer_as_a_dialog() {
        let rule = "\u{2500}".repeat(100);
        let text = [
            " \u{2590}\u{259b}\u{2588}\u{2588}\u{2588}\u{259b}\u{2588}   Claude Code v2.1.332",
            "\u{276f} Read the brief at /tmp/h/data/t1/brief.md and follow it.",
            "\u{25cf} read it",
            "\u{273b} Worked for 2s \u{b7} done 3:59 AM",
            &rule,
            "  Make auto mode your default permission mode?",
            "  Auto mode lets Claude handle permission prompts automatically.",
            "  \u{276f} Yes, set auto mode as my default permission mode",
            "    No, keep bypass permissions",
        ]
        .join("\n");
        let profile = builtin("claude");
        let rules = profile.rules();
        let screen = Screen::parse(&text);
        assert_eq!(dialog(&rules, &screen), Some("mode-offer"));
        assert_eq!(composer(&rules, &screen), Composer::Absent);
        for other in [
            "  Switch to bypass permissions?",
            "  Switch your default effort to medium?",
        ] {
            assert_eq!(
                dialog(&rules, &Screen::parse(other)),
                Some("mode-offer"),
                "{other}"
            );
        }
    }

    /// A plain capture cannot tell a placeholder from typed text; the
    /// profile reads it as text, so a doorbell would be skipped, never
    /// typed over it. Only the -e capture reads it as empty.
    #[test]
    fn a_placeholder_reads_as_text_without_escapes() {
        for (name, h, text) in [
            (
                "codex/idle-placeholder",
                "codex",
                "Ask Codex to do anything",
            ),
            (
                "claude/busy-queued",
                "claude",
                "Press up to edit queued messages",
            ),
        ] {
            let profile = builtin(h);
            let (plain_text, _) = read(name);
            assert_eq!(
                composer(&profile.rules(), &Screen::parse(&plain_text)),
                Composer::Holds(text.into()),
                "{name}"
            );
        }
    }
}

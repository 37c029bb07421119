//! What every binary shares at its edge: argument parsing with clap, home and
//! config resolution, stdout that treats a closed pipe as success, and the
//! one place errors become `<tool>: error: …` plus an exit code (docs/spec/cli.md#exit-codes).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::home::Home;

/// `--home DIR`, accepted by every tool.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct HomeArg {
    /// Home directory (default: $FM_HOME, then the nearest ancestor with config/firstmate.toml)
    #[arg(long, value_name = "DIR", global = true)]
    pub(crate) home: Option<PathBuf>,
}

/// A resolved home with its loaded config.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    pub(crate) home: Home,
    pub(crate) cfg: Config,
}

impl HomeArg {
    /// Resolves the home and loads its config, printing config warnings.
    pub(crate) fn ctx(&self, tool: &str) -> Result<Ctx> {
        let home = Home::resolve(self.home.as_deref())?;
        let cfg = Config::load(&home.config_file())?;
        for w in &cfg.warnings {
            crate::output::err_line(&format!("{tool}: warning: {w}"));
        }
        Ok(Ctx { home, cfg })
    }
}

/// Parses `args` (argv[0] included) into `T`. `--help`/`--version` print and
/// exit 0; a usage error prints clap's message and usage as
/// `<tool>: error: …` (docs/spec/cli.md#exit-codes, the tool being the command's name) and
/// exits 2.
pub fn parse<T: clap::Parser>(args: Vec<OsString>) -> std::result::Result<T, ExitCode> {
    T::try_parse_from(args).map_err(|e| {
        if !e.use_stderr() {
            let _ = e.print();
            return ExitCode::from(crate::error::exit::OK);
        }
        let tool = T::command().get_name().to_string();
        let rendered = bounded_block(&e.render().to_string());
        crate::output::err_block(&prefix_error(&tool, &rendered));
        ExitCode::from(crate::error::exit::USAGE)
    })
}

/// clap's rendered usage error with its leading `error:` turned into
/// `<tool>: error:`; the rest (hint, usage line) is kept as clap wrote it.
pub(crate) fn prefix_error(tool: &str, rendered: &str) -> String {
    match rendered.strip_prefix("error:") {
        Some(rest) => format!("{tool}: error:{rest}"),
        None => format!("{tool}: error: {rendered}"),
    }
}

pub(crate) use crate::error::naming;

/// How many bare `--` arguments `args` (argv[0] included) holds. With a
/// trailing text argument clap swallows a `--` only when it comes before the
/// first text word, so comparing this with the `--` words left in the text
/// tells whether the text was introduced by `--` (see [`flag_in_text`]).
pub(crate) fn separators(args: &[OsString]) -> usize {
    args.iter().skip(1).filter(|a| *a == "--").count()
}

/// Every long option of `cmd` (`--key`, `--json`, …, `--home`), as typed:
/// the words [`flag_in_text`] refuses in a tool's free text. Derived from the
/// clap definition so a new option is covered without a second list.
pub(crate) fn long_flags(cmd: &clap::Command) -> Vec<String> {
    cmd.get_arguments()
        .filter_map(|a| a.get_long())
        .map(|l| format!("--{l}"))
        .collect()
}

/// The first text word that spells one of `flags` (`--key` or `--key=…`),
/// unless the text came after a `--` separator (`separators` is
/// [`separators`] of the raw arguments). Such a word almost always means
/// an option typed after the text, which would silently become text.
pub(crate) fn flag_in_text<S: AsRef<std::ffi::OsStr>, F: AsRef<str>>(
    text: &[S],
    flags: &[F],
    separators: usize,
) -> Option<String> {
    let in_text = text.iter().filter(|w| w.as_ref() == "--").count();
    if separators > in_text {
        return None;
    }
    text.iter().find_map(|w| {
        let w = w.as_ref().to_str()?;
        let name = w.split_once('=').map_or(w, |(n, _)| n);
        flags
            .iter()
            .any(|f| f.as_ref() == name)
            .then(|| w.to_string())
    })
}

pub(crate) use crate::error::{hint_name, quoted};

/// A usage error as clap rendered it, each line made safe to print: a
/// control character escaped, a line past 512 characters cut (`…` and
/// its length), so an argument of any size or content gives a short
/// error.
pub(crate) fn bounded_block(text: &str) -> String {
    const MAX_LINE: usize = 512;
    let mut out = String::with_capacity(text.len().min(4096));
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        for (chars, c) in line.chars().enumerate() {
            if chars == MAX_LINE {
                out.push_str(&format!("\u{2026} ({} bytes)", line.len()));
                break;
            }
            if c.is_control() && c != '\t' {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        }
    }
    out
}

pub(crate) use crate::error::describe;

/// A tool's whole `main`: parse `args` into `T`, run `body`, map the
/// result to an exit code (see [`parse`] and [`finish`]).
pub(crate) fn run_tool<T: clap::Parser>(
    tool: &str,
    args: Vec<OsString>,
    body: impl FnOnce(T) -> Result<u8>,
) -> ExitCode {
    match parse::<T>(args) {
        Ok(a) => finish(tool, body(a)),
        Err(code) => code,
    }
}

/// Runs a tool body and maps its result to an exit code, printing errors
/// as `<tool>: error: <what>` with the cause chain.
pub fn finish(tool: &str, result: Result<u8>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(Error::ClosedPipe) => ExitCode::SUCCESS,
        Err(e) => {
            crate::output::error(tool, &describe(&e));
            ExitCode::from(e.exit_code())
        }
    }
}

pub(crate) use crate::output::{out, out_json};

/// Whether stdout is a terminal and colour is allowed (docs/spec/cli.md#output).
pub(crate) fn colour_enabled() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && crate::output::stdout_is_terminal()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_flags_are_every_option_of_the_tool() {
        let sorted = |mut v: Vec<String>| {
            v.sort();
            v
        };
        assert_eq!(
            sorted(long_flags(&super::super::status::command())),
            [
                "--busy",
                "--from",
                "--home",
                "--idempotency-key",
                "--idle",
                "--json",
                "--key",
                "--log",
                "--source",
                "--text-stdin"
            ]
        );
        assert_eq!(
            sorted(long_flags(&super::super::send::command())),
            [
                "--all",
                "--dedupe",
                "--file",
                "--fire-and-forget",
                "--from",
                "--home",
                "--idempotency-key",
                "--json",
                "--key",
                "--only",
                "--quiet",
                "--resolve-key"
            ]
        );
    }

    #[test]
    fn usage_errors_carry_the_tool_prefix() {
        assert_eq!(
            prefix_error(
                "fm-send",
                "error: unexpected argument '--x' found\n\nUsage: fm-send\n"
            ),
            "fm-send: error: unexpected argument '--x' found\n\nUsage: fm-send\n"
        );
        assert_eq!(prefix_error("fm-ack", "odd"), "fm-ack: error: odd");
    }

    #[test]
    fn option_words_in_text_are_found_unless_after_a_separator() {
        let argv = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let flags = ["--key", "--json"];
        let text = ["which", "db", "--key", "db"];
        let raw = argv(&[
            "fm-status",
            "q1",
            "needs-decision",
            "which",
            "db",
            "--key",
            "db",
        ]);
        assert_eq!(
            flag_in_text(&text, &flags, separators(&raw)).as_deref(),
            Some("--key")
        );
        let raw = argv(&[
            "fm-status",
            "q1",
            "note",
            "--",
            "which",
            "db",
            "--key",
            "db",
        ]);
        assert_eq!(flag_in_text(&text, &flags, separators(&raw)), None);
        // A `--` inside the text is text, not a separator.
        let text = ["a", "--", "--json=1"];
        let raw = argv(&["fm-status", "q1", "note", "a", "--", "--json=1"]);
        assert_eq!(
            flag_in_text(&text, &flags, separators(&raw)).as_deref(),
            Some("--json=1")
        );
        assert_eq!(flag_in_text(&["--keys"], &flags, 0), None);
    }

    #[test]
    fn quoted_input_is_bounded_and_escaped() {
        assert_eq!(quoted("k-1"), "\"k-1\"");
        assert_eq!(quoted("a\nb\u{1b}[2J\"c"), r#""a\nb\u{1b}[2J\"c""#);
        let long = "x".repeat(100 * 1024);
        assert_eq!(
            quoted(&long),
            format!("\"{}\"\u{2026} (102400 bytes)", "x".repeat(128))
        );
        // Cut on a character, never inside one.
        let wide = "\u{e9}".repeat(130);
        assert_eq!(
            quoted(&wide),
            format!("\"{}\"\u{2026} (260 bytes)", "\u{e9}".repeat(128))
        );
        assert_eq!(quoted(&"y".repeat(128)), format!("\"{}\"", "y".repeat(128)));
    }

    #[test]
    fn clap_errors_are_bounded_line_by_line() {
        let long = format!(
            "error: unexpected argument '{}' found\n\nUsage: x\n",
            "y".repeat(5000)
        );
        let b = bounded_block(&long);
        assert!(b.lines().next().unwrap().len() < 600, "{b}");
        assert!(b.contains("\u{2026} (5035 bytes)\n\nUsage: x\n"), "{b}");
        assert_eq!(bounded_block("a\u{1b}[2Jb\n"), "a\\u{1b}[2Jb\n");
        assert_eq!(hint_name("far-1"), "far-1");
        assert_eq!(hint_name("a b"), "<name>");
        assert_eq!(hint_name(&"x".repeat(129)), "<name>");
    }

    #[test]
    fn naming_appends_the_id_once() {
        let e = naming(Error::usage("empty message body"), "t1");
        assert_eq!(e.to_string(), "empty message body (t1)");
        let e = naming(Error::usage("unknown task t1"), "t1");
        assert_eq!(e.to_string(), "unknown task t1");
        assert_eq!(naming(Error::Interrupted, "t1").exit_code(), 130);
    }
}

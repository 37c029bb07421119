//! What every binary shares at its edge: argument parsing with clap, home and
//! config resolution, stdout that treats a closed pipe as success, and the
//! one place errors become `<tool>: error: …` plus an exit code (SPEC §14).

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::home::Home;

/// `--home DIR`, accepted by every tool.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HomeArg {
    /// Home directory (default: $FM_HOME, then the nearest ancestor with config/firstmate.toml)
    #[arg(long, value_name = "DIR", global = true)]
    pub home: Option<PathBuf>,
}

/// A resolved home with its loaded config.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub home: Home,
    pub cfg: Config,
}

impl HomeArg {
    /// Resolves the home and loads its config, printing config warnings.
    pub fn ctx(&self, tool: &str) -> Result<Ctx> {
        let home = Home::resolve(self.home.as_deref())?;
        let cfg = Config::load(&home.config_file())?;
        for w in &cfg.warnings {
            eprintln!("{tool}: warning: {w}");
        }
        Ok(Ctx { home, cfg })
    }
}

/// Parses `args` (argv[0] included) into `T`. `--help`/`--version` print and
/// exit 0; a usage error prints clap's message and exits 2.
pub fn parse<T: clap::Parser>(args: Vec<OsString>) -> std::result::Result<T, ExitCode> {
    T::try_parse_from(args).map_err(|e| {
        let _ = e.print();
        ExitCode::from(if e.use_stderr() {
            crate::error::exit::USAGE
        } else {
            crate::error::exit::OK
        })
    })
}

/// A tool's whole `main`: parse `args` into `T`, run `body`, map the
/// result to an exit code (see [`parse`] and [`finish`]).
pub fn run_tool<T: clap::Parser>(
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
            let mut msg = e.to_string();
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                let s_msg = s.to_string();
                if !msg.contains(&s_msg) {
                    msg.push_str(": ");
                    msg.push_str(&s_msg);
                }
                src = s.source();
            }
            eprintln!("{tool}: error: {msg}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// Prints one line to stdout; a closed pipe becomes [`Error::ClosedPipe`].
pub fn out(line: &str) -> Result<()> {
    let mut so = std::io::stdout().lock();
    let res = so
        .write_all(line.as_bytes())
        .and_then(|()| so.write_all(b"\n"))
        .and_then(|()| so.flush());
    res.map_err(|e| {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Error::ClosedPipe
        } else {
            Error::io("write", "<stdout>", e)
        }
    })
}

/// Prints raw bytes to stdout (message bodies are byte-exact).
pub fn out_bytes(bytes: &[u8]) -> Result<()> {
    let mut so = std::io::stdout().lock();
    so.write_all(bytes).and_then(|()| so.flush()).map_err(|e| {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Error::ClosedPipe
        } else {
            Error::io("write", "<stdout>", e)
        }
    })
}

/// Prints a value as one line of JSON.
pub fn out_json<T: serde::Serialize>(value: &T) -> Result<()> {
    let s = serde_json::to_string(value)
        .map_err(|e| Error::io("serialize", "<stdout>", std::io::Error::other(e)))?;
    out(&s)
}

/// Whether stdout is a terminal and colour is allowed (SPEC §14).
pub fn colour_enabled() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

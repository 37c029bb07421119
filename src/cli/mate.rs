//! `fm wake` and `fm mate` (docs/spec/mate.md): the first mate's calls.

use std::path::PathBuf;

use super::common::{self, HomeArg};
use crate::error::{Error, Result, exit};
use crate::mate::ledger::Acked;
use crate::mate::wait::Waited;
use crate::mate::{self, Ask};

const TOOL: &str = "fm";

/// `fm wake`'s arguments.
#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("act").args(["wait", "ack"]))]
pub(crate) struct WakeArgs {
    /// Block, printing nothing, until something needs the lead; then print the packet
    #[arg(long)]
    wait: bool,
    /// With --wait: give up after S seconds (exit 0, nothing printed)
    #[arg(long, value_name = "S", requires = "wait")]
    timeout: Option<f64>,
    /// Acknowledge the packet whose ack line gave TOKEN (idempotent)
    #[arg(long, value_name = "TOKEN")]
    ack: Option<String>,
    /// The packet as JSON (schema: docs/mate-wake-schema.json)
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    home: HomeArg,
}

/// `fm mate`'s verbs.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum MateCmd {
    /// Make the home the first mate's workplace: its manual, skills and harness hooks
    #[command(
        after_help = "Then start the lead in the home: `cd <home> && claude` (or `codex`).\nRe-running updates what firstmate wrote; a file you edited is left as it is and named.\n\nExamples:\n  fm mate init\n  fm mate init --harness codex"
    )]
    Init {
        /// claude or codex (default: claude)
        #[arg(long, value_parser = ["claude", "codex"], default_value = "claude")]
        harness: String,
        /// The home (default: $FM_HOME, then the nearest ancestor with config/firstmate.toml)
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Overwrite files you edited too (they are kept as <file>.orig first)
        #[arg(long)]
        force: bool,
    },
    /// A harness hook of the first mate (run by the harness, not by hand)
    #[command(hide = true)]
    Hook {
        /// session-start or stop
        #[arg(value_parser = ["session-start", "stop"])]
        event: String,
        /// claude or codex
        #[arg(long, value_parser = ["claude", "codex"], default_value = "claude")]
        harness: String,
        /// Longest wait of a stop hook, in seconds
        #[arg(long, value_name = "S")]
        timeout: Option<f64>,
        #[command(flatten)]
        home: HomeArg,
    },
}

fn print(p: &mate::Packet, json: bool) -> Result<()> {
    if json {
        common::out_json(p)
    } else {
        crate::output::out_block(&p.text())
    }
}

/// `fm wake`.
pub(crate) fn wake(a: &WakeArgs) -> Result<u8> {
    let ctx = a.home.ctx(TOOL)?;
    if let Some(token) = &a.ack {
        return ack(&ctx.home, token, a.json);
    }
    if !a.wait {
        let p = mate::take(&ctx.home, &ctx.cfg, Ask::Show, crate::clock::now())?
            .ok_or_else(|| Error::refused("no packet"))?;
        print(&p, a.json)?;
        return Ok(exit::OK);
    }
    if let Some(t) = a.timeout
        && !(t > 0.0 && t.is_finite())
    {
        return Err(Error::Usage(format!(
            "--timeout wants seconds more than 0, not {t}"
        )));
    }
    crate::watch::daemon::install_signals();
    match mate::wait::wait(
        &ctx.home,
        &ctx.cfg,
        a.timeout.map(mate::wait::secs),
        None,
        None,
    )? {
        Waited::Packet(p) => {
            print(&p, a.json)?;
            Ok(exit::OK)
        }
        Waited::Signal(signal_hook::consts::SIGINT) => Ok(exit::INTERRUPTED),
        Waited::Timeout | Waited::Superseded | Waited::Signal(_) => Ok(exit::OK),
    }
}

fn ack(home: &crate::Home, token: &str, json: bool) -> Result<u8> {
    let (word, n) = match mate::ack(home, token)? {
        Acked::Moved(p) => ("acknowledged", p.n),
        Acked::Already(p) => ("already acknowledged", p.n),
        Acked::Unknown { oldest, newest } => {
            let kept = match (oldest, newest) {
                (Some(o), Some(n)) => format!("the packets kept are w{o} to w{n}"),
                _ => "no packet was presented yet".into(),
            };
            return Err(Error::refused(format!(
                "no wake packet {} ({kept}); `fm wake` shows the current one",
                crate::error::quoted(token)
            )));
        }
    };
    if json {
        common::out_json(&serde_json::json!({"token": token, "result": word, "packet": n}))?;
    } else {
        common::out(&format!("{word} {}", mate::ledger::token(n)))?;
    }
    Ok(exit::OK)
}

/// `fm mate …`.
pub(crate) fn mate(cmd: MateCmd) -> Result<u8> {
    match cmd {
        MateCmd::Init {
            harness,
            dir,
            force,
        } => mate::pack::init_cli(dir.as_deref(), &harness, force),
        MateCmd::Hook {
            event,
            harness,
            timeout,
            home,
        } => {
            let ctx = home.ctx(TOOL)?;
            mate::hook::run(&ctx.home, &ctx.cfg, &event, &harness, timeout)
        }
    }
}

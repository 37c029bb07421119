//! `fm-stand-in`: the scripted agent for demos and tests. See [`firstmate::stand_in`].
use std::process::ExitCode;

/// A scripted agent that reads its inbox when rung and acknowledges with fm-ack.
#[derive(clap::Parser)]
#[command(
    name = "fm-stand-in",
    version,
    after_help = "Example:\n  fm-stand-in --home ~/fleet fix-login"
)]
struct Args {
    /// Home directory
    #[arg(long)]
    home: std::path::PathBuf,
    /// Task id
    id: String,
    /// Start up slowly: ignore (and throw away) input for this long first
    #[arg(long, value_name = "MS", default_value_t = 0)]
    boot_ms: u64,
    /// While starting up, draw the composer already
    #[arg(long)]
    composer_early: bool,
    /// Run the hook leg's waiter, as Claude Code's asyncRewake hooks do
    #[arg(long)]
    leg: bool,
}

fn main() -> ExitCode {
    let args = match firstmate::cli::common::parse::<Args>(std::env::args_os().collect()) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let result = firstmate::TaskId::parse(&args.id).and_then(|id| {
        let boot = firstmate::stand_in::Boot {
            ms: args.boot_ms,
            composer_early: args.composer_early,
            leg: args.leg,
        };
        firstmate::stand_in::run_booting(&args.home, &id, boot)
    });
    firstmate::cli::common::finish("fm-stand-in", result)
}

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
}

fn main() -> ExitCode {
    let args = match firstmate::cli::common::parse::<Args>(std::env::args_os().collect()) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let result =
        firstmate::TaskId::parse(&args.id).and_then(|id| firstmate::stand_in::run(&args.home, &id));
    firstmate::cli::common::finish("fm-stand-in", result)
}

//! `fm-crew-state`: see [`firstmate::cli::crew_state`].
fn main() -> std::process::ExitCode {
    firstmate::cli::crew_state::main(std::env::args_os().collect())
}

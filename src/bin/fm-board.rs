//! `fm-board`: see [`firstmate::cli::board`].
fn main() -> std::process::ExitCode {
    firstmate::cli::board::main(std::env::args_os().collect())
}

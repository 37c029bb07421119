//! `fm-control`: see [`firstmate::cli::control`].
fn main() -> std::process::ExitCode {
    firstmate::cli::control::main(std::env::args_os().collect())
}

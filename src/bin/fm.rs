//! `fm`: the front door. See [`firstmate::cli::fm`].
fn main() -> std::process::ExitCode {
    firstmate::cli::fm::main(std::env::args_os().collect())
}

//! `fm-watch`: see [`firstmate::cli::watch`].
fn main() -> std::process::ExitCode {
    firstmate::cli::watch::main(std::env::args_os().collect())
}

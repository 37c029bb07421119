//! `fm-send`: see [`firstmate::cli::send`].
fn main() -> std::process::ExitCode {
    firstmate::cli::send::main(std::env::args_os().collect())
}

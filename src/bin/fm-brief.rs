//! `fm-brief`: see [`firstmate::cli::brief`].
fn main() -> std::process::ExitCode {
    firstmate::cli::brief::main(std::env::args_os().collect())
}

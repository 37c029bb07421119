//! `fm-status`: see [`firstmate::cli::status`].
fn main() -> std::process::ExitCode {
    firstmate::cli::status::main(std::env::args_os().collect())
}

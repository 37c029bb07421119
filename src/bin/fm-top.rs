//! `fm-top`: see [`firstmate::cli::top`].
fn main() -> std::process::ExitCode {
    firstmate::cli::top::main(std::env::args_os().collect())
}

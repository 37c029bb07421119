//! `fm-dod`: see [`firstmate::cli::dod`].
fn main() -> std::process::ExitCode {
    firstmate::cli::dod::main(std::env::args_os().collect())
}

//! `fm-ack`: see [`firstmate::cli::ack`].
fn main() -> std::process::ExitCode {
    firstmate::cli::ack::main(std::env::args_os().collect())
}

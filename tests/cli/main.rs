//! Integration tests: the real binaries, driven in temporary homes, with
//! private tmux servers and real git repositories where they matter.

mod fm;
mod harness;
mod pane;
mod status;
mod watch;

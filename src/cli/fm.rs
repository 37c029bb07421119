//! `fm`, the front door (docs/spec/fm.md): `fm <tool> …` runs the same entry point
//! as `fm-<tool>`; `init`, `doctor`, `completions`, `man` and `demo` live here.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use super::TOOLS;
use super::common::{self, HomeArg};
use crate::error::{Error, Result};
use crate::home::Home;
use crate::{doctor, fsx};

const TOOL: &str = "fm";

/// The config every new home starts with: every key, commented, at its default.
pub(crate) const DEFAULT_CONFIG: &str = include_str!("../../config/firstmate.toml");

/// Run a fleet of AI coding agents in tmux panes.
#[derive(Debug, Parser)]
#[command(
    name = "fm",
    version,
    after_help = "Tools (also installed as fm-<tool>):\n  brief, send, ack, status, crew-state, dod, control, watch, board, top\n\nExamples:\n  fm\n  fm init ~/fleet\n  fm demo\n  fm top\n  fm peek fix-login --lines 20\n  fm attach fix-login\n  fm status fix-login --json\n  fm doctor\n  fm grant fix-login teardown"
)]
struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Create a home: config/firstmate.toml with commented defaults, data/, state/
    Init {
        /// Directory to make a home (default: the current directory)
        dir: Option<PathBuf>,
    },
    /// Check tmux, git, the home, the watcher and inotify
    Doctor {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        home: HomeArg,
    },
    /// Print shell completions
    Completions {
        #[arg(value_parser = ["bash", "zsh", "fish"])]
        shell: String,
    },
    /// Write man pages (fm.1 and fm-<tool>.1) into DIR
    Man { dir: PathBuf },
    /// Go to a worker's pane: switch your tmux client there, or attach to it
    #[command(
        after_help = "Inside tmux on the worker's server, your client switches to the worker's pane; anywhere else this runs `tmux -L <socket> attach-session -t <pane>` (detach with the tmux prefix, then d).\n\nExample:\n  fm attach fix-login"
    )]
    Attach {
        /// Task id
        #[arg(value_name = "ID")]
        id: OsString,
        #[command(flatten)]
        home: HomeArg,
    },
    /// Print a worker's screen (escape sequences stripped)
    #[command(
        after_help = "Examples:\n  fm peek fix-login\n  fm peek fix-login --lines 200 | less"
    )]
    Peek {
        /// Task id
        #[arg(value_name = "ID")]
        id: OsString,
        /// The last N lines, reaching into the scrollback (default: the visible screen)
        #[arg(long, value_name = "N")]
        lines: Option<usize>,
        /// {task, pane, tmux_socket, lines[]}
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        home: HomeArg,
    },
    /// The far entry point: a typed request of another home's captain on
    /// stdin, its report on stdout (docs/remote.md)
    #[command(hide = true)]
    Far {
        #[command(flatten)]
        home: HomeArg,
    },
    /// The first mate's wake packet: what needs the lead, and the commands that act
    #[command(
        after_help = "Examples:\n  fm wake                 # the packet now\n  fm wake --wait          # block until something needs the lead\n  fm wake --ack w12       # the packet was handled"
    )]
    Wake(super::mate::WakeArgs),
    /// The first mate: an AI lead started in the home (init, and its hooks)
    Mate {
        #[command(subcommand)]
        cmd: super::mate::MateCmd,
    },
    /// The captain's word: let the first mate do VERB to task ID once
    Grant(super::grant::GrantArgs),
    /// What a worker changed: commits, stat, patch, pushed?, the gate's verdict
    #[command(
        after_help = "Paged and coloured on a terminal ($PAGER, default less -R), plain otherwise.\n\nExamples:\n  fm review fix-login\n  fm review fix-login --json"
    )]
    Review(super::review::ReviewArgs),
    /// Deliver a finished worker's branch the way its mode says
    #[command(
        after_help = "local-only: fast-forward the base branch (--merge: a merge commit); direct-PR, no-mistakes: push and open a PR with gh.\nA refusal (exit 1) says why and changes nothing.\n\nExamples:\n  fm land fix-login\n  fm land fix-login --merge"
    )]
    Land(super::land::LandArgs),
    /// A project's worktree set-up: show it, approve it
    Setup(super::setup::SetupArgs),
    /// Bring back every agent that died with its tmux server
    Restore(super::restore::RestoreArgs),
    #[command(hide = true)]
    SessionHook(super::restore::SessionHookArgs),
    #[command(hide = true)]
    LegWait(super::leg::LegWaitArgs),
    /// The web cockpit: the fleet in a browser, answers decisions (docs/serve.md)
    #[command(
        after_help = "The first line printed is the URL to open, token included.\n\nExamples:\n  fm serve\n  fm serve --listen 127.0.0.1:0\n  ssh -L 7878:127.0.0.1:7878 HOST   # then open the printed URL here\n\nExit codes: 0 after SIGTERM, 130 after Ctrl-C, 2 bad flags or a listen address refused, 3 environment failure."
    )]
    Serve(super::serve::ServeArgs),
    /// Run the whole loop unattended in a temporary home and private tmux server
    Demo {
        /// Keep the temporary home and tmux server afterwards
        #[arg(long)]
        keep: bool,
    },
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    // Bare `fm`: what needs the captain now, not a usage error.
    if args.len() == 1 {
        return common::finish(TOOL, super::needs_you::run());
    }
    if let Some(first) = args.get(1).and_then(|a| a.to_str())
        && let Some(tool) = super::tool(first)
    {
        let mut rest = vec![OsString::from(format!("fm-{first}"))];
        rest.extend(args.into_iter().skip(2));
        return (tool.main)(rest);
    }
    common::run_tool(TOOL, args, run)
}

fn run(a: Args) -> Result<u8> {
    match a.cmd {
        Cmd::Init { dir } => init(dir.as_deref()),
        Cmd::Doctor { json, home } => {
            // No home is one failing check, not the end of the report.
            let home = Home::resolve(home.home.as_deref()).map_err(|e| e.to_string());
            let checks = doctor::run(home.as_ref().map_err(Clone::clone));
            if json {
                common::out_json(&checks)?;
            } else {
                for c in &checks {
                    common::out(&c.line())?;
                }
            }
            Ok(u8::from(
                checks.iter().any(|c| c.level == doctor::Level::Fail),
            ))
        }
        Cmd::Completions { shell } => {
            let shell = match shell.as_str() {
                "bash" => clap_complete::Shell::Bash,
                "zsh" => clap_complete::Shell::Zsh,
                _ => clap_complete::Shell::Fish,
            };
            let mut cmd = full_command();
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut cmd, "fm", &mut buf);
            crate::output::out_generated(&buf)?;
            Ok(0)
        }
        Cmd::Man { dir } => man(&dir),
        Cmd::Demo { keep } => crate::demo::run(keep),
        Cmd::Wake(w) => super::mate::wake(&w),
        Cmd::Mate { cmd } => super::mate::mate(cmd),
        Cmd::Grant(a) => super::grant::run(a),
        Cmd::Review(a) => super::review::run(&a),
        Cmd::Land(a) => super::land::run(&a),
        Cmd::Setup(a) => super::setup::run(a),
        Cmd::Restore(a) => super::restore::run(a),
        Cmd::SessionHook(a) => super::restore::session_hook(&a),
        Cmd::LegWait(a) => super::leg::wait(&a),
        Cmd::Serve(a) => super::serve::run(a),
        Cmd::Far { home } => far(&home),
        Cmd::Attach { id, home } => super::visit::attach(&home, &id),
        Cmd::Peek {
            id,
            lines,
            json,
            home,
        } => super::visit::peek(&home, &id, lines, json),
    }
}

/// `fm far`: stdin is the request, bounded (a body past the largest a
/// send takes is refused there); the report is printed as one line.
fn far(home: &HomeArg) -> Result<u8> {
    use std::io::Read;
    let ctx = home.ctx(TOOL)?;
    let max = crate::route::far::max_input(&ctx.cfg);
    let mut input = Vec::new();
    std::io::stdin()
        .lock()
        .take(max)
        .read_to_end(&mut input)
        .map_err(|e| Error::io("read", "<stdin>", e))?;
    let (code, line) = crate::route::far::serve(&ctx.home, &ctx.cfg, &input);
    common::out(&line)?;
    Ok(code)
}

/// `fm` with every built tool as a subcommand (for completions and man).
fn full_command() -> clap::Command {
    let mut cmd = Args::command();
    for t in TOOLS {
        cmd = cmd.subcommand((t.command)().name(t.name).about(t.about));
    }
    cmd
}

fn init(dir: Option<&Path>) -> Result<u8> {
    let cwd = std::env::current_dir().map_err(|e| Error::io("get current directory", ".", e))?;
    let root = cwd.join(dir.unwrap_or(Path::new(".")));
    crate::home::refuse_control("home", &root)?;
    fsx::ensure_dir(&root)?;
    let home = Home::at(&root)?;
    let cfg = home.config_file();
    if fsx::read_optional(&cfg)?.is_some() {
        return Err(Error::refused(format!(
            "{} already exists; not overwriting it",
            cfg.display()
        )));
    }
    for d in [home.config_dir(), home.data_dir(), home.state_dir()] {
        fsx::ensure_dir(&d)?;
    }
    fsx::atomic_write(&cfg, DEFAULT_CONFIG.as_bytes())?;
    // The web cockpit's token, ready for `fm serve` (docs/spec/serve.md).
    crate::serve::token::load_or_make(&home)?;
    common::out(&format!(
        "initialised firstmate home: {}",
        home.root().display()
    ))?;
    Ok(0)
}

fn man(dir: &Path) -> Result<u8> {
    fsx::ensure_dir(dir)?;
    let write = |name: &str, cmd: clap::Command| -> Result<()> {
        let mut buf = Vec::new();
        clap_mangen::Man::new(cmd)
            .render(&mut buf)
            .map_err(|e| Error::io("render man page", dir, e))?;
        fsx::atomic_write(&dir.join(format!("{name}.1")), &buf)
    };
    write("fm", Args::command())?;
    let mut n = 1;
    for t in TOOLS {
        write(&format!("fm-{}", t.name), (t.command)())?;
        n += 1;
    }
    common::out(&format!("wrote {n} man pages to {}", dir.display()))?;
    Ok(0)
}

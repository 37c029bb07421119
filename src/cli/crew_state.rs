//! `fm-crew-state` (docs/spec/crew-state.md, docs/spec/chains.md): one task's state line, the fleet
//! table, `--json` for both, the `--watch` live view and `--trace`.

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, Parser};

use super::common::{self, Ctx, HomeArg};
use crate::clock;
use crate::crew_state::{FleetReader, Row, live, render, trace};
use crate::error::{Error, Result};
use crate::task_id::TaskId;

const TOOL: &str = "fm-crew-state";

/// Lines of the wake feed shown under the live view.
const WAKE_LINES: usize = 8;

/// What every worker is doing right now.
#[derive(Debug, Parser)]
#[command(
    name = "fm-crew-state",
    version,
    after_help = "Examples:\n  fm-crew-state fix-login\n  fm-crew-state --json\n  fm-crew-state --watch --interval 5\n  fm-crew-state --trace fix-login\n\nExit codes: 0 every successful read (an unknown task included), 2 usage or invalid id,\n3 environment failure, 130 the live view was stopped with Ctrl-C."
)]
pub(crate) struct Args {
    /// Task id (omit for the whole fleet)
    #[arg(value_name = "ID", conflicts_with_all = ["all", "watch", "trace"])]
    id: Option<OsString>,
    /// The whole fleet: one row per task with a meta file (the default)
    #[arg(long)]
    all: bool,
    /// Print JSON: an object for one task, an array for the fleet
    #[arg(long, conflicts_with = "watch")]
    json: bool,
    /// Live fleet view, redrawn in place until Ctrl-C
    #[arg(long, conflicts_with = "trace")]
    watch: bool,
    /// Seconds between redraws of --watch (more than 0, at most 86400)
    #[arg(long, value_name = "S", default_value_t = 2.0, requires = "watch")]
    interval: f64,
    /// The audit trail of a task and its descendants, as Markdown
    #[arg(long, value_name = "ID", conflicts_with = "all")]
    trace: Option<OsString>,
    #[command(flatten)]
    home: HomeArg,
}

pub(crate) fn command() -> clap::Command {
    Args::command()
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    common::run_tool(TOOL, args, run)
}

/// The rows of `ids`, gathered in one pass while every configured host is
/// asked for its own; warnings go to stderr.
pub(crate) fn rows(ctx: &Ctx, ids: &[TaskId]) -> Vec<Row> {
    let (rows, warnings) = crate::route::fleet::rows(&ctx.home, &ctx.cfg, ids, clock::now());
    for w in warnings {
        crate::output::err_line(&format!("{TOOL}: warning: {w}"));
    }
    rows
}

/// The fleet through `reader`, each row to `emit` in id order, a remote
/// task's row as its host answers (every host asked at the start, in
/// parallel with the local read); warnings go to stderr.
fn fleet(
    ctx: &Ctx,
    reader: &mut FleetReader,
    emit: &mut dyn FnMut(Row) -> Result<()>,
) -> Result<()> {
    fleet_mapped(ctx, reader, &|r| r, emit)
}

/// [`fleet`] with each local row first made into what the caller keeps
/// of it, on the thread that read its task (a remote row is replaced by its
/// host's answer first, here).
fn fleet_mapped<T: Send>(
    ctx: &Ctx,
    reader: &mut FleetReader,
    map: &(dyn Fn(Row) -> T + Sync),
    emit: &mut dyn FnMut(T) -> Result<()>,
) -> Result<()> {
    let mut hosts = crate::route::fleet::ask_hosts(&ctx.home, &ctx.cfg);
    let near = |r: Row| {
        if r.host.is_some() {
            Mapped::Far(Box::new(r))
        } else {
            Mapped::Near(map(r))
        }
    };
    let mut emit = |m: Mapped<T>| match m {
        Mapped::Near(t) => emit(t),
        Mapped::Far(mut r) => {
            hosts.overlay(std::slice::from_mut(&mut *r));
            emit(map(*r))
        }
    };
    for w in reader.fleet_mapped(&ctx.home, &ctx.cfg, clock::now(), &near, &mut emit)? {
        crate::output::err_line(&format!("{TOOL}: warning: {w}"));
    }
    Ok(())
}

/// A row as [`fleet_mapped`] hands it on: mapped where it was read, or a
/// remote task's, to be replaced by its host's answer (boxed: few are).
enum Mapped<T> {
    Near(T),
    Far(Box<Row>),
}

/// The fleet's table, in id order (each row kept as its cells only, made
/// on the thread that read the task).
fn fleet_table(ctx: &Ctx, reader: &mut FleetReader, colour: bool) -> Result<render::Table> {
    let mut table = render::Table::new(colour);
    fleet_mapped(ctx, reader, &|r| render::RowCells::of(&r), &mut |c| {
        table.add(c);
        Ok(())
    })?;
    Ok(table)
}

/// Prints the table, a bounded batch of lines per write.
fn print_table(table: &render::Table) -> Result<()> {
    table.print(PRINT_BATCH, &mut |block| {
        crate::output::out_block_text(block)
    })
}

/// Lines of the fleet table per write.
const PRINT_BATCH: usize = 1024;

/// The fleet as one JSON array on one line, written row by row as the
/// rows come (the same bytes as serialising the whole array at once).
fn fleet_json(ctx: &Ctx) -> Result<()> {
    let mut out = crate::output::JsonArray::new();
    fleet(ctx, &mut FleetReader::new(), &mut |r| out.push(&r))?;
    out.finish()
}

fn run(a: Args) -> Result<u8> {
    let id = a.id.as_deref().map(TaskId::parse_os).transpose()?;
    let traced = a.trace.as_deref().map(TaskId::parse_os).transpose()?;
    if !(a.interval.is_finite() && a.interval > 0.0 && a.interval <= 86_400.0) {
        return Err(Error::usage(
            "--interval must be more than 0 and at most 86400 seconds",
        ));
    }
    let ctx = a.home.ctx(TOOL)?;
    if let Some(root) = traced {
        let trail = trace::trail(&ctx.home, &root)?;
        if a.json {
            common::out_json(&trail)?;
        } else {
            for e in &trail {
                common::out(&trace::markdown(e))?;
            }
        }
        return Ok(0);
    }
    if let Some(id) = id {
        let row = rows(&ctx, std::slice::from_ref(&id)).remove(0);
        if a.json {
            common::out_json(&row)?;
        } else {
            crate::output::out_text([&render::line(&row, common::colour_enabled())])?;
        }
        return Ok(0);
    }
    if a.watch {
        let tty = crate::output::stdout_is_terminal();
        let colour = common::colour_enabled();
        let interval = Duration::from_secs_f64(a.interval);
        let mut reader = FleetReader::kept();
        return live::run(interval, tty, || {
            frame(&ctx, &mut reader, colour, a.interval)
        });
    }
    if a.json {
        fleet_json(&ctx)?;
    } else {
        let table = fleet_table(&ctx, &mut FleetReader::new(), common::colour_enabled())?;
        print_table(&table)?;
    }
    Ok(0)
}

/// One frame of the live view: title, table, latest wakes. The reader is
/// held across frames, so a frame re-reads only what changed.
fn frame(ctx: &Ctx, reader: &mut FleetReader, colour: bool, interval: f64) -> Result<String> {
    let table = fleet_table(ctx, reader, colour)?;
    let mut s = format!(
        "{TOOL} \u{b7} {} \u{b7} {} tasks \u{b7} every {interval}s \u{b7} Ctrl-C to quit\n\n",
        clock::human_utc(clock::now()),
        table.len()
    );
    let mut lines = crate::output::Text::new();
    table.write(0..=table.len(), &mut lines);
    s.push_str(lines.as_str());
    s.push_str("\nwakes:\n");
    let wakes = live::recent_wakes(&ctx.home.wakes(), WAKE_LINES, clock::now());
    if wakes.is_empty() {
        s.push_str("  (none)\n");
    }
    for w in wakes {
        // The feed's lines are workers' words: sanitised like any cell.
        s.push_str("  ");
        s.push_str(&crate::output::sanitize(&w));
        s.push('\n');
    }
    Ok(s)
}

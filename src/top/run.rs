//! The dashboard's loop: the terminal (raw mode, alternate screen, hidden
//! cursor — restored on every way out: a key, a signal, an error, a panic),
//! the events it waits on, and the actions keys ask for.
//!
//! The loop waits at most [`SLICE`] for a key, then takes what the reader
//! thread and the filesystem watcher sent ([`super::source`]). A change
//! under `state/` asks for a fresh read after [`DEBOUNCE`] (a burst of
//! writes is one read); a read is also asked every `poll` (the fallback,
//! and what notices a pane that died, which writes no file). The frame is
//! drawn only when something changed or once a [`TICK`] (the ages move);
//! ratatui writes only the cells that differ, so an unchanged frame costs
//! no output and nothing flickers.
//!
//! Sending and answering ring the doorbell, which waits for the pane
//! (`settle_ms`, `enter_wait_ms`), so they run on a thread and report
//! back; peeking and switching the client are quick and run in place.
//! Attaching (outside tmux) hands the terminal to `tmux attach` and takes
//! it back when the captain detaches; inside tmux on another server the
//! worker opens in a popup (or a window) of the captain's own server, on a
//! thread, never as a client nested in the dashboard's pane.

use std::io::{IsTerminal, Stdout};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyEventKind};
use crossterm::{cursor, execute, terminal};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use super::app::{App, Effect};
use super::palette::Palette;
use super::source::{Msg, Source};
use super::{seen, view};
use crate::clock;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::events::Tool;
use crate::home::Home;
use crate::route::Task;
use crate::route::send::{SendReport, SendRequest};
use crate::task_id::TaskId;
use crate::tmux::visit::{self, Jump, Location, Opened};

/// Longest wait for a key before looking at the other events.
pub const SLICE: Duration = Duration::from_millis(100);
/// How long a burst of file changes may settle before one read.
pub const DEBOUNCE: Duration = Duration::from_millis(100);
/// The redraw tick (ages, a peeked screen).
pub const TICK: Duration = Duration::from_secs(1);
/// How often the hosts' wakes are asked for, at most.
pub const HOSTS_EVERY: Duration = Duration::from_secs(3);

/// How the dashboard refreshes.
#[derive(Debug, Clone)]
pub struct Options {
    /// Fresh read at least this often.
    pub poll: Duration,
    /// Use filesystem events (else poll only).
    pub events: bool,
}

fn io_err(e: std::io::Error) -> Error {
    Error::io("drive the terminal", "<tty>", e)
}

/// Puts the terminal back as the shell had it.
#[expect(
    clippy::disallowed_methods,
    reason = "the dashboard owns the terminal: raw mode, the alternate screen and ratatui's frames"
)]
fn restore() {
    let _ = terminal::disable_raw_mode();
    let _ = execute!(
        std::io::stdout(),
        terminal::LeaveAlternateScreen,
        cursor::Show
    );
}

/// The terminal while the dashboard owns it; dropping it restores it.
struct Screen {
    term: Terminal<CrosstermBackend<Stdout>>,
}

impl Screen {
    #[expect(
        clippy::disallowed_methods,
        reason = "the dashboard owns the terminal: raw mode, the alternate screen and ratatui's frames"
    )]
    fn enter() -> Result<Screen> {
        terminal::enable_raw_mode().map_err(io_err)?;
        let screen = Screen {
            term: Terminal::new(CrosstermBackend::new(std::io::stdout())).map_err(io_err)?,
        };
        execute!(
            std::io::stdout(),
            terminal::EnterAlternateScreen,
            cursor::Hide
        )
        .map_err(io_err)?;
        Ok(screen)
    }

    /// Gives the terminal back for a while (an attached tmux client).
    /// Taking the screen mutably keeps the hand-over with its owner.
    #[allow(clippy::unused_self)]
    fn suspend(&mut self) {
        restore();
    }

    #[expect(
        clippy::disallowed_methods,
        reason = "the dashboard owns the terminal: raw mode, the alternate screen and ratatui's frames"
    )]
    fn resume(&mut self) -> Result<()> {
        terminal::enable_raw_mode().map_err(io_err)?;
        execute!(
            std::io::stdout(),
            terminal::EnterAlternateScreen,
            cursor::Hide
        )
        .map_err(io_err)?;
        self.term.clear().map_err(io_err)
    }

    fn draw(&mut self, app: &mut App, now: u64, p: Palette) -> Result<()> {
        let size = self.term.size().map_err(io_err)?;
        app.scroll_into_view(view::list_rows(app, size.width, size.height));
        self.term
            .draw(|f| view::draw(f, app, now, p))
            .map_err(io_err)?;
        Ok(())
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

/// Runs the dashboard until `q`, Ctrl-C (130), SIGTERM or SIGHUP.
#[expect(
    clippy::disallowed_methods,
    reason = "the dashboard owns the terminal: raw mode, the alternate screen and ratatui's frames"
)]
pub fn run(home: &Home, cfg: &Config, opts: &Options) -> Result<u8> {
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        return Err(Error::usage(
            "fm top needs a terminal; for a plain live view use fm-crew-state --watch",
        ));
    }
    let palette = Palette::from_env(
        std::env::var("NO_COLOR").ok().as_deref(),
        std::env::var("TERM").ok().as_deref(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| Error::io("install signal handler", "<signals>", e))?;
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
    watchdog(Arc::clone(&stop));
    let mut screen = Screen::enter()?;
    let (tx, rx) = mpsc::channel();
    let source = Source::start(home, cfg, &tx, opts.events);
    source.refresh();
    // Every configured host's wakes, read in the background: the loop
    // only looks at what has arrived and never waits on a host.
    let feed = crate::remote::wakes::Feed::start(
        home,
        cfg,
        crate::remote::wakes::From::Start,
        HOSTS_EVERY,
    );
    let feed = feed.as_ref();
    let mut app = App::new(home.root().display().to_string());
    if let Some(why) = &source.events_off {
        app.warn(format!(
            "filesystem events unavailable ({why}); refreshing every {}s",
            opts.poll.as_secs_f64()
        ));
    }
    let mut dirty = true;
    let mut next_tick = Instant::now() + TICK;
    let mut next_poll = Instant::now() + opts.poll;
    let mut read_due: Option<Instant> = None;
    loop {
        if stop.load(Ordering::SeqCst) {
            return Ok(0);
        }
        if dirty {
            screen.draw(&mut app, clock::now(), palette)?;
            dirty = false;
        }
        if event::poll(SLICE).map_err(io_err)? {
            match event::read().map_err(io_err)? {
                Event::Key(k) if k.kind != KeyEventKind::Release => {
                    if let Some(effect) = app.key(k) {
                        if let Effect::Quit(code) = effect {
                            return Ok(code);
                        }
                        let ctx = Ctx {
                            home,
                            cfg,
                            tx: &tx,
                            feed,
                        };
                        ctx.apply(effect, &mut app, &mut screen);
                        source.refresh();
                    }
                    dirty = true;
                }
                Event::Resize(..) => dirty = true,
                _ => {}
            }
        }
        while let Ok(msg) = rx.try_recv() {
            match msg {
                Msg::Rows {
                    rows,
                    warnings,
                    new_wakes,
                } => {
                    app.set_rows(rows);
                    app.new_wakes =
                        new_wakes + feed.map_or(0, |f| seen::unseen_hosts(home, &f.wakes()));
                    if let Some(w) = warnings.first() {
                        app.warn(format!("warning: {w}"));
                    }
                    dirty = true;
                }
                Msg::Changed => {
                    read_due.get_or_insert(Instant::now() + DEBOUNCE);
                }
                Msg::Review { id, review } => {
                    app.show_review(&id, review.as_deref().map_err(Clone::clone));
                    dirty = true;
                }
                Msg::Done { text, error } => {
                    if error {
                        app.warn(text);
                    } else {
                        app.say(text);
                    }
                    dirty = true;
                }
            }
        }
        let now = Instant::now();
        if read_due.is_some_and(|t| now >= t) || now >= next_poll {
            read_due = None;
            next_poll = now + opts.poll;
            source.refresh();
        }
        if now >= next_tick {
            next_tick = now + TICK;
            if let Some(id) = app.peeking().map(str::to_string) {
                Ctx {
                    home,
                    cfg,
                    tx: &tx,
                    feed,
                }
                .peek(&id, &mut app);
            }
            dirty = true;
        }
    }
}

/// How long the loop has to answer a stop before the watchdog ends the
/// process.
const GRACE: Duration = Duration::from_millis(600);

/// Once the terminal is hung up (its emulator or tmux server went away),
/// crossterm's reader can spin inside `event::poll` (the tty reads as
/// ready with nothing in it) and the loop never sees a signal's flag. This
/// thread notices a hung-up terminal (its attributes can no longer be
/// read) and a stop the loop has not answered within [`GRACE`], and ends
/// the process itself after restoring what it can.
fn watchdog(stop: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let mut since: Option<Instant> = None;
        loop {
            std::thread::sleep(Duration::from_millis(200));
            if rustix::termios::tcgetattr(std::io::stdin()).is_err() {
                stop.store(true, Ordering::SeqCst);
            }
            if stop.load(Ordering::SeqCst)
                && since.get_or_insert_with(Instant::now).elapsed() >= GRACE
            {
                restore();
                std::process::exit(0);
            }
        }
    });
}

/// What an action needs.
struct Ctx<'a> {
    home: &'a Home,
    cfg: &'a Config,
    tx: &'a Sender<Msg>,
    /// The hosts' wakes, when hosts are configured.
    feed: Option<&'a crate::remote::wakes::Feed>,
}

impl Ctx<'_> {
    fn location(&self, id: &str) -> Result<Location> {
        Location::load(self.home, self.cfg, &TaskId::parse(id)?)
    }

    fn apply(&self, effect: Effect, app: &mut App, screen: &mut Screen) {
        match effect {
            Effect::Quit(_) => {}
            Effect::Jump { id } => match self.jump(&id, screen) {
                Ok(msg) => app.say(msg),
                Err(e) => app.warn(format!("{id}: {e}")),
            },
            Effect::Peek { id } => self.peek(&id, app),
            Effect::OpenWakes => match seen::open(
                self.home,
                &self
                    .feed
                    .map(crate::remote::wakes::Feed::wakes)
                    .unwrap_or_default(),
            ) {
                Ok(lines) => app.show_wakes(lines),
                Err(e) => app.warn(format!("cannot read the wakes feed: {e}")),
            },
            Effect::Grant { id, verb } => {
                let now = crate::clock::now();
                let given = TaskId::parse(&id).and_then(|tid| {
                    crate::grant::give(
                        self.home,
                        crate::grant::Actor::from_env(),
                        &tid,
                        verb,
                        crate::grant::DEFAULT_FOR,
                        now,
                    )
                });
                match given {
                    Ok(g) => app.say(format!("granted {}", g.line(now))),
                    Err(e) => app.warn(format!("{id}: {e}")),
                }
            }
            Effect::Review { id } => {
                let (home, cfg, tx) = (self.home.clone(), self.cfg.clone(), self.tx.clone());
                std::thread::spawn(move || {
                    let review = super::review::load(&home, &cfg, &id);
                    let _ = tx.send(Msg::Review { id, review });
                });
            }
            Effect::Land { id } => {
                app.say(format!("landing {id}\u{2026}"));
                self.background(move |home, cfg| {
                    let task = Task::open(home, cfg, &TaskId::parse(&id)?)?;
                    let actor = crate::grant::Actor::from_env();
                    let req = crate::route::land::LandRequest {
                        merge: false,
                        actor: match actor {
                            crate::grant::Actor::Captain => "captain".into(),
                            crate::grant::Actor::Mate => "mate".into(),
                        },
                    };
                    let landed = crate::route::land::land(home, cfg, &task, &req, actor)?;
                    Ok(landed.text().replace('\n', " \u{b7} "))
                });
            }
            Effect::StartNew => app.start_new(super::actions::known(self.home, self.cfg)),
            Effect::New(spec) => {
                app.say(format!(
                    "writing {}'s brief and spawning it\u{2026}",
                    spec.id
                ));
                self.background(move |home, cfg| super::actions::spawn_new(home, cfg, &spec));
            }
            Effect::Act { id, act, note } => {
                app.say(format!("{id}: {}\u{2026}", act.verb()));
                self.background(move |home, cfg| {
                    super::actions::act(home, cfg, &id, act, note)
                        .map_err(|e| Error::refused(format!("{id}: cannot {}: {e}", act.verb())))
                });
            }
            Effect::Send { id, body } => {
                app.say(format!("sending to {id}\u{2026}"));
                self.background(move |home, cfg| {
                    let sent = send(home, cfg, &id, &body, None)?;
                    Ok(format!("{id}: {}", sent.record_line()))
                });
            }
            Effect::Resolve { id, key, answer } => {
                app.say(format!("answering {id} [{key}]\u{2026}"));
                self.background(move |home, cfg| {
                    let body = format!("decision {key}: {answer}");
                    let sent = send(home, cfg, &id, &body, Some((&key, &answer)))?;
                    if let Some(u) = sent.unresolved.first() {
                        return Err(Error::refused(u.why.clone()));
                    }
                    Ok(format!(
                        "{id}: {} \u{b7} resolved {key}",
                        sent.record_line()
                    ))
                });
            }
        }
    }

    fn peek(&self, id: &str, app: &mut App) {
        let lines = self
            .location(id)
            .and_then(|loc| visit::peek(&loc.tmux(), &loc.pane, None));
        match lines {
            Ok(lines) => app.show_peek(id, lines),
            Err(e) => {
                app.mode = super::app::Mode::List;
                app.warn(format!("{id}: cannot peek: {e}"));
            }
        }
    }

    fn jump(&self, id: &str, screen: &mut Screen) -> Result<String> {
        let loc = self.location(id)?;
        loc.info()?;
        match visit::plan_for(&loc)? {
            Jump::Switch => {
                visit::switch(&loc)?;
                Ok(format!("switched your client to {id} ({})", loc.pane))
            }
            Jump::Popup { server } => {
                // The popup holds its command until it closes: wait on a
                // thread, the dashboard keeps drawing beneath it.
                let (id_, pane) = (id.to_string(), loc.pane.clone());
                self.background(move |_, _| {
                    Ok(match visit::open_beside(&loc, &server)? {
                        Opened::Popup => format!("back from {id_}"),
                        Opened::Window => format!(
                            "{id_} opened in window fm-{id_} of your session: prefix then l comes back"
                        ),
                    })
                });
                Ok(format!(
                    "opening {id} ({pane}) in a popup: prefix then d closes it"
                ))
            }
            Jump::Attach => {
                screen.suspend();
                let status = visit::attach_command(&loc).status();
                screen.resume()?;
                let status = status.map_err(|e| Error::External {
                    program: "tmux".into(),
                    msg: e.to_string(),
                })?;
                if status.success() {
                    Ok(format!("back from {id}"))
                } else {
                    Err(Error::External {
                        program: "tmux".into(),
                        msg: format!("attach exited with {status}"),
                    })
                }
            }
        }
    }

    /// Runs `job` on a thread; its answer becomes the notice.
    fn background(&self, job: impl FnOnce(&Home, &Config) -> Result<String> + Send + 'static) {
        let (home, cfg, tx) = (self.home.clone(), self.cfg.clone(), self.tx.clone());
        std::thread::spawn(move || {
            let msg = match job(&home, &cfg) {
                Ok(text) => Msg::Done { text, error: false },
                Err(e) => Msg::Done {
                    text: e.to_string(),
                    error: true,
                },
            };
            let _ = tx.send(msg);
        });
    }
}

/// `fm-send <id> <body>`'s use case ([`crate::route::send::send`]), here
/// or on the task's host; with `resolve`, the decision key and the answer
/// its `resolved` line carries.
pub(crate) fn send(
    home: &Home,
    cfg: &Config,
    id: &str,
    body: &str,
    resolve: Option<(&str, &str)>,
) -> Result<SendReport> {
    send_keyed(home, cfg, id, body, resolve, None)
}

/// [`send`] under idempotency key `key`: a repeat of the same request
/// gets the first one's kept report and writes nothing (`fm serve`'s
/// answer-once, docs/spec/serve.md).
pub(crate) fn send_keyed(
    home: &Home,
    cfg: &Config,
    id: &str,
    body: &str,
    resolve: Option<(&str, &str)>,
    key: Option<&str>,
) -> Result<SendReport> {
    let id = TaskId::parse(id)?;
    let task = Task::open(home, cfg, &id)?;
    let req = SendRequest {
        from: "captain".into(),
        body: body.as_bytes().to_vec(),
        quiet: false,
        fire_and_forget: false,
        dedupe: false,
        resolve: resolve.iter().map(|(k, _)| (*k).to_string()).collect(),
        answer: resolve.map(|(_, a)| a.to_string()),
        tool: Tool::Top,
    };
    crate::route::send::send(home, cfg, &task, &req, key)
}

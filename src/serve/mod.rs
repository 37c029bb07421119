//! `fm serve`: the captain's web cockpit (docs/serve.md, docs/spec/serve.md).
//!
//! The same library as `fm top`, in a browser: rows from `fm top`'s
//! fleet reader, attention first with the reasons ([`fleet`]), a
//! worker's screen and status lines, the wakes feed, live over
//! server-sent events ([`events`]); answering a decision, sending a
//! message and marking wakes seen call `fm top`'s own use cases, here or
//! on a task's host ([`answer`], [`app`]).
//!
//! - [`auth`]: token, session cookie, anti-forgery token, origin check.
//! - [`token`]: the token file.
//! - [`app`]: routes and the guard every request passes.
//! - [`pages`]: the maud templates (escaped by construction).
//! - [`listen`]: TCP/TLS accept loop and its bounds.
//! - [`screen`]: a worker's screen and status lines, here or on a host.
//!
//! The HTTP stack is axum over hyper on a small tokio runtime (two
//! workers; library calls, which block, go to its blocking pool).

pub mod answer;
mod app;
pub mod auth;
mod events;
mod fleet;
mod listen;
mod pages;
mod screen;
pub mod token;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::home::Home;

/// Where the cockpit listens by default.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7878";

/// How `fm serve` runs.
#[derive(Debug, Clone)]
pub struct Options {
    pub listen: SocketAddr,
    pub allow_remote: bool,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// The URL the captain's browser uses, when a proxy stands in front.
    pub public_url: Option<String>,
    /// Fresh read at least this often.
    pub poll: Duration,
    pub events: bool,
    pub max_streams: usize,
}

/// Why a listen address is refused, if it is.
pub fn check_listen(o: &Options) -> Result<()> {
    let tls = match (&o.tls_cert, &o.tls_key) {
        (Some(_), Some(_)) => true,
        (None, None) => false,
        _ => return Err(Error::usage("--tls-cert and --tls-key go together")),
    };
    if o.listen.ip().is_loopback() {
        return Ok(());
    }
    if !o.allow_remote || !tls {
        return Err(Error::usage(format!(
            "listening on {} (beyond loopback) needs --allow-remote and --tls-cert/--tls-key; \
             or keep the default {DEFAULT_LISTEN} and reach it through an SSH tunnel \
             (ssh -L 7878:127.0.0.1:7878 HOST) or a reverse proxy with TLS (--public-url)",
            o.listen
        )));
    }
    Ok(())
}

/// Runs the cockpit until SIGINT (130) or SIGTERM/SIGHUP (0); `ready`
/// gets the URL to open (token included) once the socket listens.
pub fn run(
    home: &Home,
    cfg: &Config,
    o: &Options,
    ready: impl FnOnce(&str) -> Result<()>,
) -> Result<u8> {
    check_listen(o)?;
    let tls = match (&o.tls_cert, &o.tls_key) {
        (Some(c), Some(k)) => Some(listen::tls_config(c, k)?),
        _ => None,
    };
    let token = token::load_or_make(home)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(16)
        .enable_all()
        .build()
        .map_err(|e| Error::io("start the runtime", "<tokio>", e))?;
    let code = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(o.listen)
            .await
            .map_err(|e| Error::io("listen on", o.listen.to_string(), e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("listen on", o.listen.to_string(), e))?;
        let shared = Arc::new(app::Shared {
            home: home.clone(),
            cfg: cfg.clone(),
            keys: auth::Keys::new(&token),
            origins: auth::Origins::new(addr, tls.is_some(), o.public_url.as_deref()),
            secure_cookie: tls.is_some()
                || o.public_url
                    .as_deref()
                    .and_then(auth::origin_of)
                    .is_some_and(|u| u.starts_with("https://")),
            fleet: fleet::Fleet::start(home, cfg, o.poll, o.events),
            streams: AtomicUsize::new(0),
            max_streams: o.max_streams,
        });
        let scheme = if tls.is_some() { "https" } else { "http" };
        let shown = if addr.ip().is_unspecified() {
            SocketAddr::new([127, 0, 0, 1].into(), addr.port())
        } else {
            addr
        };
        ready(&format!("{scheme}://{shown}/?token={token}"))?;
        let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
        let server = tokio::spawn(listen::serve(listener, acceptor, app::router(shared)));
        let code = stopped().await?;
        server.abort();
        Ok::<u8, Error>(code)
    })?;
    // Open event streams and blocking reads are not waited for.
    rt.shutdown_background();
    Ok(code)
}

/// Waits for a stop signal: SIGINT is 130, SIGTERM and SIGHUP 0.
async fn stopped() -> Result<u8> {
    use tokio::signal::unix::{SignalKind, signal};
    let err = |e| Error::io("install signal handler", "<signals>", e);
    let mut int = signal(SignalKind::interrupt()).map_err(err)?;
    let mut term = signal(SignalKind::terminate()).map_err(err)?;
    let mut hup = signal(SignalKind::hangup()).map_err(err)?;
    Ok(tokio::select! {
        _ = int.recv() => 130,
        _ = term.recv() => 0,
        _ = hup.recv() => 0,
    })
}

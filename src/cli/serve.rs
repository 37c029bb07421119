//! `fm serve`: the web cockpit (docs/spec/serve.md). Parses the flags into
//! [`crate::serve::Options`], prints the URL to open (token included) as
//! the first stdout line, and runs until a signal.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::common::{self, HomeArg};
use crate::error::{Error, Result};

const TOOL: &str = "fm";

#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// ADDR:PORT to listen on (default: [serve] listen, 127.0.0.1:7878; port 0 takes any free port)
    #[arg(long, value_name = "ADDR:PORT")]
    listen: Option<String>,
    /// Allow listening beyond loopback (needs --tls-cert and --tls-key)
    #[arg(long = "allow-remote")]
    allow_remote: bool,
    /// TLS certificate chain (PEM)
    #[arg(long = "tls-cert", value_name = "PEM")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM)
    #[arg(long = "tls-key", value_name = "PEM")]
    tls_key: Option<PathBuf>,
    /// The URL browsers reach this server by, behind a reverse proxy (default: [serve] public_url)
    #[arg(long = "public-url", value_name = "URL")]
    public_url: Option<String>,
    /// Seconds between fresh reads when no file changes
    #[arg(long, value_name = "S", default_value_t = 2.0)]
    interval: f64,
    #[command(flatten)]
    home: HomeArg,
}

pub(crate) fn run(a: ServeArgs) -> Result<u8> {
    if !(a.interval.is_finite() && a.interval > 0.0 && a.interval <= 3600.0) {
        return Err(Error::usage(
            "--interval must be more than 0 and at most 3600 seconds",
        ));
    }
    let ctx = a.home.ctx(TOOL)?;
    let listen = a.listen.unwrap_or_else(|| ctx.cfg.serve.listen.clone());
    let listen: SocketAddr = listen.parse().map_err(|_| {
        Error::usage(format!(
            "--listen takes ADDR:PORT (such as 127.0.0.1:7878), not {}",
            crate::error::quoted(&listen)
        ))
    })?;
    let public_url = a
        .public_url
        .or_else(|| Some(ctx.cfg.serve.public_url.clone()))
        .filter(|u| !u.is_empty());
    if let Some(u) = &public_url
        && crate::serve::auth::origin_of(u).is_none()
    {
        return Err(Error::usage(format!(
            "--public-url takes an http(s) URL, not {}",
            crate::error::quoted(u)
        )));
    }
    let opts = crate::serve::Options {
        listen,
        allow_remote: a.allow_remote,
        tls_cert: a.tls_cert,
        tls_key: a.tls_key,
        public_url,
        poll: Duration::from_secs_f64(a.interval),
        events: true,
        max_streams: usize::try_from(ctx.cfg.serve.max_streams)
            .unwrap_or(usize::MAX)
            .max(1),
    };
    crate::serve::run(&ctx.home, &ctx.cfg, &opts, common::out)
}

//! The listener: TCP (and TLS, with the certificate the captain names)
//! accepted on the runtime, each connection served by hyper's HTTP/1
//! with bounds a slow or hostile client cannot lift: a TLS handshake
//! within [`HANDSHAKE`], request headers within [`HEADER_TIME`] and
//! [`HEADER_BYTES`], at most [`MAX_CONNECTIONS`] connections at once
//! (more wait in the kernel's backlog), at most [`PER_IP`] of them from
//! one address (a further one is closed at once). The guard's refusals
//! close their connection (`Connection: close`), so a client without
//! the token cannot hold places with kept-alive connections. The body
//! bound is the router's ([`super::app::MAX_BODY`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

use crate::error::{Error, Result};

pub const HANDSHAKE: Duration = Duration::from_secs(10);
pub const HEADER_TIME: Duration = Duration::from_secs(10);
pub const HEADER_BYTES: usize = 16 * 1024;
pub const MAX_CONNECTIONS: usize = 128;
/// Most connections open at once from one address.
pub const PER_IP: usize = 48;

/// Connections open per address; a [`IpSlot`] gives its place back.
type PerIp = Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>;

struct IpSlot(PerIp, std::net::IpAddr);

impl IpSlot {
    fn take(map: &PerIp, ip: std::net::IpAddr) -> Option<IpSlot> {
        let mut m = map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = m.entry(ip).or_insert(0);
        if *n >= PER_IP {
            return None;
        }
        *n += 1;
        Some(IpSlot(Arc::clone(map), ip))
    }
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        let mut m = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = m.get_mut(&self.1) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                m.remove(&self.1);
            }
        }
    }
}

/// A rustls server config from PEM files: the certificate chain and its
/// private key (PKCS#8, PKCS#1 or SEC1).
pub fn tls_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let bad = |what: &str, p: &Path, e: &dyn std::fmt::Display| {
        Error::usage(format!("{what} {}: {e}", p.display()))
    };
    // Outside the home: the captain names the files, anywhere.
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(Iterator::collect::<std::result::Result<_, _>>)
        .map_err(|e| bad("cannot read the certificate", cert, &e))?;
    if certs.is_empty() {
        return Err(bad("no certificate in", cert, &"empty"));
    }
    let key_der = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| bad("cannot read the private key", key, &e))?;
    // ring, the one provider built (as for the notifier's client).
    let cfg = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key_der)
        .map_err(|e| bad("the certificate and key do not make a TLS config", cert, &e))?;
    let mut cfg = cfg;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// Serves `app` on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, tls: Option<TlsAcceptor>, app: axum::Router) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let per_ip = PerIp::default();
    loop {
        let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let Ok((tcp, peer)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        // One address past its share: closed at once (dropped).
        let Some(ip_slot) = IpSlot::take(&per_ip, peer.ip()) else {
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let app = app.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let _ip_slot = ip_slot;
            match tls {
                None => conn(TokioIo::new(tcp), app).await,
                Some(acc) => {
                    if let Ok(Ok(s)) = tokio::time::timeout(HANDSHAKE, acc.accept(tcp)).await {
                        conn(TokioIo::new(s), app).await;
                    }
                }
            }
        });
    }
}

async fn conn<I>(io: I, app: axum::Router)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let svc = TowerToHyperService::new(app);
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIME)
        .max_buf_size(HEADER_BYTES)
        .serve_connection(io, svc)
        .await;
}

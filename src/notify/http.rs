//! The HTTP channel: one POST of the note's body, with its title in a
//! `Title` header (what ntfy and similar services read), bounded by one
//! timeout from name resolution to the status line.
//!
//! `http://` and `https://` take the same path through `ureq`, a
//! maintained blocking client (TLS by rustls; the server's certificate is
//! checked against the system's trust store, where `SSL_CERT_FILE` and
//! `SSL_CERT_DIR` are honoured as by curl and OpenSSL). Nothing is handed
//! to another program: a worker's text is the request body and nothing
//! else. The request is the one the hand-written client sent: no proxy,
//! no redirect followed (a 3xx is an answer like any non-2xx), no
//! compression, one connection per note.

use std::io::ErrorKind;
use std::time::Duration;

use ureq::tls::{RootCerts, TlsConfig};

use super::note::Note;

/// Posts `note` to `url`; `Err` says why it did not arrive.
pub fn post(url: &str, timeout: Duration, note: &Note) -> Result<(), String> {
    let host = authority(url).ok_or_else(|| format!("not an http:// or https:// URL: {url}"))?;
    let title = header_safe(&note.title());
    let body = note.body();
    let answer = agent(timeout)
        .post(url)
        // Header names as they were written by hand (ntfy and most servers
        // ignore case; a few compare it).
        .header_raw("Title", title.as_bytes())
        .header_raw("Content-Type", b"text/plain; charset=utf-8")
        .header_raw("Content-Length", body.len().to_string().as_bytes())
        .send(body.as_bytes())
        .map_err(|e| why(e, host, timeout))?;
    let status = answer.status();
    if status.is_success() {
        Ok(())
    } else {
        Err(format!(
            "the server answered {} {}",
            status.as_u16(),
            status.canonical_reason().unwrap_or("(unknown status)")
        ))
    }
}

/// The client for one note: every limit the channel promises, set here.
fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .user_agent("firstmate")
        .accept("")
        .tls_config(
            TlsConfig::builder()
                .root_certs(RootCerts::PlatformVerifier)
                .build(),
        )
        .build()
        .into()
}

/// The reason a POST did not get an answer, in the channel's words.
fn why(e: ureq::Error, host: &str, timeout: Duration) -> String {
    match e {
        ureq::Error::Timeout(_) => format!("no answer within {}ms", timeout.as_millis()),
        ureq::Error::HostNotFound => format!("cannot resolve {host}"),
        ureq::Error::Io(e) => match e.kind() {
            ErrorKind::TimedOut | ErrorKind::WouldBlock => {
                format!("no answer within {}ms", timeout.as_millis())
            }
            ErrorKind::ConnectionRefused
            | ErrorKind::HostUnreachable
            | ErrorKind::NetworkUnreachable
            | ErrorKind::AddrNotAvailable => format!("cannot connect to {host}: {e}"),
            ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset => {
                "the server closed the connection without an answer".into()
            }
            _ => e.to_string(),
        },
        ureq::Error::Protocol(e) => format!("not an HTTP answer: {e}"),
        e => e.to_string(),
    }
}

/// `http[s]://host[:port]/path` → `host[:port]`; `None` for another
/// scheme, an empty host or credentials in the URL (a notification
/// carries none).
fn authority(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let host = rest.find('/').map_or(rest, |i| &rest[..i]);
    (!host.is_empty() && !host.contains('@')).then_some(host)
}

/// A header value: printable ASCII only (anything else becomes `?`).
fn header_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c
            } else {
                '?'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use super::*;
    use crate::wakes::Wake;

    #[test]
    fn urls_name_their_host() {
        assert_eq!(
            authority("http://127.0.0.1:8080/fleet"),
            Some("127.0.0.1:8080")
        );
        assert_eq!(authority("https://ntfy.sh/fleet"), Some("ntfy.sh"));
        assert_eq!(authority("http://example"), Some("example"));
        assert_eq!(authority("http:///x"), None);
        assert_eq!(authority("http://u:p@h/x"), None);
        assert_eq!(authority("https://u@h/x"), None);
        assert_eq!(authority("ftp://h/x"), None);
    }

    #[test]
    fn header_values_stay_ascii() {
        assert_eq!(header_safe("a \u{2014} b\r\nX: y"), "a ? b??X: y");
    }

    fn note() -> Note {
        Note {
            wakes: vec![Wake {
                seq: 1,
                epoch: 0,
                task: "t1".into(),
                kind: "dialog".into(),
                text: "@/etc/hostname".into(),
            }],
        }
    }

    /// The first bytes a client sends to a loopback listener, then the
    /// connection is dropped.
    fn first_bytes(scheme: &str) -> (Vec<u8>, Result<(), String>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("{scheme}://{}/fleet", l.local_addr().unwrap());
        let got = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = vec![0u8; 5];
            s.read_exact(&mut buf).unwrap();
            if buf == b"POST " {
                // The whole request is read before the answer: a socket
                // closed with bytes unread resets the connection, and
                // the client could see that instead of the answer.
                let mut rest = Vec::new();
                let mut byte = [0u8; 1];
                while !rest.ends_with(b"\r\n\r\n") && s.read(&mut byte).unwrap() == 1 {
                    rest.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&rest).to_ascii_lowercase();
                let len = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                let mut body = vec![0u8; len];
                s.read_exact(&mut body).unwrap();
            }
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
            buf
        });
        let r = post(&url, Duration::from_secs(5), &note());
        (got.join().unwrap(), r)
    }

    /// An https:// URL is spoken to by the same client as http://, with
    /// TLS of its own (its first record a handshake, 0x16), not by a
    /// program on `PATH`; a server that is not TLS is a failure.
    #[test]
    fn https_takes_the_same_client_with_tls() {
        let (plain, r) = first_bytes("http");
        assert_eq!(&plain, b"POST ");
        assert_eq!(r, Ok(()));
        let (tls, r) = first_bytes("https");
        assert_eq!(tls[0], 0x16, "a TLS handshake record: {tls:?}");
        assert!(r.is_err(), "a plain HTTP answer is not TLS: {r:?}");
    }
}

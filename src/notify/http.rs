//! The HTTP channel: one POST of the note's body, with its title in a
//! `Title` header (what ntfy and similar services read), bounded by one
//! timeout from connect to the status line.
//!
//! `http://` is spoken here over a plain socket: a single request and its
//! status line need no HTTP stack. `https://` goes through `curl` with the
//! same timeout, because TLS is the one part not worth carrying in every
//! binary for one channel; without curl such a URL fails (and is retried)
//! with the reason in the log. curl gets the body on its stdin: nothing a
//! worker wrote is in its argv (the `Title` header holds the task id and
//! an event name from `[notify] events`, behind a fixed `Title: `, which
//! curl never reads as a file).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::note::Note;
use crate::proc::Cmd;

/// Posts `note` to `url`; `Err` says why it did not arrive.
pub fn post(url: &str, timeout: Duration, note: &Note) -> Result<(), String> {
    let title = header_safe(&note.title());
    let body = note.body();
    if url.starts_with("https://") {
        return Cmd::new("curl")
            .args(["-sS", "-f", "-o", "/dev/null", "--max-time"])
            .arg(format!("{:.3}", timeout.as_secs_f64()))
            .args(["-H", &format!("Title: {title}")])
            .args(["-H", "Content-Type: text/plain; charset=utf-8"])
            // The body on stdin, never in the argv: there a text starting
            // with `@` would name a local file for curl to post.
            .args(["--data-binary", "@-", url])
            .stdin(body.into_bytes())
            .timeout(timeout + Duration::from_secs(1))
            .run_ok()
            .map(drop)
            .map_err(|f| f.cause.to_string());
    }
    let (host, path) =
        split(url).ok_or_else(|| format!("not an http:// or https:// URL: {url}"))?;
    let deadline = Instant::now() + timeout;
    let left = || {
        deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1))
    };
    let authority = if host.contains(':') {
        host.to_string()
    } else {
        format!("{host}:80")
    };
    let addrs: Vec<_> = authority
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .collect();
    let mut last = format!("cannot resolve {host}");
    let mut stream = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, left()) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = format!("cannot connect to {a}: {e}"),
        }
    }
    let mut s = stream.ok_or(last)?;
    let io = |e: std::io::Error| {
        if matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ) {
            format!("no answer within {}ms", timeout.as_millis())
        } else {
            e.to_string()
        }
    };
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: firstmate\r\nTitle: {title}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.set_write_timeout(Some(left())).map_err(io)?;
    s.write_all(request.as_bytes()).map_err(io)?;
    s.write_all(body.as_bytes()).map_err(io)?;
    // The status line is all that is needed of the answer.
    let mut head = Vec::new();
    let mut buf = [0u8; 512];
    while !head.contains(&b'\n') && head.len() < 4096 {
        s.set_read_timeout(Some(left())).map_err(io)?;
        match s.read(&mut buf).map_err(io)? {
            0 => break,
            n => head.extend_from_slice(&buf[..n]),
        }
        if Instant::now() >= deadline {
            return Err(format!("no answer within {}ms", timeout.as_millis()));
        }
    }
    let line = String::from_utf8_lossy(&head);
    let line = line.lines().next().unwrap_or("").trim();
    match line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse::<u16>().ok())
    {
        Some(code) if (200..300).contains(&code) => Ok(()),
        Some(_) => Err(format!("the server answered {line:?}")),
        None if line.is_empty() => Err("the server closed the connection without an answer".into()),
        None => Err(format!("not an HTTP answer: {line:?}")),
    }
}

/// `http://host[:port]/path` → (`host[:port]`, `/path`).
fn split(url: &str) -> Option<(&str, String)> {
    let rest = url.strip_prefix("http://")?;
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    (!host.is_empty() && !host.contains('@')).then_some((host, path))
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
    use super::*;

    #[test]
    fn urls_split_into_host_and_path() {
        assert_eq!(
            split("http://127.0.0.1:8080/fleet"),
            Some(("127.0.0.1:8080", "/fleet".into()))
        );
        assert_eq!(split("http://example"), Some(("example", "/".into())));
        assert_eq!(split("http:///x"), None);
        assert_eq!(split("http://u:p@h/x"), None);
        assert_eq!(split("ftp://h/x"), None);
    }

    #[test]
    fn header_values_stay_ascii() {
        assert_eq!(header_safe("a \u{2014} b\r\nX: y"), "a ? b??X: y");
    }
}

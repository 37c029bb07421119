//! The record format (docs/spec/inbox.md#record): a few `key=value` headers, a line that
//! is exactly `--`, then the body byte-exact; files are named `NNN.msg`.
//!
//! Pure: rendering and parsing only. Creating, listing and moving records
//! is the rest of [`super`].

use serde::Serialize;

use crate::fsx;

pub const SCHEMA: &str = "fm-inbox.v1";
pub const EXT: &str = "msg";

/// A parsed record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Record {
    pub seq: u64,
    pub at: String,
    pub from: String,
    pub fire_and_forget: bool,
    #[serde(skip)]
    pub body: Vec<u8>,
}

impl Record {
    /// The body's first line, lossily decoded (for listings).
    pub fn first_line(&self) -> String {
        let line = self.body.split(|&b| b == b'\n').next().unwrap_or(&[]);
        String::from_utf8_lossy(line).into_owned()
    }
}

/// The bytes of a record.
pub fn render(at: &str, from: &str, fire_and_forget: bool, body: &[u8]) -> Vec<u8> {
    let mut out = format!("schema={SCHEMA}\nat={at}\nfrom={from}\n").into_bytes();
    if fire_and_forget {
        out.extend_from_slice(b"delivery=fire-and-forget\n");
    }
    out.extend_from_slice(b"--\n");
    out.extend_from_slice(body);
    out
}

/// Parses a record's bytes. Headers end at the first line that is exactly
/// `--`; a file without one is not a record (`None`).
pub fn parse(seq: u64, bytes: &[u8]) -> Option<Record> {
    let mut rec = Record {
        seq,
        at: String::new(),
        from: "captain".into(),
        fire_and_forget: false,
        body: Vec::new(),
    };
    let mut pos = 0;
    loop {
        let end = bytes[pos..]
            .iter()
            .position(|&b| b == b'\n')
            .map(|i| pos + i)?;
        let line = &bytes[pos..end];
        pos = end + 1;
        if line == b"--" {
            rec.body = bytes[pos..].to_vec();
            return Some(rec);
        }
        let line = String::from_utf8_lossy(line);
        if let Some((k, v)) = line.split_once('=') {
            match k {
                "at" => rec.at = v.to_string(),
                "from" => rec.from = v.to_string(),
                "delivery" => rec.fire_and_forget = v == "fire-and-forget",
                _ => {}
            }
        }
    }
}

/// The record name for a sequence number (`7` → `007.msg`).
pub fn record_name(seq: u64) -> String {
    fsx::numbered_name(seq, EXT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_parse_round_trip_is_byte_exact() {
        for body in [
            &b"hello"[..],
            b"two\nlines\n\n",
            b"--\n--\n",
            b"\xff\xfe\x00",
            b"Enter",
        ] {
            let bytes = render("2026-11-30T09:15:02Z", "bob", true, body);
            let r = parse(7, &bytes).unwrap();
            assert_eq!(r.body, body);
            assert_eq!(r.from, "bob");
            assert!(r.fire_and_forget);
            assert_eq!(r.at, "2026-11-30T09:15:02Z");
        }
        assert!(parse(1, b"schema=fm-inbox.v1\nno separator").is_none());
    }
}

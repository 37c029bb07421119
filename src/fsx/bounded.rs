//! Bounded reads: no file or stream is read past a limit, so `/dev/zero`,
//! `yes |` or a sparse 100 GB file cannot eat the machine's memory.
//!
//! - A file of the home read whole ([`read_optional`] and its kin) is
//!   refused (exit 1) above [`MAX_FILE`], before anything is read.
//! - A file or stdin named on the command line is read up to its
//!   [`Limit`] plus one byte (enough to know it is over) and refused
//!   (exit 2) above it, with the limit and the setting in the message.
//! - A log read from an offset or its tail ([`read_from`]) is read up to
//!   the caller's bound ([`MAX_CHUNK`] for the watcher's scan of a status
//!   log); the reader resumes after the complete lines it got.

use super::*;

/// Largest file of the home the tools read whole (256 MiB).
pub const MAX_FILE: u64 = 256 << 20;

/// Largest piece of an append-only log read in one go from an offset
/// (16 MiB).
pub const MAX_CHUNK: u64 = 16 << 20;

/// Largest text read from a file or stdin named on the command line when no
/// setting bounds it (1 MiB).
pub const MAX_INPUT: u64 = 1 << 20;

/// How much of one command-line input may be read, and what to call the
/// limit in the refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub bytes: u64,
    /// The setting that sets it (`brief.max_intent_bytes`), or `None` for
    /// a built-in limit.
    pub setting: Option<&'static str>,
}

impl Limit {
    /// The built-in [`MAX_INPUT`].
    pub const INPUT: Limit = Limit {
        bytes: MAX_INPUT,
        setting: None,
    };

    /// A limit read from a setting.
    pub fn setting(bytes: u64, name: &'static str) -> Limit {
        Limit {
            bytes,
            setting: Some(name),
        }
    }

    fn describe(self) -> String {
        match self.setting {
            Some(s) => format!("the limit is {} bytes ({s})", self.bytes),
            None => format!("the limit is {} bytes", self.bytes),
        }
    }
}

/// Reads `r` to its end, or to one byte past `limit`. `Ok(None)` when it
/// holds more than `limit` bytes (nothing more is read).
pub fn read_capped(r: &mut dyn Read, limit: u64) -> io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::new();
    r.take(limit.saturating_add(1)).read_to_end(&mut buf)?;
    Ok((buf.len() as u64 <= limit).then_some(buf))
}

/// Reads `what` (`--intent-file`, `--body-file`, …) from the file at
/// `path`, or from stdin when `path` is `-`, up to `limit`. A FIFO or a
/// process substitution is fine here (the user chose it); an input over
/// the limit is a usage error (exit 2) naming the limit, and a file that
/// cannot be opened or read is a usage error naming it.
pub fn read_input(path: &Path, what: &str, limit: Limit) -> Result<Vec<u8>> {
    let stdin = path == Path::new("-");
    let shown = if stdin {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    let got = if stdin {
        read_capped(&mut io::stdin().lock(), limit.bytes)
            .map_err(|e| Error::io("read", "<stdin>", e))?
    } else {
        File::open(path)
            .and_then(|mut f| read_capped(&mut f, limit.bytes))
            .map_err(|e| Error::usage(format!("cannot read {what} {shown}: {e}")))?
    };
    got.ok_or_else(|| {
        Error::usage(format!(
            "{what} {shown} is over the limit: {}",
            limit.describe()
        ))
    })
}

/// Refuses a home file of `len` bytes that is too big to read whole.
pub(super) fn check_size(path: &Path, len: u64) -> Result<()> {
    if len > MAX_FILE {
        return Err(too_big(path, len));
    }
    Ok(())
}

fn too_big(path: &Path, len: u64) -> Error {
    Error::refused(format!(
        "refusing {} ({len} bytes; the limit for a file read whole is {MAX_FILE} bytes)",
        path.display()
    ))
}

/// Reads an open home file whole, `len` being its size at open (checked
/// against [`MAX_FILE`]); a file that grows past the limit while it is
/// read is refused too.
pub(super) fn read_whole(f: &mut File, len: u64, path: &Path) -> Result<Vec<u8>> {
    check_size(path, len)?;
    // Sized from the stat: `read_to_end` would stat and seek again.
    let mut buf = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_add(1));
    let n = f
        .take(MAX_FILE + 1)
        .read_to_end(&mut buf)
        .map_err(io_err("read", path))?;
    if n as u64 > MAX_FILE {
        return Err(too_big(path, n as u64));
    }
    Ok(buf)
}

/// Where [`read_from`] starts reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// At this byte offset.
    Offset(u64),
    /// This many bytes before the end (the whole file if it is shorter).
    Tail(u64),
}

/// Up to `max` bytes of the regular file `path` from `from`, the offset
/// they start at, and the file's size at open. `Ok(None)` when it does not
/// exist; a symlink or a FIFO is refused. The reader of an append-only log
/// resumes after the complete lines it got.
pub fn read_from(path: &Path, from: Start, max: u64) -> Result<Option<(Vec<u8>, u64, u64)>> {
    use std::os::unix::fs::FileExt;
    let Some((f, md)) = open_read(path)? else {
        return Ok(None);
    };
    let len = md.len();
    let offset = match from {
        Start::Offset(o) => o,
        Start::Tail(n) => len.saturating_sub(n),
    };
    let want = len.saturating_sub(offset).min(max);
    let mut buf = vec![0u8; usize::try_from(want).unwrap_or(0)];
    let mut filled = 0;
    while filled < buf.len() {
        match f.read_at(&mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_err("read", path)(e)),
        }
    }
    buf.truncate(filled);
    Ok(Some((buf, offset, len)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_capped_stops_one_byte_past_the_limit() {
        let mut zero = io::repeat(0);
        assert_eq!(read_capped(&mut zero, 10).unwrap(), None);
        let mut small: &[u8] = b"0123456789";
        assert_eq!(read_capped(&mut small, 10).unwrap().unwrap().len(), 10);
    }

    #[test]
    fn an_endless_input_is_refused_naming_the_limit() {
        let err = read_input(
            Path::new("/dev/zero"),
            "intent file",
            Limit::setting(100, "brief.max_intent_bytes"),
        )
        .unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert_eq!(
            err.to_string(),
            "intent file /dev/zero is over the limit: the limit is 100 bytes (brief.max_intent_bytes)"
        );
    }

    #[test]
    fn a_sparse_home_file_over_the_limit_is_refused_unread() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t1.status");
        let f = File::create(&p).unwrap();
        f.set_len(MAX_FILE + 1).unwrap();
        let err = read_optional(&p).unwrap_err();
        assert_eq!(err.exit_code(), 1);
        assert!(
            err.to_string()
                .contains("the limit for a file read whole is 268435456 bytes"),
            "{err}"
        );
        assert!(read_optional_mtime(&p).is_err());
        f.set_len(5).unwrap();
        assert_eq!(read_optional(&p).unwrap().unwrap(), vec![0; 5]);
    }

    #[test]
    fn read_from_reads_one_chunk_at_most() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("log");
        let f = File::create(&p).unwrap();
        f.set_len(MAX_CHUNK * 2 + 7).unwrap();
        let (b, at, len) = read_from(&p, Start::Offset(3), MAX_CHUNK).unwrap().unwrap();
        assert_eq!((b.len() as u64, at, len), (MAX_CHUNK, 3, MAX_CHUNK * 2 + 7));
        let (b, _, _) = read_from(&p, Start::Offset(MAX_CHUNK * 2), MAX_CHUNK)
            .unwrap()
            .unwrap();
        assert_eq!(b.len(), 7);
        let (b, at, _) = read_from(&p, Start::Tail(10), MAX_CHUNK).unwrap().unwrap();
        assert_eq!((b.len(), at), (10, MAX_CHUNK * 2 - 3));
        assert_eq!(
            read_from(&d.path().join("gone"), Start::Tail(1), 1).unwrap(),
            None
        );
    }
}

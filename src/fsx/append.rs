//! Record appends: one complete line per call, under a lock on the file,
//! with space reserved first and torn tails ended or cut back.

use super::*;

/// Appends one complete record. `line` must end with `\n`; it is written
/// with a single `write_all` on an append descriptor, under an exclusive
/// lock on the file.
///
/// A writer killed (SIGKILL) inside `write` can leave a fragment: Linux copies an
/// append page by page and stops between pages when a fatal signal is
/// pending, so a record crossing a 4 KiB boundary may be cut there. Under
/// the lock the file's last byte is checked, and a torn tail is ended with
/// a `\n` first, so the fragment stays one line of its own and never
/// swallows the start of this record.
pub fn append_line(path: &Path, line: &[u8]) -> Result<()> {
    append_locked(path, line, false)
}

/// The size of the smallest unit Linux copies an append in: a SIGKILL can
/// stop a `write` only between such units (pages or larger folios, always
/// multiples of this).
pub const PAGE: u64 = 4096;

/// [`append_line`] for a file that other programs append to without our
/// lock — a status log takes plain `echo … >>` from workers. Such a writer
/// does not look at the tail, so a fragment left by a killed (SIGKILL) appender of
/// ours would swallow the start of its line. Hence a record of at most one
/// page is kept inside one page of the file: when it would straddle a
/// boundary, it is preceded, in the same `write`, by a filler line of
/// spaces (prose to every reader) that ends exactly at the boundary. The
/// only place that `write` can be cut is then the end of the filler, which
/// is a whole line. The file's length is measured under our lock, which a
/// foreign `>>` does not take: one landing between the measure and our
/// `write` shifts it, and that record may straddle after all (rare: it
/// needs both the race and a boundary inside the record).
pub fn append_line_in_page(path: &Path, line: &[u8]) -> Result<()> {
    append_locked(path, line, true)
}

fn append_locked(path: &Path, line: &[u8], in_page: bool) -> Result<()> {
    use rustix::fs::OFlags;
    use std::os::unix::fs::FileExt;
    debug_assert!(line.ends_with(b"\n"));
    let (dir, name) = open_parent(path, "open for append", false)?;
    let flags = OFlags::RDWR | OFlags::APPEND | OFlags::CREATE | OFlags::NONBLOCK;
    let f = open_at(&dir, name, flags, 0o600, "open for append", path)?;
    regular(&f, path)?;
    // Bounded like every lock wait (docs/spec/files.md#locks): a foreign `flock` on an
    // append target times out naming the file, and nothing is written.
    wait_bounded(path, LOCK_WAIT, || match f.try_lock() {
        Ok(()) => Ok(Some(())),
        Err(fs::TryLockError::WouldBlock) => Ok(None),
        Err(fs::TryLockError::Error(e)) => Err(Error::io("lock", path, e)),
    })?;
    let res = (|| {
        let len = f.metadata().map_err(io_err("stat", path))?.len();
        let mut last = [b'\n'];
        if len > 0 {
            f.read_exact_at(&mut last, len - 1)
                .map_err(io_err("read", path))?;
        }
        let torn = last[0] != b'\n';
        let lead = if in_page {
            page_filler(len, torn, line.len())
        } else if torn {
            b"\n".to_vec()
        } else {
            Vec::new()
        };
        if lead.is_empty() {
            append_whole(&f, line).map_err(io_err("append", path))
        } else {
            let mut fixed = lead;
            fixed.extend_from_slice(line);
            append_whole(&f, &fixed).map_err(io_err("append", path))
        }
    })();
    let _ = f.unlock();
    res
}

/// What goes before a `line_len`-byte record appended at offset `len` so
/// that the record starts on a fresh line and, if it fits in a page, does
/// not cross a page boundary: nothing, a `\n` ending a torn tail, or a
/// filler line (`\n` for a torn tail, spaces, `\n`) up to the boundary.
pub(super) fn page_filler(len: u64, torn: bool, line_len: usize) -> Vec<u8> {
    let lead = u64::from(torn);
    let room = PAGE - (len + lead) % PAGE;
    let line_len = line_len as u64;
    if line_len > PAGE || line_len <= room || room == PAGE {
        return if torn { b"\n".to_vec() } else { Vec::new() };
    }
    // Pad from `len` to the boundary; the pad holds the torn tail's `\n`
    // (if any) and always ends in `\n`.
    let pad = (PAGE - len % PAGE) as usize;
    let mut out = vec![b' '; pad];
    if torn {
        out[0] = b'\n';
    }
    out[pad - 1] = b'\n';
    out
}

/// Writes `line` at the end of `f`, all of it or (as far as this process
/// can tell) none of it. A full disk must not leave a torn record that the
/// next appender's line would be glued onto: the space is reserved first
/// where the filesystem supports it, so `ENOSPC` comes before any byte is
/// written; if a write still stops short, the torn bytes are cut off again
/// while they are the file's tail.
fn append_whole(mut f: &File, line: &[u8]) -> io::Result<()> {
    reserve(f, line.len())?;
    let mut written = 0;
    let err = loop {
        if written == line.len() {
            return Ok(());
        }
        match f.write(&line[written..]) {
            Ok(0) => break io::Error::from(io::ErrorKind::WriteZero),
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break e,
        }
    };
    if written > 0 {
        untear(f, &line[..written]);
    }
    Err(err)
}

/// Reserves `len` bytes past the end of `f` without changing its size.
/// Only a definite "no space" is an error; a filesystem that cannot
/// preallocate falls back to the write and [`untear`].
#[cfg(target_os = "linux")]
fn reserve(f: &File, len: usize) -> io::Result<()> {
    use rustix::fs::FallocateFlags;
    use rustix::io::Errno;
    let size = f.metadata()?.len();
    match rustix::fs::fallocate(f, FallocateFlags::KEEP_SIZE, size, len as u64) {
        Err(e @ (Errno::NOSPC | Errno::DQUOT)) => Err(e.into()),
        Ok(()) | Err(_) => Ok(()),
    }
}

#[cfg(not(target_os = "linux"))]
fn reserve(_f: &File, _len: usize) -> io::Result<()> {
    Ok(())
}

/// Cuts `ours` (the start of a record whose write failed) off the end of
/// `f` if it is still the file's tail; an append descriptor's offset sits
/// just past the bytes it wrote. Best effort: if another appender has
/// written since, the file is left alone.
pub(super) fn untear(mut f: &File, ours: &[u8]) {
    use std::io::Seek;
    use std::os::unix::fs::FileExt;
    let Ok(end) = f.stream_position() else { return };
    let Some(start) = end.checked_sub(ours.len() as u64) else {
        return;
    };
    let mut tail = vec![0; ours.len()];
    let still_tail = f.metadata().is_ok_and(|m| m.len() == end)
        && f.read_exact_at(&mut tail, start).is_ok()
        && tail == ours;
    if still_tail {
        let _ = f.set_len(start);
    }
}

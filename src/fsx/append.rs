//! Record appends: one complete line per call, under a lock on the file,
//! with space reserved first and torn tails ended or cut back.

use super::*;

/// Appends one complete record. `line` must end with `\n`; it is written
/// with a single `write_all` on an append descriptor, under an exclusive
/// lock on the file.
///
/// A writer SIGKILLed inside `write` can leave a fragment: Linux copies an
/// append page by page and stops between pages when a fatal signal is
/// pending, so a record crossing a 4 KiB boundary may be cut there. Under
/// the lock the file's last byte is checked, and a torn tail is ended with
/// a `\n` first, so the fragment stays one line of its own and never
/// swallows the start of this record.
pub fn append_line(path: &Path, line: &[u8]) -> Result<()> {
    use std::os::unix::fs::FileExt;
    debug_assert!(line.ends_with(b"\n"));
    let f = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(io_err("open for append", path))?;
    f.lock().map_err(io_err("lock", path))?;
    let res = (|| {
        let len = f.metadata().map_err(io_err("stat", path))?.len();
        let mut last = [b'\n'];
        if len > 0 {
            f.read_exact_at(&mut last, len - 1)
                .map_err(io_err("read", path))?;
        }
        if last[0] == b'\n' {
            append_whole(&f, line).map_err(io_err("append", path))
        } else {
            let mut fixed = Vec::with_capacity(line.len() + 1);
            fixed.push(b'\n');
            fixed.extend_from_slice(line);
            append_whole(&f, &fixed).map_err(io_err("append", path))
        }
    })();
    let _ = f.unlock();
    res
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
    use std::os::fd::AsRawFd;
    let size = f.metadata()?.len();
    let (Ok(off), Ok(len)) = (libc::off_t::try_from(size), libc::off_t::try_from(len)) else {
        return Ok(());
    };
    // SAFETY: the descriptor is open for writing for the whole call.
    let rc = unsafe { libc::fallocate(f.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, off, len) };
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => Err(e),
        _ => Ok(()),
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

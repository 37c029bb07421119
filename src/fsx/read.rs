//! Reading files others may be writing: whole-file reads that refuse
//! symlinks, batched reads of many small files, and the rule that only
//! complete (`\n`-terminated) lines are trusted.

use super::*;

/// Reads a whole file, refusing a symlink. `Ok(None)` when it does not exist.
pub fn read_optional(path: &Path) -> Result<Option<Vec<u8>>> {
    let Some((mut f, md)) = open_read(path)? else {
        return Ok(None);
    };
    read_whole(&mut f, md.len(), path).map(Some)
}

/// [`read_optional`] plus the file's mtime (Unix seconds) from the same
/// open file, so a reader of many small files pays no extra `stat`.
pub fn read_optional_mtime(path: &Path) -> Result<Option<(Vec<u8>, Option<u64>)>> {
    let Some((mut f, md)) = open_read(path)? else {
        return Ok(None);
    };
    let mtime = md
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs());
    let buf = read_whole(&mut f, md.len(), path)?;
    Ok(Some((buf, mtime)))
}

/// Opens directory `dir` once and reads each named file in it (relative
/// `openat`, `O_NOFOLLOW`), calling `f(index, bytes)` with a buffer reused
/// across files. Files that vanished are skipped; other failures are passed
/// as `Err`. Meant for many small files that are only ever replaced by
/// rename (never written in place): one `read` shorter than the buffer is
/// taken as end of file, so a small file costs open, read and close only.
pub fn read_each_in(
    dir: &Path,
    names: &[String],
    mut f: impl FnMut(usize, io::Result<&[u8]>),
) -> Result<()> {
    let d = open_dir(dir, "open directory", dir, false)?;
    let mut buf = vec![0u8; 64 * 1024];
    for (i, name) in names.iter().enumerate() {
        match read_small_at(&d, name, &mut buf) {
            Ok(Some(len)) => f(i, Ok(&buf[..len])),
            Ok(None) => {}
            Err(e) => f(i, Err(e)),
        }
    }
    Ok(())
}

/// Reads file `name` of the open directory `dir` (relative `openat`,
/// `O_NOFOLLOW`) into `buf` (grown as needed, never shrunk), as
/// [`read_each_in`] does for each of its files: `Ok(None)` when it does
/// not exist, else how many bytes of `buf` it filled. A symlink is an
/// error (`ELOOP`), so is anything but a regular file.
pub fn read_small_at(
    dir: &impl std::os::fd::AsFd,
    name: &str,
    buf: &mut Vec<u8>,
) -> io::Result<Option<usize>> {
    use rustix::fs::{Mode, OFlags};
    if buf.is_empty() {
        buf.resize(64 * 1024, 0);
    }
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => File::from(fd),
        Err(e) => {
            // A name with a NUL byte is `EINVAL` (InvalidInput).
            let e = io::Error::from(e);
            return if e.kind() == io::ErrorKind::NotFound {
                Ok(None)
            } else {
                Err(e)
            };
        }
    };
    let mut len = 0;
    // `pread`, not `read`: a FIFO fails it with `ESPIPE` (even one with a
    // writer, which would read short like a regular file) before a byte is
    // taken from it.
    let res = loop {
        match std::os::unix::fs::FileExt::read_at(&file, &mut buf[len..], len as u64) {
            Ok(0) => break Ok(()),
            Ok(n) => {
                len += n;
                if len < buf.len() {
                    break Ok(());
                }
                if len as u64 > MAX_FILE {
                    break Err(io::Error::new(
                        io::ErrorKind::FileTooLarge,
                        format!("over the limit of {MAX_FILE} bytes for a file read whole"),
                    ));
                }
                buf.resize(buf.len() * 2, 0);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    // A FIFO fails the `pread` (`ESPIPE`); anything else that is no
    // regular file reads as empty or fails: only then is the type checked,
    // so a regular file costs no extra `stat`.
    let suspect = match &res {
        Ok(()) => len == 0,
        Err(e) => {
            e.kind() == io::ErrorKind::WouldBlock
                || e.raw_os_error() == Some(rustix::io::Errno::SPIPE.raw_os_error())
        }
    };
    let res = if suspect {
        match file.metadata() {
            Ok(m) => not_regular(m.file_type()).map_or(res, Err),
            Err(e) => Err(e),
        }
    } else {
        res
    };
    res.map(|()| Some(len))
}

/// Reads a whole file, refusing a symlink; a missing file is an error.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    read_optional(path)?.ok_or_else(|| Error::io("read", path, io::ErrorKind::NotFound.into()))
}

/// The prefix of `bytes` up to and including the last `\n`: what a reader
/// may trust of a file someone may be appending to.
pub fn complete_lines(bytes: &[u8]) -> &[u8] {
    match bytes.iter().rposition(|&b| b == b'\n') {
        Some(i) => &bytes[..=i],
        None => &[],
    }
}

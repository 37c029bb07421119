//! Numbered files (`NNN.<ext>`): canonical names, listing, and the
//! numbered create of docs/spec/files.md#numbered-create — staged and fsynced before the directory
//! lock is taken, renamed into place without clobbering under it.

use super::write::{Temp, rename_noreplace_at, write_temp};
use super::*;

/// `NNN.<ext>` with at least three digits (docs/spec/inbox.md#record).
pub fn numbered_name(n: u64, ext: &str) -> String {
    format!("{n:03}.{ext}")
}

/// The number in a `NNN.<ext>` name; `None` for any other name. Only the
/// canonical spelling counts (the one [`numbered_name`] gives, numbers
/// from 1): every reader opens a record by its canonical name, so a
/// hand-written `1.msg` or `0007.msg` is ignored rather than listed as
/// pending and then never found (docs/spec/inbox.md#record: readers ignore other names).
pub fn parse_numbered(name: &str, ext: &str) -> Option<u64> {
    parse_numbered_bytes(name.as_bytes(), ext)
}

/// [`parse_numbered`] of a name's bytes (a name that is not UTF-8 is no
/// numbered file's: its stem is digits and its extension `ext`).
pub fn parse_numbered_bytes(name: &[u8], ext: &str) -> Option<u64> {
    let stem = name.strip_suffix(ext.as_bytes())?.strip_suffix(b".")?;
    if stem.is_empty() || stem.len() > 19 || !stem.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // Canonical: three digits, or more with no leading zero (as
    // `numbered_name` pads).
    if stem.len() < 3 || (stem.len() > 3 && stem[0] == b'0') {
        return None;
    }
    // At most 19 digits: no overflow.
    let n = stem.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
    (n > 0).then_some(n)
}

/// Numbers of the `NNN.<ext>` files in `dir`, sorted; a missing dir is empty.
pub fn list_numbered(dir: &Path, ext: &str) -> Result<Vec<u64>> {
    refuse_symlink(dir)?;
    let mut out: Vec<u64> = list_dir(dir)?
        .iter()
        .filter_map(|n| n.to_str().and_then(|s| parse_numbered(s, ext)))
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// A complete, fsynced dot-temp file waiting to become a numbered file.
/// Writing and syncing happen before the directory lock is taken, so the
/// lock is held only for a directory scan and one rename. Dropping an
/// uncommitted `Staged` removes the temp file.
#[derive(Debug)]
pub struct Staged {
    temp: Temp,
    dir: PathBuf,
}

/// Writes `bytes` to a fresh dot-temp file in `dir` and fsyncs it, first
/// sweeping the stale temp files a killed writer left there
/// ([`sweep_temps`], best effort). A failure names `dir`, which exists,
/// not the temp file's base name, which never does.
pub fn stage(dir: &Path, bytes: &[u8]) -> Result<Staged> {
    let _ = sweep_temps(dir, STALE_TEMP);
    let (temp, _) = write_temp(&dir.join("staged"), bytes, false).map_err(|e| match e {
        Error::Io { op, source, .. } => Error::Io {
            op,
            path: dir.to_path_buf(),
            source,
        },
        e => e,
    })?;
    Ok(Staged {
        temp,
        dir: dir.to_path_buf(),
    })
}

impl Staged {
    /// Under the caller's lock on the directory: picks one more than the
    /// highest `NNN.<ext>` in the directory and every dir of `also_scan`
    /// and renames the staged file there without clobbering. The caller
    /// fsyncs the directory (after releasing the lock) with [`sync_dir`].
    pub fn commit_numbered(
        mut self,
        also_scan: &[&Path],
        ext: &str,
        _held: &LockGuard,
    ) -> Result<(u64, PathBuf)> {
        let tmp = self
            .temp
            .name
            .take()
            .expect("staged file present until commit");
        let result = (|| {
            let mut highest = list_numbered(&self.dir, ext)?.last().copied().unwrap_or(0);
            for d in also_scan {
                highest = highest.max(list_numbered(d, ext)?.last().copied().unwrap_or(0));
            }
            let mut n = next_number(highest, MAX_NUMBER, &self.dir)?;
            loop {
                let name = numbered_name(n, ext);
                let target = self.dir.join(&name);
                // A name taken outside the lock (a human?) is never clobbered.
                let dir = &self.temp.dir;
                match rename_noreplace_at(dir, &tmp, dir, std::ffi::OsStr::new(&name)) {
                    Ok(()) => return Ok((n, target)),
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                        n = next_number(n, MAX_NUMBER, &self.dir)?;
                    }
                    Err(e) => return Err(Error::io("rename", target, e)),
                }
            }
        })();
        if result.is_err() {
            self.temp.name = Some(tmp);
        }
        result
    }
}

/// Numbered create (docs/spec/files.md#numbered-create): stages `bytes` in `dir`, then under the
/// lock at
/// `lock_path` renames it to one more than the highest `NNN.<ext>` in `dir`
/// and every dir of `also_scan`, never clobbering; fsyncs the directory.
/// Returns the number and the final path.
pub fn create_numbered(
    dir: &Path,
    also_scan: &[&Path],
    ext: &str,
    lock_path: &Path,
    bytes: &[u8],
) -> Result<(u64, PathBuf)> {
    let staged = stage(dir, bytes)?;
    let guard = lock(lock_path, LOCK_WAIT)?;
    let done = staged.commit_numbered(also_scan, ext, &guard)?;
    drop(guard);
    sync_dir(dir)?;
    Ok(done)
}

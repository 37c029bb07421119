//! File primitives (docs/spec/files.md): the only module that creates, replaces,
//! appends to or renames files. Every other module asks it to.
//!
//! Guarantees:
//! - **Atomic replace**: readers see the old bytes or the new bytes, never a
//!   mix; after return the data and the directory entry are on disk.
//! - **Append**: a record is one `write_all` of a complete `\n`-terminated
//!   line on an `O_APPEND` descriptor under an exclusive lock on the file;
//!   a fragment left by a writer killed mid-write is ended with `\n` before
//!   the next record, never glued to it. Readers ignore a final line
//!   without `\n`.
//! - **Locks**: a dedicated lock file, never deleted, locked with
//!   `File::lock`; waits are bounded and a timeout writes nothing.
//! - **Numbered create**: the next number is one more than the highest
//!   present in every scanned directory; the file appears complete or not
//!   at all, and an existing file is never clobbered.
//! - Files are created 0600 and directories 0700; a symlink where a file or
//!   directory is expected is refused, never followed.
//! - **One walk**: every path below a home is reached through [`walk`]'s
//!   checked walk from the home's root, so a symlinked `data`, `state` or
//!   task directory is refused by every operation here, whichever tool asks.

#![allow(
    clippy::disallowed_methods,
    reason = "the one layer that reaches the filesystem below a home; it is what clippy.toml sends everyone else to"
)]

mod append;
mod bounded;
mod counter;
mod debris;
mod lock;
mod numbered;
mod read;
mod walk;
mod write;

pub use append::*;
pub use bounded::*;
pub use counter::*;
pub use debris::*;
pub use lock::*;
pub use numbered::*;
pub use read::*;
pub use walk::*;
pub use write::*;

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// What a non-regular file is, for the error that refuses it.
fn file_kind(ft: fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

/// The error refusing a file of type `ft` where a regular file is
/// expected, or `None` for a regular file (or a directory, which the read
/// itself reports).
fn not_regular(ft: fs::FileType) -> Option<io::Error> {
    (!ft.is_file() && !ft.is_dir()).then(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} where a regular file is expected", file_kind(ft)),
        )
    })
}

/// Refuses an open file that is not a regular file (docs/spec/home.md#permissions): reading a
/// FIFO would wait for a writer forever, and appending to one would report
/// success for bytes nobody keeps.
fn regular(f: &File, path: &Path) -> Result<fs::Metadata> {
    let md = f.metadata().map_err(io_err("stat", path))?;
    if let Some(e) = not_regular(md.file_type()) {
        return Err(Error::refused(format!("refusing {} ({e})", path.display())));
    }
    Ok(md)
}

fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> Error + 'a {
    move |e| {
        if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
            Error::Symlink(path.to_path_buf())
        } else {
            Error::io(op, path, e)
        }
    }
}

/// Refuses `path` if it is a symlink (or a directory on its way below the
/// home is one). A missing path is fine.
pub fn refuse_symlink(path: &Path) -> Result<()> {
    match stat(path)? {
        Some(m) if m.file_type().is_symlink() => Err(Error::Symlink(path.to_path_buf())),
        _ => Ok(()),
    }
}

/// True if `path` exists as a directory (not through a symlink).
pub fn is_dir(path: &Path) -> Result<bool> {
    match stat(path)? {
        Some(m) if m.file_type().is_symlink() => Err(Error::Symlink(path.to_path_buf())),
        Some(m) => Ok(m.is_dir()),
        None => Ok(false),
    }
}

/// Creates `path` (and missing parents) with mode 0700. An existing
/// directory is fine; a symlink or a file in its place is refused.
pub fn ensure_dir(path: &Path) -> Result<()> {
    refuse_symlink(path)?;
    open_dir(path, "create directory", path, true).map(drop)
}

/// FIFOs for tests.
#[cfg(test)]
pub(crate) mod test_fifo {
    use std::path::Path;

    /// Makes a FIFO at `path`.
    pub(crate) fn make(path: &Path) {
        let st = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(st.success(), "mkfifo {}", path.display());
    }

    /// Makes a FIFO at `path` held by a writer (this one, read and write:
    /// it opens at once) with `bytes` waiting in it.
    pub(crate) fn with_writer(path: &Path, bytes: &[u8]) -> std::fs::File {
        make(path);
        let mut w = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap();
        std::io::Write::write_all(&mut w, bytes).unwrap();
        w
    }
}

#[cfg(test)]
mod tests;

//! The captain's token for `fm serve`: `state/.serve.token`, made by
//! `fm serve` or `fm init` when absent (128 random bits from the kernel,
//! as 32 hex digits), mode 0600 (docs/spec/serve.md#token). A token file
//! that is a symlink, or that the group or others may read, is refused:
//! whoever reads it can answer the fleet's decisions. The name starts
//! with a dot, so the dashboards' file watchers never read it as fleet
//! state.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::fsx;
use crate::home::Home;

/// Where the token lives.
pub fn path(home: &Home) -> PathBuf {
    home.state_dir().join(".serve.token")
}

/// The token, made now if there is none.
pub fn load_or_make(home: &Home) -> Result<String> {
    let p = path(home);
    match fsx::stat(&p)? {
        None => {
            fsx::ensure_dir(&home.state_dir())?;
            let token = super::auth::random_hex(16).map_err(|e| Error::io("getrandom", &p, e))?;
            // atomic_write creates the file 0600 and refuses a symlink.
            fsx::atomic_write(&p, format!("{token}\n").as_bytes())?;
            Ok(token)
        }
        Some(m) if m.file_type().is_symlink() => Err(Error::Symlink(p)),
        Some(m) if m.permissions().mode() & 0o077 != 0 => Err(Error::refused(format!(
            "{} may be read by others (mode {:o}); chmod 600 it or remove it to make a new one",
            p.display(),
            m.permissions().mode() & 0o777
        ))),
        Some(_) => {
            let bytes = fsx::read(&p)?;
            let token = String::from_utf8_lossy(&bytes).trim().to_string();
            if token.len() < 32 || !token.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Err(Error::refused(format!(
                    "{} does not hold a token (32 or more letters and digits); remove it to make a new one",
                    p.display()
                )));
            }
            Ok(token)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_made_once_private_and_read_back() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        let t = load_or_make(&home).unwrap();
        assert_eq!(t.len(), 32);
        assert_eq!(load_or_make(&home).unwrap(), t);
        let mode = std::fs::metadata(path(&home)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::set_permissions(path(&home), std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = load_or_make(&home).unwrap_err().to_string();
        assert!(e.contains("read by others"), "{e}");
    }

    #[test]
    fn a_symlinked_token_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let home = Home::at(d.path()).unwrap();
        std::fs::create_dir_all(home.state_dir()).unwrap();
        std::fs::write(d.path().join("elsewhere"), "a".repeat(32)).unwrap();
        std::os::unix::fs::symlink(d.path().join("elsewhere"), path(&home)).unwrap();
        assert!(load_or_make(&home).is_err());
    }
}

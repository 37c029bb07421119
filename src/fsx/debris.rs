//! Crash debris: the dot-temp files (`.<name>.tmp.<pid>.<n>`) a writer
//! killed between writing and renaming leaves behind. Readers never see
//! them (no reader lists a dot name); the next numbered create in the same
//! directory and `fm doctor` remove the stale ones.
//!
//! Nothing else can be left half done by a kill: records and replaced
//! files appear whole by rename, a torn append is ended or cut back by
//! the next appender, and a lock is a `flock` the kernel drops with its
//! holder (lock files are never deleted by design).

use super::*;

/// How old a temp file must be to be taken for debris. A live write holds
/// its temp file for one write, one fsync and a bounded lock wait (seconds);
/// an hour leaves room for a stalled disk.
pub const STALE_TEMP: Duration = Duration::from_secs(3600);

/// Whether `name` is one of the temp names [`atomic_write`] and numbered
/// creates use: `.<target>.tmp.<pid>.<n>`.
pub fn is_temp_name(name: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    name.strip_prefix('.')
        .and_then(|rest| rest.rsplit_once(".tmp."))
        .and_then(|(target, tail)| Some((target, tail.split_once('.')?)))
        .is_some_and(|(target, (pid, n))| !target.is_empty() && digits(pid) && digits(n))
}

/// Removes the temp files in `dir` last modified more than `older_than`
/// ago, and returns their paths. Only regular files are removed, never
/// through a symlink; a missing directory has none.
pub fn sweep_temps(dir: &Path, older_than: Duration) -> Result<Vec<PathBuf>> {
    // Reached by the checked walk: a symlinked directory on the way is
    // refused, and each candidate is looked at without following it.
    let now = std::time::SystemTime::now();
    let mut swept = Vec::new();
    for name in list_dir(dir)? {
        if !name.to_str().is_some_and(is_temp_name) {
            continue;
        }
        let path = dir.join(&name);
        let Ok(Some(md)) = stat(&path) else {
            continue;
        };
        let age = md.modified().ok().and_then(|m| now.duration_since(m).ok());
        if md.file_type().is_file()
            && age.is_some_and(|a| a > older_than)
            && remove_optional(&path)?
        {
            swept.push(path);
        }
    }
    swept.sort();
    Ok(swept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_recognised_and_nothing_else() {
        for yes in [".staged.tmp.123.0", ".t1.meta.tmp.9.41", ".a.tmp.b.tmp.1.2"] {
            assert!(is_temp_name(yes), "{yes}");
        }
        for no in [
            "staged.tmp.1.2",
            ".tmp.1.2",
            ".staged.tmp.1",
            ".staged.tmp.x.2",
            ".staged.tmp.1.2.3",
            "001.msg",
            ".lock",
            ".ring-state",
        ] {
            assert!(!is_temp_name(no), "{no}");
        }
    }

    #[test]
    fn only_stale_temp_files_are_swept() {
        let d = tempfile::tempdir().unwrap();
        let old = std::time::SystemTime::now() - Duration::from_secs(7200);
        let mk = |name: &str, aged: bool| {
            let p = d.path().join(name);
            let f = File::create(&p).unwrap();
            if aged {
                f.set_modified(old).unwrap();
            }
            p
        };
        let stale = mk(".staged.tmp.1.0", true);
        let live = mk(".staged.tmp.2.0", false);
        let record = mk("001.msg", true);
        let dir = d.path().join(".x.tmp.3.0");
        fs::create_dir(&dir).unwrap();
        std::os::unix::fs::symlink(&record, d.path().join(".l.tmp.4.0")).unwrap();
        assert_eq!(
            sweep_temps(d.path(), STALE_TEMP).unwrap(),
            vec![stale.clone()]
        );
        assert!(!stale.exists() && live.exists() && record.exists() && dir.exists());
        assert!(d.path().join(".l.tmp.4.0").symlink_metadata().is_ok());
        assert!(
            sweep_temps(&d.path().join("gone"), STALE_TEMP)
                .unwrap()
                .is_empty()
        );
    }
}

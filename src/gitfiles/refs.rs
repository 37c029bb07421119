//! The stamp of a repository's refs ([`RefsState`]): a walk of the loose
//! refs and `packed-refs`, kept while no notice came from them.

use std::path::{Path, PathBuf};

use rustix::io::Errno;

use crate::stamp::Stamp;

use super::*;

impl GitFiles {
    /// What the refs under `refs/remotes/` (and `refs/heads/` when
    /// `heads`) of a repository look like now: a stamp of every loose ref
    /// file and of `packed-refs`, whether there is any such ref at all,
    /// and whether every file had settled by `now` ([`crate::stamp::Stamp::settled`])
    /// (so an answer about these refs may be kept while the stamp holds).
    /// `None` when the directory cannot be walked.
    pub(crate) fn refs_state(&self, common_dir: &Path, heads: bool, now: u64) -> Option<RefsState> {
        let Some(w) = &self.notice else {
            return self.refs_walk(common_dir, heads, now, &mut Vec::new());
        };
        let key = (common_dir.to_path_buf(), heads);
        let kept = self.refs_kept.lock().expect("refs").get(&key).cloned();
        if let Some(k) = kept {
            let recent =
                now >= k.verified_at && now - k.verified_at < crate::fsnotice::RECHECK_SECS;
            let mut quiet = recent && w.quiet(&common_dir.join("packed-refs"), k.verified);
            for d in &k.dirs {
                quiet &= w.dir_quiet(d, k.verified);
            }
            if quiet && self.common(common_dir).generation == k.generation {
                return Some(k.state);
            }
        }
        let mut dirs = Vec::new();
        let generation = self.common(common_dir).generation;
        let state = self.refs_walk(common_dir, heads, now, &mut dirs);
        // Each directory walked is asked about, so watched from now on.
        for d in &dirs {
            w.dir_quiet(d, self.notice_frame);
        }
        w.quiet(&common_dir.join("packed-refs"), self.notice_frame);
        let mut kept = self.refs_kept.lock().expect("refs");
        match state {
            Some(s) if s.settled => {
                kept.insert(
                    key,
                    KeptRefs {
                        state: s,
                        dirs,
                        generation,
                        verified: self.notice_frame,
                        verified_at: now,
                    },
                );
            }
            _ => {
                kept.remove(&key);
            }
        }
        state
    }

    /// What `take` says of `path` (a stat, following a symlink at its end
    /// or not; `None` when it cannot be taken that way): a kept reader
    /// keeps it across frames while no file event names the path, for up
    /// to [`crate::fsnotice::RECHECK_SECS`], unless it is a symlink (what
    /// it points at is not what the events of its directory see).
    pub(crate) fn kept_stat(
        &self,
        path: &Path,
        follow: bool,
        take: impl FnOnce() -> Option<rustix::io::Result<rustix::fs::Stat>>,
    ) -> Option<rustix::io::Result<rustix::fs::Stat>> {
        let Some(w) = &self.notice else {
            return take();
        };
        let key = (path.to_path_buf(), follow);
        if let Some((r, verified, at)) = self.stats_kept.lock().expect("stats").get(&key).copied()
            && self.now >= at
            && self.now - at < crate::fsnotice::RECHECK_SECS
            && w.quiet(path, verified)
        {
            return Some(r);
        }
        let r = take()?;
        let plain = match r {
            Ok(st) if follow => rustix::fs::lstat(path).is_ok_and(|l| {
                l.st_ino == st.st_ino
                    && !rustix::fs::FileType::from_raw_mode(l.st_mode).is_symlink()
            }),
            Ok(st) => !rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink(),
            // Nothing there, and no dangling symlink either.
            Err(Errno::NOENT | Errno::NOTDIR) => {
                !follow || matches!(rustix::fs::lstat(path), Err(Errno::NOENT | Errno::NOTDIR))
            }
            Err(_) => false,
        };
        let mut kept = self.stats_kept.lock().expect("stats");
        if plain {
            w.quiet(path, self.notice_frame);
            kept.insert(key, (r, self.notice_frame, self.now));
        } else {
            kept.remove(&key);
        }
        Some(r)
    }

    /// [`GitFiles::refs_state`] by walking the refs; `dirs` gets every
    /// directory walked (or looked for).
    pub(super) fn refs_walk(
        &self,
        common_dir: &Path,
        heads: bool,
        now: u64,
        dirs: &mut Vec<PathBuf>,
    ) -> Option<RefsState> {
        use std::hash::{Hash, Hasher};
        let mut h = std::hash::DefaultHasher::new();
        let mut st = RefsState {
            stamp: 0,
            any: false,
            settled: true,
        };
        let mut note = |path: &Path, md: &std::fs::Metadata, st: &mut RefsState| {
            path.hash(&mut h);
            let stamp = Stamp::of_metadata(md);
            stamp.hash(&mut h);
            if !stamp.settled(now) {
                st.settled = false;
            }
        };
        let mut prefixes = vec!["refs/remotes/"];
        if heads {
            prefixes.push("refs/heads/");
        }
        let mut todo: Vec<PathBuf> = prefixes
            .iter()
            .map(|p| common_dir.join(p.trim_end_matches('/')))
            .collect();
        // `refs/` itself: a prefix directory made or removed is an event
        // there.
        dirs.push(common_dir.join("refs"));
        while let Some(dir) = todo.pop() {
            // One that does not exist is made by an event in its parent,
            // which is walked (or is `refs/`).
            let rd = match std::fs::read_dir(&dir) {
                Ok(rd) => rd,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(_) => return None,
            };
            dirs.push(dir.clone());
            for entry in rd {
                let entry = entry.ok()?;
                let path = entry.path();
                if entry.file_type().ok()?.is_dir() {
                    todo.push(path);
                    continue;
                }
                let md = std::fs::symlink_metadata(&path).ok()?;
                note(&path, &md, &mut st);
                st.any = true;
            }
        }
        let packed = common_dir.join("packed-refs");
        match std::fs::symlink_metadata(&packed) {
            Ok(md) => note(&packed, &md, &mut st),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return None,
        }
        let common = self.common(common_dir);
        if common.packed.odd {
            return None;
        }
        if common
            .packed
            .refs
            .keys()
            .any(|k| prefixes.iter().any(|p| k.starts_with(p)))
        {
            st.any = true;
        }
        st.stamp = h.finish();
        Some(st)
    }
}

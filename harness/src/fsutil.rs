//! File writes that never leave a half-written file behind, and the lock
//! files that keep two runs off one thing (a probe, an output directory).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Held while a command writes a set of outputs (results, comparison,
/// reports, pending baselines): a cancelled run takes it before it exits, so
/// it never ends with half of a set written.
pub fn writing() -> std::sync::MutexGuard<'static, ()> {
    static WRITING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    WRITING.lock().unwrap_or_else(|e| e.into_inner())
}

/// A lock file held for as long as the value lives (the operating system
/// releases it when the process ends, however it ends).
#[derive(Debug)]
pub struct Lock {
    _file: fs::File,
    pub path: PathBuf,
}

impl Lock {
    /// Takes the lock at `path` without waiting: `None` when another process
    /// holds it.
    pub fn try_take(path: &Path) -> io::Result<Option<Lock>> {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        let file = fs::File::create(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Lock { _file: file, path: path.to_owned() })),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(e)) => Err(e),
        }
    }
}

/// Fills a temporary file next to `path` with `fill` and renames it into
/// place, so readers see the old file or the new one, never a mix; on failure
/// the temporary file is removed.
fn replace(path: &Path, fill: impl FnOnce(&Path) -> io::Result<()>) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = fill(&tmp).and_then(|()| fs::rename(&tmp, path));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Writes `contents` to `path` atomically.
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    replace(path, |tmp| {
        let mut file = fs::File::create(tmp)?;
        file.write_all(contents)?;
        file.sync_all()
    })
}

/// Copies `from` (with its permissions) to `to` atomically.
pub fn copy_atomic(from: &Path, to: &Path) -> io::Result<()> {
    replace(to, |tmp| fs::copy(from, tmp).map(|_| ()))
}

/// Like [`write_atomic`], but leaves the file (and its timestamp) alone when it
/// already holds `contents`, so build tools do not see a change.
pub fn write_if_changed(path: &Path, contents: &[u8]) -> io::Result<()> {
    match fs::read(path) {
        Ok(old) if old == contents => Ok(()),
        _ => write_atomic(path, contents),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temporaries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b.txt");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["b.txt"]);
    }

    /// The new contents arrive as a new file renamed over the old one: a
    /// reader holding the old file (here a hard link to it) still sees all
    /// of the old contents, never a truncated or mixed file. A write that
    /// fails leaves the old file as it was and no temporary behind.
    #[test]
    fn a_write_replaces_the_file_by_rename_and_a_failed_one_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.toml");
        write_atomic(&path, b"one").unwrap();
        let reader = dir.path().join("reader");
        fs::hard_link(&path, &reader).unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!((fs::read(&path).unwrap(), fs::read(&reader).unwrap()), (b"two".to_vec(), b"one".to_vec()));
        assert!(copy_atomic(&dir.path().join("missing"), &path).is_err());
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let mut names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, ["b.toml", "reader"]);
    }

    #[test]
    fn unchanged_contents_keep_the_timestamp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.rs");
        write_if_changed(&path, b"x").unwrap();
        let before = fs::metadata(&path).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        write_if_changed(&path, b"x").unwrap();
        assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), before);
        write_if_changed(&path, b"y").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"y");
    }
}

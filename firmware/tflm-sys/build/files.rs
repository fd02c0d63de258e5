//! The file operations of the cache, each failure naming the file.

use crate::Failure;
use std::fs;
use std::path::Path;

pub(crate) fn read(file: &Path) -> Result<Vec<u8>, Failure> {
    fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display()))
}

pub(crate) fn create_dir(dir: &Path) -> Result<(), Failure> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

pub(crate) fn rename(from: &Path, to: &Path) -> Result<(), Failure> {
    fs::rename(from, to).map_err(|e| format!("cannot store {} as {}: {e}", from.display(), to.display()))
}

/// `dir`, created if missing, held by this build until the lock returned
/// is dropped.
pub(crate) fn locked(dir: &Path) -> Result<fs::File, Failure> {
    create_dir(dir)?;
    let path = dir.join(".lock");
    let lock = fs::File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    lock.lock().map_err(|e| format!("cannot lock {}: {e}", path.display()))?;
    Ok(lock)
}

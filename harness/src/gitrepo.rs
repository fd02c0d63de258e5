//! The git operations baselines need, through libgit2: read a file at any
//! revision, check that files are unmodified, commit a set of files without
//! touching anything else, and walk a file's history.

use std::path::{Path, PathBuf};

use git2::{Repository, Sort, StatusOptions};

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("{path} is not inside a git repository: {source}")]
    NoRepository { path: PathBuf, source: git2::Error },
    #[error("git revision `{rev}`: {source}")]
    Revision { rev: String, source: git2::Error },
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    #[error("{0} is outside the repository's work tree")]
    Outside(PathBuf),
    #[error("refusing to approve: uncommitted changes to baseline files ({files}); commit or discard them first")]
    Dirty { files: String },
}

/// The repository holding `path` (which need not exist: a file that is
/// only in some revision), and `path` relative to its work tree.
fn open(path: &Path) -> Result<(Repository, PathBuf), GitError> {
    let existing = path.ancestors().find(|p| p.exists()).unwrap_or(path);
    let repo =
        Repository::discover(existing).map_err(|source| GitError::NoRepository { path: path.to_owned(), source })?;
    let root = repo
        .workdir()
        .ok_or_else(|| GitError::Outside(path.to_owned()))?
        .canonicalize()
        .map_err(|_| GitError::Outside(path.to_owned()))?;
    let absolute = absolute(path);
    let relative = absolute.strip_prefix(&root).map_err(|_| GitError::Outside(path.to_owned()))?.to_owned();
    Ok((repo, relative))
}

/// `path` made absolute through its nearest existing ancestor.
fn absolute(path: &Path) -> PathBuf {
    let mut existing = path.to_owned();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_owned());
                existing = parent.to_owned();
            }
            _ => break,
        }
    }
    let mut out = existing.canonicalize().unwrap_or(existing);
    for name in rest.into_iter().rev() {
        out.push(name);
    }
    out
}

/// The commit `rev` names.
fn commit_at<'r>(repo: &'r Repository, rev: &str) -> Result<git2::Commit<'r>, GitError> {
    repo.revparse_single(rev)
        .and_then(|o| o.peel_to_commit())
        .map_err(|source| GitError::Revision { rev: rev.to_owned(), source })
}

/// The file's text at `rev`, or None when the file does not exist there.
pub fn read_at(path: &Path, rev: &str) -> Result<Option<String>, GitError> {
    let (repo, relative) = open(path)?;
    let commit = commit_at(&repo, rev)?;
    let entry = match commit.tree()?.get_path(&relative) {
        Ok(entry) => entry,
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let blob = entry.to_object(&repo)?.peel_to_blob()?;
    Ok(Some(String::from_utf8_lossy(blob.content()).into_owned()))
}

/// The files under `dir` as committed at `rev`, relative to `dir`.
pub fn files_at(dir: &Path, rev: &str) -> Result<Vec<PathBuf>, GitError> {
    let (repo, relative) = open(dir)?;
    let commit = commit_at(&repo, rev)?;
    let tree = match commit.tree()?.get_path(&relative) {
        Ok(entry) => entry.to_object(&repo)?.peel_to_tree()?,
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut files = Vec::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
        if entry.kind() == Some(git2::ObjectType::Blob) {
            files.push(PathBuf::from(root).join(entry.name().unwrap_or_default()));
        }
        git2::TreeWalkResult::Ok
    })?;
    Ok(files)
}

/// The files under `dir` with uncommitted changes (modified, staged, new).
pub fn changed_under(dir: &Path) -> Result<Vec<PathBuf>, GitError> {
    let (repo, relative) = open(dir)?;
    let mut options = StatusOptions::new();
    options.include_untracked(true).recurse_untracked_dirs(true).pathspec(relative.to_string_lossy().as_ref());
    let statuses = repo.statuses(Some(&mut options))?;
    Ok(statuses.iter().filter(|s| !s.status().is_empty()).filter_map(|s| s.path().map(PathBuf::from)).collect())
}

/// The HEAD commit's id, if the path is in a repository with commits.
pub fn head(path: &Path) -> Option<String> {
    let (repo, _) = open(path).ok()?;
    let id = repo.head().ok()?.peel_to_commit().ok()?.id();
    Some(id.to_string())
}

/// The HEAD commit of the repository whose work tree is exactly `root` (not
/// one it sits inside).
pub fn checkout_commit(root: &Path) -> Option<String> {
    checkout(root).map(|(_, id)| id)
}

/// [`checkout_commit`], and whether tracked files in the directories `dirs`
/// of it have uncommitted changes.
pub fn checkout_head(root: &Path, dirs: &[&str]) -> Option<(String, bool)> {
    let (repo, id) = checkout(root)?;
    let mut options = StatusOptions::new();
    options.include_untracked(false).include_ignored(false);
    for dir in dirs {
        options.pathspec(dir);
    }
    let modified = repo.statuses(Some(&mut options)).map_or(true, |s| s.iter().any(|e| !e.status().is_empty()));
    Some((id, modified))
}

fn checkout(root: &Path) -> Option<(Repository, String)> {
    let repo = Repository::open(root).ok()?;
    let id = repo.head().ok()?.peel_to_commit().ok()?.id().to_string();
    Some((repo, id))
}

/// The merge base of HEAD and `other` (a branch or any revision).
pub fn merge_base(path: &Path, other: &str) -> Result<String, GitError> {
    let (repo, _) = open(path)?;
    let head = repo.head()?.peel_to_commit()?.id();
    let other_id = commit_at(&repo, other)?.id();
    Ok(repo.merge_base(head, other_id)?.to_string())
}

/// Who the repository's configuration says the user is.
pub fn who(path: &Path) -> Option<String> {
    let (repo, _) = open(path).ok()?;
    let sig = repo.signature().ok()?;
    Some(format!("{} <{}>", sig.name()?, sig.email()?))
}

/// Commits exactly `files` (as they are on disk) on top of HEAD, leaving every
/// other path of the index and work tree alone. Returns the new commit's id.
pub fn commit_files(files: &[PathBuf], message: &str) -> Result<String, GitError> {
    let first = files.first().ok_or(GitError::Outside(PathBuf::new()))?;
    let (repo, _) = open(first)?;
    let head = repo.head()?.peel_to_commit()?;
    let mut update = git2::build::TreeUpdateBuilder::new();
    let mut relatives = Vec::new();
    for file in files {
        let (_, relative) = open(file)?;
        let blob = repo.blob_path(&absolute(file))?;
        update.upsert(&relative, blob, git2::FileMode::Blob);
        relatives.push(relative);
    }
    let tree = repo.find_tree(update.create_updated(&repo, &head.tree()?)?)?;
    let sig = repo.signature()?;
    let id = repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &[&head])?;
    // The index follows, for these paths only.
    let mut index = repo.index()?;
    for relative in &relatives {
        index.add_path(relative)?;
    }
    index.write()?;
    Ok(id.to_string())
}

/// One version of a file in its history.
#[derive(Debug, Clone)]
pub struct Version {
    pub commit: String,
    /// Seconds since the Unix epoch.
    pub time: i64,
    pub summary: String,
    pub text: String,
}

/// Every commit reachable from HEAD that changed `path`, oldest first, with
/// the file's text there (commits that delete it are left out).
pub fn history(path: &Path) -> Result<Vec<Version>, GitError> {
    let (repo, relative) = open(path)?;
    let mut walk = repo.revwalk()?;
    walk.push_head()?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME | Sort::REVERSE)?;
    let mut versions = Vec::new();
    let mut last = None;
    for id in walk {
        let commit = repo.find_commit(id?)?;
        let blob = commit.tree()?.get_path(&relative).ok().map(|e| e.id());
        if blob != last {
            if let Some(blob) = blob {
                let content = repo.find_blob(blob)?;
                versions.push(Version {
                    commit: commit.id().to_string(),
                    time: commit.time().seconds(),
                    summary: commit.summary().unwrap_or("").to_owned(),
                    text: String::from_utf8_lossy(content.content()).into_owned(),
                });
            }
            last = blob;
        }
    }
    Ok(versions)
}

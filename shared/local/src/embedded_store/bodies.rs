//! The folder of bodies: safe file names, atomic writes, checked reads.
//!
//! Layout: `<bodies>/<episode>/<seq>.<index>.<nonce>.<key>.json`, where `<episode>` and
//! `<key>` are escaped so that no id or key can name a path outside the folder, and
//! `<nonce>` is new for every commit. The `bodies` table maps each (episode, key) to its
//! file, so names only need to be unique, not reversible or stable. The nonce makes them
//! unique without the write lock: a commit writes (and syncs) its bodies before it queues
//! for the connection, and removes them if it does not land. A process killed between the
//! two leaves files no record names; they are never read.
//!
//! The pictures a turn's user sent (D-42) live beside its bodies, the same way:
//! `<bodies>/<episode>/pictures/<sha256>.<nonce>.<ext>`, mapped by the `pictures` table
//! from (episode, SHA-256). A picture the episode already holds keeps its first file; the
//! copy a later commit wrote is removed once that commit has landed.

use std::fmt::Write as _;
use std::fs;
use std::hash::{Hash as _, Hasher as _};
use std::io::Write as _;
use std::path::{Component, Path, PathBuf};

use baton_core::picture::{MediaType, Picture};
use baton_core::ports::store::{Body, StoreError};

use super::error;

/// Longest escaped id or key kept whole in a name (file names stay under 255 bytes).
const MAX_NAME: usize = 120;

/// Escapes `text` into `[a-z0-9_-]` plus `%XX`: no separators, no dots, and distinct texts
/// stay distinct even on case-insensitive file systems (letters other than `a`-`z` and
/// `%XX` digits never appear raw).
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-' || byte == b'_' {
            out.push(char::from(byte));
        } else {
            // Writing to a String cannot fail.
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// The folder of an episode, relative to the bodies folder. A long id is cut and marked
/// with a hash of the whole id (only that form contains a raw `~`), so that long ids that
/// share a beginning mostly get folders of their own; file names are unique either way.
pub(crate) fn episode_dir(episode_id: &str) -> String {
    let escaped = escape(episode_id);
    if escaped.len() <= MAX_NAME {
        escaped
    } else {
        let mut hasher = std::hash::DefaultHasher::new();
        episode_id.hash(&mut hasher);
        format!("{}~{:016x}", &escaped[..MAX_NAME - 20], hasher.finish())
    }
}

/// The file of the `index`-th body of turn `seq`, relative to the bodies folder.
fn body_file(dir: &str, seq: u64, index: usize, nonce: &str, key: &str) -> String {
    let mut key = escape(key);
    key.truncate(MAX_NAME);
    format!("{dir}/{seq}.{index}.{nonce}.{key}.json")
}

/// The file of a picture, relative to the bodies folder. The name is escaped although a
/// commit's pictures are checked to be named by hex digits: a path is never built from
/// unescaped text.
fn picture_file(dir: &str, sha256: &str, nonce: &str, media_type: MediaType) -> String {
    let mut name = escape(sha256);
    name.truncate(MAX_NAME);
    let extension = match media_type {
        MediaType::Jpeg => "jpg",
        MediaType::Png => "png",
        MediaType::Webp => "webp",
        MediaType::Gif => "gif",
    };
    format!("{dir}/pictures/{name}.{nonce}.{extension}")
}

/// Writes the bodies of turn `seq` of `episode_id` under `root`, each atomically, and
/// returns their paths relative to `root`, in order. On a failure the ones written are
/// removed.
pub(crate) fn write_all(
    root: &Path,
    episode_id: &str,
    seq: u64,
    bodies: &[Body],
) -> Result<Vec<String>, StoreError> {
    let dir = episode_dir(episode_id);
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let files = bodies.iter().enumerate().map(|(index, body)| {
        (
            body_file(&dir, seq, index, &nonce, &body.key),
            body.json.as_bytes(),
        )
    });
    write_files(root, files, "writing a body")
}

/// Writes the pictures of a turn of `episode_id` under `root`, each atomically, and returns
/// their paths relative to `root`, in order. On a failure the ones written are removed.
pub(crate) fn write_pictures(
    root: &Path,
    episode_id: &str,
    pictures: &[Picture],
) -> Result<Vec<String>, StoreError> {
    let dir = episode_dir(episode_id);
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let files = pictures.iter().map(|p| {
        (
            picture_file(&dir, &p.sha256, &nonce, p.media_type),
            p.bytes.as_ref(),
        )
    });
    write_files(root, files, "writing a picture")
}

/// Writes each `(relative path, bytes)` under `root` atomically and returns the paths, in
/// order; on a failure the ones written are removed.
fn write_files<'a>(
    root: &Path,
    files: impl ExactSizeIterator<Item = (String, &'a [u8])>,
    doing: &str,
) -> Result<Vec<String>, StoreError> {
    let mut written = Vec::with_capacity(files.len());
    for (file, bytes) in files {
        if let Err(e) = write(root, &file, bytes, doing) {
            remove(root, &written);
            return Err(e);
        }
        written.push(file);
    }
    Ok(written)
}

/// Removes body or picture files no record will name (a commit that did not land, or a
/// picture the episode already held); a file that will not go is only logged.
pub(crate) fn remove(root: &Path, files: &[String]) {
    for file in files {
        if let Err(e) = fs::remove_file(root.join(file)) {
            tracing::warn!(file, error = %e, "embedded store: an unused body file was left");
        }
    }
}

/// Writes `bytes` to `root/relative` atomically: a synced temp file renamed into place.
fn write(root: &Path, relative: &str, bytes: &[u8], doing: &str) -> Result<(), StoreError> {
    if baton_core::fault!("bodies.write") {
        return Err(baton_core::failpoint::store_fault("bodies.write"));
    }
    let target = root.join(relative);
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent).map_err(|e| error::io(doing, &e))?;
    }
    let mut temp = target.clone().into_os_string();
    temp.push(".tmp");
    let temp = PathBuf::from(temp);
    let written = fs::File::create(&temp).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    written
        .and_then(|()| fs::rename(&temp, &target))
        .map_err(|e| {
            let _ = fs::remove_file(&temp);
            error::io(doing, &e)
        })
}

/// Resolves a stored relative path, refusing any that could leave the bodies folder (the
/// file may have been edited by hand).
pub(crate) fn resolve(root: &Path, relative: &str) -> Result<PathBuf, StoreError> {
    let path = Path::new(relative);
    let inside = path.components().count() > 0
        && path.components().all(|c| matches!(c, Component::Normal(_)));
    if inside {
        Ok(root.join(path))
    } else {
        Err(error::undecodable("a body path", &relative))
    }
}

/// Decodes a body file read from disk.
pub(crate) fn decode(bytes: &[u8]) -> Result<serde_json::Value, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| error::undecodable("a body file", &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_names_hold_no_separator_dot_or_capital() {
        let escaped = escape("../A b/c\\d.é");
        assert_eq!(escaped, "%2E%2E%2F%41%20b%2Fc%5Cd%2E%C3%A9");
        assert!(!escaped.contains(['/', '\\', '.']));
    }

    #[test]
    fn long_episode_ids_are_cut_and_kept_apart_by_a_hash() {
        let (a, b) = (
            format!("{}a", "e".repeat(300)),
            format!("{}b", "e".repeat(300)),
        );
        let dir = episode_dir(&a);
        assert!(
            dir.starts_with(&"e".repeat(100)) && dir.contains('~'),
            "{dir}"
        );
        assert!(dir.len() <= MAX_NAME);
        assert_ne!(dir, episode_dir(&b));
        assert_eq!(episode_dir("ep-1"), "ep-1");
    }

    #[test]
    fn two_commits_of_one_turn_never_share_a_file() {
        let root = tempfile::tempdir().unwrap();
        let bodies = [Body {
            key: "k".into(),
            json: "{}".into(),
        }];
        let first = write_all(root.path(), "ep", 1, &bodies).unwrap();
        let second = write_all(root.path(), "ep", 1, &bodies).unwrap();
        assert_ne!(first, second);
        remove(root.path(), &second);
        assert!(root.path().join(&first[0]).exists());
        assert!(!root.path().join(&second[0]).exists());
    }

    #[test]
    fn stored_paths_that_leave_the_folder_are_refused() {
        let root = Path::new("/store/bodies");
        assert!(resolve(root, "ep/1.0.k.json").is_ok());
        for bad in ["../x.json", "/etc/passwd", "ep/../../x", ""] {
            assert!(
                matches!(resolve(root, bad), Err(StoreError::Corrupt(_))),
                "{bad}"
            );
        }
    }
}

//! The folder of bodies: safe file names, atomic writes, checked reads.
//!
//! Layout: `<bodies>/<episode>/<seq>.<index>.<key>.json`, where `<episode>` and `<key>` are
//! escaped so that no id or key can name a path outside the folder. The `bodies` table maps
//! each (episode, key) to its file, so names only need to be unique, not reversible. Seq and
//! index make them unique: only the commit that holds the write lock at version `seq - 1`
//! writes files for `seq`, so a name is reused only to overwrite an orphan of a commit that
//! never landed, never a committed body.

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Component, Path, PathBuf};

use baton_core::ports::store::{Body, StoreError};

use super::failure;

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

/// The folder of an episode, relative to the bodies folder. `row_id` keeps long ids apart:
/// only that form contains a raw `~`.
pub(crate) fn episode_dir(episode_id: &str, row_id: i64) -> String {
    let escaped = escape(episode_id);
    if escaped.len() <= MAX_NAME {
        escaped
    } else {
        format!("{}~{row_id}", &escaped[..MAX_NAME - 20])
    }
}

/// The file of the `index`-th body of turn `seq`, relative to the bodies folder.
pub(crate) fn body_file(dir: &str, seq: u64, index: usize, key: &str) -> String {
    let mut key = escape(key);
    key.truncate(MAX_NAME);
    format!("{dir}/{seq}.{index}.{key}.json")
}

/// Writes one body to `root/relative` atomically: a synced temp file renamed into place.
pub(crate) fn write(root: &Path, relative: &str, body: &Body) -> Result<(), StoreError> {
    let doing = "writing a body";
    if baton_core::fault!("bodies.write") {
        return Err(baton_core::failpoint::store_fault("bodies.write"));
    }
    let target = root.join(relative);
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent).map_err(|e| failure::io(doing, &e))?;
    }
    let bytes = body.json.as_bytes();
    let temp = target.with_extension("json.tmp");
    let written = fs::File::create(&temp).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    written
        .and_then(|()| fs::rename(&temp, &target))
        .map_err(|e| {
            let _ = fs::remove_file(&temp);
            failure::io(doing, &e)
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
        Err(failure::undecodable("a body path", &relative))
    }
}

/// Decodes a body file read from disk.
pub(crate) fn decode(bytes: &[u8]) -> Result<serde_json::Value, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| failure::undecodable("a body file", &e))
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
    fn long_episode_ids_are_kept_apart_by_row_id() {
        let long = "e".repeat(300);
        assert_eq!(episode_dir(&long, 7), format!("{}~7", "e".repeat(100)));
        assert_ne!(episode_dir(&long, 7), episode_dir(&long, 8));
        assert_eq!(episode_dir("ep-1", 7), "ep-1");
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

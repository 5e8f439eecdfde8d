//! A damaged or foreign file is refused in plain words and left exactly as it was.

use std::fs;

use baton_core::ports::store::StoreError;
use baton_local::embedded_store::{DATABASE_FILE, EmbeddedStore};

fn assert_plain(message: &str) {
    let lower = message.to_lowercase();
    for jargon in ["sqlite", "sql", "pragma", "error code", "/"] {
        assert!(!lower.contains(jargon), "{message:?} mentions {jargon:?}");
    }
}

#[test]
fn garbage_file_is_corrupt_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DATABASE_FILE);
    let garbage: Vec<u8> = (0..8_192u32).map(|i| (i * 31 % 251) as u8).collect();
    fs::write(&path, &garbage).unwrap();

    let err = EmbeddedStore::open(dir.path()).unwrap_err();
    let StoreError::Corrupt(message) = &err else {
        panic!("expected Corrupt, got {err:?}");
    };
    assert_plain(message);
    assert_eq!(fs::read(&path).unwrap(), garbage);
    assert!(!dir.path().join("baton.sqlite-wal").exists());
}

#[test]
fn another_programs_database_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DATABASE_FILE);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine');")
            .unwrap();
    }
    let before = fs::read(&path).unwrap();

    let err = EmbeddedStore::open(dir.path()).unwrap_err();
    assert!(
        matches!(&err, StoreError::Corrupt(m) if !m.is_empty()),
        "{err:?}"
    );
    assert_eq!(fs::read(&path).unwrap(), before);
}

#[test]
fn store_from_a_newer_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(EmbeddedStore::open(dir.path()).unwrap());
    {
        let conn = rusqlite::Connection::open(dir.path().join(DATABASE_FILE)).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
    }

    let err = EmbeddedStore::open(dir.path()).unwrap_err();
    let StoreError::Corrupt(message) = &err else {
        panic!("expected Corrupt, got {err:?}");
    };
    assert!(message.contains("newer version"), "{message}");
}

//! Account links (D-37): one row per principal and server, the tokens sealed before they
//! reach the store, listed by server.

use baton_core::Principal;
use baton_core::ports::store::{AccountLink, StoreError};
use rusqlite::{Connection, OptionalExtension, params};

use super::error;

/// The principal's link to `server`, if any.
pub(crate) fn link(
    conn: &Connection,
    principal: &Principal,
    server: &str,
) -> Result<Option<AccountLink>, StoreError> {
    conn.query_row(
        "SELECT server, sealed, updated_ms FROM links WHERE principal = ?1 AND server = ?2",
        params![principal.as_str(), server],
        row_link,
    )
    .optional()
    .map_err(|e| error::sql("reading an account link", e))
}

/// Every link of the principal, by server.
pub(crate) fn links(
    conn: &Connection,
    principal: &Principal,
) -> Result<Vec<AccountLink>, StoreError> {
    let doing = "listing account links";
    let mut statement = conn
        .prepare_cached(
            "SELECT server, sealed, updated_ms FROM links WHERE principal = ?1 ORDER BY server",
        )
        .map_err(|e| error::sql(doing, e))?;
    let rows = statement
        .query_map(params![principal.as_str()], row_link)
        .map_err(|e| error::sql(doing, e))?;
    rows.collect::<Result<Vec<_>, _>>()
        .map_err(|e| error::sql(doing, e))
}

/// Saves or replaces the principal's link to `link.server`.
pub(crate) fn save(
    conn: &Connection,
    principal: &Principal,
    link: &AccountLink,
) -> Result<(), StoreError> {
    let updated = i64::try_from(link.updated_ms).unwrap_or(i64::MAX);
    conn.execute(
        "INSERT INTO links (principal, server, sealed, updated_ms) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (principal, server) DO UPDATE SET sealed = ?3, updated_ms = ?4",
        params![principal.as_str(), link.server, link.sealed, updated],
    )
    .map(drop)
    .map_err(|e| error::sql("saving an account link", e))
}

/// Removes the principal's link to `server`; whether there was one.
pub(crate) fn delete(
    conn: &Connection,
    principal: &Principal,
    server: &str,
) -> Result<bool, StoreError> {
    conn.execute(
        "DELETE FROM links WHERE principal = ?1 AND server = ?2",
        params![principal.as_str(), server],
    )
    .map(|removed| removed > 0)
    .map_err(|e| error::sql("removing an account link", e))
}

fn row_link(row: &rusqlite::Row<'_>) -> rusqlite::Result<AccountLink> {
    Ok(AccountLink {
        server: row.get(0)?,
        sealed: row.get(1)?,
        updated_ms: u64::try_from(row.get::<_, i64>(2)?).unwrap_or_default(),
    })
}

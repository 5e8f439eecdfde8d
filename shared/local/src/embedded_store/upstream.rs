//! Each specialist's conversation with its upstream chat service: one row per episode and
//! specialist, owned through its episode row. Read as stored, expired or not (the caller
//! checks the expiry); a row that does not decode reads as none, so the conversation
//! starts afresh instead of the turn failing.

use baton_core::Principal;
use baton_core::ports::store::StoreError;
use baton_core::ports::upstream::UpstreamConversation;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, params};

use super::error;
use super::journal::int;

/// The conversation `agent_id` keeps on the episode, checked for ownership: one statement,
/// so the episode and its row come from the same snapshot.
pub(crate) fn conversation(
    conn: &Connection,
    principal: &Principal,
    episode_id: &str,
    agent_id: &str,
) -> Result<Option<UpstreamConversation>, StoreError> {
    let doing = "reading an upstream conversation";
    let row = conn
        .query_row(
            "SELECT e.owner, u.agent_id, u.conversation_id, u.expires_ms, u.pending
             FROM episodes e LEFT JOIN upstream_conversations u
                 ON u.episode_id = e.episode_id AND u.agent_id = ?2
             WHERE e.episode_id = ?1",
            params![episode_id, agent_id],
            |row| {
                // Decoded from the raw values: a damaged row must not fail the read.
                let found = row.get_ref(1)? != ValueRef::Null;
                let decoded = decode(agent_id, row.get_ref(2)?, row.get_ref(3)?, row.get_ref(4)?);
                Ok((row.get::<_, String>(0)?, found, decoded))
            },
        )
        .optional()
        .map_err(|e| error::sql(doing, e))?;
    let Some((owner, found, decoded)) = row else {
        return Err(StoreError::NotFound);
    };
    if owner != principal.as_str() {
        return Err(StoreError::NotFound);
    }
    if !found {
        return Ok(None);
    }
    if decoded.is_none() {
        // Losing the id only costs a new conversation (with replay); failing would cost
        // the answer.
        tracing::warn!(
            agent = agent_id,
            "embedded store: an upstream conversation does not decode; treated as none"
        );
    }
    Ok(decoded)
}

/// The row's values as a conversation, if they are what this store writes.
fn decode(
    agent_id: &str,
    conversation_id: ValueRef<'_>,
    expires_ms: ValueRef<'_>,
    pending: ValueRef<'_>,
) -> Option<UpstreamConversation> {
    let pending = match pending {
        ValueRef::Null => None,
        ValueRef::Text(pending) => Some(std::str::from_utf8(pending).ok()?.to_owned()),
        _ => return None,
    };
    match (conversation_id, expires_ms) {
        (ValueRef::Text(conversation_id), ValueRef::Integer(expires_ms)) => {
            Some(UpstreamConversation {
                agent_id: agent_id.to_owned(),
                conversation_id: std::str::from_utf8(conversation_id).ok()?.to_owned(),
                expires_ms: u64::try_from(expires_ms).ok()?,
                pending,
            })
        }
        _ => None,
    }
}

/// Saves or refreshes the conversation, if the episode exists and is the principal's: one
/// statement (an upsert that selects nothing for another's episode), so the check and the
/// write cannot be split by another writer.
pub(crate) fn save(
    conn: &Connection,
    principal: &Principal,
    episode_id: &str,
    conversation: &UpstreamConversation,
) -> Result<(), StoreError> {
    let written = conn
        .execute(
            "INSERT INTO upstream_conversations
                 (episode_id, agent_id, conversation_id, expires_ms, pending)
             SELECT episode_id, ?2, ?3, ?4, ?6 FROM episodes WHERE episode_id = ?1 AND owner = ?5
             ON CONFLICT (episode_id, agent_id) DO UPDATE
                 SET conversation_id = excluded.conversation_id,
                     expires_ms = excluded.expires_ms,
                     pending = excluded.pending",
            params![
                episode_id,
                conversation.agent_id,
                conversation.conversation_id,
                int(conversation.expires_ms),
                principal.as_str(),
                conversation.pending,
            ],
        )
        .map_err(|e| error::sql("saving an upstream conversation", e))?;
    if written == 0 {
        return Err(StoreError::NotFound);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_text_and_a_non_negative_integer_decode() {
        let ok = decode(
            "support",
            ValueRef::Text(b"c-1"),
            ValueRef::Integer(5),
            ValueRef::Null,
        );
        assert_eq!(
            ok.map(|c| (c.agent_id, c.conversation_id, c.expires_ms, c.pending)),
            Some(("support".into(), "c-1".into(), 5, None))
        );
        let waiting = decode(
            "support",
            ValueRef::Text(b"c-1"),
            ValueRef::Integer(5),
            ValueRef::Text(b"task-1"),
        );
        assert_eq!(waiting.and_then(|c| c.pending), Some("task-1".into()));
        for pending in [ValueRef::Integer(1), ValueRef::Text(b"\xff")] {
            let bad = decode(
                "support",
                ValueRef::Text(b"c-1"),
                ValueRef::Integer(5),
                pending,
            );
            assert_eq!(bad, None, "{pending:?}");
        }
        for (id, expires) in [
            (ValueRef::Text(b"c-1"), ValueRef::Integer(-1)),
            (ValueRef::Text(b"c-1"), ValueRef::Text(b"soon")),
            (ValueRef::Text(b"c-1"), ValueRef::Real(5.0)),
            (ValueRef::Text(b"\xff"), ValueRef::Integer(5)),
            (ValueRef::Blob(b"c-1"), ValueRef::Integer(5)),
            (ValueRef::Integer(7), ValueRef::Integer(5)),
            (ValueRef::Null, ValueRef::Null),
        ] {
            assert_eq!(
                decode("support", id, expires, ValueRef::Null),
                None,
                "{id:?} {expires:?}"
            );
        }
    }
}

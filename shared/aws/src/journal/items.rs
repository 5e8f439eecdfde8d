//! Items as DynamoDB attribute maps: reading fields, decoding META and TURN items, and
//! estimating item sizes against DynamoDB's limits.

use aws_sdk_dynamodb::types::AttributeValue;
use baton_core::Principal;
use baton_core::ports::store::{EpisodeMeta, StoreError};
use baton_core::turn::{EpisodeState, TurnRecord};

use super::error;
use super::keys;

/// One item as the SDK gives it.
pub(crate) use crate::attributes::{Item, n, s, string};

/// A number attribute that must be a non-negative integer, if present.
///
/// # Errors
/// `Corrupt` when present but not such a number.
pub(crate) fn number(item: &Item, name: &str) -> Result<Option<u64>, StoreError> {
    crate::attributes::number(item, name, &error::FAULTS)
}

/// A required number attribute.
pub(crate) fn required_number(item: &Item, name: &str) -> Result<u64, StoreError> {
    number(item, name)?.ok_or_else(|| error::undecodable(name, &"missing"))
}

/// A required string attribute.
pub(crate) fn required_string<'a>(item: &'a Item, name: &str) -> Result<&'a str, StoreError> {
    string(item, name).ok_or_else(|| error::undecodable(name, &"missing or not a string"))
}

/// Whether the item belongs to `principal` (its `owner` attribute).
pub(crate) fn owned_by(item: &Item, principal: &Principal) -> bool {
    string(item, keys::OWNER) == Some(principal.as_str())
}

/// Decodes a META item owned by `principal`; another's (or a missing one) is "not found".
pub(crate) fn episode_meta(
    item: Option<&Item>,
    principal: &Principal,
    episode_id: &str,
) -> Result<EpisodeMeta, StoreError> {
    let Some(item) = item.filter(|i| owned_by(i, principal)) else {
        return Err(StoreError::NotFound);
    };
    // A state kept in S3 is read by `read::episode_meta`; the checks that need only the
    // owner and version take it as empty.
    let state: EpisodeState = match string(item, keys::STATE) {
        None if string(item, keys::STATE_S3_KEY).is_some() => EpisodeState::default(),
        text => serde_json::from_str(text.unwrap_or_default())
            .map_err(|e| error::undecodable("an episode state", &e))?,
    };
    Ok(EpisodeMeta {
        episode_id: episode_id.to_owned(),
        owner: principal.clone(),
        version: required_number(item, keys::VERSION)?,
        created_ms: required_number(item, keys::CREATED_MS)?,
        updated_ms: required_number(item, keys::UPDATED_MS)?,
        summary: string(item, keys::SUMMARY)
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| error::undecodable("an episode summary", &e))?,
        state,
    })
}

/// Decodes a TURN item's record.
pub(crate) fn turn_record(item: &Item) -> Result<TurnRecord, StoreError> {
    serde_json::from_str(required_string(item, keys::RECORD)?)
        .map_err(|e| error::undecodable("a turn record", &e))
}

/// Compact JSON of a value the journal writes.
pub(crate) fn encode<T: serde::Serialize>(value: &T, what: &str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| {
        tracing::warn!(error = %e, what, "journal: value does not serialize");
        StoreError::Unavailable("the turn could not be saved".into())
    })
}

/// DynamoDB's size of one item, estimated from above: attribute names and string values
/// count their UTF-8 bytes; a number counts its largest possible size (21 bytes).
pub(crate) fn size(item: &Item) -> usize {
    item.iter()
        .map(|(name, value)| name.len() + value_size(value))
        .sum()
}

fn value_size(value: &AttributeValue) -> usize {
    const NUMBER: usize = 21;
    match value {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(_) => NUMBER,
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::Ss(v) => v.iter().map(String::len).sum(),
        AttributeValue::Ns(v) => v.len() * NUMBER,
        AttributeValue::Bs(v) => v.iter().map(|b| b.as_ref().len()).sum(),
        AttributeValue::L(v) => 3 + v.iter().map(|x| 1 + value_size(x)).sum::<usize>(),
        AttributeValue::M(m) => {
            3 + m
                .iter()
                .map(|(k, x)| 1 + k.len() + value_size(x))
                .sum::<usize>()
        }
        // Unknown future types: count them as large rather than free.
        _ => 1_024,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_core::memory::EpisodeSummary;

    fn principal(id: &str) -> Principal {
        Principal::new(id).unwrap()
    }

    fn meta_item(owner: &str) -> Item {
        Item::from([
            (keys::OWNER.into(), s(owner)),
            (keys::VERSION.into(), n(3)),
            (keys::CREATED_MS.into(), n(10)),
            (keys::UPDATED_MS.into(), n(20)),
            (keys::STATE.into(), s("{}")),
        ])
    }

    #[test]
    fn meta_decodes_for_its_owner_only() {
        let item = meta_item("alice");
        let meta = episode_meta(Some(&item), &principal("alice"), "ep-1").unwrap();
        assert_eq!(meta.version, 3);
        assert_eq!(meta.updated_ms, 20);
        assert_eq!(meta.summary, None);
        assert_eq!(
            episode_meta(Some(&item), &principal("bob"), "ep-1"),
            Err(StoreError::NotFound)
        );
        assert_eq!(
            episode_meta(None, &principal("alice"), "ep-1"),
            Err(StoreError::NotFound)
        );
    }

    #[test]
    fn a_summary_is_read_from_its_json() {
        let summary = EpisodeSummary {
            upto_seq: 2,
            text: "Points and a declined card.".into(),
            agents: [("rewards".to_owned(), "12,400 points.".to_owned())].into(),
        };
        let mut item = meta_item("alice");
        item.insert(
            keys::SUMMARY.into(),
            s(serde_json::to_string(&summary).unwrap()),
        );
        let meta = episode_meta(Some(&item), &principal("alice"), "ep-1").unwrap();
        assert_eq!(meta.summary, Some(summary));
        item.insert(keys::SUMMARY.into(), s("not json"));
        assert!(matches!(
            episode_meta(Some(&item), &principal("alice"), "ep-1"),
            Err(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn damaged_meta_is_corrupt_not_a_panic() {
        let mut item = meta_item("alice");
        item.insert(keys::VERSION.into(), s("three"));
        assert!(matches!(
            episode_meta(Some(&item), &principal("alice"), "ep-1"),
            Err(StoreError::Corrupt(_))
        ));
        let mut item = meta_item("alice");
        item.insert(keys::VERSION.into(), AttributeValue::N("-1".into()));
        assert!(matches!(
            episode_meta(Some(&item), &principal("alice"), "ep-1"),
            Err(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn size_counts_names_and_utf8_bytes() {
        let item: Item = Item::from([("json".into(), s("é".repeat(10)))]);
        assert_eq!(size(&item), 4 + 20);
    }
}

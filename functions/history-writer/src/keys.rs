//! Keys of the items the history writer writes (table contract D-24).

/// `EP#<episode_id>`.
pub(crate) fn episode_pk(episode_id: &str) -> String {
    format!("EP#{episode_id}")
}

/// Sort key of an episode's META item.
pub(crate) const META_SK: &str = "META";

/// Sort key of an episode's aggregates.
pub(crate) const AGG_SK: &str = "AGG";

/// Prefix of the audit items' sort keys.
pub(crate) const AUDIT_PREFIX: &str = "AUDIT#";

/// `AUDIT#<seq, 10 digits>#<agent_id>`: one per sub-agent execution, in turn order.
pub(crate) fn audit_sk(seq: u64, agent_id: &str) -> String {
    format!("{AUDIT_PREFIX}{seq:010}#{agent_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_keys_sort_by_turn() {
        assert_eq!(audit_sk(7, "billing"), "AUDIT#0000000007#billing");
        assert!(audit_sk(9, "z") < audit_sk(10, "a"));
    }
}

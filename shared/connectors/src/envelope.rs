//! The envelope header every connector is configured with, and how an envelope is built.

use baton_core::ports::connector::{CacheMeta, Envelope, EnvelopeStatus, FailedSource, major_of};
use serde::Deserialize;

/// Who produced a payload and in which schema: the fixed part of an envelope (D-28).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EnvelopeMeta {
    pub(crate) domain_type: String,
    pub(crate) enricher_id: String,
    pub(crate) version: String,
}

impl EnvelopeMeta {
    /// Checks that every field is set and the version has a major number.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.domain_type.trim().is_empty() {
            return Err("domain_type is empty".to_owned());
        }
        if self.enricher_id.trim().is_empty() {
            return Err("enricher_id is empty".to_owned());
        }
        if major_of(&self.version).is_none() {
            return Err(format!(
                "version {:?} is not a MAJOR.MINOR.PATCH version",
                self.version
            ));
        }
        Ok(())
    }

    /// An envelope carrying `payload` for `principal`.
    pub(crate) fn envelope(
        &self,
        status: EnvelopeStatus,
        payload: serde_json::Value,
        partial: Vec<FailedSource>,
        principal: &str,
    ) -> Envelope {
        Envelope {
            status,
            payload,
            partial,
            principal: principal.to_owned(),
            version: self.version.clone(),
            domain_type: self.domain_type.clone(),
            enricher_id: self.enricher_id.clone(),
            cache_meta: CacheMeta::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(version: &str) -> EnvelopeMeta {
        EnvelopeMeta {
            domain_type: "offers".into(),
            enricher_id: "demo".into(),
            version: version.into(),
        }
    }

    #[test]
    fn a_version_without_a_major_number_is_refused() {
        assert!(meta("1.2.0").check().is_ok());
        assert!(meta("v2").check().is_ok());
        let err = meta("latest").check().unwrap_err();
        assert!(err.contains("latest"), "{err}");
    }

    #[test]
    fn the_envelope_carries_the_given_principal_and_header() {
        let e = meta("1.0.0").envelope(
            EnvelopeStatus::Ok,
            serde_json::json!({"a": 1}),
            Vec::new(),
            "user-1",
        );
        assert_eq!(e.principal, "user-1");
        assert_eq!(e.domain_type, "offers");
        assert_eq!(e.major_version(), Some(1));
    }
}

//! What the privacy guard masks and how (configured on the orchestrator card), and the
//! receipt of what it masked.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A kind of personal data the guard recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PiiKind {
    /// An e-mail address.
    Email,
    /// A telephone number.
    Phone,
    /// A payment card number (Luhn-checked).
    CardNumber,
    /// An IBAN (mod-97-checked).
    Iban,
    /// A national identification number.
    NationalId,
}

impl PiiKind {
    /// Every kind, in a fixed order.
    pub const ALL: [PiiKind; 5] = [
        PiiKind::Email,
        PiiKind::Phone,
        PiiKind::CardNumber,
        PiiKind::Iban,
        PiiKind::NationalId,
    ];

    /// The wire name (as serialized).
    pub fn as_str(self) -> &'static str {
        match self {
            PiiKind::Email => "email",
            PiiKind::Phone => "phone",
            PiiKind::CardNumber => "card_number",
            PiiKind::Iban => "iban",
            PiiKind::NationalId => "national_id",
        }
    }
}

/// How a recognised value is replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaskStyle {
    /// The kind in brackets: `[email]`, `[card number]`.
    #[default]
    Label,
    /// Every character of the value becomes `*`.
    Stars,
    /// Stars, keeping the last four characters of the value (`************1111`).
    LastFour,
}

/// The guard's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivacyPolicy {
    /// Kinds to mask (default: all).
    #[serde(default = "all_kinds")]
    pub kinds: Vec<PiiKind>,
    /// Mask style (default: `label`).
    #[serde(default)]
    pub mask: MaskStyle,
}

fn all_kinds() -> Vec<PiiKind> {
    PiiKind::ALL.to_vec()
}

impl Default for PrivacyPolicy {
    fn default() -> Self {
        PrivacyPolicy {
            kinds: all_kinds(),
            mask: MaskStyle::default(),
        }
    }
}

/// What the guard masked in one turn: counts by kind (kinds never seen are absent).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PrivacyReceipt {
    /// Values masked, all kinds.
    pub total: u32,
    /// Values masked by kind.
    pub by_kind: BTreeMap<PiiKind, u32>,
    /// Hidden data removed from the turn's pictures (D-42): how many pictures carried
    /// each kind.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pictures: BTreeMap<crate::picture::HiddenData, u32>,
}

impl PrivacyReceipt {
    /// Counts one masked value.
    pub fn add(&mut self, kind: PiiKind) {
        self.total += 1;
        *self.by_kind.entry(kind).or_insert(0) += 1;
    }
}

//! The privacy guard over any text split anywhere: streaming it in pieces masks exactly as
//! masking it whole does, and holds back no more than the guard's longest token.

use std::sync::Arc;

use baton_core::privacy::{PrivacyGuard, PrivacyPolicy, PrivacyReceipt, StreamMasker};

/// One input: the text, then where to cut it.
pub fn run(data: &[u8]) {
    let Some((text, cuts)) = crate::common::input::<(String, Vec<u16>)>(data) else {
        return;
    };
    let guard = Arc::new(PrivacyGuard::new(&PrivacyPolicy::default()));
    let mut whole_receipt = PrivacyReceipt::default();
    let whole = guard.mask(&text, &mut whole_receipt);

    // Cut at the given places, moved back to character boundaries.
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| {
            let mut at = usize::from(*c) % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            at
        })
        .collect();
    points.sort_unstable();
    points.dedup();
    let mut masker = StreamMasker::new(guard.clone());
    let mut receipt = PrivacyReceipt::default();
    let mut streamed = String::new();
    let mut from = 0;
    for at in points.into_iter().chain(std::iter::once(text.len())) {
        streamed.push_str(&masker.push(&text[from..at], &mut receipt));
        assert!(masker.held() <= guard.max_token_len());
        from = at;
    }
    streamed.push_str(&masker.finish(&mut receipt));
    assert_eq!(streamed, whole);
    assert_eq!(receipt.total, whole_receipt.total);
}

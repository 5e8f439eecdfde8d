//! Any bytes as a picture sent with a turn: taken or refused with a reason, never a panic;
//! a picture taken decodes, and taking it again changes nothing (nothing hidden is left to
//! remove, and the bytes stay the same).

use baton_core::picture::{PictureLimits, take};

/// One input: the bytes as a picture, within limits small enough to fuzz quickly.
pub fn run(data: &[u8]) {
    let limits = PictureLimits {
        max_pixels: 1_000_000,
        max_side: 4_000,
        ..PictureLimits::default()
    };
    let Ok(picture) = take(data, &limits) else {
        return;
    };
    crate::common::show(&picture);
    let again = take(&picture.bytes, &limits);
    assert!(again.is_ok(), "a taken picture is refused: {again:?}");
    if let Ok(again) = again {
        assert!(again.removed.is_empty(), "left hidden: {:?}", again.removed);
        assert_eq!(again.bytes, picture.bytes);
        assert_eq!(again.media_type, picture.media_type);
        assert_eq!((again.width, again.height), (picture.width, picture.height));
    }
}

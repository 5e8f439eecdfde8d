//! The checks before and after a picture's hidden data is removed: its type from its
//! bytes, its size from its header, and that what is kept decodes.

use std::io::Cursor;

use image::{ImageFormat, ImageReader, Limits};

use super::{MediaType, PictureError, PictureLimits};

/// The type the bytes themselves say (their signature), among those a turn takes.
pub(super) fn sniff(bytes: &[u8]) -> Option<MediaType> {
    match image::guess_format(bytes).ok()? {
        ImageFormat::Jpeg => Some(MediaType::Jpeg),
        ImageFormat::Png => Some(MediaType::Png),
        ImageFormat::WebP => Some(MediaType::Webp),
        ImageFormat::Gif => Some(MediaType::Gif),
        _ => None,
    }
}

fn format(media_type: MediaType) -> ImageFormat {
    match media_type {
        MediaType::Jpeg => ImageFormat::Jpeg,
        MediaType::Png => ImageFormat::Png,
        MediaType::Webp => ImageFormat::WebP,
        MediaType::Gif => ImageFormat::Gif,
    }
}

/// Width and height from the header alone: nothing is decoded yet.
pub(super) fn dimensions(bytes: &[u8], media_type: MediaType) -> Result<(u32, u32), PictureError> {
    ImageReader::with_format(Cursor::new(bytes), format(media_type))
        .into_dimensions()
        .map_err(|e| PictureError::Damaged(plain(&e)))
}

/// Refuses a picture over the pixel limits.
pub(super) fn within(width: u32, height: u32, limits: &PictureLimits) -> Result<(), PictureError> {
    let pixels = u64::from(width) * u64::from(height);
    if pixels > limits.max_pixels || width.max(height) > limits.max_side || pixels == 0 {
        return Err(PictureError::TooManyPixels {
            width,
            height,
            limit_pixels: limits.max_pixels,
            limit_side: limits.max_side,
        });
    }
    Ok(())
}

/// Decodes the picture (its first frame) within the limits: a cut-short or damaged picture
/// is refused here, and no decoder may allocate more than the pixels allowed need.
pub(super) fn decodes(
    bytes: &[u8],
    media_type: MediaType,
    limits: &PictureLimits,
) -> Result<(), PictureError> {
    decode(bytes, media_type, limits).map(|_| ())
}

/// The first frame, decoded within the limits.
pub(super) fn decode(
    bytes: &[u8],
    media_type: MediaType,
    limits: &PictureLimits,
) -> Result<image::DynamicImage, PictureError> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format(media_type));
    reader.limits(decode_limits(limits));
    reader
        .decode()
        .map_err(|e| PictureError::Damaged(plain(&e)))
}

fn decode_limits(limits: &PictureLimits) -> Limits {
    let mut l = Limits::default();
    l.max_image_width = Some(limits.max_side);
    l.max_image_height = Some(limits.max_side);
    // Four bytes a pixel (RGBA, the widest a taken format decodes to), and as much again
    // for the decoder's own buffers.
    l.max_alloc = Some(limits.max_pixels.saturating_mul(8));
    l
}

/// A decoder's error without its debug detail.
fn plain(e: &image::ImageError) -> String {
    match e {
        image::ImageError::Limits(_) => {
            "it needs more memory to decode than its size allows".into()
        }
        image::ImageError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            "it ends before the picture does".into()
        }
        other => other.to_string(),
    }
}

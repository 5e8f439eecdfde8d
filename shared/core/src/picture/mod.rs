//! Pictures sent with a turn (D-42): taken only once their own bytes say what they are and
//! that they fit the limits, and only with their hidden data removed.
//!
//! `take` is the one way in. It reads the type from the bytes (never a name or a declared
//! type), refuses one too large in bytes or pixels from its header alone (a decompression
//! bomb is never decoded), removes what a picture carries besides its pixels (EXIF with
//! its GPS position, device and owner, XMP, IPTC, comments, text, data after the image's
//! end), checks what is left decodes within the limits, and says what it removed. A JPEG,
//! PNG or still WebP keeps its encoded pixels byte for byte; a GIF or an animated picture
//! becomes its first frame as a PNG.

mod check;
mod exif;
mod jpeg;
mod strip;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use img_parts::Bytes;

/// The formats a turn takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MediaType {
    /// JPEG.
    #[serde(rename = "image/jpeg")]
    Jpeg,
    /// PNG.
    #[serde(rename = "image/png")]
    Png,
    /// WebP.
    #[serde(rename = "image/webp")]
    Webp,
    /// GIF (taken as its first frame, a PNG).
    #[serde(rename = "image/gif")]
    Gif,
}

impl MediaType {
    /// The IANA media type.
    pub fn as_str(self) -> &'static str {
        match self {
            MediaType::Jpeg => "image/jpeg",
            MediaType::Png => "image/png",
            MediaType::Webp => "image/webp",
            MediaType::Gif => "image/gif",
        }
    }

    /// The media type a client names, in any case, with or without parameters.
    pub fn parse(declared: &str) -> Option<MediaType> {
        let base = declared.split(';').next().unwrap_or("").trim();
        [
            MediaType::Jpeg,
            MediaType::Png,
            MediaType::Webp,
            MediaType::Gif,
        ]
        .into_iter()
        .find(|m| {
            m.as_str().eq_ignore_ascii_case(base)
                || (base.eq_ignore_ascii_case("image/jpg") && *m == MediaType::Jpeg)
        })
    }
}

impl fmt::Display for MediaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a turn's pictures may be. The defaults suit phone photos: a 12- or 24-megapixel
/// JPEG of a few megabytes fits, with room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PictureLimits {
    /// Pictures in one turn.
    pub max_pictures: usize,
    /// Bytes of one picture as sent.
    pub max_bytes: usize,
    /// Pixels of one picture (width × height), read from its header before it is decoded.
    pub max_pixels: u64,
    /// Its longer side, in pixels.
    pub max_side: u32,
    /// Bytes of all of a turn's pictures together, as sent (what a request body must
    /// make room for).
    pub max_total_bytes: usize,
}

impl Default for PictureLimits {
    fn default() -> Self {
        PictureLimits {
            max_pictures: 4,
            max_bytes: 10 * 1024 * 1024,
            max_pixels: 25_000_000,
            max_side: 10_000,
            max_total_bytes: 16 * 1024 * 1024,
        }
    }
}

/// A kind of hidden data a picture carried, as the privacy receipt names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HiddenData {
    /// Where it was taken (EXIF GPS tags).
    Location,
    /// The camera or phone: make, model, lens, serial number, software.
    Device,
    /// Whose it is: artist, owner name, copyright.
    Owner,
    /// When it was taken.
    TakenAt,
    /// Other EXIF: exposure, thumbnails, maker notes.
    CameraData,
    /// An XMP packet (editing history, often a copy of the EXIF).
    Xmp,
    /// IPTC or Photoshop data (captions, keywords, names).
    Iptc,
    /// Comments and text chunks.
    Comment,
    /// Data after the picture's end or other pictures inside it (motion-photo video, depth
    /// maps, previews).
    Appended,
    /// Frames after the first of an animation.
    Frames,
    /// Other segments or chunks the picture does not need to be shown.
    Other,
}

impl HiddenData {
    /// In words, for the privacy receipt and the console.
    pub fn in_words(self) -> &'static str {
        match self {
            HiddenData::Location => "location (GPS)",
            HiddenData::Device => "camera or phone model",
            HiddenData::Owner => "owner's name",
            HiddenData::TakenAt => "time taken",
            HiddenData::CameraData => "camera data",
            HiddenData::Xmp => "XMP metadata",
            HiddenData::Iptc => "IPTC metadata",
            HiddenData::Comment => "comments",
            HiddenData::Appended => "data appended to the picture",
            HiddenData::Frames => "animation frames after the first",
            HiddenData::Other => "other metadata",
        }
    }
}

/// A picture as a turn keeps it: its bytes with the hidden data removed, what they are,
/// and what was removed.
#[derive(Clone, PartialEq, Eq)]
pub struct Picture {
    /// What `bytes` are (a GIF or an animation is a PNG by now).
    pub media_type: MediaType,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// SHA-256 of `bytes`, lower-case hex: the picture's name in the bodies store.
    pub sha256: String,
    /// The picture, hidden data removed.
    pub bytes: Bytes,
    /// What was removed, each kind once.
    pub removed: Vec<HiddenData>,
}

impl fmt::Debug for Picture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Picture")
            .field("media_type", &self.media_type)
            .field("width", &self.width)
            .field("height", &self.height)
            .field("sha256", &self.sha256)
            .field("bytes", &self.bytes.len())
            .field("removed", &self.removed)
            .finish()
    }
}

impl Picture {
    /// What the record keeps in place of the bytes.
    pub fn reference(&self) -> PictureRef {
        PictureRef {
            media_type: self.media_type,
            width: self.width,
            height: self.height,
            sha256: self.sha256.clone(),
            bytes: self.bytes.len() as u64,
        }
    }
}

/// A picture as the turn record names it: the bytes live in the bodies store under
/// `sha256`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PictureRef {
    /// What the stored bytes are.
    pub media_type: MediaType,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// SHA-256 of the stored bytes, lower-case hex.
    pub sha256: String,
    /// Their length.
    pub bytes: u64,
}

impl PictureRef {
    /// About how many input tokens a vision model counts for it: a picture is scaled to
    /// fit about 1.15 megapixels and costs a token per 750 pixels (Anthropic's published
    /// rule, close to the others').
    pub fn tokens(&self) -> u64 {
        let pixels = u64::from(self.width) * u64::from(self.height);
        pixels.min(1_150_000).div_ceil(750)
    }
}

/// Why a picture was refused, in words a user can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PictureError {
    /// More pictures than a turn takes.
    #[error("a turn takes at most {limit} pictures; this one has {count}")]
    TooMany {
        /// Pictures sent.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// More bytes than a picture may have.
    #[error("the picture is {bytes} bytes; the limit is {limit} bytes")]
    TooLarge {
        /// Its bytes.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// More pixels than a picture may have.
    #[error(
        "the picture is {width}×{height} pixels; the limit is {limit_pixels} pixels and {limit_side} on a side"
    )]
    TooManyPixels {
        /// Its width, from its header.
        width: u32,
        /// Its height, from its header.
        height: u32,
        /// The limit on pixels.
        limit_pixels: u64,
        /// The limit on a side.
        limit_side: u32,
    },
    /// More bytes in all of a turn's pictures than a turn takes.
    #[error("the pictures are {bytes} bytes together; the limit is {limit} bytes")]
    TooLargeTogether {
        /// Their bytes.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// No bytes.
    #[error("the picture is empty")]
    Empty,
    /// Bytes in no format taken.
    #[error("this is not a picture Baton takes: send a JPEG, PNG, WebP or GIF")]
    NotAPicture,
    /// A picture that does not decode.
    #[error("the picture is damaged or cut short: {0}")]
    Damaged(String),
    /// A declared type that is not one of the formats taken.
    #[error("{0:?} is not a type Baton takes: send a JPEG, PNG, WebP or GIF")]
    TypeNotTaken(String),
    /// A declared type its bytes contradict.
    #[error("it is declared as {declared} but its bytes are {actual}")]
    NotWhatItSays {
        /// The type the client named.
        declared: MediaType,
        /// The type the bytes are.
        actual: MediaType,
    },
}

/// Takes one picture: checks it, removes its hidden data and names it (see the module).
///
/// # Errors
/// A picture over a limit, in no format taken, or that does not decode.
pub fn take(bytes: &[u8], limits: &PictureLimits) -> Result<Picture, PictureError> {
    if bytes.is_empty() {
        return Err(PictureError::Empty);
    }
    if bytes.len() > limits.max_bytes {
        return Err(PictureError::TooLarge {
            bytes: bytes.len(),
            limit: limits.max_bytes,
        });
    }
    let media_type = check::sniff(bytes).ok_or(PictureError::NotAPicture)?;
    let (width, height) = check::dimensions(bytes, media_type)?;
    check::within(width, height, limits)?;
    let stripped = strip::strip(Bytes::copy_from_slice(bytes), media_type, limits)?;
    // The size is what the kept bytes say: a WebP's extended header, removed with its
    // metadata, may name another canvas than its image (found by fuzzing).
    let (width, height) = check::dimensions(&stripped.bytes, stripped.media_type)?;
    check::within(width, height, limits)?;
    check::decodes(&stripped.bytes, stripped.media_type, limits)?;
    let sha256 = sha256_hex(&stripped.bytes);
    Ok(Picture {
        media_type: stripped.media_type,
        width,
        height,
        sha256,
        bytes: stripped.bytes,
        removed: stripped.removed,
    })
}

/// The SHA-256 of `bytes` in lower-case hex: a picture's name.
pub fn sha256_hex(bytes: &[u8]) -> String {
    crate::principal::hex_onto(String::with_capacity(64), &Sha256::digest(bytes))
}

/// Checks the type a client declared for a picture against its bytes, which alone decide
/// what it is: a client that says PNG and sends a JPEG is told so rather than believed or
/// silently corrected. `application/octet-stream` declares nothing. Bytes in no format
/// taken are left for [`take`] to refuse.
///
/// # Errors
/// A declared type not taken, or one the bytes contradict.
pub fn check_declared(bytes: &[u8], declared: &str) -> Result<(), PictureError> {
    let base = declared.split(';').next().unwrap_or("").trim();
    if base.is_empty() || base.eq_ignore_ascii_case("application/octet-stream") {
        return Ok(());
    }
    let declared = MediaType::parse(base).ok_or_else(|| PictureError::TypeNotTaken(base.into()))?;
    match check::sniff(bytes) {
        Some(actual) if actual != declared => Err(PictureError::NotWhatItSays { declared, actual }),
        _ => Ok(()),
    }
}

/// Whether a turn's pictures, as sent, are within the limits on their number and their
/// bytes together (each is checked on its own by [`take`]).
///
/// # Errors
/// Too many pictures, or too many bytes together.
pub fn within_turn(sizes: &[usize], limits: &PictureLimits) -> Result<(), PictureError> {
    if sizes.len() > limits.max_pictures {
        return Err(PictureError::TooMany {
            count: sizes.len(),
            limit: limits.max_pictures,
        });
    }
    let bytes = sizes.iter().sum::<usize>();
    if bytes > limits.max_total_bytes {
        return Err(PictureError::TooLargeTogether {
            bytes,
            limit: limits.max_total_bytes,
        });
    }
    Ok(())
}

/// What the pictures of a turn had removed, counted by kind (for the privacy receipt).
pub fn removed_by_kind(pictures: &[Picture]) -> BTreeMap<HiddenData, u32> {
    let mut by_kind = BTreeMap::new();
    for kind in pictures.iter().flat_map(|p| p.removed.iter()) {
        *by_kind.entry(*kind).or_insert(0) += 1;
    }
    by_kind
}

//! Removing what a picture carries besides its pixels, format by format.

use img_parts::png::Png;
use img_parts::webp::{
    CHUNK_ALPH, CHUNK_ANIM, CHUNK_ANMF, CHUNK_EXIF, CHUNK_ICCP, CHUNK_VP8, CHUNK_VP8L, CHUNK_VP8X,
    CHUNK_XMP, WebP,
};
use img_parts::{Bytes, ImageEXIF};

use super::{HiddenData, MediaType, PictureError, PictureLimits, check, exif, jpeg};

/// A picture with its hidden data removed.
pub(super) struct Stripped {
    pub(super) media_type: MediaType,
    pub(super) bytes: Bytes,
    pub(super) removed: Vec<HiddenData>,
}

pub(super) fn strip(
    bytes: Bytes,
    media_type: MediaType,
    limits: &PictureLimits,
) -> Result<Stripped, PictureError> {
    match media_type {
        MediaType::Jpeg => strip_jpeg(&bytes),
        MediaType::Png => strip_png(bytes),
        MediaType::Webp => strip_webp(bytes, limits),
        MediaType::Gif => first_frame(&bytes, MediaType::Gif, limits, Vec::new()),
    }
}

fn strip_jpeg(bytes: &[u8]) -> Result<Stripped, PictureError> {
    let walked = jpeg::walk(bytes).map_err(PictureError::Damaged)?;
    let mut removed = walked.removed;
    let mut out = walked.bytes;
    if let Some(raw) = walked.exif {
        let (kinds, orientation) = exif::read(&raw);
        removed.retain(|k| *k != HiddenData::CameraData);
        add(&mut removed, kinds);
        if let Some(tiff) = orientation {
            insert_jpeg_exif(&mut out, &tiff);
        }
    }
    Ok(Stripped {
        media_type: MediaType::Jpeg,
        bytes: Bytes::from(out),
        removed,
    })
}

/// Puts an EXIF segment holding `tiff` after the JFIF header (or the start).
fn insert_jpeg_exif(jpeg: &mut Vec<u8>, tiff: &[u8]) {
    let Ok(len) = u16::try_from(tiff.len() + 8) else {
        return;
    };
    let mut at = 2;
    if jpeg.get(2..4) == Some(&[0xFF, 0xE0])
        && let Some(l) = jpeg.get(4..6)
    {
        at = 4 + usize::from(u16::from_be_bytes([l[0], l[1]]));
    }
    let mut segment = vec![0xFF, 0xE1];
    segment.extend_from_slice(&len.to_be_bytes());
    segment.extend_from_slice(b"Exif\0\0");
    segment.extend_from_slice(tiff);
    jpeg.splice(at..at, segment);
}

/// The chunks a PNG needs to be shown as its creator meant (pixels, palette,
/// transparency, colour and pixel size); the rest is left out.
const PNG_KEPT: [&[u8; 4]; 11] = [
    b"IHDR", b"PLTE", b"IDAT", b"IEND", b"tRNS", b"gAMA", b"cHRM", b"sRGB", b"iCCP", b"sBIT",
    b"pHYs",
];

fn strip_png(bytes: Bytes) -> Result<Stripped, PictureError> {
    let mut png = Png::from_bytes(bytes).map_err(|e| PictureError::Damaged(e.to_string()))?;
    let mut removed = Vec::new();
    let mut orientation = None;
    if let Some(raw) = png.exif() {
        let (kinds, kept) = exif::read(&raw);
        add(&mut removed, kinds);
        orientation = kept;
    }
    png.chunks_mut().retain(|chunk| {
        let kind = chunk.kind();
        if PNG_KEPT.contains(&&kind) {
            return true;
        }
        let what = match &kind {
            b"eXIf" => None, // named from its contents above
            b"iTXt" if chunk.contents().starts_with(b"XML:com.adobe.xmp") => Some(HiddenData::Xmp),
            b"tEXt" | b"zTXt" | b"iTXt" => Some(HiddenData::Comment),
            b"tIME" => Some(HiddenData::TakenAt),
            b"acTL" | b"fcTL" | b"fdAT" => Some(HiddenData::Frames),
            _ => Some(HiddenData::Other),
        };
        if let Some(what) = what {
            add(&mut removed, [what]);
        }
        false
    });
    if let Some(tiff) = orientation {
        png.set_exif(Some(Bytes::from(tiff)));
    }
    Ok(Stripped {
        media_type: MediaType::Png,
        bytes: png.encoder().bytes(),
        removed,
    })
}

fn strip_webp(bytes: Bytes, limits: &PictureLimits) -> Result<Stripped, PictureError> {
    let mut webp =
        WebP::from_bytes(bytes.clone()).map_err(|e| PictureError::Damaged(e.to_string()))?;
    let mut removed = Vec::new();
    let mut orientation = None;
    if let Some(raw) = webp.exif() {
        let (kinds, kept) = exif::read(&raw);
        add(&mut removed, kinds);
        orientation = kept;
    }
    if webp.has_chunk(CHUNK_ANIM) || webp.has_chunk(CHUNK_ANMF) {
        removed.push(HiddenData::Frames);
        return first_frame(&bytes, MediaType::Webp, limits, removed);
    }
    webp.chunks_mut().retain(|chunk| {
        let id = chunk.id();
        if [CHUNK_VP8X, CHUNK_VP8, CHUNK_VP8L, CHUNK_ALPH, CHUNK_ICCP].contains(&id) {
            return true;
        }
        match id {
            CHUNK_EXIF => {}
            CHUNK_XMP => add(&mut removed, [HiddenData::Xmp]),
            _ => add(&mut removed, [HiddenData::Other]),
        }
        false
    });
    // Setting the EXIF also sets the extended header's flags to the chunks now present.
    webp.set_exif(orientation.map(Bytes::from));
    Ok(Stripped {
        media_type: MediaType::Webp,
        bytes: webp.encoder().bytes(),
        removed,
    })
}

/// An animation (or a GIF, whose extensions may carry anything) becomes its first frame,
/// encoded afresh as a PNG: nothing of the original but those pixels is left.
fn first_frame(
    bytes: &[u8],
    media_type: MediaType,
    limits: &PictureLimits,
    removed: Vec<HiddenData>,
) -> Result<Stripped, PictureError> {
    let frame = check::decode(bytes, media_type, limits)?;
    let mut out = std::io::Cursor::new(Vec::new());
    frame
        .write_to(&mut out, image::ImageFormat::Png)
        .map_err(|e| PictureError::Damaged(e.to_string()))?;
    Ok(Stripped {
        media_type: MediaType::Png,
        bytes: Bytes::from(out.into_inner()),
        removed,
    })
}

fn add(removed: &mut Vec<HiddenData>, kinds: impl IntoIterator<Item = HiddenData>) {
    for kind in kinds {
        if !removed.contains(&kind) {
            removed.push(kind);
        }
    }
}

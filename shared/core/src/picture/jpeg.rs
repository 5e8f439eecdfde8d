//! A JPEG rebuilt from the segments it needs to be shown: the frame, tables, scans and
//! their entropy-coded data, the JFIF header, the colour profile and Adobe's colour
//! transform. Everything else (APPn and COM segments wherever they stand, between scans
//! too, and whatever follows the end of the image) is left out and named.

use super::HiddenData;

const SOI: u8 = 0xD8;
const EOI: u8 = 0xD9;
const SOS: u8 = 0xDA;
const APP0: u8 = 0xE0;
const APP1: u8 = 0xE1;
const APP2: u8 = 0xE2;
const APP13: u8 = 0xED;
const APP14: u8 = 0xEE;
const COM: u8 = 0xFE;

/// What the walk kept and found.
pub(super) struct Walked {
    pub(super) bytes: Vec<u8>,
    pub(super) removed: Vec<HiddenData>,
    /// The EXIF (TIFF structure) it held, for `exif::read`.
    pub(super) exif: Option<Vec<u8>>,
}

/// Walks `data` segment by segment. `Err` says what is wrong: a JPEG cut short or
/// malformed is refused, not repaired.
pub(super) fn walk(data: &[u8]) -> Result<Walked, String> {
    if data.len() < 4 || data[0] != 0xFF || data[1] != SOI {
        return Err("it does not start as a JPEG does".into());
    }
    let mut out = Vec::with_capacity(data.len());
    out.extend_from_slice(&data[..2]);
    let mut removed = Vec::new();
    let mut exif = None;
    let mut at = 2;
    loop {
        let marker = next_marker(data, &mut at)?;
        match marker {
            EOI => {
                out.extend_from_slice(&[0xFF, EOI]);
                if data[at..].iter().any(|b| *b != 0) {
                    note(&mut removed, HiddenData::Appended);
                }
                return Ok(Walked {
                    bytes: out,
                    removed,
                    exif,
                });
            }
            // Markers without a length: restart markers out of place, TEM.
            0xD0..=0xD7 | 0x01 => continue,
            _ => {}
        }
        let len = data
            .get(at..at + 2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
            .ok_or("it ends inside a segment's header")?;
        if len < 2 {
            return Err("a segment's length is wrong".into());
        }
        let contents = data
            .get(at + 2..at + len)
            .ok_or("it ends inside a segment")?;
        let segment = &data[at - 2..at + len];
        at += len;
        match keep(marker, contents) {
            Ok(()) => out.extend_from_slice(segment),
            Err(kind) => {
                if marker == APP1 && contents.starts_with(b"Exif\0\0") && exif.is_none() {
                    exif = Some(contents[6..].to_vec());
                }
                note(&mut removed, kind);
            }
        }
        if marker == SOS {
            let end = entropy_end(data, at).ok_or("it ends inside the picture's data")?;
            out.extend_from_slice(&data[at..end]);
            at = end;
        }
    }
}

/// Whether a segment is kept, or what it was.
fn keep(marker: u8, contents: &[u8]) -> Result<(), HiddenData> {
    match marker {
        APP0 if contents.starts_with(b"JFIF\0") => Ok(()),
        APP2 if contents.starts_with(b"ICC_PROFILE\0") => Ok(()),
        APP14 if contents.starts_with(b"Adobe") => Ok(()),
        APP1 if contents.starts_with(b"Exif\0\0") => Err(HiddenData::CameraData),
        APP1 if contents.starts_with(b"http://ns.adobe.com/") => Err(HiddenData::Xmp),
        // Multi-picture format: the other pictures it points at are left out too.
        APP2 if contents.starts_with(b"MPF\0") => Err(HiddenData::Appended),
        APP13 => Err(HiddenData::Iptc),
        COM => Err(HiddenData::Comment),
        APP0..=0xEF => Err(HiddenData::Other),
        _ => Ok(()),
    }
}

/// The next marker from `at` (fill bytes skipped), leaving `at` after it.
fn next_marker(data: &[u8], at: &mut usize) -> Result<u8, String> {
    if data.get(*at) != Some(&0xFF) {
        return Err("a segment does not start where the one before it ends".into());
    }
    while data.get(*at) == Some(&0xFF) {
        *at += 1;
    }
    let marker = *data.get(*at).ok_or("it ends before the picture does")?;
    *at += 1;
    Ok(marker)
}

/// Where a scan's entropy-coded data ends: at the first marker that is not a stuffed byte
/// or a restart marker.
fn entropy_end(data: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i + 1 < data.len() {
        if data[i] == 0xFF {
            match data[i + 1] {
                0x00 | 0xD0..=0xD7 => i += 2,
                0xFF => i += 1,
                _ => return Some(i),
            }
        } else {
            i += 1;
        }
    }
    None
}

fn note(removed: &mut Vec<HiddenData>, kind: HiddenData) {
    if !removed.contains(&kind) {
        removed.push(kind);
    }
}

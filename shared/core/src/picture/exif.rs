//! What a picture's EXIF says about its owner, read before it is removed, and the one tag
//! kept: the orientation, without which a phone photo shows on its side.

use exif::{Field, In, Reader, Tag, Value};

use super::HiddenData;

/// The kinds of hidden data in `exif` (a TIFF structure, after any `Exif\0\0`), and a
/// minimal EXIF holding only its orientation when that is not the default.
pub(super) fn read(exif: &[u8]) -> (Vec<HiddenData>, Option<Vec<u8>>) {
    let Ok(parsed) = Reader::new().read_raw(exif.to_vec()) else {
        // Unreadable EXIF is removed all the same; what it held cannot be named.
        return (vec![HiddenData::CameraData], None);
    };
    let mut kinds = Vec::new();
    let mut orientation = None;
    for field in parsed.fields() {
        if field.tag == Tag::Orientation && field.ifd_num == In::PRIMARY {
            orientation = field.value.get_uint(0).filter(|o| (2..=8).contains(o));
            continue;
        }
        let kind = kind_of(field);
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    (kinds, orientation.and_then(only_orientation))
}

fn kind_of(field: &Field) -> HiddenData {
    if field.tag.context() == exif::Context::Gps {
        return HiddenData::Location;
    }
    match field.tag {
        Tag::Make
        | Tag::Model
        | Tag::LensMake
        | Tag::LensModel
        | Tag::LensSerialNumber
        | Tag::BodySerialNumber
        | Tag::Software => HiddenData::Device,
        Tag::Artist | Tag::CameraOwnerName | Tag::Copyright => HiddenData::Owner,
        Tag::DateTime
        | Tag::DateTimeOriginal
        | Tag::DateTimeDigitized
        | Tag::OffsetTime
        | Tag::OffsetTimeOriginal
        | Tag::OffsetTimeDigitized
        | Tag::SubSecTime
        | Tag::SubSecTimeOriginal
        | Tag::SubSecTimeDigitized => HiddenData::TakenAt,
        _ => HiddenData::CameraData,
    }
}

/// An EXIF (TIFF structure) with the orientation tag alone.
fn only_orientation(orientation: u32) -> Option<Vec<u8>> {
    let field = Field {
        tag: Tag::Orientation,
        ifd_num: In::PRIMARY,
        value: Value::Short(vec![u16::try_from(orientation).ok()?]),
    };
    let mut writer = exif::experimental::Writer::new();
    writer.push_field(&field);
    let mut out = std::io::Cursor::new(Vec::new());
    writer.write(&mut out, false).ok()?;
    Some(out.into_inner())
}

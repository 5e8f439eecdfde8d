//! A phone photo, made here and the same on every run: a receipt on a wooden table under a
//! sensor's noise, saved as a phone's camera app saves it (a baseline JPEG at quality 90,
//! about 4 MB at 12 megapixels) with the metadata a phone writes: EXIF with a GPS position,
//! the device, the lens, the owner, the time and a thumbnail, and an XMP packet that repeats
//! the position. The position and the names are invented.
//!
//! (`baton_testkit::pictures` makes small photos like it, but the test kit is a
//! dev-dependency only, so the benchmark writes its own EXIF.)

use anyhow::{Context as _, bail};
use image::codecs::jpeg::JpegEncoder;
use image::{ExtendedColorType, Rgb, RgbImage};

/// The camera app's JPEG quality.
const QUALITY: u8 = 90;
/// The sensor noise, ± this much on each channel: with it, 4000×3000 pixels come to about
/// 4 MB at [`QUALITY`], as a phone's 12-megapixel photo does.
const NOISE: u64 = 9;
/// The thumbnail's longer side, as phones store it in the EXIF.
const THUMBNAIL_SIDE: u32 = 160;

/// A `width` × `height` phone photo as the phone sends it (a JPEG with EXIF and XMP).
pub(crate) fn phone_photo(width: u32, height: u32) -> anyhow::Result<Vec<u8>> {
    anyhow::ensure!(width > 0 && height > 0, "a photo needs pixels");
    let scene = scene(width, height);
    let jpeg = encode(&scene, QUALITY)?;
    let (tw, th) = if width >= height {
        (THUMBNAIL_SIDE, (THUMBNAIL_SIDE * height / width).max(1))
    } else {
        ((THUMBNAIL_SIDE * width / height).max(1), THUMBNAIL_SIDE)
    };
    let thumbnail = encode(&image::imageops::thumbnail(&scene, tw, th), 80)?;
    drop(scene);
    let mut exif = b"Exif\0\0".to_vec();
    exif.extend(tiff(width, height, &thumbnail)?);
    let mut xmp = b"http://ns.adobe.com/xap/1.0/\0".to_vec();
    xmp.extend(XMP.as_bytes());
    let Some(rest) = jpeg.strip_prefix(&[0xFF, 0xD8]) else {
        bail!("the encoder's JPEG does not start with its start-of-image marker");
    };
    // EXIF right after the start of the image, then XMP, as a phone writes them.
    let mut out = vec![0xFF, 0xD8];
    out.extend(segment(0xE1, &exif)?);
    out.extend(segment(0xE1, &xmp)?);
    out.extend_from_slice(rest);
    Ok(out)
}

/// The picture: a wooden table, a slightly tilted receipt with rows of print, and noise.
fn scene(width: u32, height: u32) -> RgbImage {
    let mut noise = SplitMix(0x5EED);
    let (fw, fh) = (width as f32, height as f32);
    let mut image = RgbImage::new(width, height);
    for (x, y, pixel) in image.enumerate_pixels_mut() {
        let (u, v) = (x as f32 / fw, y as f32 / fh);
        let grain = ((v * 180.0 + (u * 9.0).sin() * 2.5).sin() * 0.5 + 0.5) * 40.0;
        let mut rgb = [120.0 + grain, 80.0 + grain * 0.7, 45.0 + grain * 0.4];
        let across = u - 0.5 + (v - 0.5) * 0.06;
        if across.abs() < 0.17 && (0.08..0.92).contains(&v) {
            let row = ((v - 0.08) * fh) as u32 % 48;
            let column = ((across + 0.17) * fw) as u32;
            let ink = (14..26).contains(&row)
                && !(column / 23 + row).is_multiple_of(7)
                && column % 23 < 17;
            let paper = 235.0 - 25.0 * u;
            rgb = if ink {
                [40.0, 40.0, 48.0]
            } else {
                [paper, paper - 2.0, paper - 8.0]
            };
        }
        let r = noise.next();
        let mut out = [0u8; 3];
        for (c, o) in out.iter_mut().enumerate() {
            let n = ((r >> (c * 16)) & 0xFFFF) % (2 * NOISE + 1);
            *o = (rgb[c] + n as f32 - NOISE as f32).clamp(0.0, 255.0) as u8;
        }
        *pixel = Rgb(out);
    }
    image
}

/// SplitMix64: a deterministic stream of noise.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

fn encode(image: &RgbImage, quality: u8) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    JpegEncoder::new_with_quality(&mut out, quality)
        .encode(
            image.as_raw(),
            image.width(),
            image.height(),
            ExtendedColorType::Rgb8,
        )
        .context("encoding the photo")?;
    Ok(out)
}

/// A JPEG marker segment.
fn segment(marker: u8, contents: &[u8]) -> anyhow::Result<Vec<u8>> {
    let len = u16::try_from(contents.len() + 2).context("a JPEG segment holds at most 64 KiB")?;
    let mut s = vec![0xFF, marker];
    s.extend_from_slice(&len.to_be_bytes());
    s.extend_from_slice(contents);
    Ok(s)
}

/// The XMP a phone's gallery app writes beside the EXIF: the position again, the device.
const XMP: &str = concat!(
    r#"<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">"#,
    r#"<rdf:Description xmlns:exif="http://ns.adobe.com/exif/1.0/" xmlns:tiff="http://ns.adobe.com/tiff/1.0/" "#,
    r#"exif:GPSLatitude="52,22.206N" exif:GPSLongitude="4,53.712E" tiff:Make="PhoneMaker" "#,
    r#"tiff:Model="Phone 15" exif:DateTimeOriginal="2026-11-02T10:11:12+01:00"/>"#,
    r#"</rdf:RDF></x:xmpmeta>"#
);

/// A TIFF field's value (EXIF is TIFF), big-endian.
enum Field<'a> {
    Byte(&'a [u8]),
    Ascii(&'a str),
    Short(u16),
    Long(u32),
    Rational(&'a [(u32, u32)]),
    Undefined(&'a [u8]),
}

impl Field<'_> {
    fn kind(&self) -> u16 {
        match self {
            Field::Byte(_) => 1,
            Field::Ascii(_) => 2,
            Field::Short(_) => 3,
            Field::Long(_) => 4,
            Field::Rational(_) => 5,
            Field::Undefined(_) => 7,
        }
    }

    fn count(&self) -> usize {
        match self {
            Field::Byte(b) | Field::Undefined(b) => b.len(),
            Field::Ascii(s) => s.len() + 1,
            Field::Short(_) | Field::Long(_) => 1,
            Field::Rational(r) => r.len(),
        }
    }

    fn bytes(&self) -> Vec<u8> {
        match self {
            Field::Byte(b) | Field::Undefined(b) => b.to_vec(),
            Field::Ascii(s) => [s.as_bytes(), b"\0"].concat(),
            Field::Short(n) => n.to_be_bytes().to_vec(),
            Field::Long(n) => n.to_be_bytes().to_vec(),
            Field::Rational(r) => r
                .iter()
                .flat_map(|(n, d)| [n.to_be_bytes(), d.to_be_bytes()])
                .flatten()
                .collect(),
        }
    }
}

type Ifd<'a> = Vec<(u16, Field<'a>)>;

/// Bytes an IFD takes with its values stored after it.
fn ifd_len(ifd: &Ifd<'_>) -> usize {
    let values: usize = ifd
        .iter()
        .map(|(_, f)| f.bytes().len())
        .filter(|n| *n > 4)
        .map(|n| n + n % 2)
        .sum();
    2 + 12 * ifd.len() + 4 + values
}

/// Appends `ifd` (its entries in tag order) at `out.len()`, which is its offset from the
/// TIFF header, then its values; `next` is the offset of the next IFD (0: none).
fn write_ifd(out: &mut Vec<u8>, mut ifd: Ifd<'_>, next: usize) -> anyhow::Result<()> {
    ifd.sort_by_key(|(tag, _)| *tag);
    let offset = |n: usize| u32::try_from(n).context("the EXIF is too large");
    let mut values_at = out.len() + 2 + 12 * ifd.len() + 4;
    let mut values = Vec::new();
    out.extend(u16::try_from(ifd.len())?.to_be_bytes());
    for (tag, field) in &ifd {
        out.extend(tag.to_be_bytes());
        out.extend(field.kind().to_be_bytes());
        out.extend(offset(field.count())?.to_be_bytes());
        let mut bytes = field.bytes();
        if bytes.len() <= 4 {
            bytes.resize(4, 0);
            out.extend(bytes);
        } else {
            out.extend(offset(values_at)?.to_be_bytes());
            values_at += bytes.len() + bytes.len() % 2;
            if bytes.len() % 2 == 1 {
                bytes.push(0);
            }
            values.extend(bytes);
        }
    }
    out.extend(offset(next)?.to_be_bytes());
    out.extend(values);
    Ok(())
}

/// The EXIF's TIFF structure: IFD0 (device, owner, time, orientation), its EXIF and GPS
/// sub-IFDs, IFD1 naming the thumbnail, then the thumbnail.
fn tiff(width: u32, height: u32, thumbnail: &[u8]) -> anyhow::Result<Vec<u8>> {
    const DPI: &[(u32, u32)] = &[(72, 1)];
    let ifd0 = |exif: u32, gps: u32| -> Ifd<'static> {
        vec![
            (0x010F, Field::Ascii("PhoneMaker")),
            (0x0110, Field::Ascii("Phone 15")),
            (0x0112, Field::Short(1)), // orientation
            (0x011A, Field::Rational(DPI)),
            (0x011B, Field::Rational(DPI)),
            (0x0128, Field::Short(2)), // inches
            (0x0131, Field::Ascii("PhoneOS 26.1")),
            (0x0132, Field::Ascii("2026:11:02 10:11:12")),
            (0x013B, Field::Ascii("Jane Example")),
            (0x0213, Field::Short(1)),
            (0x8298, Field::Ascii("Jane Example")),
            (0x8769, Field::Long(exif)),
            (0x8825, Field::Long(gps)),
        ]
    };
    let exif_ifd: Ifd<'static> = vec![
        (0x829A, Field::Rational(&[(1, 120)])), // exposure
        (0x829D, Field::Rational(&[(18, 10)])), // f-number
        (0x8827, Field::Short(64)),             // ISO
        (0x9000, Field::Undefined(b"0232")),
        (0x9003, Field::Ascii("2026:11:02 10:11:12")),
        (0x9004, Field::Ascii("2026:11:02 10:11:12")),
        (0x9011, Field::Ascii("+01:00")),
        (0x920A, Field::Rational(&[(69, 10)])), // focal length
        (0xA001, Field::Short(1)),              // sRGB
        (0xA002, Field::Long(width)),
        (0xA003, Field::Long(height)),
        (0xA431, Field::Ascii("PM15-0042-7731")), // body serial number
        (0xA433, Field::Ascii("PhoneMaker")),
        (0xA434, Field::Ascii("Phone 15 back camera 6.9mm f/1.8")),
    ];
    let gps_ifd: Ifd<'static> = vec![
        (0x0000, Field::Byte(&[2, 3, 0, 0])),
        (0x0001, Field::Ascii("N")),
        (0x0002, Field::Rational(&[(52, 1), (22, 1), (1236, 100)])),
        (0x0003, Field::Ascii("E")),
        (0x0004, Field::Rational(&[(4, 1), (53, 1), (4272, 100)])),
        (0x0005, Field::Byte(&[0])),
        (0x0006, Field::Rational(&[(12, 1)])),
        (0x0007, Field::Rational(&[(9, 1), (11, 1), (12, 1)])),
        (0x001D, Field::Ascii("2026:11:02")),
    ];
    let ifd1 = |at: u32, len: u32| -> Ifd<'static> {
        vec![
            (0x0103, Field::Short(6)), // JPEG
            (0x011A, Field::Rational(DPI)),
            (0x011B, Field::Rational(DPI)),
            (0x0128, Field::Short(2)),
            (0x0201, Field::Long(at)),
            (0x0202, Field::Long(len)),
        ]
    };
    // Every offset is counted from the TIFF header; the IFDs' sizes do not depend on them.
    let at0 = 8;
    let at_exif = at0 + ifd_len(&ifd0(0, 0));
    let at_gps = at_exif + ifd_len(&exif_ifd);
    let at1 = at_gps + ifd_len(&gps_ifd);
    let at_thumbnail = at1 + ifd_len(&ifd1(0, 0));
    let long = |n: usize| u32::try_from(n).context("the EXIF is too large");
    let mut out = b"MM\0\x2A\0\0\0\x08".to_vec();
    write_ifd(&mut out, ifd0(long(at_exif)?, long(at_gps)?), at1)?;
    write_ifd(&mut out, exif_ifd, 0)?;
    write_ifd(&mut out, gps_ifd, 0)?;
    write_ifd(
        &mut out,
        ifd1(long(at_thumbnail)?, long(thumbnail.len())?),
        0,
    )?;
    anyhow::ensure!(out.len() == at_thumbnail, "the EXIF's layout is off");
    out.extend_from_slice(thumbnail);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use baton_core::picture::{HiddenData, PictureLimits, take};

    use super::*;

    #[test]
    fn the_photo_is_a_jpeg_whose_gps_device_owner_and_xmp_are_found_and_removed() {
        let photo = phone_photo(320, 240).unwrap();
        assert_eq!(photo, phone_photo(320, 240).unwrap(), "not deterministic");
        let picture = take(&photo, &PictureLimits::default()).unwrap();
        assert_eq!((picture.width, picture.height), (320, 240));
        for kind in [
            HiddenData::Location,
            HiddenData::Device,
            HiddenData::Owner,
            HiddenData::TakenAt,
            HiddenData::Xmp,
        ] {
            assert!(picture.removed.contains(&kind), "{kind:?}: {picture:?}");
        }
        let kept = String::from_utf8_lossy(&picture.bytes);
        for secret in ["Jane Example", "PhoneMaker", "52,22.206N"] {
            assert!(!kept.contains(secret), "{secret}");
        }
    }
}

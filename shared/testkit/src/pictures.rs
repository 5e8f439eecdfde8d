//! Photos as a phone sends them (D-42): a receipt and a product, JPEGs carrying the EXIF a
//! phone writes (a GPS position, the device, the owner's name, the time, the orientation),
//! an XMP packet and a comment. Made here, not taken from anyone: the position and names
//! are invented. `shared/registry/fixtures/pictures/` holds the same bytes as files.

use std::io::Cursor;

use exif::{Field, In, Rational, Tag, Value};
use image::{DynamicImage, ImageFormat, Rgb, RgbImage};

/// Words that must not survive a picture's stripping: the owner's name, the device, the
/// position as the XMP writes it.
pub const SECRETS: [&str; 4] = ["Jane Example", "PhoneMaker", "Phone 15", "52.3701"];

/// A receipt: a tall white slip with rows of dark print.
pub fn receipt_photo() -> Vec<u8> {
    let image = RgbImage::from_fn(360, 900, |x, y| {
        let printed = (60..840).contains(&y) && y % 24 < 6 && (30..330).contains(&x);
        let ragged = (x + y * 7) % 97 < 50;
        if printed && ragged {
            Rgb([35, 35, 40])
        } else {
            Rgb([247, 246, 240])
        }
    });
    with_phone_metadata(&jpeg(&image))
}

/// A product: a red can on a blue shelf.
pub fn product_photo() -> Vec<u8> {
    let image = RgbImage::from_fn(600, 600, |x, y| {
        let dx = f64::from(x) - 300.0;
        let can = dx.abs() < 110.0 && (120..520).contains(&y);
        if can {
            Rgb([200, 30, 40])
        } else if y > 520 {
            Rgb([120, 90, 60])
        } else {
            Rgb([40, 80, 170])
        }
    });
    with_phone_metadata(&jpeg(&image))
}

/// A large product photo (1600 × 1200, about 430 KB: its grain is noise a JPEG squeezes
/// little), with the same metadata: a request carrying it is far over the 64 KiB a turn
/// without pictures may be.
pub fn large_photo() -> Vec<u8> {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let image = RgbImage::from_fn(1600, 1200, |x, y| {
        // xorshift: the grain, the same every run.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let grain = (seed % 64) as u8;
        let can = (f64::from(x) - 800.0).abs() < 300.0 && (300..1000).contains(&y);
        if can {
            Rgb([170 + grain, 20 + grain / 2, 30 + grain / 2])
        } else {
            Rgb([30 + grain / 2, 70 + grain / 2, 150 + grain])
        }
    });
    with_phone_metadata(&jpeg(&image))
}

fn jpeg(image: &RgbImage) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    // Encoding an in-memory image to a Vec cannot fail.
    let _ = DynamicImage::ImageRgb8(image.clone()).write_to(&mut out, ImageFormat::Jpeg);
    out.into_inner()
}

/// `jpeg` with EXIF (GPS, device, owner, time, orientation 1), XMP and a comment after its
/// start, and a few bytes after its end, as a phone's motion photo appends its video.
fn with_phone_metadata(jpeg: &[u8]) -> Vec<u8> {
    let mut exif = b"Exif\0\0".to_vec();
    exif.extend(phone_exif());
    let mut xmp = b"http://ns.adobe.com/xap/1.0/\0".to_vec();
    xmp.extend(b"<x:xmpmeta><exif:GPSLatitude>52.3701</exif:GPSLatitude></x:xmpmeta>");
    let mut out = jpeg[..2].to_vec();
    out.extend(segment(0xE1, &exif));
    out.extend(segment(0xE1, &xmp));
    out.extend(segment(0xFE, b"Photo by Jane Example"));
    out.extend_from_slice(&jpeg[2..]);
    out.extend_from_slice(b"MotionPhoto_Data 52.3701 4.8952");
    out
}

fn segment(marker: u8, contents: &[u8]) -> Vec<u8> {
    let len = u16::try_from(contents.len() + 2).unwrap_or(u16::MAX);
    let mut s = vec![0xFF, marker];
    s.extend_from_slice(&len.to_be_bytes());
    s.extend_from_slice(contents);
    s
}

/// The EXIF (a TIFF structure) a phone writes.
pub fn phone_exif() -> Vec<u8> {
    let r = |num, denom| Rational { num, denom };
    let ascii = |s: &str| Value::Ascii(vec![s.as_bytes().to_vec()]);
    let fields = [
        (Tag::GPSLatitudeRef, ascii("N")),
        (
            Tag::GPSLatitude,
            Value::Rational(vec![r(52, 1), r(22, 1), r(1236, 100)]),
        ),
        (Tag::GPSLongitudeRef, ascii("E")),
        (
            Tag::GPSLongitude,
            Value::Rational(vec![r(4, 1), r(53, 1), r(4272, 100)]),
        ),
        (Tag::Make, ascii("PhoneMaker")),
        (Tag::Model, ascii("Phone 15")),
        (Tag::Artist, ascii("Jane Example")),
        (Tag::DateTimeOriginal, ascii("2026:11:02 10:11:12")),
        (Tag::Orientation, Value::Short(vec![1])),
    ]
    .map(|(tag, value)| Field {
        tag,
        ifd_num: In::PRIMARY,
        value,
    });
    let mut writer = exif::experimental::Writer::new();
    for field in &fields {
        writer.push_field(field);
    }
    let mut out = Cursor::new(Vec::new());
    // Writing known fields to a Vec cannot fail.
    let _ = writer.write(&mut out, false);
    out.into_inner()
}

/// What an adversary sends as a picture (D-42): each must be refused, or taken bounded.
pub mod hostile {
    use std::io::Cursor;

    use image::codecs::gif::GifEncoder;
    use image::{Delay, DynamicImage, Frame, ImageFormat, RgbaImage};

    /// A receipt photo cut off halfway, as a dropped upload leaves it.
    pub fn truncated_jpeg() -> Vec<u8> {
        let mut photo = super::receipt_photo();
        photo.truncate(photo.len() / 2);
        photo
    }

    /// A PNG of a few hundred bytes whose header claims 100,000 × 100,000 pixels (40 GB
    /// decoded): refused from its header, never decoded.
    pub fn png_bomb() -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        let small = DynamicImage::ImageRgba8(RgbaImage::new(8, 8));
        // Encoding an in-memory image to a Vec cannot fail.
        let _ = small.write_to(&mut out, ImageFormat::Png);
        let mut png = out.into_inner();
        // The IHDR chunk follows the 8-byte signature: length (4), type (4), width, height.
        png[16..20].copy_from_slice(&100_000u32.to_be_bytes());
        png[20..24].copy_from_slice(&100_000u32.to_be_bytes());
        let crc = crc32(&png[12..29]);
        png[29..33].copy_from_slice(&crc.to_be_bytes());
        png
    }

    /// A GIF of `frames` tiny frames.
    pub fn gif_of_frames(frames: u32) -> Vec<u8> {
        let mut gif = Vec::new();
        {
            let mut encoder = GifEncoder::new(&mut gif);
            let frames = (0..frames).map(|i| {
                let shade = u8::try_from(i % 250).unwrap_or(0);
                Frame::from_parts(
                    RgbaImage::from_pixel(2, 2, image::Rgba([shade, 0, 0, 255])),
                    0,
                    0,
                    Delay::from_numer_denom_ms(10, 1),
                )
            });
            let _ = encoder.encode_frames(frames);
        }
        gif
    }

    /// The CRC-32 of PNG chunks (ISO 3309), bit by bit: a test needs one.
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for byte in bytes {
            crc ^= u32::from(*byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
}

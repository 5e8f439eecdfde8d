use std::io::Cursor;

use ::exif::{Field, In, Rational, Tag, Value};
use image::{DynamicImage, ImageFormat, Rgb, RgbImage};
use img_parts::ImageEXIF;

use super::*;

/// A receipt-like picture: tall, white, with dark lines of "text".
fn receipt(width: u32, height: u32) -> RgbImage {
    RgbImage::from_fn(width, height, |x, y| {
        if y % 12 < 3 && x > 8 && x < width - 8 {
            Rgb([30, 30, 30])
        } else {
            Rgb([250, 250, 245])
        }
    })
}

fn encode(image: &RgbImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(image.clone())
        .write_to(&mut out, format)
        .expect("encodes");
    out.into_inner()
}

/// EXIF as a phone writes it: where, with what, by whom, when, and on its side.
fn phone_exif() -> Vec<u8> {
    let r = |num, denom| Rational { num, denom };
    let fields = [
        Field {
            tag: Tag::GPSLatitudeRef,
            ifd_num: In::PRIMARY,
            value: Value::Ascii(vec![b"N".to_vec()]),
        },
        Field {
            tag: Tag::GPSLatitude,
            ifd_num: In::PRIMARY,
            value: Value::Rational(vec![r(52, 1), r(22, 1), r(1234, 100)]),
        },
        Field {
            tag: Tag::GPSLongitudeRef,
            ifd_num: In::PRIMARY,
            value: Value::Ascii(vec![b"E".to_vec()]),
        },
        Field {
            tag: Tag::GPSLongitude,
            ifd_num: In::PRIMARY,
            value: Value::Rational(vec![r(4, 1), r(53, 1), r(4321, 100)]),
        },
        Field {
            tag: Tag::Make,
            ifd_num: In::PRIMARY,
            value: Value::Ascii(vec![b"PhoneMaker".to_vec()]),
        },
        Field {
            tag: Tag::Model,
            ifd_num: In::PRIMARY,
            value: Value::Ascii(vec![b"Phone 15".to_vec()]),
        },
        Field {
            tag: Tag::Artist,
            ifd_num: In::PRIMARY,
            value: Value::Ascii(vec![b"Jane Example".to_vec()]),
        },
        Field {
            tag: Tag::DateTimeOriginal,
            ifd_num: In::PRIMARY,
            value: Value::Ascii(vec![b"2026:11:02 10:11:12".to_vec()]),
        },
        Field {
            tag: Tag::Orientation,
            ifd_num: In::PRIMARY,
            value: Value::Short(vec![6]),
        },
    ];
    let mut writer = ::exif::experimental::Writer::new();
    for field in &fields {
        writer.push_field(field);
    }
    let mut out = Cursor::new(Vec::new());
    writer.write(&mut out, false).expect("writes EXIF");
    out.into_inner()
}

fn segment(marker: u8, contents: &[u8]) -> Vec<u8> {
    let mut s = vec![0xFF, marker];
    s.extend_from_slice(
        &u16::try_from(contents.len() + 2)
            .expect("small")
            .to_be_bytes(),
    );
    s.extend_from_slice(contents);
    s
}

/// A phone-like JPEG: EXIF with GPS, XMP, a comment, and a video after its end.
fn phone_jpeg() -> Vec<u8> {
    let plain = encode(&receipt(120, 240), ImageFormat::Jpeg);
    let mut exif = b"Exif\0\0".to_vec();
    exif.extend(phone_exif());
    let mut xmp = b"http://ns.adobe.com/xap/1.0/\0".to_vec();
    xmp.extend(b"<x:xmpmeta><exif:GPSLatitude>52,22.2N</exif:GPSLatitude></x:xmpmeta>");
    let mut out = plain[..2].to_vec();
    out.extend(segment(0xE1, &exif));
    out.extend(segment(0xE1, &xmp));
    out.extend(segment(0xFE, b"owner: Jane Example"));
    out.extend_from_slice(&plain[2..]);
    out.extend_from_slice(b"ftypmp42 a motion-photo video with GPS 52.3701 4.8952");
    out
}

fn has(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn decoded(bytes: &[u8]) -> DynamicImage {
    image::load_from_memory(bytes).expect("decodes")
}

#[test]
fn a_phone_jpeg_loses_its_location_owner_and_device_and_keeps_its_pixels_and_orientation() {
    let sent = phone_jpeg();
    assert!(has(&sent, b"Jane Example") && has(&sent, b"PhoneMaker"));
    let picture = take(&sent, &PictureLimits::default()).expect("taken");
    assert_eq!(picture.media_type, MediaType::Jpeg);
    assert_eq!((picture.width, picture.height), (120, 240));
    for kind in [
        HiddenData::Location,
        HiddenData::Device,
        HiddenData::Owner,
        HiddenData::TakenAt,
        HiddenData::Xmp,
        HiddenData::Comment,
        HiddenData::Appended,
    ] {
        assert!(
            picture.removed.contains(&kind),
            "{kind:?} in {:?}",
            picture.removed
        );
    }
    for secret in [
        &b"Jane Example"[..],
        b"PhoneMaker",
        b"Phone 15",
        b"2026:11:02",
        b"GPSLatitude",
        b"52.3701",
        b"ftypmp42",
    ] {
        assert!(
            !has(&picture.bytes, secret),
            "{}",
            String::from_utf8_lossy(secret)
        );
    }
    // The only EXIF left is the orientation.
    let left = ::exif::Reader::new()
        .read_from_container(&mut Cursor::new(&picture.bytes[..]))
        .expect("an EXIF with the orientation");
    let tags: Vec<Tag> = left.fields().map(|f| f.tag).collect();
    assert_eq!(tags, vec![Tag::Orientation]);
    assert_eq!(
        left.get_field(Tag::Orientation, In::PRIMARY)
            .and_then(|f| f.value.get_uint(0)),
        Some(6)
    );
    // The pixels are the same: the encoded data was not touched.
    assert_eq!(decoded(&picture.bytes), decoded(&sent));
    assert_eq!(picture.sha256.len(), 64);
}

#[test]
fn a_picture_with_nothing_hidden_is_kept_byte_for_byte() {
    let jpeg = encode(&receipt(64, 64), ImageFormat::Jpeg);
    let picture = take(&jpeg, &PictureLimits::default()).expect("taken");
    assert_eq!(&picture.bytes[..], &jpeg[..]);
    assert!(picture.removed.is_empty(), "{:?}", picture.removed);
}

#[test]
fn a_png_loses_its_exif_and_text() {
    let png = encode(&receipt(40, 80), ImageFormat::Png);
    let mut parts = img_parts::png::Png::from_bytes(Bytes::from(png)).expect("a PNG");
    parts.set_exif(Some(Bytes::from(phone_exif())));
    let at = parts.chunks().len() - 1;
    parts.chunks_mut().insert(
        at,
        img_parts::png::PngChunk::new(*b"tEXt", Bytes::from_static(b"Author\0Jane Example")),
    );
    let sent = parts.encoder().bytes();
    let picture = take(&sent, &PictureLimits::default()).expect("taken");
    assert!(picture.removed.contains(&HiddenData::Location));
    assert!(picture.removed.contains(&HiddenData::Comment));
    assert!(!has(&picture.bytes, b"Jane Example") && !has(&picture.bytes, b"PhoneMaker"));
    assert_eq!(decoded(&picture.bytes), decoded(&sent));
}

#[test]
fn a_webp_loses_its_exif_and_xmp() {
    let webp = encode(&receipt(40, 80), ImageFormat::WebP);
    let mut parts = img_parts::webp::WebP::from_bytes(Bytes::from(webp)).expect("a WebP");
    parts.set_exif(Some(Bytes::from(phone_exif())));
    parts.chunks_mut().push(img_parts::riff::RiffChunk::new(
        *b"XMP ",
        img_parts::riff::RiffContent::Data(Bytes::from_static(
            b"<x:xmpmeta>Jane Example</x:xmpmeta>",
        )),
    ));
    let sent = parts.encoder().bytes();
    let picture = take(&sent, &PictureLimits::default()).expect("taken");
    assert_eq!(picture.media_type, MediaType::Webp);
    assert!(picture.removed.contains(&HiddenData::Location));
    assert!(picture.removed.contains(&HiddenData::Xmp));
    assert!(!has(&picture.bytes, b"Jane Example") && !has(&picture.bytes, b"PhoneMaker"));
    assert_eq!(decoded(&picture.bytes), decoded(&sent));
}

#[test]
fn a_gif_of_ten_thousand_frames_is_its_first_frame_as_a_png() {
    use image::codecs::gif::GifEncoder;
    use image::{Delay, Frame, RgbaImage};
    let mut gif = Vec::new();
    {
        let mut encoder = GifEncoder::new(&mut gif);
        let frames = (0..10_000u32).map(|i| {
            let shade = u8::try_from(i % 250).expect("small");
            Frame::from_parts(
                RgbaImage::from_pixel(2, 2, image::Rgba([shade, 0, 0, 255])),
                0,
                0,
                Delay::from_numer_denom_ms(10, 1),
            )
        });
        encoder.encode_frames(frames).expect("encodes");
    }
    let picture = take(&gif, &PictureLimits::default()).expect("taken");
    assert_eq!(picture.media_type, MediaType::Png);
    assert_eq!((picture.width, picture.height), (2, 2));
    assert_eq!(
        decoded(&picture.bytes).to_rgba8().get_pixel(0, 0),
        &image::Rgba([0, 0, 0, 255])
    );
}

#[test]
fn a_cut_short_jpeg_is_refused() {
    let jpeg = phone_jpeg();
    let end = jpeg.len() - 200;
    for cut in [end, jpeg.len() / 2, 300] {
        let e = take(&jpeg[..cut], &PictureLimits::default()).expect_err("refused");
        assert!(matches!(e, PictureError::Damaged(_)), "{cut}: {e}");
    }
}

#[test]
fn a_png_bomb_is_refused_from_its_header() {
    // A small PNG whose header claims 100,000 × 100,000 pixels.
    let png = encode(&receipt(8, 8), ImageFormat::Png);
    let mut parts = img_parts::png::Png::from_bytes(Bytes::from(png)).expect("a PNG");
    let ihdr = parts
        .chunk_by_type(*b"IHDR")
        .expect("IHDR")
        .contents()
        .clone();
    let mut big = ihdr.to_vec();
    big[..4].copy_from_slice(&100_000u32.to_be_bytes());
    big[4..8].copy_from_slice(&100_000u32.to_be_bytes());
    parts.chunks_mut()[0] = img_parts::png::PngChunk::new(*b"IHDR", Bytes::from(big));
    let bomb = parts.encoder().bytes();
    let e = take(&bomb, &PictureLimits::default()).expect_err("refused");
    assert!(
        matches!(e, PictureError::TooManyPixels { width: 100_000, .. }),
        "{e}"
    );
}

#[test]
fn limits_and_types_are_refused_plainly() {
    let limits = PictureLimits {
        max_bytes: 1000,
        ..PictureLimits::default()
    };
    let big = encode(&receipt(200, 400), ImageFormat::Png);
    assert!(matches!(
        take(&big, &limits),
        Err(PictureError::TooLarge { limit: 1000, .. })
    ));
    assert_eq!(
        take(b"%PDF-1.7 not a picture", &PictureLimits::default()),
        Err(PictureError::NotAPicture)
    );
    assert_eq!(
        take(b"", &PictureLimits::default()),
        Err(PictureError::Empty)
    );
    let one = encode(&receipt(8, 8), ImageFormat::Png);
    let e = within_turn(&[one.len(); 5], &PictureLimits::default()).expect_err("too many");
    assert_eq!(e, PictureError::TooMany { count: 5, limit: 4 });
    let wide = encode(&receipt(10_001, 1), ImageFormat::Png);
    assert!(matches!(
        take(&wide, &PictureLimits::default()),
        Err(PictureError::TooManyPixels { .. })
    ));
}

#[test]
fn the_type_comes_from_the_bytes() {
    // A JPEG its sender calls a PNG is a JPEG.
    let jpeg = encode(&receipt(16, 16), ImageFormat::Jpeg);
    assert_eq!(
        take(&jpeg, &PictureLimits::default()).map(|p| p.media_type),
        Ok(MediaType::Jpeg)
    );
    assert_eq!(MediaType::parse("IMAGE/JPG"), Some(MediaType::Jpeg));
    assert_eq!(MediaType::parse("image/png; q=1"), Some(MediaType::Png));
    assert_eq!(MediaType::parse("image/tiff"), None);
    // Declared types are checked against the bytes, never believed.
    assert_eq!(
        check_declared(&jpeg, "image/png"),
        Err(PictureError::NotWhatItSays {
            declared: MediaType::Png,
            actual: MediaType::Jpeg
        })
    );
    assert_eq!(check_declared(&jpeg, "image/jpg"), Ok(()));
    assert_eq!(check_declared(&jpeg, "application/octet-stream"), Ok(()));
    assert_eq!(
        check_declared(&jpeg, "image/heic"),
        Err(PictureError::TypeNotTaken("image/heic".into()))
    );
    assert_eq!(
        check_declared(&jpeg, "image/heic").map_err(|e| e.to_string()),
        Err("\"image/heic\" is not a type Baton takes: send a JPEG, PNG, WebP or GIF".into())
    );
}

#[test]
fn a_turn_takes_its_pictures_within_a_total() {
    let limits = PictureLimits {
        max_total_bytes: 100,
        ..PictureLimits::default()
    };
    assert_eq!(within_turn(&[60, 40], &limits), Ok(()));
    assert_eq!(
        within_turn(&[60, 41], &limits),
        Err(PictureError::TooLargeTogether {
            bytes: 101,
            limit: 100
        })
    );
}

#[test]
fn removed_data_is_counted_for_the_receipt() {
    let one = take(&phone_jpeg(), &PictureLimits::default()).expect("taken");
    let two = take(
        &encode(&receipt(8, 8), ImageFormat::Png),
        &PictureLimits::default(),
    )
    .expect("taken");
    let counts = removed_by_kind(&[one.clone(), one, two]);
    assert_eq!(counts.get(&HiddenData::Location), Some(&2));
    assert_eq!(counts.get(&HiddenData::Frames), None);
}

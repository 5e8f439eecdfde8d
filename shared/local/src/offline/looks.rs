//! How the offline model "sees" a picture: not a vision model, but a description made
//! from the picture's own properties, which then routes like words do. A receipt is a tall
//! strip of mostly white, colourless paper; a product photo is anything colourful or
//! squarer. The words are the ones the cards' keywords speak (`receipt`, `product`).

use baton_core::picture::MediaType;
use image::ImageFormat;

/// What a picture looks like, in words, or `None` when it cannot be read.
pub(crate) fn describe(bytes: &[u8], media_type: MediaType) -> Option<&'static str> {
    let format = match media_type {
        MediaType::Jpeg => ImageFormat::Jpeg,
        MediaType::Png => ImageFormat::Png,
        MediaType::Webp => ImageFormat::WebP,
        MediaType::Gif => ImageFormat::Gif,
    };
    let image = image::load_from_memory_with_format(bytes, format).ok()?;
    let looks = Looks::of(&image.thumbnail(96, 96).to_rgb8());
    Some(if looks.is_receipt() {
        "a photo of a paper receipt"
    } else {
        "a photo of a product"
    })
}

/// The properties the description is made from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Looks {
    /// Height over width.
    pub(crate) aspect: f64,
    /// Share of pixels that are near white.
    pub(crate) white: f64,
    /// Mean saturation, 0 to 1.
    pub(crate) saturation: f64,
}

impl Looks {
    pub(crate) fn of(image: &image::RgbImage) -> Looks {
        let (w, h) = image.dimensions();
        let n = f64::from((w * h).max(1));
        let mut white = 0.0;
        let mut saturation = 0.0;
        for pixel in image.pixels() {
            let [r, g, b] = pixel.0.map(f64::from);
            let max = r.max(g).max(b);
            let min = r.min(g).min(b);
            if min >= 200.0 {
                white += 1.0;
            }
            if max > 0.0 {
                saturation += (max - min) / max;
            }
        }
        Looks {
            aspect: f64::from(h) / f64::from(w.max(1)),
            white: white / n,
            saturation: saturation / n,
        }
    }

    /// A tall slip, mostly white, with little colour.
    pub(crate) fn is_receipt(&self) -> bool {
        self.aspect >= 1.3 && self.white >= 0.5 && self.saturation <= 0.15
    }
}

#[cfg(test)]
mod tests {
    use image::{Rgb, RgbImage};

    use super::*;

    #[test]
    fn a_tall_white_slip_with_lines_is_a_receipt_and_a_colourful_square_is_not() {
        let receipt = RgbImage::from_fn(60, 160, |_, y| {
            if y % 10 < 2 {
                Rgb([20, 20, 20])
            } else {
                Rgb([248, 248, 244])
            }
        });
        assert!(
            Looks::of(&receipt).is_receipt(),
            "{:?}",
            Looks::of(&receipt)
        );
        let product = RgbImage::from_fn(100, 100, |x, _| {
            if x < 50 {
                Rgb([200, 40, 30])
            } else {
                Rgb([250, 250, 250])
            }
        });
        assert!(
            !Looks::of(&product).is_receipt(),
            "{:?}",
            Looks::of(&product)
        );
        let white_square = RgbImage::from_pixel(100, 100, Rgb([250, 250, 250]));
        assert!(!Looks::of(&white_square).is_receipt());
    }
}

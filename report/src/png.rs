//! PNG pictures: the plotting module's SVG rasterised in-process by resvg.
//!
//! One drawing path for both formats: every chart is drawn once, as SVG, and a PNG is that
//! SVG rendered. The text is set in DejaVu Sans, embedded in the binary, so a PNG looks the
//! same on a machine without fonts (a fresh server, a CI runner) as on a desktop; no system
//! library or font is looked up.

use resvg::tiny_skia;
use resvg::usvg;

/// An SVG that could not be rendered as PNG.
#[derive(Debug, thiserror::Error)]
pub enum PngError {
    /// The SVG did not parse.
    #[error("cannot read the picture's SVG: {0}")]
    Svg(#[from] usvg::Error),
    /// The picture is empty or too large to allocate.
    #[error("cannot render a picture of {0}×{1} pixels")]
    Size(u32, u32),
    /// The encoder failed.
    #[error("cannot encode the PNG: {0}")]
    Encode(String),
}

/// The PNG of `svg`, at `scale` device pixels per SVG pixel (1 for the SVG's own size, 2 for a
/// sharper picture on high-density screens and in print).
pub fn from_svg(svg: &str, scale: f32) -> Result<Vec<u8>, PngError> {
    let mut opt = usvg::Options {
        font_family: "DejaVu Sans".into(),
        ..usvg::Options::default()
    };
    let db = opt.fontdb_mut();
    db.load_font_data(dejavu::sans::regular().to_vec());
    db.load_font_data(dejavu::sans::bold().to_vec());
    // The charts ask for the generic families; both are the embedded face.
    db.set_sans_serif_family("DejaVu Sans");
    db.set_serif_family("DejaVu Sans");
    let tree = usvg::Tree::from_str(svg, &opt)?;
    let size = tree.size();
    let (w, h) = (
        (size.width() * scale).ceil() as u32,
        (size.height() * scale).ceil() as u32,
    );
    let mut pixmap = tiny_skia::Pixmap::new(w, h).ok_or(PngError::Size(w, h))?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap
        .encode_png()
        .map_err(|e| PngError::Encode(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The PNG signature, then IHDR's width and height (big-endian, bytes 16..24).
    fn dimensions(png: &[u8]) -> (u32, u32) {
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        (be(&png[16..20]), be(&png[20..24]))
    }

    #[test]
    fn a_chart_renders_at_its_size_with_its_text() {
        let svg = r##"<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100">
            <rect x="10" y="10" width="50" height="30" fill="#4e79a7"/>
            <text x="80" y="50" font-family="sans-serif" font-size="20">KTH</text></svg>"##;
        let with_text = from_svg(svg, 1.0).unwrap();
        assert_eq!(dimensions(&with_text), (200, 100));
        assert_eq!(dimensions(&from_svg(svg, 2.0).unwrap()), (400, 200));
        // The text is drawn (the embedded font is found): the picture differs without it.
        let without = from_svg(&svg.replace("KTH", ""), 1.0).unwrap();
        assert_ne!(with_text, without);
    }

    #[test]
    fn a_bad_svg_is_an_error() {
        assert!(matches!(from_svg("<svg", 1.0), Err(PngError::Svg(_))));
    }
}

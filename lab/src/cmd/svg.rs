//! Hand-written SVG line charts with 95 % confidence bars, for `esim coalloc-experiments`
//! (no plotting dependency: a chart is a few dozen elements).

use std::fmt::Write;

/// One line of a chart: (x, mean, confidence half-width) points.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// The points, in x order.
    pub points: Vec<(f64, f64, f64)>,
}

/// A chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// Title, above the plot.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
}

const W: f64 = 720.0;
const H: f64 = 440.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 200.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 55.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// About five round ticks covering `[lo, hi]`.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(1e-9);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * mag);
    // Multiples of the step, not a running sum, so that rounding never drops the last tick.
    let mut k = (lo / step).floor() as i64;
    let mut out = Vec::new();
    loop {
        let t = k as f64 * step;
        out.push(t);
        if t >= hi - step * 1e-9 || out.len() > 50 {
            break;
        }
        k += 1;
    }
    out
}

fn label(v: f64) -> String {
    if v.abs() >= 100.0 || v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else if (v * 10.0).fract().abs() < 1e-9 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The chart as an SVG document.
pub fn render(c: &Chart) -> String {
    let pts = c.series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, 0.0f64, f64::MIN);
    for &(x, y, ci) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y - ci);
        y1 = y1.max(y + ci);
    }
    if x0 > x1 {
        (x0, x1, y1) = (0.0, 1.0, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if y1 <= y0 {
        y1 = y0 + 1.0;
    }
    let xt = ticks(x0, x1);
    let yt = ticks(y0, y1);
    let (x0, x1) = (x0.min(xt[0]), x1.max(*xt.last().unwrap_or(&x1)));
    let (y0, y1) = (y0.min(yt[0]), y1.max(*yt.last().unwrap_or(&y1)));
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let sx = |x: f64| LEFT + (x - x0) / (x1 - x0) * pw;
    let sy = |y: f64| TOP + ph - (y - y0) / (y1 - y0) * ph;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(o, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        o,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="14">{}</text>"#,
        LEFT + pw / 2.0,
        esc(&c.title)
    );
    for &t in &xt {
        let x = sx(t);
        let _ = writeln!(
            o,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            TOP,
            TOP + ph,
            TOP + ph + 16.0,
            label(t)
        );
    }
    for &t in &yt {
        let y = sy(t);
        let _ = writeln!(
            o,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            y + 4.0,
            label(t)
        );
    }
    let _ = writeln!(
        o,
        r#"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
    );
    let _ = writeln!(
        o,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + pw / 2.0,
        H - 12.0,
        esc(&c.x_label)
    );
    let _ = writeln!(
        o,
        r#"<text x="16" y="{:.1}" text-anchor="middle" transform="rotate(-90 16 {:.1})">{}</text>"#,
        TOP + ph / 2.0,
        TOP + ph / 2.0,
        esc(&c.y_label)
    );
    for (k, s) in c.series.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let path: Vec<String> = s
            .points
            .iter()
            .map(|&(x, y, _)| format!("{:.1},{:.1}", sx(x), sy(y)))
            .collect();
        let _ = writeln!(
            o,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="1.8"/>"#,
            path.join(" ")
        );
        for &(x, y, ci) in &s.points {
            let (px, py) = (sx(x), sy(y));
            let _ = writeln!(
                o,
                r#"<circle cx="{px:.1}" cy="{py:.1}" r="2.5" fill="{color}"/>"#
            );
            if ci > 0.0 {
                let (a, b) = (sy(y - ci), sy(y + ci));
                let _ = writeln!(
                    o,
                    r#"<path d="M{px:.1},{a:.1}V{b:.1}M{:.1},{a:.1}h6M{:.1},{b:.1}h6" stroke="{color}"/>"#,
                    px - 3.0,
                    px - 3.0
                );
            }
        }
        let ly = TOP + 10.0 + 18.0 * k as f64;
        let lx = LEFT + pw + 12.0;
        let _ = writeln!(
            o,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="2"/><text x="{}" y="{}">{}</text>"#,
            lx + 20.0,
            lx + 26.0,
            ly + 4.0,
            esc(&s.name)
        );
    }
    o.push_str("</svg>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(0.0, 100.0), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        let t = ticks(0.13, 0.97);
        assert!(t[0] <= 0.13 && *t.last().unwrap() >= 0.97, "{t:?}");
    }

    #[test]
    fn a_chart_has_one_line_per_series_and_escapes_text() {
        let c = Chart {
            title: "a < b".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![
                Series {
                    name: "s1".into(),
                    points: vec![(0.0, 1.0, 0.5), (1.0, 2.0, 0.0)],
                },
                Series {
                    name: "s2".into(),
                    points: vec![(0.0, 3.0, 0.0)],
                },
            ],
        };
        let svg = render(&c);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("a &lt; b"));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
    }
}

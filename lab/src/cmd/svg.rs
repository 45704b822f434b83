//! Line charts with 95 % confidence bars, for the lab's experiments (`esim
//! coalloc-experiments`, `coorm-experiments`, `coorm-validation`), drawn by esched-report's
//! plotting module: each series its own colour, marker and dash pattern, so that overlapping
//! lines stay visible.

use esched_report::plot::{LineChart, PlotError, Series as PlotSeries};

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

/// The chart as an SVG document, with `caption` (the figure's setting) under it.
pub fn try_render(c: &Chart, caption: &str) -> Result<String, PlotError> {
    LineChart {
        title: c.title.clone(),
        caption: caption.to_string(),
        x_label: c.x_label.clone(),
        y_label: c.y_label.clone(),
        series: c
            .series
            .iter()
            .map(|s| PlotSeries {
                name: s.name.clone(),
                points: s.points.iter().map(|p| (p.0, p.1)).collect(),
                error: s.points.iter().map(|p| p.2).collect(),
                ..PlotSeries::default()
            })
            .collect(),
        ..LineChart::default()
    }
    .svg()
}

/// The chart as an SVG document, with `caption` (the figure's setting: workload, seeds or
/// packs, what the bars are) under it. A chart that cannot be drawn is an SVG that says why,
/// in its place, so that a long experiment's other figures and tables are still written.
pub fn render(c: &Chart, caption: &str) -> String {
    try_render(c, caption).unwrap_or_else(|e| {
        let text = e
            .to_string()
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"60\"><text x=\"10\" y=\"30\">{text}</text></svg>\n"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_has_its_series_and_escapes_text() {
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
        let svg = render(&c, "");
        let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
        let texts: Vec<&str> = doc
            .descendants()
            .filter_map(|n| n.text())
            .map(str::trim)
            .collect();
        for want in ["a < b", "s1", "s2"] {
            assert!(texts.contains(&want), "no {want} in {texts:?}");
        }
    }
}

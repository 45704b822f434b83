//! The one plotting module: Gantt charts of jobs on nodes over time, with utilisation and queue
//! length beneath, and line charts for the papers' figures, on plotters' SVG backend.
//!
//! plotters lays out and draws the axes, grids, labels, series and legends. The job rectangles
//! of a Gantt chart are written as SVG elements of their own, placed with the chart's own
//! coordinate mapping, so that each carries what a reader (or a test) needs and plotters'
//! elements cannot carry: `class="job"`, the job's id in `data-job`, its nodes in `data-nodes`,
//! and a `<title>` shown when hovering over it.
//!
//! Paper figures follow what a reader needs to tell overlapping series apart and read values
//! honestly: every series has its own colour, marker shape and dash pattern; a value beyond
//! the axis is drawn at the axis' edge with an arrowhead and its value written beside it; a
//! percentage axis is 0–100; log axes are labelled in powers of ten; the caption under the
//! chart says what the figure is of (trace, seeds, what the bars are).

use std::fmt::Write as _;
use std::ops::Range;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::nodes::IntervalSet;

/// A picture that could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw {what}: {message}")]
pub struct PlotError {
    what: String,
    message: String,
}

fn err(what: &str) -> impl Fn(String) -> PlotError + '_ {
    move |message| PlotError {
        what: what.to_string(),
        message,
    }
}

type R<T> = Result<T, PlotError>;

/// Series colours: a colour-blind-safe palette (Okabe & Ito), black first.
pub const COLORS: [RGBColor; 8] = [
    RGBColor(0, 0, 0),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 158, 115),
    RGBColor(213, 94, 0),
    RGBColor(0, 114, 178),
    RGBColor(204, 121, 167),
    RGBColor(128, 128, 128),
];

/// Dash patterns (dash, gap) in pixels; `None` is a solid line.
const DASHES: [Option<(u32, u32)>; 5] = [
    None,
    Some((10, 5)),
    Some((3, 4)),
    Some((16, 4)),
    Some((6, 8)),
];

/// Marker shapes, one per series in turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// A filled circle.
    Circle,
    /// A triangle.
    Triangle,
    /// A cross.
    Cross,
    /// A filled square.
    Square,
    /// A hollow circle.
    Ring,
}

const MARKERS: [Marker; 5] = [
    Marker::Circle,
    Marker::Triangle,
    Marker::Square,
    Marker::Cross,
    Marker::Ring,
];

/// Style `k` of a chart: (colour, marker, dash pattern).
pub fn style(k: usize) -> (RGBColor, Marker, Option<(u32, u32)>) {
    (
        COLORS[k % COLORS.len()],
        MARKERS[k % MARKERS.len()],
        DASHES[k % DASHES.len()],
    )
}

/// An axis' scale.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scale {
    /// Linear.
    #[default]
    Linear,
    /// Base-10 logarithmic, labelled in powers of ten.
    Log,
}

/// One line of a chart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// The points, in x order.
    pub points: Vec<(f64, f64)>,
    /// A confidence (or error) half-width per point, drawn as a bar; empty for none.
    pub error: Vec<f64>,
    /// A (low, high) range per point drawn as a bar instead of `error` (e.g. min to max over
    /// runs, around their mean); empty for none.
    pub range: Vec<(f64, f64)>,
    /// Whether the line is a step function (holds its value until the next point).
    pub steps: bool,
    /// No markers (for dense series such as utilisation over time).
    pub no_markers: bool,
}

impl Series {
    /// The bar at point `i`: its `range`, else its `error` around the point; `None` when it
    /// has neither.
    fn bar(&self, i: usize) -> Option<(f64, f64)> {
        if let Some(&r) = self.range.get(i) {
            return Some(r);
        }
        let y = self.points.get(i)?.1;
        self.error.get(i).map(|&e| (y - e, y + e))
    }
}

/// A line chart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LineChart {
    /// Title, above the plot.
    pub title: String,
    /// What the figure shows and how it was made, under the plot.
    pub caption: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// X scale.
    pub x_scale: Scale,
    /// Y scale.
    pub y_scale: Scale,
    /// The x range shown; default: the data's.
    pub x_range: Option<(f64, f64)>,
    /// The y range shown; default: the data's (from 0 on a linear axis). Values beyond it are
    /// drawn at its edge, marked as clipped.
    pub y_range: Option<(f64, f64)>,
    /// The y values are percentages: the axis is 0–100 whatever the data.
    pub percent: bool,
    /// The lines.
    pub series: Vec<Series>,
    /// Size in pixels (default 760 × 480).
    pub size: Option<(u32, u32)>,
}

impl LineChart {
    /// The chart as an SVG document.
    pub fn svg(&self) -> R<String> {
        let (w, h) = self.size.unwrap_or((760, 480));
        let mut buf = String::new();
        {
            let root = SVGBackend::with_string(&mut buf, (w, h)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| err("chart")(e.to_string()))?;
            let caption_h = caption_height(&self.caption, w);
            let (plot, bottom) = root.split_vertically(h - caption_h);
            self.draw_on(&plot)?;
            draw_caption(&bottom, &self.caption)?;
            root.present().map_err(|e| err("chart")(e.to_string()))?;
        }
        Ok(buf)
    }

    /// The x and y ranges drawn.
    fn ranges(&self) -> (Range<f64>, Range<f64>) {
        let pts = || self.series.iter().flat_map(|s| s.points.iter());
        let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
        let (mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY);
        for (k, s) in self.series.iter().enumerate() {
            let _ = k;
            for (i, &(x, y)) in s.points.iter().enumerate() {
                let (lo, hi) = s.bar(i).unwrap_or((y, y));
                if x.is_finite() && (self.x_scale == Scale::Linear || x > 0.0) {
                    x0 = x0.min(x);
                    x1 = x1.max(x);
                }
                if y.is_finite() && (self.y_scale == Scale::Linear || y > 0.0) {
                    y0 = y0.min(lo.min(y));
                    y1 = y1.max(hi.max(y));
                }
            }
        }
        let _ = pts;
        if !x0.is_finite() {
            (x0, x1) = (0.0, 1.0);
        }
        if !y0.is_finite() {
            (y0, y1) = (0.0, 1.0);
        }
        let x = match self.x_range {
            Some((a, b)) => a..b,
            None => pad(x0, x1, self.x_scale, false),
        };
        let y = if self.percent {
            0.0..100.0
        } else {
            match self.y_range {
                Some((a, b)) => a..b,
                None => pad(y0, y1, self.y_scale, true),
            }
        };
        (x, y)
    }

    fn draw_on(&self, area: &DrawingArea<SVGBackend<'_>, Shift>) -> R<()> {
        let (xr, yr) = self.ranges();
        let e = err(&self.title);
        let mut builder = ChartBuilder::on(area);
        builder
            .caption(&self.title, ("sans-serif", 17))
            .margin(12)
            .margin_right(20)
            .x_label_area_size(42)
            .y_label_area_size(62);
        let pow10 = |v: &f64| pow10_label(*v);
        let plain = |v: &f64| number_label(*v);
        macro_rules! body {
            ($chart:expr, $xfmt:expr, $yfmt:expr, $xlog:expr, $ylog:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(&self.x_label)
                    .y_desc(&self.y_label)
                    .x_label_formatter(&$xfmt)
                    .y_label_formatter(&$yfmt)
                    .light_line_style(RGBColor(235, 235, 235))
                    .draw()
                    .map_err(|x| e(x.to_string()))?;
                let (lo, hi) = (yr.start, yr.end);
                for (k, s) in self.series.iter().enumerate() {
                    let (color, marker, dash) = style(k);
                    let line = color.stroke_width(2);
                    let keep = |&(x, y): &(f64, f64)| {
                        x.is_finite() && y.is_finite() && (!$xlog || x > 0.0) && (!$ylog || y > 0.0)
                    };
                    let clamp = |(x, y): (f64, f64)| (x, y.clamp(lo, hi));
                    let mut pts: Vec<(f64, f64)> =
                        s.points.iter().copied().filter(keep).map(clamp).collect();
                    if s.steps {
                        pts = step_points(&pts, xr.end);
                    }
                    let anno = match dash {
                        None => chart.draw_series(LineSeries::new(pts, line)),
                        Some((d, g)) => chart.draw_series(DashedLineSeries::new(pts, d, g, line)),
                    }
                    .map_err(|x| e(x.to_string()))?;
                    anno.label(s.name.clone())
                        .legend(move |(x, y)| legend_sample(x, y, color, marker, dash));
                    for (i, &(x, y)) in s.points.iter().enumerate() {
                        let Some((a, b)) = s.bar(i) else {
                            continue;
                        };
                        if !keep(&(x, y)) || a >= b {
                            continue;
                        }
                        let (a, b) = (a.clamp(lo, hi), b.clamp(lo, hi));
                        chart
                            .draw_series(std::iter::once(PathElement::new(
                                vec![(x, a), (x, b)],
                                color.stroke_width(1),
                            )))
                            .map_err(|x| e(x.to_string()))?;
                    }
                    if !s.no_markers {
                        for &(x, y) in s.points.iter().filter(|p| keep(p)) {
                            if y > hi || y < lo {
                                continue;
                            }
                            let area = chart.plotting_area();
                            let p = (x, y);
                            match marker {
                                Marker::Circle => area.draw(&Circle::new(p, 4, color.filled())),
                                Marker::Ring => {
                                    area.draw(&Circle::new(p, 4, color.stroke_width(2)))
                                }
                                Marker::Triangle => {
                                    area.draw(&TriangleMarker::new(p, 5, color.filled()))
                                }
                                Marker::Cross => {
                                    area.draw(&Cross::new(p, 4, color.stroke_width(2)))
                                }
                                Marker::Square => area.draw(
                                    &(EmptyElement::at(p)
                                        + Rectangle::new([(-4, -4), (4, 4)], color.filled())),
                                ),
                            }
                            .map_err(|x| e(x.to_string()))?;
                        }
                    }
                    // Values beyond the axis: an arrowhead at the edge, the value beside it.
                    for &(x, y) in s.points.iter().filter(|p| keep(p)) {
                        if y <= hi && y >= lo {
                            continue;
                        }
                        let up = y > hi;
                        let at = chart.backend_coord(&(x, if up { hi } else { lo }));
                        let tip = if up { -9 } else { 9 };
                        let root = chart.plotting_area().strip_coord_spec();
                        let origin = root.get_base_pixel();
                        let rel = |(px, py): (i32, i32)| (px - origin.0, py - origin.1);
                        let (px, py) = rel(at);
                        root.draw(&Polygon::new(
                            vec![(px - 6, py), (px + 6, py), (px, py + tip)],
                            color.filled(),
                        ))
                        .map_err(|x| e(x.to_string()))?;
                        root.draw(&Text::new(
                            format!("{} {}", if up { "↑" } else { "↓" }, number_label(y)),
                            (px + 8, if up { py + 2 } else { py - 14 }),
                            ("sans-serif", 12).into_font().color(&color),
                        ))
                        .map_err(|x| e(x.to_string()))?;
                    }
                }
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK.mix(0.4))
                    .position(SeriesLabelPosition::UpperLeft)
                    .draw()
                    .map_err(|x| e(x.to_string()))?;
            }};
        }
        match (self.x_scale, self.y_scale) {
            (Scale::Linear, Scale::Linear) => body!(
                builder
                    .build_cartesian_2d(xr.clone(), yr.clone())
                    .map_err(|x| e(x.to_string()))?,
                plain,
                plain,
                false,
                false
            ),
            (Scale::Log, Scale::Linear) => body!(
                builder
                    .build_cartesian_2d(xr.clone().log_scale(), yr.clone())
                    .map_err(|x| e(x.to_string()))?,
                pow10,
                plain,
                true,
                false
            ),
            (Scale::Linear, Scale::Log) => body!(
                builder
                    .build_cartesian_2d(xr.clone(), yr.clone().log_scale())
                    .map_err(|x| e(x.to_string()))?,
                plain,
                pow10,
                false,
                true
            ),
            (Scale::Log, Scale::Log) => body!(
                builder
                    .build_cartesian_2d(xr.clone().log_scale(), yr.clone().log_scale())
                    .map_err(|x| e(x.to_string()))?,
                pow10,
                pow10,
                true,
                true
            ),
        }
        Ok(())
    }
}

/// Charts stacked top to bottom in one SVG document, under one title and over one caption
/// (e.g. one chart per pool).
pub fn stacked(title: &str, caption: &str, charts: &[LineChart]) -> R<String> {
    let w = charts
        .iter()
        .filter_map(|c| c.size)
        .map(|s| s.0)
        .max()
        .unwrap_or(760);
    let heights: Vec<u32> = charts.iter().map(|c| c.size.map_or(260, |s| s.1)).collect();
    stack(title, title, caption, w, &heights, |k, area| {
        charts[k].draw_on(area)?;
        Ok(String::new())
    })
}

/// A document of charts top to bottom, `heights[k]` pixels for chart k, under `title` and over
/// `caption`, `w` pixels wide. `draw(k, area)` draws chart k on its area and returns the SVG
/// elements of its own to add to the document. Errors name the picture `what`.
fn stack(
    title: &str,
    what: &str,
    caption: &str,
    w: u32,
    heights: &[u32],
    mut draw: impl FnMut(usize, &DrawingArea<SVGBackend<'_>, Shift>) -> R<String>,
) -> R<String> {
    let caption_h = caption_height(caption, w);
    let title_h = if title.is_empty() { 0 } else { 30 };
    let h = title_h + heights.iter().sum::<u32>() + caption_h;
    let e = err(what);
    let mut buf = String::new();
    let mut overlay = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(x.to_string()))?;
        let (head, mut rest) = root.split_vertically(title_h);
        if title_h > 0 {
            head.draw(&Text::new(
                title.to_string(),
                (14, 8),
                ("sans-serif", 17).into_font(),
            ))
            .map_err(|x| e(x.to_string()))?;
        }
        for (k, h) in heights.iter().enumerate() {
            let (this, below) = rest.split_vertically(*h);
            rest = below;
            overlay.push_str(&draw(k, &this)?);
        }
        draw_caption(&rest, caption)?;
        root.present().map_err(|x| e(x.to_string()))?;
    }
    Ok(insert_before_end(buf, &overlay))
}

/// A range around `[lo, hi]` with a little room; from 0 for a non-negative linear y axis.
fn pad(lo: f64, hi: f64, scale: Scale, is_y: bool) -> Range<f64> {
    match scale {
        Scale::Log => {
            let a = 10f64.powf(lo.max(f64::MIN_POSITIVE).log10().floor());
            let b = 10f64.powf(hi.max(a).log10().ceil());
            a..if b > a { b } else { a * 10.0 }
        }
        Scale::Linear => {
            let lo = if is_y && lo >= 0.0 { 0.0 } else { lo };
            let span = (hi - lo).abs().max(1e-9);
            let extra = if is_y { span * 0.08 } else { 0.0 };
            if hi > lo {
                lo..hi + extra
            } else {
                lo - 1.0..hi + 1.0
            }
        }
    }
}

/// A step function's corners: each value held until the next point, the last until `end`.
fn step_points(pts: &[(f64, f64)], end: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(pts.len() * 2);
    for (k, &(x, y)) in pts.iter().enumerate() {
        out.push((x, y));
        let next = pts.get(k + 1).map_or(end.max(x), |p| p.0);
        out.push((next, y));
    }
    out
}

fn legend_sample(
    x: i32,
    y: i32,
    color: RGBColor,
    marker: Marker,
    dash: Option<(u32, u32)>,
) -> LegendSample {
    LegendSample {
        at: (x, y),
        color,
        marker,
        dash,
    }
}

/// A legend's sample of a series: its dash pattern with its marker in the middle. An element
/// of its own because plotters' legend takes one concrete element type per series.
struct LegendSample {
    at: (i32, i32),
    color: RGBColor,
    marker: Marker,
    dash: Option<(u32, u32)>,
}

impl<'a> plotters::element::PointCollection<'a, (i32, i32)> for &'a LegendSample {
    type Point = &'a (i32, i32);
    type IntoIter = std::iter::Once<&'a (i32, i32)>;
    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.at)
    }
}

impl<DB: DrawingBackend> plotters::element::Drawable<DB> for LegendSample {
    fn draw<I: Iterator<Item = (i32, i32)>>(
        &self,
        mut pos: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), plotters_backend::DrawingErrorKind<DB::ErrorType>> {
        let Some((x, y)) = pos.next() else {
            return Ok(());
        };
        let line = self.color.stroke_width(2);
        let (d, g) = self.dash.map_or((24, 0), |(d, g)| (d as i32, g as i32));
        let mut a = 0;
        while a < 24 {
            let b = (a + d).min(24);
            backend.draw_line((x + a, y), (x + b, y), &line)?;
            a = b + g.max(if g == 0 { 24 } else { 0 });
        }
        let c = (x + 12, y);
        let fill = self.color.filled();
        match self.marker {
            Marker::Circle => backend.draw_circle(c, 4, &fill, true),
            Marker::Ring => backend.draw_circle(c, 4, &line, false),
            Marker::Square => {
                backend.draw_rect((c.0 - 4, c.1 - 4), (c.0 + 4, c.1 + 4), &fill, true)
            }
            Marker::Triangle => backend.fill_polygon(
                vec![(c.0, c.1 - 5), (c.0 - 5, c.1 + 4), (c.0 + 5, c.1 + 4)],
                &fill,
            ),
            Marker::Cross => {
                backend.draw_line((c.0 - 4, c.1 - 4), (c.0 + 4, c.1 + 4), &line)?;
                backend.draw_line((c.0 - 4, c.1 + 4), (c.0 + 4, c.1 - 4), &line)
            }
        }
    }
}

/// `10ⁿ` for a power of ten, nothing otherwise (log axes are labelled in powers of ten only).
pub fn pow10_label(v: f64) -> String {
    if v <= 0.0 {
        return String::new();
    }
    let e = v.log10();
    if (e - e.round()).abs() > 1e-6 {
        return String::new();
    }
    let e = e.round() as i32;
    format!("10{}", superscript(e))
}

fn superscript(n: i32) -> String {
    n.to_string()
        .chars()
        .map(|c| match c {
            '-' => '⁻',
            '0' => '⁰',
            '1' => '¹',
            '2' => '²',
            '3' => '³',
            '4' => '⁴',
            '5' => '⁵',
            '6' => '⁶',
            '7' => '⁷',
            '8' => '⁸',
            _ => '⁹',
        })
        .collect()
}

/// A number as a reader wants it on an axis: no float noise (`3.5`, not `3.5000000000000004`).
pub fn number_label(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    let s = if a >= 100.0 || (v.round() - v).abs() < 1e-9 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.01 {
        format!("{v:.2}")
    } else {
        format!("{v:.1e}")
    };
    if s.contains('.') && !s.contains('e') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Caption lines of at most this many characters.
fn wrap(text: &str, width_px: u32) -> Vec<String> {
    let max = (width_px as usize / 7).max(20);
    let mut lines = Vec::new();
    for para in text.split('\n') {
        let mut line = String::new();
        for word in para.split_whitespace() {
            if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > max {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        if !line.is_empty() {
            lines.push(line);
        }
    }
    lines
}

fn caption_height(text: &str, width: u32) -> u32 {
    let n = wrap(text, width).len() as u32;
    if n == 0 {
        0
    } else {
        n * 16 + 12
    }
}

fn draw_caption(area: &DrawingArea<SVGBackend<'_>, Shift>, text: &str) -> R<()> {
    let (w, _) = area.dim_in_pixel();
    for (k, line) in wrap(text, w).iter().enumerate() {
        area.draw(&Text::new(
            line.clone(),
            (14, 4 + 16 * k as i32),
            ("sans-serif", 13).into_font().color(&RGBColor(60, 60, 60)),
        ))
        .map_err(|e| err("caption")(e.to_string()))?;
    }
    Ok(())
}

/// What a job of a Gantt chart is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    /// It has run (or runs): drawn filled.
    Ran,
    /// It is expected to run then (a plan): drawn hatched-light with a dashed outline.
    Expected,
    /// It was running before the chart's subject (e.g. the jobs running at a what-if's
    /// snapshot, under the pending jobs it compares): drawn grey.
    Earlier,
}

/// A job of a Gantt chart.
#[derive(Clone, Debug, PartialEq)]
pub struct GanttJob {
    /// Its id (in `data-job` and the tooltip).
    pub id: String,
    /// More for the tooltip (name, user, state).
    pub label: String,
    /// Start, seconds on the chart's time axis.
    pub start: f64,
    /// End, seconds.
    pub end: f64,
    /// The nodes, as indices on the chart's node axis.
    pub nodes: IntervalSet,
    /// What it is.
    pub kind: JobKind,
}

/// How the time axis is labelled.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum TimeAxis {
    /// Seconds from the trace's origin, labelled in hours or days.
    #[default]
    Relative,
    /// Seconds from an instant named by the text (e.g. `the snapshot`), labelled as
    /// [`TimeAxis::Relative`].
    Since(&'static str),
    /// Epoch seconds, labelled as clock time (`HH:MM`, with the day when it changes) in a zone
    /// this many seconds east of UTC.
    Clock {
        /// The zone's offset from UTC, seconds.
        utc_offset: i64,
    },
}

/// A Gantt chart of jobs on nodes over time, with line panels beneath sharing its time axis.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gantt {
    /// Title.
    pub title: String,
    /// Caption (what is drawn, how it was made).
    pub caption: String,
    /// Nodes on the node axis.
    pub nodes: u32,
    /// Node groups drawn as bands with their names (e.g. pools), as (name, first node, count).
    pub groups: Vec<(String, u32, u32)>,
    /// The jobs.
    pub jobs: Vec<GanttJob>,
    /// The time window drawn, seconds; default: from the first start to the last end.
    pub window: Option<(f64, f64)>,
    /// How time is labelled.
    pub time: TimeAxis,
    /// A vertical line at this instant (e.g. "now").
    pub now: Option<f64>,
    /// Panels beneath: (y label, y is a percentage, series).
    pub panels: Vec<Panel>,
    /// Width in pixels (default 1100).
    pub width: Option<u32>,
    /// Height of the chart itself in pixels, without its panels (default 460).
    pub gantt_height: Option<u32>,
    /// A short name of the chart, for a reader of the SVG: its elements are then grouped in
    /// `<g class="gantt" data-key="KEY">`, opened by the plotting area's frame.
    pub key: Option<String>,
    /// The nodes' names by index, where known (the text chart labels its rows with them);
    /// a node without one is shown by its index.
    pub node_names: Vec<String>,
}

/// A line panel under a Gantt chart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Panel {
    /// Y axis label.
    pub y_label: String,
    /// The y values are percentages (the axis is 0–100).
    pub percent: bool,
    /// The lines.
    pub series: Vec<Series>,
}

/// Fill colours of jobs (a muted palette; the job id picks one, so neighbours differ).
const JOB_FILLS: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

impl Gantt {
    /// The window drawn.
    pub fn window(&self) -> (f64, f64) {
        if let Some(w) = self.window {
            return w;
        }
        let a = self
            .jobs
            .iter()
            .map(|j| j.start)
            .fold(f64::INFINITY, f64::min);
        let b = self
            .jobs
            .iter()
            .map(|j| j.end)
            .fold(f64::NEG_INFINITY, f64::max);
        let b = self.now.map_or(b, |n| b.max(n));
        if a.is_finite() && b > a {
            (a, b)
        } else if a.is_finite() {
            (a, a + 1.0)
        } else {
            (0.0, 1.0)
        }
    }

    /// The jobs drawn: those that overlap the window.
    pub fn visible(&self) -> impl Iterator<Item = &GanttJob> {
        let (a, b) = self.window();
        self.jobs
            .iter()
            .filter(move |j| j.end > a && j.start < b && !j.nodes.is_empty())
    }

    /// The chart as an SVG document, its caption beneath.
    pub fn svg(&self) -> R<String> {
        stacked_gantts("", &self.caption, std::slice::from_ref(self))
    }

    /// The height of the chart with its panels, pixels (without the caption).
    pub fn height(&self) -> u32 {
        self.gantt_height.unwrap_or(460) + PANEL_HEIGHT * self.panels.len() as u32
    }

    /// Draws the chart and its panels on `area` ([`Gantt::height`] pixels high); returns the
    /// SVG elements of its jobs, to be added to the document (in a group of class `gantt`,
    /// with `data-key`, when the chart has a key).
    fn draw_on(&self, area: &DrawingArea<SVGBackend<'_>, Shift>) -> R<String> {
        let e = err(&self.title);
        // The chart's x coordinates are in the unit its labels use (hours on a day's chart), so
        // that plotters' round tick values fall on round hours, not on round seconds.
        let (w0, w1) = self.window();
        let unit = axis_unit(self.time, w1 - w0);
        let (t0, t1) = (w0 / unit, w1 / unit);
        let label = time_formatter(self.time, w1 - w0);
        let fmt = |v: f64| label(v * unit);
        let mut overlay = String::new();
        let (top, rest) = area.split_vertically(self.gantt_height.unwrap_or(460));
        let nodes = f64::from(self.nodes.max(1));
        let mut chart = ChartBuilder::on(&top)
            .caption(&self.title, ("sans-serif", 17))
            .margin(10)
            .margin_right(24)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d(t0..t1, 0f64..nodes)
            .map_err(|x| e(x.to_string()))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc(time_desc(self.time))
            .y_desc("node")
            .x_label_formatter(&|v| fmt(*v))
            .y_label_formatter(&|v| number_label(*v))
            .light_line_style(RGBColor(240, 240, 240))
            .draw()
            .map_err(|x| e(x.to_string()))?;
        if let Some(key) = &self.key {
            // The plotting area's frame opens the group: where this chart is on the page.
            let (x0, y0) = chart.backend_coord(&(t0, nodes));
            let (x1, y1) = chart.backend_coord(&(t1, 0.0));
            let _ = writeln!(
                overlay,
                r#"<g class="gantt" data-key="{}"><rect class="frame" x="{x0}" y="{y0}" width="{}" height="{}" fill="none"/>"#,
                xml_escape(key),
                (x1 - x0).max(1),
                (y1 - y0).max(1),
            );
        }
        for (k, (name, first, count)) in self.groups.iter().enumerate() {
            if k > 0 {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(t0, f64::from(*first)), (t1, f64::from(*first))],
                        BLACK.stroke_width(1),
                    )))
                    .map_err(|x| e(x.to_string()))?;
            }
            let (px, py) = chart.backend_coord(&(t0, f64::from(first + count)));
            let _ = writeln!(
                overlay,
                r##"<text class="group" x="{}" y="{}" font-family="sans-serif" font-size="11" fill="#333">{}</text>"##,
                px + 4,
                py + 12,
                xml_escape(name)
            );
        }
        if let Some(now) = self.now.map(|n| n / unit).filter(|n| *n >= t0 && *n <= t1) {
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(now, 0.0), (now, nodes)],
                    6,
                    4,
                    RED.stroke_width(2),
                ))
                .map_err(|x| e(x.to_string()))?;
        }
        for j in self.visible() {
            let fill = JOB_FILLS[fill_index(&j.id)];
            let (a, b) = ((j.start / unit).max(t0), (j.end / unit).min(t1));
            for r in j.nodes.ranges() {
                // Node k occupies [k, k+1) on the node axis, drawn upwards.
                let (x0, y0) = chart.backend_coord(&(a, f64::from(r.end)));
                let (x1, y1) = chart.backend_coord(&(b, f64::from(r.start)));
                let (fill, style, opacity) = match j.kind {
                    JobKind::Ran => (fill, r##"stroke="#333" stroke-width="0.4""##, "0.9"),
                    JobKind::Expected => (
                        fill,
                        r##"stroke="#333" stroke-width="1" stroke-dasharray="4 3""##,
                        "0.35",
                    ),
                    JobKind::Earlier => ("#b0b0b0", r##"stroke="#333" stroke-width="0.4""##, "0.9"),
                };
                let _ = writeln!(
                    overlay,
                    r#"<rect class="job{}" data-job="{}" data-nodes="{}" x="{x0}" y="{y0}" width="{}" height="{}" fill="{fill}" fill-opacity="{opacity}" {style}><title>{}</title></rect>"#,
                    match j.kind {
                        JobKind::Expected => " expected",
                        JobKind::Earlier => " earlier",
                        JobKind::Ran => "",
                    },
                    xml_escape(&j.id),
                    j.nodes,
                    (x1 - x0).max(1),
                    (y1 - y0).max(1),
                    xml_escape(&format!(
                        "job {}{}{}: {} – {}, nodes {}",
                        j.id,
                        if j.label.is_empty() { "" } else { " " },
                        j.label,
                        label(j.start),
                        label(j.end),
                        j.nodes
                    )),
                );
            }
        }
        if self.key.is_some() {
            overlay.push_str("</g>\n");
        }
        let mut area = rest;
        for p in &self.panels {
            let (this, below) = area.split_vertically(PANEL_HEIGHT);
            area = below;
            let chart = LineChart {
                title: String::new(),
                caption: String::new(),
                x_label: String::new(),
                y_label: p.y_label.clone(),
                x_range: Some((t0, t1)),
                percent: p.percent,
                series: p
                    .series
                    .iter()
                    .map(|s| {
                        let scaled: Vec<(f64, f64)> =
                            s.points.iter().map(|&(x, y)| (x / unit, y)).collect();
                        Series {
                            points: clip_x(&scaled, t0, t1),
                            ..s.clone()
                        }
                    })
                    .collect(),
                ..LineChart::default()
            };
            draw_panel(&chart, &this, &fmt)?;
        }
        Ok(overlay)
    }
}

/// The height of a line panel under a Gantt chart, pixels.
const PANEL_HEIGHT: u32 = 170;

/// Gantt charts stacked top to bottom in one SVG document, under one title and over one
/// caption, each with its own time axis (give them one `window` to compare them instant by
/// instant, as the plans of `esim whatif` are).
pub fn stacked_gantts(title: &str, caption: &str, charts: &[Gantt]) -> R<String> {
    let w = charts.iter().filter_map(|c| c.width).max().unwrap_or(1100);
    let heights: Vec<u32> = charts.iter().map(Gantt::height).collect();
    // Errors name the picture by its title, else by its first chart's.
    let what = match (title, charts.first()) {
        ("", Some(c)) => c.title.as_str(),
        _ => title,
    };
    stack(title, what, caption, w, &heights, |k, area| {
        charts[k].draw_on(area)
    })
}

/// The points of a step series inside `[t0, t1]`, with the value holding at `t0`.
fn clip_x(pts: &[(f64, f64)], t0: f64, t1: f64) -> Vec<(f64, f64)> {
    let first = pts.partition_point(|p| p.0 <= t0);
    let mut out = Vec::new();
    if first > 0 {
        out.push((t0, pts[first - 1].1));
    }
    out.extend(pts[first..].iter().take_while(|p| p.0 <= t1).copied());
    out
}

fn draw_panel(
    c: &LineChart,
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    fmt: &dyn Fn(f64) -> String,
) -> R<()> {
    let e = err("panel");
    let (xr, yr) = c.ranges();
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .margin_right(24)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d(xr.clone(), yr)
        .map_err(|x| e(x.to_string()))?;
    chart
        .configure_mesh()
        .y_desc(&c.y_label)
        .x_label_formatter(&|v| fmt(*v))
        .y_label_formatter(&|v| number_label(*v))
        .y_labels(5)
        .light_line_style(RGBColor(240, 240, 240))
        .draw()
        .map_err(|x| e(x.to_string()))?;
    for (k, s) in c.series.iter().enumerate() {
        let (color, _, dash) = style(k);
        let pts = if s.steps {
            step_points(&s.points, xr.end)
        } else {
            s.points.clone()
        };
        let line = color.stroke_width(1);
        match dash {
            None => chart.draw_series(LineSeries::new(pts, line)),
            Some((d, g)) => chart.draw_series(DashedLineSeries::new(pts, d, g, line)),
        }
        .map_err(|x| e(x.to_string()))?
        .label(s.name.clone())
        .legend(move |(x, y)| legend_sample(x, y, color, Marker::Circle, dash));
    }
    if c.series.len() > 1 {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(|x| e(x.to_string()))?;
    }
    Ok(())
}

fn fill_index(id: &str) -> usize {
    // FNV-1a: stable across runs and platforms.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    (h % JOB_FILLS.len() as u64) as usize
}

fn time_desc(t: TimeAxis) -> String {
    match t {
        TimeAxis::Relative => "time from the trace's start".into(),
        TimeAxis::Since(origin) => format!("time from {origin}"),
        TimeAxis::Clock { .. } => "time".into(),
    }
}

/// The unit of a time axis' coordinates, seconds: the one its labels are written in
/// ([`time_formatter`]), so that round coordinates are round labels; seconds for clock time.
fn axis_unit(t: TimeAxis, span: f64) -> f64 {
    match t {
        TimeAxis::Clock { .. } => 1.0,
        TimeAxis::Relative | TimeAxis::Since(_) => {
            if span >= 4.0 * 86_400.0 {
                86_400.0
            } else if span >= 4.0 * 3600.0 {
                3600.0
            } else if span >= 240.0 {
                60.0
            } else {
                1.0
            }
        }
    }
}

/// A formatter of instants on the time axis.
pub fn time_formatter(t: TimeAxis, span: f64) -> impl Fn(f64) -> String {
    move |v: f64| match t {
        TimeAxis::Relative | TimeAxis::Since(_) => {
            if span >= 4.0 * 86_400.0 {
                format!("{} d", number_label(v / 86_400.0))
            } else if span >= 4.0 * 3600.0 {
                format!("{} h", number_label(v / 3600.0))
            } else if span >= 240.0 {
                format!("{} min", number_label(v / 60.0))
            } else {
                format!("{} s", number_label(v))
            }
        }
        TimeAxis::Clock { utc_offset } => {
            let local = v.round() as i64 + utc_offset;
            let day = local.div_euclid(86_400);
            let sod = local.rem_euclid(86_400);
            let (hh, mm, ss) = (sod / 3600, sod / 60 % 60, sod % 60);
            if span > 86_400.0 {
                let (_, m, d) = civil(day);
                format!("{m:02}-{d:02} {hh:02}:{mm:02}")
            } else if span < 600.0 {
                format!("{hh:02}:{mm:02}:{ss:02}")
            } else {
                format!("{hh:02}:{mm:02}")
            }
        }
    }
}

/// An instant, ms since the epoch, as people read it: `2026-11-28 06:01:37 UTC`.
pub fn utc_timestamp(ms: u64) -> String {
    let secs = i64::try_from(ms / 1000).unwrap_or(i64::MAX);
    let (y, m, d) = civil(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    )
}

/// The civil date of a day count from 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn insert_before_end(mut svg: String, extra: &str) -> String {
    if let Some(k) = svg.rfind("</svg>") {
        svg.insert_str(k, extra);
    }
    svg
}

/// The two panels a schedule's Gantt chart has beneath it: utilisation (percent of `total`
/// nodes busy) and queue length over time, from jobs' (submit, start, end, nodes).
pub fn load_panels(jobs: &[(f64, f64, f64, u32)], total: u32) -> Vec<Panel> {
    let (util, queue) = utilisation_and_queue(jobs, total);
    vec![
        Panel {
            y_label: "utilisation (%)".into(),
            percent: true,
            series: vec![util],
        },
        Panel {
            y_label: "queued jobs".into(),
            percent: false,
            series: vec![queue],
        },
    ]
}

/// Utilisation (percent of `total` nodes busy) and queue length (jobs submitted, not yet
/// started) over time, as step series, from jobs' (submit, start, end, nodes). Times in the
/// unit given; each series has a point per change.
pub fn utilisation_and_queue(jobs: &[(f64, f64, f64, u32)], total: u32) -> (Series, Series) {
    let mut busy: Vec<(f64, i64)> = Vec::with_capacity(jobs.len() * 2);
    let mut queue: Vec<(f64, i64)> = Vec::with_capacity(jobs.len() * 2);
    for &(submit, start, end, nodes) in jobs {
        busy.push((start, i64::from(nodes)));
        busy.push((end, -i64::from(nodes)));
        queue.push((submit, 1));
        queue.push((start, -1));
    }
    let steps = |mut ev: Vec<(f64, i64)>, scale: f64| {
        ev.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut out: Vec<(f64, f64)> = Vec::new();
        let mut level = 0i64;
        for (t, d) in ev {
            level += d;
            let v = level as f64 * scale;
            match out.last_mut() {
                Some(last) if last.0 == t => last.1 = v,
                _ => out.push((t, v)),
            }
        }
        out
    };
    let scale = if total > 0 {
        100.0 / f64::from(total)
    } else {
        0.0
    };
    (
        Series {
            name: "utilisation".into(),
            points: steps(busy, scale),
            steps: true,
            no_markers: true,
            ..Series::default()
        },
        Series {
            name: "queue length".into(),
            points: steps(queue, 1.0),
            steps: true,
            no_markers: true,
            ..Series::default()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_read_as_utc_dates() {
        assert_eq!(utc_timestamp(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_timestamp(1_795_845_657_808), "2026-11-28 06:00:57 UTC");
        assert_eq!(utc_timestamp(951_782_400_000), "2000-02-29 00:00:00 UTC");
    }

    fn doc(svg: &str) -> roxmltree::Document<'_> {
        roxmltree::Document::parse(svg).expect("well-formed SVG")
    }

    fn texts(d: &roxmltree::Document<'_>) -> Vec<String> {
        d.descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text().map(|t| t.trim().to_string()))
            .collect()
    }

    fn job(id: u32, start: f64, end: f64, nodes: Range<u32>) -> GanttJob {
        GanttJob {
            id: id.to_string(),
            label: String::new(),
            start,
            end,
            nodes: IntervalSet::new(vec![nodes]),
            kind: JobKind::Ran,
        }
    }

    #[test]
    fn a_days_chart_counts_in_hours_and_stacks_line_up() {
        let chart = |key: &str, start: f64| Gantt {
            key: Some(key.into()),
            nodes: 4,
            jobs: vec![job(1, start, 86_400.0, 0..4)],
            window: Some((0.0, 86_400.0)),
            time: TimeAxis::Since("the snapshot"),
            panels: load_panels(&[(0.0, start, 86_400.0, 4)], 4),
            gantt_height: Some(300),
            ..Gantt::default()
        };
        let svg = stacked_gantts(
            "",
            "two plans",
            &[chart("a", 43_200.0), chart("b", 21_600.0)],
        )
        .unwrap();
        let d = doc(&svg);
        // Ticks fall on whole hours: plotters' round values are in the labels' unit.
        let hours: Vec<String> = texts(&d)
            .into_iter()
            .filter(|t| t.ends_with(" h"))
            .collect();
        assert!(hours.len() >= 6, "{hours:?}");
        assert!(
            hours
                .iter()
                .all(|t| t.trim_end_matches(" h").parse::<u32>().is_ok()),
            "{hours:?}"
        );
        let num = |n: roxmltree::Node, a: &str| -> f64 { n.attribute(a).unwrap().parse().unwrap() };
        let groups: Vec<_> = d
            .descendants()
            .filter(|n| n.attribute("class") == Some("gantt"))
            .collect();
        assert_eq!(groups.len(), 2);
        let mut tops = Vec::new();
        for (g, start) in groups.iter().zip([43_200.0, 21_600.0]) {
            let frame = g.children().find(|c| c.has_tag_name("rect")).unwrap();
            let job = g
                .children()
                .find(|c| c.attribute("class") == Some("job"))
                .unwrap();
            // The job starts where its share of the day puts it on the frame.
            let want = num(frame, "x") + num(frame, "width") * start / 86_400.0;
            assert!(
                (num(job, "x") - want).abs() <= 1.5,
                "{} vs {want}",
                num(job, "x")
            );
            tops.push(num(frame, "y"));
        }
        assert!(tops[1] > tops[0] + 300.0, "{tops:?}");
    }

    #[test]
    fn a_gantt_has_one_rect_per_job_range_in_the_window() {
        let mut split = job(3, 5.0, 9.0, 0..1);
        split.nodes = IntervalSet::new(vec![0..1, 3..4]);
        let g = Gantt {
            title: "t <&>".into(),
            caption: "KTH & co".into(),
            nodes: 4,
            groups: vec![],
            jobs: vec![
                job(1, 0.0, 4.0, 0..2),
                job(2, 2.0, 6.0, 2..4),
                split,
                job(4, 50.0, 60.0, 0..4),
            ],
            window: Some((0.0, 10.0)),
            time: TimeAxis::Relative,
            now: None,
            panels: vec![Panel {
                y_label: "utilisation (%)".into(),
                percent: true,
                series: vec![utilisation_and_queue(&[(0.0, 0.0, 4.0, 2)], 4).0],
            }],
            ..Gantt::default()
        };
        let svg = g.svg().unwrap();
        let d = doc(&svg);
        let rects: Vec<_> = d
            .descendants()
            .filter(|n| {
                n.attribute("class")
                    .is_some_and(|c| c.split(' ').any(|c| c == "job"))
            })
            .collect();
        assert_eq!(
            rects.len(),
            4,
            "jobs 1, 2 and two ranges of 3; job 4 is outside"
        );
        let ids: std::collections::BTreeSet<_> = rects
            .iter()
            .filter_map(|r| r.attribute("data-job"))
            .collect();
        assert_eq!(ids.into_iter().collect::<Vec<_>>(), ["1", "2", "3"]);
        assert!(texts(&d).iter().any(|t| t.contains("KTH & co")));
    }

    #[test]
    fn clipped_values_are_marked_and_percentages_stay_in_0_to_100() {
        let c = LineChart {
            title: "gang".into(),
            caption: "trace x, 3 seeds".into(),
            x_label: "load".into(),
            y_label: "slowdown".into(),
            y_range: Some((0.0, 4.0)),
            series: vec![Series {
                name: "Gang".into(),
                points: vec![(1.0, 1.0), (2.0, 58.7)],
                ..Series::default()
            }],
            ..LineChart::default()
        };
        let d_svg = c.svg().unwrap();
        let d = doc(&d_svg);
        assert!(texts(&d).iter().any(|t| t.contains("↑ 58.7")), "{d_svg}");
        let p = LineChart {
            percent: true,
            series: vec![Series {
                name: "u".into(),
                points: vec![(0.0, 20.0), (1.0, 30.0)],
                ..Series::default()
            }],
            ..LineChart::default()
        };
        assert_eq!(p.ranges().1, 0.0..100.0);
    }

    #[test]
    fn overlapping_series_get_distinct_markers_and_dashes() {
        let styles: Vec<_> = (0..5).map(style).collect();
        for a in 0..5 {
            for b in a + 1..5 {
                assert_ne!(styles[a].1, styles[b].1);
                assert_ne!(styles[a].2, styles[b].2);
            }
        }
        let same = vec![(1.0, 2.0), (2.0, 3.0)];
        let c = LineChart {
            series: (0..3)
                .map(|k| Series {
                    name: format!("Wait-{k}"),
                    points: same.clone(),
                    ..Series::default()
                })
                .collect(),
            ..LineChart::default()
        };
        let svg = c.svg().unwrap();
        let d = doc(&svg);
        let dashed = d
            .descendants()
            .filter(|n| n.has_tag_name("polyline") || n.has_tag_name("path"))
            .count();
        assert!(dashed > 3, "dash segments are drawn as separate lines");
        for k in 0..3 {
            assert!(texts(&d).contains(&format!("Wait-{k}")));
        }
    }

    #[test]
    fn log_axes_are_labelled_in_powers_of_ten() {
        assert_eq!(pow10_label(1000.0), "10³");
        assert_eq!(pow10_label(0.01), "10⁻²");
        assert_eq!(pow10_label(300.0), "");
        let c = LineChart {
            y_scale: Scale::Log,
            series: vec![Series {
                name: "s".into(),
                points: vec![(1.0, 3.0), (2.0, 3000.0)],
                ..Series::default()
            }],
            ..LineChart::default()
        };
        let svg = c.svg().unwrap();
        let t = texts(&doc(&svg));
        assert!(t.iter().any(|s| s == "10³"), "{t:?}");
        assert!(!t.iter().any(|s| s == "300" || s == "3000"), "{t:?}");
    }

    #[test]
    fn numbers_and_clock_labels_read_well() {
        assert_eq!(number_label(3.5000000000000004), "3.5");
        assert_eq!(number_label(12.0), "12");
        let f = time_formatter(TimeAxis::Clock { utc_offset: 3600 }, 3600.0);
        assert_eq!(f(0.0), "01:00");
        let f = time_formatter(TimeAxis::Clock { utc_offset: 0 }, 3.0 * 86_400.0);
        assert_eq!(f(86_400.0 * 365.0), "01-01 00:00");
        let f = time_formatter(TimeAxis::Relative, 10.0 * 86_400.0);
        assert_eq!(f(86_400.0 * 2.5), "2.5 d");
    }

    #[test]
    fn utilisation_and_queue_follow_the_schedule() {
        let (u, q) = utilisation_and_queue(&[(0.0, 0.0, 10.0, 2), (0.0, 5.0, 10.0, 2)], 4);
        assert_eq!(u.points, vec![(0.0, 50.0), (5.0, 100.0), (10.0, 0.0)]);
        assert_eq!(q.points, vec![(0.0, 1.0), (5.0, 0.0)]);
        assert_eq!(
            clip_x(&u.points, 6.0, 20.0),
            vec![(6.0, 100.0), (10.0, 0.0)]
        );
    }
}

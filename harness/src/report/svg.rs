//! A small SVG chart writer for the HTML report: a plot area with linear
//! axes, and rectangles, lines, polylines, dots and text placed in data
//! coordinates. Every element can carry a CSS class and a `<title>` (the
//! browser's tooltip), which is why the report draws with this rather than
//! plotters: its SVG backend writes neither, so a tensor could not name
//! itself on hover, nor a test find it.

use std::fmt::Write;

/// Escapes text for HTML and SVG content and attributes.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// `1234567` as `1.2 MB`, `2048` as `2.0 KB`, below 1 KiB in bytes.
pub fn bytes(n: f64) -> String {
    match n.abs() {
        b if b >= 1024.0 * 1024.0 => format!("{:.1} MB", n / (1024.0 * 1024.0)),
        b if b >= 1024.0 => format!("{:.1} KB", n / 1024.0),
        _ => format!("{n:.0} B"),
    }
}

/// ` style="..."`, or nothing for no style.
fn style_attr(style: &str) -> String {
    if style.is_empty() {
        String::new()
    } else {
        format!(" style=\"{style}\"")
    }
}

/// What an axis's tick labels show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Labels {
    /// No labels.
    None,
    /// Whole numbers (steps, figures).
    Count,
    /// Sizes, as [`bytes`] writes them.
    Bytes,
}

impl Labels {
    fn label(self, v: f64) -> String {
        match self {
            Labels::None => String::new(),
            Labels::Count => format!("{v:.0}"),
            Labels::Bytes => bytes(v),
        }
    }

    /// Round values from `lo` to `hi`, about `count` intervals apart: the
    /// multiples of 1, 2 or 5 times a power of ten of the unit the labels
    /// show (counts; B, KB or MB for sizes), never finer than the labels
    /// tell apart, so that no two ticks read the same.
    fn ticks(self, lo: f64, hi: f64, count: usize) -> Vec<f64> {
        if self == Labels::None || hi <= lo || count == 0 {
            return Vec::new();
        }
        let unit = match self {
            Labels::Bytes if hi.abs().max(lo.abs()) >= 1024.0 * 1024.0 => 1024.0 * 1024.0,
            Labels::Bytes if hi.abs().max(lo.abs()) >= 1024.0 => 1024.0,
            _ => 1.0,
        };
        let raw = (hi - lo) / count as f64 / unit;
        let power = 10f64.powf(raw.log10().floor());
        // What the labels can tell apart: a whole number, or a tenth of a KB or MB.
        let least = if unit == 1.0 { 1.0 } else { 0.1 };
        // The round number nearest `raw` (Heckbert's "nice numbers").
        let nice = match raw / power {
            f if f < 1.5 => 1.0,
            f if f < 3.0 => 2.0,
            f if f < 7.0 => 5.0,
            _ => 10.0,
        };
        let step = (nice * power).max(least) * unit;
        let first = (lo / step).ceil() as i64;
        let last = (hi / step + 1e-9).floor() as i64;
        (first..=last).map(|k| k as f64 * step).collect()
    }
}

/// A linear map from data to pixels.
#[derive(Clone, Copy)]
struct Scale {
    lo: f64,
    hi: f64,
    from: f64,
    to: f64,
}

impl Scale {
    fn at(&self, v: f64) -> f64 {
        let span = if self.hi > self.lo { self.hi - self.lo } else { 1.0 };
        self.from + (v - self.lo) / span * (self.to - self.from)
    }
}

/// Room around the plot area for the axes' labels.
const LEFT: f64 = 64.0;
const RIGHT: f64 = 28.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 34.0;

/// One chart; data coordinates grow right and up.
pub struct Chart {
    width: f64,
    height: f64,
    x: Scale,
    y: Scale,
    body: String,
}

impl Chart {
    pub fn new(width: f64, height: f64, x: (f64, f64), y: (f64, f64)) -> Chart {
        Chart {
            width,
            height,
            x: Scale { lo: x.0, hi: x.1, from: LEFT, to: width - RIGHT },
            y: Scale { lo: y.0, hi: y.1, from: height - BOTTOM, to: TOP },
            body: String::new(),
        }
    }

    fn titled(&mut self, element: String, title: &str) {
        if title.is_empty() {
            self.body += element.strip_suffix('>').unwrap_or(&element);
            self.body += "/>";
        } else {
            let name = element[1..].split(' ').next().unwrap_or("g").to_owned();
            let _ = write!(self.body, "{element}<title>{}</title></{name}>", escape(title));
        }
        self.body.push('\n');
    }

    /// A rectangle from (x0, y0) to (x1, y1), at least one pixel high.
    pub fn rect(&mut self, (x0, x1): (f64, f64), (y0, y1): (f64, f64), class: &str, style: &str, title: &str) {
        let (left, right) = (self.x.at(x0), self.x.at(x1));
        let (top, bottom) = (self.y.at(y1), self.y.at(y0));
        let style = style_attr(style);
        let element = format!(
            "<rect class=\"{class}\" x=\"{left:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\"{style}>",
            (right - left).max(1.0),
            (bottom - top).max(1.0)
        );
        self.titled(element, title);
    }

    /// A line across the plot at data height `y`.
    pub fn hline(&mut self, y: f64, class: &str, label: &str) {
        let (py, x0, x1) = (self.y.at(y), self.x.from, self.x.to);
        let _ = writeln!(
            self.body,
            "<line class=\"{class}\" x1=\"{x0:.1}\" y1=\"{py:.1}\" x2=\"{x1:.1}\" y2=\"{py:.1}\"/>"
        );
        self.text_at(x1 - 4.0, py - 4.0, "end", class, label);
    }

    /// A line up the plot at data position `x`.
    pub fn vline(&mut self, x: f64, class: &str, label: &str) {
        let (px, y0, y1) = (self.x.at(x), self.y.from, self.y.to);
        let _ = writeln!(
            self.body,
            "<line class=\"{class}\" x1=\"{px:.1}\" y1=\"{y0:.1}\" x2=\"{px:.1}\" y2=\"{y1:.1}\"/>"
        );
        self.text_at(px + 4.0, y1 + 10.0, "start", class, label);
    }

    pub fn polyline(&mut self, points: &[(f64, f64)], class: &str, style: &str) {
        let points: Vec<String> =
            points.iter().map(|&(x, y)| format!("{:.1},{:.1}", self.x.at(x), self.y.at(y))).collect();
        let style = style_attr(style);
        let _ = writeln!(self.body, "<polyline class=\"{class}\" points=\"{}\"{style}/>", points.join(" "));
    }

    pub fn dot(&mut self, (x, y): (f64, f64), class: &str, style: &str, title: &str) {
        let style = style_attr(style);
        let element =
            format!("<circle class=\"{class}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\"{style}>", self.x.at(x), self.y.at(y));
        self.titled(element, title);
    }

    /// Text at a data position.
    pub fn text(&mut self, (x, y): (f64, f64), anchor: &str, class: &str, text: &str) {
        self.text_at(self.x.at(x), self.y.at(y), anchor, class, text);
    }

    fn text_at(&mut self, x: f64, y: f64, anchor: &str, class: &str, text: &str) {
        if !text.is_empty() {
            let _ = writeln!(
                self.body,
                "<text class=\"{class}\" x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\">{}</text>",
                escape(text)
            );
        }
    }

    /// The frame, about `ticks` intervals of labelled ticks on each axis
    /// (at round values of its [`Labels`]), and the axes' names.
    pub fn axes(&mut self, x_name: &str, y_name: &str, ticks: usize, x: Labels, y: Labels) {
        let (x0, x1, y0, y1) = (self.x.from, self.x.to, self.y.from, self.y.to);
        let _ = writeln!(
            self.body,
            "<rect class=\"frame\" x=\"{x0:.1}\" y=\"{y1:.1}\" width=\"{:.1}\" height=\"{:.1}\"/>",
            x1 - x0,
            y0 - y1
        );
        for v in x.ticks(self.x.lo, self.x.hi, ticks) {
            self.text_at(self.x.at(v), y0 + 13.0, "middle", "tick", &x.label(v));
        }
        for v in y.ticks(self.y.lo, self.y.hi, ticks) {
            self.text_at(x0 - 4.0, self.y.at(v) + 3.0, "end", "tick", &y.label(v));
        }
        self.text_at((x0 + x1) / 2.0, self.height - 4.0, "middle", "axis", x_name);
        self.text_at(4.0, 12.0, "start", "axis", y_name);
    }

    /// The chart as an `<svg>` element.
    pub fn finish(self, label: &str) -> String {
        format!(
            "<svg viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{}\">\n{}</svg>",
            escape(label),
            self.body,
            w = self.width,
            h = self.height
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_land_where_the_data_says_and_carry_their_titles() {
        let mut c = Chart::new(200.0, 100.0, (0.0, 10.0), (0.0, 100.0));
        c.rect((0.0, 10.0), (0.0, 100.0), "tensor", "fill:red", "t0 <input> & more");
        let svg = c.finish("a chart");
        // The plot spans x 64..172 and y 66..20.
        assert!(svg.contains(r#"<rect class="tensor" x="64.0" y="20.0" width="108.0" height="46.0" style="fill:red"><title>t0 &lt;input&gt; &amp; more</title></rect>"#), "{svg}");
        assert!(
            svg.starts_with(r#"<svg viewBox="0 0 200 100" width="200" height="100" role="img" aria-label="a chart">"#)
        );
    }

    /// Ticks fall on round values (1, 2 or 5 times a power of ten of the
    /// unit shown) and no two read the same, whatever the range.
    #[test]
    fn ticks_are_round_and_never_read_twice() {
        let labels = |l: Labels, lo: f64, hi: f64, n: usize| -> Vec<String> {
            l.ticks(lo, hi, n).into_iter().map(|v| l.label(v)).collect()
        };
        assert_eq!(labels(Labels::Count, 0.0, 3.0, 4), ["0", "1", "2", "3"], "was 0 1 2 2 3");
        assert_eq!(labels(Labels::Count, 0.0, 40.0, 4), ["0", "10", "20", "30", "40"]);
        assert_eq!(labels(Labels::Count, 1461.0, 1506.0, 2), ["1480", "1500"]);
        assert_eq!(
            labels(Labels::Bytes, 0.0, 209.5 * 1024.0, 4),
            ["0 B", "50.0 KB", "100.0 KB", "150.0 KB", "200.0 KB"]
        );
        assert_eq!(labels(Labels::Bytes, 0.0, 1472.0, 4), ["0 B", "512 B", "1.0 KB"]);
        assert_eq!(labels(Labels::Bytes, 0.0, 3.5 * 1024.0 * 1024.0, 4), ["0 B", "1.0 MB", "2.0 MB", "3.0 MB"]);
        assert_eq!(labels(Labels::None, 0.0, 10.0, 4), Vec::<String>::new());
        assert_eq!(labels(Labels::Count, 5.0, 5.0, 4), Vec::<String>::new(), "an empty range has no ticks");
        for (hi, n) in [(1.0, 4), (7.0, 4), (99.0, 4), (1234.0, 2), (2e6, 4), (123456.0, 3)] {
            for l in [Labels::Count, Labels::Bytes] {
                let shown = labels(l, 0.0, hi, n);
                let unique: std::collections::BTreeSet<&String> = shown.iter().collect();
                assert_eq!(unique.len(), shown.len(), "{l:?} 0..{hi}: {shown:?}");
                assert!((1..=2 * n + 1).contains(&shown.len()), "{l:?} 0..{hi}: {shown:?}");
            }
        }
    }

    #[test]
    fn sizes_read_as_engineers_write_them() {
        assert_eq!(
            (bytes(48.0), bytes(2048.0), bytes(3.5 * 1024.0 * 1024.0)),
            ("48 B".into(), "2.0 KB".into(), "3.5 MB".into())
        );
    }
}

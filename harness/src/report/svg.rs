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

    /// The frame, `ticks` labelled ticks on each axis (formatted by `fx`
    /// and `fy`), and the axes' names.
    pub fn axes(
        &mut self,
        x_name: &str,
        y_name: &str,
        ticks: usize,
        fx: &dyn Fn(f64) -> String,
        fy: &dyn Fn(f64) -> String,
    ) {
        let (x0, x1, y0, y1) = (self.x.from, self.x.to, self.y.from, self.y.to);
        let _ = writeln!(
            self.body,
            "<rect class=\"frame\" x=\"{x0:.1}\" y=\"{y1:.1}\" width=\"{:.1}\" height=\"{:.1}\"/>",
            x1 - x0,
            y0 - y1
        );
        for i in 0..=ticks {
            let f = i as f64 / ticks as f64;
            let (xv, yv) = (self.x.lo + f * (self.x.hi - self.x.lo), self.y.lo + f * (self.y.hi - self.y.lo));
            self.text_at(self.x.at(xv), y0 + 13.0, "middle", "tick", &fx(xv));
            self.text_at(x0 - 4.0, self.y.at(yv) + 3.0, "end", "tick", &fy(yv));
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

    #[test]
    fn sizes_read_as_engineers_write_them() {
        assert_eq!(
            (bytes(48.0), bytes(2048.0), bytes(3.5 * 1024.0 * 1024.0)),
            ("48 B".into(), "2.0 KB".into(), "3.5 MB".into())
        );
    }
}

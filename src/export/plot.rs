//! The speedup histogram of the dataset card, as hand-written SVG.
//!
//! Hand-written rather than `plotters`: one bar chart does not justify a plotting stack on
//! build machines shared by several builds, and writing the SVG ourselves keeps every byte
//! (number formatting, element order) under our control, so the same data gives the same file.

/// Bin edges of the speedup histogram: roughly logarithmic, since speedups span 1× to 100×.
pub const EDGES: &[f64] = &[1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0];

/// Labels of the bins: `<1`, `1–1.25`, …, `≥32`.
pub fn bin_labels() -> Vec<String> {
    let mut out = vec![format!("<{}", num(EDGES[0]))];
    for w in EDGES.windows(2) {
        out.push(format!("{}–{}", num(w[0]), num(w[1])));
    }
    out.push(format!("≥{}", num(*EDGES.last().expect("edges"))));
    out
}

/// Count speedups per bin (a value on an edge belongs to the bin above it).
pub fn histogram(speedups: &[f64]) -> Vec<usize> {
    let mut counts = vec![0; EDGES.len() + 1];
    for &s in speedups {
        let bin = EDGES.iter().take_while(|&&e| s >= e).count();
        counts[bin] += 1;
    }
    counts
}

fn num(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The histogram as an SVG document.
pub fn speedup_svg(speedups: &[f64], title: &str) -> String {
    const W: f64 = 720.0;
    const H: f64 = 380.0;
    const LEFT: f64 = 56.0;
    const RIGHT: f64 = 16.0;
    const TOP: f64 = 40.0;
    const BOTTOM: f64 = 64.0;
    let counts = histogram(speedups);
    let labels = bin_labels();
    let max = counts.iter().copied().max().unwrap_or(0).max(1);
    // A tick step of 1, 2 or 5 × 10^k giving at most 8 ticks.
    let mut step = 1usize;
    'outer: for mag in [1usize, 10, 100, 1000, 10_000, 100_000] {
        for m in [1, 2, 5] {
            step = m * mag;
            if max.div_ceil(step) <= 8 {
                break 'outer;
            }
        }
    }
    let top_value = max.div_ceil(step) * step;
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let y = |v: usize| TOP + plot_h - plot_h * v as f64 / top_value as f64;
    let slot = plot_w / counts.len() as f64;
    let mut s = String::new();
    s.push_str(&format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"12\">\n"
    ));
    s.push_str(&format!(
        "<rect x=\"0\" y=\"0\" width=\"{W}\" height=\"{H}\" fill=\"white\"/>\n"
    ));
    s.push_str(&format!(
        "<text x=\"{:.1}\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n",
        W / 2.0,
        escape(title)
    ));
    for t in (0..=top_value).step_by(step) {
        let yy = y(t);
        s.push_str(&format!(
            "<line x1=\"{LEFT}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#dddddd\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{t}</text>\n",
            W - RIGHT,
            LEFT - 6.0,
            yy + 4.0
        ));
    }
    for (i, (&c, label)) in counts.iter().zip(&labels).enumerate() {
        let x = LEFT + slot * i as f64;
        if c > 0 {
            s.push_str(&format!(
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}×: {c}</title></rect>\n",
                x + slot * 0.1,
                y(c),
                slot * 0.8,
                y(0) - y(c),
                if i == 0 { "#c0504d" } else { "#4f81bd" },
                escape(label)
            ));
            s.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{c}</text>\n",
                x + slot / 2.0,
                y(c) - 4.0
            ));
        }
        s.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\">{}</text>\n",
            x + slot / 2.0,
            TOP + plot_h + 16.0,
            escape(label)
        ));
    }
    s.push_str(&format!(
        "<line x1=\"{LEFT}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"black\"/>\n",
        y(0),
        W - RIGHT,
        y(0)
    ));
    s.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">speedup (median time slow / median time fast, largest size set)</text>\n",
        LEFT + plot_w / 2.0,
        H - 16.0
    ));
    s.push_str(&format!(
        "<text x=\"16\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {:.1})\">pairs</text>\n",
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0
    ));
    if speedups.is_empty() {
        s.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#888888\">no measured speedups in this export</text>\n",
            LEFT + plot_w / 2.0,
            TOP + plot_h / 2.0
        ));
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_include_their_lower_edge() {
        let h = histogram(&[0.9, 1.0, 1.24, 1.25, 2.0, 31.9, 32.0, 100.0]);
        assert_eq!(h.len(), bin_labels().len());
        assert_eq!(h[0], 1); // <1
        assert_eq!(h[1], 2); // 1–1.25
        assert_eq!(h[2], 1); // 1.25–1.5
        assert_eq!(h[4], 1); // 2–3
        assert_eq!(h[10], 1); // 16–32
        assert_eq!(h[11], 2); // ≥32
        assert_eq!(bin_labels()[1], "1–1.25");
        assert_eq!(bin_labels()[11], "≥32");
    }

    #[test]
    fn svg_is_well_formed_and_has_one_bar_per_nonempty_bin() {
        let svg = speedup_svg(&[1.1, 1.2, 2.5, 40.0], "Speedups <n=4>");
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<rect").count(), 1 + 3, "background + 3 bars");
        assert!(svg.contains("Speedups &lt;n=4&gt;"));
        assert_eq!(svg, speedup_svg(&[1.1, 1.2, 2.5, 40.0], "Speedups <n=4>"));
        let empty = speedup_svg(&[], "none");
        assert!(empty.contains("no measured speedups"));
    }
}

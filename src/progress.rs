//! Progress of long work, for people and for logs: a bar on a terminal; otherwise a plain
//! line at least every 10 s (`capture: 3/12 done, 0.4/s, ETA 20 s; running: a, b`), so a
//! batch job's log shows where a run is and which long item it is waiting on.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often a plain progress line is printed when stderr is not a terminal.
pub const PLAIN_EVERY: Duration = Duration::from_secs(10);

struct Shared {
    what: String,
    total: usize,
    done: usize,
    running: Vec<String>,
    started: Instant,
    stopped: bool,
    /// Plain lines printed so far (a step that printed none ends quietly too).
    printed: usize,
}

impl Shared {
    fn line(&self) -> String {
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let rate = self.done as f64 / secs;
        let eta = match (rate > 0.0, self.total > self.done) {
            (true, true) => format!(", ETA {:.0} s", (self.total - self.done) as f64 / rate),
            _ => String::new(),
        };
        let running = match self.running.is_empty() {
            true => String::new(),
            false => format!("; running: {}", self.running.join(", ")),
        };
        format!(
            "{}: {}/{} done, {:.2}/s{eta}{running}",
            self.what, self.done, self.total, rate
        )
    }
}

/// Progress of one step over `total` items; cheap to clone into worker threads.
#[derive(Clone)]
pub struct Progress {
    shared: Arc<Mutex<Shared>>,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar when stderr is a terminal, else plain lines every [`PLAIN_EVERY`]
    /// (`KERNELPAIR_PROGRESS_EVERY_MS` sets another interval, for tests).
    pub fn new(what: &str, total: usize) -> Progress {
        let every = std::env::var("KERNELPAIR_PROGRESS_EVERY_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .map(Duration::from_millis)
            .unwrap_or(PLAIN_EVERY);
        Self::with_mode(what, total, std::io::stderr().is_terminal(), every)
    }

    /// `bar`: draw a bar (else print plain lines every `every`).
    pub fn with_mode(what: &str, total: usize, bar: bool, every: Duration) -> Progress {
        let shared = Arc::new(Mutex::new(Shared {
            what: what.to_string(),
            total,
            done: 0,
            running: Vec::new(),
            started: Instant::now(),
            stopped: false,
            printed: 0,
        }));
        let bar = bar.then(|| {
            let b = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template(
                    "{prefix:>8} [{bar:30}] {pos}/{len} {per_sec} ETA {eta} {wide_msg}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            b.set_prefix(what.to_string());
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        if bar.is_none() {
            let s = shared.clone();
            std::thread::spawn(move || loop {
                std::thread::sleep(every);
                let Ok(mut g) = s.lock() else { return };
                if g.stopped {
                    return;
                }
                g.printed += 1;
                eprintln!("{}", g.line());
            });
        }
        Progress { shared, bar }
    }

    /// Item `name` started (named in progress lines while it runs).
    pub fn start(&self, name: &str) {
        if let Ok(mut g) = self.shared.lock() {
            g.running.push(name.to_string());
            self.redraw(&g);
        }
    }

    /// Item `name` finished.
    pub fn finish(&self, name: &str) {
        if let Ok(mut g) = self.shared.lock() {
            if let Some(i) = g.running.iter().position(|r| r == name) {
                g.running.remove(i);
            }
            g.done += 1;
            if let Some(b) = &self.bar {
                b.set_position(g.done as u64);
            }
            self.redraw(&g);
        }
    }

    fn redraw(&self, g: &Shared) {
        if let Some(b) = &self.bar {
            b.set_message(g.running.join(", "));
        }
    }

    /// `n` items finished without having been named at their start (a worker pool's
    /// results); `last` is shown as the latest outcome.
    pub fn inc(&self, n: usize, last: &str) {
        if let Ok(mut g) = self.shared.lock() {
            g.done += n;
            g.running = match last.is_empty() {
                true => Vec::new(),
                false => vec![format!("last {last}")],
            };
            if let Some(b) = &self.bar {
                b.set_position(g.done as u64);
            }
            self.redraw(&g);
        }
    }

    /// The current line (what a plain log shows).
    pub fn line(&self) -> String {
        self.shared.lock().map(|g| g.line()).unwrap_or_default()
    }

    /// Stop printing; after periodic lines, a last one says where the step ended (a step
    /// shorter than one interval prints nothing).
    pub fn done(&self) {
        if let Ok(mut g) = self.shared.lock() {
            g.stopped = true;
            match &self.bar {
                Some(b) => b.finish_and_clear(),
                None if g.printed > 0 => eprintln!("{}", g.line()),
                None => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_line_counts_names_running_items_and_estimates() {
        let p = Progress::with_mode("capture", 4, false, Duration::from_secs(3600));
        p.start("dev/cuda/a.cu");
        p.start("dev/cuda/b.cu");
        p.finish("dev/cuda/a.cu");
        let line = p.line();
        assert!(line.starts_with("capture: 1/4 done, "), "{line}");
        assert!(line.contains("ETA"), "{line}");
        assert!(line.ends_with("running: dev/cuda/b.cu"), "{line}");
        p.finish("dev/cuda/b.cu");
        assert!(!p.line().contains("running"), "{}", p.line());
        p.inc(2, "verified");
        assert!(p.line().starts_with("capture: 4/4 done"), "{}", p.line());
        assert!(p.line().ends_with("running: last verified"), "{}", p.line());
        p.done();
    }
}

//! Programming progress on stderr.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal as _;
use tensorplug_device_fpga::flash::{Phase, Progress};

/// Progress on stderr: a bar per phase on a terminal, a line per quarter
/// otherwise (CI logs).
pub enum Reporter {
    Bars {
        bars: MultiProgress,
        shown: [Option<ProgressBar>; 3],
    },
    Lines {
        /// Next quarter (0..=4) to print, per phase.
        next_quarter: [u64; 3],
    },
}

const fn phase_index(phase: Phase) -> usize {
    match phase {
        Phase::Erase => 0,
        Phase::Program => 1,
        Phase::Verify => 2,
    }
}

const fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Erase => "erase",
        Phase::Program => "program",
        Phase::Verify => "verify",
    }
}

impl Reporter {
    pub fn new() -> Self {
        if std::io::stderr().is_terminal() {
            Self::Bars {
                bars: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
                shown: [None, None, None],
            }
        } else {
            Self::Lines {
                next_quarter: [0; 3],
            }
        }
    }

    pub fn update(&mut self, p: Progress) {
        let i = phase_index(p.phase);
        match self {
            Self::Bars { bars, shown } => {
                let bar = shown[i].get_or_insert_with(|| new_bar(bars, p));
                bar.set_position(u64::from(p.done));
                if p.done >= p.total {
                    bar.finish();
                }
            }
            Self::Lines { next_quarter } => {
                for line in quarter_lines(p, &mut next_quarter[i]) {
                    eprintln!("{line}");
                }
            }
        }
    }

    pub fn finish(self) {
        if let Self::Bars { shown, .. } = self {
            // An interrupted phase stays where it stopped.
            for bar in shown.into_iter().flatten().filter(|b| !b.is_finished()) {
                bar.abandon();
            }
        }
    }
}

fn new_bar(bars: &MultiProgress, p: Progress) -> ProgressBar {
    let bar = bars.add(ProgressBar::new(u64::from(p.total)));
    let style = ProgressStyle::with_template(
        "    {prefix:8} [{bar:40}] {bytes:>10} / {total_bytes:<10} {binary_bytes_per_sec} eta {eta}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(phase_name(p.phase));
    bar
}

/// The plain lines for `p`: one per quarter of the phase reached since
/// the last call (`next` is the first quarter not printed yet).
pub fn quarter_lines(p: Progress, next: &mut u64) -> Vec<String> {
    let total = u64::from(p.total).max(1);
    let reached = u64::from(p.done).min(total) * 4 / total;
    let mut lines = Vec::new();
    while *next <= reached {
        lines.push(format!(
            "    {:8} {:>3}%  {} of {} bytes",
            phase_name(p.phase),
            *next * 25,
            total * *next / 4,
            total
        ));
        *next += 1;
    }
    lines
}

//! The regression guard: every figure of a `cargo xtask bench` run against
//! the committed baseline file (`xtask/bench-baseline.json`).
//!
//! A figure is its ratio to a baseline measured in the same run where it has
//! one, else its value. It is flagged when it is more than
//! [`TOLERANCE`] worse than the file's, in its better direction. Values
//! without a same-run baseline are absolute and only compared when the
//! file was recorded on this machine (same CPU model and core count).
//! Format: `docs/benchmarks.md`, "The regression guard".

use super::{Row, Verdict};
use anyhow::{Context, Result};
use serde_json::{Map, Value, json};
use std::path::Path;

/// How much worse than the baseline a figure may get: 10%.
pub const TOLERANCE: f64 = 0.10;

/// The machine a run is on, as recorded in the file.
#[derive(Debug, PartialEq)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
}

impl Machine {
    pub fn this() -> Self {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| {
                info.lines()
                    .find_map(|l| l.strip_prefix("model name")?.split_once(':'))
                    .map(|(_, name)| name.trim().to_string())
            })
            .unwrap_or_else(|| std::env::consts::ARCH.to_string());
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self { cpu, cores }
    }

    fn of(file: &Value) -> Option<Self> {
        let machine = file.get("machine")?;
        Some(Self {
            cpu: machine.get("cpu")?.as_str()?.to_string(),
            cores: usize::try_from(machine.get("cores")?.as_u64()?).ok()?,
        })
    }
}

/// One figure's comparison with the file.
#[derive(Debug, PartialEq)]
pub enum Compared {
    /// Worse by more than the tolerance: `change` is how many times worse.
    Regressed { change: f64 },
    /// Within the tolerance, or better: `change` as above (< 1 is better).
    Held { change: f64 },
    /// Not compared, and why.
    Skipped(&'static str),
}

/// `now` against `then` in the row's better direction.
pub fn compare(row: &Row, then: Option<&Value>, same_machine: bool) -> Compared {
    let (Some(now), Some(lower)) = (row.compared, row.lower_is_better) else {
        return Compared::Skipped("no direction");
    };
    let Some(then) = then else {
        return Compared::Skipped("new");
    };
    let was_ratio = then.get("is_ratio").and_then(Value::as_bool) == Some(true);
    if was_ratio != row.is_ratio {
        return Compared::Skipped("changed kind");
    }
    if !row.is_ratio && !same_machine {
        return Compared::Skipped("other machine");
    }
    let Some(before) = then.get("value").and_then(Value::as_f64) else {
        return Compared::Skipped("no value");
    };
    if before <= 0.0 || now <= 0.0 {
        return Compared::Skipped("not positive");
    }
    let change = if lower { now / before } else { before / now };
    if change > 1.0 + TOLERANCE {
        Compared::Regressed { change }
    } else {
        Compared::Held { change }
    }
}

/// Fills each row's `vs_last` from `file` and returns the flagged rows' ids.
pub fn check(rows: &mut [Row], file: &Path) -> Result<Vec<String>> {
    let Some(baseline) = read(file)? else {
        for row in rows.iter_mut() {
            row.vs_last = "no baseline file".into();
        }
        return Ok(Vec::new());
    };
    let here = Machine::this();
    let same_machine = Machine::of(&baseline).as_ref() == Some(&here);
    if !same_machine {
        eprintln!(
            "{} was recorded on another machine ({}); absolute figures are not compared",
            file.display(),
            baseline
                .pointer("/machine/cpu")
                .and_then(Value::as_str)
                .unwrap_or("?")
        );
    }
    let mut flagged = Vec::new();
    for row in rows.iter_mut() {
        if row.verdict == Verdict::NotMeasured {
            row.vs_last = "-".into();
            continue;
        }
        let then = baseline.pointer(&format!("/figures/{}", pointer_key(&row.id)));
        row.vs_last = match compare(row, then, same_machine) {
            Compared::Regressed { change } => {
                flagged.push(row.id.clone());
                format!("REGRESSED {:+.1}%", (change - 1.0) * 100.0)
            }
            Compared::Held { change } => format!("{:+.1}%", (change - 1.0) * 100.0),
            Compared::Skipped(why) => why.into(),
        };
    }
    Ok(flagged)
}

/// Writes this run's figures over `file`'s, keeping the ones not measured.
pub fn update(rows: &[Row], file: &Path, commit: &str) -> Result<usize> {
    let mut figures = read(file)?
        .and_then(|b| b.get("figures").and_then(Value::as_object).cloned())
        .unwrap_or_default();
    let mut written = 0;
    for row in rows {
        if let (Some(value), Some(lower)) = (row.compared, row.lower_is_better)
            && row.verdict != Verdict::NotMeasured
        {
            figures.insert(
                row.id.clone(),
                json!({"value": value, "is_ratio": row.is_ratio,
                       "better": if lower { "lower" } else { "higher" }}),
            );
            written += 1;
        }
    }
    let sorted: Map<String, Value> = {
        let mut keys: Vec<_> = figures.into_iter().collect();
        keys.sort_by(|a, b| a.0.cmp(&b.0));
        keys.into_iter().collect()
    };
    let here = Machine::this();
    let file_json = json!({
        "about": "cargo xtask bench compares every figure with this file; \
                  --update-baseline rewrites it. docs/benchmarks.md",
        "machine": {"cpu": here.cpu, "cores": here.cores, "commit": commit},
        "tolerance": TOLERANCE,
        "figures": sorted,
    });
    let text = serde_json::to_string_pretty(&file_json)? + "\n";
    std::fs::write(file, text).with_context(|| format!("cannot write {}", file.display()))?;
    Ok(written)
}

fn read(file: &Path) -> Result<Option<Value>> {
    match std::fs::read_to_string(file) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .with_context(|| format!("{} is not valid JSON", file.display())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).with_context(|| format!("cannot read {}", file.display())),
    }
}

/// A JSON pointer segment for an id (`/` and `~` escaped).
fn pointer_key(id: &str) -> String {
    id.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(compared: f64, is_ratio: bool, lower: bool) -> Row {
        Row {
            id: "g/b".into(),
            figure: "f".into(),
            measured: String::new(),
            baseline: String::new(),
            ratio: String::new(),
            goal: String::new(),
            verdict: Verdict::Pass,
            compared: Some(compared),
            is_ratio,
            lower_is_better: Some(lower),
            vs_last: String::new(),
        }
    }

    #[test]
    fn a_twenty_percent_slowdown_is_flagged_and_five_is_not() {
        let then = json!({"value": 1.0, "is_ratio": true});
        // A time ratio 20% higher, a throughput ratio 20% lower.
        assert!(matches!(
            compare(&row(1.2, true, true), Some(&then), false),
            Compared::Regressed { .. }
        ));
        assert!(matches!(
            compare(&row(1.0 / 1.2, true, false), Some(&then), false),
            Compared::Regressed { .. }
        ));
        assert!(matches!(
            compare(&row(1.05, true, true), Some(&then), false),
            Compared::Held { .. }
        ));
        // Better is never flagged.
        assert!(matches!(
            compare(&row(0.5, true, true), Some(&then), false),
            Compared::Held { .. }
        ));
    }

    #[test]
    fn absolute_figures_are_compared_on_the_same_machine_only() {
        let then = json!({"value": 100.0, "is_ratio": false});
        let slow = row(130.0, false, true);
        assert_eq!(
            compare(&slow, Some(&then), false),
            Compared::Skipped("other machine")
        );
        assert!(matches!(
            compare(&slow, Some(&then), true),
            Compared::Regressed { .. }
        ));
        assert_eq!(compare(&slow, None, true), Compared::Skipped("new"));
    }

    #[test]
    fn update_then_check_round_trips_and_flags() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("baseline.json");
        let mut rows = vec![row(1.0, true, true)];
        assert_eq!(update(&rows, &file, "abc").unwrap(), 1);
        assert!(check(&mut rows, &file).unwrap().is_empty());
        assert_eq!(rows[0].vs_last, "+0.0%");
        rows[0].compared = Some(1.25);
        assert_eq!(check(&mut rows, &file).unwrap(), vec!["g/b".to_string()]);
        assert!(rows[0].vs_last.starts_with("REGRESSED +25.0%"));
    }
}

//! The figure files `cargo xtask bench` reads (`docs/benchmarks.md`),
//! shared by the benches of this crate (`#[path]`-included).

use std::path::PathBuf;

/// `<target>` from the bench binary's path, `<target>/<profile>/deps/<bin>`.
pub fn figure_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.parent()?.join("tensorplug-bench"))
}

pub fn write_figure(
    id: &str,
    figure: &str,
    value: f64,
    baseline: Option<f64>,
    unit: &str,
    goal: &str,
) {
    let Some(dir) = figure_dir() else { return };
    let baseline = baseline.map_or("null".to_string(), |b| format!("{b}"));
    let json = format!(
        "{{\"figure\": \"{figure}\", \"value\": {value}, \"baseline\": {baseline}, \"unit\": \"{unit}\", \"goal\": \"{goal}\"}}\n"
    );
    if std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(dir.join(format!("{id}.json")), json))
        .is_err()
    {
        eprintln!("could not write figure {id}");
    }
}

//! The report file (`TENSORPLUG_FALLBACK_FILE`): one line per decision of
//! the graph pass and per fallback at run time (`docs/ops.md`).

use crate::{log, settings};

/// Appends one line per item to the report file `file` (a failure to
/// write is said, not fatal).
pub fn append(file: &settings::Value, items: &[impl std::fmt::Display]) {
    use std::io::Write;
    let lines: String = items.iter().map(|f| format!("{f}\n")).collect();
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file.text)
        .and_then(|mut out| out.write_all(lines.as_bytes()));
    if let Err(e) = written {
        log::warn(format_args!("{}: {e}", file.var));
    }
}

/// Appends `items` to the report file, if one is set.
pub fn say(items: &[impl std::fmt::Display]) {
    if let Ok(Some(file)) = settings::get(settings::FALLBACK_FILE) {
        append(&file, items);
    }
}

//! Minimal stderr logging for callbacks that cannot return a status.
//! Never panics (a closed stderr is ignored).

use std::fmt::Arguments;
use std::io::Write;

/// Logs an error: `tensorplug: error: …`.
pub fn error(message: Arguments<'_>) {
    let _ = writeln!(std::io::stderr(), "tensorplug: error: {message}");
}

/// Logs a warning: `tensorplug: warning: …`.
pub fn warn(message: Arguments<'_>) {
    let _ = writeln!(std::io::stderr(), "tensorplug: warning: {message}");
}

//! Every `extern "C"` body runs under [`with_status`] or [`swallow`]: no panic
//! crosses the C boundary, and every error reaches TF or the log.

use super::tf_api;
use crate::error::{Error, Result};
use crate::log;
use std::any::Any;
use std::ffi::CString;
use std::panic::{AssertUnwindSafe, catch_unwind};
use tensorplug_abi::tf::TF_Status;

/// Runs `body`; an error or panic is written into `status` as
/// `tensorplug <entry>: <message>`. A null `status` logs instead.
///
/// # Safety
/// `status` is null or a live `TF_Status`.
pub unsafe fn with_status(
    status: *mut TF_Status,
    entry: &'static str,
    body: impl FnOnce() -> Result<()>,
) {
    if let Err(error) = run(entry, body) {
        // SAFETY: caller's contract.
        unsafe { report(status, entry, &error) }
    }
}

/// Runs `body` for a callback with no status (`deallocate`, `destroy_*`,
/// queries): an error or panic is logged and `fallback` returned.
pub fn swallow<T>(entry: &'static str, fallback: T, body: impl FnOnce() -> Result<T>) -> T {
    match run(entry, body) {
        Ok(value) => value,
        Err(error) => {
            log::error(format_args!("{entry}: {error}"));
            fallback
        }
    }
}

/// Runs `body`, turning a panic into [`Error::Internal`].
pub fn run<T>(entry: &'static str, body: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        Err(Error::Internal(format!(
            "panic in {entry}: {}",
            panic_message(payload.as_ref())
        )))
    })
}

/// Writes `error` into `status` (`TF_SetStatus`), or logs it when that is
/// impossible (null status, TF functions not loaded).
///
/// # Safety
/// `status` is null or a live `TF_Status`.
pub unsafe fn report(status: *mut TF_Status, entry: &str, error: &Error) {
    let text = format!("tensorplug {entry}: {error}");
    let api = match tf_api::api() {
        Ok(api) if !status.is_null() => api,
        Ok(_) => return log::error(format_args!("{text} (TF passed no status)")),
        Err(missing) => return log::error(format_args!("{text} (and {missing})")),
    };
    // Interior NULs cannot come from our messages, but never panic on them.
    let message = CString::new(text.replace('\0', " ")).unwrap_or_default();
    // SAFETY: live status (caller), NUL-terminated message that TF copies.
    unsafe { (api.set_status)(status, error.code(), message.as_ptr()) }
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("non-string panic payload")
}

//! What an MCU's program refusals mean (link protocol 2.3).

use tensorplug_core::accelerator::ErrorKind;
use tensorplug_core::link::RemoteErrorCode;
use tensorplug_core::program::ProgramError;

/// The kind and message of an MCU's `ProgramRefused` or `UnknownProgram`,
/// if `code` is one of them.
pub(super) fn program_refusal(code: u16, detail: u32, what: &str) -> Option<(ErrorKind, String)> {
    if code == RemoteErrorCode::UnknownProgram as u16 {
        return Some((
            ErrorKind::InvalidArgument,
            format!(
                "the MCU does not hold the program of {what} (it restarted or forgot it): load it again"
            ),
        ));
    }
    if code != RemoteErrorCode::ProgramRefused as u16 {
        return None;
    }
    let error = ProgramError::from_detail(detail);
    let kind = match error {
        Some(ProgramError::TooLarge(_)) => ErrorKind::OutOfMemory,
        _ => ErrorKind::InvalidArgument,
    };
    let why = error.map_or_else(|| format!("detail {detail:#x}"), |e| e.to_string());
    Some((kind, format!("the MCU refused {what}: {why}")))
}

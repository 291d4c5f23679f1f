//! Device names and types: `[A-Z][A-Z_]*`, the regular expression TF's
//! `ValidateDeviceType` enforces (it keeps '/' and ':' out of device specs).

use super::error::{Rule, ValidationError};
use core::ffi::{CStr, c_char};

/// The pattern TF enforces on platform names, device types and the
/// profiler's `device_type`.
pub const DEVICE_TYPE_PATTERN: &str = "[A-Z][A-Z_]*";

/// Why a name does not match [`DEVICE_TYPE_PATTERN`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum NameError {
    Empty,
    InvalidByte { index: usize, byte: u8 },
}

impl NameError {
    const fn rule(self) -> Rule {
        match self {
            Self::Empty => Rule::NameEmpty,
            Self::InvalidByte { index, byte } => Rule::NameInvalidByte { index, byte },
        }
    }
}

/// Checks `name` (without its NUL) against `[A-Z][A-Z_]*`; usable in
/// `const` to check a plugin's names at compile time.
pub const fn check_device_type(name: &[u8]) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    let mut index = 0;
    while index < name.len() {
        let byte = name[index];
        let ok = byte.is_ascii_uppercase() || (index > 0 && byte == b'_');
        if !ok {
            return Err(NameError::InvalidByte { index, byte });
        }
        index += 1;
    }
    Ok(())
}

/// Checks a `const char*` device name field.
///
/// # Safety
/// `ptr` is null or points to a NUL-terminated string valid for reads.
pub(crate) unsafe fn check_name_ptr(
    struct_name: &'static str,
    field: &'static str,
    ptr: *const c_char,
) -> Result<(), ValidationError> {
    if ptr.is_null() {
        return Err(ValidationError::new(struct_name, field, Rule::NullName));
    }
    // SAFETY: non-null and NUL-terminated (caller); CStr stops at the NUL.
    let bytes = unsafe { CStr::from_ptr(ptr) }.to_bytes();
    check_device_type(bytes).map_err(|e| ValidationError::new(struct_name, field, e.rule()))
}

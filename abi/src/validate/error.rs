//! The validation error: which struct, which field, which rule.

use core::fmt;

/// Why a function pointer must be set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Requirement {
    /// TensorFlow checks it at load and aborts the process when it is null.
    TfChecks,
    /// TensorFlow checks it because `SP_Platform.supports_unified_memory` is set.
    TfChecksWithUnifiedMemory,
    /// TensorFlow does not check it but calls it (a null call crashes).
    TfCallsUnchecked,
    /// Older TensorFlow releases checked and called it.
    OlderTfChecks,
}

/// The rule a struct broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Rule {
    /// `struct_size` is 0 (TF's own check).
    StructSizeUnset {
        constant: &'static str,
        expected: usize,
    },
    /// A struct the plugin fills must carry exactly this build's constant.
    StructSizeMismatch {
        constant: &'static str,
        expected: usize,
        found: usize,
    },
    /// A struct TF passed (an older TF) ends before a field the plugin sets.
    StructSizeTooSmall {
        constant: &'static str,
        needed: usize,
        found: usize,
    },
    /// A required function pointer is null.
    NullFunction { requirement: Requirement },
    /// A pointer to a struct that must be validated too is null.
    NullPointer,
    /// A device name/type pointer is null.
    NullName,
    /// A device name/type is the empty string.
    NameEmpty,
    /// A device name/type has a byte outside `[A-Z][A-Z_]*`.
    NameInvalidByte { index: usize, byte: u8 },
}

/// Groups of rules, for callers that branch on the kind of mistake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ErrorKind {
    StructSize,
    NullFunction,
    NullPointer,
    InvalidName,
}

/// A struct broke a rule: names the struct, the field and the rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ValidationError {
    pub struct_name: &'static str,
    pub field: &'static str,
    pub rule: Rule,
}

impl ValidationError {
    pub const fn new(struct_name: &'static str, field: &'static str, rule: Rule) -> Self {
        Self {
            struct_name,
            field,
            rule,
        }
    }

    pub const fn kind(&self) -> ErrorKind {
        match self.rule {
            Rule::StructSizeUnset { .. }
            | Rule::StructSizeMismatch { .. }
            | Rule::StructSizeTooSmall { .. } => ErrorKind::StructSize,
            Rule::NullFunction { .. } => ErrorKind::NullFunction,
            Rule::NullPointer => ErrorKind::NullPointer,
            Rule::NullName | Rule::NameEmpty | Rule::NameInvalidByte { .. } => {
                ErrorKind::InvalidName
            }
        }
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (s, field) = (self.struct_name, self.field);
        match self.rule {
            Rule::StructSizeUnset { constant, expected } => write!(
                f,
                "`{s}.{field}` is 0: set it to {constant} ({expected}); \
                 TensorFlow aborts the process on an unset struct_size"
            ),
            Rule::StructSizeMismatch {
                constant,
                expected,
                found,
            } => {
                let origin = if found < expected {
                    "smaller, as from an older TensorFlow's headers"
                } else {
                    "larger, as from a newer TensorFlow's headers"
                };
                write!(
                    f,
                    "`{s}.{field}` is {found} but this build fills {constant} = {expected} \
                     bytes ({origin}): set it to {constant}"
                )
            }
            Rule::StructSizeTooSmall {
                constant,
                needed,
                found,
            } => write!(
                f,
                "`{s}.{field}` is {found}, but the plugin must set fields up to byte \
                 {needed} ({constant} here): this TensorFlow is too old for tensorplug"
            ),
            Rule::NullFunction { requirement } => {
                let why = match requirement {
                    Requirement::TfChecks => {
                        "TensorFlow requires it and aborts the process at plugin load"
                    }
                    Requirement::TfChecksWithUnifiedMemory => {
                        "TensorFlow requires it because `SP_Platform.supports_unified_memory` \
                         is set (set the function or clear that flag)"
                    }
                    Requirement::TfCallsUnchecked => {
                        "TensorFlow does not check it at load but calls it later, which crashes"
                    }
                    Requirement::OlderTfChecks => "older TensorFlow releases require and call it",
                };
                write!(f, "`{s}.{field}` is null: {why}; set it to a function")
            }
            Rule::NullPointer => write!(
                f,
                "`{s}.{field}` is null: it must point to the struct TensorFlow passed in"
            ),
            Rule::NullName => write!(
                f,
                "`{s}.{field}` is null: set it to a NUL-terminated name matching \
                 [A-Z][A-Z_]*, e.g. \"FPGA\""
            ),
            Rule::NameEmpty => write!(
                f,
                "`{s}.{field}` is empty: it must match [A-Z][A-Z_]*, e.g. \"FPGA\""
            ),
            Rule::NameInvalidByte { index, byte } => {
                write!(
                    f,
                    "`{s}.{field}` must match [A-Z][A-Z_]* (capital letters and '_', \
                     starting with a letter, no digits), but byte {index} is "
                )?;
                if byte.is_ascii_graphic() {
                    write!(f, "'{}'", byte as char)?;
                } else {
                    write!(f, "0x{byte:02x}")?;
                }
                write!(f, "; TensorFlow aborts on such a name. Use e.g. \"FPGA\"")
            }
        }
    }
}

impl core::error::Error for ValidationError {}

//! Validators for every struct the plugin fills: the checks TensorFlow makes
//! (it answers a failure with `SIGABRT`), plus the ones it forgets but relies
//! on. Run them in tests and before handing a struct to TF.
//!
//! No validator panics, on any input. Validators that read a `const char*`
//! name are `unsafe`: see their safety sections.

mod error;
mod grappler;
mod name;
mod profiler;
mod rules;
mod stream_executor;

pub use error::{ErrorKind, Requirement, Rule, ValidationError};
pub use grappler::*;
pub use name::{DEVICE_TYPE_PATTERN, NameError, check_device_type};
pub use profiler::*;
pub use rules::*;
pub use stream_executor::*;

//! The C boundary: TF's functions (resolved at run time) and the guards
//! every `extern "C"` entry point runs its body under.

mod guard;
pub mod tf_api;

pub use guard::{report, run, swallow, with_status};

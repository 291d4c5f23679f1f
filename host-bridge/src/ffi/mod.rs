//! The C boundary: TF's functions (resolved at run time) and the guards
//! every `extern "C"` entry point runs its body under.

mod guard;
pub mod tf_api;

pub use guard::{run, swallow, with_status};

use crate::error::{Error, Result};
use tensorplug_abi::tf::Versioned;
use tensorplug_abi::tf::layout::CStruct;

/// Copies `ours` into a struct TF allocated, respecting TF's `struct_size`.
///
/// # Safety
/// `out` is null or points to a `T` whose leading `struct_size` TF set.
pub unsafe fn write_tf_struct<T: CStruct>(out: *mut T, ours: &T) -> Result<()> {
    // SAFETY: caller's contract.
    let mut view = unsafe { Versioned::from_raw(out) }.map_err(Error::abi)?;
    view.write_covered(ours);
    Ok(())
}

//! Device programs: a segment of a graph compiled once into the catalogue's
//! commands over symbolic buffers, which a device keeps and runs with one
//! submit per step.
//!
//! A program is bytes (`docs/device-programs.md` gives them byte by byte):
//! a header, a table of buffers (inputs, outputs, constants and variables
//! that a run binds to device addresses, and scratch that lives in an arena
//! at planned offsets), a list of commands (launch, copy, fill) and a
//! CRC-32. The host builds one with [`ProgramBuilder`] (feature `alloc`);
//! a device [`Program::parse`]s and [`validate`]s it before it accepts it,
//! without an allocator, and [`replay`]s it: each command becomes one
//! enqueue on one queue.
//!
//! ```
//! # #[cfg(feature = "alloc")] {
//! use tensorplug_core::accelerator::{DType, OpKind, Shape, Unary, VendorOps};
//! use tensorplug_core::program::{BufferKind, Limits, Program, ProgramBuilder, validate};
//!
//! let s = Shape::new(&[4]).unwrap();
//! let mut b = ProgramBuilder::new();
//! let x = b.buffer(BufferKind::Input, DType::F32, s).unwrap();
//! let t = b.buffer(BufferKind::Scratch, DType::F32, s).unwrap();
//! let y = b.buffer(BufferKind::Output, DType::F32, s).unwrap();
//! b.launch(OpKind::Unary(Unary::RELU), 1, &[x], t).unwrap();
//! b.launch(OpKind::Unary(Unary::EXP), 2, &[t], y).unwrap();
//! let built = b.finish(&VendorOps::NONE).unwrap();
//! let program = validate(Program::parse(&built.bytes).unwrap(), &VendorOps::NONE, &Limits::HOST).unwrap();
//! assert_eq!(program.program().header().bindings, 2);
//! # }
//! ```

#[cfg(feature = "alloc")]
mod builder;
pub mod cost;
mod error;
mod format;
#[cfg(feature = "alloc")]
mod plan;
mod replay;
mod resolve;
#[cfg(all(test, feature = "alloc", not(miri)))]
mod tests;
mod validate;
mod view;

#[cfg(feature = "alloc")]
pub use builder::{BufferId, Built, ProgramBuilder};
pub use error::{BufferFault, CommandFault, Limit, ProgramError};
pub use format::{
    ARENA_ALIGN, BUFFER_LEN, BufferKind, BufferRecord, COMMAND_LEN, CRC_LEN, CommandRecord,
    CommandTag, HEADER_LEN, Header, MAGIC, MAX_BUFFERS, NO_BUFFER, VERSION_MAJOR, VERSION_MINOR,
};
#[cfg(feature = "alloc")]
pub use plan::{Lifetime, Plan, plan};
pub use replay::{Bindings, RunError, replay};
pub use resolve::{BufferSpec, Step};
pub use validate::{Limits, Validated, validate};
pub use view::Program;

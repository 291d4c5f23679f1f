//! The traits a vendor implements to put a device behind tensorplug.
//!
//! One trait per capability ([`Device`], [`Memory`], [`Transfer`],
//! [`Launch`], [`Reset`], [`Profiling`]); an [`Accelerator`] is any device
//! with all of them. It owns device memory, ordered queues, copies, op launches,
//! fences, a device clock and a hardware profiling-event source. The host
//! bridge drives it from TensorFlow; the MCU firmware drives it from the link
//! server; tests drive it against a behavioural model. It knows nothing about
//! TensorFlow, and nothing about any one device.
//!
//! # Semantics
//! - Work enqueued on one [`QueueId`] runs in order. Work on different queues
//!   may overlap.
//! - Every enqueue returns a [`Fence`]; a fence completes when that work and
//!   all earlier work on the same queue has completed.
//! - Every wait is bounded: [`Transfer::wait`] takes a timeout and returns
//!   an error of kind [`ErrorKind::Timeout`] rather than hang.
//! - Device addresses are plain integers ([`DeviceAddr`]), so `base + offset`
//!   arithmetic (which TensorFlow does on device pointers) stays valid.
//!
//! # A worked example
//! A device that keeps its "device memory" in a host array, runs copies
//! synchronously and supports one op. Real drivers (see
//! `tensorplug-device-fpga`) enqueue descriptors and complete fences from the
//! device's completion queue instead, and override [`Reset`].
//!
//! ```
//! use core::time::Duration;
//! use tensorplug_core::accelerator::*;
//!
//! struct HostArray { mem: [u8; 4096], next: u64, done: u64 }
//!
//! #[derive(Debug)]
//! struct Oops(ErrorKind);
//! impl core::fmt::Display for Oops {
//!     fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
//!         write!(f, "host-array device: {:?}", self.0)
//!     }
//! }
//! impl Error for Oops { fn kind(&self) -> ErrorKind { self.0 } }
//!
//! impl HostArray {
//!     fn range(&self, addr: DeviceAddr, len: usize) -> Result<core::ops::Range<usize>, Oops> {
//!         let start = usize::try_from(addr.0).map_err(|_| Oops(ErrorKind::InvalidArgument))?;
//!         let end = start.checked_add(len).filter(|&e| e <= self.mem.len());
//!         end.map(|end| start..end).ok_or(Oops(ErrorKind::InvalidArgument))
//!     }
//!     fn complete(&mut self) -> Fence { self.done += 1; Fence(self.done) }
//! }
//!
//! impl Device for HostArray {
//!     type Error = Oops;
//!     fn info(&self) -> DeviceInfo {
//!         DeviceInfo::new("host-array", 4096, 1_000_000_000, Version::new(1, 0, 0), 1)
//!             .with_capabilities(Capabilities::f32(OpSet::of(&[OpKind::Unary(Unary::RELU)]), false))
//!     }
//! }
//! impl Memory for HostArray {
//!     fn allocate(&mut self, bytes: u64, align: u64) -> Result<DeviceAddr, Oops> {
//!         let start = self.next.next_multiple_of(align.max(1));
//!         let end = start.checked_add(bytes).filter(|&e| e <= 4096).ok_or(Oops(ErrorKind::OutOfMemory))?;
//!         self.next = end;
//!         Ok(DeviceAddr(start))
//!     }
//!     fn deallocate(&mut self, _addr: DeviceAddr) -> Result<(), Oops> { Ok(()) }
//!     fn memory_usage(&self) -> MemoryUsage { MemoryUsage { total: 4096, used: self.next } }
//! }
//! impl Transfer for HostArray {
//!     unsafe fn copy_to_device(&mut self, _q: QueueId, dst: DeviceAddr, src: *const u8, len: usize) -> Result<Fence, Oops> {
//!         let r = self.range(dst, len)?;
//!         // SAFETY: the caller guarantees `src` is readable for `len` bytes.
//!         self.mem[r].copy_from_slice(unsafe { core::slice::from_raw_parts(src, len) });
//!         Ok(self.complete())
//!     }
//!     unsafe fn copy_from_device(&mut self, _q: QueueId, dst: *mut u8, src: DeviceAddr, len: usize) -> Result<Fence, Oops> {
//!         let r = self.range(src, len)?;
//!         // SAFETY: the caller guarantees `dst` is writable for `len` bytes.
//!         unsafe { core::slice::from_raw_parts_mut(dst, len) }.copy_from_slice(&self.mem[r]);
//!         Ok(self.complete())
//!     }
//!     fn copy_on_device(&mut self, _q: QueueId, dst: DeviceAddr, src: DeviceAddr, len: usize) -> Result<Fence, Oops> {
//!         let (s, d) = (self.range(src, len)?, self.range(dst, len)?);
//!         self.mem.copy_within(s, d.start);
//!         Ok(self.complete())
//!     }
//!     fn fill(&mut self, _q: QueueId, dst: DeviceAddr, len: usize, pattern: u32) -> Result<Fence, Oops> {
//!         let r = self.range(dst, len)?;
//!         for (i, b) in self.mem[r].iter_mut().enumerate() { *b = pattern.to_le_bytes()[i % 4]; }
//!         Ok(self.complete())
//!     }
//!     fn poll(&mut self, fence: Fence) -> Result<bool, Oops> { Ok(fence.0 <= self.done) }
//!     fn wait(&mut self, fence: Fence, _timeout: Duration) -> Result<(), Oops> {
//!         if fence.0 <= self.done { Ok(()) } else { Err(Oops(ErrorKind::Timeout)) }
//!     }
//! }
//! impl Launch for HostArray {
//!     fn launch(&mut self, _q: QueueId, op: &OpDesc<'_>) -> Result<Fence, Oops> {
//!         op.validate().map_err(|_| Oops(ErrorKind::InvalidArgument))?;
//!         if op.kind != OpKind::Unary(Unary::RELU) { return Err(Oops(ErrorKind::Unsupported)); }
//!         let n = op.output.byte_len().ok_or(Oops(ErrorKind::InvalidArgument))?;
//!         let (i, o) = (self.range(op.inputs[0].addr, n)?, self.range(op.output.addr, n)?);
//!         for k in (0..n).step_by(4) {
//!             let x = f32::from_le_bytes(self.mem[i.start + k..][..4].try_into().unwrap());
//!             self.mem[o.start + k..][..4].copy_from_slice(&x.max(0.0).to_le_bytes());
//!         }
//!         Ok(self.complete())
//!     }
//! }
//! // Synchronous, no clock, no profiling: the defaults.
//! impl Reset for HostArray {}
//! impl Profiling for HostArray {}
//!
//! // Relu on four floats, through the trait's blocking helpers.
//! let mut dev = HostArray { mem: [0; 4096], next: 0, done: 0 };
//! let q = QueueId(0);
//! let x = dev.allocate(16, 4).unwrap();
//! let y = dev.allocate(16, 4).unwrap();
//! let input: Vec<u8> = [-1.0f32, 2.0, -3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
//! dev.write_blocking(q, x, &input, Duration::from_millis(10)).unwrap();
//! let shape = Shape::new(&[4]).unwrap();
//! let inputs = [TensorDesc::new(x, DType::F32, shape)];
//! let op = OpDesc { kind: OpKind::Unary(Unary::RELU), inputs: &inputs, output: TensorDesc::new(y, DType::F32, shape), op_id: 7 };
//! let fence = dev.launch(q, &op).unwrap();
//! dev.wait(fence, Duration::from_millis(10)).unwrap();
//! let mut out = [0u8; 16];
//! dev.read_blocking(q, &mut out, y, Duration::from_millis(10)).unwrap();
//! let got: Vec<f32> = out.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
//! assert_eq!(got, [0.0, 2.0, 0.0, 4.0]);
//! ```

mod capability;
mod caps;
mod catalogue;
mod device_info;
mod elementwise;
mod error;
mod family;
mod forward;
mod op;
mod op_id;
mod record;
mod shape_error;
mod types;
mod vendor;
mod window;

pub use capability::{Accelerator, Device, Launch, Memory, Profiling, Reset, Transfer};
pub use caps::{Capabilities, OP_SET_WORDS, OpSet, VendorOps};
pub use catalogue::{BUILTIN, batch_matmul, builtin, code_of, gelu, layer_norm, named, records};
pub use device_info::DeviceInfo;
pub use elementwise::{Binary, ELEMENTWISE_ABS, ELEMENTWISE_REL, Elementwise, Reference, Unary};
pub use error::{Error, ErrorKind};
pub use op::{
    Form, OpDecl, OpDesc, OpKind, VendorOp, broadcast_shapes, cast_supported, matmul_shape, trails,
};
pub use op_id::{ATTR_BYTES, Attrs, Namespace, OpId};
pub use record::{DeviceArgs, OpRecord, RecordReference};
pub use shape_error::ShapeError;
pub use types::{
    DType, DTypeSet, DeviceAddr, Drained, Fence, MAX_RANK, MemoryUsage, QueueId, Shape, TensorDesc,
    Version,
};
pub use vendor::{ReferenceKernel, Tolerance, VendorCase, VendorRules};
pub use window::{Activation, Window};

/// The capability traits, for method calls on concrete devices
/// (`use tensorplug_core::accelerator::prelude::*;`).
pub mod prelude {
    pub use super::{Accelerator, Device, Launch, Memory, Profiling, Reset, Transfer};
}

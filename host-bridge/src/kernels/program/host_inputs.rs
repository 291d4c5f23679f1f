//! A program node's host inputs (its `host` argument, in host memory).
//!
//! - **Host data** (a batch made on the CPU) is copied into a staging
//!   buffer of the node's and uploaded into a TF temporary each step
//!   without waiting, so the program's start follows it on the link at
//!   once (TF's own copy would wait for the upload to finish first).
//! - **Host weights** (a CPU variable's read, a CPU constant) are uploaded
//!   once into an allocation of the node's own and again only when their
//!   bytes change: a step compares them with the copy the node kept (an
//!   exact comparison, no hash to collide), so a model built under
//!   `tf.device("/CPU:0")` sends its weights once, not every step, and
//!   `fit` on CPU variables uploads what each step changed.
//!
//! `docs/device-programs.md`, "Host inputs".

use super::super::failure::{Failure, KernelResult};
use super::super::launch::Launcher;
use super::super::tf::{Context, Tensor};
use crate::log;
use crate::registry::Device;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};
use tensorplug_core::accelerator::{DType, DeviceAddr, Fence, Shape, TensorDesc};

/// A node's host inputs on its device.
#[derive(Default)]
pub struct HostInputs(Mutex<Kept>);

/// The node's uploads; held locked through a step so that no other call
/// of the node rewrites a weight or a staging buffer still in use.
#[derive(Default)]
pub struct Kept {
    /// The weights, by weight index.
    slots: Vec<Option<Resident>>,
    /// The host data's staging buffers, by index.
    staging: Vec<Staging>,
    /// The weights that did not fit on the device, each said once.
    said_full: Vec<usize>,
}

/// A host data's staging buffer, with the upload that last read it.
type Staging = (Vec<u8>, Option<(Arc<Device>, Fence)>);

/// One weight on the device, with the bytes it holds.
struct Resident {
    device: Arc<Device>,
    /// TF's handle of the allocation (`Device::allocate`).
    opaque: usize,
    addr: DeviceAddr,
    bytes: Vec<u8>,
}

impl Drop for Resident {
    fn drop(&mut self) {
        if let Err(e) = self.device.deallocate(self.opaque as *const c_void) {
            log::warn(format_args!("a program's kept weight: {e}"));
        }
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        // A staging buffer outlives the upload that reads it.
        for (_, last) in &mut self.staging {
            if let Some((device, fence)) = last.take()
                && let Err(e) = device.core().wait(fence, "a program's input upload")
            {
                log::warn(format_args!("a program's input upload: {e}"));
            }
        }
    }
}

impl HostInputs {
    /// The node's uploads, locked for one step.
    pub fn lock(&self) -> MutexGuard<'_, Kept> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A host input bound for one step: its descriptor, and the temporary
/// that holds it on the device when it has no allocation of its own (host
/// data, or a weight that did not fit), dropped with the step's call.
pub struct Bound {
    pub desc: TensorDesc,
    _temp: Option<Tensor>,
}

impl Kept {
    /// Host data `k` (`tensor`, in host memory, of `shape`): copied into
    /// its staging buffer and uploaded into a temporary, without waiting.
    pub fn stream(
        &mut self,
        k: usize,
        tensor: &Tensor,
        shape: Shape,
        ctx: &Context,
        run: &mut Launcher<'_>,
    ) -> KernelResult<Bound> {
        let bytes = host_bytes(tensor, shape)?;
        if self.staging.len() <= k {
            self.staging.resize_with(k + 1, Default::default);
        }
        let (buffer, last) = &mut self.staging[k];
        // The buffer is reused once the upload that last read it is done
        // (long since, in a steady stream of steps).
        if let Some((device, fence)) = last.take() {
            device
                .core()
                .wait(fence, "a program's earlier input upload")?;
        }
        buffer.clear();
        buffer.extend_from_slice(bytes);
        let temp = ctx.temp(&shape)?;
        let desc = run.desc(&temp, shape)?;
        // SAFETY: `buffer` is neither written nor freed before `fence` is
        // done: the next step waits for it above, and `Kept`'s drop.
        let fence = unsafe { run.write_async(desc, buffer.as_ptr(), buffer.len()) }?;
        *last = Some((run.device().clone(), fence));
        Ok(bound(desc.addr, shape, Some(temp)))
    }

    /// Weight `k` (`tensor`, in host memory, of `shape`) on the device of
    /// `run`: uploaded unless the device holds these very bytes.
    pub fn bind(
        &mut self,
        k: usize,
        tensor: &Tensor,
        shape: Shape,
        ctx: &Context,
        run: &mut Launcher<'_>,
    ) -> KernelResult<Bound> {
        let bytes = host_bytes(tensor, shape)?;
        if self.slots.len() <= k {
            self.slots.resize_with(k + 1, || None);
        }
        let device = run.device().clone();
        if let Some(kept) = &self.slots[k]
            && kept.device.ordinal() == device.ordinal()
            && kept.bytes == bytes
        {
            return Ok(bound(kept.addr, shape, None));
        }
        // Freed before the new allocation: a weight that changes size
        // does not hold two copies.
        self.slots[k] = None;
        match device.allocate(bytes.len() as u64) {
            Ok(opaque) => {
                let resident = Resident {
                    addr: device.device_addr(opaque, bytes.len() as u64, "a kept weight")?,
                    device,
                    opaque: opaque as usize,
                    bytes: bytes.to_vec(),
                };
                run.write(bound(resident.addr, shape, None).desc, bytes)?;
                let addr = resident.addr;
                self.slots[k] = Some(resident);
                Ok(bound(addr, shape, None))
            }
            Err(e) => {
                // Too little device memory to keep it: it crosses every
                // step in a temporary, as it would op by op.
                if !self.said_full.contains(&k) {
                    self.said_full.push(k);
                    log::warn(format_args!(
                        "program '{}': weight {k} ({} bytes) does not fit on the device to be \
                         kept ({e}); it is uploaded every step",
                        ctx.node_name(),
                        bytes.len()
                    ));
                }
                let temp = ctx.temp(&shape)?;
                let desc = run.desc(&temp, shape)?;
                run.write(desc, bytes)?;
                Ok(bound(desc.addr, shape, Some(temp)))
            }
        }
    }
}

fn bound(addr: DeviceAddr, shape: Shape, temp: Option<Tensor>) -> Bound {
    Bound {
        desc: TensorDesc::new(addr, DType::F32, shape),
        _temp: temp,
    }
}

/// The f32 bytes of host-memory `tensor` of `shape`.
fn host_bytes(tensor: &Tensor, shape: Shape) -> KernelResult<&[u8]> {
    let len = shape
        .elements()
        .and_then(|n| n.checked_mul(4))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| Failure::invalid("a host input's size overflows"))?;
    tensor.host_bytes(Some(len))
}

//! A program node's host inputs (its `host` argument, in host memory).
//!
//! - **Host data** (a batch made on the CPU) is copied into a staging
//!   buffer of the node's and uploaded into a TF temporary each step
//!   without waiting, so the program's start follows it on the link at
//!   once (TF's own copy would wait for the upload to finish first).
//! - **Host weights** (a CPU variable's read, a CPU constant) are uploaded
//!   once into a TF temporary the node holds (so from TF's allocator,
//!   which holds the device's memory) and again only when their bytes
//!   change: a step compares them with the copy the node kept (an exact
//!   comparison, no hash to collide), so a model built under
//!   `tf.device("/CPU:0")` sends its weights once, not every step, and
//!   `fit` on CPU variables uploads what each step changed. A node's
//!   first bind takes a copy another node holds of the same bytes.
//!
//! `docs/device-programs.md`, "Host inputs".

use super::super::failure::{Failure, KernelResult};
use super::super::launch::Launcher;
use super::super::tf::{Context, Held, Tensor};
use crate::log;
use crate::registry::Device;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use tensorplug_core::accelerator::{DType, DeviceAddr, Fence, Shape, TensorDesc};

/// A node's host inputs on its device.
#[derive(Default)]
pub struct HostInputs(Mutex<Kept>);

/// The node's uploads; held locked through a step so that no other call
/// of the node rewrites a weight or a staging buffer still in use.
#[derive(Default)]
pub struct Kept {
    /// The weights, by weight index.
    slots: Vec<Option<Arc<Resident>>>,
    /// The host data's staging buffers, by index.
    staging: Vec<Staging>,
}

/// A host data's staging buffer, with the upload that last read it.
type Staging = (Vec<u8>, Option<(Arc<Device>, Fence)>);

/// One weight on the device, with the bytes it holds; shared by every
/// node that binds these bytes first while one holds it.
struct Resident {
    /// The ordinal of the device that holds it.
    ordinal: i32,
    /// The TF temporary that holds it, freed with the last node's hold.
    _tensor: Held,
    addr: DeviceAddr,
    bytes: Vec<u8>,
}

/// The weights some node holds, found by their bytes at a node's first
/// bind: a second function over the same CPU model (Keras' `predict`,
/// `evaluate` and `fit` each trace one) or a node TF makes again uploads
/// nothing and holds no second copy. Weak: the nodes own them.
static HELD: Mutex<Vec<Weak<Resident>>> = Mutex::new(Vec::new());

/// A live weight of `ordinal`'s holding exactly `bytes`.
fn find_held(ordinal: i32, bytes: &[u8]) -> Option<Arc<Resident>> {
    let held = HELD.lock().unwrap_or_else(|p| p.into_inner());
    held.iter()
        .filter_map(Weak::upgrade)
        .find(|r| r.ordinal == ordinal && r.bytes.len() == bytes.len() && r.bytes == bytes)
}

/// Makes `resident` findable, forgetting the weights no node holds.
fn publish(resident: &Arc<Resident>) {
    let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
    held.retain(|w| w.strong_count() > 0);
    held.push(Arc::downgrade(resident));
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

/// A host input bound for one step: its descriptor, and for host data the
/// temporary that holds it on the device, dropped with the step's call (a
/// weight's is the node's).
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
        let ordinal = run.device().ordinal();
        if let Some(kept) = &self.slots[k]
            && kept.ordinal == ordinal
            && kept.bytes == bytes
        {
            return Ok(bound(kept.addr, shape, None));
        }
        if self.slots[k].is_none()
            && let Some(held) = find_held(ordinal, bytes)
        {
            let addr = held.addr;
            self.slots[k] = Some(held);
            return Ok(bound(addr, shape, None));
        }
        // Freed before the new one is taken: a weight that changes size
        // does not hold two copies. TF's allocator serves it, as every
        // temporary: on a small device it holds all of the memory (its
        // first region is min(2 MiB, its limit)), so memory of our own
        // beside it would be none. Past that memory the step fails with
        // TF's OOM error naming the node, after TF's 10 s of retries; one
        // larger than the whole device fails at once.
        self.slots[k] = None;
        let total = run.device().info().memory_bytes;
        if bytes.len() as u64 > total {
            return Err(Failure::exhausted(format!(
                "host weight {k} ({} bytes) is larger than the device's memory ({total} bytes): \
                 it can be neither kept on the device nor uploaded",
                bytes.len()
            )));
        }
        let temp = ctx.temp(&shape)?;
        let desc = run.desc(&temp, shape)?;
        run.write(desc, bytes)?;
        let resident = Arc::new(Resident {
            ordinal,
            _tensor: Held::new(temp),
            addr: desc.addr,
            bytes: bytes.to_vec(),
        });
        publish(&resident);
        self.slots[k] = Some(resident);
        Ok(bound(desc.addr, shape, None))
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

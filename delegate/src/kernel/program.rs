//! A partition's device programs: built piece by piece (a buffer per
//! device view, keyed by the view), and run: one request on a device that
//! stores them, else their commands replayed on one queue.

use std::collections::BTreeMap;
use tensorplug_core::accelerator::{DeviceAddr, Fence, QueueId, TensorDesc, VendorOps};
use tensorplug_core::program::{
    Bindings, BufferId, BufferKind, Limits, Program, ProgramBuilder, RunError, replay, validate,
};
use tensorplug_host_bridge::prelude::DynAccelerator;

/// The one device queue a partition runs on.
pub const QUEUE: QueueId = QueueId(0);

/// The partition's programs, run in order.
#[derive(Default)]
pub struct Compiled {
    pub programs: Vec<Stored>,
}

/// One program: its bytes, the device's name for it when it stores
/// programs, and the address of each binding slot.
pub struct Stored {
    pub bytes: Vec<u8>,
    pub stored: Option<u32>,
    pub slots: Vec<DeviceAddr>,
}

/// One program of a partition: stored on the device, or replayed.
pub fn run_one(dev: &mut DynAccelerator, p: &Stored) -> Result<Option<Fence>, String> {
    if let Some(run) = p
        .stored
        .and_then(|name| dev.run_program(QUEUE, name, &p.slots, DeviceAddr(0)))
    {
        return run
            .map(Some)
            .map_err(|e| format!("the device refused the partition's program: {e}"));
    }
    let parsed = Program::parse(&p.bytes).map_err(|e| e.to_string())?;
    let valid = validate(parsed, &VendorOps::NONE, &Limits::HOST).map_err(|e| e.to_string())?;
    replay(dev, QUEUE, &valid, &Bindings::new(&p.slots, DeviceAddr(0))).map_err(|e| match e {
        RunError::Program(e) => format!("the partition's program: {e}"),
        RunError::Device { command, error } => {
            format!("the device refused command {command} of the partition: {error}")
        }
    })
}

/// A program being built: its buffers, keyed by the device view they bind.
#[derive(Default)]
pub struct Piece {
    pub builder: ProgramBuilder,
    ids: BTreeMap<(u64, u8, Vec<u64>), BufferId>,
    pub slots: Vec<DeviceAddr>,
}

impl Piece {
    fn key(d: &TensorDesc) -> (u64, u8, Vec<u64>) {
        (d.addr.0, d.dtype as u8, d.shape.dims().to_vec())
    }

    pub fn buffers(&self) -> usize {
        self.ids.len()
    }

    /// How many of `views` would be new buffers.
    pub fn unbound(&self, views: &[TensorDesc]) -> usize {
        let mut keys: Vec<_> = views.iter().map(Self::key).collect();
        keys.sort();
        keys.dedup();
        keys.iter().filter(|k| !self.ids.contains_key(*k)).count()
    }

    pub fn bind(&mut self, d: TensorDesc, kind: BufferKind) -> Result<BufferId, String> {
        let key = Self::key(&d);
        if let Some(&id) = self.ids.get(&key) {
            return Ok(id);
        }
        let id = self
            .builder
            .buffer(kind, d.dtype, d.shape)
            .map_err(|e| format!("the partition's program: {e}"))?;
        self.slots.push(d.addr);
        self.ids.insert(key, id);
        Ok(id)
    }
}

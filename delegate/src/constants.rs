//! Constants on the device, kept by content: a partition's constant
//! tensors, its nodes' own constants (filters in the device's layout, a
//! `MEAN`'s ones) and quantization blocks are uploaded once per delegate.
//! Another partition, or another interpreter given the same delegate, whose
//! constant has the same bytes binds the same device buffer; the buffer is
//! freed with its last user. The key is the length and a 128-bit hash of
//! the bytes (two SipHash-1-3 with this process's random keys); no host
//! copy is kept.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::OnceLock;
use std::time::Duration;
use tensorplug_core::accelerator::{DeviceAddr, QueueId};
use tensorplug_host_bridge::prelude::DynAccelerator;

/// A constant's key: its length and its two hashes.
type Key = (usize, u64, u64);

/// The device buffers of the constants in use, by content.
#[derive(Default)]
pub struct Constants {
    by_key: HashMap<Key, Kept>,
    by_addr: HashMap<u64, Key>,
}

struct Kept {
    addr: DeviceAddr,
    users: usize,
}

/// What [`Constants::keep`] did: the buffer, and whether it uploaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding {
    pub addr: DeviceAddr,
    pub uploaded: bool,
}

fn key(bytes: &[u8]) -> Key {
    static STATES: OnceLock<[RandomState; 2]> = OnceLock::new();
    let [a, b] = STATES.get_or_init(|| [RandomState::new(), RandomState::new()]);
    (bytes.len(), a.hash_one(bytes), b.hash_one(bytes))
}

impl Constants {
    /// The device buffer of `bytes`: one already kept with these bytes, or
    /// a new one (allocated with `align`, written on `queue` within
    /// `timeout`).
    pub fn keep(
        &mut self,
        dev: &mut DynAccelerator,
        (queue, timeout): (QueueId, Duration),
        align: u64,
        bytes: &[u8],
    ) -> Result<Binding, String> {
        let k = key(bytes);
        if let Some(kept) = self.by_key.get_mut(&k) {
            kept.users += 1;
            return Ok(Binding {
                addr: kept.addr,
                uploaded: false,
            });
        }
        let addr = dev
            .allocate(bytes.len().max(1) as u64, align)
            .map_err(|e| format!("allocating {} bytes on the device: {e}", bytes.len()))?;
        if let Err(e) = dev.write_blocking(queue, addr, bytes, timeout) {
            let _ = dev.deallocate(addr);
            return Err(format!("writing a constant to the device: {e}"));
        }
        self.by_key.insert(k, Kept { addr, users: 1 });
        self.by_addr.insert(addr.0, k);
        Ok(Binding {
            addr,
            uploaded: true,
        })
    }

    /// Drops one use of `addr`; its last frees the buffer.
    pub fn release(&mut self, dev: &mut DynAccelerator, addr: DeviceAddr) {
        let Some(k) = self.by_addr.get(&addr.0).copied() else {
            return;
        };
        let Some(kept) = self.by_key.get_mut(&k) else {
            return;
        };
        kept.users -= 1;
        if kept.users == 0 {
            self.by_key.remove(&k);
            self.by_addr.remove(&addr.0);
            // A failed free leaks device memory only; nothing to report it to.
            let _ = dev.deallocate(addr);
        }
    }
}

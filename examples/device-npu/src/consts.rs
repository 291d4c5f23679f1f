//! The NPU's fixed numbers, a leaf module (it imports nothing).

/// The device address of the first byte of NPU memory.
pub const BASE: u64 = 0x1000_0000;
/// Ordered queues.
pub const QUEUES: u8 = 2;

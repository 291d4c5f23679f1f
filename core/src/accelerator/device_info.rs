//! [`DeviceInfo`]: what a device says about itself.

use super::caps::Capabilities;
use super::types::Version;

/// Static facts about a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Human-readable model name (truncated to 32 bytes).
    pub name: heapless::String<32>,
    /// Device memory, in bytes.
    pub memory_bytes: u64,
    /// Frequency of the device timestamp counter, in Hz.
    pub clock_hz: u64,
    /// The device ABI the device reports.
    pub abi_version: Version,
    /// Number of ordered queues.
    pub queues: u8,
    /// What the device runs ([`Capabilities::NONE`] until declared).
    pub capabilities: Capabilities,
}

impl DeviceInfo {
    /// Builds device info; a name longer than 32 bytes is cut at a char boundary.
    pub fn new(name: &str, memory_bytes: u64, clock_hz: u64, abi: Version, queues: u8) -> Self {
        let mut end = name.len().min(32);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        let mut short = heapless::String::new();
        // Cannot fail: `end <= 32` bytes.
        let _ = short.push_str(&name[..end]);
        Self {
            name: short,
            memory_bytes,
            clock_hz,
            abi_version: abi,
            queues,
            capabilities: Capabilities::NONE,
        }
    }

    /// The same info, declaring `capabilities`.
    pub const fn with_capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = capabilities;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn device_info_truncates_long_names_at_char_boundaries() {
        let long = "ä".repeat(40); // 80 bytes
        let info = DeviceInfo::new(&long, 1, 1, Version::new(1, 2, 3), 1);
        assert_eq!(info.name.len(), 32);
        assert_eq!(info.abi_version.to_string(), "1.2.3");
    }
}

//! The model as host tests, fuzz targets and `tensorplug-model-server
//! --link` build it: heap memory, no host bus, the host's clock.

use super::aligned::AlignedMemory;
use super::bus::NoHostBus;
use super::clock::HostClock;
use super::config::ModelConfig;
use super::device::Model;
use super::error::ModelError;

/// A [`Model`] in heap memory that reaches no host memory (no DMA) and
/// counts ticks on the host's clock.
pub type HostModel = Model<AlignedMemory, NoHostBus, HostClock>;

impl HostModel {
    /// A device after reset over `memory_bytes` zeroed bytes, its clock
    /// at `config.timing.freq_hz`.
    ///
    /// # Errors
    /// As [`Model::new`]: a `config` with a ring size not a power of two.
    pub fn on_host(memory_bytes: usize, config: ModelConfig) -> Result<Self, ModelError> {
        let clock = HostClock::new(config.timing.freq_hz);
        Self::new(
            AlignedMemory::zeroed(memory_bytes),
            NoHostBus,
            clock,
            config,
            false,
        )
    }
}

//! What the model is (its fixed registers) and how fast it pretends to be.

use tensorplug_abi::device::{Features, REFERENCE_FEATURES, REFERENCE_TIMESTAMP_FREQ_HZ};

/// The device-fixed register values of a model instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ModelConfig {
    /// The `FEATURES` word. `DMA` is only honoured when the model has a host
    /// bus; a memory-backed BAR leaves `IRQ` out (there is no interrupt line).
    pub features: Features,
    /// `MAX_RING_ENTRIES`: the largest `*_SIZE` accepted (a power of two).
    pub max_ring_entries: u32,
    /// Timing of the modelled clock.
    pub timing: Timing,
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            features: REFERENCE_FEATURES,
            max_ring_entries: 1 << 16,
            timing: Timing::REFERENCE,
        }
    }
}

/// Parameters of the timing model (see `docs/device-spec.md`, "Timing").
///
/// A command's modelled duration in ticks is
/// `command_latency_ticks + max(bytes / bandwidth, flops / flops_per_sec)`
/// converted at `TIMESTAMP_FREQ_HZ`, where the bandwidth is `host_bus_bytes_per_sec`
/// for `COPY_H2D`/`COPY_D2H` and `memory_bytes_per_sec` for everything else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Timing {
    /// Timestamp-counter frequency (`TIMESTAMP_FREQ_HZ`).
    pub freq_hz: u32,
    /// Fixed cost of every command (fetch, decode, completion write), in ticks.
    pub command_latency_ticks: u32,
    /// Host-bus (DMA) bandwidth for `COPY_H2D`/`COPY_D2H`, bytes per second.
    pub host_bus_bytes_per_sec: u64,
    /// Device-memory bandwidth for every other command, bytes per second.
    pub memory_bytes_per_sec: u64,
    /// Compute throughput, f32 operations per second.
    pub flops_per_sec: u64,
}

impl Timing {
    /// The reference board: 100 MHz counter, 1 µs per command, a PCIe Gen3
    /// x4-like 3.2 GB/s host bus, 12.8 GB/s DDR4 and 100 GFLOP/s of DSP slices.
    pub const REFERENCE: Timing = Timing {
        freq_hz: REFERENCE_TIMESTAMP_FREQ_HZ,
        command_latency_ticks: 100,
        host_bus_bytes_per_sec: 3_200_000_000,
        memory_bytes_per_sec: 12_800_000_000,
        flops_per_sec: 100_000_000_000,
    };

    /// Ticks a command that moves `host_bytes` over the host bus, `mem_bytes`
    /// through device memory and computes `flops` takes.
    pub fn duration_ticks(&self, host_bytes: u64, mem_bytes: u64, flops: u64) -> u64 {
        let ticks = |amount: u64, per_sec: u64| -> u64 {
            if per_sec == 0 {
                return 0;
            }
            let t = u128::from(amount) * u128::from(self.freq_hz) / u128::from(per_sec);
            u64::try_from(t).unwrap_or(u64::MAX)
        };
        let transfer = ticks(host_bytes, self.host_bus_bytes_per_sec)
            .max(ticks(mem_bytes, self.memory_bytes_per_sec));
        u64::from(self.command_latency_ticks)
            .saturating_add(transfer.max(ticks(flops, self.flops_per_sec)))
    }
}

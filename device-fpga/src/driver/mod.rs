//! The reference FPGA driver: bring-up and reset, a device-memory
//! allocator, the command/completion/event rings, fences, recovery, and the
//! [`Accelerator`](tensorplug_core::accelerator::Accelerator) implementation
//! (lowering of op descriptors to command descriptors).
//!
//! `no_std`, no allocation: every table has a fixed capacity. Every wait is
//! bounded by a [`Clock`] deadline and ends in [`Error::Timeout`], never a
//! hang. The protocol is `docs/device-abi.md`; the design is `docs/driver.md`.

mod accel;
mod alloc;
mod broadcast;
pub(crate) mod clock;
mod dma;
mod error;
mod events;
mod fields;
mod lower;
mod lower_window;
mod ops;
mod queue;
mod queue_state;
mod transpose;

pub use alloc::{Allocator, GRANULE};
#[cfg(feature = "std")]
pub use clock::StdClock;
pub use clock::{Clock, DelayClock};
pub use error::{Error, WaitFor, status_kind};
pub use ops::{elementwise_ops, ops_of};

use tensorplug_abi::device::{
    AbiVersion, COMMAND_DESCRIPTOR_SIZE, COMPLETION_DESCRIPTOR_SIZE, Control,
    DRIVER_ABI_REQUIREMENT, EVENT_DESCRIPTOR_SIZE, Features, OPS_WORDS, RESET_KEY, Register,
    Status, check_identity,
};
use tensorplug_core::accelerator::OpSet;

use crate::transport::Transport;
use clock::Deadline;
use queue_state::QueueState;

/// Tuning of the driver. Ring sizes are clamped to the device's
/// `MAX_RING_ENTRIES` and rounded down to a power of two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DriverConfig {
    /// Command-queue entries (64 bytes each).
    pub command_entries: u32,
    /// Completion-queue entries (16 bytes each).
    pub completion_entries: u32,
    /// Event-ring entries (16 bytes each); 0 = no event ring.
    pub event_entries: u32,
    /// Budget for `READY` after a reset and `ENABLED` after programming.
    pub ready_timeout_us: u64,
    /// Budget for a free command-queue slot (back-pressure).
    pub submit_timeout_us: u64,
    /// Budget for earlier commands to finish before a bulk-path copy, and
    /// for each chunk of a DMA copy.
    pub idle_timeout_us: u64,
    /// Copy host memory with `COPY_H2D`/`COPY_D2H` through the transport's
    /// DMA window (staged chunk by chunk) when the transport has one and
    /// the device reports `Features::DMA`; otherwise, and by default, use
    /// the bulk memory path. See `docs/driver.md`, "Copies".
    pub dma_copies: bool,
}

impl Default for DriverConfig {
    fn default() -> Self {
        Self {
            command_entries: 64,
            completion_entries: 64,
            event_entries: 1024,
            ready_timeout_us: 100_000,
            submit_timeout_us: 1_000_000,
            idle_timeout_us: 1_000_000,
            dma_copies: false,
        }
    }
}

/// What the device reported at bring-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DeviceFacts {
    /// The device ABI version (already checked compatible).
    pub abi: AbiVersion,
    /// `FEATURES`.
    pub features: Features,
    /// Device memory in bytes.
    pub memory_bytes: u64,
    /// Timestamp-counter frequency.
    pub timestamp_hz: u32,
    /// `MAX_RING_ENTRIES`.
    pub max_ring_entries: u32,
    /// The ops it runs, from `FEATURES` and the `OPS` registers ([`ops_of`]).
    pub ops: OpSet,
}

/// One ring in device memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Ring {
    /// Device address of entry 0.
    pub base: u64,
    /// Entries (a power of two; 0 = none).
    pub entries: u32,
}

impl Ring {
    /// Device address of the slot holding free-running index `index`.
    const fn slot_addr(&self, index: u32, entry_size: usize) -> u64 {
        self.base + (index & (self.entries - 1)) as u64 * entry_size as u64
    }
}

/// Where the three rings live: the top of device memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RingLayout {
    /// Command queue.
    pub commands: Ring,
    /// Completion queue.
    pub completions: Ring,
    /// Event ring.
    pub events: Ring,
}

/// The first granule of device memory is never handed out, so no
/// allocation has address 0 (TensorFlow reads a null pointer as failure).
const HEAP_START: u64 = GRANULE;
/// Written to `SCRATCH` before a reset (which clears it to 0).
const RESET_MARKER: u32 = 0x5450_4c47;
/// Ring area alignment.
const RING_ALIGN: u64 = 4096;

/// The reference FPGA driver over a [`Transport`] `T`, timed by a [`Clock`]
/// `C`, with room for `ALLOCS` live device-memory allocations.
#[derive(Debug)]
pub struct Driver<T, C, const ALLOCS: usize = 256> {
    transport: T,
    clock: C,
    config: DriverConfig,
    facts: DeviceFacts,
    rings: RingLayout,
    heap: Allocator<ALLOCS>,
    queue: QueueState,
    events_head: u32,
    dropped_seen: u32,
    profiling: bool,
}

impl<T: Transport, C: Clock, const ALLOCS: usize> Driver<T, C, ALLOCS> {
    /// Resets the device and brings it up (see `docs/device-abi.md`,
    /// "Bring-up and reset"). Refuses a device that is not a tensorplug FPGA
    /// or whose ABI this driver cannot use ([`Error::Identity`]).
    pub fn new(transport: T, clock: C, config: DriverConfig) -> Result<Self, Error> {
        let mut driver = Self {
            transport,
            clock,
            config,
            facts: DeviceFacts {
                abi: AbiVersion::new(0, 0, 0),
                features: Features(0),
                memory_bytes: 0,
                timestamp_hz: 0,
                max_ring_entries: 0,
                ops: OpSet::EMPTY,
            },
            rings: RingLayout::default(),
            heap: Allocator::new(0, 0),
            queue: QueueState::default(),
            events_head: 0,
            dropped_seen: 0,
            profiling: false,
        };
        driver.reset_and_bring_up()?;
        driver.heap = Allocator::new(HEAP_START, driver.rings.commands.base);
        Ok(driver)
    }

    /// What the device reported at bring-up.
    pub const fn facts(&self) -> &DeviceFacts {
        &self.facts
    }

    /// Where the rings are.
    pub const fn rings(&self) -> &RingLayout {
        &self.rings
    }

    /// The configuration in effect.
    pub const fn config(&self) -> &DriverConfig {
        &self.config
    }

    /// The transport (e.g. to reach a model's fault hooks).
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// Gives the transport back.
    pub fn into_transport(self) -> T {
        self.transport
    }

    /// Commands submitted and completed so far (free-running counts).
    pub const fn command_counts(&self) -> (u64, u64) {
        (self.queue.submitted, self.queue.completed)
    }

    /// Steps 1–5 of bring-up. Outstanding commands are marked aborted.
    fn reset_and_bring_up(&mut self) -> Result<(), Error> {
        #[cfg(feature = "defmt")]
        defmt::info!(
            "tensorplug-fpga: reset, {} commands outstanding",
            self.queue.submitted - self.queue.completed
        );
        self.queue.abort_outstanding();
        self.events_head = 0;
        self.dropped_seen = 0;
        // Bus check and reset handshake: SCRATCH reads back what we wrote,
        // and reads its reset value 0 once the reset has happened (a
        // memory-backed BAR may show a STATUS from before the reset).
        self.write(Register::SCRATCH, RESET_MARKER)?;
        if self.read(Register::SCRATCH)? != RESET_MARKER {
            return Err(Error::BusCheck);
        }
        self.write(Register::RESET, RESET_KEY)?;
        self.wait_reset_done()?;

        let id = self.read(Register::ID)?;
        let abi_word = self.read(Register::ABI_VERSION)?;
        let abi = check_identity(id, abi_word, DRIVER_ABI_REQUIREMENT)?;
        let features = Features(self.read(Register::FEATURES)?);
        let memory_bytes = u64::from(self.read(Register::DEVICE_MEM_SIZE_LO)?)
            | u64::from(self.read(Register::DEVICE_MEM_SIZE_HI)?) << 32;
        let mut ops_words = [0; OPS_WORDS];
        if features.contains(Features::CATALOGUE) {
            for (w, word) in ops_words.iter_mut().enumerate() {
                *word = self.read(Register::ops(w))?;
            }
        }
        let facts = DeviceFacts {
            abi,
            features,
            memory_bytes,
            timestamp_hz: self.read(Register::TIMESTAMP_FREQ_HZ)?,
            max_ring_entries: self.read(Register::MAX_RING_ENTRIES)?,
            ops: ops_of(features, &ops_words),
        };
        // A re-bring-up must find the same device: allocations stay valid.
        if self.facts.memory_bytes != 0 && self.facts.memory_bytes != memory_bytes {
            return Err(Error::Protocol);
        }
        self.facts = facts;
        self.rings = self.place_rings()?;
        self.program_rings()?;
        #[cfg(feature = "defmt")]
        defmt::debug!("tensorplug-fpga: up, ABI {}, {} bytes", abi, memory_bytes);
        Ok(())
    }

    /// Rings at the top of device memory, command queue lowest.
    fn place_rings(&self) -> Result<RingLayout, Error> {
        let entries = |want: u32| {
            let max = self.facts.max_ring_entries;
            match want.min(max) {
                0 => 0,
                n => 1 << n.ilog2(),
            }
        };
        let commands = entries(self.config.command_entries);
        let completions = entries(self.config.completion_entries);
        let events = if self.facts.features.contains(Features::EVENT_RING) {
            entries(self.config.event_entries)
        } else {
            0
        };
        if commands == 0 || completions == 0 {
            return Err(Error::InvalidArgument);
        }
        let bytes = |n: u32, size: usize| u64::from(n) * size as u64;
        let total = (bytes(commands, COMMAND_DESCRIPTOR_SIZE)
            + bytes(completions, COMPLETION_DESCRIPTOR_SIZE)
            + bytes(events, EVENT_DESCRIPTOR_SIZE))
        .next_multiple_of(RING_ALIGN);
        let base = (self.facts.memory_bytes / RING_ALIGN * RING_ALIGN)
            .checked_sub(total)
            .filter(|&b| b >= HEAP_START + RING_ALIGN)
            .ok_or(Error::OutOfMemory {
                requested: total,
                largest_free: self.facts.memory_bytes,
            })?;
        let cpl_base = base + bytes(commands, COMMAND_DESCRIPTOR_SIZE);
        let ev_base = cpl_base + bytes(completions, COMPLETION_DESCRIPTOR_SIZE);
        Ok(RingLayout {
            commands: Ring {
                base,
                entries: commands,
            },
            completions: Ring {
                base: cpl_base,
                entries: completions,
            },
            events: Ring {
                base: ev_base,
                entries: events,
            },
        })
    }

    /// Step 5: ring registers, IRQs off (the driver polls), then `ENABLE`.
    fn program_rings(&mut self) -> Result<(), Error> {
        let rings = self.rings;
        // Completion memory starts zeroed, so phase bits read "not written".
        let zeros = [0u8; 256];
        let cpl_bytes = u64::from(rings.completions.entries) * COMPLETION_DESCRIPTOR_SIZE as u64;
        let mut at = 0;
        while at < cpl_bytes {
            let n = (cpl_bytes - at).min(zeros.len() as u64) as usize;
            self.transport
                .write_mem(rings.completions.base + at, &zeros[..n])?;
            at += n as u64;
        }
        for (lo, hi, size, ring) in [
            (
                Register::CMDQ_BASE_LO,
                Register::CMDQ_BASE_HI,
                Register::CMDQ_SIZE,
                rings.commands,
            ),
            (
                Register::CPLQ_BASE_LO,
                Register::CPLQ_BASE_HI,
                Register::CPLQ_SIZE,
                rings.completions,
            ),
            (
                Register::EVQ_BASE_LO,
                Register::EVQ_BASE_HI,
                Register::EVQ_SIZE,
                rings.events,
            ),
        ] {
            self.write(lo, ring.base as u32)?;
            self.write(hi, (ring.base >> 32) as u32)?;
            self.write(size, ring.entries)?;
        }
        self.write(Register::IRQ_ENABLE, 0)?;
        self.write(Register::EVQ_IRQ_THRESHOLD, 0)?;
        let mut control = Control::ENABLE;
        if self.facts.features.contains(Features::EVENT_RING) {
            // Events are always stamped; commands opt out with NO_EVENTS
            // while profiling is off (no CONTROL change while enabled).
            control = control | Control::EVENTS;
        }
        self.write(Register::CONTROL, control.bits())?;
        self.wait_status(Status::ENABLED, WaitFor::Enabled)
    }

    /// Polls until `SCRATCH` reads 0 and `STATUS.READY` is set.
    fn wait_reset_done(&mut self) -> Result<(), Error> {
        let mut deadline = Deadline::start(&mut self.clock, self.config.ready_timeout_us * 1000);
        loop {
            if self.read(Register::SCRATCH)? == 0
                && Status(self.read(Register::STATUS)?).contains(Status::READY)
            {
                return Ok(());
            }
            if !deadline.keep_waiting(&mut self.clock) {
                return Err(Error::Timeout {
                    waiting_for: WaitFor::Ready,
                    after_us: deadline.budget_us(),
                });
            }
        }
    }

    /// Polls `STATUS` until `bit` is set; a halt ends the wait early.
    fn wait_status(&mut self, bit: Status, waiting_for: WaitFor) -> Result<(), Error> {
        let mut deadline = Deadline::start(&mut self.clock, self.config.ready_timeout_us * 1000);
        loop {
            let status = Status(self.read(Register::STATUS)?);
            if status.contains(bit) {
                return Ok(());
            }
            if status.contains(Status::HALTED) {
                return Err(self.halted()?);
            }
            if !deadline.keep_waiting(&mut self.clock) {
                return Err(Error::Timeout {
                    waiting_for,
                    after_us: deadline.budget_us(),
                });
            }
        }
    }

    /// The `Halted` error with the device's `HALT_REASON`.
    fn halted(&mut self) -> Result<Error, Error> {
        let reason = self.read(Register::HALT_REASON)?;
        Ok(Error::Halted {
            reason: tensorplug_abi::device::CompletionStatus(reason as u16),
        })
    }

    /// Why the device stopped making progress: halted, lost its rings, or
    /// (if neither) `fallback`.
    fn diagnose(&mut self, fallback: Error) -> Error {
        match self.read(Register::STATUS) {
            Ok(s) if Status(s).contains(Status::HALTED) => self.halted().unwrap_or_else(|e| e),
            Ok(s) if !Status(s).contains(Status::ENABLED) => Error::DeviceReset,
            Ok(_) => fallback,
            Err(e) => e,
        }
    }

    fn read(&mut self, reg: Register) -> Result<u32, Error> {
        Ok(self.transport.read_reg(reg.0)?)
    }

    fn write(&mut self, reg: Register, value: u32) -> Result<(), Error> {
        Ok(self.transport.write_reg(reg.0, value)?)
    }
}

//! The register file: 32-bit little-endian registers at 4-byte-aligned byte
//! offsets. 64-bit values are `_LO`/`_HI` pairs (reading `TIMESTAMP_LO`
//! latches `TIMESTAMP_HI`, so the pair is read consistently low word first).

/// A register's byte offset in the register space (PCIe BAR 0, or the
/// register address of an SPI frame).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Register(pub u32);

/// Size in bytes of the register space (one 4 KiB page). Offsets in it that
/// name no register read 0 and ignore writes; offsets past it are invalid.
pub const REGISTER_SPACE_SIZE: u32 = 0x1000;

/// The value the `RESET` register must be written with to reset the device:
/// the bytes `"RSET"` read as a little-endian `u32`.
pub const RESET_KEY: u32 = 0x5445_5352;

impl Register {
    /// RO. [`DEVICE_MAGIC`](super::DEVICE_MAGIC).
    pub const ID: Register = Register(0x000);
    /// RO. The device ABI version, `major << 16 | minor << 8 | patch`.
    pub const ABI_VERSION: Register = Register(0x004);
    /// RO. [`Features`](super::Features) bits.
    pub const FEATURES: Register = Register(0x008);
    /// RW. Free for the host; for bus sanity checks. Reset value 0.
    pub const SCRATCH: Register = Register(0x00C);
    /// RO. Device memory size in bytes, low word.
    pub const DEVICE_MEM_SIZE_LO: Register = Register(0x010);
    /// RO. Device memory size in bytes, high word.
    pub const DEVICE_MEM_SIZE_HI: Register = Register(0x014);
    /// RO. Ticks per second of the timestamp counter.
    pub const TIMESTAMP_FREQ_HZ: Register = Register(0x018);
    /// RO. Largest entry count the device accepts in any `*_SIZE` register.
    pub const MAX_RING_ENTRIES: Register = Register(0x01C);
    /// RW. [`Control`] bits.
    pub const CONTROL: Register = Register(0x020);
    /// RO. [`Status`] bits.
    pub const STATUS: Register = Register(0x024);
    /// WO. Writing [`RESET_KEY`] resets the device; other values are ignored.
    pub const RESET: Register = Register(0x028);
    /// RO. Why `Status::HALTED` is set: a [`CompletionStatus`](super::CompletionStatus) value.
    pub const HALT_REASON: Register = Register(0x02C);
    /// RW1C. [`Irq`] bits pending; write 1 to clear.
    pub const IRQ_STATUS: Register = Register(0x030);
    /// RW. [`Irq`] bits that drive the interrupt line (the IRQ mask).
    pub const IRQ_ENABLE: Register = Register(0x034);
    /// RO. Timestamp counter, low word; reading it latches the high word.
    pub const TIMESTAMP_LO: Register = Register(0x038);
    /// RO. Timestamp counter, high word as latched by the last `TIMESTAMP_LO` read.
    pub const TIMESTAMP_HI: Register = Register(0x03C);

    /// RW. Command queue base address, low word (64-byte aligned).
    pub const CMDQ_BASE_LO: Register = Register(0x040);
    /// RW. Command queue base address, high word.
    pub const CMDQ_BASE_HI: Register = Register(0x044);
    /// RW. Command queue entry count: a power of two, 0 = no queue.
    pub const CMDQ_SIZE: Register = Register(0x048);
    /// RO. Consumer index: commands the device has taken (free-running).
    pub const CMDQ_HEAD: Register = Register(0x04C);
    /// RO. Producer index as last written to `CMDQ_DOORBELL`.
    pub const CMDQ_TAIL: Register = Register(0x050);
    /// WO. The doorbell: write the new producer index to submit commands.
    pub const CMDQ_DOORBELL: Register = Register(0x054);

    /// RW. Completion queue base address, low word (16-byte aligned).
    pub const CPLQ_BASE_LO: Register = Register(0x060);
    /// RW. Completion queue base address, high word.
    pub const CPLQ_BASE_HI: Register = Register(0x064);
    /// RW. Completion queue entry count: a power of two, 0 = no queue.
    pub const CPLQ_SIZE: Register = Register(0x068);
    /// RW. Consumer index: completions the host has taken (free-running).
    pub const CPLQ_HEAD: Register = Register(0x06C);
    /// RO. Producer index: completions the device has written (free-running).
    pub const CPLQ_TAIL: Register = Register(0x070);

    /// RW. Event ring base address, low word (16-byte aligned).
    pub const EVQ_BASE_LO: Register = Register(0x080);
    /// RW. Event ring base address, high word.
    pub const EVQ_BASE_HI: Register = Register(0x084);
    /// RW. Event ring entry count: a power of two, 0 = no ring.
    pub const EVQ_SIZE: Register = Register(0x088);
    /// RW. Consumer index: events the host has taken (free-running).
    pub const EVQ_HEAD: Register = Register(0x08C);
    /// RO. Producer index: events the device has written (free-running).
    pub const EVQ_TAIL: Register = Register(0x090);
    /// RO. Events dropped because the ring was full (wrapping counter).
    pub const EVQ_DROPPED: Register = Register(0x094);
    /// RW. `Irq::EVENTS` is raised when `EVQ_TAIL - EVQ_HEAD` reaches this; 0 = never.
    pub const EVQ_IRQ_THRESHOLD: Register = Register(0x098);

    /// RO, ABI 1.3 (`Features::CATALOGUE`): the first of [`OPS_WORDS`]
    /// words listing the catalogue ops `UNARY` and `BINARY` accept: bit
    /// `i % 32` of word `i / 32` (at `OPS0 + 4·(i / 32)`) is the op of code
    /// `i + 1`. Bits of other ops read 0.
    pub const OPS0: Register = Register(0x0A0);

    /// The `OPS` word `word` (`< OPS_WORDS`).
    pub const fn ops(word: usize) -> Register {
        Register(Self::OPS0.0 + 4 * word as u32)
    }

    /// The byte offset as a `usize`, for indexing a register window.
    pub const fn offset(self) -> usize {
        self.0 as usize
    }
}

/// Words of the `OPS` registers ([`Register::OPS0`]): 256 catalogue ops.
pub const OPS_WORDS: usize = 8;

/// Bits of [`Register::CONTROL`]. Reset value 0.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Control(pub u32);

impl Control {
    /// Start processing the command queue. Ring registers are latched when
    /// this bit goes 0 → 1 and must not change while it is set.
    pub const ENABLE: Control = Control(1 << 0);
    /// Ring base addresses are host bus addresses (needs `Features::DMA`);
    /// clear: device-memory addresses.
    pub const HOST_RINGS: Control = Control(1 << 1);
    /// Stamp profiling events into the event ring (needs `Features::EVENT_RING`).
    pub const EVENTS: Control = Control(1 << 2);
}

/// Bits of [`Register::STATUS`]. Reset value after reset completes: `READY`.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Status(pub u32);

impl Status {
    /// Reset is complete and registers may be programmed.
    pub const READY: Status = Status(1 << 0);
    /// A command is executing or the command queue is not empty.
    pub const BUSY: Status = Status(1 << 1);
    /// The device stopped on a fatal error; see `HALT_REASON`. Only a reset clears it.
    pub const HALTED: Status = Status(1 << 2);
    /// `CONTROL.ENABLE` was accepted and the rings are latched.
    pub const ENABLED: Status = Status(1 << 3);
}

/// Interrupt sources: bits of [`Register::IRQ_STATUS`] and [`Register::IRQ_ENABLE`].
/// Reset value 0 in both (nothing pending, everything masked).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Irq(pub u32);

impl Irq {
    /// A completion with `CommandFlags::IRQ` was written.
    pub const COMPLETION: Irq = Irq(1 << 0);
    /// The event ring reached `EVQ_IRQ_THRESHOLD` entries.
    pub const EVENTS: Irq = Irq(1 << 1);
    /// An event was dropped because the event ring was full.
    pub const EVENTS_DROPPED: Irq = Irq(1 << 2);
    /// The device halted (`Status::HALTED`).
    pub const HALTED: Irq = Irq(1 << 3);
}

macro_rules! bit_ops {
    ($($t:ident),*) => {$(
        impl $t {
            /// The raw register word.
            pub const fn bits(self) -> u32 {
                self.0
            }
            /// True if every bit of `other` is set in `self`.
            pub const fn contains(self, other: $t) -> bool {
                self.0 & other.0 == other.0
            }
            /// `self` and `other` together.
            pub const fn union(self, other: $t) -> $t {
                $t(self.0 | other.0)
            }
        }
        impl core::ops::BitOr for $t {
            type Output = $t;
            fn bitor(self, rhs: $t) -> $t {
                self.union(rhs)
            }
        }
    )*};
}
bit_ops!(Control, Status, Irq);

//! The device: register file, rings, command processing.

use tensorplug_abi::device::{
    COMMAND_DESCRIPTOR_SIZE, COMPLETION_DESCRIPTOR_SIZE, CommandDescriptor, CommandFlags,
    CompletionDescriptor, CompletionFlags, CompletionStatus, Control, DEVICE_ABI_VERSION_WORD,
    DEVICE_MAGIC, EVENT_DESCRIPTOR_SIZE, EventDescriptor, EventKind, Features, Irq, OPS_WORDS,
    Opcode, RESET_KEY, Register, Status, expected_phase,
};

use super::bus::HostBus;
use super::clock::{DeviceClock, TickSource};
use super::config::ModelConfig;
use super::error::ModelError;
use super::execute::{ExecError, execute};
use super::faults::{DEVICE_FAULT_DETAIL, Faults};
use super::memory::{DeviceMemory, MemoryView};
use super::regs::{RegisterFile, RingRegs};
use super::ring;
use super::validate::{Rejection, validate};
use crate::kernels::{BinaryOp, UnaryOp};

/// What one call of [`Model::service`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Serviced {
    /// Commands taken from the command queue.
    pub commands: u32,
    /// True if the device is waiting for room in the completion queue.
    pub back_pressured: bool,
}

/// The behavioural model of the reference FPGA.
///
/// - `M`: device memory, caller-provided [`DeviceMemory`] (4-byte aligned;
///   its size is `DEVICE_MEM_SIZE`);
/// - `B`: the host bus for DMA ([`NoHostBus`](super::NoHostBus) if none;
///   then `Features::DMA` is not reported);
/// - `C`: the tick source of the timestamp counter.
///
/// Register accesses ([`Model::read_reg`]/[`Model::write_reg`]) have the
/// semantics of `docs/device-abi.md`; commands run when the embedder calls
/// [`Model::service`] (the SPI target does after every access, the host
/// thread in its poll loop).
#[derive(Debug)]
pub struct Model<M, B, C> {
    mem: M,
    bus: B,
    clock: DeviceClock<C>,
    config: ModelConfig,
    regs: RegisterFile,
    /// Ring registers latched at `ENABLE`; `None` while disabled.
    latched: Option<[RingRegs; 3]>,
    faults: Faults,
}

impl<M: DeviceMemory, B: HostBus, C: TickSource> Model<M, B, C> {
    /// A device after reset (`READY`) over `mem`, reaching the host through
    /// `bus`. `has_dma` says whether `bus` reaches host memory; without it
    /// `Features::DMA` is cleared from `config.features`.
    pub fn new(
        mut mem: M,
        bus: B,
        clock: C,
        mut config: ModelConfig,
        has_dma: bool,
    ) -> Result<Self, ModelError> {
        if !mem.base().as_ptr().addr().is_multiple_of(4) {
            return Err(ModelError::MisalignedMemory);
        }
        if !config.max_ring_entries.is_power_of_two() {
            return Err(ModelError::BadConfig);
        }
        if !has_dma {
            config.features = Features(config.features.0 & !Features::DMA.0);
        }
        let mut regs = RegisterFile::resetting();
        regs.set(Status::READY, true);
        Ok(Self {
            mem,
            bus,
            clock: DeviceClock::new(clock),
            config,
            regs,
            latched: None,
            faults: Faults::default(),
        })
    }

    /// The configuration (features as reported).
    pub const fn config(&self) -> &ModelConfig {
        &self.config
    }
    /// The fault switches.
    pub fn faults_mut(&mut self) -> &mut Faults {
        &mut self.faults
    }
    /// The fault switches as they are now (one-shots clear when they fire).
    pub const fn faults(&self) -> &Faults {
        &self.faults
    }
    /// The tick source (e.g. to advance a [`ManualClock`](super::ManualClock)).
    pub fn tick_source_mut(&mut self) -> &mut C {
        self.clock.source_mut()
    }
    /// Copies device memory at `addr` into `buf`; `Err` if out of range.
    pub fn read_memory(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), OutOfRange> {
        let r = ring::mem_range(addr, buf.len(), self.mem.size()).ok_or(OutOfRange)?;
        let view = MemoryView::new(&mut self.mem);
        buf.copy_from_slice(view.bytes(&r).ok_or(OutOfRange)?);
        Ok(())
    }
    /// Copies `data` into device memory at `addr`; `Err` if out of range.
    pub fn write_memory(&mut self, addr: u64, data: &[u8]) -> Result<(), OutOfRange> {
        let r = ring::mem_range(addr, data.len(), self.mem.size()).ok_or(OutOfRange)?;
        let mut view = MemoryView::new(&mut self.mem);
        view.bytes_mut(&r).ok_or(OutOfRange)?.copy_from_slice(data);
        Ok(())
    }
    /// The host bus.
    pub fn bus_mut(&mut self) -> &mut B {
        &mut self.bus
    }
    /// The timestamp counter now (no latching side effect).
    pub fn timestamp(&mut self) -> u64 {
        self.clock.now()
    }
    /// Level of the interrupt line: `IRQ_STATUS & IRQ_ENABLE != 0`.
    pub const fn irq_line(&self) -> bool {
        self.regs.irq_status & self.regs.irq_enable != 0
    }

    /// Reads the register at byte `offset`. Offsets that name no register
    /// (or are misaligned) read 0.
    pub fn read_reg(&mut self, offset: u32) -> u32 {
        let r = &self.regs;
        match Register(offset) {
            Register::ID => DEVICE_MAGIC,
            Register::ABI_VERSION => DEVICE_ABI_VERSION_WORD,
            Register::FEATURES => self.config.features.0,
            Register::SCRATCH => r.scratch,
            Register::DEVICE_MEM_SIZE_LO => self.mem.size() as u64 as u32,
            Register::DEVICE_MEM_SIZE_HI => ((self.mem.size() as u64) >> 32) as u32,
            Register::TIMESTAMP_FREQ_HZ => self.config.timing.freq_hz,
            Register::MAX_RING_ENTRIES => self.config.max_ring_entries,
            Register::CONTROL => r.control,
            Register::STATUS => self.status(),
            Register::HALT_REASON => r.halt_reason,
            Register::IRQ_STATUS => r.irq_status,
            Register::IRQ_ENABLE => r.irq_enable,
            Register::TIMESTAMP_LO => {
                let now = self.clock.now();
                self.regs.timestamp_hi_latch = (now >> 32) as u32;
                now as u32
            }
            Register::TIMESTAMP_HI => r.timestamp_hi_latch,
            Register::CMDQ_BASE_LO => r.cmdq.base as u32,
            Register::CMDQ_BASE_HI => (r.cmdq.base >> 32) as u32,
            Register::CMDQ_SIZE => r.cmdq.size,
            Register::CMDQ_HEAD => r.cmdq.head,
            Register::CMDQ_TAIL => r.cmdq.tail,
            Register::CPLQ_BASE_LO => r.cplq.base as u32,
            Register::CPLQ_BASE_HI => (r.cplq.base >> 32) as u32,
            Register::CPLQ_SIZE => r.cplq.size,
            Register::CPLQ_HEAD => r.cplq.head,
            Register::CPLQ_TAIL => r.cplq.tail,
            Register::EVQ_BASE_LO => r.evq.base as u32,
            Register::EVQ_BASE_HI => (r.evq.base >> 32) as u32,
            Register::EVQ_SIZE => r.evq.size,
            Register::EVQ_HEAD => r.evq.head,
            Register::EVQ_TAIL => r.evq.tail,
            Register::EVQ_DROPPED => r.evq_dropped,
            Register::EVQ_IRQ_THRESHOLD => r.evq_irq_threshold,
            Register(o) if self.config.features.contains(Features::CATALOGUE) => ops_word(o),
            // WO (`RESET`, `CMDQ_DOORBELL`) and unnamed offsets.
            _ => 0,
        }
    }

    /// `STATUS`: `BUSY` while the queue holds commands or the device is stuck.
    fn status(&self) -> u32 {
        let mut s = self.regs.status;
        if self.regs.cmdq.used() != 0 || self.faults.stuck_busy {
            s |= Status::BUSY.0;
        }
        s
    }

    /// Writes the register at byte `offset`. RO registers and unnamed
    /// offsets ignore writes; ring registers ignore writes while `ENABLE` is set.
    pub fn write_reg(&mut self, offset: u32, value: u32) {
        let enabled = self.latched.is_some();
        let r = &mut self.regs;
        match Register(offset) {
            Register::SCRATCH => r.scratch = value,
            Register::CONTROL => self.write_control(value),
            Register::RESET if value == RESET_KEY => self.reset(),
            Register::IRQ_STATUS => r.irq_status &= !value,
            Register::IRQ_ENABLE => r.irq_enable = value,
            Register::CMDQ_DOORBELL => self.doorbell(value),
            Register::CPLQ_HEAD => r.cplq.head = value,
            Register::EVQ_HEAD => r.evq.head = value,
            Register::EVQ_IRQ_THRESHOLD => r.evq_irq_threshold = value,
            reg if !enabled => {
                let (ring, what) = match reg {
                    Register::CMDQ_BASE_LO | Register::CMDQ_BASE_HI | Register::CMDQ_SIZE => {
                        (&mut r.cmdq, reg.0 - Register::CMDQ_BASE_LO.0)
                    }
                    Register::CPLQ_BASE_LO | Register::CPLQ_BASE_HI | Register::CPLQ_SIZE => {
                        (&mut r.cplq, reg.0 - Register::CPLQ_BASE_LO.0)
                    }
                    Register::EVQ_BASE_LO | Register::EVQ_BASE_HI | Register::EVQ_SIZE => {
                        (&mut r.evq, reg.0 - Register::EVQ_BASE_LO.0)
                    }
                    _ => return,
                };
                match what {
                    0 => ring.set_base_half(false, value),
                    4 => ring.set_base_half(true, value),
                    _ => ring.size = value,
                }
            }
            _ => {}
        }
    }

    /// Resets the device: aborts everything, registers to reset values,
    /// `READY` set again at the next [`Model::service`]. Memory is kept.
    pub fn reset(&mut self) {
        self.regs = RegisterFile::resetting();
        self.latched = None;
        self.clock.reset();
    }

    fn write_control(&mut self, value: u32) {
        let was = self.regs.control & Control::ENABLE.0 != 0;
        self.regs.control = value;
        let now = value & Control::ENABLE.0 != 0;
        if now && !was && !self.regs.has(Status::HALTED) {
            match ring::check_rings(&self.regs, value, &self.config, self.mem.size()) {
                Ok(()) => {
                    self.latched = Some([self.regs.cmdq, self.regs.cplq, self.regs.evq]);
                    self.regs.set(Status::ENABLED, true);
                }
                Err(reason) => self.halt(reason),
            }
        } else if !now {
            self.latched = None;
            self.regs.set(Status::ENABLED, false);
        }
    }

    fn doorbell(&mut self, tail: u32) {
        let size = self.latched.map_or(self.regs.cmdq.size, |l| l[0].size);
        if tail.wrapping_sub(self.regs.cmdq.head) > size {
            self.halt(CompletionStatus::INVALID_ARGUMENT);
        } else {
            self.regs.cmdq.tail = tail;
        }
    }

    fn halt(&mut self, reason: CompletionStatus) {
        self.regs.set(Status::HALTED, true);
        self.regs.halt_reason = u32::from(reason.0);
        self.regs.irq_status |= Irq::HALTED.0;
    }

    /// Runs the device: finishes a pending reset, then takes and executes
    /// commands until the queue is empty, the completion queue is full, or
    /// the device is halted, disabled or stuck. Never inlined: on the MCU
    /// this is the fabric's work, counted apart by `cargo xtask size`.
    #[inline(never)]
    pub fn service(&mut self) -> Serviced {
        let mut done = Serviced::default();
        if !self.regs.has(Status::READY) {
            self.regs.set(Status::READY, true);
            return done;
        }
        loop {
            let Some([cmdq, cplq, _]) = self.latched else {
                return done;
            };
            if self.regs.has(Status::HALTED) || self.faults.stuck_busy || self.regs.cmdq.used() == 0
            {
                return done;
            }
            if self.regs.cplq.tail.wrapping_sub(self.regs.cplq.head) >= cplq.size {
                done.back_pressured = true;
                return done;
            }
            let index = self.regs.cmdq.head;
            let mut raw = [0u8; COMMAND_DESCRIPTOR_SIZE];
            let host = self.regs.control & Control::HOST_RINGS.0 != 0;
            if self
                .ring_read(
                    host,
                    ring::slot(&cmdq, index, COMMAND_DESCRIPTOR_SIZE),
                    &mut raw,
                )
                .is_err()
            {
                self.halt(CompletionStatus::BUS_ERROR);
                return done;
            }
            self.regs.cmdq.head = index.wrapping_add(1);
            done.commands += 1;
            self.run_command(&CommandDescriptor::from_le_bytes(&raw), index);
        }
    }

    fn run_command(&mut self, cmd: &CommandDescriptor, index: u32) {
        let events = self.regs.control & Control::EVENTS.0 != 0
            && !cmd.flags.contains(CommandFlags::NO_EVENTS);
        let checked = validate(cmd, self.config.features, self.mem.size());
        let duration = match &checked {
            Ok(work) => {
                let (host, mem, flops) = work.cost();
                self.config.timing.duration_ticks(host, mem, flops)
            }
            Err(_) => u64::from(self.config.timing.command_latency_ticks),
        };
        let (begin, end) = self.clock.book(duration);
        let (begin_kind, end_kind, arg) = event_kinds(cmd);
        if events {
            self.push_event(EventDescriptor {
                timestamp: begin,
                arg,
                op_id: cmd.tag,
                queue: cmd.stream,
                kind: begin_kind,
            });
        }
        if self.faults.reset_mid_command {
            self.faults.reset_mid_command = false;
            self.reset();
            return;
        }
        let mut outcome = match checked {
            Ok(work) => match execute(&work, &mut MemoryView::new(&mut self.mem), &mut self.bus) {
                Ok(()) => Rejection {
                    status: CompletionStatus::OK,
                    detail: 0,
                },
                Err(ExecError::Bus) => Rejection {
                    status: CompletionStatus::BUS_ERROR,
                    detail: 0,
                },
                Err(ExecError::Internal) => Rejection {
                    status: CompletionStatus::DEVICE_FAULT,
                    detail: 1,
                },
                Err(ExecError::Quantization(e)) => Rejection {
                    status: CompletionStatus::INVALID_ARGUMENT,
                    detail: tensorplug_core::quant::block::detail(e),
                },
                Err(ExecError::Index) => Rejection {
                    status: CompletionStatus::INVALID_ARGUMENT,
                    detail: super::validate::field::SRC1,
                },
            },
            Err(rejection) => rejection,
        };
        if self.faults.fault_next_command {
            self.faults.fault_next_command = false;
            outcome = Rejection {
                status: CompletionStatus::DEVICE_FAULT,
                detail: DEVICE_FAULT_DETAIL,
            };
        }
        if events {
            self.push_event(EventDescriptor {
                timestamp: end,
                arg,
                op_id: cmd.tag,
                queue: cmd.stream,
                kind: end_kind,
            });
        }
        self.complete(cmd, index, outcome);
        if outcome.status == CompletionStatus::DEVICE_FAULT {
            self.halt(CompletionStatus::DEVICE_FAULT);
        }
    }

    fn complete(&mut self, cmd: &CommandDescriptor, index: u32, outcome: Rejection) {
        if self.faults.lose_next_completion {
            self.faults.lose_next_completion = false;
            return;
        }
        let Some([_, cplq, _]) = self.latched else {
            return;
        };
        let tail = self.regs.cplq.tail;
        let phase = if expected_phase(tail, cplq.size) {
            CompletionFlags::PHASE.0
        } else {
            0
        };
        let entry = CompletionDescriptor {
            tag: cmd.tag,
            status: outcome.status,
            stream: cmd.stream,
            flags: CompletionFlags(phase),
            _reserved0: 0,
            command_index: index,
            detail: outcome.detail,
        };
        let host = self.regs.control & Control::HOST_RINGS.0 != 0;
        let at = ring::slot(&cplq, tail, COMPLETION_DESCRIPTOR_SIZE);
        if self.ring_write(host, at, &entry.to_le_bytes()).is_err() {
            self.halt(CompletionStatus::BUS_ERROR);
            return;
        }
        self.regs.cplq.tail = tail.wrapping_add(1);
        if cmd.flags.contains(CommandFlags::IRQ) {
            self.regs.irq_status |= Irq::COMPLETION.0;
        }
    }

    fn push_event(&mut self, event: EventDescriptor) {
        let Some([_, _, evq]) = self.latched else {
            return;
        };
        let capacity = self
            .faults
            .cap_event_ring
            .map_or(evq.size, |cap| cap.min(evq.size));
        let used = self.regs.evq.used();
        if used >= capacity {
            self.regs.evq_dropped = self.regs.evq_dropped.wrapping_add(1);
            self.regs.irq_status |= Irq::EVENTS_DROPPED.0;
            return;
        }
        let host = self.regs.control & Control::HOST_RINGS.0 != 0;
        let at = ring::slot(&evq, self.regs.evq.tail, EVENT_DESCRIPTOR_SIZE);
        if self.ring_write(host, at, &event.to_le_bytes()).is_err() {
            self.halt(CompletionStatus::BUS_ERROR);
            return;
        }
        self.regs.evq.tail = self.regs.evq.tail.wrapping_add(1);
        let threshold = self.regs.evq_irq_threshold;
        if threshold != 0 && used + 1 >= threshold {
            self.regs.irq_status |= Irq::EVENTS.0;
        }
    }

    fn ring_read(&mut self, host: bool, addr: u64, buf: &mut [u8]) -> Result<(), ()> {
        if host {
            return self.bus.read(addr, buf).map_err(drop);
        }
        self.read_memory(addr, buf).map_err(drop)
    }

    fn ring_write(&mut self, host: bool, addr: u64, data: &[u8]) -> Result<(), ()> {
        if host {
            return self.bus.write(addr, data).map_err(drop);
        }
        self.write_memory(addr, data).map_err(drop)
    }
}

impl<M: AsMut<[u8]> + AsRef<[u8]>, B: HostBus, C: TickSource> Model<M, B, C> {
    /// Device memory, when the model owns it outright.
    pub fn memory(&self) -> &[u8] {
        self.mem.as_ref()
    }
    /// Device memory, writable, when the model owns it outright.
    pub fn memory_mut(&mut self) -> &mut [u8] {
        self.mem.as_mut()
    }
}

/// A device-memory access outside `DEVICE_MEM_SIZE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct OutOfRange;

/// Begin kind, end kind and `arg` of a command's events.
fn event_kinds(cmd: &CommandDescriptor) -> (EventKind, EventKind, u32) {
    let bytes = u32::try_from(cmd.len).unwrap_or(u32::MAX);
    match cmd.opcode {
        Opcode::COPY_H2D => (EventKind::COPY_H2D_BEGIN, EventKind::COPY_H2D_END, bytes),
        Opcode::COPY_D2H => (EventKind::COPY_D2H_BEGIN, EventKind::COPY_D2H_END, bytes),
        Opcode::COPY_D2D => (EventKind::COPY_D2D_BEGIN, EventKind::COPY_D2D_END, bytes),
        op => (EventKind::OP_BEGIN, EventKind::OP_END, u32::from(op.0)),
    }
}

/// The `OPS` register at `offset` (0 for any other offset): the catalogue
/// codes of the model's element-wise kernels and records.
fn ops_word(offset: u32) -> u32 {
    let Some(word) = offset.checked_sub(Register::OPS0.0).map(|d| d / 4) else {
        return 0;
    };
    if !offset.is_multiple_of(4) || word as usize >= OPS_WORDS {
        return 0;
    }
    let codes = UnaryOp::ALL
        .iter()
        .map(|op| *op as u16)
        .chain(BinaryOp::ALL.iter().map(|op| *op as u16))
        .chain(crate::kernels::records::RECORDS.iter().map(|r| r.code));
    codes
        .map(|code| u32::from(code) - 1)
        .filter(|bit| bit / 32 == word)
        .fold(0, |w, bit| w | 1 << (bit % 32))
}

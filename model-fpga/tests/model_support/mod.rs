//! A test rig around the model: device memory, a host bus, a manual clock,
//! and helpers that play the driver's part through registers and memory.
#![allow(dead_code)]

use tensorplug_abi::device::{
    COMMAND_DESCRIPTOR_SIZE, COMPLETION_DESCRIPTOR_SIZE, CommandDescriptor, CompletionDescriptor,
    Control, EVENT_DESCRIPTOR_SIZE, EventDescriptor, Register, Status,
};
use tensorplug_model_fpga::model::{
    AlignedMemory, BusError, HostBus, ManualClock, Model, ModelConfig,
};

/// Device memory of the rig.
pub const MEM_SIZE: usize = 1 << 20;
/// Command queue base (device memory).
pub const CMDQ_BASE: u64 = 0x0000;
/// Completion queue base.
pub const CPLQ_BASE: u64 = 0x4000;
/// Event ring base.
pub const EVQ_BASE: u64 = 0x8000;
/// First byte of free data memory.
pub const DATA: u64 = 0x1_0000;
/// Bus address of the host memory window.
pub const HOST_BASE: u64 = 0x1_0000_0000;
/// Size of the host memory window.
pub const HOST_SIZE: usize = 64 * 1024;

/// Host memory at `HOST_BASE`.
#[derive(Debug)]
pub struct VecBus(pub Vec<u8>);

impl VecBus {
    fn range(&self, addr: u64, len: usize) -> Result<std::ops::Range<usize>, BusError> {
        let start = addr.checked_sub(HOST_BASE).ok_or(BusError)? as usize;
        let end = start.checked_add(len).ok_or(BusError)?;
        (end <= self.0.len()).then_some(start..end).ok_or(BusError)
    }
}

impl HostBus for VecBus {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), BusError> {
        let r = self.range(addr, buf.len())?;
        buf.copy_from_slice(&self.0[r]);
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), BusError> {
        let r = self.range(addr, data.len())?;
        self.0[r].copy_from_slice(data);
        Ok(())
    }
}

pub type TestModel = Model<AlignedMemory, VecBus, ManualClock>;

pub fn model() -> TestModel {
    model_with(ModelConfig::default())
}

pub fn model_with(config: ModelConfig) -> TestModel {
    Model::new(
        AlignedMemory::zeroed(MEM_SIZE),
        VecBus(vec![0; HOST_SIZE]),
        ManualClock::new(),
        config,
        true,
    )
    .unwrap()
}

/// The driver's side: ring sizes and its own consumer indices.
pub struct Rig {
    pub dev: TestModel,
    pub cmdq: u32,
    pub cplq: u32,
    pub evq: u32,
    /// Next command index the rig will write.
    pub tail: u32,
}

impl Rig {
    /// Bring-up with the given ring sizes and `CONTROL` bits besides `ENABLE`.
    pub fn new(cmdq: u32, cplq: u32, evq: u32, control: Control) -> Self {
        let mut rig = Self {
            dev: model(),
            cmdq,
            cplq,
            evq,
            tail: 0,
        };
        rig.bring_up(control);
        rig
    }

    /// Events on, 64/64/256 entries.
    pub fn standard() -> Self {
        Self::new(64, 64, 256, Control::EVENTS)
    }

    pub fn bring_up(&mut self, control: Control) {
        let d = &mut self.dev;
        d.write_reg(Register::RESET.0, tensorplug_abi::device::RESET_KEY);
        d.service();
        assert_ne!(d.read_reg(Register::STATUS.0) & Status::READY.0, 0);
        for (lo, hi, size, base, n) in [
            (
                Register::CMDQ_BASE_LO,
                Register::CMDQ_BASE_HI,
                Register::CMDQ_SIZE,
                CMDQ_BASE,
                self.cmdq,
            ),
            (
                Register::CPLQ_BASE_LO,
                Register::CPLQ_BASE_HI,
                Register::CPLQ_SIZE,
                CPLQ_BASE,
                self.cplq,
            ),
            (
                Register::EVQ_BASE_LO,
                Register::EVQ_BASE_HI,
                Register::EVQ_SIZE,
                EVQ_BASE,
                self.evq,
            ),
        ] {
            d.write_reg(lo.0, base as u32);
            d.write_reg(hi.0, (base >> 32) as u32);
            d.write_reg(size.0, n);
        }
        d.write_reg(Register::CONTROL.0, (Control::ENABLE | control).0);
        self.tail = 0;
    }

    pub fn reg(&mut self, r: Register) -> u32 {
        self.dev.read_reg(r.0)
    }

    /// Writes commands into the queue and rings the doorbell (no service).
    pub fn post(&mut self, cmds: &[CommandDescriptor]) {
        for cmd in cmds {
            let slot = (self.tail & (self.cmdq - 1)) as usize * COMMAND_DESCRIPTOR_SIZE;
            let at = CMDQ_BASE as usize + slot;
            self.dev.memory_mut()[at..at + COMMAND_DESCRIPTOR_SIZE]
                .copy_from_slice(&cmd.to_le_bytes());
            self.tail = self.tail.wrapping_add(1);
        }
        self.dev.write_reg(Register::CMDQ_DOORBELL.0, self.tail);
    }

    /// Posts and services.
    pub fn submit(&mut self, cmds: &[CommandDescriptor]) {
        self.post(cmds);
        self.dev.service();
    }

    /// Runs one command and returns its completion.
    pub fn run(&mut self, cmd: CommandDescriptor) -> CompletionDescriptor {
        self.submit(&[cmd]);
        let mut c = self.take_completions();
        assert_eq!(c.len(), 1, "exactly one completion");
        c.pop().unwrap()
    }

    /// Completion entry `index` as it is in memory.
    pub fn completion_at(&self, index: u32) -> CompletionDescriptor {
        let at =
            CPLQ_BASE as usize + (index & (self.cplq - 1)) as usize * COMPLETION_DESCRIPTOR_SIZE;
        let bytes: [u8; 16] = self.dev.memory()[at..at + 16].try_into().unwrap();
        CompletionDescriptor::from_le_bytes(&bytes)
    }

    /// Reads every new completion and hands the slots back.
    pub fn take_completions(&mut self) -> Vec<CompletionDescriptor> {
        let head = self.reg(Register::CPLQ_HEAD);
        let tail = self.reg(Register::CPLQ_TAIL);
        let out = (0..tail.wrapping_sub(head))
            .map(|i| self.completion_at(head.wrapping_add(i)))
            .collect();
        self.dev.write_reg(Register::CPLQ_HEAD.0, tail);
        out
    }

    /// Reads every new event and hands the slots back.
    pub fn take_events(&mut self) -> Vec<EventDescriptor> {
        let head = self.reg(Register::EVQ_HEAD);
        let tail = self.reg(Register::EVQ_TAIL);
        let out = (0..tail.wrapping_sub(head))
            .map(|i| {
                let idx = head.wrapping_add(i) & (self.evq - 1);
                let at = EVQ_BASE as usize + idx as usize * EVENT_DESCRIPTOR_SIZE;
                let bytes: [u8; 16] = self.dev.memory()[at..at + 16].try_into().unwrap();
                EventDescriptor::from_le_bytes(&bytes)
            })
            .collect();
        self.dev.write_reg(Register::EVQ_HEAD.0, tail);
        out
    }

    pub fn write_f32(&mut self, addr: u64, v: &[f32]) {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.write_bytes(addr, &bytes);
    }

    pub fn read_f32(&self, addr: u64, n: usize) -> Vec<f32> {
        self.read_bytes(addr, n * 4)
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    pub fn write_bytes(&mut self, addr: u64, data: &[u8]) {
        let a = addr as usize;
        self.dev.memory_mut()[a..a + data.len()].copy_from_slice(data);
    }

    pub fn read_bytes(&self, addr: u64, n: usize) -> Vec<u8> {
        let a = addr as usize;
        self.dev.memory()[a..a + n].to_vec()
    }
}

/// Deterministic pseudo-random f32s in [-2, 2).
pub fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s % 4096) as f32 / 1024.0 - 2.0
        })
        .collect()
}

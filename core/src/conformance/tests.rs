//! The suite against a small host-memory device: it passes when the device
//! is right (declaring only Relu, or every op), skips what the device or
//! fixture cannot do, and catches each planted bug.

use core::ops::Range;
use core::time::Duration;
use std::string::String;
use std::time::Instant;
use std::vec;
use std::vec::Vec;

use super::*;
use crate::accelerator::{
    Attrs, Capabilities, DType, DTypeSet, DeviceAddr, DeviceInfo, Drained, Error, ErrorKind, Fence,
    MemoryUsage, Namespace, OpDecl, OpDesc, OpKind, OpSet, QueueId, Shape, ShapeError, TensorDesc,
    Tolerance, Unary, VendorCase, VendorRules, Version,
};
use crate::event::{Event, EventKind};
use crate::reference;

/// Device memory starts here (not at 0), so the suite cannot assume it.
const BASE: u64 = 0x10_0000;
const SIZE: usize = 4 << 20;

/// Bugs to plant, one per test.
#[derive(Clone, Copy, Default)]
struct Bugs {
    relu_off_by_one: bool,
    accepts_undeclared: bool,
    skips_validate: bool,
    fill_big_endian: bool,
    free_keeps_usage: bool,
    clock_hz_too_low: bool,
    reset_keeps_stall: bool,
    vendor_off_by_one: bool,
    panics_in_launch: bool,
    events_untagged: bool,
    runs_backwards: bool,
}

#[derive(Debug)]
struct HostError(ErrorKind);

impl core::fmt::Display for HostError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "host device: {:?}", self.0)
    }
}

impl Error for HostError {
    fn kind(&self) -> ErrorKind {
        self.0
    }
}

fn err<T>(kind: ErrorKind) -> Result<T, HostError> {
    Err(HostError(kind))
}

/// A device in host memory: synchronous copies and ops (computed by the
/// reference kernels), a first-fit allocator, a nanosecond clock, events,
/// and a stall switch whose fence only a reset ends.
struct HostDevice {
    mem: Vec<u8>,
    blocks: Vec<(u64, u64)>,
    leaked: u64,
    ops: OpSet,
    vendor_ops: &'static [&'static OpDecl],
    declares_profiling: bool,
    profiling: bool,
    events: Vec<Event>,
    next: u64,
    stall_armed: bool,
    stalled_from: Option<u64>,
    aborted: Vec<Range<u64>>,
    epoch: Instant,
    bugs: Bugs,
    /// The last fill's arguments, for `runs_backwards`.
    deferred_fill: Option<(DeviceAddr, usize, u32)>,
}

impl HostDevice {
    fn new(ops: OpSet, declares_profiling: bool) -> Self {
        Self {
            mem: vec![0; SIZE],
            blocks: Vec::new(),
            leaked: 0,
            ops,
            vendor_ops: &[],
            declares_profiling,
            profiling: false,
            events: Vec::new(),
            next: 0,
            stall_armed: false,
            stalled_from: None,
            aborted: Vec::new(),
            epoch: Instant::now(),
            bugs: Bugs::default(),
            deferred_fill: None,
        }
    }

    fn with_bugs(mut self, bugs: Bugs) -> Self {
        self.bugs = bugs;
        self
    }

    fn range(&self, addr: DeviceAddr, len: usize) -> Result<Range<usize>, HostError> {
        let start = addr
            .0
            .checked_sub(BASE)
            .ok_or(HostError(ErrorKind::InvalidArgument))?;
        let start = usize::try_from(start).map_err(|_| HostError(ErrorKind::InvalidArgument))?;
        match start.checked_add(len) {
            Some(end) if end <= SIZE => Ok(start..end),
            _ => err(ErrorKind::InvalidArgument),
        }
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// A new fence; `run` executes the command unless the queue is stalled.
    fn command(&mut self, run: impl FnOnce(&mut Self)) -> Fence {
        self.next += 1;
        if self.stall_armed {
            self.stall_armed = false;
            self.stalled_from = Some(self.next);
        }
        if self.stalled_from.is_none() {
            run(self);
        }
        Fence(self.next)
    }

    fn floats(&self, r: Range<usize>) -> Vec<f32> {
        self.mem[r]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    /// An int8 op, run at once with the reference (the suite's writes are
    /// blocking); a quantization block it refuses fails the launch.
    fn launch_int8(&mut self, op: &OpDesc<'_>) -> Result<Fence, HostError> {
        use crate::reference::int8::{self, Data, DataMut};
        let invalid = || HostError(ErrorKind::InvalidArgument);
        let mut bytes = Vec::new();
        for t in op.inputs {
            bytes.push(self.mem[self.range(t.addr, t.byte_len().ok_or_else(invalid)?)?].to_vec());
        }
        if super::int8::bytes_op(op.kind) {
            let out = self.range(op.output.addr, op.output.byte_len().ok_or_else(invalid)?)?;
            let mut result = vec![0u8; out.len()];
            crate::reference::run_bytes(op.kind, &bytes[0], op.inputs[0].shape, &mut result)
                .map_err(|_| invalid())?;
            return Ok(self.command(move |d| d.mem[out].copy_from_slice(&result)));
        }
        let typed: Vec<case::Values> = op
            .inputs
            .iter()
            .zip(&bytes)
            .map(|(t, b)| match t.dtype {
                DType::I8 => case::Values::I8(b.iter().map(|&v| v as i8).collect()),
                DType::I32 => case::Values::I32(
                    b.chunks_exact(4)
                        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .collect(),
                ),
                DType::I64 => case::Values::I64(
                    b.chunks_exact(8)
                        .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                        .collect(),
                ),
                _ => case::Values::F32(super::support::to_floats(b)),
            })
            .collect();
        let inputs: Vec<(Data<'_>, Shape)> = typed
            .iter()
            .zip(op.inputs)
            .map(|(v, t)| (v.as_data(), t.shape))
            .collect();
        let out = self.range(op.output.addr, op.output.byte_len().ok_or_else(invalid)?)?;
        let n = out.len() / op.output.dtype.size();
        let result = if op.output.dtype == DType::F32 {
            let mut o = vec![0f32; n];
            int8::run(op.kind, &inputs, op.output.shape, DataMut::F32(&mut o))
                .map_err(|_| invalid())?;
            super::support::to_bytes(&o)
        } else {
            let mut o = vec![0i8; n];
            int8::run(op.kind, &inputs, op.output.shape, DataMut::I8(&mut o))
                .map_err(|_| invalid())?;
            o.iter().map(|&v| v as u8).collect()
        };
        Ok(self.command(move |d| d.mem[out].copy_from_slice(&result)))
    }

    fn do_fill(&mut self, dst: DeviceAddr, len: usize, pattern: u32) {
        if let Ok(r) = self.range(dst, len) {
            let p = if self.bugs.fill_big_endian {
                pattern.to_be_bytes()
            } else {
                pattern.to_le_bytes()
            };
            for (i, b) in self.mem[r].iter_mut().enumerate() {
                *b = p[i % 4];
            }
        }
    }
}

impl Device for HostDevice {
    type Error = HostError;
    fn info(&self) -> DeviceInfo {
        let hz = if self.bugs.clock_hz_too_low {
            1_000_000
        } else {
            1_000_000_000
        };
        DeviceInfo::new(
            "host-memory test device",
            SIZE as u64,
            hz,
            Version::new(1, 0, 0),
            2,
        )
        .with_capabilities(
            Capabilities::f32(self.ops, self.declares_profiling)
                .with_dtype(DType::I8)
                .with_vendor_ops(self.vendor_ops),
        )
    }
}

impl Memory for HostDevice {
    fn allocate(&mut self, bytes: u64, align: u64) -> Result<DeviceAddr, HostError> {
        if !align.is_power_of_two() {
            return err(ErrorKind::InvalidArgument);
        }
        let size = bytes.max(1);
        let mut gap = BASE;
        let mut at = None;
        for (i, &(addr, n)) in self
            .blocks
            .iter()
            .chain([&(BASE + SIZE as u64, 0)])
            .enumerate()
        {
            if let Some(start) = gap.checked_next_multiple_of(align)
                && start.checked_add(size).is_some_and(|end| end <= addr)
            {
                at = Some((i, start));
                break;
            }
            gap = addr + n;
        }
        let (i, addr) = at.ok_or(HostError(ErrorKind::OutOfMemory))?;
        self.blocks.insert(i, (addr, size));
        Ok(DeviceAddr(addr))
    }
    fn deallocate(&mut self, addr: DeviceAddr) -> Result<(), HostError> {
        let i = self
            .blocks
            .iter()
            .position(|b| b.0 == addr.0)
            .ok_or(HostError(ErrorKind::InvalidArgument))?;
        if self.bugs.free_keeps_usage {
            // Frees the block but keeps counting it: a leak in the accounting.
            self.leaked += self.blocks[i].1;
        }
        self.blocks.remove(i);
        Ok(())
    }
    fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage {
            total: SIZE as u64,
            used: self.blocks.iter().map(|b| b.1).sum::<u64>() + self.leaked,
        }
    }
}

impl Transfer for HostDevice {
    unsafe fn copy_to_device(
        &mut self,
        _q: QueueId,
        dst: DeviceAddr,
        src: *const u8,
        len: usize,
    ) -> Result<Fence, HostError> {
        let r = self.range(dst, len)?;
        // SAFETY: the caller guarantees `src` is readable for `len` bytes;
        // the copy is done before this returns.
        let data = unsafe { core::slice::from_raw_parts(src, len) };
        Ok(self.command(|d| d.mem[r].copy_from_slice(data)))
    }
    unsafe fn copy_from_device(
        &mut self,
        _q: QueueId,
        dst: *mut u8,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, HostError> {
        let r = self.range(src, len)?;
        // SAFETY: the caller guarantees `dst` is writable for `len` bytes;
        // the copy is done before this returns.
        let out = unsafe { core::slice::from_raw_parts_mut(dst, len) };
        Ok(self.command(|d| out.copy_from_slice(&d.mem[r])))
    }
    fn copy_on_device(
        &mut self,
        _q: QueueId,
        dst: DeviceAddr,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, HostError> {
        let (s, d) = (self.range(src, len)?, self.range(dst, len)?);
        Ok(self.command(|dev| dev.mem.copy_within(s, d.start)))
    }
    fn fill(
        &mut self,
        _q: QueueId,
        dst: DeviceAddr,
        len: usize,
        pattern: u32,
    ) -> Result<Fence, HostError> {
        self.range(dst, len)?;
        if self.bugs.runs_backwards {
            // Runs each fill only when the next one arrives, after it.
            let previous = self.deferred_fill.replace((dst, len, pattern));
            return Ok(self.command(|d| {
                if let Some((a, n, p)) = previous {
                    d.do_fill(a, n, p);
                }
            }));
        }
        Ok(self.command(|d| d.do_fill(dst, len, pattern)))
    }
    fn poll(&mut self, fence: Fence) -> Result<bool, HostError> {
        if fence.0 > self.next {
            return err(ErrorKind::InvalidArgument);
        }
        if self.aborted.iter().any(|r| r.contains(&fence.0)) {
            return err(ErrorKind::DeviceFault);
        }
        Ok(self.stalled_from.is_none_or(|s| fence.0 < s))
    }
    fn wait(&mut self, fence: Fence, timeout: Duration) -> Result<(), HostError> {
        if self.poll(fence)? {
            return Ok(());
        }
        // Nothing makes progress while stalled.
        std::thread::sleep(timeout);
        err(ErrorKind::Timeout)
    }
}

impl Launch for HostDevice {
    fn launch(&mut self, _q: QueueId, op: &OpDesc<'_>) -> Result<Fence, HostError> {
        if self.bugs.panics_in_launch {
            panic!("planted panic in launch");
        }
        if !self.bugs.skips_validate {
            op.validate()
                .map_err(|_| HostError(ErrorKind::InvalidArgument))?;
        }
        let declared = (self.info().capabilities).supports(op.kind, ops::compute_type(op.kind));
        if !declared && !self.bugs.accepts_undeclared {
            return err(ErrorKind::Unsupported);
        }
        if op.kind.operand_types().is_some() {
            return self.launch_int8(op);
        }
        let mut inputs = Vec::new();
        for t in op.inputs {
            let n = t.byte_len().ok_or(HostError(ErrorKind::InvalidArgument))?;
            inputs.push((self.floats(self.range(t.addr, n)?), t.shape));
        }
        let n = op
            .output
            .byte_len()
            .ok_or(HostError(ErrorKind::InvalidArgument))?;
        let out = self.range(op.output.addr, n)?;
        let (kind, shape, op_id) = (op.kind, op.output.shape, op.op_id);
        let relu_bug = self.bugs.relu_off_by_one;
        let vendor_bug = self.bugs.vendor_off_by_one;
        let tag = if self.bugs.events_untagged { 0 } else { op_id };
        Ok(self.command(|d| {
            let begin = d.now();
            let ins: Vec<(&[f32], Shape)> =
                inputs.iter().map(|(v, s)| (v.as_slice(), *s)).collect();
            let mut result = vec![0.0f32; n / 4];
            if reference::run(kind, &ins, shape, &mut result).is_err() {
                return; // an unvalidated inconsistent op: garbage stays
            }
            let vendor = matches!(kind, OpKind::Vendor(_));
            if (relu_bug && kind == OpKind::Unary(Unary::RELU) || vendor_bug && vendor)
                && !result.is_empty()
            {
                result[0] += 1.0;
            }
            for (chunk, v) in d.mem[out].chunks_exact_mut(4).zip(&result) {
                chunk.copy_from_slice(&v.to_le_bytes());
            }
            if d.profiling {
                let end = d.now();
                d.events
                    .push(Event::new(EventKind::OpBegin, begin, 0, tag, 0));
                d.events.push(Event::new(EventKind::OpEnd, end, 0, tag, 0));
            }
        }))
    }
}

impl Reset for HostDevice {
    fn reset(&mut self) -> Result<(), HostError> {
        if let Some(from) = self.stalled_from
            && !self.bugs.reset_keeps_stall
        {
            self.aborted.push(from..self.next + 1);
            self.stalled_from = None;
        }
        self.stall_armed = false;
        Ok(())
    }
}

impl Profiling for HostDevice {
    fn timestamp(&mut self) -> Result<u64, HostError> {
        Ok(self.now())
    }
    fn set_profiling(&mut self, enabled: bool) -> Result<(), HostError> {
        if enabled && !self.declares_profiling {
            return err(ErrorKind::Unsupported);
        }
        self.profiling = enabled;
        Ok(())
    }
    fn drain_events(&mut self, out: &mut [Event]) -> Result<Drained, HostError> {
        let n = out.len().min(self.events.len());
        for (o, e) in out.iter_mut().zip(self.events.drain(..n)) {
            *o = e;
        }
        Ok(Drained {
            events: n,
            dropped: 0,
        })
    }
}

/// The device plus the stall hook.
struct HostFixture {
    dev: HostDevice,
    can_stall: bool,
}

impl HostFixture {
    fn relu_only() -> Self {
        Self {
            dev: HostDevice::new(OpSet::of(&[OpKind::Unary(Unary::RELU)]), true),
            can_stall: true,
        }
    }

    fn buggy(ops: OpSet, bugs: Bugs) -> Self {
        Self {
            dev: HostDevice::new(ops, true).with_bugs(bugs),
            can_stall: true,
        }
    }
}

impl Fixture for HostFixture {
    type Device = HostDevice;
    fn device(&mut self) -> &mut HostDevice {
        &mut self.dev
    }
    fn stall_next_command(&mut self) -> bool {
        self.dev.stall_armed = self.can_stall;
        self.can_stall
    }
    fn clear_stall(&mut self) {
        self.dev.stall_armed = false;
    }
}

fn outcome(report: &Report, case: &str) -> Outcome {
    report.case(case).expect(case).outcome.clone()
}

#[test]
fn a_relu_only_device_passes_and_refuses_every_other_op() {
    let mut fx = HostFixture::relu_only();
    let report = run_fixture(&mut fx, &Config::default());
    std::println!("{report}");
    report.assert_passed();
    // The one skip: it declares no vendor op.
    let skipped: Vec<&str> = report.skipped().map(|c| c.name).collect();
    assert_eq!(skipped, ["vendor_ops"], "{report}");
    assert_eq!(report.cases.len(), CASES.len());
    for (c, name) in report.cases.iter().zip(CASES) {
        assert_eq!(c.name, *name);
    }
    match outcome(&report, "op_unary") {
        Outcome::Passed(m) => assert!(
            m.contains("matched the reference: Relu; refused as undeclared: Sqrt, Rsqrt"),
            "{m}"
        ),
        other => panic!("{other}"),
    }
    match outcome(&report, "op_binary") {
        Outcome::Passed(m) => assert!(
            m.contains("matched the reference: none; refused as undeclared: Add, Sub, Mul"),
            "{m}"
        ),
        other => panic!("{other}"),
    }
    for case in ["op_matmul", "op_fused_matmul", "op_bias_add"] {
        match outcome(&report, case) {
            Outcome::Passed(m) => assert!(
                m.contains("not declared; launch refused it (Unsupported)"),
                "{case}: {m}"
            ),
            other => panic!("{case}: {other}"),
        }
    }
    // The cases freed what they allocated.
    assert_eq!(fx.dev.memory_usage().used, 0);
}

#[test]
fn a_device_declaring_every_op_passes() {
    let mut dev = HostDevice::new(OpSet::ALL, false);
    dev.vendor_ops = &VENDOR_OPS;
    let report = run_all(&mut dev, &Config::default());
    report.assert_passed();
    for case in CASES.iter().filter(|c| c.starts_with("op_")) {
        match outcome(&report, case) {
            Outcome::Passed(m) => assert!(
                m.contains("match the reference")
                    || m.ends_with("refused as undeclared: none")
                    || m.contains("bit-exact with the reference"),
                "{case}: {m}"
            ),
            other => panic!("{case}: {other}"),
        }
    }
    // No profiling declared and no fixture hook: skipped, not passed.
    assert!(outcome(&report, "profiling_records_op_events").is_skipped());
    assert!(outcome(&report, "timeout_then_reset_recovers").is_skipped());
    assert!(report.passed());
    let text = std::format!("{report}");
    assert!(text.contains("2 skipped, 0 failed"), "{text}");
}

/// Runs one case on a device with `bugs`; returns the failure message.
fn caught(ops: OpSet, bugs: Bugs, case: fn(&mut HostFixture, &Config) -> Outcome) -> String {
    let mut fx = HostFixture::buggy(ops, bugs);
    match case(&mut fx, &Config::default()) {
        Outcome::Failed(m) => m,
        other => panic!("the planted bug was not caught: {other}"),
    }
}

#[test]
fn planted_bugs_are_caught() {
    let relu = OpSet::of(&[OpKind::Unary(Unary::RELU)]);
    let m = caught(
        relu,
        Bugs {
            relu_off_by_one: true,
            ..Bugs::default()
        },
        cases::op_unary,
    );
    assert!(
        m.contains("Relu: ") && m.contains("outside the tolerance"),
        "{m}"
    );
    let m = caught(
        relu,
        Bugs {
            accepts_undeclared: true,
            ..Bugs::default()
        },
        cases::op_binary,
    );
    assert!(
        m.contains("Add: Add is not declared, yet launch accepted it"),
        "{m}"
    );
    let m = caught(
        relu,
        Bugs {
            skips_validate: true,
            ..Bugs::default()
        },
        cases::inconsistent_op_is_invalid_argument,
    );
    assert!(m.contains("was accepted"), "{m}");
    let m = caught(
        relu,
        Bugs {
            fill_big_endian: true,
            ..Bugs::default()
        },
        cases::fill_repeats_the_pattern,
    );
    assert!(m.contains("pattern.to_le_bytes()"), "{m}");
    let m = caught(
        relu,
        Bugs {
            free_keeps_usage: true,
            ..Bugs::default()
        },
        cases::allocations_are_aligned_and_accounted,
    );
    assert!(m.contains("after freeing everything"), "{m}");
    let m = caught(
        relu,
        Bugs {
            clock_hz_too_low: true,
            ..Bugs::default()
        },
        cases::clock_is_monotonic,
    );
    assert!(m.contains("clock_hz is too low"), "{m}");
    let m = caught(
        relu,
        Bugs {
            reset_keeps_stall: true,
            ..Bugs::default()
        },
        cases::timeout_then_reset_recovers,
    );
    assert!(m.contains("reset must fail outstanding fences"), "{m}");
    let m = caught(
        relu,
        Bugs {
            panics_in_launch: true,
            ..Bugs::default()
        },
        cases::op_unary,
    );
    assert!(m.contains("panicked: planted panic in launch"), "{m}");
    let m = caught(
        relu,
        Bugs {
            events_untagged: true,
            ..Bugs::default()
        },
        cases::profiling_records_op_events,
    );
    assert!(m.contains("0 OpBegin and 0 OpEnd"), "{m}");
    let m = caught(
        relu,
        Bugs {
            runs_backwards: true,
            ..Bugs::default()
        },
        cases::fences_complete_in_order,
    );
    assert!(m.contains("out of order"), "{m}");
}

#[test]
fn a_failed_run_lists_every_failure() {
    let bugs = Bugs {
        relu_off_by_one: true,
        fill_big_endian: true,
        ..Bugs::default()
    };
    let mut fx = HostFixture::buggy(OpSet::of(&[OpKind::Unary(Unary::RELU)]), bugs);
    let report = run_fixture(&mut fx, &Config::default());
    assert!(!report.passed());
    let failed: Vec<&str> = report.failures().map(|c| c.name).collect();
    assert!(
        failed.contains(&"op_unary") && failed.contains(&"fill_repeats_the_pattern"),
        "{failed:?}"
    );
    let panic = std::panic::catch_unwind(|| report.assert_passed()).unwrap_err();
    let text = panic.downcast_ref::<String>().unwrap();
    assert!(
        text.contains("op_unary:") && text.contains("fill_repeats_the_pattern:"),
        "{text}"
    );
}

#[test]
fn a_bare_device_skips_the_timeout_case() {
    let mut fx = HostFixture {
        dev: HostDevice::new(OpSet::of(&[OpKind::Unary(Unary::RELU)]), true),
        can_stall: false,
    };
    let o = cases::timeout_then_reset_recovers(&mut fx, &Config::default());
    assert!(
        matches!(&o, Outcome::Skipped(m) if m.contains("stall_next_command")),
        "{o}"
    );
    o.assert_ok("timeout_then_reset_recovers");
}

// One `#[test]` per case, each on a fresh fixture.
crate::conformance_tests!(HostFixture::relu_only());

// The named form with a config: a shorter expected timeout, queue 1.
crate::conformance_tests!(
    mod relu_only_queue_1 = HostFixture::relu_only(),
    Config {
        short_timeout: Duration::from_millis(30),
        queue: QueueId(1),
        ..Config::default()
    }
);

/// The case of op `name`: `op_` and the name in lower case, words split by
/// `_` anywhere (`op_matmul` for `MatMul`, `op_max_pool_grad` for `MaxPoolGrad`).
fn case_of(name: &str) -> Option<&'static str> {
    let want = name.to_ascii_lowercase();
    CASES.iter().copied().find(|case| {
        case.strip_prefix("op_")
            .is_some_and(|rest| rest.replace('_', "") == want)
    })
}

#[test]
fn every_declared_op_has_its_case_cases_and_a_reference_kernel() {
    use crate::accelerator::{BUILTIN, Form};
    for decl in BUILTIN {
        let family_case = match decl.form {
            Form::Unary(..) => Some("op_unary"),
            Form::Binary(..) => Some("op_binary"),
            Form::Record(_) => Some("op_records"),
            _ if decl.default_kind().is_int8() => Some("op_int8"),
            _ => case_of(decl.name),
        };
        assert!(
            family_case.is_some_and(|case| CASES.contains(&case)),
            "{}: no case op_… in CASES",
            decl.name
        );
        let cases = ops::cases_for(decl.default_kind());
        assert!(!cases.is_empty(), "{}: no conformance cases", decl.name);
        for case in cases {
            assert_eq!(case.kind.decl().id, decl.id, "{}", case.label());
            if case.kind.operand_types().is_some() {
                let ran = super::int8::expected(&case);
                assert!(
                    ran.is_ok(),
                    "{}: {:?}",
                    case.label(),
                    ran.err().map(|e| e.0)
                );
                continue;
            }
            let shapes: Vec<Shape> = case
                .inputs
                .iter()
                .map(|(d, _)| Shape::new(d).unwrap())
                .collect();
            let inputs: Vec<(&[f32], Shape)> = case
                .inputs
                .iter()
                .zip(&shapes)
                .map(|((_, data), s)| (data.floats(), *s))
                .collect();
            let out_shape = Shape::new(&case.out).unwrap();
            let mut out = vec![0.0; out_shape.elements().unwrap() as usize];
            let ran = reference::run(case.kind, &inputs, out_shape, &mut out);
            assert!(
                ran.is_ok(),
                "{}: the reference kernel refused it: {ran:?}",
                case.label()
            );
        }
    }
}

/// A vendor op for the tests: `x · k`, `k` an f32 in attribute bytes 0..4.
static SCALE: OpDecl = OpDecl::vendor(
    "Scale",
    Namespace::named("test.vendor"),
    1,
    1,
    DTypeSet::EMPTY.with(DType::F32),
    &SCALE_RULES,
);
static SCALE_RULES: VendorRules = VendorRules {
    shape: |_, inputs| Ok(inputs[0].shape),
    flops: |_, inputs, _| inputs[0].shape.elements().unwrap_or(0),
    reference: |attrs, x, _, out| {
        let k = f32::from_le_bytes([attrs.0[0], attrs.0[1], attrs.0[2], attrs.0[3]]);
        for (o, v) in out.iter_mut().zip(x[0]) {
            *o = v * k;
        }
    },
    cases: &[
        VendorCase {
            attrs: scale_by(2.0),
            inputs: &[(&[2, 3], &[1.0, -2.0, 0.5, f32::NAN, f32::INFINITY, -0.0])],
            out: &[2, 3],
        },
        VendorCase {
            attrs: scale_by(-0.25),
            inputs: &[(&[0], &[])],
            out: &[0],
        },
    ],
    tolerance: Tolerance::EXACT,
};
static VENDOR_OPS: [&OpDecl; 1] = [&SCALE];

const fn scale_by(k: f32) -> Attrs {
    let b = k.to_le_bytes();
    let mut a = [0u8; crate::accelerator::ATTR_BYTES];
    a[0] = b[0];
    a[1] = b[1];
    a[2] = b[2];
    a[3] = b[3];
    Attrs(a)
}

#[test]
fn vendor_ops_are_checked_against_their_own_reference_and_refused_when_undeclared() {
    let mut fx = HostFixture::buggy(OpSet::of(&[OpKind::Unary(Unary::RELU)]), Bugs::default());
    fx.dev.vendor_ops = &VENDOR_OPS;
    let passed = cases::vendor_ops(&mut fx, &Config::default());
    assert!(
        matches!(&passed, Outcome::Passed(m) if m.contains("2 launches")),
        "{passed}"
    );

    let mut fx = HostFixture::buggy(
        OpSet::of(&[OpKind::Unary(Unary::RELU)]),
        Bugs {
            vendor_off_by_one: true,
            ..Bugs::default()
        },
    );
    fx.dev.vendor_ops = &VENDOR_OPS;
    let failed = cases::vendor_ops(&mut fx, &Config::default());
    assert!(
        matches!(&failed, Outcome::Failed(m) if m.contains("Scale")),
        "{failed}"
    );

    let mut fx = HostFixture::buggy(OpSet::of(&[OpKind::Unary(Unary::RELU)]), Bugs::default());
    let skipped = cases::vendor_ops(&mut fx, &Config::default());
    assert!(skipped.is_skipped(), "{skipped}");
    // Not declared: launch refuses it.
    let x = TensorDesc::new(DeviceAddr(BASE), DType::F32, Shape::new(&[1]).unwrap());
    let op = OpDesc {
        kind: SCALE.default_kind(),
        inputs: &[x],
        output: x,
        op_id: 1,
    };
    let refused = fx.dev.launch(QueueId(0), &op).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Unsupported);
    assert_eq!(op.validate(), Ok(()));
    let wrong = OpDesc { inputs: &[], ..op };
    assert!(matches!(
        wrong.validate(),
        Err(ShapeError::InputCount {
            expected: 1,
            got: 0
        })
    ));
}

#[test]
fn the_int8_cases_exercise_the_range_not_the_clamp() {
    use crate::accelerator::BUILTIN;
    let mut softmax_zeros = 0;
    for decl in BUILTIN.iter().filter(|d| d.default_kind().is_int8()) {
        for case in ops::cases_for(decl.default_kind()) {
            let out = super::int8::expected(&case).unwrap();
            if case.kind == OpKind::Dequantize {
                continue;
            }
            if case.kind == OpKind::SoftmaxInt8 {
                // Probabilities: few distinct 1/256ths per row, and −128 is
                // a probability below 1/512 (or a logit past `diff_min`).
                let zero = out.iter().filter(|&&b| b == 0x80).count();
                let mut distinct = out.clone();
                distinct.sort_unstable();
                distinct.dedup();
                softmax_zeros += zero;
                assert!(
                    zero * 2 < out.len() && distinct.len() >= 6,
                    "{}: {zero} of {} outputs at -128, {} distinct",
                    case.label(),
                    out.len(),
                    distinct.len()
                );
                continue;
            }
            let clamped = out.iter().filter(|&&b| b == 0x80 || b == 0x7F).count();
            let mut distinct = out.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert!(
                clamped * 4 <= out.len() && distinct.len() * 4 >= out.len().min(60),
                "{}: {clamped} of {} outputs at ±128/127, {} distinct",
                case.label(),
                out.len(),
                distinct.len()
            );
        }
    }
    assert!(
        softmax_zeros > 0,
        "no softmax case drops a logit past diff_min"
    );
}

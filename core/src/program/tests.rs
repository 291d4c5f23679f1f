//! Programs built, parsed, validated, refused when damaged, planned and
//! replayed on a small host-memory device against the reference kernels.

use core::time::Duration;
use std::vec;
use std::vec::Vec;

use super::*;
use crate::accelerator::{
    Binary, DType, Device, DeviceAddr, DeviceInfo, Error, ErrorKind, Fence, Launch, OpDesc, OpKind,
    QueueId, Shape, Transfer, Unary, VendorOps, Version,
};
use crate::reference;
use proptest::prelude::*;

fn shape(d: &[u64]) -> Shape {
    Shape::new(d).unwrap()
}

/// `y = relu(x·w + b)` then four element-wise steps, so that the planner
/// has scratch buffers whose lifetimes do not overlap.
fn mlp() -> (Built, [BufferId; 4]) {
    let mut b = ProgramBuilder::new();
    let f = DType::F32;
    let x = b.buffer(BufferKind::Input, f, shape(&[2, 4])).unwrap();
    let w = b.buffer(BufferKind::Constant, f, shape(&[4, 3])).unwrap();
    let bias = b.buffer(BufferKind::Variable, f, shape(&[3])).unwrap();
    let y = b.buffer(BufferKind::Output, f, shape(&[2, 3])).unwrap();
    let t: Vec<BufferId> = (0..5)
        .map(|_| b.buffer(BufferKind::Scratch, f, shape(&[2, 3])).unwrap())
        .collect();
    let matmul = OpKind::MatMul {
        transpose_a: false,
        transpose_b: false,
    };
    b.launch(matmul, 10, &[x, w], t[0]).unwrap();
    b.launch(OpKind::BiasAdd, 11, &[t[0], bias], t[1]).unwrap();
    b.launch(OpKind::Unary(Unary::RELU), 12, &[t[1]], t[2])
        .unwrap();
    b.launch(OpKind::Binary(Binary::MUL), 13, &[t[2], t[2]], t[3])
        .unwrap();
    b.copy(t[4], t[3]).unwrap();
    b.launch(OpKind::Unary(Unary::EXP), 14, &[t[4]], y).unwrap();
    (b.finish(&VendorOps::NONE).unwrap(), [x, w, bias, y])
}

fn valid(bytes: &[u8]) -> Validated<'_> {
    validate(
        Program::parse(bytes).unwrap(),
        &VendorOps::NONE,
        &Limits::HOST,
    )
    .unwrap()
}

fn checked(bytes: &[u8]) -> Result<(), ProgramError> {
    validate(Program::parse(bytes)?, &VendorOps::NONE, &Limits::HOST).map(|_| ())
}

/// Rewrites the CRC after an edit, so that validation, not the checksum,
/// has to find it.
fn resealed(mut bytes: Vec<u8>, edit: impl FnOnce(&mut [u8])) -> Vec<u8> {
    edit(&mut bytes);
    let n = bytes.len();
    let crc = format::CRC32.checksum(&bytes[..n - CRC_LEN]);
    bytes[n - CRC_LEN..].copy_from_slice(&crc.to_le_bytes());
    bytes
}

fn buffer_at(i: usize) -> usize {
    HEADER_LEN + i * BUFFER_LEN
}

fn command_at(p: &Program<'_>, i: usize) -> usize {
    HEADER_LEN + p.buffer_count() * BUFFER_LEN + i * COMMAND_LEN
}

#[test]
fn a_built_program_parses_validates_and_shares_arena_bytes() {
    let (built, _) = mlp();
    let p = Program::parse(&built.bytes).unwrap();
    let h = p.header();
    assert_eq!((h.buffers, h.commands, h.bindings), (9, 6, 4));
    assert_eq!(built.bytes.len(), HEADER_LEN + 9 * 32 + 6 * 48 + 4);
    assert_eq!(&built.bytes[..4], b"TPPG");
    checked(&built.bytes).unwrap();
    // Five scratch buffers of 24 (64 aligned) bytes, at most two alive at once.
    assert_eq!(built.plan.total, 5 * 64);
    assert_eq!(built.plan.arena, 2 * 64);
    assert_eq!(h.arena, 128);
}

#[test]
fn every_damaged_byte_is_refused_by_the_crc_or_the_length() {
    let (built, _) = mlp();
    for i in 0..built.bytes.len() {
        let mut bad = built.bytes.clone();
        bad[i] ^= 0x40;
        let err = checked(&bad).unwrap_err();
        assert!(
            matches!(
                err,
                ProgramError::Crc
                    | ProgramError::Length
                    | ProgramError::Magic
                    | ProgramError::Version { .. }
            ),
            "byte {i}: {err:?}"
        );
    }
    assert_eq!(
        checked(&built.bytes[..built.bytes.len() - 1]),
        Err(ProgramError::Length)
    );
    assert_eq!(checked(&built.bytes[..10]), Err(ProgramError::Length));
}

#[test]
fn each_wrong_field_is_named() {
    let (built, _) = mlp();
    let p = Program::parse(&built.bytes).unwrap();
    let b = built.bytes.clone();
    let cmd = |i| command_at(&p, i);
    let case = |edit: &dyn Fn(&mut [u8]), want: ProgramError| {
        let bad = resealed(b.clone(), edit);
        assert_eq!(checked(&bad), Err(want));
    };
    case(&|x| x[0] = b'X', ProgramError::Magic);
    case(&|x| x[4] = 2, ProgramError::Version { major: 2 });
    case(&|x| x[14] = 1, ProgramError::Flags);
    let buf = |index, fault| ProgramError::Buffer { index, fault };
    let com = |index, fault| ProgramError::Command { index, fault };
    case(&|x| x[buffer_at(0)] = 9, buf(0, BufferFault::Kind));
    case(&|x| x[buffer_at(0) + 1] = 200, buf(0, BufferFault::DType));
    case(&|x| x[buffer_at(0) + 2] = 7, buf(0, BufferFault::Shape));
    case(
        &|x| x[buffer_at(0) + 8 + 4 * 3] = 1,
        buf(0, BufferFault::Shape),
    );
    // Two buffers bound to one slot.
    case(&|x| x[buffer_at(1) + 4] = 0, buf(1, BufferFault::Slot));
    // A scratch offset off the alignment, or past the arena.
    case(&|x| x[buffer_at(4) + 4] = 8, buf(4, BufferFault::Arena));
    case(&|x| x[buffer_at(4) + 5] = 1, buf(4, BufferFault::Arena));
    // t[1] moved onto t[0] while both are alive (command 1 reads one, writes the other).
    let t0 = p.buffer(4).unwrap().place;
    case(
        &|x| x[buffer_at(5) + 4..][..4].copy_from_slice(&t0.to_le_bytes()),
        buf(5, BufferFault::Overlap { with: 4 }),
    );
    case(&|x| x[cmd(0)] = 7, com(0, CommandFault::Tag));
    case(&|x| x[cmd(0) + 44] = 1, com(0, CommandFault::Tag));
    case(&|x| x[cmd(0) + 10] = 99, com(0, CommandFault::BufferIndex));
    case(&|x| x[cmd(0) + 8] = 0xEE, com(0, CommandFault::UnknownOp));
    // MatMul's inputs swapped: [4,3]·[2,4] does not multiply.
    case(
        &|x| x[cmd(0) + 12..][..4].copy_from_slice(&[1, 0, 0, 0]),
        com(0, CommandFault::Shape),
    );
    // The first command writes the input.
    case(&|x| x[cmd(0) + 10] = 0, com(0, CommandFault::Writes));
    // The second reads t[2], which nothing wrote yet.
    case(
        &|x| x[cmd(1) + 12] = 6,
        com(1, CommandFault::ReadsUnwritten),
    );
    // The copy reads a buffer of another length.
    case(&|x| x[cmd(4) + 12] = 2, com(4, CommandFault::CopyLength));
    // The last command writes t[3] instead: the output is never written.
    case(&|x| x[cmd(5) + 10] = 7, buf(3, BufferFault::NeverWritten));
}

#[test]
fn a_device_refuses_a_program_past_its_limits() {
    let (built, _) = mlp();
    let p = Program::parse(&built.bytes).unwrap();
    let limit = |l: Limits| validate(p, &VendorOps::NONE, &l).map(|_| ());
    let host = Limits::HOST;
    let too = ProgramError::TooLarge;
    assert_eq!(limit(Limits { bytes: 100, ..host }), Err(too(Limit::Bytes)));
    assert_eq!(
        limit(Limits { buffers: 8, ..host }),
        Err(too(Limit::Buffers))
    );
    assert_eq!(
        limit(Limits {
            commands: 5,
            ..host
        }),
        Err(too(Limit::Commands))
    );
    assert_eq!(limit(Limits { arena: 127, ..host }), Err(too(Limit::Arena)));
    assert!(
        limit(Limits {
            bytes: built.bytes.len() as u32,
            buffers: 9,
            commands: 6,
            arena: 128
        })
        .is_ok()
    );
}

#[test]
fn the_builder_refuses_what_validation_would() {
    let mut b = ProgramBuilder::new();
    let s = shape(&[4]);
    let x = b.buffer(BufferKind::Input, DType::F32, s).unwrap();
    let t = b.buffer(BufferKind::Scratch, DType::F32, s).unwrap();
    let y = b
        .buffer(BufferKind::Output, DType::F32, shape(&[5]))
        .unwrap();
    let relu = OpKind::Unary(Unary::RELU);
    let com = |fault| ProgramError::Command { index: 0, fault };
    assert_eq!(b.launch(relu, 0, &[t], x), Err(com(CommandFault::Writes)));
    assert_eq!(b.launch(relu, 0, &[x], x), Err(com(CommandFault::Writes)));
    assert_eq!(b.launch(relu, 0, &[x], y), Err(com(CommandFault::Shape)));
    assert_eq!(b.copy(y, x), Err(com(CommandFault::CopyLength)));
    assert_eq!(
        b.launch(relu, 0, &[BufferId(9)], t),
        Err(com(CommandFault::BufferIndex))
    );
    // Reading t before anything writes it fails at finish.
    b.launch(relu, 0, &[t], y).unwrap_err();
    let z = b.buffer(BufferKind::Output, DType::F32, s).unwrap();
    b.launch(relu, 0, &[t], z).unwrap();
    assert_eq!(
        b.finish(&VendorOps::NONE).unwrap_err(),
        ProgramError::Command {
            index: 0,
            fault: CommandFault::ReadsUnwritten
        }
    );
}

/// Host memory with the reference kernels: enough to replay a program.
struct HostMem {
    mem: Vec<u8>,
    done: u64,
    launches: Vec<u16>,
}

#[derive(Debug)]
struct Refused(ErrorKind);
impl core::fmt::Display for Refused {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}
impl Error for Refused {
    fn kind(&self) -> ErrorKind {
        self.0
    }
}

impl HostMem {
    /// 4 KiB, every byte `0xAA`.
    fn new() -> Self {
        Self {
            mem: vec![0xAA; 4096],
            done: 0,
            launches: Vec::new(),
        }
    }
    fn floats(&self, addr: DeviceAddr, n: usize) -> Vec<f32> {
        let a = addr.0 as usize;
        self.mem[a..a + 4 * n]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
    fn put(&mut self, addr: DeviceAddr, v: &[f32]) {
        let a = addr.0 as usize;
        for (c, x) in self.mem[a..a + 4 * v.len()].chunks_exact_mut(4).zip(v) {
            c.copy_from_slice(&x.to_le_bytes());
        }
    }
    fn fence(&mut self) -> Fence {
        self.done += 1;
        Fence(self.done)
    }
}

impl Device for HostMem {
    type Error = Refused;
    fn info(&self) -> DeviceInfo {
        DeviceInfo::new("host-mem", 1 << 16, 1, Version::new(1, 0, 0), 1)
    }
}
impl Transfer for HostMem {
    unsafe fn copy_to_device(
        &mut self,
        _: QueueId,
        _: DeviceAddr,
        _: *const u8,
        _: usize,
    ) -> Result<Fence, Refused> {
        Err(Refused(ErrorKind::Unsupported))
    }
    unsafe fn copy_from_device(
        &mut self,
        _: QueueId,
        _: *mut u8,
        _: DeviceAddr,
        _: usize,
    ) -> Result<Fence, Refused> {
        Err(Refused(ErrorKind::Unsupported))
    }
    fn copy_on_device(
        &mut self,
        _: QueueId,
        dst: DeviceAddr,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, Refused> {
        let (d, s) = (dst.0 as usize, src.0 as usize);
        self.mem.copy_within(s..s + len, d);
        Ok(self.fence())
    }
    fn fill(
        &mut self,
        _: QueueId,
        dst: DeviceAddr,
        len: usize,
        pattern: u32,
    ) -> Result<Fence, Refused> {
        let d = dst.0 as usize;
        for (i, b) in self.mem[d..d + len].iter_mut().enumerate() {
            *b = pattern.to_le_bytes()[i % 4];
        }
        Ok(self.fence())
    }
    fn poll(&mut self, f: Fence) -> Result<bool, Refused> {
        Ok(f.0 <= self.done)
    }
    fn wait(&mut self, _: Fence, _: Duration) -> Result<(), Refused> {
        Ok(())
    }
}
impl Launch for HostMem {
    fn launch(&mut self, _: QueueId, op: &OpDesc<'_>) -> Result<Fence, Refused> {
        op.validate()
            .map_err(|_| Refused(ErrorKind::InvalidArgument))?;
        let ins: Vec<(Vec<f32>, Shape)> = op
            .inputs
            .iter()
            .map(|t| (self.floats(t.addr, t.byte_len().unwrap() / 4), t.shape))
            .collect();
        let refs: Vec<(&[f32], Shape)> = ins.iter().map(|(v, s)| (v.as_slice(), *s)).collect();
        let mut out = vec![0.0; op.output.byte_len().unwrap() / 4];
        reference::run(op.kind, &refs, op.output.shape, &mut out)
            .map_err(|_| Refused(ErrorKind::Unsupported))?;
        self.put(op.output.addr, &out);
        self.launches.push(op.op_id);
        Ok(self.fence())
    }
}

#[test]
fn a_replayed_program_computes_what_its_ops_do_one_by_one() {
    let (built, _) = mlp();
    let program = valid(&built.bytes);
    let mut dev = HostMem::new();
    let slots = [
        DeviceAddr(0),
        DeviceAddr(64),
        DeviceAddr(128),
        DeviceAddr(192),
    ];
    let x: Vec<f32> = (0..8).map(|i| i as f32 * 0.25 - 1.0).collect();
    let w: Vec<f32> = (0..12).map(|i| (i as f32 - 6.0) * 0.1).collect();
    let bias = [0.5, -0.25, 0.125];
    dev.put(slots[0], &x);
    dev.put(slots[1], &w);
    dev.put(slots[2], &bias);
    let at = Bindings::new(&slots, DeviceAddr(1024));
    let fence = replay(&mut dev, QueueId(0), &program, &at).unwrap();
    assert_eq!(fence, Some(Fence(6)));
    assert_eq!(dev.launches, [10, 11, 12, 13, 14]);

    // The same ops, one by one, through the reference kernels.
    let run = |kind, ins: &[(&[f32], Shape)], n: usize, s: &[u64]| {
        let mut out = vec![0.0; n];
        reference::run(kind, ins, shape(s), &mut out).unwrap();
        out
    };
    let mm = OpKind::MatMul {
        transpose_a: false,
        transpose_b: false,
    };
    let t0 = run(
        mm,
        &[(&x, shape(&[2, 4])), (&w, shape(&[4, 3]))],
        6,
        &[2, 3],
    );
    let t1 = run(
        OpKind::BiasAdd,
        &[(&t0, shape(&[2, 3])), (&bias, shape(&[3]))],
        6,
        &[2, 3],
    );
    let t2 = run(
        OpKind::Unary(Unary::RELU),
        &[(&t1, shape(&[2, 3]))],
        6,
        &[2, 3],
    );
    let t3 = run(
        OpKind::Binary(Binary::MUL),
        &[(&t2, shape(&[2, 3])), (&t2, shape(&[2, 3]))],
        6,
        &[2, 3],
    );
    let want = run(
        OpKind::Unary(Unary::EXP),
        &[(&t3, shape(&[2, 3]))],
        6,
        &[2, 3],
    );
    assert_eq!(dev.floats(slots[3], 6), want);
    // Nothing outside the bound buffers and the planned arena was touched.
    assert!(
        dev.mem[1024 + built.plan.arena as usize..]
            .iter()
            .all(|&b| b == 0xAA)
    );

    let short = Bindings::new(&slots[..3], DeviceAddr(1024));
    assert!(matches!(
        replay(&mut dev, QueueId(0), &program, &short),
        Err(RunError::Program(ProgramError::Bindings {
            expected: 4,
            got: 3
        }))
    ));
}

proptest! {
    #[test]
    fn no_resealed_damage_panics_the_validator(edits in prop::collection::vec((0usize..600, any::<u8>()), 1..6)) {
        let (built, _) = mlp();
        let bad = resealed(built.bytes.clone(), |x| {
            let n = x.len() - CRC_LEN;
            for (at, v) in edits {
                x[at % n] = v;
            }
        });
        let _ = checked(&bad);
    }

    #[test]
    fn a_plan_never_shares_bytes_between_buffers_alive_at_once(
        raw in prop::collection::vec((1u64..5000, 0u16..40, 0u16..10), 1..40)
    ) {
        let buffers: Vec<Lifetime> = raw.iter().map(|&(bytes, first, len)| Lifetime { bytes, first, last: first + len }).collect();
        let p = plan(&buffers);
        let align = u64::from(ARENA_ALIGN);
        prop_assert!(p.arena <= p.total);
        for (i, a) in buffers.iter().enumerate() {
            prop_assert_eq!(p.offsets[i] % align, 0);
            prop_assert!(p.offsets[i] + a.bytes <= p.arena);
            for (j, b) in buffers.iter().enumerate().skip(i + 1) {
                let alive = a.first <= b.last && b.first <= a.last;
                let disjoint = p.offsets[i] + a.bytes <= p.offsets[j] || p.offsets[j] + b.bytes <= p.offsets[i];
                prop_assert!(!alive || disjoint, "{i} and {j}");
            }
        }
    }
}

#[test]
fn every_error_survives_the_links_detail() {
    let mut all = vec![
        ProgramError::Length,
        ProgramError::Magic,
        ProgramError::Version { major: 7 },
        ProgramError::Crc,
        ProgramError::Flags,
        ProgramError::Bindings {
            expected: 300,
            got: 12,
        },
    ];
    for limit in [Limit::Bytes, Limit::Buffers, Limit::Commands, Limit::Arena] {
        all.push(ProgramError::TooLarge(limit));
    }
    for fault in [
        BufferFault::Kind,
        BufferFault::DType,
        BufferFault::Shape,
        BufferFault::Overflow,
        BufferFault::Slot,
        BufferFault::Arena,
        BufferFault::Overlap { with: 200 },
        BufferFault::NeverWritten,
        BufferFault::View,
    ] {
        all.push(ProgramError::Buffer { index: 255, fault });
    }
    for fault in [
        CommandFault::Tag,
        CommandFault::BufferIndex,
        CommandFault::UnknownOp,
        CommandFault::Shape,
        CommandFault::Writes,
        CommandFault::ReadsUnwritten,
        CommandFault::CopyLength,
    ] {
        all.push(ProgramError::Command {
            index: 65000,
            fault,
        });
    }
    let mut seen = std::collections::BTreeSet::new();
    for e in all {
        assert_eq!(ProgramError::from_detail(e.detail()), Some(e), "{e}");
        assert!(seen.insert(e.detail()), "{e} shares a detail");
    }
    assert_eq!(ProgramError::from_detail(0), None);
    assert_eq!(ProgramError::from_detail(0x0700_0000 | 10 << 16), None);
}

/// Reshapes between element-wise steps, as copies: `relu(x)` as `[6]`,
/// `exp` of it as `[3, 2]`, its square into the output `y [6]`; `z` a copy
/// of the input, and `w` a copy of a buffer written again after it.
fn reshapes(elide: bool) -> (Built, Vec<usize>) {
    let mut b = ProgramBuilder::new();
    let f = DType::F32;
    let x = b.buffer(BufferKind::Input, f, shape(&[2, 3])).unwrap();
    let y = b.buffer(BufferKind::Output, f, shape(&[6])).unwrap();
    let z = b.buffer(BufferKind::Output, f, shape(&[6])).unwrap();
    let w = b.buffer(BufferKind::Output, f, shape(&[6])).unwrap();
    let t: Vec<BufferId> = [&[2, 3][..], &[6], &[6], &[3, 2], &[3, 2], &[6], &[6]]
        .iter()
        .map(|d| b.buffer(BufferKind::Scratch, f, shape(d)).unwrap())
        .collect();
    b.launch(OpKind::Unary(Unary::RELU), 1, &[x], t[0]).unwrap();
    b.copy(t[1], t[0]).unwrap(); // t1 becomes a view of t0
    b.launch(OpKind::Unary(Unary::EXP), 2, &[t[1]], t[2])
        .unwrap();
    b.copy(t[3], t[2]).unwrap(); // t3 becomes a view of t2
    b.launch(OpKind::Binary(Binary::MUL), 3, &[t[3], t[3]], t[4])
        .unwrap();
    b.copy(y, t[4]).unwrap(); // t4 becomes a view of y
    b.copy(z, x).unwrap(); // stays: an input into an output
    b.fill(t[5], 0x3F80_0000).unwrap();
    b.copy(t[6], t[5]).unwrap(); // stays: t5 is written again below
    b.launch(OpKind::Unary(Unary::EXP), 4, &[t[2]], t[5])
        .unwrap();
    b.launch(OpKind::Binary(Binary::MUL), 5, &[t[6], t[5]], w)
        .unwrap();
    let removed = if elide { b.elide_copies() } else { Vec::new() };
    (b.finish(&VendorOps::NONE).unwrap(), removed)
}

/// Replays `built` with `x` bound; returns `y`, `z`, `w`.
fn run_reshapes(built: &Built, x: &[f32]) -> [Vec<f32>; 3] {
    let program = valid(&built.bytes);
    let mut dev = HostMem::new();
    let slots = [0, 64, 128, 192].map(DeviceAddr);
    dev.put(slots[0], x);
    replay(
        &mut dev,
        QueueId(0),
        &program,
        &Bindings::new(&slots, DeviceAddr(1024)),
    )
    .unwrap();
    [1, 2, 3].map(|i| dev.floats(slots[i], 6))
}

#[test]
fn copies_a_view_can_stand_for_are_removed_and_the_program_computes_the_same() {
    let x = [-1.0, 0.5, 2.0, -0.0, 3.0, 0.25];
    let (plain, _) = reshapes(false);
    let (viewed, removed) = reshapes(true);
    // Three of the five copies go (the second, fourth and fifth command).
    assert_eq!(removed, [1, 3, 5]);
    let p = Program::parse(&viewed.bytes).unwrap();
    assert_eq!(
        p.command_count(),
        Program::parse(&plain.bytes).unwrap().command_count() - 3
    );
    let kinds: Vec<BufferKind> = (0..p.buffer_count())
        .map(|i| BufferSpec::decode(&p.buffer(i).unwrap()).unwrap().kind)
        .collect();
    let view = BufferKind::View;
    assert_eq!(
        kinds[4..],
        [
            BufferKind::Scratch,
            view,
            BufferKind::Scratch,
            view,
            view,
            BufferKind::Scratch,
            BufferKind::Scratch
        ]
    );
    let want = run_reshapes(&plain, &x);
    assert_eq!(run_reshapes(&viewed, &x), want);
    // What the reference says, so neither run is wrong the same way.
    for (got, v) in want[0].iter().zip(x) {
        let e = libm::exp(f64::from(v.max(0.0)));
        assert!((f64::from(*got) - e * e).abs() <= 1e-6 * e * e, "{got} {v}");
    }
    assert_eq!(want[1], x);
    // A view takes no arena bytes of its own.
    assert_eq!(plain.plan.total - viewed.plan.total, 3 * 64);
    assert!(viewed.plan.arena <= plain.plan.arena);
}

#[test]
fn a_view_of_itself_of_no_buffer_of_a_view_or_of_another_length_is_refused() {
    let (built, _) = reshapes(true);
    // Buffer 5 views buffer 4 (t0 [2, 3]).
    let case = |edit: &dyn Fn(&mut [u8])| {
        let bad = resealed(built.bytes.clone(), edit);
        assert_eq!(
            checked(&bad),
            Err(ProgramError::Buffer {
                index: 5,
                fault: BufferFault::View
            })
        );
    };
    case(&|x| x[buffer_at(5) + 4] = 5); // itself
    case(&|x| x[buffer_at(5) + 4] = 200); // no buffer
    case(&|x| x[buffer_at(5) + 8] = 7); // another length
    case(&|x| x[buffer_at(5) + 1] = DType::I32 as u8); // another dtype
    let (built, _) = reshapes(true);
    // Buffer 8 views buffer 1 (y); pointed at view 5 instead.
    let bad = resealed(built.bytes.clone(), |x| x[buffer_at(8) + 4] = 5);
    assert_eq!(
        checked(&bad),
        Err(ProgramError::Buffer {
            index: 8,
            fault: BufferFault::View
        })
    );
}

//! Every case of the suite, each a `pub fn` over a [`Fixture`], so a vendor
//! can call one from their own `#[test]`:
//!
//! ```no_run
//! use tensorplug_core::conformance::{Config, Fixture, cases};
//!
//! fn matmul_conforms<F: Fixture>(mut fixture: F) {
//!     cases::op_matmul(&mut fixture, &Config::default()).assert_ok("op_matmul");
//! }
//! ```
//!
//! A case never panics on device misbehaviour: it returns
//! [`Outcome::Failed`] with what went wrong (a panic inside the device is
//! caught and reported the same way). Each case frees what it allocated.
//! What each checks: `docs/conformance.md`.

use crate::accelerator::prelude::*;
use core::time::Duration;
use std::format;
use std::string::String;
use std::thread;
use std::time::Instant;
use std::vec;
use std::vec::Vec;

use super::case::{self, OpCase, stage, unstage, untouched};
use super::ops::{self, cases_for, check_family};
use super::support::guarded;
use super::support::{
    Check, Ctx, Scope, bytes, describe, ensure, fail, first_difference, kind_of, secs, show,
};
use super::types::{Config, Fixture, Outcome};
use crate::accelerator::{
    Accelerator, Activation, Binary, DType, DeviceAddr, Error, ErrorKind, Fence, OpKind, QueueId,
    TensorDesc, Unary, Window,
};
use crate::event::{Event, EventKind};

macro_rules! cases {
    ($($(#[$doc:meta])* $name:ident => $body:expr;)*) => {
        $(
            $(#[$doc])*
            pub fn $name<F: Fixture>(f: &mut F, cfg: &Config) -> Outcome {
                guarded(|| {
                    let mut s = Scope::new(f, cfg);
                    let body: fn(&mut Scope<'_, F>) -> Check<Outcome> = $body;
                    body(&mut s)
                })
            }
        )*
    };
}

cases! {
    /// `info()` is sane and stable: a name, a clock, a queue, memory, and
    /// f32 among the dtypes if any op is declared; `memory_usage()` agrees.
    info_is_sane => info_is_sane_body;
    /// Allocations honour their alignment, do not overlap (checked by
    /// writing every one and reading them all back), and move
    /// `memory_usage().used` up by at least their size and back down when
    /// freed.
    allocations_are_aligned_and_accounted => allocations_body;
    /// An allocation larger than device memory (and one of `u64::MAX`
    /// bytes) fails with `ErrorKind::OutOfMemory`, changes no accounting,
    /// and the allocator still works.
    oversized_allocation_is_out_of_memory => oversized_body;
    /// Host → device → host round trips of 1, 3, 4096 bytes and
    /// [`Config::large_copy`] (capped at a quarter of the device's memory),
    /// at offsets 0 and 3, touch exactly the bytes they name.
    copies_round_trip => copies_body;
    /// `copy_on_device` between two buffers and within one, at odd offsets
    /// and lengths (1, 3, 4099 and 65 537 bytes, the last no more than
    /// [`Config::large_copy`] + 1), moves exactly the bytes it names and
    /// leaves its source alone.
    copy_on_device_moves_bytes => copy_on_device_body;
    /// `fill` writes byte `i` as `pattern.to_le_bytes()[i % 4]`, for odd
    /// offsets and lengths, and nothing outside its range.
    fill_repeats_the_pattern => fill_body;
    /// Work on one queue runs and completes in order: once a fence
    /// completes, every earlier fence polls complete; a chain of dependent
    /// fills and copies gives the in-order result; waiting again on a
    /// completed fence is `Ok`; every queue the device declares accepts work.
    fences_complete_in_order => fences_body;
    /// `timestamp()` never goes backwards and advances at `clock_hz`
    /// (within a factor of 2 of the host's clock over a 50 ms sleep).
    clock_is_monotonic => clock_body;
    /// MatMul, all four transposes, against the reference; or refused if not declared.
    op_matmul => |s| check_family(s, OpKind::MatMul { transpose_a: false, transpose_b: false });
    /// FusedMatMul (bias, with and without ReLU, all transposes); or refused.
    op_fused_matmul => |s| check_family(s, OpKind::FusedMatMul { transpose_a: false, transpose_b: false, relu: false });
    /// BiasAdd along the last axis (ranks 1 to 5, special values); or refused.
    op_bias_add => |s| check_family(s, OpKind::BiasAdd);
    /// Every element-wise op of one operand in the catalogue ([`Unary`]:
    /// Relu, Exp, …), each on ranks 0 to 4, empty tensors and special values
    /// against its reference within its bound; each one the device does
    /// not declare is refused.
    op_unary => |s| ops::check_members(s, Unary::all().map(OpKind::Unary));
    /// Every broadcasting element-wise op of two operands in the catalogue
    /// ([`Binary`]: Add, Pow, …), ranks 0 to 6, broadcast both ways, special
    /// values (`inf - inf`, `0 · inf`, `x / 0`); or refused, op by op.
    op_binary => |s| ops::check_members(s, Binary::all().map(OpKind::Binary));
    /// Every op the catalogue declares as a record (`Cumsum`, …), each
    /// against its record's cases and tolerance; or refused, op by op.
    op_records => |s| ops::check_members(s, crate::accelerator::records());
    /// Softmax over the last axis (including logits whose `exp` overflows); or refused.
    op_softmax => |s| check_family(s, OpKind::Softmax);
    /// ReduceSum over the last axis, dropping or keeping it; or refused.
    op_reduce_sum => |s| check_family(s, OpKind::ReduceSum);
    /// LogSoftmax over the last axis (including logits whose `exp` overflows); or refused.
    op_log_softmax => |s| check_family(s, OpKind::LogSoftmax);
    /// Conv2D (VALID, SAME, strided, dilated, 1×1, a batch, empty); or refused.
    op_conv2d => |s| check_family(s, OpKind::Conv2D(Window::new([1, 1])));
    /// DepthwiseConv2D with a channel multiplier of 2; or refused.
    op_depthwise_conv2d => |s| check_family(s, OpKind::DepthwiseConv2D(Window::new([1, 1])));
    /// MaxPool; or refused.
    op_max_pool => |s| check_family(s, OpKind::MaxPool(Window::new([1, 1])));
    /// AvgPool (padding not counted); or refused.
    op_avg_pool => |s| check_family(s, OpKind::AvgPool(Window::new([1, 1])));
    /// Conv2D's gradient by its input; or refused.
    op_conv2d_backprop_input => |s| check_family(s, OpKind::Conv2DBackpropInput(Window::new([1, 1])));
    /// Conv2D's gradient by its filter; or refused.
    op_conv2d_backprop_filter => |s| check_family(s, OpKind::Conv2DBackpropFilter(Window::new([1, 1])));
    /// MaxPool's gradient (ties go to the first tap); or refused.
    op_max_pool_grad => |s| check_family(s, OpKind::MaxPoolGrad(Window::new([1, 1])));
    /// AvgPool's gradient (padding not counted); or refused.
    op_avg_pool_grad => |s| check_family(s, OpKind::AvgPoolGrad(Window::new([1, 1])));
    /// Conv2D with bias and each activation; or refused.
    op_fused_conv2d => |s| check_family(s, OpKind::FusedConv2D(Window::new([1, 1]), Activation::None));
    /// Transpose (exact); or refused.
    op_transpose => |s| check_family(s, OpKind::Transpose([0; 6]));
    /// ReduceMax over the last axis (exact; NaN wins); or refused.
    op_reduce_max => |s| check_family(s, OpKind::ReduceMax);
    /// ReduceMin over the last axis (exact; NaN wins); or refused.
    op_reduce_min => |s| check_family(s, OpKind::ReduceMin);
    /// ReduceProd over the last axis; or refused.
    op_reduce_prod => |s| check_family(s, OpKind::ReduceProd);
    /// Gather (exact, int32 and int64 indices), an index out of range
    /// refused; or refused.
    op_gather => |s| check_family(s, OpKind::Gather(DType::I32));
    /// SegmentSum (exact: f32 sums in row order; negative ids dropped), an
    /// id out of range refused; or refused.
    op_segment_sum => |s| check_family(s, OpKind::SegmentSum(DType::I32));
    /// Cast, every pair it converts, over NaN, ±∞, out-of-range and wide
    /// integer values (exact); or refused.
    op_cast => |s| check_family(s, OpKind::Cast { from: DType::F32, to: DType::I32 });
    /// Select (exact; a NaN condition counts as true); or refused.
    op_select => |s| check_family(s, OpKind::Select);
    /// ArgMax into i32 and i64 (exact: ties, NaN, infinities); or refused.
    op_arg_max => |s| check_family(s, OpKind::ArgMax(DType::I64));
    /// ArgMin, as ArgMax; or refused.
    op_arg_min => |s| check_family(s, OpKind::ArgMin(DType::I64));
    /// Concat of f32 rows, and of int8 rows on a device of int8 (exact,
    /// empty halves included); or refused.
    op_concat => |s| ops::check_concat(s);
    /// RandomUniform: TF's Philox floats bit for bit; or refused.
    op_random_uniform => |s| check_family(s, OpKind::RandomUniform { key: 0, counter: [0; 2] });
    /// Every int8 op of the catalogue (`Conv2DInt8` … `Dequantize`), each
    /// bit for bit against TFLite's reference kernels and with a corrupted
    /// quantization block refused; or refused as undeclared.
    op_int8 => |s| ops::check_members(s, crate::accelerator::BUILTIN.iter().map(|d| d.default_kind()).filter(|k| k.is_int8()));
    /// Every vendor op the device declares ([`Capabilities::vendor_ops`]):
    /// each of its own cases against its own reference kernel, within its
    /// tolerance. Skipped when the device declares none.
    ///
    /// [`Capabilities::vendor_ops`]: crate::accelerator::Capabilities::vendor_ops
    vendor_ops => |s| ops::check_vendor_ops(s);
    /// Launches whose descriptor is inconsistent (wrong output dims, an
    /// extra output axis, a missing input) fail at launch with
    /// `ErrorKind::InvalidArgument` and write nothing, for every declared op.
    inconsistent_op_is_invalid_argument => inconsistent_body;
    /// Copies, fills and launches that name memory past the end of device
    /// memory (or wrap the address space) fail with an error, not a panic
    /// and not `Ok`, and the device keeps working.
    out_of_range_access_is_an_error => out_of_range_body;
    /// `reset()` with work queued: every fence of that work then either
    /// completed or fails (none stays pending), and the device works:
    /// allocation, a round trip, a fill, an op, the clock.
    reset_recovers => reset_body;
    /// With profiling on, a launch with op id N leaves `OpBegin`/`OpEnd`
    /// events tagged N, `begin ≤ end`, inside the `timestamp()`s read
    /// around it; with profiling off, none. Skipped without
    /// `capabilities.profiling`.
    profiling_records_op_events => profiling_body;
    /// With [`Fixture::stall_next_command`]: a fence that never completes
    /// polls `Ok(false)` at once, its wait fails with `ErrorKind::Timeout`
    /// after about [`Config::short_timeout`], `reset()` fails the fence, and
    /// the device works again. Skipped when the fixture has no stall hook.
    timeout_then_reset_recovers => timeout_body;
}

fn info_is_sane_body<F: Fixture>(s: &mut Scope<'_, F>) -> Check<Outcome> {
    let info = s.dev().info();
    ensure!(!info.name.is_empty(), "info().name is empty");
    ensure!(info.clock_hz > 0, "info().clock_hz is 0");
    ensure!(info.queues >= 1, "info().queues is 0");
    ensure!(info.memory_bytes > 0, "info().memory_bytes is 0");
    let caps = info.capabilities;
    ensure!(
        caps.ops.is_empty() || caps.dtypes.contains(DType::F32),
        "capabilities declare ops {:?} but not the f32 dtype",
        caps.ops
    );
    let again = s.dev().info();
    ensure!(
        again == info,
        "info() changed between two calls: {info:?}, then {again:?}"
    );
    let usage = s.dev().memory_usage();
    ensure!(
        usage.total > 0 && usage.total <= info.memory_bytes,
        "memory_usage().total is {}, expected 1..={} (info().memory_bytes)",
        usage.total,
        info.memory_bytes
    );
    ensure!(
        usage.used <= usage.total,
        "memory_usage().used {} exceeds total {}",
        usage.used,
        usage.total
    );
    Ok(Outcome::Passed(format!(
        "{:?}: {} bytes ({} allocatable), {} Hz clock, {} queue(s), ABI {}, ops {:?}, profiling {}",
        info.name.as_str(),
        info.memory_bytes,
        usage.total,
        info.clock_hz,
        info.queues,
        info.abi_version,
        caps.ops,
        caps.profiling
    )))
}

fn allocations_body<F: Fixture>(s: &mut Scope<'_, F>) -> Check<Outcome> {
    let before = s.dev().memory_usage();
    let requests: [(u64, u64); 9] = [
        (100, 1),
        (100, 4),
        (100, 64),
        (100, 256),
        (100, 4096),
        (1, 1),
        (3, 4),
        (4096, 64),
        (65_537, 4096),
    ];
    let mut live: Vec<(DeviceAddr, u64)> = Vec::new();
    for &(bytes, align) in &requests {
        let addr = s.alloc(bytes, align)?;
        ensure!(
            addr.0 % align == 0,
            "allocate({bytes}, align {align}) returned {:#x}, not aligned",
            addr.0
        );
        for &(other, n) in &live {
            let disjoint = addr.0 >= other.0 + n || other.0 >= addr.0 + bytes;
            ensure!(
                disjoint,
                "allocation {:#x}+{bytes} overlaps live allocation {:#x}+{n}",
                addr.0,
                other.0
            );
        }
        live.push((addr, bytes));
    }
    let requested: u64 = requests.iter().map(|r| r.0).sum();
    let during = s.dev().memory_usage();
    ensure!(
        during.used >= before.used + requested,
        "memory_usage().used went from {} to {} after allocating {requested} bytes",
        before.used,
        during.used
    );
    ensure!(
        during.used <= during.total,
        "memory_usage().used {} exceeds total {}",
        during.used,
        during.total
    );
    // Distinct contents in every allocation, all read back intact.
    let contents: Vec<Vec<u8>> = live
        .iter()
        .enumerate()
        .map(|(i, &(_, n))| bytes(n as usize, 7 + i as u32))
        .collect();
    for (&(addr, _), data) in live.iter().zip(&contents) {
        s.write(addr, data)?;
    }
    for (&(addr, n), data) in live.iter().zip(&contents) {
        let back = s.read(addr, n as usize)?;
        if let Some(diff) = first_difference(&back, data) {
            fail!(
                "allocation {:#x}+{n} did not keep its contents while others were written ({diff}): allocations share memory",
                addr.0
            );
        }
    }
    for &(addr, _) in &live {
        s.free(addr)?;
    }
    let after = s.dev().memory_usage();
    ensure!(
        after.used == before.used,
        "memory_usage().used is {} after freeing everything, was {} before",
        after.used,
        before.used
    );
    // Freed memory can be allocated again.
    let again = s.alloc(65_537, 4096)?;
    s.free(again)?;
    Ok(Outcome::Passed(format!(
        "{} allocations (alignments 1 to 4096), used {} -> {} -> {} bytes",
        requests.len(),
        before.used,
        during.used,
        after.used
    )))
}

fn oversized_body<F: Fixture>(s: &mut Scope<'_, F>) -> Check<Outcome> {
    let memory = s.dev().info().memory_bytes;
    let before = s.dev().memory_usage();
    for bytes in [memory.saturating_add(1), u64::MAX] {
        match s.dev().allocate(bytes, 64) {
            Ok(addr) => {
                let _ = s.dev().deallocate(addr);
                fail!("allocate({bytes}) succeeded on a device of {memory} bytes");
            }
            Err(e) => ensure!(
                e.kind() == ErrorKind::OutOfMemory,
                "allocate({bytes}) on a device of {memory} bytes failed with {}, expected kind OutOfMemory",
                describe(&e)
            ),
        }
    }
    let after = s.dev().memory_usage();
    ensure!(
        after.used == before.used,
        "a failed allocation moved memory_usage().used from {} to {}",
        before.used,
        after.used
    );
    s.round_trip("after failed allocations")?;
    Ok(Outcome::Passed(format!(
        "allocate({}) and allocate(u64::MAX) fail with OutOfMemory",
        memory.saturating_add(1)
    )))
}

fn copies_body<F: Fixture>(s: &mut Scope<'_, F>) -> Check<Outcome> {
    let total = s.dev().memory_usage().total;
    let large = s.cfg.large_copy.min((total / 4) as usize).max(1);
    let mut sizes = vec![1usize, 3, 4096, large];
    sizes.retain(|&n| n <= large);
    sizes.dedup();
    const GUARD: u8 = 0xA5;
    for (i, &n) in sizes.iter().enumerate() {
        for offset in [0usize, 3] {
            let buf = s.alloc((n + 8) as u64, 64)?;
            s.write(buf, &vec![GUARD; n + 8])?;
            let data = bytes(n, 31 + i as u32 * 2 + offset as u32);
            let at = DeviceAddr(buf.0 + offset as u64);
            s.write(at, &data)?;
            let back = s.read(at, n)?;
            if let Some(diff) = first_difference(&back, &data) {
                fail!("{n} bytes written at offset {offset} read back wrong: {diff}");
            }
            let whole = s.read(buf, n + 8)?;
            let mut want = vec![GUARD; n + 8];
            want[offset..offset + n].copy_from_slice(&data);
            if let Some(diff) = first_difference(&whole, &want) {
                fail!(
                    "a {n}-byte write at offset {offset} touched bytes outside its range: {diff}"
                );
            }
            s.free(buf)?;
        }
    }
    Ok(Outcome::Passed(format!(
        "round trips of {sizes:?} bytes at offsets 0 and 3"
    )))
}

fn copy_on_device_body<F: Fixture>(s: &mut Scope<'_, F>) -> Check<Outcome> {
    const GUARD: u8 = 0x5A;
    let q = s.cfg.queue;
    let mut sizes = vec![1usize, 3, 4099];
    let large = 65_537.min(s.cfg.large_copy + 1);
    if large > 4099 {
        sizes.push(large);
    }
    for (i, &n) in sizes.iter().enumerate() {
        // Between two buffers: src + 3 -> dst + 1.
        let src_data = bytes(n + 8, 50 + i as u32);
        let src = s.alloc((n + 8) as u64, 64)?;
        let dst = s.alloc((n + 8) as u64, 64)?;
        s.write(src, &src_data)?;
        s.write(dst, &vec![GUARD; n + 8])?;
        let fence = s
            .dev()
            .copy_on_device(q, DeviceAddr(dst.0 + 1), DeviceAddr(src.0 + 3), n)
            .ctx(format_args!("copy_on_device of {n} bytes"))?;
        s.wait(fence, format_args!("copy_on_device of {n} bytes"))?;
        let mut want = vec![GUARD; n + 8];
        want[1..1 + n].copy_from_slice(&src_data[3..3 + n]);
        if let Some(diff) = first_difference(&s.read(dst, n + 8)?, &want) {
            fail!("copy_on_device of {n} bytes (src+3 -> dst+1): {diff}");
        }
        if let Some(diff) = first_difference(&s.read(src, n + 8)?, &src_data) {
            fail!("copy_on_device of {n} bytes changed its source: {diff}");
        }
        s.free(src)?;
        s.free(dst)?;
        // Within one buffer, disjoint ranges: [0, n) -> [n + 5, 2n + 5).
        let one_data = bytes(2 * n + 8, 70 + i as u32);
        let one = s.alloc((2 * n + 8) as u64, 64)?;
        s.write(one, &one_data)?;
        let fence = s
            .dev()
            .copy_on_device(q, DeviceAddr(one.0 + n as u64 + 5), one, n)
            .ctx(format_args!(
                "copy_on_device of {n} bytes within one buffer"
            ))?;
        s.wait(fence, "copy_on_device within one buffer")?;
        let mut want = one_data.clone();
        want.copy_within(0..n, n + 5);
        if let Some(diff) = first_difference(&s.read(one, 2 * n + 8)?, &want) {
            fail!("copy_on_device of {n} bytes within one buffer: {diff}");
        }
        s.free(one)?;
    }
    Ok(Outcome::Passed(format!(
        "copies of {sizes:?} bytes at odd offsets, between and within buffers"
    )))
}

fn fill_body<F: Fixture>(s: &mut Scope<'_, F>) -> Check<Outcome> {
    const GUARD: u8 = 0xEE;
    let q = s.cfg.queue;
    let fills: [(usize, usize, u32); 8] = [
        (0, 4, 0x0403_0201),
        (1, 1, 0x0403_0201),
        (3, 2, 0x0403_0201),
        (1, 3, 0xA1B2_C3D4),
        (2, 5, 0xA1B2_C3D4),
        (1, 99, 0x0000_00FF),
        (3, 4097, 0xDEAD_BEEF),
        (0, 8192, 0),
    ];
    let buf = s.alloc(8192 + 16, 64)?;
    for &(offset, len, pattern) in &fills {
        let region = offset + len + 8;
        s.write(buf, &vec![GUARD; region])?;
        let what = format!("fill of {len} bytes at offset {offset} with {pattern:#010x}");
        let fence = s
            .dev()
            .fill(q, DeviceAddr(buf.0 + offset as u64), len, pattern)
            .ctx(&what)?;
        s.wait(fence, &what)?;
        let mut want = vec![GUARD; region];
        for (i, b) in want[offset..offset + len].iter_mut().enumerate() {
            *b = pattern.to_le_bytes()[i % 4];
        }
        if let Some(diff) = first_difference(&s.read(buf, region)?, &want) {
            fail!("{what} (byte i must be pattern.to_le_bytes()[i % 4]): {diff}");
        }
    }
    Ok(Outcome::Passed(format!(
        "{} fills at offsets 0 to 3, lengths 1 to 8192",
        fills.len()
    )))
}

fn fences_body<F: Fixture>(s: &mut Scope<'_, F>) -> Check<Outcome> {
    let (q, short) = (s.cfg.queue, s.cfg.short_timeout);
    let buf = s.alloc(4096, 64)?;
    let mut fences: Vec<Fence> = Vec::new();
    let mut slowest_poll = Duration::ZERO;
    for i in 1..=32u32 {
        let fence = s
            .dev()
            .fill(q, buf, 4096, i * 0x0101_0101)
            .ctx(format_args!("fill {i} of 32"))?;
        let start = Instant::now();
        s.dev().poll(fence).ctx(format_args!("poll of fill {i}"))?;
        slowest_poll = slowest_poll.max(start.elapsed());
        fences.push(fence);
    }
    // A fence in the middle, then everything before it.
    s.wait(fences[15], "fill 16 of 32")?;
    for (i, &fence) in fences[..16].iter().enumerate() {
        let done = s
            .dev()
            .poll(fence)
            .ctx(format_args!("poll of fill {}", i + 1))?;
        ensure!(
            done,
            "fill 16 completed but fill {} (earlier, same queue) polls incomplete",
            i + 1
        );
    }
    // A dependent chain: a = 0x11, b = a, c = b, a = 0x22, b[..128] = a.
    let (a, b, c) = (s.alloc(256, 64)?, s.alloc(256, 64)?, s.alloc(256, 64)?);
    let chain: [(&str, Fence); 5] = [
        (
            "fill a",
            s.dev().fill(q, a, 256, 0x1111_1111).ctx("fill a")?,
        ),
        (
            "copy a -> b",
            s.dev().copy_on_device(q, b, a, 256).ctx("copy a -> b")?,
        ),
        (
            "copy b -> c",
            s.dev().copy_on_device(q, c, b, 256).ctx("copy b -> c")?,
        ),
        (
            "refill a",
            s.dev().fill(q, a, 256, 0x2222_2222).ctx("refill a")?,
        ),
        (
            "copy a -> b[..128]",
            s.dev()
                .copy_on_device(q, b, a, 128)
                .ctx("copy a -> b[..128]")?,
        ),
    ];
    fences.extend(chain.iter().map(|c| c.1));
    let last = *fences.last().unwrap_or(&fences[0]);
    s.wait(last, "the last command of the queue")?;
    for (i, &fence) in fences.iter().enumerate() {
        let done = s
            .dev()
            .poll(fence)
            .ctx(format_args!("poll of command {}", i + 1))?;
        ensure!(
            done,
            "the last command completed but command {} of {} polls incomplete",
            i + 1,
            fences.len()
        );
        s.dev()
            .wait(fence, short)
            .ctx(format_args!("a second wait on completed command {}", i + 1))?;
    }
    let last_fill = vec![32u8; 4096];
    if let Some(diff) = first_difference(&s.read(buf, 4096)?, &last_fill) {
        fail!("32 fills of one buffer: the last one must win ({diff}): they ran out of order");
    }
    let mut want_b = vec![0x22u8; 128];
    want_b.extend([0x11u8; 128]);
    for (name, addr, want) in [
        ("a", a, vec![0x22u8; 256]),
        ("b", b, want_b),
        ("c", c, vec![0x11u8; 256]),
    ] {
        if let Some(diff) = first_difference(&s.read(addr, 256)?, &want) {
            fail!(
                "fill/copy chain on one queue: buffer {name} is wrong ({diff}): commands ran out of order"
            );
        }
    }
    // Every declared queue (up to 8) accepts work.
    let queues = s.dev().info().queues.min(8);
    for other in 0..queues {
        let fence = s
            .dev()
            .fill(QueueId(other), buf, 4, u32::from(other))
            .ctx(format_args!("fill on queue {other}"))?;
        s.wait(fence, format_args!("fill on queue {other}"))?;
    }
    Ok(Outcome::Passed(format!(
        "{} commands completed in order; slowest poll {:.3} ms; {queues} queue(s) accept work",
        fences.len(),
        secs(slowest_poll) * 1e3
    )))
}

fn clock_body<F: Fixture>(s: &mut Scope<'_, F>) -> Check<Outcome> {
    let hz = s.dev().info().clock_hz;
    let mut prev = s.dev().timestamp().ctx("timestamp()")?;
    for i in 0..100 {
        let t = s.dev().timestamp().ctx("timestamp()")?;
        ensure!(
            t >= prev,
            "timestamp() went backwards: {prev}, then {t} (read {i})"
        );
        prev = t;
    }
    const SLEEP: Duration = Duration::from_millis(50);
    let host = Instant::now();
    let t0 = s.dev().timestamp().ctx("timestamp()")?;
    thread::sleep(SLEEP);
    let t1 = s.dev().timestamp().ctx("timestamp()")?;
    let wall = host.elapsed();
    ensure!(t1 >= t0, "timestamp() went backwards: {t0}, then {t1}");
    let device = (t1 - t0) as f64 / hz as f64;
    ensure!(
        device >= secs(SLEEP) / 2.0,
        "the device clock advanced {device:.4} s ({} ticks at {hz} Hz) over a {} ms sleep: stopped, or clock_hz is too high",
        t1 - t0,
        SLEEP.as_millis()
    );
    ensure!(
        device <= secs(wall) * 2.0 + 0.01,
        "the device clock advanced {device:.4} s ({} ticks at {hz} Hz) in {:.4} s of host time: clock_hz is too low",
        t1 - t0,
        secs(wall)
    );
    Ok(Outcome::Passed(format!(
        "monotonic; {:.1} ms of device time over {:.1} ms of host time",
        device * 1e3,
        secs(wall) * 1e3
    )))
}

/// `dims` with its last axis one longer (a scalar becomes `[2]`).
fn longer(dims: &[u64]) -> Vec<u64> {
    let mut d = dims.to_vec();
    match d.last_mut() {
        Some(last) => *last += 1,
        None => d.push(2),
    }
    d
}

fn inconsistent_body<F: Fixture>(s: &mut Scope<'_, F>) -> Check<Outcome> {
    let caps = s.dev().info().capabilities;
    let declared: Vec<OpKind> = caps.ops.iter().collect();
    let families = if declared.is_empty() {
        vec![OpKind::Unary(Unary::RELU)]
    } else {
        declared.clone()
    };
    let q = s.cfg.queue;
    let timeout = s.cfg.timeout;
    let mut refused = 0;
    // An op without inputs (`RandomUniform`) takes any output shape and
    // has no input to leave out.
    for family in families.into_iter().filter(|f| f.input_count() > 0) {
        let case = cases_for(family).swap_remove(0);
        let n = case.out.iter().product::<u64>().max(1) as usize;
        // Room for the largest wrong output, so a device that ignores the
        // shapes does not write past the buffer.
        let staged = stage(s, &case, 8 * n * 4 + 64)?;
        let mut variants: Vec<(String, OpCase)> = Vec::new();
        let wrong_dims = OpCase {
            out: longer(&case.out),
            ..clone_case(&case)
        };
        variants.push((
            format!("output {:?} instead of {:?}", wrong_dims.out, case.out),
            wrong_dims,
        ));
        let mut extra = vec![2];
        extra.extend(&case.out);
        variants.push((
            format!("output {extra:?} instead of {:?}", case.out),
            OpCase {
                out: extra,
                ..clone_case(&case)
            },
        ));
        for (what, bad) in &variants {
            let label = format!("{} with {what}", case.label());
            let r = s.dev().launch(q, &staged.op(bad, 0x2AA));
            check_refused(s, r, &label, declared.is_empty(), timeout)?;
            refused += 1;
        }
        // One input too few.
        let fewer = &staged.inputs[..staged.inputs.len() - 1];
        let op = crate::accelerator::OpDesc {
            inputs: fewer,
            ..staged.op(&case, 0x2AB)
        };
        let r = s.dev().launch(q, &op);
        check_refused(
            s,
            r,
            &format!("{} with an input missing", case.label()),
            declared.is_empty(),
            timeout,
        )?;
        refused += 1;
        untouched(
            s,
            &staged,
            &format!("every inconsistent {} was refused", family.name()),
        )?;
        unstage(s, staged)?;
    }
    Ok(Outcome::Passed(if declared.is_empty() {
        format!("no op declared; {refused} inconsistent Relu launches refused")
    } else {
        format!("{refused} inconsistent launches refused with InvalidArgument")
    }))
}

fn clone_case(c: &OpCase) -> OpCase {
    OpCase {
        kind: c.kind,
        inputs: c.inputs.clone(),
        out: c.out.clone(),
    }
}

/// An inconsistent launch must fail at once with `InvalidArgument` (or, for
/// an undeclared op, `Unsupported`).
fn check_refused<F: Fixture, E: Error>(
    s: &mut Scope<'_, F>,
    r: Result<Fence, E>,
    label: &str,
    undeclared: bool,
    timeout: Duration,
) -> Check {
    match r {
        Err(e) if e.kind() == ErrorKind::InvalidArgument => Ok(()),
        Err(e) if undeclared && e.kind() == ErrorKind::Unsupported => Ok(()),
        Err(e) => fail!(
            "launch of {label} failed with {}, expected kind InvalidArgument",
            describe(&e)
        ),
        Ok(fence) => {
            let waited = s.dev().wait_or_reset(fence, timeout);
            fail!(
                "launch of {label} was accepted (its wait: {}); OpDesc::validate refuses it, so must launch",
                show(&waited)
            )
        }
    }
}

fn out_of_range_body<F: Fixture>(s: &mut Scope<'_, F>) -> Check<Outcome> {
    let (q, timeout) = (s.cfg.queue, s.cfg.timeout);
    let info = s.dev().info();
    let memory = info.memory_bytes;
    let buf = s.alloc(64, 64)?;
    s.write(buf, &[0x3C; 64])?;
    // `buf + memory_bytes` is past the end of device memory wherever the
    // device maps it: `buf` is inside, and memory is `memory_bytes` long.
    let past = DeviceAddr(buf.0.saturating_add(memory));
    let wraps = DeviceAddr(u64::MAX - 7);
    let mut kinds: Vec<String> = Vec::new();
    let mut expect_error = |what: &str, r: Result<(), String>| -> Check {
        match r {
            Err(kind) => {
                kinds.push(format!("{what}: {kind}"));
                Ok(())
            }
            Ok(()) => fail!("{what} succeeded"),
        }
    };

    let r = s.dev().write_blocking(q, past, &[0u8; 16], timeout);
    expect_error(
        &format!("a 16-byte write at {:#x} (past device memory)", past.0),
        err_kind(&r),
    )?;
    let r = s.dev().write_blocking(q, wraps, &[0u8; 16], timeout);
    expect_error(
        &format!("a 16-byte write at {:#x} (wraps)", wraps.0),
        err_kind(&r),
    )?;
    let mut sink = [0u8; 16];
    let r = s.dev().read_blocking(q, &mut sink, past, timeout);
    expect_error(&format!("a 16-byte read at {:#x}", past.0), err_kind(&r))?;
    let r = enqueue_and_wait(s, |d| d.fill(q, past, 16, 0), timeout);
    expect_error(&format!("a 16-byte fill at {:#x}", past.0), r)?;
    if let Ok(len) = usize::try_from(memory.saturating_add(1)) {
        let r = enqueue_and_wait(s, |d| d.fill(q, buf, len, 0), timeout);
        expect_error(
            &format!("a fill of {len} bytes (more than device memory)"),
            r,
        )?;
    }
    let r = enqueue_and_wait(s, |d| d.copy_on_device(q, past, buf, 16), timeout);
    expect_error("copy_on_device to past device memory", r)?;
    let r = enqueue_and_wait(s, |d| d.copy_on_device(q, buf, past, 16), timeout);
    expect_error("copy_on_device from past device memory", r)?;
    if let Some(family) = info.capabilities.ops.iter().next() {
        let case = cases_for(family).swap_remove(0);
        let staged = stage(s, &case, 0)?;
        let mut inputs = staged.inputs.clone();
        inputs[0] = TensorDesc::new(past, DType::F32, inputs[0].shape);
        let op = crate::accelerator::OpDesc {
            inputs: &inputs,
            ..staged.op(&case, 0x3BB)
        };
        let r = enqueue_and_wait(s, |d| d.launch(q, &op), timeout);
        expect_error(&format!("{} reading past device memory", family.name()), r)?;
        unstage(s, staged)?;
    }
    // Nothing was lost, and the device works.
    let back = s.read(buf, 64)?;
    if let Some(diff) = first_difference(&back, &[0x3C; 64]) {
        fail!("after the refused accesses a buffer read back different: {diff}");
    }
    s.round_trip("after the refused accesses")?;
    Ok(Outcome::Passed(kinds.join("; ")))
}

/// Enqueues with `f` and waits (resetting on a failed wait); the error
/// kind, from the enqueue or the wait, or `Ok` if both succeeded.
fn enqueue_and_wait<F: Fixture, E: Error>(
    s: &mut Scope<'_, F>,
    f: impl FnOnce(&mut F::Device) -> Result<Fence, E>,
    timeout: Duration,
) -> Result<(), String> {
    match f(s.dev()) {
        Err(e) => Err(format!("{:?} at enqueue", e.kind())),
        Ok(fence) => match s.dev().wait_or_reset(fence, timeout) {
            Ok(()) => Ok(()),
            Err(e) => Err(format!("{:?} at wait", e.kind())),
        },
    }
}

fn err_kind<E: Error>(r: &Result<(), E>) -> Result<(), String> {
    match kind_of(r) {
        None => Ok(()),
        Some(kind) => Err(format!("{kind:?}")),
    }
}

fn reset_body<F: Fixture>(s: &mut Scope<'_, F>) -> Check<Outcome> {
    let (q, short) = (s.cfg.queue, s.cfg.short_timeout);
    let buf = s.alloc(4096, 64)?;
    s.write(buf, &[1u8; 4096])?;
    let mut fences = Vec::new();
    for i in 0..8u32 {
        fences.push(
            s.dev()
                .fill(q, buf, 4096, i)
                .ctx(format_args!("fill {i} before the reset"))?,
        );
    }
    s.dev().reset().ctx("reset() with 8 fills queued")?;
    let (mut completed, mut failed) = (0, 0);
    for (i, &fence) in fences.iter().enumerate() {
        let start = Instant::now();
        match s.dev().poll(fence) {
            Ok(true) => completed += 1,
            Err(_) => failed += 1,
            Ok(false) => fail!(
                "fill {i} was queued before reset() and still polls pending after it; reset must fail outstanding fences"
            ),
        }
        let r = s.dev().wait(fence, short);
        ensure!(
            kind_of(&r) != Some(ErrorKind::Timeout),
            "wait on fill {i} after reset() timed out ({}); its fence must have completed or failed",
            show(&r)
        );
        ensure!(
            start.elapsed() < short + Duration::from_secs(1),
            "poll and wait on fill {i} after reset() took {:.3} s",
            secs(start.elapsed())
        );
    }
    // The device works: allocation, round trip, fill, op, clock.
    s.free_all_quietly();
    s.round_trip("after reset()")?;
    let fresh = s.alloc(256, 64)?;
    let fence = s
        .dev()
        .fill(q, fresh, 256, 0x0102_0304)
        .ctx("fill after reset()")?;
    s.wait(fence, "fill after reset()")?;
    let want: Vec<u8> = [4u8, 3, 2, 1].repeat(64);
    if let Some(diff) = first_difference(&s.read(fresh, 256)?, &want) {
        fail!("a fill after reset() is wrong: {diff}");
    }
    s.free(fresh)?;
    let op = match s.dev().info().capabilities.ops.iter().next() {
        Some(family) => {
            let case = cases_for(family).swap_remove(0);
            let got = case::run_on_device(s, &case, 0x4CC)?;
            ops::compare(&case, &got)?;
            format!(", {} matches the reference", family.name())
        }
        None => String::new(),
    };
    let t0 = s.dev().timestamp().ctx("timestamp() after reset()")?;
    let t1 = s.dev().timestamp().ctx("timestamp() after reset()")?;
    ensure!(
        t1 >= t0,
        "timestamp() went backwards after reset(): {t0}, then {t1}"
    );
    // A second reset, of an idle device.
    s.dev().reset().ctx("a second reset()")?;
    s.round_trip("after a second reset()")?;
    Ok(Outcome::Passed(format!(
        "of 8 queued fills {completed} completed and {failed} failed; device works after reset{op}"
    )))
}

fn profiling_body<F: Fixture>(s: &mut Scope<'_, F>) -> Check<Outcome> {
    let caps = s.dev().info().capabilities;
    if !caps.profiling {
        return Ok(Outcome::Skipped(String::from(
            "the device does not declare profiling (capabilities.profiling is false)",
        )));
    }
    let Some(family) = caps.ops.iter().next() else {
        return Ok(Outcome::Skipped(String::from(
            "the device declares profiling but no op to launch",
        )));
    };
    let q = s.cfg.queue;
    let case = cases_for(family).swap_remove(0);
    let staged = stage(s, &case, 0)?;
    const ON: u16 = 0x5EC5;
    const OFF: u16 = 0x5EC6;

    s.dev().set_profiling(true).ctx("set_profiling(true)")?;
    drain_all(s)?; // whatever was recorded before
    let t0 = s.dev().timestamp().ctx("timestamp()")?;
    let fence = s
        .dev()
        .launch(q, &staged.op(&case, ON))
        .ctx("launch with profiling on")?;
    s.wait(fence, "the profiled launch")?;
    let t1 = s.dev().timestamp().ctx("timestamp()")?;
    let events = drain_all(s)?;
    s.dev().set_profiling(false).ctx("set_profiling(false)")?;

    let ours: Vec<&Event> = events.iter().filter(|e| e.op_id == ON).collect();
    let begins: Vec<&Event> = ours
        .iter()
        .copied()
        .filter(|e| e.kind() == Some(EventKind::OpBegin))
        .collect();
    let ends: Vec<&Event> = ours
        .iter()
        .copied()
        .filter(|e| e.kind() == Some(EventKind::OpEnd))
        .collect();
    ensure!(
        !begins.is_empty() && !ends.is_empty(),
        "a launch with op_id {ON:#x} left {} OpBegin and {} OpEnd events tagged with it ({} events drained in all)",
        begins.len(),
        ends.len(),
        events.len()
    );
    ensure!(
        begins.len() == ends.len(),
        "op_id {ON:#x}: {} OpBegin but {} OpEnd events",
        begins.len(),
        ends.len()
    );
    for (b, e) in begins.iter().zip(&ends) {
        ensure!(
            b.queue == e.queue,
            "op_id {ON:#x}: OpBegin on queue {} but OpEnd on queue {}",
            b.queue,
            e.queue
        );
        ensure!(
            b.timestamp <= e.timestamp,
            "op_id {ON:#x}: OpBegin at {} after OpEnd at {}",
            b.timestamp,
            e.timestamp
        );
    }
    for e in &ours {
        ensure!(
            t0 <= e.timestamp && e.timestamp <= t1,
            "op_id {ON:#x}: event at tick {} outside the timestamp() reads around the launch, {t0}..={t1}: events must be in device ticks of timestamp()",
            e.timestamp
        );
    }
    // Profiling off: nothing recorded.
    let fence = s
        .dev()
        .launch(q, &staged.op(&case, OFF))
        .ctx("launch with profiling off")?;
    s.wait(fence, "the unprofiled launch")?;
    let later = drain_all(s)?;
    let leaked = later.iter().filter(|e| e.op_id == OFF).count();
    ensure!(
        leaked == 0,
        "with profiling off, a launch still left {leaked} events"
    );
    unstage(s, staged)?;
    Ok(Outcome::Passed(format!(
        "{} launch: {} OpBegin/OpEnd pair(s) tagged {ON:#x} within ticks {t0}..={t1}; none with profiling off",
        family.name(),
        begins.len()
    )))
}

/// Drains until the device has nothing left (at most 1000 calls).
fn drain_all<F: Fixture>(s: &mut Scope<'_, F>) -> Check<Vec<Event>> {
    let mut all = Vec::new();
    let mut buf = [Event::default(); 256];
    for _ in 0..1000 {
        let drained = s.dev().drain_events(&mut buf).ctx("drain_events")?;
        ensure!(
            drained.events <= buf.len(),
            "drain_events reported {} events into a slice of {}",
            drained.events,
            buf.len()
        );
        all.extend_from_slice(&buf[..drained.events]);
        if drained.events == 0 {
            return Ok(all);
        }
    }
    fail!("drain_events still returned events after 1000 calls")
}

fn timeout_body<F: Fixture>(s: &mut Scope<'_, F>) -> Check<Outcome> {
    let (q, short) = (s.cfg.queue, s.cfg.short_timeout);
    let buf = s.alloc(64, 64)?;
    s.write(buf, &[0u8; 64])?;
    if !s.fx.stall_next_command() {
        return Ok(Outcome::Skipped(String::from(
            "the fixture cannot make a command hang (Fixture::stall_next_command returned false)",
        )));
    }
    let result = stalled_fence(s, buf, q, short);
    // Whatever happened, leave the device usable for the next case.
    let reset = s.dev().reset();
    s.fx.clear_stall();
    let (fence, waited) = result?;
    reset.ctx("reset() after the timeout")?;
    let start = Instant::now();
    let polled = s.dev().poll(fence);
    ensure!(
        polled.is_err(),
        "after reset() the stalled fence polls {}; reset must fail outstanding fences",
        show(&polled)
    );
    let r = s.dev().wait(fence, short);
    ensure!(
        r.is_err(),
        "after reset() a wait on the stalled fence returned Ok"
    );
    ensure!(
        start.elapsed() < short + Duration::from_secs(1),
        "poll and wait on the failed fence took {:.3} s",
        secs(start.elapsed())
    );
    // The device works again.
    let fence = s
        .dev()
        .fill(q, buf, 64, 0x0A0B_0C0D)
        .ctx("fill after the recovery")?;
    s.wait(fence, "fill after the recovery")?;
    let want: Vec<u8> = [0x0D, 0x0C, 0x0B, 0x0A].repeat(16);
    if let Some(diff) = first_difference(&s.read(buf, 64)?, &want) {
        fail!("a fill after the recovery is wrong: {diff}");
    }
    s.round_trip("after the recovery")?;
    Ok(Outcome::Passed(format!(
        "wait timed out after {:.1} ms (timeout {} ms); the fence then failed with {}; device recovered",
        secs(waited) * 1e3,
        short.as_millis(),
        show(&polled)
    )))
}

/// Issues the stalled fill; checks poll and the timed-out wait.
fn stalled_fence<F: Fixture>(
    s: &mut Scope<'_, F>,
    buf: DeviceAddr,
    q: QueueId,
    short: Duration,
) -> Check<(Fence, Duration)> {
    let fence = s
        .dev()
        .fill(q, buf, 64, 0x1234_5678)
        .ctx("the fill meant to stall")?;
    // A poll that blocks makes every poll slow; a scheduling hiccup on a
    // loaded machine makes one slow: the fastest of five is checked.
    let mut fastest = Duration::MAX;
    for i in 0..5 {
        let start = Instant::now();
        let polled = s.dev().poll(fence);
        fastest = fastest.min(start.elapsed());
        ensure!(
            matches!(polled, Ok(false)),
            "poll {i} of the stalled fence returned {}, expected Ok(false)",
            show(&polled)
        );
    }
    ensure!(
        fastest < short,
        "the fastest of five polls of the stalled fence took {:.3} s; poll must not block",
        secs(fastest)
    );
    let start = Instant::now();
    let r = s.dev().wait(fence, short);
    let waited = start.elapsed();
    ensure!(
        kind_of(&r) == Some(ErrorKind::Timeout),
        "wait({} ms) on the stalled fence returned {}, expected kind Timeout",
        short.as_millis(),
        show(&r)
    );
    ensure!(
        waited >= short / 2,
        "wait({} ms) gave up after {:.1} ms",
        short.as_millis(),
        secs(waited) * 1e3
    );
    ensure!(
        waited < short + Duration::from_secs(2),
        "wait({} ms) took {:.3} s to time out",
        short.as_millis(),
        secs(waited)
    );
    Ok((fence, waited))
}

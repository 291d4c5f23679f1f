//! Op-level mode: the bodies of the messages that carry
//! [`Accelerator`](crate::accelerator::Accelerator) calls over the link, for
//! an MCU that runs the device driver itself (protocol 1.1).
//!
//! Tags of the enums below are postcard variant indices: append, never
//! reorder. `docs/link-protocol.md` lists them byte by byte.

use crate::accelerator::{
    Attrs, Capabilities, DType, DTypeSet, DeviceAddr, DeviceInfo, ErrorKind, MAX_RANK,
    OP_SET_WORDS, OpDesc, OpId, OpKind, OpSet, Shape, TensorDesc, VendorOps, Version, builtin,
};
use serde::{Deserialize, Serialize};

/// Queues one piece of work on a device queue. Answered by `Ack` (accepted)
/// or `Error`; later by a [`Completion`](super::Completion) with the same
/// request id. A `Read` sends its `MemoryData` before that completion.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Submit<'a> {
    /// The device queue.
    pub queue: u8,
    /// What to run.
    #[serde(borrow)]
    pub command: Command<'a>,
}

/// Several queued commands for one queue in one frame (protocol 2.2).
///
/// `commands` is a postcard byte string holding one or more [`Command`]s
/// back to back, each `Copy`, `Fill`, `Launch` or `Fence` (a frame that
/// holds anything else does not decode). Answered by one `Ack` once all
/// are enqueued, or by `Error` whose `detail` is the index of the first
/// command refused (those before it run; it and those after do not); later
/// by one [`Completion`](super::Completion) with the batch's request id,
/// when its last enqueued command completes, or earlier with the status of
/// one that fails.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SubmitBatch<'a> {
    /// The device queue of every command.
    pub queue: u8,
    /// The encoded commands (see [`SubmitBatch::commands`]).
    #[serde(borrow)]
    pub commands: &'a [u8],
}

/// Why a batch's commands do not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadBatch;

impl<'a> SubmitBatch<'a> {
    /// The commands, in order.
    pub fn commands(&self) -> impl Iterator<Item = Result<Command<'a>, BadBatch>> + 'a {
        let mut rest = self.commands;
        core::iter::from_fn(move || {
            if rest.is_empty() {
                return None;
            }
            Some(match postcard::take_from_bytes::<Command<'a>>(rest) {
                Ok((command, tail)) if command.batchable() => {
                    rest = tail;
                    Ok(command)
                }
                _ => {
                    rest = &[];
                    Err(BadBatch)
                }
            })
        })
    }

    /// Checks that at least one command is there and that all decode and
    /// may be batched.
    ///
    /// # Errors
    /// [`BadBatch`] otherwise.
    pub fn check(&self) -> Result<usize, BadBatch> {
        let mut count = 0;
        for command in self.commands() {
            command?;
            count += 1;
        }
        if count == 0 { Err(BadBatch) } else { Ok(count) }
    }
}

/// One queued piece of work.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[allow(
    clippy::large_enum_variant,
    reason = "no allocator on the MCU to box a launch (about 300 bytes)"
)]
pub enum Command<'a> {
    /// Tag 0: host → device copy of one chunk (≤ `MAX_BULK_CHUNK` bytes).
    Write {
        /// Device address of the first byte.
        dst: u64,
        /// The bytes.
        data: &'a [u8],
    },
    /// Tag 1: device → host copy of one chunk (≤ `MAX_BULK_CHUNK` bytes).
    Read {
        /// Device address of the first byte.
        src: u64,
        /// Bytes to read.
        len: u32,
    },
    /// Tag 2: device → device copy.
    Copy {
        /// Destination address.
        dst: u64,
        /// Source address.
        src: u64,
        /// Bytes.
        len: u64,
    },
    /// Tag 3: fill with a repeated 32-bit pattern.
    Fill {
        /// Destination address.
        dst: u64,
        /// Bytes.
        len: u64,
        /// The pattern, little-endian.
        pattern: u32,
    },
    /// Tag 4: one op.
    Launch(WireOp),
    /// Tag 5: no work; completes when earlier work on the queue has.
    Fence,
}

impl Command<'_> {
    /// Whether the command may travel in a [`SubmitBatch`]: queued work
    /// that carries no bulk data and gets no data back.
    pub const fn batchable(&self) -> bool {
        matches!(
            self,
            Self::Copy { .. } | Self::Fill { .. } | Self::Launch(_) | Self::Fence
        )
    }
}

/// An [`OpDesc`] on the wire: the op's catalogue identity and attribute
/// block, so that every op crosses the link with no per-op wire code.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WireOp {
    /// Profiling id of the launch.
    pub op_id: u16,
    /// Which op ([`OpDecl::id`](crate::accelerator::OpDecl::id)).
    pub op: OpId,
    /// Its attributes.
    pub attrs: Attrs,
    /// Input tensors (at most 3).
    pub inputs: heapless::Vec<WireTensor, 3>,
    /// Output tensor.
    pub output: WireTensor,
}

/// A [`TensorDesc`] on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WireTensor {
    /// Device address.
    pub addr: u64,
    /// [`DType`] code (1 = f32).
    pub dtype: u8,
    /// Dimensions, outermost first (at most [`MAX_RANK`]).
    pub dims: heapless::Vec<u64, MAX_RANK>,
}

/// Why a wire op does not describe an op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BadOp;

impl WireTensor {
    /// The wire form of `t`.
    pub fn from_desc(t: &TensorDesc) -> Self {
        Self {
            addr: t.addr.0,
            dtype: t.dtype as u8,
            // Cannot fail: a shape has at most MAX_RANK dims.
            dims: heapless::Vec::from_slice(t.shape.dims()).unwrap_or_default(),
        }
    }

    /// The descriptor, or `BadOp` for an unknown dtype.
    pub fn to_desc(&self) -> Result<TensorDesc, BadOp> {
        let dtype = DType::from_code(self.dtype).ok_or(BadOp)?;
        let shape = Shape::new(&self.dims).ok_or(BadOp)?;
        Ok(TensorDesc::new(DeviceAddr(self.addr), dtype, shape))
    }
}

impl WireOp {
    /// The wire form of `op`, or `BadOp` for more than 3 inputs.
    pub fn from_desc(op: &OpDesc<'_>) -> Result<Self, BadOp> {
        let mut inputs = heapless::Vec::new();
        for t in op.inputs {
            inputs.push(WireTensor::from_desc(t)).map_err(|_| BadOp)?;
        }
        Ok(Self {
            op_id: op.op_id,
            op: op.kind.decl().id,
            attrs: op.kind.attrs(),
            inputs,
            output: WireTensor::from_desc(&op.output),
        })
    }

    /// The op kind, or `BadOp` for an unknown op or an attribute block it
    /// does not write.
    pub fn kind(&self) -> Result<OpKind, BadOp> {
        self.kind_in(&VendorOps::NONE)
    }

    /// [`kind`](Self::kind), looking vendor ops up in `vendor`.
    pub fn kind_in(&self, vendor: &VendorOps) -> Result<OpKind, BadOp> {
        builtin(self.op)
            .or_else(|| vendor.find(self.op))
            .and_then(|decl| decl.kind(&self.attrs))
            .ok_or(BadOp)
    }

    /// Decodes the tensors into `inputs` and returns the op.
    pub fn to_desc<'t>(&self, inputs: &'t mut [TensorDesc; 3]) -> Result<OpDesc<'t>, BadOp> {
        self.to_desc_in(inputs, &VendorOps::NONE)
    }

    /// [`to_desc`](Self::to_desc), looking vendor ops up in `vendor`.
    pub fn to_desc_in<'t>(
        &self,
        inputs: &'t mut [TensorDesc; 3],
        vendor: &VendorOps,
    ) -> Result<OpDesc<'t>, BadOp> {
        for (slot, t) in inputs.iter_mut().zip(&self.inputs) {
            *slot = t.to_desc()?;
        }
        Ok(OpDesc {
            kind: self.kind_in(vendor)?,
            inputs: &inputs[..self.inputs.len()],
            output: self.output.to_desc()?,
            op_id: self.op_id,
        })
    }
}

/// Asks for the device's [`DeviceInfo`]; answered by [`Info`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GetInfo;

/// A [`DeviceInfo`] on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Info<'a> {
    /// Model name (≤ 32 bytes of UTF-8).
    pub name: &'a str,
    /// Device memory in bytes.
    pub memory_bytes: u64,
    /// Timestamp clock in Hz.
    pub clock_hz: u64,
    /// Device ABI `[major, minor, patch]`.
    pub abi: [u16; 3],
    /// Ordered queues.
    pub queues: u8,
    /// [`OpSet::words`]: bit `code - 1` for each built-in op.
    pub ops: [u64; OP_SET_WORDS],
    /// [`DTypeSet::bits`]: bit `code` for each [`DType`].
    pub dtypes: u32,
    /// Whether the device records profiling events.
    pub profiling: bool,
    /// The identities of the vendor ops it declares (at most
    /// [`MAX_VENDOR_OPS`]); the host maps them to the declarations it knows
    /// ([`Info::to_info_with`]).
    pub vendor_ops: heapless::Vec<OpId, MAX_VENDOR_OPS>,
}

/// The most vendor ops an [`Info`] lists.
pub const MAX_VENDOR_OPS: usize = 32;

impl<'a> Info<'a> {
    /// The wire form of `info`.
    pub fn from_info(info: &'a DeviceInfo) -> Self {
        let caps = info.capabilities;
        Self {
            name: info.name.as_str(),
            memory_bytes: info.memory_bytes,
            clock_hz: info.clock_hz,
            abi: [
                info.abi_version.major,
                info.abi_version.minor,
                info.abi_version.patch,
            ],
            queues: info.queues,
            ops: caps.ops.words(),
            dtypes: caps.dtypes.bits(),
            profiling: caps.profiling,
            // More than MAX_VENDOR_OPS: the rest are not offered (docs/link-protocol.md).
            vendor_ops: caps
                .vendor_ops
                .iter()
                .map(|d| d.id)
                .take(MAX_VENDOR_OPS)
                .collect(),
        }
    }

    /// The device info (unknown op and dtype bits are ignored), without
    /// vendor ops.
    pub fn to_info(&self) -> DeviceInfo {
        self.to_info_with(&VendorOps::NONE)
    }

    /// The device info, its vendor ops taken from `known` (the host's
    /// declarations, in code order): the longest prefix of `known` whose
    /// every op the device lists. A firmware older than the host's plugin,
    /// without its newest ops, gets the ones it has; ids the host does not
    /// know are ignored.
    pub fn to_info_with(&self, known: &VendorOps) -> DeviceInfo {
        let listed = known
            .0
            .iter()
            .take_while(|d| self.vendor_ops.contains(&d.id))
            .count();
        let ops = OpSet::from_words(self.ops);
        let dtypes = DTypeSet::from_bits(self.dtypes);
        let [major, minor, patch] = self.abi;
        DeviceInfo::new(
            self.name,
            self.memory_bytes,
            self.clock_hz,
            Version::new(major, minor, patch),
            self.queues,
        )
        .with_capabilities(Capabilities {
            ops,
            dtypes,
            vendor_ops: VendorOps(&known.0[..listed]),
            profiling: self.profiling,
        })
    }
}

/// Allocates device memory; answered by [`MemoryState`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Allocate {
    /// Bytes.
    pub bytes: u64,
    /// Alignment, a power of two.
    pub align: u64,
}

/// Frees an allocation; answered by [`MemoryState`] (address 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Deallocate {
    /// The address `Allocate` returned.
    pub addr: u64,
}

/// An allocation's address and the device memory in use after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MemoryState {
    /// The allocated address (0 when answering `Deallocate`).
    pub addr: u64,
    /// Bytes in use.
    pub used: u64,
    /// Bytes available in all.
    pub total: u64,
}

/// Asks how the link may be driven (protocol 2.1); answered by [`LinkInfo`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GetLinkInfo;

/// How the link may be driven (protocol 2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LinkInfo {
    /// Requests the host may have sent and not yet seen answered (at least
    /// 1: stop-and-wait). The receiver must hold that many frames without
    /// losing bytes while it works on the oldest.
    pub window: u16,
}

/// Reads the device clock; answered by [`ClockValue`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ReadClock;

/// The device clock, in ticks of `Info::clock_hz`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ClockValue {
    /// Ticks.
    pub ticks: u64,
}

/// Resets the device: every submitted command not yet completed fails, and
/// its `Completion` is never sent. Answered by `Ack`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Reset;

/// Asks for recorded events; answered by one `EventBatch` carrying this
/// request id (at most `MAX_EVENTS_PER_BATCH`; ask again while full).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DrainEvents {
    /// The most events wanted (capped at `MAX_EVENTS_PER_BATCH`).
    pub max: u32,
}

/// First error code of an accelerator failure: `ACCELERATOR_ERROR + kind`.
pub const ACCELERATOR_ERROR: u16 = 0x10;

const KINDS: [ErrorKind; 8] = [
    ErrorKind::OutOfMemory,
    ErrorKind::InvalidArgument,
    ErrorKind::Timeout,
    ErrorKind::DeviceFault,
    ErrorKind::Incompatible,
    ErrorKind::Transport,
    ErrorKind::Unsupported,
    ErrorKind::Other,
];

/// The wire code of an accelerator error (`Error.code`, `Completion.status`).
pub fn error_code(kind: ErrorKind) -> u16 {
    let index = KINDS
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(KINDS.len() - 1);
    ACCELERATOR_ERROR + index as u16
}

/// The accelerator error a wire code stands for, if it is one.
pub fn error_kind(code: u16) -> Option<ErrorKind> {
    let index = code.checked_sub(ACCELERATOR_ERROR)?;
    KINDS.get(usize::from(index)).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accelerator::{
        Activation, BUILTIN, Namespace, OpDecl, Tolerance, Unary, VendorRules, Window,
    };

    #[test]
    fn every_op_round_trips_with_its_attributes() {
        let t = TensorDesc::new(DeviceAddr(64), DType::F32, Shape::new(&[2, 3]).unwrap());
        let window = Window {
            size: [3, 2],
            stride: [2, 1],
            dilation: [1, 3],
            pad: [0, 1, 2, 0],
        };
        let kinds = [
            OpKind::MatMul {
                transpose_a: true,
                transpose_b: false,
            },
            OpKind::FusedMatMul {
                transpose_a: false,
                transpose_b: true,
                relu: true,
            },
            OpKind::MaxPoolGrad(window),
            OpKind::FusedConv2D(window, Activation::Relu),
            OpKind::Transpose([1, 0, 0, 0, 0, 0]),
        ];
        for kind in kinds.into_iter().chain(OpSet::ALL.iter()) {
            let inputs = [t, t];
            let op = OpDesc {
                kind,
                inputs: &inputs,
                output: t,
                op_id: 9,
            };
            let wire = WireOp::from_desc(&op).unwrap();
            let mut slots = [t; 3];
            assert_eq!(wire.to_desc(&mut slots).unwrap(), op);
        }
    }

    #[test]
    fn unknown_ops_attributes_and_dtypes_are_refused() {
        let t = WireTensor {
            addr: 0,
            dtype: 1,
            dims: heapless::Vec::new(),
        };
        let op = |code, attr0| {
            let mut attrs = Attrs::default();
            attrs.0[0] = attr0;
            WireOp {
                op_id: 0,
                op: OpId::builtin(code),
                attrs,
                inputs: heapless::Vec::new(),
                output: t.clone(),
            }
        };
        assert_eq!(op(0, 0).kind(), Err(BadOp));
        assert_eq!(op(BUILTIN.len() as u16 + 1, 0).kind(), Err(BadOp));
        assert_eq!(op(8, 4).kind(), Err(BadOp));
        assert_eq!(op(1, 4).kind(), Err(BadOp));
        let vendor = WireOp {
            op: OpId {
                namespace: Namespace::named("com.example"),
                code: 1,
            },
            ..op(1, 0)
        };
        assert_eq!(vendor.kind(), Err(BadOp));
        let bad = WireTensor { dtype: 9, ..t };
        assert_eq!(bad.to_desc(), Err(BadOp));
    }

    #[test]
    fn info_round_trips_capabilities() {
        let mut caps = Capabilities::f32(
            OpSet::of(&[OpKind::Unary(Unary::RELU), OpKind::Softmax]),
            true,
        );
        caps.ops = caps.ops.with(OpKind::Transpose([0; MAX_RANK]));
        caps.dtypes = caps.dtypes.with(DType::I8).with(DType::BF16);
        let info =
            DeviceInfo::new("x", 1 << 20, 100, Version::new(1, 2, 3), 2).with_capabilities(caps);
        assert_eq!(Info::from_info(&info).to_info(), info);
    }

    const fn vendor(code: u16) -> OpDecl {
        OpDecl::vendor(
            "V",
            Namespace::named("test.link"),
            code,
            1,
            DTypeSet::EMPTY.with(DType::F32),
            &RULES,
        )
    }
    static RULES: VendorRules = VendorRules {
        shape: |_, inputs| Ok(inputs[0].shape),
        flops: |_, _, _| 0,
        reference: |_, _, _, _| {},
        cases: &[],
        tolerance: Tolerance::EXACT,
    };
    static V1: OpDecl = vendor(1);
    static V2: OpDecl = vendor(2);
    static V3: OpDecl = vendor(3);
    static HOST_KNOWS: [&OpDecl; 3] = [&V1, &V2, &V3];
    static DEVICE_HAS: [&OpDecl; 2] = [&V1, &V2];

    #[test]
    fn vendor_ops_cross_by_identity_and_the_host_keeps_the_prefix_it_knows() {
        let caps = Capabilities::f32(OpSet::of(&[OpKind::Unary(Unary::RELU)]), false)
            .with_vendor_ops(&DEVICE_HAS);
        let info =
            DeviceInfo::new("x", 1 << 20, 100, Version::new(1, 2, 3), 2).with_capabilities(caps);
        let wire = Info::from_info(&info);
        assert_eq!(wire.vendor_ops.as_slice(), [V1.id, V2.id]);
        // A host without declarations sees none; one that knows more sees
        // the ones the device has; one that knows the same sees all.
        assert!(wire.to_info().capabilities.vendor_ops.0.is_empty());
        let with = wire.to_info_with(&VendorOps(&HOST_KNOWS));
        assert_eq!(with.capabilities.vendor_ops, VendorOps(&DEVICE_HAS));
        assert_eq!(with, info);
        // A launch of a vendor op round-trips where the receiver knows it.
        let t = TensorDesc::new(DeviceAddr(64), DType::F32, Shape::new(&[2]).unwrap());
        let mut attrs = Attrs::default();
        attrs.0[0] = 9;
        let op = OpDesc {
            kind: OpKind::Vendor(crate::accelerator::VendorOp { decl: &V2, attrs }),
            inputs: &[t],
            output: t,
            op_id: 5,
        };
        let wire_op = WireOp::from_desc(&op).unwrap();
        let mut slots = [t; 3];
        assert_eq!(
            wire_op
                .to_desc_in(&mut slots, &VendorOps(&DEVICE_HAS))
                .unwrap(),
            op
        );
        assert_eq!(wire_op.kind(), Err(BadOp));
    }

    #[test]
    fn error_codes_round_trip_and_leave_link_codes_alone() {
        for kind in KINDS {
            assert_eq!(error_kind(error_code(kind)), Some(kind));
        }
        assert_eq!(error_kind(7), None);
        assert_eq!(error_kind(0x18), None);
    }
}

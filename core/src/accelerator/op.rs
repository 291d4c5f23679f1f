//! Op descriptors and their shape rules.

use super::elementwise::{Binary, Unary};
use super::op_id::{Attrs, OpId};
use super::record::OpRecord;
use super::shape_error::ShapeError;
use super::types::{DType, DTypeSet, MAX_RANK, Shape, TensorDesc};
use super::vendor::VendorRules;
use super::window::{Activation, Window, WindowOp, window_shape};
use crate::quant::block;

/// The ops tensorplug knows: the families of the catalogue, each with its
/// attributes. Each declares its element types (`OpDecl::dtypes`): the float
/// families take f32 (and f16/bf16 where declared), the int8 families i8.
/// Softmax and reduce-sum work on the last axis.
///
/// A variant's discriminant is its catalogue code (its [`OpDecl::id`]'s,
/// [`BUILTIN`](super::BUILTIN) index + 1), written once here: the
/// catalogue reads it back (`u8`: built-in codes stay ≤ 255, within
/// `OpSet`'s 256 bits). The element-wise families and vendor ops, whose
/// codes are their payloads', take codes no op of its own has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
#[repr(u8)]
pub enum OpKind {
    /// `out[m,n] = op(a) · op(b)`, inputs `[a, b]`, both rank 2.
    MatMul {
        /// Use `aᵀ` (`a` is `[k, m]`).
        transpose_a: bool,
        /// Use `bᵀ` (`b` is `[n, k]`).
        transpose_b: bool,
    } = 1,
    /// MatMul, then `+ bias[n]`, then optionally ReLU. Inputs `[a, b, bias]`.
    FusedMatMul {
        /// Use `aᵀ`.
        transpose_a: bool,
        /// Use `bᵀ`.
        transpose_b: bool,
        /// Apply ReLU after the bias.
        relu: bool,
    } = 2,
    /// `out = x + bias` along the last axis. Inputs `[x, bias[c]]`.
    BiasAdd = 3,
    /// An element-wise op of one operand (`Relu`, `Exp`, …): its
    /// catalogue declaration says which.
    Unary(Unary) = FAMILY_UNARY,
    /// An element-wise op of two operands with NumPy broadcasting (`Add`,
    /// `Pow`, …).
    Binary(Binary) = FAMILY_BINARY,
    /// Softmax over the last axis.
    Softmax = 9,
    /// Sum over the last axis; the output drops that axis or keeps it as 1.
    ReduceSum = 10,
    /// `log(softmax(x))` over the last axis.
    LogSoftmax = 17,
    /// 2-D convolution: inputs `[x [n,h,w,c], filter [kh,kw,c,oc]]`, output
    /// `[n,oh,ow,oc]`; padding reads zeros.
    Conv2D(Window) = 21,
    /// Depthwise 2-D convolution: filter `[kh,kw,c,m]`, output channel
    /// `c·m + j` is channel `c` convolved with filter column `j`.
    DepthwiseConv2D(Window) = 22,
    /// The largest tap of each window above `f32::MIN` (padding, NaN and
    /// −∞ never win, as in TF); output `[n,oh,ow,c]`.
    MaxPool(Window) = 23,
    /// The mean of each window over its in-bounds taps (padding not counted).
    AvgPool(Window) = 24,
    /// The gradient of [`Conv2D`](Self::Conv2D) by its input: inputs
    /// `[dy [n,oh,ow,oc], filter [kh,kw,c,oc]]`, output `[n,h,w,c]`, whose
    /// `h × w` the window maps to `oh × ow` (several sizes may: the output says which).
    Conv2DBackpropInput(Window) = 25,
    /// The gradient of [`Conv2D`](Self::Conv2D) by its filter: inputs
    /// `[x [n,h,w,c], dy [n,oh,ow,oc]]`, output `[kh,kw,c,oc]`.
    Conv2DBackpropFilter(Window) = 26,
    /// The gradient of [`MaxPool`](Self::MaxPool): inputs `[x, dy]`, output
    /// like `x`. Each `dy` goes to its window's first in-bounds tap, or to
    /// a later one greater than every tap before it (TF's CPU `MaxPoolGrad`).
    MaxPoolGrad(Window) = 27,
    /// The gradient of [`AvgPool`](Self::AvgPool): input `[dy [n,oh,ow,c]]`,
    /// output `[n,h,w,c]` (as for `Conv2DBackpropInput`); each `dy` over its
    /// window's in-bounds tap count is added to those taps.
    AvgPoolGrad(Window) = 28,
    /// [`Conv2D`](Self::Conv2D), then `+ bias[oc]`, then the activation:
    /// inputs `[x, filter, bias [oc]]` (TF's `_FusedConv2D`).
    FusedConv2D(Window, Activation) = 29,
    /// Output axis `i` is input axis `perm[i]`: input `[x]` of rank `r`,
    /// `perm[..r]` a permutation of `0..r`, `perm[r..]` unused (0).
    Transpose([u8; MAX_RANK]) = 30,
    /// A vendor's op, declared in the vendor's crate ([`OpDecl::vendor`]).
    Vendor(VendorOp) = VENDOR,
    /// A built-in op declared as one record ([`OpRecord`]): its
    /// declaration and attributes; the record holds its rules.
    Record(VendorOp) = FAMILY_RECORD,
    /// int8 [`Conv2D`](Self::Conv2D), TFLite's `CONV_2D`: inputs `[x i8
    /// [n,h,w,c], filter i8 [kh,kw,c,oc] (zero point 0), quant i32]`,
    /// output i8 `[n,oh,ow,oc]`. The quantization block
    /// ([`crate::quant::block`]) holds the zero points, the clamp, and per
    /// output channel the int32 bias and requantization.
    Conv2DInt8(Window) = 34,
    /// int8 [`DepthwiseConv2D`](Self::DepthwiseConv2D), TFLite's
    /// `DEPTHWISE_CONV_2D`: filter `[kh,kw,c,m]`, block as `Conv2DInt8`.
    DepthwiseConv2DInt8(Window) = 35,
    /// int8 `x · w`, TFLite's `FULLY_CONNECTED`: inputs `[x i8 [m,k], w i8
    /// [k,n] (or [n,k] transposed), quant i32]`, output i8 `[m,n]`.
    MatMulInt8 {
        /// `w` is stored `[n, k]` (TFLite's layout).
        transpose_b: bool,
    } = 36,
    /// int8 `a + b` of one shape, TFLite's `ADD`: inputs `[a i8, b i8,
    /// quant i32]`.
    AddInt8 = 37,
    /// int8 [`MaxPool`](Self::MaxPool): inputs `[x i8, quant i32]`; input
    /// and output share a scale and zero point.
    MaxPoolInt8(Window) = 38,
    /// int8 [`AvgPool`](Self::AvgPool), rounded half away from zero.
    AvgPoolInt8(Window) = 39,
    /// `q = clamp(round(x / scale) + zero_point)`, TFLite's `QUANTIZE`:
    /// inputs `[x f32, quant i32]` (one scale, or one per last-axis
    /// element), output i8 of `x`'s shape.
    Quantize = 40,
    /// `x = scale · (q − zero_point)`, TFLite's `DEQUANTIZE`: inputs `[q i8,
    /// quant i32]`, output f32.
    Dequantize = 41,
    /// int8 softmax over the last axis, TFLite's reference `SOFTMAX` in
    /// gemmlowp's fixed point: inputs `[x i8 [rows, n], quant i32]`, output
    /// i8 of scale 1/256 and zero point −128. The block holds the input's
    /// `β·scale` multiplier, its left shift and the smallest difference
    /// from the row's maximum that counts ([`crate::quant::block`]).
    SoftmaxInt8 = 88,
    /// `out[i] = table[x[i]]`: any op of one int8 input, tabulated by the
    /// host (TFLite's int8 `LOGISTIC` and `TANH` are lookup tables):
    /// inputs `[x i8, quant i32]`, output i8 of `x`'s shape; the block
    /// holds the 256 entries, indexed by `x` as a byte.
    LookupInt8 = 89,
    /// int8 `a · b` requantized, TFLite's `MUL`: inputs `[a i8, b i8, quant
    /// i32]`, output i8 of `a`'s shape; `b` is `a`'s shape, its last axis,
    /// or one value, broadcast along `a`'s leading axes (`b[i % |b|]`).
    MulInt8 = 90,
    /// `out[o, :] = a[o, :] ++ b[o, :]`: inputs `[a [outer, p], b [outer,
    /// q]]`, output `[outer, p + q]`, all of the element type (f32 or
    /// int8). Any axis' concatenation of two tensors, viewed as rows (exact).
    Concat(DType) = 91,
    /// `out[o, i, :] = params[o, indices[i], :]` (TF's `GatherV2`): inputs
    /// `[params [outer, n, inner], indices [count]]` of the index type (i32
    /// or i64), output `[outer, count, inner]`. An index outside `0..n`
    /// fails the op (exact).
    Gather(DType) = 50,
    /// `out[s, :]` is the sum, in `f32` and row order, of the rows
    /// `data[i, :]` with `ids[i] = s`, `0` for a segment without rows (TF's
    /// `UnsortedSegmentSum`): inputs `[data [m, inner], ids [m]]` of the
    /// index type (i32 or i64), output `[segments, inner]`. A negative id
    /// drops its row; one ≥ `segments` fails the op.
    SegmentSum(DType) = 51,
    /// The largest element over the last axis, NaN if any is; `−∞` for an
    /// empty row; of equal elements the later one (signed zeros). Shapes as
    /// [`ReduceSum`](Self::ReduceSum).
    ReduceMax = 52,
    /// The smallest element over the last axis, as [`ReduceMax`](Self::ReduceMax); `+∞` for an empty row.
    ReduceMin = 53,
    /// The product over the last axis; `1` for an empty row.
    ReduceProd = 54,
    /// Each element converted from `from` to `to` as TF's `Cast` does
    /// (exact): a float to an integer truncates, and NaN, ±∞ or a value
    /// out of range gives the integer's minimum; an integer to a float
    /// rounds to nearest; a wider integer to a narrower wraps; a bool is
    /// 0 or 1 and a value to bool is `≠ 0`; f32 to bf16 or f16 rounds to
    /// nearest even (NaN stays a quiet NaN, f16 overflows to ±∞), and back
    /// is exact. The pairs of [`cast_supported`].
    Cast {
        /// The input's element type.
        from: DType,
        /// The output's.
        to: DType,
    } = 76,
    /// `out = cond ≠ 0 ? a : b` element by element (NaN counts as true):
    /// inputs `[cond, a, b]`, one shape (exact).
    Select = 83,
    /// The index of the largest element over the last axis, as i32 or i64
    /// (`out`): the first of equal ones; NaN never wins, and a row without
    /// an element above `f32::MIN` gives 0 (TF's CPU kernel). The output
    /// drops the axis.
    ArgMax(DType) = 84,
    /// The index of the smallest, as [`ArgMax`](Self::ArgMax) (below `f32::MAX`).
    ArgMin(DType) = 85,
    /// Uniform floats in `[0, 1)`, TF's `StatelessRandomUniformV2` with
    /// Philox bit for bit: no inputs; the output of any shape.
    RandomUniform {
        /// Philox's 64-bit key.
        key: u64,
        /// Its 128-bit counter, low word first.
        counter: [u64; 2],
    } = 86,
}

/// [`OpKind::Unary`]'s discriminant: the code of the family's first member
/// (`Relu`), which no op of its own can take (the member's code is its
/// payload's). Within the catalogue's range, so `match`es stay jump tables.
const FAMILY_UNARY: u8 = 8;
/// [`OpKind::Binary`]'s discriminant: likewise, `Add`'s code.
const FAMILY_BINARY: u8 = 4;
/// [`OpKind::Record`]'s discriminant: `Sub`'s code, an element-wise
/// member's, which no op of its own can take (a record's code is its
/// declaration's).
const FAMILY_RECORD: u8 = 5;
/// [`OpKind::Vendor`]'s discriminant: 0, no catalogue code (its code is in
/// its namespace).
const VENDOR: u8 = 0;

impl OpKind {
    /// The discriminant: an op of its own's catalogue code (the families'
    /// and vendor ops' are the constants above).
    pub(super) const fn discriminant(&self) -> u16 {
        // SAFETY: a `#[repr(u8)]` enum is laid out as a `repr(C)` union of
        // `repr(C)` structs whose first field is the `u8` discriminant
        // (the Reference, "Primitive representation of enums with fields").
        let tag = unsafe { *(self as *const Self).cast::<u8>() };
        tag as u16
    }
}

/// Whether [`OpKind::Cast`] converts `from` to `to`: f32 to and from i32,
/// i64, bf16 and f16, f32 to bool and back, i8 to f32, and i32 to and from
/// i64.
pub const fn cast_supported(from: DType, to: DType) -> bool {
    use DType::{BF16, Bool, F16, F32, I8, I32, I64};
    matches!(
        (from, to),
        (F32, I32 | I64 | Bool | BF16 | F16)
            | (I32, F32 | I64)
            | (I64, F32 | I32)
            | (Bool | BF16 | F16 | I8, F32)
    )
}

/// A one-element slice of `d`, for [`OpKind::operand_types`].
const fn only(d: DType) -> &'static [DType] {
    use DType::*;
    match d {
        F32 => &[F32],
        F16 => &[F16],
        BF16 => &[BF16],
        I8 => &[I8],
        U8 => &[U8],
        I32 => &[I32],
        I64 => &[I64],
        Bool => &[Bool],
    }
}

/// One op of the catalogue: tensorplug's ([`BUILTIN`](super::BUILTIN)) or a vendor's
/// ([`OpDecl::vendor`]).
#[derive(Clone, Copy)]
pub struct OpDecl {
    /// The op's name, as in errors, capability lists and the profiler.
    pub name: &'static str,
    /// Its stable identity.
    pub id: OpId,
    /// How many input tensors it takes.
    pub inputs: u8,
    /// The element types its operands may have (all operands share one).
    pub dtypes: DTypeSet,
    /// A built-in op (its [`OpKind`] with default attributes) or a
    /// vendor's (its rules).
    pub form: Form,
}

/// What an [`OpDecl`] is besides its identity.
#[derive(Clone, Copy)]
pub enum Form {
    /// A built-in op: the [`OpKind`] with its attributes at their defaults;
    /// [`OpDecl::kind`] fills them in from an [`Attrs`] block. Its shape
    /// rule, cost, reference kernel and cases are `core`'s.
    Builtin(OpKind),
    /// A member of the element-wise family of one operand; its scalar
    /// rules are the catalogue's `ELEMENTWISE_RULES` entry. Only `core`
    /// makes a [`Unary`], so only the catalogue declares one. With a
    /// parameter, the name of the f32 TF attribute it comes from
    /// ([`OpDecl::param`]).
    Unary(Unary, Option<&'static str>),
    /// A member of the broadcasting element-wise family of two (with a
    /// parameter's TF attribute name, as for `Unary`).
    Binary(Binary, Option<&'static str>),
    /// A vendor's op and its rules.
    Vendor(&'static VendorRules),
    /// A built-in op declared as one record.
    Record(&'static OpRecord),
}

/// An op declared by its rules, with its attributes: the payload of
/// [`OpKind::Vendor`] (a vendor's op) and of [`OpKind::Record`] (a
/// built-in record's).
#[derive(Clone, Copy)]
pub struct VendorOp {
    /// Its declaration (a `static` in the vendor's crate).
    pub decl: &'static OpDecl,
    /// Its attributes.
    pub attrs: Attrs,
}

impl PartialEq for VendorOp {
    fn eq(&self, other: &Self) -> bool {
        self.decl.id == other.decl.id && self.attrs == other.attrs
    }
}

impl Eq for VendorOp {}

impl core::hash::Hash for VendorOp {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.decl.id.hash(state);
        self.attrs.hash(state);
    }
}

impl core::fmt::Debug for VendorOp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct(self.decl.name)
            .field("id", &self.decl.id)
            .field("attrs", &self.attrs)
            .finish()
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for VendorOp {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{=str} {}", self.decl.name, self.decl.id)
    }
}

impl core::fmt::Debug for OpDecl {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("OpDecl")
            .field("name", &self.name)
            .field("id", &self.id)
            .field("inputs", &self.inputs)
            .finish_non_exhaustive()
    }
}

/// One op to launch: kind, input tensors, output tensor, profiling id.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpDesc<'a> {
    /// What to compute.
    pub kind: OpKind,
    /// Inputs, in the order [`OpKind`] documents.
    pub inputs: &'a [TensorDesc],
    /// Where the result goes; its shape must be the op's result shape.
    pub output: TensorDesc,
    /// Correlates this launch with its profiling events and its TF op name.
    pub op_id: u16,
}

impl OpKind {
    /// Whether this is a broadcasting element-wise binary op.
    pub const fn is_binary(self) -> bool {
        matches!(self, Self::Binary(_))
    }

    /// The element types of the inputs and the output of an op whose
    /// operands differ (the int8 ops); `None` when all share one type of
    /// the declaration's [`dtypes`](OpDecl::dtypes).
    pub const fn operand_types(self) -> Option<(&'static [DType], DType)> {
        use DType::{F32, I8, I32, I64};
        match self {
            Self::Conv2DInt8(_) | Self::DepthwiseConv2DInt8(_) | Self::MatMulInt8 { .. } => {
                Some((&[I8, I8, I32], I8))
            }
            Self::AddInt8 | Self::MulInt8 => Some((&[I8, I8, I32], I8)),
            Self::MaxPoolInt8(_) | Self::AvgPoolInt8(_) | Self::SoftmaxInt8 | Self::LookupInt8 => {
                Some((&[I8, I32], I8))
            }
            Self::Quantize => Some((&[F32, I32], I8)),
            Self::Dequantize => Some((&[I8, I32], F32)),
            Self::Concat(I8) => Some((&[I8, I8], I8)),
            Self::Concat(_) => Some((&[F32, F32], F32)),
            Self::Gather(I64) | Self::SegmentSum(I64) => Some((&[F32, I64], F32)),
            Self::Gather(_) | Self::SegmentSum(_) => Some((&[F32, I32], F32)),
            Self::Cast { from, to } => Some((only(from), to)),
            Self::ArgMax(out) | Self::ArgMin(out) => Some((&[F32], out)),
            _ => None,
        }
    }

    /// Whether this is one of the int8 ops (its last input is a
    /// quantization block).
    pub const fn is_int8(self) -> bool {
        matches!(
            self,
            Self::Conv2DInt8(_)
                | Self::DepthwiseConv2DInt8(_)
                | Self::MatMulInt8 { .. }
                | Self::AddInt8
                | Self::MaxPoolInt8(_)
                | Self::AvgPoolInt8(_)
                | Self::Quantize
                | Self::Dequantize
                | Self::SoftmaxInt8
                | Self::LookupInt8
                | Self::MulInt8
        )
    }
}

impl OpDesc<'_> {
    /// Checks input count, dtypes and that the output shape is the op's result.
    pub fn validate(&self) -> Result<(), ShapeError> {
        let want = self.kind.input_count();
        if self.inputs.len() != want {
            return Err(ShapeError::InputCount {
                expected: want as u8,
                got: self.inputs.len().min(255) as u8,
            });
        }
        let out_index = want as u8;
        let dtypes = self.kind.decl().dtypes;
        let first = self.inputs.first().unwrap_or(&self.output).dtype;
        let signature = self.kind.operand_types();
        for (i, t) in self.inputs.iter().chain([&self.output]).enumerate() {
            let ok = match signature {
                Some((inputs, output)) => t.dtype == inputs.get(i).copied().unwrap_or(output),
                None => t.dtype == first && dtypes.contains(t.dtype),
            };
            if !ok {
                return Err(ShapeError::DType { operand: i as u8 });
            }
            t.byte_len().ok_or(ShapeError::Overflow)?;
        }
        let expected = self.result_shape()?;
        expect_shape(out_index, &self.output.shape, &expected)
    }

    /// The shape the output must have, by the op's rule over the inputs
    /// (an op whose output shape is its own choice, as `RandomUniform`,
    /// gives `output`'s); what a program compiler derives shapes with.
    ///
    /// # Errors
    /// The wrong number of inputs, or inputs the rule refuses.
    pub fn output_shape(&self) -> Result<Shape, ShapeError> {
        let want = self.kind.input_count();
        if self.inputs.len() != want {
            return Err(ShapeError::InputCount {
                expected: want as u8,
                got: self.inputs.len().min(255) as u8,
            });
        }
        self.result_shape()
    }

    /// The shape the output must have, derived from the inputs.
    fn result_shape(&self) -> Result<Shape, ShapeError> {
        let shape = |i: usize| self.inputs[i].shape;
        match self.kind {
            OpKind::RandomUniform { .. } => Ok(self.output.shape),
            OpKind::MatMul {
                transpose_a,
                transpose_b,
            }
            | OpKind::FusedMatMul {
                transpose_a,
                transpose_b,
                ..
            } => {
                let (m, n) = matmul_mn(&shape(0), &shape(1), transpose_a, transpose_b)?;
                if matches!(self.kind, OpKind::FusedMatMul { .. }) {
                    expect_shape(2, &shape(2), &dims(&[n]))?;
                }
                Ok(dims(&[m, n]))
            }
            OpKind::BiasAdd => {
                let x = shape(0);
                if x.dims().is_empty() {
                    return Err(ShapeError::Rank {
                        operand: 0,
                        expected: 1,
                        got: 0,
                    });
                }
                expect_shape(1, &shape(1), &dims(&[x.last()]))?;
                Ok(x)
            }
            OpKind::Conv2D(w) => window_shape(WindowOp::Conv, &w, &shape(0), Some(&shape(1))),
            OpKind::FusedConv2D(w, _) => {
                let out = window_shape(WindowOp::Conv, &w, &shape(0), Some(&shape(1)))?;
                expect_shape(2, &shape(2), &dims(&[out.last()]))?;
                Ok(out)
            }
            OpKind::DepthwiseConv2D(w) => {
                window_shape(WindowOp::Depthwise, &w, &shape(0), Some(&shape(1)))
            }
            OpKind::MaxPool(w) | OpKind::AvgPool(w) => {
                window_shape(WindowOp::Pool, &w, &shape(0), None)
            }
            OpKind::Conv2DBackpropInput(w) => {
                // The output is the forward input: its forward result is dy.
                let forward = window_shape(WindowOp::Conv, &w, &self.output.shape, Some(&shape(1)))
                    .map_err(|e| e.renumber(0, 2))?;
                expect_shape(0, &shape(0), &forward)?;
                Ok(self.output.shape)
            }
            OpKind::Conv2DBackpropFilter(w) => {
                let (c, k) = (shape(0).last(), shape(1).last());
                let filter = Shape::new(&[w.size[0].into(), w.size[1].into(), c, k])
                    .ok_or(ShapeError::Overflow)?;
                let forward = window_shape(WindowOp::Conv, &w, &shape(0), Some(&filter))?;
                expect_shape(1, &shape(1), &forward)?;
                Ok(filter)
            }
            OpKind::MaxPoolGrad(w) => {
                let forward = window_shape(WindowOp::Pool, &w, &shape(0), None)?;
                expect_shape(1, &shape(1), &forward)?;
                Ok(shape(0))
            }
            OpKind::AvgPoolGrad(w) => {
                let forward = window_shape(WindowOp::Pool, &w, &self.output.shape, None)
                    .map_err(|e| e.renumber(0, 1))?;
                expect_shape(0, &shape(0), &forward)?;
                Ok(self.output.shape)
            }
            OpKind::Transpose(perm) => transpose_shape(&shape(0), &perm),
            OpKind::Vendor(op) => match op.decl.rules() {
                Some(rules) => (rules.shape)(&op.attrs, self.inputs),
                None => Err(ShapeError::Attrs),
            },
            OpKind::Record(op) => match op.decl.record() {
                Some(record) => (record.shape)(&op.attrs, self.inputs),
                None => Err(ShapeError::Attrs),
            },
            OpKind::Unary(_) | OpKind::Softmax | OpKind::LogSoftmax => Ok(shape(0)),
            OpKind::ReduceSum | OpKind::ReduceMax | OpKind::ReduceMin | OpKind::ReduceProd => {
                let x = shape(0);
                let outer = &x.dims()[..x.dims().len().saturating_sub(1)];
                // Dropping the axis is canonical; keeping it as 1 is accepted.
                let mut kept = [0u64; MAX_RANK];
                kept[..outer.len()].copy_from_slice(outer);
                kept[outer.len()] = 1;
                let keep = Shape::new(&kept[..=outer.len()]).ok_or(ShapeError::Overflow)?;
                if !x.dims().is_empty() && self.output.shape == keep {
                    Ok(keep)
                } else {
                    Ok(dims(outer))
                }
            }
            OpKind::Binary(_) => broadcast_shapes(&shape(0), &shape(1)),
            OpKind::Cast { from, to } => match cast_supported(from, to) {
                true => Ok(shape(0)),
                false => Err(ShapeError::DType { operand: 0 }),
            },
            OpKind::ArgMax(out) | OpKind::ArgMin(out) => {
                let x = shape(0);
                if !matches!(out, DType::I32 | DType::I64) {
                    return Err(ShapeError::DType { operand: 1 });
                }
                if x.dims().is_empty() || x.last() == 0 {
                    return Err(ShapeError::Rank {
                        operand: 0,
                        expected: 1,
                        got: x.dims().len() as u8,
                    });
                }
                Ok(dims(&x.dims()[..x.dims().len() - 1]))
            }
            OpKind::Select => {
                expect_shape(1, &shape(1), &shape(0))?;
                expect_shape(2, &shape(2), &shape(0))?;
                Ok(shape(0))
            }
            OpKind::Gather(_) => {
                let (p, i) = (shape(0), shape(1));
                let [outer, _, inner] = rank_dims::<3>(0, &p)?;
                let [count] = rank_dims::<1>(1, &i)?;
                Ok(dims(&[outer, count, inner]))
            }
            OpKind::Concat(_) => {
                let [outer, p] = rank_dims::<2>(0, &shape(0))?;
                let [_, q] = rank_dims::<2>(1, &shape(1))?;
                expect_shape(1, &shape(1), &dims(&[outer, q]))?;
                Ok(dims(&[outer, p.saturating_add(q)]))
            }
            OpKind::SegmentSum(_) => {
                let [m, inner] = rank_dims::<2>(0, &shape(0))?;
                expect_shape(1, &shape(1), &dims(&[m]))?;
                let [segments, _] = rank_dims::<2>(2, &self.output.shape)?;
                Ok(dims(&[segments, inner]))
            }
            OpKind::Conv2DInt8(w) | OpKind::DepthwiseConv2DInt8(w) => {
                let op = match self.kind {
                    OpKind::Conv2DInt8(_) => WindowOp::Conv,
                    _ => WindowOp::Depthwise,
                };
                let out = window_shape(op, &w, &shape(0), Some(&shape(1)))?;
                expect_block(2, &shape(2), out.last().saturating_mul(3))?;
                Ok(out)
            }
            OpKind::MatMulInt8 { transpose_b } => {
                let (m, n) = matmul_mn(&shape(0), &shape(1), false, transpose_b)?;
                expect_block(2, &shape(2), n.saturating_mul(3))?;
                Ok(dims(&[m, n]))
            }
            OpKind::AddInt8 => {
                // `b` is `a`'s shape or its trailing axes, after leading 1s.
                expect_trailing(1, &shape(1), &shape(0))?;
                expect_block(2, &shape(2), block::ADD_WORDS as u64)?;
                Ok(shape(0))
            }
            OpKind::MaxPoolInt8(w) | OpKind::AvgPoolInt8(w) => {
                let out = window_shape(WindowOp::Pool, &w, &shape(0), None)?;
                expect_block(1, &shape(1), 0)?;
                Ok(out)
            }
            OpKind::Quantize | OpKind::Dequantize => {
                let x = shape(0);
                if shape(1) != dims(&[block::HEADER_WORDS as u64 + 1]) {
                    expect_block(1, &shape(1), x.last())?;
                }
                Ok(x)
            }
            OpKind::SoftmaxInt8 => {
                expect_block(1, &shape(1), block::SOFTMAX_WORDS as u64)?;
                Ok(shape(0))
            }
            OpKind::LookupInt8 => {
                expect_block(1, &shape(1), block::LOOKUP_WORDS as u64)?;
                Ok(shape(0))
            }
            OpKind::MulInt8 => {
                let (a, b) = (shape(0), shape(1));
                let (n, m) = (a.elements().unwrap_or(0), b.elements().unwrap_or(0));
                if !(m == n || m == 1 || (m == a.last() && b.last() == m)) {
                    // `b` is one value, `a`'s last axis or `a`'s whole shape.
                    return Err(ShapeError::Dim {
                        operand: 1,
                        axis: b.dims().len().saturating_sub(1) as u8,
                        expected: a.last(),
                        got: b.last(),
                    });
                }
                expect_block(2, &shape(2), block::MUL_WORDS as u64)?;
                Ok(a)
            }
        }
    }

    /// Floating-point operations this op performs (for profiling stats).
    pub fn flops(&self) -> u64 {
        let out = self.output.shape.elements().unwrap_or(0);
        let input = self
            .inputs
            .first()
            .and_then(|t| t.shape.elements())
            .unwrap_or(0);
        match self.kind {
            OpKind::MatMul { transpose_a, .. } | OpKind::FusedMatMul { transpose_a, .. } => {
                let a = self.inputs.first().map_or(Shape::SCALAR, |t| t.shape);
                let k = if transpose_a {
                    a.dims().first().copied().unwrap_or(0)
                } else {
                    a.last()
                };
                let extra = if matches!(self.kind, OpKind::FusedMatMul { relu: true, .. }) {
                    2
                } else if matches!(self.kind, OpKind::FusedMatMul { .. }) {
                    1
                } else {
                    0
                };
                out.saturating_mul(2u64.saturating_mul(k).saturating_add(extra))
            }
            OpKind::Softmax | OpKind::LogSoftmax | OpKind::SoftmaxInt8 => input.saturating_mul(5),
            OpKind::LookupInt8 | OpKind::MulInt8 => input,
            OpKind::Conv2D(w) | OpKind::FusedConv2D(w, _) | OpKind::Conv2DInt8(w) => {
                let channels = self.inputs.first().map_or(0, |t| t.shape.last());
                out.saturating_mul(2 * taps(&w)).saturating_mul(channels)
            }
            OpKind::DepthwiseConv2D(w) | OpKind::DepthwiseConv2DInt8(w) => {
                out.saturating_mul(2 * taps(&w))
            }
            OpKind::MatMulInt8 { transpose_b } => {
                let b = self.inputs.get(1).map_or(Shape::SCALAR, |t| t.shape);
                let k = match transpose_b {
                    true => b.last(),
                    false => b.dims().first().copied().unwrap_or(0),
                };
                out.saturating_mul(2u64.saturating_mul(k))
            }
            OpKind::MaxPool(w)
            | OpKind::AvgPool(w)
            | OpKind::MaxPoolInt8(w)
            | OpKind::AvgPoolInt8(w) => out.saturating_mul(taps(&w)),
            // As many multiply-adds as the forward convolution: 2·|dy|·taps·c.
            OpKind::Conv2DBackpropInput(w) => input
                .saturating_mul(2 * taps(&w))
                .saturating_mul(self.output.shape.last()),
            OpKind::Conv2DBackpropFilter(w) => {
                let dy = self.inputs.get(1).and_then(|t| t.shape.elements());
                let c = self.inputs.first().map_or(0, |t| t.shape.last());
                dy.unwrap_or(0)
                    .saturating_mul(2 * taps(&w))
                    .saturating_mul(c)
            }
            OpKind::MaxPoolGrad(w) => {
                let dy = self.inputs.get(1).and_then(|t| t.shape.elements());
                dy.unwrap_or(0).saturating_mul(taps(&w))
            }
            OpKind::AvgPoolGrad(w) => input.saturating_mul(taps(&w)),
            OpKind::ReduceSum | OpKind::ReduceMax | OpKind::ReduceMin | OpKind::ReduceProd => input,
            OpKind::SegmentSum(_) => input,
            OpKind::Unary(op) => out.saturating_mul(op.rules().flops.into()),
            OpKind::Binary(op) => out.saturating_mul(op.rules().flops.into()),
            OpKind::Vendor(op) => op.decl.rules().map_or(0, |rules| {
                (rules.flops)(&op.attrs, self.inputs, &self.output)
            }),
            OpKind::Record(op) => op.decl.record().map_or(0, |record| {
                (record.flops)(&op.attrs, self.inputs, &self.output)
            }),
            _ => out,
        }
    }

    /// Bytes the op reads and writes in device memory (for profiling stats).
    pub fn bytes_accessed(&self) -> u64 {
        self.inputs
            .iter()
            .chain([&self.output])
            .map(|t| t.byte_len().unwrap_or(0) as u64)
            .fold(0u64, u64::saturating_add)
    }
}

/// The shape of `x` transposed by `perm` (checked to be a permutation).
fn transpose_shape(x: &Shape, perm: &[u8; MAX_RANK]) -> Result<Shape, ShapeError> {
    let rank = x.dims().len();
    let mut seen = [false; MAX_RANK];
    let mut out = [0u64; MAX_RANK];
    for (i, &p) in perm.iter().enumerate() {
        let p = usize::from(p);
        let valid = if i < rank {
            p < rank && !seen[p]
        } else {
            p == 0
        };
        if !valid {
            return Err(ShapeError::Permutation);
        }
        if i < rank {
            seen[p] = true;
            out[i] = x.dims()[p];
        }
    }
    Shape::new(&out[..rank]).ok_or(ShapeError::Overflow)
}

fn taps(w: &Window) -> u64 {
    u64::from(w.size[0]) * u64::from(w.size[1])
}

fn dims(d: &[u64]) -> Shape {
    // Callers pass at most MAX_RANK dims.
    Shape::new(d).unwrap_or(Shape::SCALAR)
}

/// The dims of a shape that must have rank `R`.
fn rank_dims<const R: usize>(operand: u8, s: &Shape) -> Result<[u64; R], ShapeError> {
    s.dims().try_into().map_err(|_| ShapeError::Rank {
        operand,
        expected: R as u8,
        got: s.dims().len() as u8,
    })
}

/// A quantization block of `words` words after its header.
fn expect_block(operand: u8, got: &Shape, words: u64) -> Result<(), ShapeError> {
    expect_shape(
        operand,
        got,
        &dims(&[words.saturating_add(block::HEADER_WORDS as u64)]),
    )
}

/// Whether `b` is `a`'s trailing axes after leading 1s (at most `a`'s
/// rank): then `b[i % b.len()]` is `b` broadcast along `a`'s leading axes
/// (`AddInt8`'s second operand).
pub fn trails(b: &[u64], a: &[u64]) -> bool {
    let lead = b.iter().take_while(|&&d| d == 1).count();
    b.len() <= a.len() && b[lead..] == a[a.len() - (b.len() - lead)..]
}

/// [`trails`], or the first axis where it does not.
fn expect_trailing(operand: u8, got: &Shape, want: &Shape) -> Result<(), ShapeError> {
    let (g, w) = (got.dims(), want.dims());
    if g.len() > w.len() {
        return Err(ShapeError::Rank {
            operand,
            expected: w.len() as u8,
            got: g.len() as u8,
        });
    }
    let lead = g.iter().take_while(|&&d| d == 1).count();
    let tail = &w[w.len() - (g.len() - lead)..];
    for (axis, (&gd, &wd)) in g[lead..].iter().zip(tail).enumerate() {
        if gd != wd {
            return Err(ShapeError::Dim {
                operand,
                axis: (lead + axis) as u8,
                expected: wd,
                got: gd,
            });
        }
    }
    Ok(())
}

fn expect_shape(operand: u8, got: &Shape, want: &Shape) -> Result<(), ShapeError> {
    if got.dims().len() != want.dims().len() {
        return Err(ShapeError::Rank {
            operand,
            expected: want.dims().len() as u8,
            got: got.dims().len() as u8,
        });
    }
    for (axis, (&g, &w)) in got.dims().iter().zip(want.dims()).enumerate() {
        if g != w {
            return Err(ShapeError::Dim {
                operand,
                axis: axis as u8,
                expected: w,
                got: g,
            });
        }
    }
    Ok(())
}

/// The `[m, n]` result of `op(a) · op(b)` (`op` transposes when asked).
pub fn matmul_shape(a: &Shape, b: &Shape, ta: bool, tb: bool) -> Result<Shape, ShapeError> {
    let (m, n) = matmul_mn(a, b, ta, tb)?;
    Ok(dims(&[m, n]))
}

fn matmul_mn(a: &Shape, b: &Shape, ta: bool, tb: bool) -> Result<(u64, u64), ShapeError> {
    for (operand, s) in [(0u8, a), (1, b)] {
        if s.dims().len() != 2 {
            return Err(ShapeError::Rank {
                operand,
                expected: 2,
                got: s.dims().len() as u8,
            });
        }
    }
    let (a0, a1, b0, b1) = (a.dims()[0], a.dims()[1], b.dims()[0], b.dims()[1]);
    let (m, k) = if ta { (a1, a0) } else { (a0, a1) };
    let (kb, n, k_axis) = if tb { (b1, b0, 1) } else { (b0, b1, 0) };
    if k != kb {
        return Err(ShapeError::Dim {
            operand: 1,
            axis: k_axis,
            expected: k,
            got: kb,
        });
    }
    Ok((m, n))
}

/// NumPy broadcasting of two shapes (TF's `BCast`).
pub fn broadcast_shapes(a: &Shape, b: &Shape) -> Result<Shape, ShapeError> {
    let rank = a.dims().len().max(b.dims().len());
    let mut out = [0u64; MAX_RANK];
    for (i, slot) in out[..rank].iter_mut().enumerate() {
        let from_end = rank - i;
        let da = dim_from_end(a, from_end);
        let db = dim_from_end(b, from_end);
        *slot = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            (x, y) => {
                return Err(ShapeError::Dim {
                    operand: 1,
                    axis: (b.dims().len() - from_end) as u8,
                    expected: x,
                    got: y,
                });
            }
        };
    }
    Shape::new(&out[..rank]).ok_or(ShapeError::Overflow)
}

fn dim_from_end(s: &Shape, from_end: usize) -> u64 {
    let d = s.dims();
    if from_end <= d.len() {
        d[d.len() - from_end]
    } else {
        1
    }
}

#[cfg(test)]
mod tests;

//! The CPU ops the graph pass's int8 rewrite of quantized graphs inserts
//! (`graph::qat`): they turn the float values a QAT or QDQ graph reads at
//! run time (weights, fake-quant or `QuantizeV2` ranges, batch-norm
//! parameters) into the int8 weights and quantization blocks of the
//! device's int8 ops: TFLite's converter's formulas for QAT graphs,
//! `QuantizeV2`'s own for QDQ graphs ([`params`]).
//!
//! `_Tensorplug<DEVICE>Qat…`, defined with the int8 ops and registered for
//! the CPU and for the device. On the device their inputs are in host
//! memory and their int8 outputs are kept on the device ([`kept`]): a step
//! whose inputs are the bytes of the last one hands out the kept tensors,
//! so `predict` computes and uploads the parameters once, and a model that
//! trains on gets those of its current values at its next step. Each op
//! also has a packed form (device only) that reads its CPU values from a
//! `QatPack` ([`packed`], [`inputs`]), and `QatWeights` can apply the
//! weight fake-quant itself ([`fake_quant`]).

mod fake_quant;
mod inputs;
mod kept;
mod out;
mod pack_op;
mod packed;
pub mod params;

use crate::ffi;
use crate::identity;
use crate::kernels::builder::{CreateFn, KernelBuilder};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::op_def::{define, op_name};
use crate::kernels::tf::{Construction, Context};
use crate::log;
use fake_quant::{WeightFakeQuant, fake_quant};
use inputs::Inputs;
use out::{Out, write_outputs};
use params::{Affine, RangeMode, TensorBlock, WeightMode};
use std::ffi::{CStr, CString, c_void};
use tensorplug_abi::tf::{TF_DataType, TF_OpKernelConstruction, TF_OpKernelContext};
use tensorplug_core::accelerator::Activation;
use tensorplug_core::quant::Rounding;

/// One op: its name after `_Tensorplug<DEVICE>` and its definition.
struct QatOp {
    suffix: &'static str,
    inputs: &'static [&'static CStr],
    outputs: &'static [&'static CStr],
    attrs: &'static [&'static CStr],
    /// The output that stays in host memory on the device (read by another
    /// `Qat` op, not by an int8 op).
    host_output: Option<&'static CStr>,
}

const ACT_ATTRS: &[&CStr] = &[
    c"activation: {'NONE', 'RELU', 'RELU6'} = 'NONE'",
    c"rounding: int = 0",
    RANGE_MODES,
    RANGE_NAMES,
    ENSURE,
];
/// The node each range comes from (its quantizer), for error messages.
const RANGE_NAMES: &CStr = c"range_names: list(string) = []";
/// How each range input pair is stated (see [`range_mode`]), in order;
/// missing entries are `fake_quant`.
const RANGE_MODES: &CStr = c"range_modes: list(string) = []";
/// `QuantizeV2`'s `ensure_minimum_range`, for the `SCALED` ranges.
const ENSURE: &CStr = c"ensure_minimum_range: float = 0.01";

/// The ops, in the order of [`Kind`].
static OPS: [QatOp; 4] = [
    QatOp {
        suffix: "QatWeights",
        inputs: &[
            c"weights: float",
            c"factor: float",
            c"range_min: float",
            c"range_max: float",
        ],
        outputs: &[c"quantized: int8", c"scales: float"],
        host_output: Some(c"scales"),
        attrs: &[
            c"depthwise: bool = false",
            c"mode: {'fake_quant', 'scaled'} = 'fake_quant'",
            // The weight fake-quant (8 bits, narrow range) the kernel
            // applies to `weights` itself, over `range_min`/`range_max`.
            c"apply_fake_quant: {'none', 'per_tensor', 'per_channel'} = 'none'",
            c"narrow_range: bool = false",
            c"round_mode: {'HALF_AWAY_FROM_ZERO', 'HALF_TO_EVEN'} = 'HALF_AWAY_FROM_ZERO'",
            ENSURE,
        ],
    },
    QatOp {
        suffix: "QatConvBlock",
        inputs: &[
            c"input_min: float",
            c"input_max: float",
            c"weight_scales: float",
            c"bias: float",
            c"output_min: float",
            c"output_max: float",
        ],
        outputs: &[c"quantization: int32"],
        attrs: ACT_ATTRS,
        host_output: None,
    },
    QatOp {
        suffix: "QatAddBlock",
        inputs: &[
            c"x_min: float",
            c"x_max: float",
            c"y_min: float",
            c"y_max: float",
            c"output_min: float",
            c"output_max: float",
        ],
        outputs: &[c"quantization: int32"],
        attrs: ACT_ATTRS,
        host_output: None,
    },
    QatOp {
        suffix: "QatTensorBlock",
        inputs: &[c"min: float", c"max: float"],
        outputs: &[c"quantization: int32"],
        attrs: &[
            c"kind: {'quantize', 'dequantize'}",
            RANGE_MODES,
            RANGE_NAMES,
            ENSURE,
        ],
        host_output: None,
    },
];

/// The op suffixes, for the graph pass.
pub const WEIGHTS: &str = "QatWeights";
/// See [`WEIGHTS`].
pub const CONV_BLOCK: &str = "QatConvBlock";
/// See [`WEIGHTS`].
pub const ADD_BLOCK: &str = "QatAddBlock";
/// See [`WEIGHTS`].
pub const TENSOR_BLOCK: &str = "QatTensorBlock";
/// The suffix of each op's packed form (on the device only): inputs
/// `packed: uint8` (a `QatPack` output), `direct: M * float`, and
/// `packed_inputs: list(int)` mapping each declared input to an entry of
/// the pack or (−1) to the next direct input.
pub const PACKED: &str = "Packed";
pub use pack_op::PACK;

/// A kernel's attributes, read once.
#[derive(Clone, Debug)]
enum Kernel {
    Weights {
        depthwise: bool,
        mode: WeightMode,
        apply: Option<WeightFakeQuant>,
    },
    ConvBlock(Activation, Rounding, Modes),
    AddBlock(Activation, Rounding, Modes),
    TensorBlock(TensorBlock, Modes),
}

/// The mode and source node of each range a block op reads, in input order.
#[derive(Clone, Debug)]
struct Modes([RangeMode; 3], Vec<String>);

impl Modes {
    /// How an error names range `i`: its quantizer node, or `what`.
    fn describe(&self, i: usize, what: &str) -> String {
        match self.1.get(i) {
            Some(node) if !node.is_empty() => format!("{what} (from '{node}')"),
            _ => what.to_string(),
        }
    }
}

/// A `range_modes` entry: `fake_quant`, or `QuantizeV2`'s `SCALED` type:
/// `qint8`, `qint8_narrow`, `quint8`.
fn range_mode(text: &str, ensure_minimum_range: f32) -> KernelResult<RangeMode> {
    let scaled = |signed, narrow| RangeMode::Scaled {
        signed,
        narrow,
        ensure_minimum_range,
    };
    Ok(match text {
        "fake_quant" => RangeMode::FakeQuant,
        "qint8" => scaled(true, false),
        "qint8_narrow" => scaled(true, true),
        "quint8" => scaled(false, false),
        other => return Err(Failure::invalid(format!("range mode {other:?}"))),
    })
}

fn modes(ctx: &Construction) -> KernelResult<Modes> {
    let ensure = ctx.float_attr(c"ensure_minimum_range")?;
    let mut modes = [RangeMode::FakeQuant; 3];
    let listed = ctx.string_list_attr(c"range_modes")?;
    if listed.len() > modes.len() {
        return Err(Failure::invalid(format!("{} range modes", listed.len())));
    }
    for (mode, text) in modes.iter_mut().zip(&listed) {
        *mode = range_mode(text, ensure)?;
    }
    Ok(Modes(modes, ctx.string_list_attr(c"range_names")?))
}

/// The inputs and extra attributes of an op's packed form.
const PACKED_INPUTS: [&CStr; 2] = [c"packed: uint8", c"direct: M * float"];
const PACKED_ATTRS: [&CStr; 2] = [c"M: int >= 0", c"packed_inputs: list(int)"];

/// Defines the ops, their packed forms and `QatPack` (with the int8 ops,
/// once per process).
pub fn define_ops() -> KernelResult<()> {
    let device = identity::device_type();
    for op in &OPS {
        define(op_name(device, op.suffix), op.inputs, op.outputs, op.attrs)?;
        let attrs: Vec<&CStr> = op.attrs.iter().copied().chain(PACKED_ATTRS).collect();
        let packed = op_name(device, &format!("{}{PACKED}", op.suffix));
        define(packed, &PACKED_INPUTS, op.outputs, &attrs)?;
    }
    pack_op::define_op()
}

/// Where a kernel runs, and in which form.
#[derive(Clone, Copy, PartialEq)]
enum Form {
    Cpu,
    Device,
    DevicePacked,
}

const CREATE: [[CreateFn; 4]; 3] = [
    [
        create::<0, false, false>,
        create::<1, false, false>,
        create::<2, false, false>,
        create::<3, false, false>,
    ],
    [
        create::<0, true, false>,
        create::<1, true, false>,
        create::<2, true, false>,
        create::<3, true, false>,
    ],
    [
        create::<0, true, true>,
        create::<1, true, true>,
        create::<2, true, true>,
        create::<3, true, true>,
    ],
];

/// Registers the kernels of [`OPS`] for the CPU and for the device (the
/// packed forms for the device only), and `QatPack`'s for the CPU; logs
/// and skips any that fails (without the device's, the graph pass's
/// placement falls back to the CPU ones).
pub fn register_all() {
    for (index, op) in OPS.iter().enumerate() {
        for form in [Form::Cpu, Form::Device, Form::DevicePacked] {
            if let Err(failure) = register(index, op, form) {
                let on = if form == Form::Cpu { "CPU" } else { "device" };
                log::error(format_args!(
                    "TF_InitKernel: cannot register the {on} kernel of {}: {}",
                    op.suffix, failure.cause
                ));
            }
        }
    }
    if let Err(failure) = pack_op::register() {
        log::error(format_args!(
            "TF_InitKernel: cannot register the CPU kernel of {PACK}: {}",
            failure.cause
        ));
    }
}

fn register(index: usize, op: &QatOp, form: Form) -> KernelResult<()> {
    let device_type = identity::device_type();
    let name = match form {
        Form::DevicePacked => op_name(device_type, &format!("{}{PACKED}", op.suffix)),
        _ => op_name(device_type, op.suffix),
    };
    let device = if form == Form::Cpu {
        c"CPU".into()
    } else {
        CString::new(device_type).map_err(|_| Failure::invalid("NUL in type"))?
    };
    let create = CREATE[form as usize][index];
    let mut builder = KernelBuilder::new(name, &device, create, compute, delete)?;
    if form != Form::Cpu {
        let inputs: &[&CStr] = match form {
            Form::DevicePacked => &PACKED_INPUTS,
            _ => op.inputs,
        };
        let names = inputs
            .iter()
            .chain(&op.host_output)
            .map(|spec| arg_name(spec));
        for arg in names {
            builder.host_memory(&CString::new(arg).map_err(|_| Failure::invalid("NUL in name"))?);
        }
    }
    let on = if form == Form::Cpu { "cpu" } else { "device" };
    builder.register(&format!("tensorplug_{on}_{}", name.to_string_lossy()), None)
}

/// The name of an argument spec (`"weights: float"` → `"weights"`).
fn arg_name(spec: &CStr) -> &str {
    let text = spec.to_str().unwrap_or("");
    text.split(':').next().unwrap_or(text).trim()
}

/// A kernel: its attributes and, on the device, what it keeps.
struct QatKernel {
    kernel: Kernel,
    kept: Option<kept::Kept>,
    /// The packed form's `packed_inputs`.
    packed: Option<Vec<i64>>,
}

unsafe extern "C" fn create<const INDEX: usize, const ON_DEVICE: bool, const PACKED: bool>(
    raw: *mut TF_OpKernelConstruction,
) -> *mut c_void {
    ffi::swallow("qat kernel create", std::ptr::null_mut(), || {
        // SAFETY: TF's live construction context for this call.
        let ctx = match unsafe { Construction::new(raw) } {
            Ok(ctx) => ctx,
            Err(failure) => {
                log::error(format_args!("qat kernel create: {}", failure.cause));
                return Ok(std::ptr::null_mut());
            }
        };
        let packed = || {
            PACKED
                .then(|| ctx.int_list_attr(c"packed_inputs"))
                .transpose()
        };
        match construct(INDEX, &ctx).and_then(|kernel| Ok((kernel, packed()?))) {
            Ok((kernel, packed)) => {
                let kept = ON_DEVICE.then(|| kept::Kept::new(OPS[INDEX].host_output_index()));
                let kernel = QatKernel {
                    kernel,
                    kept,
                    packed,
                };
                Ok(Box::into_raw(Box::new(kernel)).cast())
            }
            Err(failure) => {
                let op = OPS[INDEX].suffix;
                ctx.fail(failure.code, &failure.message(op, &ctx.node_name()));
                Ok(std::ptr::null_mut())
            }
        }
    })
}

impl QatOp {
    /// The index of [`QatOp::host_output`] among the outputs.
    fn host_output_index(&self) -> Option<usize> {
        let name = arg_name(self.host_output?);
        self.outputs.iter().position(|spec| arg_name(spec) == name)
    }
}

fn construct(index: usize, ctx: &Construction) -> KernelResult<Kernel> {
    let act = || -> KernelResult<(Activation, Rounding)> {
        let activation = match ctx.string_attr(c"activation")?.as_str() {
            "RELU" => Activation::Relu,
            "RELU6" => Activation::Relu6,
            _ => Activation::None,
        };
        let rounding = match ctx.int_attr(c"rounding")? {
            0 => Rounding::Double,
            1 => Rounding::Single,
            other => return Err(Failure::invalid(format!("rounding {other} (0 or 1)"))),
        };
        Ok((activation, rounding))
    };
    Ok(match index {
        0 => Kernel::Weights {
            depthwise: ctx.bool_attr(c"depthwise")?,
            mode: match ctx.string_attr(c"mode")?.as_str() {
                "scaled" => WeightMode::Scaled {
                    narrow: ctx.bool_attr(c"narrow_range")?,
                    half_even: ctx.string_attr(c"round_mode")? == "HALF_TO_EVEN",
                    ensure_minimum_range: ctx.float_attr(c"ensure_minimum_range")?,
                },
                _ => WeightMode::FakeQuant,
            },
            apply: match ctx.string_attr(c"apply_fake_quant")?.as_str() {
                "per_tensor" => Some(WeightFakeQuant::PerTensor),
                "per_channel" => Some(WeightFakeQuant::PerChannel),
                _ => None,
            },
        },
        1 => {
            let (a, r) = act()?;
            Kernel::ConvBlock(a, r, modes(ctx)?)
        }
        2 => {
            let (a, r) = act()?;
            Kernel::AddBlock(a, r, modes(ctx)?)
        }
        _ => Kernel::TensorBlock(
            match ctx.string_attr(c"kind")?.as_str() {
                "quantize" => TensorBlock::Quantize,
                _ => TensorBlock::Dequantize,
            },
            modes(ctx)?,
        ),
    })
}

unsafe extern "C" fn compute(kernel: *mut c_void, raw: *mut TF_OpKernelContext) {
    ffi::swallow("qat kernel compute", (), || {
        // SAFETY: TF's live context for this call.
        let ctx = match unsafe { Context::new(raw) } {
            Ok(ctx) => ctx,
            Err(failure) => {
                log::error(format_args!("qat kernel compute: {}", failure.cause));
                return Ok(());
            }
        };
        // SAFETY: `kernel` is null or the box `create` made, alive until `delete`.
        let Some(QatKernel {
            kernel,
            kept,
            packed,
        }) = (unsafe { kernel.cast::<QatKernel>().as_ref() })
        else {
            ctx.fail(
                tensorplug_abi::tf::TF_INTERNAL,
                "qat kernel: not constructed",
            );
            return Ok(());
        };
        let outcome = ffi::run("qat kernel compute", || {
            let inputs = match Inputs::of(&ctx, packed.as_deref()) {
                Ok(inputs) => inputs,
                Err(failure) => return Ok(Err(failure)),
            };
            let evaluate = || run(kernel, &inputs);
            Ok(match kept {
                Some(kept) => kept.compute(&ctx, &inputs, op_suffix(kernel), evaluate),
                None => evaluate().and_then(|outs| write_outputs(&ctx, &outs)),
            })
        })
        .unwrap_or_else(|panic| Err(Failure::from(panic)));
        if let Err(failure) = outcome {
            ctx.fail(
                failure.code,
                &failure.message(op_suffix(kernel), ctx.node_name()),
            );
        }
        Ok(())
    });
}

unsafe extern "C" fn delete(kernel: *mut c_void) {
    if !kernel.is_null() {
        // SAFETY: the box `create` made; TF calls delete once.
        drop(unsafe { Box::from_raw(kernel.cast::<QatKernel>()) });
    }
}

fn op_suffix(kernel: &Kernel) -> &'static str {
    match kernel {
        Kernel::Weights { .. } => WEIGHTS,
        Kernel::ConvBlock(..) => CONV_BLOCK,
        Kernel::AddBlock(..) => ADD_BLOCK,
        Kernel::TensorBlock(..) => TENSOR_BLOCK,
    }
}

fn range(inputs: &Inputs, first: usize, mode: RangeMode, what: &str) -> KernelResult<Affine> {
    let min = inputs.scalar(first, what)?;
    let max = inputs.scalar(first + 1, what)?;
    params::activation(min, max, mode).map_err(|e| Failure::invalid(format!("{what}: {e}")))
}

fn block(words: &[i32]) -> KernelResult<Vec<Out>> {
    Ok(vec![Out::new(TF_DataType::TF_INT32, words)?])
}

/// The op's outputs for the call's inputs.
fn run(kernel: &Kernel, inputs: &Inputs) -> KernelResult<Vec<Out>> {
    match *kernel {
        Kernel::Weights {
            depthwise,
            mode,
            apply,
        } => quantize_weights(inputs, depthwise, mode, apply),
        Kernel::ConvBlock(activation, rounding, ref modes) => {
            let m = modes.0;
            let input = range(inputs, 0, m[0], &modes.describe(0, "the input's range"))?;
            let output = range(inputs, 4, m[1], &modes.describe(1, "the output's range"))?;
            let words = params::conv_block(
                input,
                inputs.floats(2)?,
                inputs.floats(3)?,
                output,
                activation,
                rounding,
            )
            .map_err(Failure::invalid)?;
            block(&words)
        }
        Kernel::AddBlock(activation, rounding, ref modes) => {
            let m = modes.0;
            let x = range(inputs, 0, m[0], &modes.describe(0, "x's range"))?;
            let y = range(inputs, 2, m[1], &modes.describe(1, "y's range"))?;
            let output = range(inputs, 4, m[2], &modes.describe(2, "the output's range"))?;
            let words = params::add_block([x, y], output, activation, rounding)
                .map_err(Failure::invalid)?;
            block(&words)
        }
        Kernel::TensorBlock(kind, ref modes) => {
            let q = range(inputs, 0, modes.0[0], &modes.describe(0, "the range"))?;
            block(&params::tensor_block(kind, q))
        }
    }
}

fn quantize_weights(
    inputs: &Inputs,
    depthwise: bool,
    mode: WeightMode,
    apply: Option<WeightFakeQuant>,
) -> KernelResult<Vec<Out>> {
    let w = inputs.get(0)?;
    let shape = inputs::shape(&w)?;
    let dims = shape.dims();
    let channels = match (dims, depthwise) {
        ([.., c, m], true) => c * m,
        ([.., n], false) => *n,
        _ => return Err(Failure::invalid(format!("weights of shape {dims:?}"))),
    } as usize;
    let (factor, min, max) = (inputs.floats(1)?, inputs.floats(2)?, inputs.floats(3)?);
    let range = (!max.is_empty() || !min.is_empty()).then_some((min, max));
    let values = inputs::floats(w)?;
    if values.is_empty() {
        return Err(Failure::invalid("no weights"));
    }
    let quantized;
    let values = match apply {
        Some(kind) => {
            quantized = fake_quant(values, min, max, kind).map_err(Failure::invalid)?;
            &quantized[..]
        }
        None => values,
    };
    let mut q = vec![0i8; values.len()];
    let scales =
        params::weights(values, channels, factor, range, mode, &mut q).map_err(Failure::invalid)?;
    Ok(vec![
        Out::shaped(TF_DataType::TF_INT8, shape, &q)?,
        Out::new(TF_DataType::TF_FLOAT, &scales)?,
    ])
}

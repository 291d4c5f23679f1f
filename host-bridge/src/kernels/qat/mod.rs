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
//! trains on gets those of its current values at its next step.

mod kept;
mod out;
pub mod params;

use crate::ffi::{self, tf_api};
use crate::identity;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::op_def::{define, op_name};
use crate::kernels::tf::{Construction, Context, Status, Tensor};
use crate::log;
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

/// A kernel's attributes, read once.
#[derive(Clone, Debug)]
enum Kernel {
    Weights { depthwise: bool, mode: WeightMode },
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

/// Defines the ops (with the int8 ops, once per process).
pub fn define_ops() -> KernelResult<()> {
    for op in &OPS {
        let name = op_name(identity::device_type(), op.suffix);
        define(name, op.inputs, op.outputs, op.attrs)?;
    }
    Ok(())
}

type CreateFn = unsafe extern "C" fn(*mut TF_OpKernelConstruction) -> *mut c_void;
const CREATE: [[CreateFn; 4]; 2] = [
    [
        create::<0, false>,
        create::<1, false>,
        create::<2, false>,
        create::<3, false>,
    ],
    [
        create::<0, true>,
        create::<1, true>,
        create::<2, true>,
        create::<3, true>,
    ],
];

/// Registers the kernels of [`OPS`] for the CPU and for the device; logs
/// and skips any that fails (without the device's, the graph pass's
/// placement falls back to the CPU ones).
pub fn register_all() {
    for (index, op) in OPS.iter().enumerate() {
        for on_device in [false, true] {
            if let Err(failure) = register(index, op, on_device) {
                let on = if on_device { "device" } else { "CPU" };
                log::error(format_args!(
                    "TF_InitKernel: cannot register the {on} kernel of {}: {}",
                    op.suffix, failure.cause
                ));
            }
        }
    }
}

fn register(index: usize, op: &QatOp, on_device: bool) -> KernelResult<()> {
    let api = tf_api::kernel_api()?;
    let status = Status::new()?;
    let name = op_name(identity::device_type(), op.suffix);
    let device = if on_device {
        CString::new(identity::device_type()).map_err(|_| Failure::invalid("NUL in type"))?
    } else {
        c"CPU".into()
    };
    // SAFETY: NUL-terminated names (TF copies them); our callbacks have TF's signatures.
    let builder = unsafe {
        (api.new_kernel_builder)(
            name.as_ptr(),
            device.as_ptr(),
            Some(CREATE[usize::from(on_device)][index]),
            Some(compute),
            Some(delete),
        )
    };
    if builder.is_null() {
        return Err(Failure::invalid("TF_NewKernelBuilder returned null"));
    }
    if on_device {
        let names = op
            .inputs
            .iter()
            .chain(&op.host_output)
            .map(|spec| arg_name(spec));
        for arg in names {
            let arg = CString::new(arg).map_err(|_| Failure::invalid("NUL in name"))?;
            // SAFETY: live builder; TF copies the name.
            unsafe { (api.host_memory)(builder, arg.as_ptr()) };
        }
    }
    let on = if on_device { "device" } else { "cpu" };
    let kernel_name = format!("tensorplug_{on}_{}", name.to_string_lossy());
    let kernel_name = CString::new(kernel_name).map_err(|_| Failure::invalid("NUL in name"))?;
    // SAFETY: TF takes ownership of the builder, whatever the outcome.
    unsafe { (api.register_kernel_builder)(kernel_name.as_ptr(), builder, status.fresh()) };
    status.check("TF_RegisterKernelBuilder")
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
}

unsafe extern "C" fn create<const INDEX: usize, const ON_DEVICE: bool>(
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
        match construct(INDEX, &ctx) {
            Ok(kernel) => {
                let kept = ON_DEVICE.then(|| kept::Kept::new(OPS[INDEX].host_output_index()));
                Ok(Box::into_raw(Box::new(QatKernel { kernel, kept })).cast())
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
        let Some(QatKernel { kernel, kept }) = (unsafe { kernel.cast::<QatKernel>().as_ref() })
        else {
            ctx.fail(
                tensorplug_abi::tf::TF_INTERNAL,
                "qat kernel: not constructed",
            );
            return Ok(());
        };
        let evaluate = || run(kernel, &ctx);
        let outcome = ffi::run("qat kernel compute", || {
            Ok(match kept {
                Some(kept) => kept.compute(&ctx, op_suffix(kernel), evaluate),
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

/// A host tensor's f32 values.
fn floats(t: &Tensor) -> KernelResult<&[f32]> {
    if t.dtype() != TF_DataType::TF_FLOAT {
        return Err(Failure::invalid(format!(
            "{:?} input, expected float",
            t.dtype()
        )));
    }
    let len = t.byte_size() / 4;
    if len == 0 {
        return Ok(&[]);
    }
    // SAFETY: a live CPU tensor of `len` f32s, borrowed while `t` lives.
    Ok(unsafe { std::slice::from_raw_parts(t.data().cast::<f32>(), len) })
}

/// One scalar input (a tensor of one element).
fn scalar(ctx: &Context, index: usize, what: &str) -> KernelResult<f32> {
    let t = ctx.input(index, true)?;
    match floats(&t)? {
        [v] => Ok(*v),
        values => Err(Failure::invalid(format!(
            "{what} has {} values, expected one",
            values.len()
        ))),
    }
}

fn range(ctx: &Context, first: usize, mode: RangeMode, what: &str) -> KernelResult<Affine> {
    let min = scalar(ctx, first, what)?;
    let max = scalar(ctx, first + 1, what)?;
    params::activation(min, max, mode).map_err(|e| Failure::invalid(format!("{what}: {e}")))
}

fn block(words: &[i32]) -> KernelResult<Vec<Out>> {
    Ok(vec![Out::new(TF_DataType::TF_INT32, words)?])
}

/// The op's outputs for the call's inputs.
fn run(kernel: &Kernel, ctx: &Context) -> KernelResult<Vec<Out>> {
    match *kernel {
        Kernel::Weights { depthwise, mode } => quantize_weights(ctx, depthwise, mode),
        Kernel::ConvBlock(activation, rounding, ref modes) => {
            let m = modes.0;
            let input = range(ctx, 0, m[0], &modes.describe(0, "the input's range"))?;
            let output = range(ctx, 4, m[1], &modes.describe(1, "the output's range"))?;
            let (scales, bias) = (ctx.input(2, true)?, ctx.input(3, true)?);
            let words = params::conv_block(
                input,
                floats(&scales)?,
                floats(&bias)?,
                output,
                activation,
                rounding,
            )
            .map_err(Failure::invalid)?;
            block(&words)
        }
        Kernel::AddBlock(activation, rounding, ref modes) => {
            let m = modes.0;
            let x = range(ctx, 0, m[0], &modes.describe(0, "x's range"))?;
            let y = range(ctx, 2, m[1], &modes.describe(1, "y's range"))?;
            let output = range(ctx, 4, m[2], &modes.describe(2, "the output's range"))?;
            let words = params::add_block([x, y], output, activation, rounding)
                .map_err(Failure::invalid)?;
            block(&words)
        }
        Kernel::TensorBlock(kind, ref modes) => {
            let q = range(ctx, 0, modes.0[0], &modes.describe(0, "the range"))?;
            block(&params::tensor_block(kind, q))
        }
    }
}

fn quantize_weights(ctx: &Context, depthwise: bool, mode: WeightMode) -> KernelResult<Vec<Out>> {
    let w = ctx.input(0, true)?;
    let shape = w.shape()?;
    let dims = shape.dims();
    let channels = match (dims, depthwise) {
        ([.., c, m], true) => c * m,
        ([.., n], false) => *n,
        _ => return Err(Failure::invalid(format!("weights of shape {dims:?}"))),
    } as usize;
    let (factor, min, max) = (
        ctx.input(1, true)?,
        ctx.input(2, true)?,
        ctx.input(3, true)?,
    );
    let (min, max) = (floats(&min)?, floats(&max)?);
    let range = (!max.is_empty() || !min.is_empty()).then_some((min, max));
    let values = floats(&w)?;
    if values.is_empty() {
        return Err(Failure::invalid("no weights"));
    }
    let mut q = vec![0i8; values.len()];
    let scales = params::weights(values, channels, floats(&factor)?, range, mode, &mut q)
        .map_err(Failure::invalid)?;
    Ok(vec![
        Out::shaped(TF_DataType::TF_INT8, shape, &q)?,
        Out::new(TF_DataType::TF_FLOAT, &scales)?,
    ])
}

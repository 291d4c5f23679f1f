//! tensorplug's int8 reference kernels against TFLite's, bit for bit: the
//! int8 models TFLite's converter makes from a Keras MLP and a convnet
//! (per-channel weights; ReLU, ReLU6 and none; with and without a bias;
//! SAME and VALID, strides, a depth multiplier, both pools, an ADD of two
//! scales), run by `tf.lite.Interpreter` with its reference kernels, with
//! the FPGA plugin loaded (`tests/python/tflite_int8_dump.py`). That
//! interpreter rounds op by op ([`tflite_rounding`]): its `FULLY_CONNECTED`
//! once, its convolutions twice; the test matches each op with its rounding
//! and reports how many outputs the other one would change.

use std::collections::{BTreeMap, HashMap};
use tensorplug_core::accelerator::{Activation, Window};
use tensorplug_core::quant::{Requantize, Rounding};
use tensorplug_core::reference::int8::{
    AddQuant, Int8Layer, Layout, Nhwc, Pool, activation_range, add, conv2d, depthwise_conv2d,
    fully_connected, pool,
};
use tensorplug_tests::{op_counts, run_tf_with_plugin};

/// One tensor as the script prints it.
struct Tensor {
    zero_points: Vec<i32>,
    scales: Vec<f32>,
    dims: Vec<usize>,
    values: Vec<i64>,
}

impl Tensor {
    fn i8s(&self) -> Vec<i8> {
        self.values.iter().map(|&v| v as i8).collect()
    }
    fn nhwc(&self) -> Nhwc {
        let d = &self.dims;
        [self.values.len() / (d[1] * d[2] * d[3]), d[1], d[2], d[3]]
    }
    fn quant(&self) -> (f32, i32) {
        (self.scales[0], self.zero_points[0])
    }
}

/// One op: its model, kind, options and tensors by role.
struct Op {
    model: String,
    kind: String,
    options: HashMap<String, String>,
    tensors: HashMap<String, Tensor>,
}

impl Op {
    fn t(&self, role: &str) -> &Tensor {
        &self.tensors[role]
    }
    fn opt(&self, key: &str) -> u16 {
        self.options[key].parse().unwrap()
    }
    fn activation(&self) -> Activation {
        match self.options.get("activation").map(String::as_str) {
            Some("RELU") => Activation::Relu,
            Some("RELU6") => Activation::Relu6,
            _ => Activation::None,
        }
    }
    /// The window of a convolution or pool: its size, strides, dilations,
    /// and TFLite's padding (half of what SAME needs, the odd one after).
    fn window(&self, size: [usize; 2]) -> Window {
        let (input, output) = (self.t("input").nhwc(), self.t("output").nhwc());
        let stride = [self.opt("strideH"), self.opt("strideW")];
        let dilation = match self.options.get("dilationHFactor") {
            Some(_) => [self.opt("dilationHFactor"), self.opt("dilationWFactor")],
            None => [1, 1],
        };
        let mut pad = [0u16; 4];
        for axis in 0..2 {
            let span = usize::from(dilation[axis]) * (size[axis] - 1) + 1;
            let need = (output[1 + axis] - 1) * usize::from(stride[axis]) + span;
            let total = need.saturating_sub(input[1 + axis]) as u16;
            pad[2 * axis] = total / 2;
            pad[2 * axis + 1] = total - total / 2;
        }
        Window {
            size: size.map(|s| s as u16),
            stride,
            dilation,
            pad,
        }
    }
}

fn parse(stdout: &str) -> Vec<Op> {
    let mut ops: Vec<Op> = Vec::new();
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("op ") {
            let mut words = rest.split_whitespace();
            let (model, kind) = (words.next().unwrap(), words.next().unwrap());
            let options = words
                .filter_map(|w| w.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            ops.push(Op {
                model: model.to_owned(),
                kind: kind.to_owned(),
                options,
                tensors: HashMap::new(),
            });
        } else if let Some(rest) = line.strip_prefix("tensor ") {
            let (role, rest) = rest.split_once(' ').unwrap();
            let parts: Vec<Vec<&str>> = rest
                .split(';')
                .map(|p| p.split_whitespace().collect())
                .collect();
            let num = |p: &Vec<&str>| p.iter().map(|w| w.parse().unwrap()).collect::<Vec<_>>();
            let tensor = Tensor {
                zero_points: num(&parts[0]).into_iter().map(|v: i64| v as i32).collect(),
                scales: parts[1]
                    .iter()
                    .map(|h| f32::from_bits(u32::from_str_radix(h, 16).unwrap()))
                    .collect(),
                dims: num(&parts[3])
                    .into_iter()
                    .map(|v: i64| v as usize)
                    .collect(),
                values: num(&parts[4]),
            };
            ops.last_mut()
                .unwrap()
                .tensors
                .insert(role.to_owned(), tensor);
        }
    }
    ops
}

/// The per-channel multipliers `input_scale · weight_scale[c] / output_scale`.
fn multipliers(op: &Op) -> Vec<Requantize> {
    let (input, output) = (op.t("input").scales[0], op.t("output").scales[0]);
    op.t("filter")
        .scales
        .iter()
        .map(|&w| {
            let real = f64::from(input) * f64::from(w) / f64::from(output);
            Requantize::from_real(real).unwrap()
        })
        .collect()
}

/// Runs `op` with tensorplug's reference in `rounding`.
fn run(op: &Op, rounding: Rounding) -> Vec<i8> {
    let (input, output) = (op.t("input"), op.t("output"));
    let mut got = vec![0i8; output.values.len()];
    let (min, max) = activation_range(op.activation(), output.scales[0], output.zero_points[0]);
    let requantize = match op.kind.as_str() {
        "FULLY_CONNECTED" | "CONV_2D" | "DEPTHWISE_CONV_2D" => multipliers(op),
        _ => Vec::new(),
    };
    let multipliers: Vec<i32> = requantize.iter().map(|r| r.multiplier).collect();
    let shifts: Vec<i32> = requantize.iter().map(|r| i32::from(r.shift)).collect();
    let layer = Int8Layer {
        input_zero_point: input.zero_points[0],
        output_zero_point: output.zero_points[0],
        multipliers: &multipliers,
        shifts: &shifts,
        rounding,
        min,
        max,
    };
    let bias: Option<Vec<i32>> = op
        .tensors
        .get("bias")
        .map(|b| b.values.iter().map(|&v| v as i32).collect());
    let filter = op.tensors.get("filter");
    let dims4 = |t: &Tensor| [t.dims[0], t.dims[1], t.dims[2], t.dims[3]];
    match op.kind.as_str() {
        "FULLY_CONNECTED" => {
            let filter = filter.unwrap();
            fully_connected(
                &layer,
                &input.i8s(),
                (&filter.i8s(), Layout::Ohwi),
                filter.dims[0],
                bias.as_deref(),
                &mut got,
            )
        }
        "CONV_2D" | "DEPTHWISE_CONV_2D" => {
            let f = filter.unwrap();
            let window = op.window([f.dims[1], f.dims[2]]);
            let (x, filter) = (input.i8s(), f.i8s());
            if op.kind == "CONV_2D" {
                conv2d(
                    &layer,
                    &x,
                    input.nhwc(),
                    (&filter, dims4(f), Layout::Ohwi),
                    bias.as_deref(),
                    &window,
                    &mut got,
                    output.nhwc(),
                )
            } else {
                depthwise_conv2d(
                    &layer,
                    &x,
                    input.nhwc(),
                    &filter,
                    dims4(f),
                    bias.as_deref(),
                    &window,
                    &mut got,
                    output.nhwc(),
                )
            }
        }
        "MAX_POOL_2D" | "AVERAGE_POOL_2D" => {
            let size = [
                usize::from(op.opt("filterHeight")),
                usize::from(op.opt("filterWidth")),
            ];
            let kind = if op.kind == "MAX_POOL_2D" {
                Pool::Max
            } else {
                Pool::Average
            };
            assert_eq!(
                input.quant(),
                output.quant(),
                "a pool keeps its quantization"
            );
            pool(
                kind,
                &input.i8s(),
                input.nhwc(),
                &op.window(size),
                min,
                max,
                &mut got,
                output.nhwc(),
            )
        }
        "ADD" => {
            let quant = AddQuant::new(
                [input.quant(), op.t("input2").quant()].map(|(s, z)| (s, z)),
                output.quant(),
                op.activation(),
                rounding,
            )
            .unwrap();
            add(&quant, &input.i8s(), &op.t("input2").i8s(), &mut got)
        }
        other => panic!("no reference for {other}"),
    }
    .unwrap();
    got
}

#[test]
fn int8_ops_are_bit_exact_with_tflites_reference_kernels() {
    let output = run_tf_with_plugin("tflite_int8_dump.py", &[], None);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "tflite_int8_dump.py failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let ops = parse(&stdout);
    let kinds: Vec<&str> = ops.iter().map(|op| op.kind.as_str()).collect();
    for kind in [
        "FULLY_CONNECTED",
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "MAX_POOL_2D",
        "AVERAGE_POOL_2D",
        "ADD",
    ] {
        assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
    }
    let (mut outputs, mut other_differs) = (0, 0);
    for (i, op) in ops.iter().enumerate() {
        let want = op.t("output").i8s();
        let rounding = tflite_rounding(&op.kind);
        let got = run(op, rounding);
        assert!(
            got == want,
            "{} op {i} {} {:?}: differs from TFLite at {:?}",
            op.model,
            op.kind,
            op.options,
            got.iter().zip(&want).position(|(g, w)| g != w)
        );
        let other = match rounding {
            Rounding::Single => Rounding::Double,
            Rounding::Double => Rounding::Single,
        };
        let differ = run(op, other)
            .iter()
            .zip(&want)
            .filter(|(o, w)| o != w)
            .count();
        println!(
            "{} {:<18} {:>6} outputs equal TFLite's ({rounding:?} rounding); {other:?} differs on {differ}",
            op.model,
            op.kind,
            got.len()
        );
        outputs += got.len();
        other_differs += differ;
    }
    println!(
        "{} ops, {outputs} outputs bit-exact; with the other rounding {other_differs} would differ",
        ops.len()
    );
}

/// How TF 2.21's TFLite reference kernels round, measured op by op: the
/// per-channel `FULLY_CONNECTED` rounds once, the convolutions (and the
/// rest, the default build) twice. Pools do not requantize.
fn tflite_rounding(kind: &str) -> Rounding {
    match kind {
        "FULLY_CONNECTED" => Rounding::Single,
        _ => Rounding::Double,
    }
}

/// The plugin's int8 TF ops (`_TensorplugFPGA…Int8`, `…Quantize`,
/// `…Dequantize`) on `/device:FPGA:0` with soft placement off, against
/// TFLite's int8 kernels on the same models, inputs and quantization:
/// TF → kernel → device ABI 1.4 command → the model, bit for bit.
#[test]
fn the_plugins_int8_tf_ops_on_the_fpga_are_bit_exact_with_tflite() {
    let output = run_tf_with_plugin("int8_ops_vs_tflite.py", &[], None);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "int8_ops_vs_tflite.py failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let ops: Vec<&str> = stdout.lines().filter(|l| l.starts_with("op ")).collect();
    for kind in [
        "FULLY_CONNECTED",
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "MAX_POOL_2D",
        "AVERAGE_POOL_2D",
        "ADD",
        "QUANTIZE+DEQUANTIZE",
    ] {
        assert!(
            ops.iter().any(|l| l.contains(&format!(" {kind}"))),
            "no {kind} ran:\n{stdout}"
        );
    }
    assert!(ops.iter().all(|l| l.ends_with("differ=0")), "{stdout}");
    let total = stdout
        .lines()
        .find(|l| l.starts_with("int8 ops on /device:FPGA:0"))
        .unwrap_or_else(|| panic!("no total:\n{stdout}"));
    assert!(total.ends_with(" 0 differ from TFLite"), "{total}");
    println!("{}\n{total}", ops.join("\n"));
}

/// `model <name> images=<n> top1_agree=<k> max_diff_quanta=<d> differ=<m> of <t>`.
fn model_line(stdout: &str) -> (u64, u64, u64, u64) {
    result_line(stdout, "model ")
}

/// The line starting with `prefix`, with the fields of [`model_line`].
fn result_line(stdout: &str, prefix: &str) -> (u64, u64, u64, u64) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix}line:\n{stdout}"));
    let field = |key: &str| -> u64 {
        let rest = &line[line.find(key).unwrap_or_else(|| panic!("{key} in {line}")) + key.len()..];
        rest.split(' ').next().unwrap().parse().unwrap()
    };
    (
        field("images="),
        field("top1_agree="),
        field("max_diff_quanta="),
        field("differ="),
    )
}

/// `script args…` with the plugin; its stdout (printed), which it must exit 0 with.
fn run_script(script: &str, args: &[&str]) -> String {
    let output = run_tf_with_plugin(script, args, None);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{script} {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    println!("{stdout}");
    stdout
}

fn run_model(name: &str, images: &str) -> String {
    run_script("int8_model_vs_tflite.py", &[name, images])
}

/// Every one of 32 images' outputs equals TFLite's.
fn assert_every_output_equal(stdout: &str) {
    let (images, agree, max_diff, differ) = model_line(stdout);
    assert_eq!(
        (images, agree, max_diff, differ),
        (32, 32, 0, 0),
        "{stdout}"
    );
}

/// The wheel's `Int8Model` runs TFLite's whole int8 convnet on the FPGA:
/// every op is a device op, so every output equals TFLite's.
#[test]
fn a_whole_int8_convnet_on_the_fpga_equals_tflite() {
    let stdout = run_model("convnet", "32");
    assert_every_output_equal(&stdout);
    assert!(stdout.contains("float_ops -"), "{stdout}");
}

/// The convnet with a softmax on top: `Int8Model` runs the converter's int8
/// `SOFTMAX` as the device's `SoftmaxInt8` (it used to compute it in float,
/// a quantum off at times), so every output equals TFLite's.
#[test]
fn an_int8_softmax_classifier_on_the_fpga_equals_tflite() {
    let stdout = run_model("softmax", "32");
    assert_every_output_equal(&stdout);
    assert!(stdout.contains("float_ops -"), "{stdout}");
}

/// The same convnet with float input and output: the graph starts with the
/// plugin's `Quantize` and ends with its `Dequantize` (int8 only inside),
/// and the float outputs equal TFLite's bit for bit.
#[test]
fn an_int8_convnet_with_float_edges_equals_tflite() {
    let stdout = run_model("convnet-float", "32");
    assert_every_output_equal(&stdout);
}

/// The int8 bar for a real network: MobileNetV2-0.35 (96×96, 100 classes,
/// seeded weights) in int8 on the FPGA equals TFLite int8 on every logit
/// of 64 seeded inputs. Its `MEAN` (`GlobalAveragePooling2D`) runs as
/// TFLite's `QuantizedMeanOrSum` on the device's `MatMulInt8` (it used to
/// run in float between a Dequantize and a Quantize), so no op is float.
#[test]
fn mobilenet_v2_0_35_in_int8_on_the_fpga_equals_tflite() {
    let stdout = run_model("mobilenet", "64");
    let (images, agree, max_diff, differ) = model_line(&stdout);
    assert_eq!(
        (images, agree, max_diff, differ),
        (64, 64, 0, 0),
        "{stdout}"
    );
    assert!(stdout.contains("float_ops -"), "{stdout}");
}

/// Quantization that cannot be represented (a zero scale, a zero point of
/// 300, one filter scale too many) is a `ValueError` naming what is wrong
/// when `Int8Model` is made, never a wrong answer.
#[test]
fn bad_quantization_in_an_int8_model_is_a_clear_error() {
    let stdout = run_model("bad", "0");
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("bad ")).collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    for (line, says) in lines.iter().zip([
        "Node number 0 (CONV_2D) failed to prepare",
        "zero point 300 is outside int8's [-128, 127]",
        "invalid quantization parameters",
    ]) {
        assert!(line.contains("ValueError") && line.contains(says), "{line}");
    }
}

fn run_qat(name: &str, images: &str) -> String {
    let stdout = run_script("int8_qat.py", &[name, images]);
    assert!(stdout.contains("FakeQuantWithMinMaxVars"), "{stdout}");
    let nodes: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("int8_nodes "))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(nodes > 0, "no int8 op ran on the FPGA:\n{stdout}");
    stdout
}

/// The float ops a QAT chain is made of: none may run anywhere once the
/// graph pass has rewritten the model.
const FLOAT_CHAIN_OPS: [&str; 10] = [
    "Conv2D",
    "DepthwiseConv2dNative",
    "MatMul",
    "BiasAdd",
    "FusedBatchNormV3",
    "Relu",
    "Relu6",
    "MaxPool",
    "Pad",
    "_FusedConv2D",
];

/// The in-graph route (`qat.predict`, unchanged): the profile of one
/// predict step shows exactly the int8 ops `int8` (`_TensorplugFPGA<op>`)
/// and the float ops `float` on the FPGA's plane, and no float op of a QAT
/// chain on the device or the CPU.
fn assert_ran_in_int8(stdout: &str, int8: &[(&str, u64)], float: &[(&str, u64)]) {
    assert_ran_in_int8_as(stdout, "", int8, float);
}

/// [`assert_ran_in_int8`] on the lines `<prefix>device_ops` and
/// `<prefix>cpu_ops`.
fn assert_ran_in_int8_as(stdout: &str, prefix: &str, int8: &[(&str, u64)], float: &[(&str, u64)]) {
    let device = op_counts(stdout, &format!("{prefix}device_ops "));
    let want: BTreeMap<String, u64> = int8
        .iter()
        .map(|(op, n)| (format!("_TensorplugFPGA{op}"), *n))
        .chain(float.iter().map(|(op, n)| (op.to_string(), *n)))
        .collect();
    assert_eq!(device, want, "the device's ops in one predict step");
    let cpu = op_counts(stdout, &format!("{prefix}cpu_ops "));
    for op in FLOAT_CHAIN_OPS {
        assert!(!cpu.contains_key(op), "{op} ran on the CPU: {cpu:?}");
    }
}

/// Every int8 op of the step (`int8`, as `assert_ran_in_int8` takes them)
/// is in one device program: the largest program the graph pass reported
/// holds at least that many nodes.
fn assert_int8_in_one_program(stdout: &str, int8: &[(&str, u64)]) {
    let nodes: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("program_nodes "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no program_nodes line:\n{stdout}"));
    let ops: u64 = int8.iter().map(|(_, n)| n).sum();
    assert!(
        nodes >= ops,
        "a program of {nodes} nodes for {ops} int8 ops"
    );
}

/// A QAT model's weights are variables: the pass's `Qat` ops read them
/// in host memory on the device, which keeps their int8 results, so no
/// `Qat` op runs on TF's CPU executor but the packs that gather their CPU
/// inputs (`packs` of them), and no weight fake-quant runs there: the
/// weights op applies it.
fn assert_weights_quantized_on_the_device(stdout: &str, packs: u64) {
    let cpu = op_counts(stdout, "cpu_ops ");
    let qat: Vec<&String> = cpu
        .keys()
        .filter(|op| op.contains("Qat") && !op.ends_with("QatPack"))
        .collect();
    assert!(qat.is_empty(), "Qat ops ran on the CPU: {qat:?}");
    assert_eq!(cpu.get("_TensorplugFPGAQatPack"), Some(&packs), "{cpu:?}");
    let fake_quants: Vec<&String> = cpu
        .keys()
        .filter(|op| op.starts_with("FakeQuant"))
        .collect();
    assert!(fake_quants.is_empty(), "{fake_quants:?} ran on the CPU");
}

/// The sizes of one `copies` list (`int8_qat.py`, `changed_weights`).
fn copy_sizes(stdout: &str, which: &str) -> Vec<u64> {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("copies "))
        .unwrap_or_else(|| panic!("no copies line:\n{stdout}"));
    let list = line
        .split(' ')
        .find_map(|field| field.strip_prefix(which))
        .unwrap_or_else(|| panic!("no {which} in {line}"));
    list.split(',').filter_map(|n| n.parse().ok()).collect()
}

/// Quantization-aware training: a small Keras convnet trained with TF-MOT's
/// quantize_model (tf_keras) runs in int8 on the FPGA equal to TFLite, by
/// both routes: TFLite's int8 model through the wheel's `Int8Model`, and
/// `qat.predict` unchanged, which the graph pass rewrites into int8 ops.
#[test]
fn a_qat_convnet_runs_in_int8_on_the_fpga_equal_to_tflite() {
    let stdout = run_qat("convnet", "32");
    assert_every_output_equal(&stdout);
    let in_graph = result_line(&stdout, "predict ");
    assert_eq!(in_graph, (32, 32, 0, 0), "{stdout}");
    let int8 = [
        ("Quantize", 1),
        ("Conv2DInt8", 2),
        ("DepthwiseConv2DInt8", 1),
        ("MaxPoolInt8", 1),
        ("AddInt8", 1),
        ("MatMulInt8", 1),
        ("Dequantize", 1),
    ];
    assert_ran_in_int8(&stdout, &int8, &[]);
    assert_int8_in_one_program(&stdout, &int8);
    assert_weights_quantized_on_the_device(&stdout, 1);
    // Kept, not uploaded each step: a step after one conv kernel was halved
    // copies exactly that kernel's int8 bytes more than a steady step, and
    // predicts what TFLite does on the model converted anew.
    let kernel: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("kernel "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    let mut steady = copy_sizes(&stdout, "steady=");
    steady.push(kernel);
    steady.sort_unstable();
    assert_eq!(copy_sizes(&stdout, "changed="), steady, "{stdout}");
    let changed = result_line(&stdout, "predict qat-convnet-changed ");
    assert_eq!(changed, (32, 32, 0, 0), "{stdout}");
}

/// MobileNetV2-0.35's `Qat` ops (53 weights, 53 conv and 10 add blocks,
/// 2 quantize and 2 dequantize blocks: 120) in packs of 16.
const MOBILENET_PACKS: u64 = 120_u64.div_ceil(16);

/// The same for MobileNetV2-0.35 (96×96, 100 classes): top-1 on ≥ 99 % of
/// 64 inputs, logits ≤ 1 quantum apart. In the graph its 52 batch norms
/// fold into the int8 convolutions, its 4 `Pad`s into their explicit
/// padding, and its global average pool (`Mean`) runs in float on the
/// device between a `Dequantize` and a `Quantize`, as in `Int8Model`.
/// The same model frozen runs the same int8 ops, with the same bytes out.
#[test]
fn a_qat_mobilenet_v2_0_35_runs_in_int8_on_the_fpga_and_agrees_with_tflite() {
    let stdout = run_qat("mobilenet", "64");
    for prefix in ["model ", "predict "] {
        let (images, agree, max_diff, _) = result_line(&stdout, prefix);
        assert_eq!(images, 64);
        assert!(
            agree * 100 >= images * 99,
            "{prefix}top-1 agreement {agree} of {images}"
        );
        assert!(max_diff <= 1, "{prefix}logits {max_diff} quanta apart");
    }
    let device = op_counts(&stdout, "device_ops ");
    let mean = device.get("Mean").copied().unwrap_or(0);
    assert!(mean > 0, "the pool's Mean ran on the device: {device:?}");
    let int8 = [
        ("Quantize", 2),
        ("Conv2DInt8", 35),
        ("DepthwiseConv2DInt8", 17),
        ("AddInt8", 10),
        ("MatMulInt8", 1),
        ("Dequantize", 2),
    ];
    assert_ran_in_int8(&stdout, &int8, &[("Mean", mean)]);
    assert_int8_in_one_program(&stdout, &int8);
    assert_weights_quantized_on_the_device(&stdout, MOBILENET_PACKS);
    // Frozen (its variables made constants): TF splits each batch norm
    // over constants before our pass; they still fold into the int8
    // convolutions, the same bytes, and TF's next pass folds every
    // parameter into a constant: nothing but the input runs on the CPU.
    let frozen = result_line(&stdout, "predict qat-mobilenet-frozen ");
    assert_eq!(
        frozen,
        result_line(&stdout, "predict qat-mobilenet "),
        "{stdout}"
    );
    assert!(stdout.contains("frozen equal=True"), "{stdout}");
    assert_ran_in_int8_as(&stdout, "frozen_", &int8, &[("Mean", mean)]);
    let cpu = op_counts(&stdout, "frozen_cpu_ops ");
    let busy: Vec<&String> = cpu.keys().filter(|op| *op != "_EagerConst").collect();
    assert!(busy.is_empty(), "ops on the CPU each frozen step: {busy:?}");
}

/// The weights op applying a weight fake-quant itself (what the graph pass
/// makes of one only the convolution reads, so it no longer runs on the
/// CPU every step) gives the int8 weights and scales it gives on TF's own
/// fake-quant output, per tensor and per channel, with weights on and next
/// to the half steps where rounding turns.
#[test]
fn a_weight_fake_quant_applied_in_the_weights_op_equals_tfs() {
    let stdout = run_script("int8_qat.py", &["fake_quant"]);
    for op in [
        "FakeQuantWithMinMaxVars ",
        "FakeQuantWithMinMaxVarsPerChannel ",
    ] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("fake_quant {op}")))
            .unwrap_or_else(|| panic!("no {op}line:\n{stdout}"));
        assert!(
            line.ends_with("weights=1152 equal=1152 scales_equal=True"),
            "{line}"
        );
    }
}

/// QDQ graphs: a graph in the form Intel Neural Compressor writes
/// for ITEX (`QuantizeV2`/`Dequantize` pairs, `SCALED`, on every input of
/// the convolutions, the Dense, the Add and the pool, per-channel weight
/// pairs; built by hand in `tests/python/int8_qdq.py`, with a pair on the
/// output too) runs in int8 on the FPGA. TFLite cannot read it, so the
/// reference is TF's own CPU run of the same graph (its float simulation,
/// TF's reference kernels): top-1 on all 64 inputs, outputs at most 1
/// quantum apart (float arithmetic against int8 requantization). The pool
/// runs in float on the device: the pair after it has a range of its own,
/// and the device has no int8-to-int8 rescale.
#[test]
fn a_qdq_graph_runs_in_int8_on_the_fpga_within_a_quantum_of_tfs_own_run() {
    let stdout = run_script("int8_qdq.py", &["64"]);
    let (images, agree, max_diff, _) = result_line(&stdout, "qdq images=");
    assert_eq!((images, agree), (64, 64), "{stdout}");
    assert!(max_diff <= 1, "outputs {max_diff} quanta apart:\n{stdout}");
    assert_ran_in_int8(
        &stdout,
        &[
            ("Quantize", 2),
            ("Conv2DInt8", 2),
            ("DepthwiseConv2DInt8", 1),
            ("AddInt8", 1),
            ("MatMulInt8", 1),
            ("Dequantize", 2),
        ],
        &[("MaxPool", 1)],
    );
    let cpu = op_counts(&stdout, "cpu_ops ");
    for op in [
        "QuantizeV2",
        "Dequantize",
        "_MklQuantizeV2",
        "_MklDequantize",
    ] {
        assert!(!cpu.contains_key(op), "{op} ran on the CPU: {cpu:?}");
    }
}

/// A QAT model that was never trained has empty ranges ([0, 0]), which no
/// int8 scale represents: `predict` fails naming a fake-quant node whose
/// range is empty and saying why, never a wrong answer; `TENSORPLUG_GRAPH_INT8=off` runs its
/// float simulation instead.
#[test]
fn an_uncalibrated_qat_model_is_a_clear_error_in_int8() {
    let stdout = run_script("int8_qat.py", &["uncalibrated"]);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("uncalibrated: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    for says in [
        "InvalidArgumentError",
        // Every range is empty; which block fails first varies, and its
        // message names the fake-quant the range comes from.
        "/FakeQuantWithMinMaxVars",
        "the range [0, 0]",
        "has the model been trained or calibrated",
    ] {
        assert!(line.contains(says), "{says:?} not in {line}");
    }
    assert!(
        stdout.contains("uncalibrated, int8 off: predict gave (2, 5)"),
        "{stdout}"
    );
}

/// A quantization block the device refuses fails the TF op, never giving a
/// wrong answer: a block of the wrong length at once, by the shape check
/// before launch, naming the node and saying so; a zero point of 300 and a
/// zero scale when the device reads the block, by an error that names the
/// node and the reason from the completion detail. Under load TF sometimes
/// meets that failure first in its own `SyncAll`, whose message TF
/// replaces with "SyncAll failed" (`host-bridge/src/se/streams.rs`); the
/// test accepts that form for the device-detected cases, as the known
/// limit it is.
#[test]
fn a_bad_quantization_block_fails_the_tf_op_naming_the_node_and_the_reason() {
    let output = run_tf_with_plugin("int8_ops_vs_tflite.py", &["bad"], None);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    for (what, says, on_device) in [
        (
            "zero_point",
            "a zero point outside int8's [-128, 127]: 300",
            true,
        ),
        ("scale", "a scale that is not a finite number > 0", true),
        ("length", "inconsistent op shapes", false),
    ] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("bad {what}:")))
            .unwrap_or_else(|| panic!("no {what} line:\n{stdout}"));
        let clear = line.contains("InvalidArgumentError")
            && line.contains("'my_quantize'")
            && line.contains(says);
        let sync_all = on_device && line.contains("SyncAll failed");
        assert!(clear || sync_all, "{line}");
    }
}

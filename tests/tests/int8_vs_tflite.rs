//! tensorplug's int8 reference kernels against TFLite's, bit for bit: the
//! int8 model TFLite's converter makes from a small Keras MLP (per-channel
//! weights; ReLU, ReLU6 and no activation; with and without a bias), run by
//! `tf.lite.Interpreter` with its reference kernels, with the FPGA plugin
//! loaded (`tests/python/tflite_int8_dump.py`). That interpreter is built
//! with `TFLITE_SINGLE_ROUNDING`: the test matches it with
//! `Rounding::Single` and reports where double rounding (tflite-micro's
//! default) differs.

use tensorplug_core::accelerator::Activation;
use tensorplug_core::quant::{Requantize, Rounding};
use tensorplug_core::reference::int8::{Int8Layer, activation_range, fully_connected};
use tensorplug_tests::run_tf_with_plugin;

/// One `FULLY_CONNECTED` as the script prints it.
#[derive(Default)]
struct Fc {
    activation: String,
    input: (i32, f32),
    output: (i32, f32),
    filter_zero_points: Vec<i32>,
    filter_scales: Vec<f32>,
    channels: usize,
    input_data: Vec<i8>,
    filter_data: Vec<i8>,
    bias_data: Option<Vec<i32>>,
    output_data: Vec<i8>,
}

fn f32_hex(s: &str) -> f32 {
    f32::from_bits(u32::from_str_radix(s, 16).unwrap())
}

fn ints<T: std::str::FromStr>(words: &[&str]) -> Vec<T>
where
    T::Err: std::fmt::Debug,
{
    words.iter().map(|w| w.parse().unwrap()).collect()
}

fn parse(stdout: &str) -> Vec<Fc> {
    let mut ops: Vec<Fc> = Vec::new();
    for line in stdout.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some((&key, rest)) = words.split_first() else {
            continue;
        };
        if key == "op" {
            ops.push(Fc {
                activation: rest[1].to_owned(),
                ..Fc::default()
            });
            continue;
        }
        let Some(op) = ops.last_mut() else { continue };
        match key {
            "input" => op.input = (rest[0].parse().unwrap(), f32_hex(rest[1])),
            "output" => op.output = (rest[0].parse().unwrap(), f32_hex(rest[1])),
            "filter" => {
                let parts: Vec<&[&str]> = rest.split(|w| *w == ";").collect();
                op.filter_zero_points = ints(parts[0]);
                op.filter_scales = parts[1].iter().map(|w| f32_hex(w)).collect();
                assert_eq!(parts[2], ["0"], "weights quantized along axis 0");
                op.channels = parts[3][0].parse().unwrap();
            }
            "input_data" => op.input_data = ints(rest),
            "filter_data" => op.filter_data = ints(rest),
            "bias_data" => op.bias_data = Some(ints(rest)),
            "output_data" => op.output_data = ints(rest),
            _ => {}
        }
    }
    ops
}

#[test]
fn int8_fully_connected_is_bit_exact_with_tflites_reference_kernel() {
    let output = run_tf_with_plugin("tflite_int8_dump.py", &[], None);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "tflite_int8_dump.py failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let ops = parse(&stdout);
    let activations: Vec<&str> = ops.iter().map(|op| op.activation.as_str()).collect();
    assert_eq!(activations, ["RELU", "RELU6", "NONE"], "{stdout}");
    assert!(
        ops.iter().any(|op| op.bias_data.is_none()),
        "a layer without a bias"
    );
    for (i, op) in ops.iter().enumerate() {
        assert!(op.filter_zero_points.iter().all(|&z| z == 0));
        assert_eq!(op.filter_scales.len(), op.channels, "per-channel weights");
        let requantize: Vec<Requantize> = op
            .filter_scales
            .iter()
            .map(|&w| {
                let real = f64::from(op.input.1) * f64::from(w) / f64::from(op.output.1);
                Requantize::from_real(real).unwrap()
            })
            .collect();
        let activation = match op.activation.as_str() {
            "RELU" => Activation::Relu,
            "RELU6" => Activation::Relu6,
            _ => Activation::None,
        };
        let (min, max) = activation_range(activation, op.output.1, op.output.0);
        let run = |rounding| {
            let layer = Int8Layer {
                input_zero_point: op.input.0,
                output_zero_point: op.output.0,
                requantize: &requantize,
                rounding,
                min,
                max,
            };
            let mut got = vec![0i8; op.output_data.len()];
            fully_connected(
                &layer,
                &op.input_data,
                &op.filter_data,
                op.channels,
                op.bias_data.as_deref(),
                &mut got,
            )
            .unwrap();
            got
        };
        // The wheel's interpreter is the TFLITE_SINGLE_ROUNDING build.
        let got = run(Rounding::Single);
        assert_eq!(
            got, op.output_data,
            "FULLY_CONNECTED {i} ({})",
            op.activation
        );
        let double = run(Rounding::Double);
        let differ = double.iter().zip(&got).filter(|(d, s)| d != s).count();
        println!(
            "FULLY_CONNECTED {i} ({}, {} channels): {} outputs equal TFLite's with single \
             rounding; double rounding differs on {differ}",
            op.activation,
            op.channels,
            got.len()
        );
    }
}

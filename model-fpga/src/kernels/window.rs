//! Sliding-window kernels over NHWC tensors: convolution, depthwise
//! convolution, max and average pooling. Each output element accumulates its
//! taps in `f32`, in window order (rows, columns, then input channels).

use super::error::{KernelError, Operand, expect_len};
use super::window_grad::{avg_pool_grad, conv_backprop_filter, conv_backprop_input, max_pool_grad};
use super::window_spec::{WindowOp, WindowSpec};
use tensorplug_core::accelerator::Activation;

/// Runs `op` over `src0` (and `src1`: the filter, or dy for a gradient)
/// into `dst`, after checking every length against `spec`. Never inlined:
/// on the MCU its code is the model's, not the caller's (`cargo xtask size`).
#[inline(never)]
pub fn window(
    op: WindowOp,
    spec: &WindowSpec,
    src0: &[f32],
    src1: &[f32],
    dst: &mut [f32],
) -> Result<(), KernelError> {
    let [src0_len, src1_len, dst_len] = spec.lens(op)?;
    expect_len(Operand::Input, src0_len, src0.len())?;
    expect_len(Operand::Rhs, src1_len, src1.len())?;
    expect_len(Operand::Output, dst_len, dst.len())?;
    let (x, filter, out) = (src0, src1, dst);
    if op.forward() != op {
        match op {
            WindowOp::ConvBackpropInput => conv_backprop_input(spec, x, filter, out),
            WindowOp::ConvBackpropFilter => conv_backprop_filter(spec, x, filter, out),
            WindowOp::MaxPoolGrad => max_pool_grad(spec, x, filter, out),
            _ => avg_pool_grad(spec, x, out),
        }
        return Ok(());
    }
    #[cfg(feature = "std")]
    if op == WindowOp::Conv {
        return super::conv_host::conv(spec, x, filter, out);
    }
    let oc_n = spec.out_channels(op)?;
    if oc_n == 0 {
        return Ok(());
    }
    let [oh_n, ow_n] = spec.out;
    for (p, out_row) in out.chunks_exact_mut(oc_n).enumerate() {
        let (n, oh, ow) = (p / (oh_n * ow_n), p / ow_n % oh_n, p % ow_n);
        pixel(op, spec, x, filter, [n, oh, ow], out_row);
    }
    Ok(())
}

/// `CONV2D_F32`'s epilogue over its result `out` (`[.., k]`):
/// `out[p][oc] = act(out[p][oc] + bias[oc])`, rounded as the unfused ops.
pub fn bias_activation(out: &mut [f32], bias: &[f32], act: Activation) -> Result<(), KernelError> {
    let k = bias.len();
    if k == 0 || !out.len().is_multiple_of(k) {
        return expect_len(Operand::Rhs, out.len().max(1), k);
    }
    for row in out.chunks_exact_mut(k) {
        for (o, &b) in row.iter_mut().zip(bias) {
            *o = act.apply(*o + b);
        }
    }
    Ok(())
}

/// One output pixel `[n, oh, ow]`: every output channel, accumulated tap
/// by tap with the channels innermost (contiguous, so the loops vectorize).
fn pixel(
    op: WindowOp,
    spec: &WindowSpec,
    x: &[f32],
    filter: &[f32],
    [n, oh, ow]: [usize; 3],
    out: &mut [f32],
) {
    let [h, w, c] = spec.hwc;
    let k = spec.k;
    out.fill(match op {
        WindowOp::MaxPool => f32::MIN,
        _ => 0.0,
    });
    let mut count = 0u32;
    for a in 0..spec.size[0] {
        let Some(ih) = spec.source(0, oh, a) else {
            continue;
        };
        for b in 0..spec.size[1] {
            let Some(iw) = spec.source(1, ow, b) else {
                continue;
            };
            let x_row = &x[((n * h + ih) * w + iw) * c..][..c];
            let tap = (a * spec.size[1] + b) * c * k;
            count += 1;
            match op {
                WindowOp::Conv => {
                    for (ch, &v) in x_row.iter().enumerate() {
                        let f_row = &filter[tap + ch * k..][..k];
                        for (o, &f) in out.iter_mut().zip(f_row) {
                            *o += v * f;
                        }
                    }
                }
                WindowOp::Depthwise => {
                    // Output channel `ch·k + j` uses filter `tap + ch·k + j`.
                    let f_row = &filter[tap..][..c * k];
                    if k == 1 {
                        for ((o, &f), &v) in out.iter_mut().zip(f_row).zip(x_row) {
                            *o += v * f;
                        }
                    } else {
                        for ((o, &f), i) in out.iter_mut().zip(f_row).zip(0..) {
                            *o += x_row[i / k] * f;
                        }
                    }
                }
                WindowOp::MaxPool => {
                    // A select, not a branch, so the loop vectorizes.
                    for (o, &v) in out.iter_mut().zip(x_row) {
                        *o = if v > *o { v } else { *o };
                    }
                }
                _ => {
                    // AvgPool (the gradients do not come here).
                    for (o, &v) in out.iter_mut().zip(x_row) {
                        *o += v;
                    }
                }
            }
        }
    }
    if op == WindowOp::AvgPool && count > 0 {
        for o in out.iter_mut() {
            *o /= count as f32;
        }
    }
}

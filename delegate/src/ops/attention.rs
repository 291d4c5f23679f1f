//! float32 `TRANSPOSE` and `BATCH_MATMUL`: how a Keras
//! `MultiHeadAttention` converts (its heads split by a transpose, its
//! scores and values as batched products). Each is the device's op of the
//! same meaning, compared with TFLite's kernels within `docs/ops.md`'s
//! tolerances.

use super::checks::{all_f32, need, params};
use super::plan::DeviceOp;
use crate::graph::{NodeView, TensorView};
use tensorplug_abi::tflite::{TfLiteBatchMatMulParams, TfLiteType};
use tensorplug_core::accelerator::{Capabilities, DType, MAX_RANK, OpKind, batch_matmul};

/// float32 `TRANSPOSE` by a constant int32 permutation.
pub fn transpose_f32(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let (&[x, perm], &[out]) = (node.inputs.as_slice(), node.outputs.as_slice()) else {
        return Err("expected 2 inputs and 1 output".into());
    };
    let (xt, pt, ot) = (tensor(x)?, tensor(perm)?, tensor(out)?);
    all_f32(&[&xt, &ot])?;
    let perm = permutation(&pt, xt.dims.len())?;
    let want: Vec<usize> = (0..xt.dims.len())
        .map(|i| xt.dims[usize::from(perm[i])])
        .collect();
    if ot.dims != want {
        return Err(format!("output {:?}, permuted {want:?}", ot.dims));
    }
    let kind = OpKind::Transpose(perm);
    need(caps, kind)?;
    Ok(DeviceOp::TransposeF32 { x, out, perm })
}

/// The constant permutation of `rank` axes, padded with zeros.
fn permutation(pt: &TensorView, rank: usize) -> Result<[u8; MAX_RANK], String> {
    if !pt.constant || pt.data.is_null() || pt.dtype != TfLiteType::kTfLiteInt32 {
        return Err("the permutation is not a constant int32 tensor".into());
    }
    if rank > MAX_RANK || pt.bytes != 4 * rank {
        return Err(format!(
            "a permutation of {} bytes for rank {rank}",
            pt.bytes
        ));
    }
    // SAFETY: the runtime's read-only buffer of `bytes` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(pt.data, pt.bytes) };
    let mut perm = [0u8; MAX_RANK];
    let mut seen = [false; MAX_RANK];
    for (i, w) in bytes.chunks_exact(4).enumerate() {
        let p = i32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        match usize::try_from(p) {
            Ok(p) if p < rank && !seen[p] => {
                seen[p] = true;
                perm[i] = p as u8;
            }
            _ => return Err(format!("permutation entry {p} of rank {rank}")),
        }
    }
    Ok(perm)
}

/// float32 `BATCH_MATMUL` of operands of one rank whose batch axes are
/// equal (no broadcast): one `BatchMatMul` record where the device lists
/// it, else one device `MatMul` per batch element.
pub fn batch_matmul_f32(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let (&[x, y], &[out]) = (node.inputs.as_slice(), node.outputs.as_slice()) else {
        return Err("expected 2 inputs and 1 output".into());
    };
    // SAFETY: BATCH_MATMUL's builtin data is the runtime's
    // TfLiteBatchMatMulParams, whose first fields these are.
    let p = unsafe { params::<TfLiteBatchMatMulParams>(node, "BATCH_MATMUL") }?;
    let (xt, yt, ot) = (tensor(x)?, tensor(y)?, tensor(out)?);
    all_f32(&[&xt, &yt, &ot])?;
    let rank = xt.dims.len();
    if rank < 2 || yt.dims.len() != rank || xt.dims[..rank - 2] != yt.dims[..rank - 2] {
        return Err(format!(
            "operands {:?} and {:?} (the delegate multiplies equal batch axes)",
            xt.dims, yt.dims
        ));
    }
    let two = |d: &[usize], adj: bool| match adj {
        false => (d[rank - 2], d[rank - 1]),
        true => (d[rank - 1], d[rank - 2]),
    };
    let ((m, k), (k2, n)) = (two(&xt.dims, p.adj_x), two(&yt.dims, p.adj_y));
    let mut want = xt.dims[..rank - 2].to_vec();
    want.extend([m, n]);
    if k != k2 || ot.dims != want {
        return Err(format!(
            "operands {:?} and {:?} to {:?}",
            xt.dims, yt.dims, ot.dims
        ));
    }
    let kind = OpKind::MatMul {
        transpose_a: p.adj_x,
        transpose_b: p.adj_y,
    };
    need(caps, kind)?;
    let record = rank > 2 && caps.supports(batch_matmul(p.adj_x, p.adj_y), DType::F32);
    let batch: usize = xt.dims[..rank - 2].iter().product();
    let u = |v: usize| v as u64;
    Ok(DeviceOp::BatchMatMulF32 {
        x,
        y,
        out,
        batch: u(batch),
        m: u(m),
        k: u(k),
        n: u(n),
        adj_x: p.adj_x,
        adj_y: p.adj_y,
        record,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tensorplug_abi::tflite::{kTfLiteBuiltinBatchMatmul, kTfLiteBuiltinTranspose};
    use tensorplug_core::accelerator::OpSet;

    fn view(index: i32, dims: &[usize]) -> TensorView {
        TensorView::for_test(
            index,
            TfLiteType::kTfLiteFloat32,
            dims,
            core::ptr::null_mut(),
        )
    }

    fn node(code: i32, inputs: &[i32], params: *const core::ffi::c_void) -> NodeView {
        NodeView {
            builtin_code: code,
            version: 1,
            inputs: inputs.to_vec(),
            outputs: vec![9],
            builtin_data: params,
        }
    }

    fn all() -> Capabilities {
        Capabilities::f32(OpSet::ALL, false)
    }

    #[test]
    fn a_transpose_takes_a_permutation_and_its_output_shape() {
        let mut perm: Vec<u8> = [0i32, 2, 1, 3]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let mut repeated: Vec<u8> = [0i32, 1, 1, 3]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let (p, r) = (perm.as_mut_ptr(), repeated.as_mut_ptr());
        let tensors = |out: &'static [usize], data: *mut u8| {
            move |i: i32| {
                Ok(match i {
                    1 => view(1, &[1, 16, 2, 8]),
                    2 => TensorView::for_test(2, TfLiteType::kTfLiteInt32, &[4], data),
                    _ => view(9, out),
                })
            }
        };
        let t = node(kTfLiteBuiltinTranspose, &[1, 2], core::ptr::null());
        let ok = transpose_f32(&t, &tensors(&[1, 2, 16, 8], p), &all());
        assert_eq!(
            ok,
            Ok(DeviceOp::TransposeF32 {
                x: 1,
                out: 9,
                perm: [0, 2, 1, 3, 0, 0]
            })
        );
        let wrong = transpose_f32(&t, &tensors(&[1, 16, 2, 8], p), &all());
        assert!(wrong.unwrap_err().contains("permuted [1, 2, 16, 8]"));
        let bad = transpose_f32(&t, &tensors(&[1, 2, 16, 8], r), &all());
        assert!(bad.unwrap_err().contains("permutation entry 1"));
    }

    #[test]
    fn a_batch_matmul_of_equal_batch_axes_runs_per_element_and_a_broadcast_does_not() {
        let adj = TfLiteBatchMatMulParams {
            adj_x: false,
            adj_y: true,
        };
        let n = node(kTfLiteBuiltinBatchMatmul, &[1, 2], (&raw const adj).cast());
        let shapes = |y: &'static [usize]| {
            move |i: i32| {
                Ok(match i {
                    1 => view(1, &[2, 3, 4, 5]),
                    2 => view(2, y),
                    _ => view(9, &[2, 3, 4, 6]),
                })
            }
        };
        let ok = batch_matmul_f32(&n, &shapes(&[2, 3, 6, 5]), &all());
        assert!(matches!(
            ok,
            Ok(DeviceOp::BatchMatMulF32 {
                batch: 6,
                m: 4,
                k: 5,
                n: 6,
                adj_x: false,
                adj_y: true,
                record: true,
                ..
            })
        ));
        // A device without the record: one MatMul per batch element.
        let matmul = OpKind::MatMul {
            transpose_a: false,
            transpose_b: true,
        };
        let per_matrix = Capabilities::f32(OpSet::EMPTY.with(matmul), false);
        let ok = batch_matmul_f32(&n, &shapes(&[2, 3, 6, 5]), &per_matrix);
        assert!(matches!(
            ok,
            Ok(DeviceOp::BatchMatMulF32 { record: false, .. })
        ));
        let broadcast = batch_matmul_f32(&n, &shapes(&[1, 3, 6, 5]), &all());
        assert!(broadcast.unwrap_err().contains("equal batch axes"));
        let inner = batch_matmul_f32(&n, &shapes(&[2, 3, 6, 4]), &all());
        assert!(inner.unwrap_err().contains("to [2, 3, 4, 6]"));
    }
}

//! Shape arithmetic evaluated at prepare: `SHAPE` of a tensor whose shape
//! is known then, and `STRIDED_SLICE`, `PACK`, `GATHER`, `REDUCE_PROD` and
//! `CONCATENATION` of int32 values known then (constants, or such an op's
//! output). Keras 3 flattens with
//! `RESHAPE(x, PACK(STRIDED_SLICE(SHAPE(x), 0, 1), -1))` when the batch is
//! left open; folded, that `RESHAPE` has a known shape and the partition
//! need not stop for it. The device does nothing for these nodes.

use super::checks::{op_name, params};
use super::plan::DeviceOp;
use crate::graph::{NodeView, TensorView};
use tensorplug_abi::tflite::{
    TfLiteConcatenationParams, TfLiteFusedActivation, TfLiteGatherParams, TfLitePackParams,
    TfLiteReducerParams, TfLiteStridedSliceParams, TfLiteType, kTfLiteBuiltinConcatenation,
    kTfLiteBuiltinGather, kTfLiteBuiltinPack, kTfLiteBuiltinReduceProd, kTfLiteBuiltinShape,
    kTfLiteBuiltinStridedSlice,
};

/// How deep a chain of folded ops may be (a graph is acyclic; this only
/// bounds the recursion on a malformed one).
const MAX_DEPTH: usize = 16;

/// An int32 value known at prepare.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    pub dims: Vec<usize>,
    pub data: Vec<i32>,
    /// The tensors whose shapes it was computed from, and those shapes.
    pub shapes: Vec<(i32, Vec<usize>)>,
}

/// The graph as folding reads it: tensors, and the node writing a tensor.
pub struct Source<'a> {
    pub tensor: &'a dyn Fn(i32) -> Result<TensorView, String>,
    pub producer: &'a dyn Fn(i32) -> Result<Option<NodeView>, String>,
}

/// `node` (one of the ops above) folded: its output's value, or why it
/// cannot be known at prepare.
pub fn folded(src: &Source, node: &NodeView) -> Result<DeviceOp, String> {
    let &[out] = node.outputs.as_slice() else {
        return Err("expected 1 output".into());
    };
    let value = eval(src, node, 0)?;
    Ok(DeviceOp::Folded {
        out,
        value: value.data,
        shapes: value.shapes,
    })
}

/// Tensor `t`'s value at prepare: a constant int32 tensor's data, or the
/// output of a node [`folded`] takes.
pub fn value(src: &Source, t: i32) -> Result<Value, String> {
    value_at(src, t, 0)
}

/// Whether RESHAPE's `shape` (one −1 at most, inferred) of `count`
/// elements gives `dims`.
pub fn resolves_to(shape: &[i32], count: usize, dims: &[usize]) -> bool {
    let known: i64 = shape
        .iter()
        .filter(|&&d| d != -1)
        .map(|&d| i64::from(d))
        .product();
    let count = count as i64;
    let resolved: Vec<i64> = match shape.iter().filter(|&&d| d == -1).count() {
        0 => shape.iter().map(|&d| i64::from(d)).collect(),
        1 if known > 0 && count % known == 0 => shape
            .iter()
            .map(|&d| if d == -1 { count / known } else { i64::from(d) })
            .collect(),
        _ => return false,
    };
    resolved.iter().all(|&d| d >= 0)
        && resolved.iter().product::<i64>() == count
        && resolved.len() == dims.len()
        && resolved.iter().zip(dims).all(|(&r, &d)| r == d as i64)
}

fn value_at(src: &Source, t: i32, depth: usize) -> Result<Value, String> {
    let view = (src.tensor)(t)?;
    if view.dtype != TfLiteType::kTfLiteInt32 {
        return Err(format!("tensor {t} is {:?}, not int32", view.dtype));
    }
    if view.constant {
        return constant(&view);
    }
    if depth >= MAX_DEPTH {
        return Err(format!("tensor {t}: more than {MAX_DEPTH} folded ops deep"));
    }
    match (src.producer)(t)? {
        Some(node) => eval(src, &node, depth + 1),
        None => Err(format!("tensor {t} is an input of the graph")),
    }
}

fn constant(t: &TensorView) -> Result<Value, String> {
    let count: usize = t.dims.iter().product();
    if t.data.is_null() || t.bytes != 4 * count {
        return Err(format!(
            "constant tensor {} has no {count} int32 values",
            t.index
        ));
    }
    // SAFETY: the runtime's read-only buffer of `bytes` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(t.data, t.bytes) };
    let data = bytes
        .chunks_exact(4)
        .map(|w| i32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    Ok(Value {
        dims: t.dims.clone(),
        data,
        shapes: Vec::new(),
    })
}

#[allow(non_upper_case_globals)] // TFLite's C names
fn eval(src: &Source, node: &NodeView, depth: usize) -> Result<Value, String> {
    let &[out] = node.outputs.as_slice() else {
        return Err("expected 1 output".into());
    };
    let value = match node.builtin_code {
        kTfLiteBuiltinShape => shape(src, node)?,
        kTfLiteBuiltinStridedSlice => strided_slice(src, node, depth)?,
        kTfLiteBuiltinPack => pack(src, node, depth)?,
        kTfLiteBuiltinGather => gather(src, node, depth)?,
        kTfLiteBuiltinReduceProd => reduce_prod(src, node, depth)?,
        kTfLiteBuiltinConcatenation => concatenation(src, node, depth)?,
        code => {
            return Err(format!(
                "tensor {out} is computed by {} at run time",
                op_name(code)
            ));
        }
    };
    let ot = (src.tensor)(out)?;
    if ot.dtype != TfLiteType::kTfLiteInt32 || ot.dims != value.dims {
        return Err(format!(
            "tensor {out} is {:?} {:?}; folded, it is int32 {:?}",
            ot.dtype, ot.dims, value.dims
        ));
    }
    Ok(value)
}

/// `SHAPE(x)`: `x`'s dimensions, when they are known at prepare.
fn shape(src: &Source, node: &NodeView) -> Result<Value, String> {
    let &[x] = node.inputs.as_slice() else {
        return Err("SHAPE: expected 1 input".into());
    };
    let xt = (src.tensor)(x)?;
    if xt.dynamic {
        return Err(format!(
            "SHAPE of tensor {x}, whose shape is known only at run time"
        ));
    }
    let data = xt
        .dims
        .iter()
        .map(|&d| i32::try_from(d).map_err(|_| format!("dimension {d} past int32")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Value {
        dims: vec![data.len()],
        data,
        shapes: vec![(x, xt.dims)],
    })
}

/// `STRIDED_SLICE` of a 1-D value by one begin, end and stride (with
/// `begin_mask`, `end_mask` and `shrink_axis_mask`), as TF slices.
fn strided_slice(src: &Source, node: &NodeView, depth: usize) -> Result<Value, String> {
    let &[x, begin, end, strides] = node.inputs.as_slice() else {
        return Err("STRIDED_SLICE: expected 4 inputs".into());
    };
    if node.version >= 8 {
        return Err(format!(
            "STRIDED_SLICE version {} (its `offset`)",
            node.version
        ));
    }
    // SAFETY: TfLiteStridedSliceParams' first fields, in every runtime.
    let p: TfLiteStridedSliceParams = unsafe { params(node, "STRIDED_SLICE")? };
    if p.ellipsis_mask != 0 || p.new_axis_mask != 0 {
        return Err("STRIDED_SLICE with an ellipsis or a new axis".into());
    }
    let xv = value_at(src, x, depth)?;
    let mut shapes = xv.shapes.clone();
    let mut one = |t: i32| -> Result<i32, String> {
        let v = value_at(src, t, depth)?;
        shapes.extend(v.shapes);
        match v.data.as_slice() {
            &[v] => Ok(v),
            other => Err(format!("STRIDED_SLICE over {} axes", other.len())),
        }
    };
    if xv.dims.len() != 1 {
        return Err(format!("STRIDED_SLICE of a {:?} value", xv.dims));
    }
    let range = Slice {
        begin: one(begin)?,
        end: one(end)?,
        stride: one(strides)?,
        begin_mask: p.begin_mask & 1 != 0,
        end_mask: p.end_mask & 1 != 0,
        shrink: p.shrink_axis_mask & 1 != 0,
    };
    let picked = range.indices(xv.data.len())?;
    let data: Vec<i32> = picked.iter().map(|&i| xv.data[i]).collect();
    let dims = if range.shrink {
        vec![]
    } else {
        vec![data.len()]
    };
    Ok(Value { dims, data, shapes })
}

/// One axis of a strided slice.
struct Slice {
    begin: i32,
    end: i32,
    stride: i32,
    begin_mask: bool,
    end_mask: bool,
    shrink: bool,
}

impl Slice {
    /// The indices picked from an axis of `n`, in order (TF's
    /// `strided_slice` semantics: negative indices count from the end;
    /// out-of-range bounds clamp; a shrunk axis takes exactly `begin`).
    fn indices(&self, n: usize) -> Result<Vec<usize>, String> {
        let n = i64::try_from(n).map_err(|_| "axis too long".to_string())?;
        let norm = |i: i32| {
            if i < 0 {
                i64::from(i) + n
            } else {
                i64::from(i)
            }
        };
        if self.shrink {
            let i = norm(self.begin);
            return match usize::try_from(i) {
                Ok(u) if i < n => Ok(vec![u]),
                _ => Err(format!("index {} of an axis of {n}", self.begin)),
            };
        }
        let s = i64::from(self.stride);
        if s == 0 {
            return Err("stride 0".into());
        }
        let (lo, hi) = if s > 0 { (0, n) } else { (-1, n - 1) };
        let b = if self.begin_mask {
            if s > 0 { lo } else { hi }
        } else {
            norm(self.begin).clamp(lo, hi)
        };
        let e = if self.end_mask {
            if s > 0 { hi } else { lo }
        } else {
            norm(self.end).clamp(lo, hi)
        };
        let mut out = Vec::new();
        let mut i = b;
        while (s > 0 && i < e) || (s < 0 && i > e) {
            out.push(usize::try_from(i).map_err(|_| format!("index {i}"))?);
            i += s;
        }
        Ok(out)
    }
}

/// `PACK` of int32 values of one shape along axis 0.
fn pack(src: &Source, node: &NodeView, depth: usize) -> Result<Value, String> {
    // SAFETY: TfLitePackParams, in every runtime.
    let p: TfLitePackParams = unsafe { params(node, "PACK")? };
    let values = node
        .inputs
        .iter()
        .map(|&t| value_at(src, t, depth))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(first) = values.first() else {
        return Err("PACK of nothing".into());
    };
    let rank = i32::try_from(first.dims.len()).map_err(|_| "rank".to_string())?;
    let axis = if p.axis < 0 {
        p.axis + rank + 1
    } else {
        p.axis
    };
    if axis != 0 || usize::try_from(p.values_count) != Ok(values.len()) {
        return Err(format!(
            "PACK of {} values along axis {} (folded: along axis 0)",
            p.values_count, p.axis
        ));
    }
    if values.iter().any(|v| v.dims != first.dims) {
        return Err("PACK of values of different shapes".into());
    }
    let mut dims = vec![values.len()];
    dims.extend(&first.dims);
    let mut data = Vec::new();
    let mut shapes = Vec::new();
    for v in values {
        data.extend(v.data);
        shapes.extend(v.shapes);
    }
    Ok(Value { dims, data, shapes })
}

/// The 1-D value of tensor `t`, and the shapes it came from.
fn vector(src: &Source, t: i32, depth: usize, op: &str) -> Result<Value, String> {
    let v = value_at(src, t, depth)?;
    match v.dims.len() {
        1 => Ok(v),
        _ => Err(format!("{op} of a {:?} value", v.dims)),
    }
}

/// `GATHER` along axis 0 of a 1-D value.
fn gather(src: &Source, node: &NodeView, depth: usize) -> Result<Value, String> {
    let &[params_t, indices] = node.inputs.as_slice() else {
        return Err("GATHER: expected 2 inputs".into());
    };
    // SAFETY: TfLiteGatherParams, in every runtime.
    let p: TfLiteGatherParams = unsafe { params(node, "GATHER")? };
    if p.axis != 0 || p.batch_dims != 0 {
        return Err(format!(
            "GATHER along axis {} (batch_dims {})",
            p.axis, p.batch_dims
        ));
    }
    let from = vector(src, params_t, depth, "GATHER")?;
    let at = value_at(src, indices, depth)?;
    let data = at
        .data
        .iter()
        .map(|&i| {
            usize::try_from(i)
                .ok()
                .and_then(|i| from.data.get(i).copied())
                .ok_or_else(|| format!("GATHER index {i} of {} values", from.data.len()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut shapes = from.shapes;
    shapes.extend(at.shapes);
    Ok(Value {
        dims: at.dims,
        data,
        shapes,
    })
}

/// `REDUCE_PROD` of a 1-D value over its axis.
fn reduce_prod(src: &Source, node: &NodeView, depth: usize) -> Result<Value, String> {
    let &[x, axes] = node.inputs.as_slice() else {
        return Err("REDUCE_PROD: expected 2 inputs".into());
    };
    // SAFETY: TfLiteReducerParams, in every runtime.
    let keep = unsafe { params::<TfLiteReducerParams>(node, "REDUCE_PROD")? }.keep_dims;
    let xv = vector(src, x, depth, "REDUCE_PROD")?;
    let axes = value_at(src, axes, depth)?;
    if !matches!(axes.data.as_slice(), [0] | [-1]) {
        return Err(format!(
            "REDUCE_PROD over axes {:?} of a 1-D value",
            axes.data
        ));
    }
    let product = xv
        .data
        .iter()
        .try_fold(1i32, |p, &d| p.checked_mul(d))
        .ok_or("REDUCE_PROD past int32")?;
    Ok(Value {
        dims: if keep { vec![1] } else { vec![] },
        data: vec![product],
        shapes: xv.shapes,
    })
}

/// `CONCATENATION` of 1-D int32 values.
fn concatenation(src: &Source, node: &NodeView, depth: usize) -> Result<Value, String> {
    // SAFETY: TfLiteConcatenationParams, in every runtime.
    let p: TfLiteConcatenationParams = unsafe { params(node, "CONCATENATION")? };
    if !matches!(p.axis, 0 | -1) || p.activation != TfLiteFusedActivation::kTfLiteActNone {
        return Err(format!("CONCATENATION along axis {} of 1-D values", p.axis));
    }
    let mut data = Vec::new();
    let mut shapes = Vec::new();
    for &t in &node.inputs {
        let v = vector(src, t, depth, "CONCATENATION")?;
        data.extend(v.data);
        shapes.extend(v.shapes);
    }
    Ok(Value {
        dims: vec![data.len()],
        data,
        shapes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The node of `nodes` that writes a tensor.
    fn producer_of(nodes: &[NodeView]) -> impl Fn(i32) -> Result<Option<NodeView>, String> + '_ {
        move |t| Ok(nodes.iter().find(|n| n.outputs == [t]).cloned())
    }

    fn slice(begin: i32, end: i32, stride: i32) -> Slice {
        Slice {
            begin,
            end,
            stride,
            begin_mask: false,
            end_mask: false,
            shrink: false,
        }
    }

    /// Keras 3's `Flatten` of a `[1, 2, 2, 4]` tensor: tensors 0 (`x`),
    /// 1 `SHAPE`, 2..4 `begin`/`end`/`strides` constants, 5 the slice, 6
    /// the constant `-1`, 7 `PACK`; nodes 10 `SHAPE`, 11 `STRIDED_SLICE`,
    /// 12 `PACK`.
    #[test]
    fn keras_flatten_folds_to_its_batch_and_minus_one() {
        let mut constants: Vec<Vec<u8>> = [0i32, 1, 1, -1]
            .iter()
            .map(|v| v.to_le_bytes().to_vec())
            .collect();
        let data: Vec<*mut u8> = constants.iter_mut().map(|c| c.as_mut_ptr()).collect();
        let view = TensorView::for_test;
        let int32 = TfLiteType::kTfLiteInt32;
        let tensor = |i: i32| {
            Ok(match i {
                0 => view(
                    0,
                    TfLiteType::kTfLiteInt8,
                    &[1, 2, 2, 4],
                    core::ptr::null_mut(),
                ),
                1 => view(1, int32, &[4], core::ptr::null_mut()),
                2..=4 => view(i, int32, &[1], data[i as usize - 2]),
                5 => view(5, int32, &[], core::ptr::null_mut()),
                6 => view(6, int32, &[], data[3]),
                7 => view(7, int32, &[2], core::ptr::null_mut()),
                _ => return Err(format!("no tensor {i}")),
            })
        };
        let slice = TfLiteStridedSliceParams {
            begin_mask: 0,
            end_mask: 0,
            ellipsis_mask: 0,
            new_axis_mask: 0,
            shrink_axis_mask: 1,
        };
        let pack_params = TfLitePackParams {
            values_count: 2,
            axis: 0,
        };
        let node = |code, inputs: &[i32], out, params: *const core::ffi::c_void| NodeView {
            builtin_code: code,
            version: 1,
            inputs: inputs.to_vec(),
            outputs: vec![out],
            builtin_data: params,
        };
        let nodes = [
            node(kTfLiteBuiltinShape, &[0], 1, core::ptr::null()),
            node(
                kTfLiteBuiltinStridedSlice,
                &[1, 2, 3, 4],
                5,
                (&raw const slice).cast(),
            ),
            node(
                kTfLiteBuiltinPack,
                &[5, 6],
                7,
                (&raw const pack_params).cast(),
            ),
        ];
        let producer = producer_of(&nodes);
        let src = Source {
            tensor: &tensor,
            producer: &producer,
        };
        assert_eq!(
            folded(&src, &nodes[2]),
            Ok(DeviceOp::Folded {
                out: 7,
                value: vec![1, -1],
                shapes: vec![(0, vec![1, 2, 2, 4])],
            })
        );
        let shape = value(&src, 1).unwrap();
        assert_eq!((shape.dims, shape.data), (vec![4], vec![1, 2, 2, 4]));
        assert!(resolves_to(&value(&src, 7).unwrap().data, 16, &[1, 16]));
        // The graph's input is not known at prepare, nor a dynamic tensor's shape.
        assert!(value(&src, 0).unwrap_err().contains("not int32"));
        let dynamic = |i: i32| {
            let mut t = tensor(i)?;
            t.dynamic = i == 0;
            Ok(t)
        };
        let src = Source {
            tensor: &dynamic,
            producer: &producer,
        };
        assert!(
            folded(&src, &nodes[2])
                .unwrap_err()
                .contains("known only at run time")
        );
    }

    /// Keras 3's `Dense` on a `[1, 16, 32]` tensor without a batch size:
    /// `GATHER(SHAPE(x), [0, 1])`, its `REDUCE_PROD`, and the output shape
    /// `CONCATENATION(GATHER(…), [8])`.
    #[test]
    fn a_dense_layer_s_shapes_fold_through_gather_prod_and_concatenation() {
        let mut constants: Vec<Vec<u8>> = [vec![0i32, 1], vec![0], vec![8]]
            .iter()
            .map(|v| v.iter().flat_map(|x| x.to_le_bytes()).collect())
            .collect();
        let data: Vec<*mut u8> = constants.iter_mut().map(|c| c.as_mut_ptr()).collect();
        let int32 = TfLiteType::kTfLiteInt32;
        let view = TensorView::for_test;
        let none = core::ptr::null_mut();
        let tensor = |i: i32| {
            Ok(match i {
                0 => view(0, TfLiteType::kTfLiteFloat32, &[1, 16, 32], none),
                1 => view(1, int32, &[3], none),
                2 => view(2, int32, &[2], data[0]),
                3 => view(3, int32, &[2], none),
                4 => view(4, int32, &[1], data[1]),
                5 => view(5, int32, &[], none),
                6 => view(6, int32, &[1], data[2]),
                7 => view(7, int32, &[3], none),
                _ => return Err(format!("no tensor {i}")),
            })
        };
        let gather_p = TfLiteGatherParams {
            axis: 0,
            batch_dims: 0,
        };
        let prod_p = TfLiteReducerParams { keep_dims: false };
        let concat_p = TfLiteConcatenationParams {
            axis: 0,
            activation: TfLiteFusedActivation::kTfLiteActNone,
        };
        let node = |code, inputs: &[i32], out, params: *const core::ffi::c_void| NodeView {
            builtin_code: code,
            version: 1,
            inputs: inputs.to_vec(),
            outputs: vec![out],
            builtin_data: params,
        };
        let nodes = [
            node(kTfLiteBuiltinShape, &[0], 1, core::ptr::null()),
            node(
                kTfLiteBuiltinGather,
                &[1, 2],
                3,
                (&raw const gather_p).cast(),
            ),
            node(
                kTfLiteBuiltinReduceProd,
                &[3, 4],
                5,
                (&raw const prod_p).cast(),
            ),
            node(
                kTfLiteBuiltinConcatenation,
                &[3, 6],
                7,
                (&raw const concat_p).cast(),
            ),
        ];
        let producer = producer_of(&nodes);
        let src = Source {
            tensor: &tensor,
            producer: &producer,
        };
        assert_eq!(value(&src, 3).unwrap().data, [1, 16]);
        let prod = value(&src, 5).unwrap();
        assert_eq!((prod.dims, prod.data), (vec![], vec![16]));
        let shape = value(&src, 7).unwrap();
        assert_eq!(
            (shape.data, shape.shapes),
            (vec![1, 16, 8], vec![(0, vec![1, 16, 32])])
        );
    }

    #[test]
    fn a_folded_shape_resolves_its_minus_one() {
        assert!(resolves_to(&[1, -1], 10, &[1, 10]));
        assert!(resolves_to(&[2, 5], 10, &[2, 5]));
        assert!(!resolves_to(&[3, -1], 10, &[3, 3]));
        assert!(!resolves_to(&[-1, -1], 10, &[1, 10]));
        assert!(!resolves_to(&[1, -1], 10, &[10]));
        assert!(!resolves_to(&[2, 5], 10, &[5, 2]));
    }

    #[test]
    fn slices_index_as_tf_does() {
        // numpy's a[b:e:s] on range(5), which TF's strided_slice matches.
        assert_eq!(slice(0, 1, 1).indices(5), Ok(vec![0]));
        assert_eq!(slice(1, -1, 1).indices(5), Ok(vec![1, 2, 3]));
        assert_eq!(slice(-2, 99, 1).indices(5), Ok(vec![3, 4]));
        assert_eq!(slice(0, 5, 2).indices(5), Ok(vec![0, 2, 4]));
        assert_eq!(slice(4, 0, -1).indices(5), Ok(vec![4, 3, 2, 1]));
        assert_eq!(slice(99, -99, -2).indices(5), Ok(vec![4, 2, 0]));
        assert_eq!(slice(3, 1, 1).indices(5), Ok(vec![]));
        let masked = Slice {
            begin_mask: true,
            end_mask: true,
            ..slice(3, 3, -1)
        };
        assert_eq!(masked.indices(5), Ok(vec![4, 3, 2, 1, 0]));
        let shrink = Slice {
            shrink: true,
            ..slice(-1, 0, 1)
        };
        assert_eq!(shrink.indices(5), Ok(vec![4]));
        let past = Slice {
            shrink: true,
            ..slice(5, 6, 1)
        };
        assert!(past.indices(5).unwrap_err().contains("index 5"));
        assert_eq!(slice(0, 1, 0).indices(5), Err("stride 0".into()));
    }
}

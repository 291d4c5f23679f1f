//! Reading TF's `KernelList` (from `TF_GetRegisteredKernelsForOp`).

use super::nodes::attr_of;
use super::proto::{DataType, KernelList, NodeDef, attr_value, kernel_def::AttrConstraint};

/// TF's device type of kernels registered for every device (`DEVICE_DEFAULT`:
/// `Identity`, `Const`, `NoOp`, ...).
pub const DEFAULT_DEVICE: &str = "DEFAULT";

/// Whether `list` has a kernel that TF would pick for `node` on a
/// `device_type` device: one for that type or for every device, whose type
/// constraints the node's attrs meet. An attr the node does not set is taken
/// to meet its constraint (TF fills defaults before kernels are looked up).
pub fn has_kernel_for(list: &KernelList, device_type: &str, node: &NodeDef) -> bool {
    list.kernel
        .iter()
        .filter(|kernel| kernel.device_type == device_type || kernel.device_type == DEFAULT_DEVICE)
        .any(|kernel| kernel.constraint.iter().all(|c| meets(c, node)))
}

fn meets(constraint: &AttrConstraint, node: &NodeDef) -> bool {
    let allowed = match constraint
        .allowed_values
        .as_ref()
        .and_then(|v| v.value.as_ref())
    {
        Some(attr_value::Value::List(list)) => &list.r#type,
        _ => return true,
    };
    match node
        .attr
        .get(&constraint.name)
        .and_then(|v| v.value.as_ref())
    {
        Some(attr_value::Value::Type(t)) => allowed.contains(t),
        Some(attr_value::Value::List(list)) => list.r#type.iter().all(|t| allowed.contains(t)),
        _ => true,
    }
}

/// Whether our kernel for `node` takes its attribute values. TF's kernel
/// lists constrain types only; a node left on our device with a value our
/// kernel refuses at construction would fail the step instead of running
/// on the CPU. Op defaults apply to unset attrs (`is_training` is true).
pub fn takes_attrs(node: &NodeDef) -> bool {
    let string = |key: &str| match node.attr.get(key).and_then(|v| v.value.as_ref()) {
        Some(attr_value::Value::S(bytes)) => Some(bytes.as_slice()),
        _ => None,
    };
    let channels_last = matches!(string("data_format"), None | Some(b"NHWC" | b"NDHWC"));
    match node.op.as_str() {
        "FusedBatchNormV3" => {
            let training = match node.attr.get("is_training").and_then(|v| v.value.as_ref()) {
                Some(attr_value::Value::B(b)) => *b,
                _ => true,
            };
            !training && channels_last
        }
        "_FusedConv2D" => {
            channels_last
                && fusion(node, |ops, n| {
                    let ops: Vec<&str> = ops.iter().map(String::as_str).collect();
                    crate::kernels::ops::window::fused_conv_activation(&ops, n).is_ok()
                })
        }
        "_FusedMatMul" => fusion(node, |ops, n| {
            crate::kernels::ops::fused_matmul::fused_matmul_relu(ops, n).is_ok()
        }),
        "Conv2D"
        | "DepthwiseConv2dNative"
        | "MaxPool"
        | "AvgPool"
        | "Conv2DBackpropInput"
        | "Conv2DBackpropFilter"
        | "MaxPoolGrad"
        | "AvgPoolGrad"
        | "DepthwiseConv2dNativeBackpropInput"
        | "DepthwiseConv2dNativeBackpropFilter" => channels_last,
        "GatherV2" => matches!(
            node.attr.get("batch_dims").and_then(|v| v.value.as_ref()),
            None | Some(attr_value::Value::I(0))
        ),
        "Einsum" => string("equation")
            .and_then(|eq| std::str::from_utf8(eq).ok())
            .and_then(|eq| crate::kernels::ops::einsum::Equation::parse(eq).ok())
            .is_some_and(|eq| eq.lowers()),
        _ => true,
    }
}

/// A fused node's `fused_ops` and `num_args` (TF's defaults: none, 0), as
/// `takes` judges them: what our kernels accept, whoever fused the node
/// (our pass, or TF's remapper on the CPU with other activations).
fn fusion(node: &NodeDef, takes: impl FnOnce(&[String], i64) -> bool) -> bool {
    let ops: Vec<String> = match attr_of(node, "fused_ops") {
        Some(attr_value::Value::List(list)) => list
            .s
            .iter()
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect(),
        _ => Vec::new(),
    };
    let num_args = match attr_of(node, "num_args") {
        Some(attr_value::Value::I(n)) => *n,
        _ => 0,
    };
    takes(&ops, num_args)
}

/// Whether `list` has a kernel for `device_type` whose `T` constraint (if
/// any) allows `float`.
pub fn has_f32_kernel(list: &KernelList, device_type: &str) -> bool {
    list.kernel
        .iter()
        .filter(|kernel| kernel.device_type == device_type)
        .any(|kernel| {
            kernel
                .constraint
                .iter()
                .filter(|constraint| constraint.name == "T")
                .all(|constraint| {
                    let allowed = constraint
                        .allowed_values
                        .as_ref()
                        .and_then(|v| v.value.as_ref());
                    matches!(allowed, Some(attr_value::Value::List(list))
                        if list.r#type.contains(&(DataType::DtFloat as i32)))
                })
        })
}

#[cfg(test)]
mod tests {
    use super::{has_f32_kernel, has_kernel_for, takes_attrs};
    use crate::graph::proto::{
        AttrValue, DataType, KernelDef, KernelList, NodeDef, attr_value, kernel_def::AttrConstraint,
    };

    fn kernel(device: &str, types: Option<&[DataType]>) -> KernelDef {
        let constraint = types.map(|types| AttrConstraint {
            name: "T".into(),
            allowed_values: Some(AttrValue {
                value: Some(attr_value::Value::List(attr_value::ListValue {
                    r#type: types.iter().map(|t| *t as i32).collect(),
                    ..Default::default()
                })),
            }),
        });
        KernelDef {
            op: "_FusedMatMul".into(),
            device_type: device.into(),
            constraint: constraint.into_iter().collect(),
            ..Default::default()
        }
    }

    #[test]
    fn needs_our_device_and_float() {
        let cpu_only = KernelList {
            kernel: vec![kernel("CPU", Some(&[DataType::DtFloat]))],
        };
        assert!(!has_f32_kernel(&cpu_only, "FPGA"));
        let fpga_half = KernelList {
            kernel: vec![kernel("FPGA", Some(&[DataType::DtHalf]))],
        };
        assert!(!has_f32_kernel(&fpga_half, "FPGA"));
        let fpga_float = KernelList {
            kernel: vec![
                kernel("CPU", None),
                kernel("FPGA", Some(&[DataType::DtFloat])),
            ],
        };
        assert!(has_f32_kernel(&fpga_float, "FPGA"));
        let unconstrained = KernelList {
            kernel: vec![kernel("FPGA", None)],
        };
        assert!(has_f32_kernel(&unconstrained, "FPGA"));
        assert!(!has_f32_kernel(&KernelList::default(), "FPGA"));
    }

    #[test]
    fn a_node_needs_a_kernel_of_our_type_or_default_that_takes_its_dtype() {
        let with_t = |t: DataType| NodeDef {
            op: "_FusedMatMul".into(),
            attr: [(
                "T".to_string(),
                AttrValue {
                    value: Some(attr_value::Value::Type(t as i32)),
                },
            )]
            .into(),
            ..Default::default()
        };
        let list = KernelList {
            kernel: vec![
                kernel("CPU", None),
                kernel("FPGA", Some(&[DataType::DtFloat])),
            ],
        };
        assert!(has_kernel_for(&list, "FPGA", &with_t(DataType::DtFloat)));
        assert!(!has_kernel_for(&list, "FPGA", &with_t(DataType::DtInt32)));
        assert!(!has_kernel_for(&list, "NPU", &with_t(DataType::DtFloat)));
        let default = KernelList {
            kernel: vec![kernel("DEFAULT", Some(&[DataType::DtInt32]))],
        };
        assert!(has_kernel_for(&default, "NPU", &with_t(DataType::DtInt32)));
        assert!(!has_kernel_for(&default, "NPU", &with_t(DataType::DtHalf)));
        assert!(!has_kernel_for(
            &KernelList::default(),
            "FPGA",
            &with_t(DataType::DtFloat)
        ));
    }

    #[test]
    fn training_batch_norm_and_channels_first_are_not_ours() {
        let node = |op: &str, attrs: &[(&str, attr_value::Value)]| NodeDef {
            op: op.into(),
            attr: attrs
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        AttrValue {
                            value: Some(v.clone()),
                        },
                    )
                })
                .collect(),
            ..Default::default()
        };
        let training = |b| ("is_training", attr_value::Value::B(b));
        let format = |f: &str| ("data_format", attr_value::Value::S(f.as_bytes().to_vec()));
        assert!(takes_attrs(&node("FusedBatchNormV3", &[training(false)])));
        assert!(!takes_attrs(&node("FusedBatchNormV3", &[training(true)])));
        assert!(
            !takes_attrs(&node("FusedBatchNormV3", &[])),
            "the op's default is training"
        );
        assert!(!takes_attrs(&node(
            "FusedBatchNormV3",
            &[training(false), format("NCHW")]
        )));
        assert!(takes_attrs(&node("Conv2D", &[format("NHWC")])));
        let batch_dims = |b| ("batch_dims", attr_value::Value::I(b));
        assert!(takes_attrs(&node("GatherV2", &[batch_dims(0)])));
        assert!(takes_attrs(&node("GatherV2", &[])));
        assert!(!takes_attrs(&node("GatherV2", &[batch_dims(1)])));
        let equation = |e: &str| ("equation", attr_value::Value::S(e.as_bytes().to_vec()));
        assert!(takes_attrs(&node("Einsum", &[equation("bij,bjk->bik")])));
        assert!(!takes_attrs(&node("Einsum", &[equation("ii->i")])));
        assert!(!takes_attrs(&node("Einsum", &[equation("ij,jk,kl->il")])));
        assert!(!takes_attrs(&node("MaxPool", &[format("NCHW")])));
        assert!(takes_attrs(&node("MatMul", &[])));
    }

    /// TF's remapper fuses on the CPU with activations our kernels lack; the
    /// pass must not move those nodes to our device.
    #[test]
    fn fused_nodes_are_ours_only_with_the_fusions_our_kernels_run() {
        let fused = |op: &str, ops: &[&str], num_args: i64| {
            let mut node = NodeDef {
                op: op.into(),
                ..Default::default()
            };
            let list = attr_value::ListValue {
                s: ops.iter().map(|o| o.as_bytes().to_vec()).collect(),
                ..Default::default()
            };
            node.attr.insert(
                "fused_ops".into(),
                AttrValue {
                    value: Some(attr_value::Value::List(list)),
                },
            );
            node.attr.insert(
                "num_args".into(),
                AttrValue {
                    value: Some(attr_value::Value::I(num_args)),
                },
            );
            node
        };
        assert!(takes_attrs(&fused("_FusedConv2D", &["BiasAdd", "Relu"], 1)));
        assert!(takes_attrs(&fused(
            "_FusedConv2D",
            &["BiasAdd", "Relu6"],
            1
        )));
        assert!(!takes_attrs(&fused(
            "_FusedConv2D",
            &["BiasAdd", "LeakyRelu"],
            1
        )));
        assert!(!takes_attrs(&fused(
            "_FusedConv2D",
            &["FusedBatchNorm", "Relu"],
            4
        )));
        assert!(!takes_attrs(&fused(
            "_FusedConv2D",
            &["BiasAdd", "Add", "Relu"],
            2
        )));
        assert!(takes_attrs(&fused("_FusedMatMul", &["BiasAdd"], 1)));
        assert!(!takes_attrs(&fused(
            "_FusedMatMul",
            &["BiasAdd", "GeluApproximate"],
            1
        )));
        assert!(!takes_attrs(&fused("_FusedMatMul", &["BiasAdd"], 2)));
    }
}

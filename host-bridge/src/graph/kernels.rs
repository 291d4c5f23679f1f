//! Reading TF's `KernelList` (from `TF_GetRegisteredKernelsForOp`).

use super::proto::{DataType, KernelList, attr_value};

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
    use super::has_f32_kernel;
    use crate::graph::proto::{
        AttrValue, DataType, KernelDef, KernelList, attr_value, kernel_def::AttrConstraint,
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
}

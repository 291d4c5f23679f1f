//! `_FusedMatMul` (what the graph pass and TF's remapper write): `MatMul`,
//! then `+ bias`, then optionally `Relu`; `fused_ops` `[BiasAdd]` or
//! `[BiasAdd, Relu]`, `num_args` 1.

use super::kernel::{Op, is_empty};
use super::matmul::Transposes;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::shapes;
use crate::kernels::tf::{Construction, Context};
use std::ffi::CStr;
use tensorplug_core::accelerator::OpKind;

/// The `_FusedMatMul` kernel.
pub struct FusedMatMul;

/// Its attributes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Attrs {
    transposes: Transposes,
    relu: bool,
}

impl Op for FusedMatMul {
    type Attrs = Attrs;

    fn op(&self) -> &'static CStr {
        c"_FusedMatMul"
    }

    fn family(&self) -> Option<OpKind> {
        Some(OpKind::FusedMatMul {
            transpose_a: false,
            transpose_b: false,
            relu: false,
        })
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<Attrs> {
        let transposes = Transposes::read(ctx)?;
        let relu = fused_matmul_relu(
            &ctx.string_list_attr(c"fused_ops")?,
            i64::from(ctx.int_attr(c"num_args")?),
        )?;
        Ok(Attrs { transposes, relu })
    }

    fn compute(&self, attrs: &Attrs, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let t = attrs.transposes;
        let (a, b, bias) = (
            ctx.input(0, false)?,
            ctx.input(1, false)?,
            ctx.input(2, false)?,
        );
        let (sa, sb, s_bias) = (a.shape()?, b.shape()?, bias.shape()?);
        let out_shape = shapes::matmul(&sa, &sb, t.a, t.b)?;
        shapes::bias(&out_shape, &s_bias)?;
        let out = ctx.output(&out_shape, &[])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let inputs = [
            run.desc(&a, sa)?,
            run.desc(&b, sb)?,
            run.desc(&bias, s_bias)?,
        ];
        let kind = OpKind::FusedMatMul {
            transpose_a: t.a,
            transpose_b: t.b,
            relu: attrs.relu,
        };
        run.launch(kind, &inputs, run.desc(&out, out_shape)?)
    }
}

/// `fused_ops` and `num_args` → whether a ReLU follows the bias, or why
/// the device does not fuse them. The graph pass asks too, before it puts
/// such a node on the device (`graph::kernel_list`).
pub(crate) fn fused_matmul_relu(fused_ops: &[String], num_args: i64) -> KernelResult<bool> {
    let relu = fused_relu(fused_ops)?;
    if num_args != 1 {
        return Err(Failure::unimplemented(format!(
            "num_args = {num_args} (the device fuses one bias)"
        )));
    }
    Ok(relu)
}

/// `fused_ops` → whether a ReLU follows the bias.
fn fused_relu(fused_ops: &[String]) -> KernelResult<bool> {
    match fused_ops {
        [bias] if bias == "BiasAdd" => Ok(false),
        [bias, relu] if bias == "BiasAdd" && relu == "Relu" => Ok(true),
        other => Err(Failure::unimplemented(format!(
            "fused_ops {other:?} (the device fuses [BiasAdd] and [BiasAdd, Relu])"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fused_ops_accepted_are_the_device_ones() {
        let list = |ops: &[&str]| ops.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(fused_relu(&list(&["BiasAdd"])), Ok(false));
        assert_eq!(fused_relu(&list(&["BiasAdd", "Relu"])), Ok(true));
        let error = fused_relu(&list(&["BiasAdd", "Relu6"])).unwrap_err();
        assert_eq!(error.code, tensorplug_abi::tf::TF_UNIMPLEMENTED);
        assert!(error.cause.contains("Relu6"));
        assert!(fused_relu(&[]).is_err());
    }
}

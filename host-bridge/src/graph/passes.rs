//! The graph optimizer as one list of passes ([`PASSES`]) over one
//! [`Context`]: the graph, the nodes to preserve, our device type, the
//! settings and what TF has registered. `optimize_func` runs the list with
//! TF's registry; [`rewrite`](super::rewrite) and the `graph_pass` fuzz
//! target run the same list with [`Declared`], a registry they describe.

use super::context::Context;
use super::fuse::{FUSED_CONV_OP, FUSED_OP, Heads};
use super::proto::{DataType, attr_value};
use crate::error::Result;
use crate::log;
use std::collections::BTreeSet;
use std::sync::Mutex;

/// One step of the optimizer.
pub trait Pass: Sync {
    /// Its name, for the logs and the docs.
    fn name(&self) -> &'static str;
    /// Rewrites `cx.graph`; returns how many changes it made (0: the graph
    /// is as it was).
    fn run(&self, cx: &mut Context<'_>) -> Result<usize>;
}

/// Every pass, in the order they run (`docs/graph-optimizer.md`).
pub static PASSES: &[&dyn Pass] = &[
    &SessionVariables,
    &VariableUpdates,
    &HostCopies,
    &UnfuseBatchNorms,
    &UnfuseActivations,
    &HalfPrecision,
    &Qat,
    &FoldBatchNorms,
    &FuseChains,
    &Programs,
    &ListGradients,
    &KeepRunnable,
    &Fallbacks,
];

/// Runs [`PASSES`] on `cx`; returns how many changes they made.
pub fn run_passes(cx: &mut Context<'_>) -> Result<usize> {
    let mut changes = 0;
    for pass in PASSES {
        changes += pass.run(cx).inspect_err(|e| {
            log::warn(format_args!("graph pass \"{}\" failed: {e}", pass.name()));
        })?;
    }
    Ok(changes)
}

struct SessionVariables;
impl Pass for SessionVariables {
    fn name(&self) -> &'static str {
        "TF1 session variables stay on the host"
    }
    fn run(&self, cx: &mut Context<'_>) -> Result<usize> {
        Ok(super::session_variables::keep_session_variables_on_host(
            &mut cx.graph,
            cx.device,
        ))
    }
}

struct VariableUpdates;
impl Pass for VariableUpdates {
    fn name(&self) -> &'static str {
        "variable updates split into a read, the arithmetic and an assign"
    }
    fn run(&self, cx: &mut Context<'_>) -> Result<usize> {
        let Context {
            graph,
            device,
            registry,
            ..
        } = cx;
        Ok(super::assign::split_variable_updates(
            graph,
            device,
            |op, dtype| dtype == DataType::DtFloat as i32 && registry.registered(op, device),
        ))
    }
}

struct HostCopies;
impl Pass for HostCopies {
    fn name(&self) -> &'static str {
        "copies between host tensors run on the host"
    }
    fn run(&self, cx: &mut Context<'_>) -> Result<usize> {
        Ok(super::host_copy::run_on_host_copies(
            &mut cx.graph,
            cx.device,
        ))
    }
}

struct UnfuseBatchNorms;
impl Pass for UnfuseBatchNorms {
    fn name(&self) -> &'static str {
        "TF's _FusedBatchNormEx on our device split back"
    }
    fn run(&self, cx: &mut Context<'_>) -> Result<usize> {
        Ok(super::unfuse::unfuse_batch_norms(
            &mut cx.graph,
            cx.preserve,
            cx.device,
        ))
    }
}

struct UnfuseActivations;
impl Pass for UnfuseActivations {
    fn name(&self) -> &'static str {
        "TF's fused activations on our device split back"
    }
    fn run(&self, cx: &mut Context<'_>) -> Result<usize> {
        let (device, registry) = (cx.device, &mut *cx.registry);
        Ok(super::unfuse::unfuse_activations(
            &mut cx.graph,
            device,
            |op| registry.registered(op, device),
        ))
    }
}

struct HalfPrecision;
impl Pass for HalfPrecision {
    fn name(&self) -> &'static str {
        "bfloat16 and float16 ops lowered to float32 on our device"
    }
    fn run(&self, cx: &mut Context<'_>) -> Result<usize> {
        if !cx.settings.half || !half_casts(cx) {
            return Ok(0);
        }
        // Chains TF's CPU would fuse in the half type round once there;
        // fused here, they round once on our device too.
        let half = super::half::fused_by_tf_on_this_cpu();
        let heads = heads(cx);
        let fusions =
            super::fuse::fuse_chains(&mut cx.graph, cx.preserve, cx.device, heads, &half)?;
        cx.fusions += fusions;
        let Context {
            graph,
            preserve,
            device,
            registry,
            ..
        } = cx;
        let lowered = super::half::lower_half_precision(graph, preserve, device, |node| {
            Context::runs(&mut **registry, device, node)
        });
        Ok(fusions.count() + lowered)
    }
}

/// Whether our device has the `Cast` kernels the half-precision lowering
/// adds (float32 from and to bfloat16).
fn half_casts(cx: &mut Context<'_>) -> bool {
    let Some(list) = cx.registry.kernels("Cast") else {
        return false;
    };
    let bf16 = DataType::DtBfloat16 as i32;
    list.kernel.iter().any(|k| {
        k.device_type == cx.device
            && k.constraint.iter().any(|c| {
                c.name == "SrcT"
                    && matches!(
                        c.allowed_values.as_ref().and_then(|v| v.value.as_ref()),
                        Some(attr_value::Value::List(l)) if l.r#type.contains(&bf16)
                    )
            })
    })
}

struct Qat;
impl Pass for Qat {
    fn name(&self) -> &'static str {
        "QAT and QDQ graphs rewritten into int8 device ops"
    }
    fn run(&self, cx: &mut Context<'_>) -> Result<usize> {
        use crate::kernels::ops::int8::op_name;
        // The device's int8 ops (its devices declare them) and the CPU
        // parameter ops.
        let registered = cx.has(op_name(cx.device, "Conv2DInt8").to_str().unwrap_or(""))
            && cx.registry.registered(
                op_name(cx.device, crate::kernels::qat::WEIGHTS)
                    .to_str()
                    .unwrap_or(""),
                "CPU",
            );
        if !cx.settings.int8 || !registered {
            return Ok(0);
        }
        let count = super::qat::emit::rewrite_qat(&mut cx.graph, cx.preserve, cx.device);
        // One crossing for the parameters' CPU inputs, when the packed
        // forms are registered.
        let packed = format!(
            "{}{}",
            crate::kernels::qat::WEIGHTS,
            crate::kernels::qat::PACKED
        );
        let pack = crate::kernels::qat::PACK;
        if count > 0
            && cx.has(op_name(cx.device, &packed).to_str().unwrap_or(""))
            && cx
                .registry
                .registered(op_name(cx.device, pack).to_str().unwrap_or(""), "CPU")
        {
            super::qat::pack::pack_host_inputs(&mut cx.graph, cx.device);
        }
        Ok(count)
    }
}

struct FoldBatchNorms;
impl Pass for FoldBatchNorms {
    fn name(&self) -> &'static str {
        "inference batch norms folded into the convolution or matmul before them"
    }
    fn run(&self, cx: &mut Context<'_>) -> Result<usize> {
        if !cx.settings.fusion || !cx.has("BiasAdd") {
            return Ok(0);
        }
        Ok(super::fold::fold_batch_norms(
            &mut cx.graph,
            cx.preserve,
            cx.device,
        ))
    }
}

struct FuseChains;
impl Pass for FuseChains {
    fn name(&self) -> &'static str {
        "MatMul/Conv2D → BiasAdd (→ Relu) chains fused"
    }
    fn run(&self, cx: &mut Context<'_>) -> Result<usize> {
        let f32 = [DataType::DtFloat];
        let heads = heads(cx);
        let fusions = super::fuse::fuse_chains(&mut cx.graph, cx.preserve, cx.device, heads, &f32)?;
        cx.fusions += fusions;
        Ok(fusions.count())
    }
}

/// The chain heads whose fused kernels our device has, if fusion is on.
fn heads(cx: &mut Context<'_>) -> Heads {
    Heads {
        matmul: cx.settings.fusion && fused_kernel(cx, FUSED_OP, "MatMul", "MatMul/BiasAdd/Relu"),
        conv2d: cx.settings.fusion
            && fused_kernel(cx, FUSED_CONV_OP, "Conv2D", "Conv2D/BiasAdd/Relu(6)"),
    }
}

/// Whether TF has a `fused` kernel (`_FusedMatMul`, `_FusedConv2D`) for our
/// device type; without one the rewrite would make the graph fail, so it
/// is skipped (and said once per op, only to a device that has the chain's
/// `head` op: one that never declared it has nothing to fuse).
fn fused_kernel(cx: &mut Context<'_>, fused: &str, head: &str, chain: &str) -> bool {
    static WARNED: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let registered = cx.has(fused);
    if !registered && cx.has(head) {
        let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
        if !warned.iter().any(|w| w == fused) {
            warned.push(fused.to_owned());
            log::warn(format_args!(
                "no {fused} kernel for {} is registered: {chain} stay unfused",
                cx.device
            ));
        }
    }
    registered
}

struct Programs;
impl Pass for Programs {
    fn name(&self) -> &'static str {
        "device segments become program nodes"
    }
    fn run(&self, cx: &mut Context<'_>) -> Result<usize> {
        use crate::kernels::program::SUFFIX;
        let op = crate::kernels::ops::int8::op_name(cx.device, SUFFIX)
            .to_str()
            .unwrap_or("");
        if !cx.settings.programs || !cx.has(op) {
            return Ok(0);
        }
        let deferred = super::program_defer::defer_constant_work(&mut cx.graph, cx.device);
        let decisions =
            super::programs::form_programs(&mut cx.graph, cx.preserve, cx.device, op, &deferred);
        super::programs::report(&decisions)?;
        Ok(decisions
            .iter()
            .filter(|d| matches!(d, super::programs::Decision::Program { .. }))
            .count())
    }
}

struct ListGradients;
impl Pass for ListGradients {
    fn name(&self) -> &'static str {
        "a while loop's list gradients accumulated in place on our device, lists nobody reads removed, its int32 lists on the host"
    }
    fn run(&self, cx: &mut Context<'_>) -> Result<usize> {
        if !cx.settings.list_grads {
            return Ok(0);
        }
        let Context {
            graph,
            preserve,
            device,
            registry,
            ..
        } = cx;
        let sums = super::list_grads::accumulate_in_place(graph, preserve, device, |node| {
            Context::runs(&mut **registry, device, node)
        });
        let zeros = super::list_zeros::zeros_of_read_only_lists(graph, preserve, device, |node| {
            Context::runs(&mut **registry, device, node)
        });
        let dead = super::list_dead::remove_dead_lists(graph, preserve);
        let on_host = super::list_host::keep_int_lists_on_host(graph, preserve, device);
        Ok(sums + zeros + dead + on_host)
    }
}

struct KeepRunnable;
impl Pass for KeepRunnable {
    fn name(&self) -> &'static str {
        "nodes TF left on our device without a kernel moved to the CPU"
    }
    fn run(&self, cx: &mut Context<'_>) -> Result<usize> {
        let float_add = cx.has("AddV2");
        let Context {
            graph,
            device,
            registry,
            ..
        } = cx;
        let changes = super::runnable::keep_runnable(
            graph,
            device,
            |node| Context::runs(&mut **registry, device, node),
            float_add,
        );
        report_moves(&changes.moved, device);
        Ok(changes.addn_split + changes.moved.len())
    }
}

/// Says once per op type that TF's passes left it on our device with no
/// kernel there, so it runs on the CPU.
fn report_moves(moved: &[(String, String)], device: &str) {
    static SAID: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let Ok(mut said) = SAID.lock() else { return };
    for (op, node) in moved {
        if said.insert(op.clone()) {
            log::warn(format_args!(
                "{op} node '{node}' is on {device}, which has no {op} kernel for its \
                 attributes: it runs on the CPU (said once per op type)"
            ));
        }
    }
}

struct Fallbacks;
impl Pass for Fallbacks {
    fn name(&self) -> &'static str {
        "the fallback report: float ops on the CPU our device cannot run"
    }
    fn run(&self, cx: &mut Context<'_>) -> Result<usize> {
        super::fallback::report(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::PASSES;

    /// `docs/graph-optimizer.md`'s table lists the passes in their order.
    #[test]
    fn the_docs_list_every_pass_in_order() {
        let docs = include_str!("../../../docs/graph-optimizer.md");
        let listed: Vec<&str> = docs
            .lines()
            .filter_map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                (cells.len() == 5 && cells[1].parse::<usize>().is_ok()).then(|| cells[2])
            })
            .collect();
        let names: Vec<&str> = PASSES.iter().map(|p| p.name()).collect();
        assert_eq!(listed, names);
    }
}

//! The ops TF colocates with a resource variable and gives no kernel for a
//! pluggable device: every op of TF's registry (2.15–2.21) that takes a
//! variable's resource handle and has a CPU kernel but none for
//! `DEVICE_DEFAULT` (`tests/python/tf_variable_ops.py` lists the registry
//! against this table). TF must run each where its variable lives, so a
//! variable on our device makes the whole step fail placement unless our
//! device has a kernel for it.
//!
//! Our C API kernels cannot reach a variable's tensor (the wheels export no
//! `kernels_experimental.h`, FACTS.md), so each gets a kernel that refuses
//! eagerly ([`crate::kernels`]) and, inside a `tf.function`, the graph pass
//! runs it on the CPU against a copy of its variables (`graph/host_copy.rs`).
//! `docs/ops.md`, "Variables and training".

/// Where a variable's element type comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// The node's `type` attr of this name.
    Attr(&'static str),
    /// Always `int64`: a random generator's state.
    Int64,
}

/// One op of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VariableOp {
    /// TF's op name.
    pub name: &'static str,
    /// Positions of the variables among the node's inputs (each op has
    /// fixed arity, so a position is an input slot).
    pub variables: &'static [usize],
    /// The element type of its variables.
    pub dtype: Dtype,
    /// Whether the op writes its variables.
    pub writes: bool,
    /// The element type of its one output, if it has one.
    pub output: Option<Dtype>,
    /// TF registers a `DEVICE_DEFAULT` kernel for `DT_VARIANT` variables of
    /// this op: ours takes every other type and leaves that one to TF.
    pub default_for_variant: bool,
}

const T: Dtype = Dtype::Attr("T");
const DTYPE: Dtype = Dtype::Attr("dtype");

/// An optimizer's fused update (`ResourceApply*`, `ResourceSparseApply*`):
/// writes `n` variables of type `T`, the first `n` inputs.
const fn apply(name: &'static str, n: usize) -> VariableOp {
    const SLOTS: [usize; 4] = [0, 1, 2, 3];
    VariableOp {
        name,
        variables: SLOTS.split_at(n).0,
        dtype: T,
        writes: true,
        output: None,
        default_for_variant: false,
    }
}

/// An op on one variable, its first input.
const fn one(name: &'static str, dtype: Dtype, writes: bool, output: Option<Dtype>) -> VariableOp {
    VariableOp {
        name,
        variables: &[0],
        dtype,
        writes,
        output,
        default_for_variant: false,
    }
}

/// A scatter into one variable of type `dtype_attr`.
const fn scatter(name: &'static str, dtype: Dtype) -> VariableOp {
    one(name, dtype, true, None)
}

/// A random op drawing from (and advancing) a generator's `int64` state.
const fn random(name: &'static str, output: Option<Dtype>) -> VariableOp {
    one(name, Dtype::Int64, true, output)
}

/// The table, in TF's registry order.
pub const VARIABLE_OPS: &[VariableOp] = &[
    apply("ResourceApplyAdaMax", 3),
    apply("ResourceApplyAdadelta", 3),
    apply("ResourceApplyAdagrad", 2),
    apply("ResourceApplyAdagradDA", 3),
    apply("ResourceApplyAdagradV2", 2),
    apply("ResourceApplyAdam", 3),
    apply("ResourceApplyAdamWithAmsgrad", 4),
    apply("ResourceApplyAddSign", 2),
    apply("ResourceApplyCenteredRMSProp", 4),
    apply("ResourceApplyFtrl", 3),
    apply("ResourceApplyFtrlV2", 3),
    apply("ResourceApplyGradientDescent", 1),
    apply("ResourceApplyKerasMomentum", 2),
    apply("ResourceApplyMomentum", 2),
    apply("ResourceApplyPowerSign", 2),
    apply("ResourceApplyProximalAdagrad", 2),
    apply("ResourceApplyProximalGradientDescent", 1),
    apply("ResourceApplyRMSProp", 3),
    one("ResourceCountUpTo", T, true, Some(T)),
    VariableOp {
        default_for_variant: true,
        ..one("ResourceGather", DTYPE, false, Some(DTYPE))
    },
    one("ResourceGatherNd", DTYPE, false, Some(DTYPE)),
    scatter("ResourceScatterAdd", DTYPE),
    scatter("ResourceScatterDiv", DTYPE),
    scatter("ResourceScatterMax", DTYPE),
    scatter("ResourceScatterMin", DTYPE),
    scatter("ResourceScatterMul", DTYPE),
    scatter("ResourceScatterNdAdd", T),
    scatter("ResourceScatterNdMax", T),
    scatter("ResourceScatterNdMin", T),
    scatter("ResourceScatterNdSub", T),
    scatter("ResourceScatterNdUpdate", T),
    scatter("ResourceScatterSub", DTYPE),
    VariableOp {
        default_for_variant: true,
        ..scatter("ResourceScatterUpdate", DTYPE)
    },
    apply("ResourceSparseApplyAdadelta", 3),
    apply("ResourceSparseApplyAdagrad", 2),
    apply("ResourceSparseApplyAdagradDA", 3),
    apply("ResourceSparseApplyAdagradV2", 2),
    apply("ResourceSparseApplyCenteredRMSProp", 4),
    apply("ResourceSparseApplyFtrl", 3),
    apply("ResourceSparseApplyFtrlV2", 3),
    apply("ResourceSparseApplyKerasMomentum", 2),
    apply("ResourceSparseApplyMomentum", 2),
    apply("ResourceSparseApplyProximalAdagrad", 2),
    apply("ResourceSparseApplyProximalGradientDescent", 1),
    apply("ResourceSparseApplyRMSProp", 3),
    scatter("ResourceStridedSliceAssign", T),
    random("RngReadAndSkip", Some(Dtype::Int64)),
    random("RngSkip", None),
    random("StatefulRandomBinomial", Some(DTYPE)),
    random("StatefulStandardNormal", Some(DTYPE)),
    random("StatefulStandardNormalV2", Some(DTYPE)),
    random("StatefulTruncatedNormal", Some(DTYPE)),
    random("StatefulUniform", Some(DTYPE)),
    random("StatefulUniformFullInt", Some(DTYPE)),
    random("StatefulUniformInt", Some(DTYPE)),
];

/// The table's entry for `op`.
pub fn find(op: &str) -> Option<&'static VariableOp> {
    VARIABLE_OPS.iter().find(|entry| entry.name == op)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_sorted() {
        for pair in VARIABLE_OPS.windows(2) {
            assert!(
                pair[0].name < pair[1].name,
                "{} {}",
                pair[0].name,
                pair[1].name
            );
        }
    }

    #[test]
    fn fused_updates_write_their_leading_inputs() {
        let adam = find("ResourceApplyAdam").unwrap();
        assert_eq!(adam.variables, [0, 1, 2]);
        assert!(adam.writes && adam.output.is_none());
        assert_eq!(
            find("ResourceSparseApplyCenteredRMSProp")
                .unwrap()
                .variables,
            [0, 1, 2, 3]
        );
        let gather = find("ResourceGather").unwrap();
        assert!(!gather.writes && gather.default_for_variant);
        assert_eq!(find("RngReadAndSkip").unwrap().dtype, Dtype::Int64);
        assert!(find("ReadVariableOp").is_none());
    }
}

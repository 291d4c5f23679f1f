//! What every pass needs: the graph's [`Context`], TF's kernel [`Registry`]
//! and the optimizer's [`Settings`]. A leaf the passes import.

use super::fuse::Fusions;
use super::kernel_list::{has_kernel_for, takes_attrs};
use super::proto::{GraphDef, KernelList, NodeDef};
use crate::error::Result;
use crate::settings;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

/// What TF has registered, as the passes ask it.
pub trait Registry {
    /// Whether TF has an `op` kernel for a `device` device.
    fn registered(&mut self, op: &str, device: &str) -> bool;
    /// TF's kernel list for `op`; `None` when TF lists none (a function
    /// call node, whose "op" is a function name) or cannot list it.
    fn kernels(&mut self, op: &str) -> Option<KernelList>;
}

/// A registry that holds exactly the kernels it is told: `ops` on every
/// device, and no kernel lists (every node counts as runnable where TF
/// put it). What `rewrite` and the fuzz target run the passes with.
#[cfg(any(test, feature = "internals"))]
pub struct Declared(pub &'static [&'static str]);

#[cfg(any(test, feature = "internals"))]
impl Registry for Declared {
    fn registered(&mut self, op: &str, _device: &str) -> bool {
        self.0.contains(&op)
    }

    fn kernels(&mut self, _op: &str) -> Option<KernelList> {
        None
    }
}

/// One graph and what every pass needs to know about it.
pub struct Context<'a> {
    pub graph: GraphDef,
    /// Nodes TF fetches: their names and types must stay.
    pub preserve: &'a HashSet<String>,
    /// Our device type (`FPGA`).
    pub device: &'a str,
    pub settings: &'a Settings,
    pub registry: &'a mut dyn Registry,
    /// What the fusion pass fused.
    pub fusions: Fusions,
}

impl Context<'_> {
    /// Whether our device runs `node` as it is: TF lists a kernel for it on
    /// our device type that takes its types, and our kernel takes its
    /// attribute values. An op TF lists no kernel for counts as runnable:
    /// TF places and runs those itself, as without us.
    pub(super) fn runs(registry: &mut dyn Registry, device: &str, node: &NodeDef) -> bool {
        registry
            .kernels(&node.op)
            .filter(|list| !list.kernel.is_empty())
            .is_none_or(|list| has_kernel_for(&list, device, node) && takes_attrs(node))
    }

    /// Whether our device has an `op` kernel (our `AddV2`, `Sub`, `BiasAdd`
    /// are f32 only, and registered only when every device declares them).
    pub(super) fn has(&mut self, op: &str) -> bool {
        self.registry.registered(op, self.device)
    }
}

/// A cache of TF's kernel lists, for registries that ask TF.
#[derive(Default)]
pub struct KernelLists(HashMap<String, Option<KernelList>>);

impl KernelLists {
    /// The list for `op`, fetched with `fetch` the first time.
    pub fn get(
        &mut self,
        op: &str,
        fetch: impl FnOnce(&str) -> Option<KernelList>,
    ) -> Option<KernelList> {
        self.0
            .entry(op.to_owned())
            .or_insert_with(|| fetch(op))
            .clone()
    }
}

/// The optimizer's environment variables.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// Setting `GRAPH_FUSION` (`TENSORPLUG_GRAPH_FUSION=off`) disables the
    /// rewrite (default on).
    pub fusion: bool,
    /// Setting `GRAPH_INT8` (`TENSORPLUG_GRAPH_INT8=off`) disables the int8
    /// rewrite of quantization-aware graphs (default on).
    pub int8: bool,
    /// Setting `GRAPH_HALF` (`TENSORPLUG_GRAPH_HALF=off`) leaves bfloat16
    /// and float16 ops where TF placed them (default on).
    pub half: bool,
    /// Setting `GRAPH_LIST_GRADS` (`TENSORPLUG_GRAPH_LIST_GRADS=off`)
    /// leaves a loop's list gradients to TF's `variant` `AddN` (default on).
    pub list_grads: bool,
    /// Setting `GRAPH_PROGRAMS` (`TENSORPLUG_GRAPH_PROGRAMS=on`) turns
    /// device segments into program nodes (default off).
    pub programs: bool,
    /// Setting `GRAPH_DUMP_DIR`: write every `graph_in`/`graph_out` there.
    pub dump_dir: Option<PathBuf>,
}

impl Settings {
    /// Reads the settings; an unknown `GRAPH_FUSION` value is an error.
    pub fn from_env() -> Result<Self> {
        let fusion = settings::flag(settings::GRAPH_FUSION, true)?;
        let int8 = settings::flag(settings::GRAPH_INT8, true)?;
        let half = settings::flag(settings::GRAPH_HALF, true)?;
        let list_grads = settings::flag(settings::GRAPH_LIST_GRADS, true)?;
        let programs = settings::flag(settings::GRAPH_PROGRAMS, true)?;
        let dump_dir =
            settings::get(settings::GRAPH_DUMP_DIR)?.map(|value| PathBuf::from(value.text));
        Ok(Self {
            fusion,
            int8,
            half,
            list_grads,
            programs,
            dump_dir,
        })
    }
}

#[cfg(any(test, feature = "internals"))]
impl Settings {
    /// Everything on, no dump: what [`rewrite`](super::rewrite) runs with.
    pub(super) fn all_on() -> Self {
        Self {
            fusion: true,
            int8: true,
            half: true,
            list_grads: true,
            programs: true,
            dump_dir: None,
        }
    }
}

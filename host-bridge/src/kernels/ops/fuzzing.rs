//! Entry points for `fuzz`'s `kernel_attrs` target: what the
//! kernels derive from TF's attributes and shapes at construction and
//! compute, run on a fuzzer's values instead of TF's. Not an API.

use super::einsum::Equation;
use super::window::read_attrs;
use super::window_geometry::{Kind, geometry};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::tf::AttrSource;
use std::collections::HashMap;
use std::ffi::CStr;
use tensorplug_core::accelerator::{Shape, Window};

/// Attributes by name, as TF would hand them to a kernel.
#[derive(Clone, Debug, Default)]
pub struct Attrs {
    /// String attributes.
    pub strings: HashMap<String, String>,
    /// List-of-strings attributes.
    pub string_lists: HashMap<String, Vec<String>>,
    /// Int attributes.
    pub ints: HashMap<String, i32>,
    /// List-of-ints attributes.
    pub int_lists: HashMap<String, Vec<i64>>,
}

fn get<T: Clone>(map: &HashMap<String, T>, name: &CStr) -> KernelResult<T> {
    let key = name.to_string_lossy();
    map.get(key.as_ref())
        .cloned()
        .ok_or_else(|| Failure::invalid(format!("no attribute {key}")))
}

impl AttrSource for Attrs {
    fn string(&self, name: &CStr) -> KernelResult<String> {
        get(&self.strings, name)
    }
    fn string_list(&self, name: &CStr) -> KernelResult<Vec<String>> {
        get(&self.string_lists, name)
    }
    fn int(&self, name: &CStr) -> KernelResult<i32> {
        get(&self.ints, name)
    }
    fn int_list(&self, name: &CStr) -> KernelResult<Vec<i64>> {
        get(&self.int_lists, name)
    }
}

/// The forward window ops, by index: Conv2D, _FusedConv2D,
/// DepthwiseConv2dNative, MaxPool, AvgPool.
pub const WINDOW_OPS: [&str; 5] = [
    "Conv2D",
    "_FusedConv2D",
    "DepthwiseConv2dNative",
    "MaxPool",
    "AvgPool",
];

/// The window op `WINDOW_OPS[op]` constructed with `attrs`, over an input
/// of dims `x` (and a filter of dims `filter`): the device's window and
/// the output dims, or the kernel's error.
///
/// # Errors
/// The kernel's, as text.
pub fn window(
    op: usize,
    attrs: &Attrs,
    x: &[u64],
    filter: Option<&[u64]>,
) -> Result<(Window, Vec<u64>), String> {
    let kinds = [
        Kind::Conv,
        Kind::FusedConv,
        Kind::Depthwise,
        Kind::MaxPool,
        Kind::AvgPool,
    ];
    let kind = kinds[op % kinds.len()];
    let text = |f: Failure| format!("{f:?}");
    let a = read_attrs(kind, attrs).map_err(text)?;
    let shape = |d: &[u64]| Shape::new(d).ok_or_else(|| format!("rank {}", d.len()));
    let sx = shape(x)?;
    let sf = filter.map(shape).transpose()?;
    let (window, out) = geometry(kind, &a, &sx, sf.as_ref()).map_err(text)?;
    Ok((window, out.dims().to_vec()))
}

/// `Einsum` constructed with `equation` and lowered for operands of dims
/// `shapes`.
///
/// # Errors
/// The kernel's, as text.
pub fn einsum(equation: &str, shapes: &[&[u64]]) -> Result<(), String> {
    let text = |f: Failure| format!("{f:?}");
    let eq = Equation::parse(equation).map_err(text)?;
    let shapes = shapes
        .iter()
        .map(|d| Shape::new(d).ok_or_else(|| format!("rank {}", d.len())))
        .collect::<Result<Vec<_>, _>>()?;
    eq.plan(&shapes).map(drop).map_err(text)
}

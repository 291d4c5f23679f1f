//! `optimize_func`'s body: bytes in, bytes out, settings from the
//! environment.

#[cfg(any(test, feature = "internals"))]
use super::context::Declared;
use super::context::{Context, KernelLists, Registry, Settings};
use super::fuse::Fusions;
#[cfg(any(test, feature = "internals"))]
use super::fuse::{FUSED_CONV_OP, FUSED_OP};
use super::passes::run_passes;
use super::proto::{GraphDef, KernelList};
use super::tf_grappler;
use crate::error::{Error, Result};
use crate::log;
use prost::Message;
use std::collections::HashSet;
use std::ffi::{CString, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use tensorplug_abi::tf::{TF_Buffer, TF_GrapplerItem};

/// Runs the optimizer's passes on a serialized `GraphDef` for a device of
/// `device_type` that has the fused kernels and `BiasAdd`, as if TF listed
/// no other kernel (the half-precision and QAT passes do nothing, no node
/// moves to the CPU, no fallback is named): what the unit tests and the
/// `graph_pass` fuzz target call. `Ok(None)` when nothing changed, else
/// the new graph's bytes.
#[cfg(any(test, feature = "internals"))]
pub fn rewrite(
    graph_in: &[u8],
    preserve: &HashSet<String>,
    device_type: &str,
) -> Result<(Fusions, Option<Vec<u8>>)> {
    let settings = Settings::all_on();
    let mut registry = Declared(&[FUSED_OP, FUSED_CONV_OP, "BiasAdd"]);
    let mut cx = Context {
        graph: decode(graph_in)?,
        preserve,
        device: device_type,
        settings: &settings,
        registry: &mut registry,
        fusions: Fusions::default(),
    };
    let changes = run_passes(&mut cx)?;
    Ok((cx.fusions, (changes > 0).then(|| cx.graph.encode_to_vec())))
}

/// TF's kernel registry, through grappler's C API; each op's kernel list
/// is fetched once per graph.
#[derive(Default)]
struct TfRegistry(KernelLists);

impl Registry for TfRegistry {
    fn registered(&mut self, op: &str, device: &str) -> bool {
        self.0
            .get(op, fetch_kernels)
            .is_some_and(|list| super::kernel_list::has_f32_kernel(&list, device))
    }

    fn kernels(&mut self, op: &str) -> Option<KernelList> {
        self.0.get(op, fetch_kernels)
    }
}

fn fetch_kernels(op: &str) -> Option<KernelList> {
    CString::new(op)
        .ok()
        .and_then(|op| tf_grappler::kernels_for(&op).ok())
        .filter(|list| !list.kernel.is_empty())
}

fn decode(graph_in: &[u8]) -> Result<GraphDef> {
    GraphDef::decode(graph_in).map_err(|e| {
        Error::InvalidArgument(format!(
            "graph_in ({} bytes) is not a serialized GraphDef: {e}",
            graph_in.len()
        ))
    })
}

/// The whole of `optimize_func`.
///
/// # Safety
/// See [`optimize_graph`](super::optimize_graph).
pub unsafe fn run(
    graph_in: *const TF_Buffer,
    item: *const TF_GrapplerItem,
    graph_out: *mut TF_Buffer,
) -> Result<()> {
    // SAFETY: caller's contract.
    let input = unsafe { buffer_bytes(graph_in) }?;
    if graph_out.is_null() {
        return Err(Error::InvalidArgument(
            "optimize_func got a null graph_out".into(),
        ));
    }
    let settings = Settings::from_env()?;
    // SAFETY: caller's contract.
    let preserve = unsafe { tf_grappler::nodes_to_preserve(item) }?;
    let mut registry = TfRegistry::default();
    let mut cx = Context {
        graph: decode(input)?,
        preserve: &preserve,
        device: crate::identity::device_type(),
        settings: &settings,
        registry: &mut registry,
        fusions: Fusions::default(),
    };
    let output = if run_passes(&mut cx)? > 0 {
        cx.graph.encode_to_vec()
    } else {
        input.to_vec()
    };
    if let Some(dir) = &settings.dump_dir {
        dump(dir, input, &output, &preserve);
    }
    // SAFETY: non-null, TF's buffer (caller's contract).
    unsafe { set_output(graph_out, output) };
    Ok(())
}

/// The bytes of TF's input buffer (empty when `data` is null).
///
/// # Safety
/// `buffer` is null or a live `TF_Buffer` whose `data` holds `length` bytes.
unsafe fn buffer_bytes<'a>(buffer: *const TF_Buffer) -> Result<&'a [u8]> {
    // SAFETY: caller's contract.
    let buffer = unsafe { buffer.as_ref() }
        .ok_or_else(|| Error::InvalidArgument("optimize_func got a null graph_in".into()))?;
    if buffer.data.is_null() {
        return Ok(&[]);
    }
    // SAFETY: caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(buffer.data.cast::<u8>(), buffer.length) })
}

/// Hands `bytes` to TF, which frees them through [`free_output`].
///
/// # Safety
/// `out` is a live `TF_Buffer`.
unsafe fn set_output(out: *mut TF_Buffer, bytes: Vec<u8>) {
    let bytes = bytes.into_boxed_slice();
    let length = bytes.len();
    let data = Box::into_raw(bytes).cast::<u8>();
    // SAFETY: caller's contract.
    let out = unsafe { &mut *out };
    if let Some(previous) = out.data_deallocator.take() {
        // SAFETY: the buffer's own deallocator for its own data.
        unsafe { previous(out.data.cast_mut(), out.length) };
    }
    out.data = data.cast::<c_void>().cast_const();
    out.length = length;
    out.data_deallocator = Some(free_output);
}

/// `data_deallocator` of the buffers [`set_output`] fills.
unsafe extern "C" fn free_output(data: *mut c_void, length: usize) {
    let slice = std::ptr::slice_from_raw_parts_mut(data.cast::<u8>(), length);
    // SAFETY: `set_output` leaked exactly this boxed slice.
    drop(unsafe { Box::from_raw(slice) });
}

/// Writes `<dir>/graph-<pid>-<n>-{in.pb,out.pb,preserve.txt}` (the nodes
/// to preserve, sorted, one per line); failures are only logged.
fn dump(dir: &std::path::Path, input: &[u8], output: &[u8], preserve: &HashSet<String>) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let stem = format!("graph-{}-{n}", std::process::id());
    let mut names: Vec<&str> = preserve.iter().map(String::as_str).collect();
    names.sort_unstable();
    let names = names.join("\n");
    for (suffix, bytes) in [
        ("in.pb", input),
        ("out.pb", output),
        ("preserve.txt", names.as_bytes()),
    ] {
        let path = dir.join(format!("{stem}-{suffix}"));
        if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, bytes)) {
            log::warn(format_args!("cannot dump {}: {e}", path.display()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_buffer_owns_and_frees_its_bytes() {
        let mut buffer = TF_Buffer {
            data: std::ptr::null(),
            length: 0,
            data_deallocator: None,
        };
        // SAFETY: a live local buffer.
        unsafe { set_output(&mut buffer, vec![1, 2, 3]) };
        assert_eq!(buffer.length, 3);
        // SAFETY: set_output stored 3 live bytes.
        let bytes = unsafe { std::slice::from_raw_parts(buffer.data.cast::<u8>(), 3) };
        assert_eq!(bytes, [1, 2, 3]);
        // Replacing frees the previous bytes through their deallocator (Miri/ASan
        // would flag a leak or double free), then TF frees the last ones.
        // SAFETY: as above.
        unsafe { set_output(&mut buffer, Vec::new()) };
        assert_eq!(buffer.length, 0);
        let free = buffer.data_deallocator.expect("deallocator set");
        // SAFETY: what TF_DeleteBuffer does.
        unsafe { free(buffer.data.cast_mut(), buffer.length) };
    }

    #[test]
    fn garbage_is_a_clear_error() {
        let error = rewrite(&[0xff, 0xff, 0xff], &HashSet::new(), "FPGA").unwrap_err();
        assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
        assert!(
            error.to_string().contains("not a serialized GraphDef"),
            "{error}"
        );
    }

    #[test]
    fn empty_graph_is_unchanged() {
        let (fusions, out) = rewrite(&[], &HashSet::new(), "FPGA").unwrap();
        assert!(!fusions.any());
        assert!(out.is_none());
    }
}

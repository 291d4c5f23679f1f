//! `optimize_func`'s body: bytes in, bytes out, settings from the
//! environment.

use super::assign::split_variable_updates;
use super::fold::fold_batch_norms;
use super::fuse::{FUSED_CONV_OP, FUSED_OP, Fusions, Heads, fuse_chains};
use super::half::lower_half_precision;
use super::host_copy::run_on_host_copies;
use super::kernel_list::{has_kernel_for, takes_attrs};
use super::proto::{DataType, GraphDef, KernelList, NodeDef};
use super::qat::rewrite_qat;
use super::runnable::{Changes, keep_runnable};
use super::session_variables::keep_session_variables_on_host;
use super::tf_grappler;
use super::unfuse::unfuse_batch_norms;
use crate::error::{Error, Result};
use crate::log;
use crate::settings;
use prost::Message;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::{CStr, CString, c_void};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tensorplug_abi::tf::{TF_Buffer, TF_GrapplerItem};

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
    /// Setting `GRAPH_DUMP_DIR`: write every `graph_in`/`graph_out` there.
    pub dump_dir: Option<PathBuf>,
}

impl Settings {
    /// Reads the settings; an unknown `GRAPH_FUSION` value is an error.
    pub fn from_env() -> Result<Self> {
        let fusion = settings::flag(settings::GRAPH_FUSION, true)?;
        let int8 = settings::flag(settings::GRAPH_INT8, true)?;
        let half = settings::flag(settings::GRAPH_HALF, true)?;
        let dump_dir =
            settings::get(settings::GRAPH_DUMP_DIR)?.map(|value| PathBuf::from(value.text));
        Ok(Self {
            fusion,
            int8,
            half,
            dump_dir,
        })
    }
}

/// Rewrites a serialized `GraphDef`'s nodes on `device_type` devices:
/// `Ok(None)` when nothing matched (the caller returns the input bytes
/// unchanged), else the new graph's bytes.
pub fn rewrite(
    graph_in: &[u8],
    preserve: &HashSet<String>,
    device_type: &str,
) -> Result<(Fusions, Option<Vec<u8>>)> {
    let mut graph = decode(graph_in)?;
    let folded = fold_batch_norms(&mut graph, preserve, device_type);
    let fusions = fuse_chains(&mut graph, preserve, device_type, Heads::ALL)?;
    Ok((
        fusions,
        (folded > 0 || fusions.any()).then(|| graph.encode_to_vec()),
    ))
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
    let device = crate::backend::device_type();
    let mut graph = decode(input)?;
    let session_moves = keep_session_variables_on_host(&mut graph, device);
    let updates = split_variable_updates(&mut graph, device, |op, dtype| {
        dtype == DataType::DtFloat as i32 && arithmetic_kernel(op, device)
    }) + run_on_host_copies(&mut graph, device);
    let unfused = unfuse_batch_norms(&mut graph, &preserve, device);
    let halves = if settings.half && half_casts_registered(device)? {
        lower_half_precision(&mut graph, &preserve, device, kernel_lookup(device))
    } else {
        0
    };
    let quantized = if settings.int8 && int8_kernels_registered(device)? {
        rewrite_qat(&mut graph, &preserve, device)
    } else {
        0
    };
    let heads = Heads {
        matmul: settings.fusion
            && fused_kernel_registered(FUSED_OP, c"MatMul", "MatMul/BiasAdd/Relu")?,
        conv2d: settings.fusion
            && fused_kernel_registered(FUSED_CONV_OP, c"Conv2D", "Conv2D/BiasAdd/Relu(6)")?,
    };
    let folded = if settings.fusion && arithmetic_kernel("BiasAdd", device) {
        fold_batch_norms(&mut graph, &preserve, device)
    } else {
        0
    };
    let fusions = fuse_chains(&mut graph, &preserve, device, heads)?;
    let changes = keep_runnable(
        &mut graph,
        device,
        kernel_lookup(device),
        arithmetic_kernel("AddV2", device),
    );
    report_moves(&changes, device);
    let failing = report_fallbacks(&mut graph, device)?;
    let changed = changes.addn_split > 0 || !changes.moved.is_empty() || failing;
    let output = if session_moves > 0
        || updates > 0
        || unfused > 0
        || halves > 0
        || quantized > 0
        || folded > 0
        || fusions.any()
        || changed
    {
        graph.encode_to_vec()
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

/// Whether TF has a `fused` kernel (`_FusedMatMul`, `_FusedConv2D`) for our
/// device type; without one the rewrite would make the graph fail, so it
/// is skipped (and said once per op, only to a device that has the chain's
/// `head` op: one that never declared it has nothing to fuse).
fn fused_kernel_registered(fused: &str, head: &CStr, chain: &str) -> Result<bool> {
    static WARNED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let op = CString::new(fused).map_err(|e| Error::Internal(e.to_string()))?;
    let device = crate::backend::device_type();
    let registered = tf_grappler::kernel_registered(&op, device)?;
    let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    if !registered
        && !warned.iter().any(|w| w == fused)
        && tf_grappler::kernel_registered(head, device)?
    {
        warned.push(fused.to_owned());
        log::warn(format_args!(
            "no {fused} kernel for {device} is registered: {chain} stay unfused"
        ));
    }
    Ok(registered)
}

/// Whether our device has the `Cast` kernels the half-precision lowering
/// adds (float32 from and to bfloat16).
fn half_casts_registered(device: &str) -> Result<bool> {
    let Some(list) = tf_grappler::kernels_for(c"Cast").ok() else {
        return Ok(false);
    };
    let bf16 = DataType::DtBfloat16 as i32;
    Ok(list.kernel.iter().any(|k| {
        k.device_type == device
            && k.constraint.iter().any(|c| {
                c.name == "SrcT"
                    && matches!(
                        c.allowed_values.as_ref().and_then(|v| v.value.as_ref()),
                        Some(super::proto::attr_value::Value::List(l)) if l.r#type.contains(&bf16)
                    )
            })
    }))
}

/// Whether the int8 rewrite's ops have kernels: the device's int8 ops (its
/// devices declare them) and the CPU parameter ops.
fn int8_kernels_registered(device: &str) -> Result<bool> {
    use crate::kernels::ops::int8::op_name;
    Ok(
        tf_grappler::kernel_registered(op_name(device, "Conv2DInt8"), device)?
            && tf_grappler::kernel_registered(
                op_name(device, crate::kernels::qat::WEIGHTS),
                "CPU",
            )?,
    )
}

/// `has_kernel` for [`keep_runnable`]: TF's kernel list per op type, fetched
/// once per graph, and the attribute values our kernels take ([`takes_attrs`]). An op TF lists no kernel for on any device (a function
/// call node, whose "op" is a function name) or cannot list counts as
/// runnable: TF places and runs those itself, as without us.
fn kernel_lookup(device: &str) -> impl FnMut(&NodeDef) -> bool + '_ {
    let mut lists: HashMap<String, Option<KernelList>> = HashMap::new();
    move |node| {
        let list = lists.entry(node.op.clone()).or_insert_with(|| {
            CString::new(node.op.as_str())
                .ok()
                .and_then(|op| tf_grappler::kernels_for(&op).ok())
                .filter(|list| !list.kernel.is_empty())
        });
        list.as_ref()
            .is_none_or(|list| has_kernel_for(list, device, node) && takes_attrs(node))
    }
}

/// The fallback report (`fallback`): appends to `TENSORPLUG_FALLBACK_FILE`
/// (whatever the mode), says on stderr once per node, or (`error`) makes
/// the step fail; returns whether it changed the graph.
fn report_fallbacks(graph: &mut GraphDef, device: &str) -> Result<bool> {
    use super::fallback::{Mode, fail_on, fallbacks};
    let mode = Mode::from_env()?;
    let file = settings::get(settings::FALLBACK_FILE)?;
    if mode == Mode::Off && file.is_none() {
        return Ok(false);
    }
    let mut lists: HashMap<String, Option<KernelList>> = HashMap::new();
    let found = fallbacks(graph, device, |op| {
        lists
            .entry(op.to_string())
            .or_insert_with(|| {
                CString::new(op)
                    .ok()
                    .and_then(|op| tf_grappler::kernels_for(&op).ok())
                    .filter(|list| !list.kernel.is_empty())
            })
            .clone()
    });
    if found.is_empty() {
        return Ok(false);
    }
    if let Some(file) = file {
        use std::io::Write;
        let lines: String = found.iter().map(|f| format!("{f}\n")).collect();
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file.text)
            .and_then(|mut out| out.write_all(lines.as_bytes()));
        if let Err(e) = written {
            log::warn(format_args!("{}: {e}", file.var));
        }
    }
    if mode == Mode::Off {
        return Ok(false);
    }
    static SAID: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let new: Vec<String> = {
        let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
        found
            .iter()
            .map(ToString::to_string)
            .filter(|f| said.insert(f.clone()))
            .collect()
    };
    if !new.is_empty() && mode == Mode::Warn {
        log::warn(format_args!(
            "{} float op(s) of a graph on {device} run on the CPU: {} (said once per node; \
             TENSORPLUG_FALLBACK=off silences this, =error fails the step)",
            new.len(),
            new.join(", ")
        ));
    }
    if mode == Mode::Error {
        fail_on(graph, &found, device)?;
        return Ok(true);
    }
    Ok(false)
}

/// Says once per op type that TF's passes left it on our device with no
/// kernel there, so it runs on the CPU.
fn report_moves(changes: &Changes, device: &str) {
    static SAID: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let Ok(mut said) = SAID.lock() else { return };
    for (op, node) in &changes.moved {
        if said.insert(op.clone()) {
            log::warn(format_args!(
                "{op} node '{node}' is on {device}, which has no {op} kernel for its \
                 attributes: it runs on the CPU (said once per op type)"
            ));
        }
    }
}

/// Whether TF has an `op` kernel for our device type (our `AddV2`/`Sub` are
/// f32 only, and registered only when every device declares them).
fn arithmetic_kernel(op: &str, device: &str) -> bool {
    CString::new(op)
        .ok()
        .is_some_and(|op| tf_grappler::kernel_registered(&op, device).unwrap_or(false))
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

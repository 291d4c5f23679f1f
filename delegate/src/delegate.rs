//! The C entry points: `tflite_plugin_create_delegate` /
//! `tflite_plugin_destroy_delegate` (through [`crate::export_delegate!`]),
//! the delegate's `Prepare`, and its kernel's `init`/`free`/`prepare`/
//! `invoke`. No panic crosses them: each body runs under `catch_unwind`
//! and a failure becomes `ReportError` plus an error status (or a null
//! delegate with the reason passed to `report_error`).

use crate::cost::{self, Figures};
use crate::graph::{Graph, report_error};
use crate::kernel::Kernel;
use crate::ops::{DeviceOp, decide, op_name};
use crate::options::{Options, device_item};
use crate::report::{Decision, GraphReport, NodeEntry, Report, TensorEntry};
use crate::shared::{Shared, lock};
use core::ffi::{CStr, c_char, c_int, c_void};
use std::collections::BTreeSet;
use std::ffi::CString;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};
use tensorplug_abi::tflite::{
    TfLiteContext, TfLiteDelegate, TfLiteDelegateParams, TfLiteNode, TfLiteRegistration,
    TfLiteStatus, kTfLiteBuiltinDelegate, kTfLiteDelegateFlagsAllowDynamicTensors,
    kTfLiteDelegateFlagsNone,
};
use tensorplug_core::quant::Rounding;
use tensorplug_host_bridge::prelude::{DynAccelerator, OpenError};

/// What the delegate needs of a vendor's backend (`Backend`'s items).
#[derive(Clone, Copy)]
pub struct Source {
    /// `Backend::open`.
    pub open: fn(&str) -> Result<Box<DynAccelerator>, OpenError>,
    /// `Backend::DEFAULT_DEVICES`.
    pub default_devices: &'static str,
    /// `Backend::DEVICE_KINDS`.
    pub device_kinds: &'static str,
    /// `Backend::DEVICE_TYPE`, for `TENSORPLUG_<TYPE>_DEVICE`.
    pub device_type: &'static CStr,
}

/// What a delegate pointer handed out points to: the C struct first.
#[repr(C)]
struct Owned {
    delegate: TfLiteDelegate,
    shared: Arc<Shared>,
}

/// Delegates handed out and not destroyed yet (destroy is idempotent and
/// ignores a pointer it did not create).
static LIVE: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());

/// The report callback of `tflite_plugin_create_delegate`.
pub type ReportFn = unsafe extern "C" fn(msg: *const c_char);

/// `tflite_plugin_create_delegate`.
///
/// # Safety
/// `keys` and `values` hold `n` C strings each (or `n` is 0); `report` is
/// null or callable with a C string.
pub unsafe fn create(
    source: Source,
    keys: *const *const c_char,
    values: *const *const c_char,
    n: usize,
    report: Option<ReportFn>,
) -> *mut TfLiteDelegate {
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        let pairs = unsafe { read_options(keys, values, n) }?;
        let options = Options::parse(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
        new_delegate(source, options)
    }));
    let error = match result {
        Ok(Ok(delegate)) => return delegate,
        Ok(Err(e)) => e,
        Err(_) => "the delegate panicked while starting (a bug in tensorplug)".to_owned(),
    };
    if let Some(report) = report {
        let msg = CString::new(format!("tensorplug delegate: {error}").replace('\0', " "))
            .unwrap_or_default();
        // SAFETY: the caller's callback with a C string it may copy.
        unsafe { report(msg.as_ptr()) };
    } else {
        eprintln!("tensorplug delegate: {error}");
    }
    core::ptr::null_mut()
}

/// The options as strings. The count is `size_t` in the C header but
/// TF's Python `load_delegate` passes a C `int`: only its low 32 bits are
/// read (`docs/delegate.md`).
///
/// # Safety
/// As [`create`].
unsafe fn read_options(
    keys: *const *const c_char,
    values: *const *const c_char,
    n: usize,
) -> Result<Vec<(String, String)>, String> {
    let n = n as u32 as usize;
    if n > 0 && (keys.is_null() || values.is_null()) {
        return Err(format!("{n} options but null key or value arrays"));
    }
    (0..n)
        .map(|i| {
            // SAFETY: `i < n` entries of each array (caller).
            let (k, v) = unsafe { (*keys.add(i), *values.add(i)) };
            if k.is_null() || v.is_null() {
                return Err(format!("option {i} has a null key or value"));
            }
            // SAFETY: non-null C strings (caller).
            let (k, v) = unsafe { (CStr::from_ptr(k), CStr::from_ptr(v)) };
            Ok((
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            ))
        })
        .collect()
}

fn new_delegate(source: Source, options: Options) -> Result<*mut TfLiteDelegate, String> {
    let (item, device_source) = device_item(
        options.device.as_deref(),
        &source.device_type.to_string_lossy(),
        source.default_devices,
        |var| std::env::var(var).ok(),
    )?;
    let device = (source.open)(&item).map_err(|e| {
        let e = e.to_string();
        match e.contains(source.device_kinds) {
            true => format!("cannot open device `{item}`: {e}"),
            false => format!(
                "cannot open device `{item}`: {e} (device kinds: {})",
                source.device_kinds
            ),
        }
    })?;
    let mut device = device;
    let info = device.info();
    if options.profile_file.is_some() {
        if !info.capabilities.profiling {
            return Err(format!(
                "option `profile_file`: device `{item}` records no events (its capabilities \
                 say profiling: false)"
            ));
        }
        device
            .set_profiling(true)
            .map_err(|e| format!("option `profile_file`: turning profiling on: {e}"))?;
    }
    // A graph with a dynamic tensor needs the flag; without it the runtime
    // re-applies the delegate after a resize (`docs/delegate.md`).
    let flags = match options.allow_dynamic_tensors {
        true => kTfLiteDelegateFlagsAllowDynamicTensors,
        false => kTfLiteDelegateFlagsNone,
    };
    let (fc_rounding, fc_rounding_source) = match options.fc_rounding {
        Some(r) => (r, "the option `fc_rounding`".to_owned()),
        None => match crate::runtime::Runtime::detect() {
            Some(runtime) => (runtime.fc_rounding(), runtime.to_string()),
            None => (
                Rounding::Single,
                "the default (the runtime was not recognized)".to_owned(),
            ),
        },
    };
    let report = Report {
        device: item,
        device_source,
        device_name: info.name.as_str().to_owned(),
        min_nodes: options.min_nodes,
        fc_rounding: match fc_rounding {
            Rounding::Single => "single",
            Rounding::Double => "double",
        },
        fc_rounding_source,
        cost_model: match options.cost.on {
            true => serde_json::Value::Null,
            false => "off".into(),
        },
        graphs: Vec::new(),
    };
    let shared = Arc::new(Shared {
        device: Mutex::new(device),
        capabilities: info.capabilities,
        options,
        fc_rounding,
        report: Mutex::new(report),
        init_error: Mutex::new(None),
        trace: Mutex::new(crate::trace::Trace::new(info.clock_hz)),
        constants: Mutex::new(crate::constants::Constants::default()),
        cost: Mutex::new(None),
    });
    let owned = Box::new(Owned {
        delegate: TfLiteDelegate {
            data_: core::ptr::null_mut(),
            Prepare: Some(delegate_prepare),
            CopyFromBufferHandle: None,
            CopyToBufferHandle: None,
            FreeBufferHandle: None,
            flags,
            opaque_delegate_builder: core::ptr::null_mut(),
        },
        shared,
    });
    let ptr = Box::into_raw(owned);
    // SAFETY: just allocated; `data_` points to the box's own `shared`.
    unsafe { (*ptr).delegate.data_ = (&raw mut (*ptr).shared).cast() };
    lock(&LIVE).insert(ptr as usize);
    Ok(ptr.cast())
}

/// `tflite_plugin_destroy_delegate`: frees a delegate [`create`] made;
/// null, an unknown pointer or a second call does nothing.
///
/// # Safety
/// `delegate` is null or a pointer the runtime got from [`create`].
pub unsafe fn destroy(delegate: *mut TfLiteDelegate) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if lock(&LIVE).remove(&(delegate as usize)) {
            // SAFETY: created by `new_delegate` with `Box::into_raw` and not
            // freed yet (it was in LIVE).
            drop(unsafe { Box::from_raw(delegate.cast::<Owned>()) });
        }
    }));
}

/// The `Arc<Shared>` behind a delegate of ours.
///
/// # Safety
/// `delegate` is null or one of ours, alive.
unsafe fn shared_of(delegate: *const TfLiteDelegate) -> Result<Arc<Shared>, String> {
    if delegate.is_null() || !lock(&LIVE).contains(&(delegate as usize)) {
        return Err("called with a delegate tensorplug did not create (or destroyed)".into());
    }
    // SAFETY: ours and alive: `data_` points to its `Arc<Shared>`.
    Ok(Arc::clone(unsafe {
        &*(*delegate).data_.cast::<Arc<Shared>>()
    }))
}

/// Runs `body` for an entry point: a failure or a panic is reported
/// through the context and becomes `kTfLiteError`.
fn guarded(ctx: *mut TfLiteContext, body: impl FnOnce() -> Result<(), String>) -> TfLiteStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => TfLiteStatus::kTfLiteOk,
        Ok(Err(e)) => {
            report_error(ctx, &format!("tensorplug delegate: {e}"));
            TfLiteStatus::kTfLiteError
        }
        Err(_) => {
            report_error(ctx, "tensorplug delegate: panicked (a bug in tensorplug)");
            TfLiteStatus::kTfLiteError
        }
    }
}

/// `TfLiteDelegate::Prepare`: decides every node, previews the runtime's
/// partitioning, keeps the partitions of at least `min_nodes` nodes and
/// hands them to the device.
unsafe extern "C" fn delegate_prepare(
    ctx: *mut TfLiteContext,
    delegate: *mut TfLiteDelegate,
) -> TfLiteStatus {
    guarded(ctx, || {
        // SAFETY: the runtime passes its live context and our delegate.
        let (graph, shared) = unsafe { (Graph::new(ctx)?, shared_of(delegate)?) };
        graph.check_tensor_layout()?;
        partition(&graph, &shared, delegate)
    })
}

fn partition(
    graph: &Graph,
    shared: &Arc<Shared>,
    delegate: *mut TfLiteDelegate,
) -> Result<(), String> {
    let mut report = GraphReport::default();
    let mut supported = Vec::new();
    for index in graph.plan()? {
        let node = graph.node(index)?;
        let mut folded = None;
        let decision = match decide(graph, &node, &shared.capabilities, shared.fc_rounding) {
            Ok(op) => {
                if let DeviceOp::Folded { value, .. } = op {
                    folded = Some(value);
                }
                supported.push(index);
                Decision::Device {
                    partition: usize::MAX,
                }
            }
            Err(reason) => Decision::Cpu { reason },
        };
        report.nodes.push(NodeEntry {
            index,
            op: op_name(node.builtin_code),
            version: node.version,
            decision,
            device_runs: 0,
            folded,
        });
    }
    for i in 0..graph.tensor_count() {
        let t = graph.tensor(c_int::try_from(i).map_err(|_| "too many tensors")?)?;
        report.tensors.push(TensorEntry {
            index: t.index,
            name: t.name,
            dtype: t.dtype.0,
            dims: t.dims,
            bytes: t.bytes,
            constant: t.constant,
            scale: t.scale,
            zero_point: t.zero_point,
        });
    }
    let min = shared.options.min_nodes;
    let candidates = preview(graph, &supported)?;
    let partitions: Vec<Vec<i32>> = candidates.iter().map(|c| c.nodes.clone()).collect();
    // With `max_partitions`, the largest that many (the first of equals).
    let mut by_size: Vec<usize> = (0..partitions.len()).collect();
    by_size.sort_by_key(|&i| std::cmp::Reverse(partitions[i].len()));
    let max = shared.options.max_partitions.unwrap_or(usize::MAX);
    let allowed: Vec<usize> = by_size
        .into_iter()
        .filter(|&i| partitions[i].len() >= min)
        .take(max)
        .collect();
    let mut costly = cost_reasons(graph, shared, &candidates, &allowed, &mut report);
    let mut kept: Vec<i32> = Vec::new();
    for (i, nodes) in partitions.into_iter().enumerate() {
        let id = report.partitions.len();
        let reason = if nodes.len() < min {
            Some(format!(
                "its partition has {} node(s), fewer than min_nodes={min}",
                nodes.len()
            ))
        } else if !allowed.contains(&i) {
            Some(format!(
                "its partition of {} node(s) is not among the max_partitions={max} largest",
                nodes.len()
            ))
        } else {
            costly.remove(&i)
        };
        for n in report.nodes.iter_mut().filter(|n| nodes.contains(&n.index)) {
            n.decision = match &reason {
                Some(reason) => Decision::Cpu {
                    reason: reason.clone(),
                },
                None => Decision::Device { partition: id },
            };
        }
        if reason.is_none() {
            kept.extend(&nodes);
            report.partitions.push(nodes);
        }
    }
    let graph_id = {
        let mut r = lock(&shared.report);
        r.graphs.push(report);
        r.graphs.len() - 1
    };
    shared.write_report();
    if kept.is_empty() {
        return Ok(());
    }
    *lock(&shared.init_error) = None;
    KERNEL_GRAPH.with(|g| g.set(graph_id));
    let replace = {
        // SAFETY: checked by `Graph::new`.
        let c = unsafe { &*graph.raw() };
        c.ReplaceNodeSubsetsWithDelegateKernels
            .ok_or("ReplaceNodeSubsetsWithDelegateKernels is null")?
    };
    let nodes = IntArray::new(&kept);
    // SAFETY: the runtime's function with its context, a full registration
    // by value, an int array that outlives the call, and our delegate.
    let status = unsafe { replace(graph.raw(), registration(), nodes.as_ptr(), delegate) };
    let failure = match lock(&shared.init_error).take() {
        Some(e) => Some(e),
        None if status != TfLiteStatus::kTfLiteOk => Some(format!(
            "ReplaceNodeSubsetsWithDelegateKernels failed ({status:?})"
        )),
        None => None,
    };
    let Some(e) = failure else {
        return Ok(());
    };
    // The runtime keeps its own plan: the report must not say "device".
    {
        let mut r = lock(&shared.report);
        if let Some(g) = r.graphs.get_mut(graph_id) {
            for n in g.nodes.iter_mut().filter(|n| kept.contains(&n.index)) {
                n.decision = Decision::Cpu {
                    reason: format!("the delegation failed: {e}"),
                };
            }
            g.partitions.clear();
        }
    }
    shared.write_report();
    Err(e)
}

std::thread_local! {
    /// The report graph of the `Prepare` running on this thread, for the
    /// kernels its `ReplaceNodeSubsetsWithDelegateKernels` call creates.
    static KERNEL_GRAPH: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

/// Why the cost model keeps some `allowed` partitions (indices into
/// `candidates`, the largest first) on the CPU; every judged partition
/// goes into the report's `partition_costs`. The largest is always kept.
fn cost_reasons(
    graph: &Graph,
    shared: &Shared,
    candidates: &[Candidate],
    allowed: &[usize],
    report: &mut GraphReport,
) -> std::collections::BTreeMap<usize, String> {
    let mut reasons = std::collections::BTreeMap::new();
    if !shared.options.cost.on || allowed.len() < 2 {
        return reasons;
    }
    let figures = {
        let mut device = lock(&shared.device);
        let mut cached = lock(&shared.cost);
        match *cached {
            Some(f) => Ok(f),
            None => Figures::get(&shared.options.cost, &mut **device, crate::kernel::QUEUE)
                .inspect(|f| *cached = Some(*f)),
        }
    };
    let figures = match figures {
        Ok(f) => f,
        Err(e) => {
            // A device the probe cannot measure (a copy it refuses) keeps
            // every partition; the report says why.
            lock(&shared.report).cost_model = serde_json::json!({ "error": e });
            return reasons;
        }
    };
    lock(&shared.report).cost_model = figures.to_json();
    for (rank, &i) in allowed.iter().enumerate() {
        let c = &candidates[i];
        let work = cost::work(graph, &c.nodes, &c.inputs, &c.outputs);
        let estimate = cost::judge(&figures, &work);
        let decision = if rank == 0 {
            "device (the largest partition)"
        } else if estimate.pays() {
            "device"
        } else {
            reasons.insert(i, cost::reason(&work, &estimate, &figures));
            "cpu"
        };
        report
            .partition_costs
            .push(cost::entry(&c.nodes, &work, &estimate, decision));
    }
    reasons
}

/// One partition the runtime would make: its nodes, and the tensors that
/// cross its boundary.
struct Candidate {
    nodes: Vec<i32>,
    inputs: Vec<i32>,
    outputs: Vec<i32>,
}

/// The runtime's partitions of `nodes` (`PreviewDelegatePartitioning`).
fn preview(graph: &Graph, nodes: &[i32]) -> Result<Vec<Candidate>, String> {
    if nodes.is_empty() {
        return Ok(Vec::new());
    }
    // SAFETY: checked by `Graph::new`.
    let c = unsafe { &*graph.raw() };
    let preview = c
        .PreviewDelegatePartitioning
        .ok_or("PreviewDelegatePartitioning is null")?;
    let array = IntArray::new(nodes);
    let mut params: *mut TfLiteDelegateParams = core::ptr::null_mut();
    let mut count: c_int = 0;
    // SAFETY: the runtime's function with its context, our array and out
    // pointers; it owns the returned params until the next call.
    let status = unsafe { preview(graph.raw(), array.as_ptr(), &mut params, &mut count) };
    if status != TfLiteStatus::kTfLiteOk {
        return Err(format!("PreviewDelegatePartitioning failed ({status:?})"));
    }
    let count = usize::try_from(count).unwrap_or(0);
    if count > 0 && params.is_null() {
        return Err("PreviewDelegatePartitioning returned null partitions".into());
    }
    Ok((0..count)
        .map(|i| {
            // SAFETY: `count` params owned by the runtime, and their arrays.
            unsafe {
                let p = &*params.add(i);
                Candidate {
                    nodes: crate::graph::int_array(p.nodes_to_replace),
                    inputs: crate::graph::int_array(p.input_tensors),
                    outputs: crate::graph::int_array(p.output_tensors),
                }
            }
        })
        .collect())
}

/// A `TfLiteIntArray` we own: `size` then the ints.
struct IntArray(Vec<c_int>);

impl IntArray {
    fn new(values: &[i32]) -> Self {
        let mut v = Vec::with_capacity(values.len() + 1);
        v.push(c_int::try_from(values.len()).unwrap_or(c_int::MAX));
        v.extend_from_slice(values);
        Self(v)
    }

    fn as_ptr(&self) -> *const tensorplug_abi::tflite::TfLiteIntArray {
        self.0.as_ptr().cast()
    }
}

/// The delegate kernel's registration, the full TF 2.15 … 2.21 struct
/// (`abi::tflite`, "Versions"): the fields after `version` are null/0.
fn registration() -> TfLiteRegistration {
    TfLiteRegistration {
        init: Some(kernel_init),
        free: Some(kernel_free),
        prepare: Some(kernel_prepare),
        invoke: Some(kernel_invoke),
        profiling_string: None,
        builtin_code: kTfLiteBuiltinDelegate,
        custom_name: c"TensorplugDelegate".as_ptr(),
        version: 1,
        registration_external: core::ptr::null_mut(),
        async_kernel: None,
        inplace_operator: 0,
    }
}

/// `init`: `buffer` is the partition's `TfLiteDelegateParams`. A failure
/// is kept for `Prepare` to report and return, and the kernel is null.
unsafe extern "C" fn kernel_init(
    ctx: *mut TfLiteContext,
    buffer: *const c_char,
    _len: usize,
) -> *mut c_void {
    let params = buffer.cast::<TfLiteDelegateParams>();
    let built = catch_unwind(AssertUnwindSafe(
        || -> Result<Box<Kernel>, (Option<Arc<Shared>>, String)> {
            if params.is_null() {
                return Err((None, "init without delegate params".into()));
            }
            // SAFETY: the runtime's params for this partition.
            let params = unsafe { &*params };
            // SAFETY: the delegate the runtime passes back is ours.
            let shared = unsafe { shared_of(params.delegate) }.map_err(|e| (None, e))?;
            // SAFETY: the runtime's live context.
            let graph = unsafe { Graph::new(ctx) }.map_err(|e| (Some(Arc::clone(&shared)), e))?;
            let graph_id = KERNEL_GRAPH.with(|g| g.get());
            // The runtime has replaced the partition in its plan already.
            let seen = lock(&shared.report)
                .graphs
                .get(graph_id)
                .map(|g| g.nodes.iter().map(|n| n.index).collect())
                .unwrap_or_default();
            let graph = graph.with_nodes(seen);
            Kernel::new(Arc::clone(&shared), graph_id, &graph, params)
                .map(Box::new)
                .map_err(|e| (Some(shared), e))
        },
    ));
    match built {
        Ok(Ok(kernel)) => Box::into_raw(kernel).cast(),
        Ok(Err((shared, e))) => {
            // With the delegate known, its `Prepare` reports the first
            // failure once; otherwise report it here.
            match shared {
                Some(shared) => {
                    lock(&shared.init_error).get_or_insert(e);
                }
                None => report_error(ctx, &format!("tensorplug delegate: {e}")),
            }
            core::ptr::null_mut()
        }
        Err(_) => {
            report_error(
                ctx,
                "tensorplug delegate: panicked in init (a bug in tensorplug)",
            );
            core::ptr::null_mut()
        }
    }
}

unsafe extern "C" fn kernel_free(_ctx: *mut TfLiteContext, buffer: *mut c_void) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if !buffer.is_null() {
            // SAFETY: made by `kernel_init` with `Box::into_raw`; the runtime
            // frees each node's data once.
            drop(unsafe { Box::from_raw(buffer.cast::<Kernel>()) });
        }
    }));
}

/// The kernel of a delegate node (null: its `init` failed).
///
/// # Safety
/// `node` is null or the runtime's live node of one of our kernels.
unsafe fn kernel_of<'a>(node: *mut TfLiteNode) -> Result<&'a Kernel, String> {
    if node.is_null() {
        return Err("called without a node".into());
    }
    // SAFETY: the caller's contract.
    let data = unsafe { (*node).user_data };
    if data.is_null() {
        return Err("this partition failed to initialize (see the error before)".into());
    }
    // SAFETY: `user_data` is what `kernel_init` returned.
    Ok(unsafe { &*data.cast::<Kernel>() })
}

unsafe extern "C" fn kernel_prepare(
    ctx: *mut TfLiteContext,
    node: *mut TfLiteNode,
) -> TfLiteStatus {
    guarded(ctx, || {
        // SAFETY: the runtime's live context and node.
        let (graph, kernel) = unsafe { (Graph::new(ctx)?, kernel_of(node)?) };
        kernel.prepare(&graph)
    })
}

unsafe extern "C" fn kernel_invoke(ctx: *mut TfLiteContext, node: *mut TfLiteNode) -> TfLiteStatus {
    guarded(ctx, || {
        // SAFETY: the runtime's live context and node.
        let (graph, kernel) = unsafe { (Graph::new(ctx)?, kernel_of(node)?) };
        kernel.invoke(&graph)
    })
}

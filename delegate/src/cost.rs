//! The link-cost model at partitioning (`tensorplug_core::program::cost`):
//! the largest partition always goes to the device (the user loaded the
//! delegate for it); every other one must pay for its round trip and its
//! bytes with the host compute it saves, or it stays on the CPU with the
//! estimate as the reason. `docs/delegate.md`, "The cost model".

use crate::graph::{Graph, NodeView};
use crate::options::CostOptions;
use serde_json::{Value, json};
use std::time::Instant;
use tensorplug_abi::tflite::{
    kTfLiteBuiltinBatchMatmul, kTfLiteBuiltinConv2d, kTfLiteBuiltinDepthwiseConv2d,
    kTfLiteBuiltinFullyConnected,
};
use tensorplug_core::accelerator::QueueId;
use tensorplug_core::program::cost::{
    Estimate, LinkCost, ProbeLimits, Rates, Work, estimate, probe,
};
use tensorplug_host_bridge::prelude::DynAccelerator;

/// The figures the model uses, and where each came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Figures {
    pub link: LinkCost,
    pub rates: Rates,
    /// Where each figure came from: round trip, rate, host.
    pub sources: [&'static str; 3],
}

impl Figures {
    /// What the options give, the rest measured: the link on `device`'s
    /// `queue` (through its own copies), the host by a small matrix product.
    pub fn get(
        options: &CostOptions,
        device: &mut DynAccelerator,
        queue: QueueId,
    ) -> Result<Self, String> {
        let measured = match (options.round_trip_ns, options.bytes_per_s) {
            (Some(_), Some(_)) => None,
            _ => {
                let start = Instant::now();
                let mut now = || u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                Some(
                    probe(device, queue, &mut now, &ProbeLimits::DEFAULT)
                        .map_err(|e| format!("the cost model's link probe failed: {e}"))?,
                )
            }
        };
        let source = |given: Option<u64>| {
            if given.is_some() {
                "options"
            } else {
                "measured"
            }
        };
        // An unoptimized build's product is many times slower than TFLite's.
        let host = match (options.host_flops_per_s, cfg!(debug_assertions)) {
            (Some(_), _) => "options",
            (None, true) => "measured (an unoptimized build: too low)",
            (None, false) => "measured",
        };
        let link = LinkCost {
            round_trip_ns: options
                .round_trip_ns
                .or(measured.map(|m| m.round_trip_ns))
                .unwrap_or(0),
            bytes_per_s: options
                .bytes_per_s
                .or(measured.map(|m| m.bytes_per_s))
                .unwrap_or(u64::MAX),
        };
        Ok(Self {
            link,
            rates: Rates {
                host_flops_per_s: options.host_flops_per_s.unwrap_or_else(host_flops_per_s),
                device_flops_per_s: options.device_flops_per_s,
            },
            sources: [
                source(options.round_trip_ns),
                source(options.bytes_per_s),
                host,
            ],
        })
    }

    /// The report's `cost_model`.
    pub fn to_json(self) -> Value {
        let per_s = |x: u64, unit: f64| x as f64 / unit;
        json!({
            "link_round_trip_us": self.link.round_trip_ns as f64 / 1e3,
            "link_round_trip_source": self.sources[0],
            "link_mbytes_per_s": per_s(self.link.bytes_per_s, 1e6),
            "link_rate_source": self.sources[1],
            "host_gflops": per_s(self.rates.host_flops_per_s, 1e9),
            "host_source": self.sources[2],
            "device_gflops": self.rates.device_flops_per_s.map(|r| per_s(r, 1e9)),
        })
    }
}

/// The host's f32 rate: the best of three 64×64×64 matrix products in
/// plain Rust. TFLite's CPU kernels (XNNPACK, ruy) are faster, so the
/// model errs towards the device.
pub fn host_flops_per_s() -> u64 {
    const N: usize = 64;
    let a = std::hint::black_box(vec![1.0f32; N * N]);
    let b = std::hint::black_box(vec![0.5f32; N * N]);
    let mut c = vec![0.0f32; N * N];
    let mut best = u64::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        for i in 0..N {
            for k in 0..N {
                let x = a[i * N + k];
                for j in 0..N {
                    c[i * N + j] += x * b[k * N + j];
                }
            }
        }
        std::hint::black_box(&mut c);
        best = best.min(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX));
    }
    let flops = 2 * (N as u64).pow(3);
    u64::try_from(u128::from(flops) * 1_000_000_000 / u128::from(best.max(1))).unwrap_or(u64::MAX)
}

/// A node's arithmetic: a product's multiply-adds (2 flops each), else
/// one per element of its largest tensor. `dims` gives a tensor's shape.
pub fn node_flops(node: &NodeView, dims: &dyn Fn(i32) -> Option<Vec<usize>>) -> u64 {
    let elements = |t: i32| -> u64 { dims(t).map_or(0, |d| d.iter().map(|&d| d as u64).product()) };
    let out = node.outputs.first().map_or(0, |&t| elements(t));
    let input = |i: usize| node.inputs.get(i).copied().filter(|&t| t >= 0);
    // The output channels of a product's weights: its first axis (FC,
    // conv) or its last (depthwise, batch matmul's right side).
    let reduced = |weights: i32, channel_axis_last: bool| -> u64 {
        let Some(w) = dims(weights) else {
            return 1;
        };
        let channels = match channel_axis_last {
            true => w.last(),
            false => w.first(),
        };
        let elements: u64 = w.iter().map(|&d| d as u64).product();
        elements / channels.map_or(1, |&c| (c as u64).max(1))
    };
    let product = match node.builtin_code {
        c if c == kTfLiteBuiltinConv2d || c == kTfLiteBuiltinFullyConnected => {
            input(1).map(|w| reduced(w, false))
        }
        c if c == kTfLiteBuiltinDepthwiseConv2d || c == kTfLiteBuiltinBatchMatmul => {
            input(1).map(|w| reduced(w, true))
        }
        _ => None,
    };
    match product {
        Some(k) => 2u64.saturating_mul(out).saturating_mul(k),
        None => node
            .inputs
            .iter()
            .chain(&node.outputs)
            .filter(|&&t| t >= 0)
            .map(|&t| elements(t))
            .max()
            .unwrap_or(0),
    }
}

/// A candidate partition's work a step: its nodes' flops, and the bytes
/// of its non-constant inputs and its outputs; one round trip.
pub fn work(graph: &Graph, nodes: &[i32], inputs: &[i32], outputs: &[i32]) -> Work {
    let flops = nodes
        .iter()
        .filter_map(|&n| graph.node(n).ok())
        .map(|n| node_flops(&n, &|t| graph.tensor(t).ok().map(|t| t.dims)))
        .fold(0u64, u64::saturating_add);
    let bytes = inputs
        .iter()
        .chain(outputs)
        .filter_map(|&t| graph.tensor(t).ok())
        .filter(|t| !t.constant)
        .map(|t| t.bytes as u64)
        .fold(0u64, u64::saturating_add);
    Work {
        flops,
        bytes,
        round_trips: 1,
    }
}

/// A partition's line in the report's `partition_costs`.
pub fn entry(nodes: &[i32], work: &Work, e: &Estimate, decision: &str) -> Value {
    json!({
        "nodes": nodes,
        "flops": work.flops,
        "bytes": work.bytes,
        "round_trips": work.round_trips,
        "device_us": e.device_ns as f64 / 1e3,
        "host_us": e.host_ns as f64 / 1e3,
        "decision": decision,
    })
}

/// `x` with three significant digits (at least one decimal).
fn sig(x: f64) -> String {
    let digits = if x > 0.0 { x.log10().floor() as i32 } else { 0 };
    format!(
        "{x:.*}",
        usize::try_from(2 - digits).unwrap_or(0).clamp(1, 9)
    )
}

/// Why a partition stays on the CPU, with the figures.
pub fn reason(work: &Work, e: &Estimate, f: &Figures) -> String {
    format!(
        "the cost model keeps its partition on the CPU: about {} µs a step on the device ({} \
         round trip of {} µs, {} B at {} MB/s{}) against {} µs on the host ({} flops at {} \
         GFLOP/s); `cost_model=off` delegates it anyway",
        sig(e.device_ns as f64 / 1e3),
        work.round_trips,
        sig(f.link.round_trip_ns as f64 / 1e3),
        work.bytes,
        sig(f.link.bytes_per_s as f64 / 1e6),
        match f.rates.device_flops_per_s {
            Some(r) => format!(", compute at {} GFLOP/s", sig(r as f64 / 1e9)),
            None => String::new(),
        },
        sig(e.host_ns as f64 / 1e3),
        work.flops,
        sig(f.rates.host_flops_per_s as f64 / 1e9),
    )
}

/// [`estimate`] with the figures.
pub fn judge(f: &Figures, work: &Work) -> Estimate {
    estimate(&f.link, &f.rates, work)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_rate_is_measured_and_plausible() {
        let r = host_flops_per_s();
        // Between 10 MFLOP/s (Miri-slow) and 1 TFLOP/s.
        assert!((10_000_000..1_000_000_000_000).contains(&r), "{r}");
    }

    fn node(code: i32, inputs: &[i32]) -> NodeView {
        NodeView::for_test(code, inputs)
    }

    #[test]
    fn a_products_flops_are_its_multiply_adds_and_anything_else_its_elements() {
        let dims = |t: i32| -> Option<Vec<usize>> {
            Some(match t {
                0 => vec![4, 8, 8, 3],  // an NHWC input
                1 => vec![16, 3, 3, 3], // conv filter [cout, kh, kw, cin]
                2 => vec![1, 3, 3, 3],  // depthwise filter [1, kh, kw, c]
                3 => vec![10, 192],     // FC weights [units, in]
                9 => vec![4, 8, 8, 16], // the output
                _ => return None,
            })
        };
        // 2 × 4·8·8·16 outputs × 3·3·3 per output channel.
        let flops = |code, inputs: &[i32]| node_flops(&node(code, inputs), &dims);
        assert_eq!(flops(kTfLiteBuiltinConv2d, &[0, 1]), 2 * 4096 * 27);
        assert_eq!(flops(kTfLiteBuiltinDepthwiseConv2d, &[0, 2]), 2 * 4096 * 9);
        assert_eq!(flops(kTfLiteBuiltinFullyConnected, &[0, 3]), 2 * 4096 * 192);
        // An element-wise node: its largest tensor; an absent input skipped.
        assert_eq!(flops(0, &[0, -1]), 4096);
        // Weights it cannot read count as one product per output.
        assert_eq!(flops(kTfLiteBuiltinConv2d, &[0, 7]), 2 * 4096);
    }

    #[test]
    fn the_reason_carries_the_figures_and_the_way_out() {
        let f = Figures {
            link: LinkCost {
                round_trip_ns: 2_000_000,
                bytes_per_s: 100_000,
            },
            rates: Rates {
                host_flops_per_s: 2_000_000_000,
                device_flops_per_s: None,
            },
            sources: ["measured"; 3],
        };
        let w = Work {
            flops: 512,
            bytes: 192,
            round_trips: 1,
        };
        let e = judge(&f, &w);
        assert!(!e.pays());
        let r = reason(&w, &e, &f);
        assert!(r.contains("3920.0 µs") && r.contains("0.256 µs"), "{r}");
        assert!(r.contains("2000.0 µs") && r.contains("192 B") && r.contains("cost_model=off"));
        // A small rate keeps its digits (it printed 0.00).
        let slow = Figures {
            rates: Rates {
                device_flops_per_s: Some(1_000_000),
                ..f.rates
            },
            ..f
        };
        let r = reason(&w, &judge(&slow, &w), &slow);
        assert!(
            r.contains("compute at 0.00100 GFLOP/s") && r.contains("0.100 MB/s"),
            "{r}"
        );
        let j = f.to_json();
        assert_eq!(j["link_round_trip_us"], 2000.0);
        assert_eq!(j["device_gflops"], Value::Null);
    }
}

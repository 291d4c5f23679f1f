//! f32 GEMM 512×512×512: the model's kernel (host path) against
//! `matrixmultiply::sgemm` called directly, in the same run; the portable
//! no-alloc kernel for information. Throughput is in flops (2·m·n·k).
//!
//! Group `gemm_512`, ids `model`, `matrixmultiply`, `portable`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;
use tensorplug_model_fpga::kernels::{GemmSpec, gemm, gemm_portable};

const N: usize = 512;

/// Deterministic values in [-1, 1).
fn values(len: usize, seed: u32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(2_654_435_761) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

fn gemm_512(c: &mut Criterion) {
    let spec = GemmSpec::new(N, N, N);
    let (a, b) = (values(N * N, 1), values(N * N, 2));
    let mut out = vec![0.0f32; N * N];
    let mut group = c.benchmark_group("gemm_512");
    group
        .throughput(Throughput::Elements(2 * (N * N * N) as u64))
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    group.bench_function("model", |bench| {
        bench.iter(|| gemm(&spec, black_box(&a), black_box(&b), None, &mut out).unwrap())
    });
    group.bench_function("matrixmultiply", |bench| {
        let n = N as isize;
        bench.iter(|| {
            // SAFETY: a, b and out each hold N·N elements in row-major order.
            unsafe {
                matrixmultiply::sgemm(
                    N,
                    N,
                    N,
                    1.0,
                    black_box(a.as_ptr()),
                    n,
                    1,
                    black_box(b.as_ptr()),
                    n,
                    1,
                    0.0,
                    out.as_mut_ptr(),
                    n,
                    1,
                )
            }
        })
    });
    group.sample_size(10);
    group.bench_function("portable", |bench| {
        bench.iter(|| gemm_portable(&spec, black_box(&a), black_box(&b), None, &mut out).unwrap())
    });
    group.finish();
}

criterion_group!(benches, gemm_512);
criterion_main!(benches);

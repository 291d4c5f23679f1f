use super::{finite, vec_of};
use crate::kernels::{ErrorKind, GemmSpec, KernelError, Operand, gemm, gemm_portable, reference};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use std::vec;
use std::vec::Vec;

type GemmFn = fn(&GemmSpec, &[f32], &[f32], Option<&[f32]>, &mut [f32]) -> Result<(), KernelError>;

#[derive(Debug, Clone)]
struct Case {
    spec: GemmSpec,
    a: Vec<f32>,
    b: Vec<f32>,
    bias: Option<Vec<f32>>,
}

fn case(max_dim: usize) -> impl Strategy<Value = Case> {
    (0..=max_dim, 0..=max_dim, 0..=max_dim, any::<[bool; 4]>()).prop_flat_map(
        |(m, n, k, [transpose_a, transpose_b, relu, with_bias])| {
            let spec = GemmSpec {
                m,
                n,
                k,
                transpose_a,
                transpose_b,
                relu,
            };
            let bias = if with_bias {
                vec_of(n, finite()).prop_map(Some).boxed()
            } else {
                Just(None).boxed()
            };
            (vec_of(m * k, finite()), vec_of(k * n, finite()), bias)
                .prop_map(move |(a, b, bias)| Case { spec, a, b, bias })
        },
    )
}

/// Runs `kernel` on `c` (output pre-filled with NaN: it must not be read)
/// and checks every element against the reference within its bound.
fn check(kernel: GemmFn, c: &Case) {
    let s = c.spec;
    let bias = c.bias.as_deref();
    let mut got = vec![f32::NAN; s.m * s.n];
    kernel(&s, &c.a, &c.b, bias, &mut got).expect("consistent lengths");
    let mut want = vec![0.0; s.m * s.n];
    reference::gemm(
        s.m,
        s.n,
        s.k,
        s.transpose_a,
        s.transpose_b,
        &c.a,
        &c.b,
        bias,
        s.relu,
        &mut want,
    );
    for i in 0..s.m {
        for j in 0..s.n {
            let tol = reference::gemm_tolerance(
                s.m,
                s.n,
                s.k,
                s.transpose_a,
                s.transpose_b,
                &c.a,
                &c.b,
                bias,
                i,
                j,
            );
            let (g, w) = (got[i * s.n + j], want[i * s.n + j]);
            assert!(
                (g - w).abs() <= tol,
                "{s:?} at ({i},{j}): got {g}, want {w}, tolerance {tol}"
            );
        }
    }
}

proptest! {
    #[test]
    fn host_gemm_matches_reference(c in case(24)) {
        check(gemm, &c);
    }

    #[test]
    fn portable_gemm_matches_reference(c in case(24)) {
        check(gemm_portable, &c);
    }
}

/// Sizes that cross the portable kernel's tile (4 × 8) and block (MC 64,
/// KC 128) edges, for every transpose combination.
#[test]
fn both_paths_match_reference_across_block_edges() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for (m, n, k) in [(65, 17, 129), (1, 1, 300), (130, 9, 257), (7, 70, 5)] {
        for flags in 0..8u8 {
            let spec = GemmSpec {
                m,
                n,
                k,
                transpose_a: flags & 1 != 0,
                transpose_b: flags & 2 != 0,
                relu: flags & 4 != 0,
            };
            let mut values = |len| {
                vec_of(len, finite())
                    .new_tree(&mut runner)
                    .unwrap()
                    .current()
            };
            let c = Case {
                spec,
                a: values(m * k),
                b: values(k * n),
                bias: Some(values(n)),
            };
            check(gemm, &c);
            check(gemm_portable, &c);
        }
    }
}

#[test]
fn one_by_one_is_a_product() {
    for kernel in [gemm as GemmFn, gemm_portable] {
        let mut out = [0.0];
        kernel(
            &GemmSpec::new(1, 1, 1),
            &[3.0],
            &[-2.0],
            Some(&[0.5]),
            &mut out,
        )
        .unwrap();
        assert_eq!(out, [-5.5]);
    }
}

#[test]
fn zero_depth_gives_bias_then_relu() {
    let spec = GemmSpec {
        relu: true,
        ..GemmSpec::new(2, 2, 0)
    };
    for kernel in [gemm as GemmFn, gemm_portable] {
        let mut out = [f32::NAN; 4];
        kernel(&spec, &[], &[], Some(&[-1.0, 2.0]), &mut out).unwrap();
        assert_eq!(out, [0.0, 2.0, 0.0, 2.0]);
    }
}

/// A GEMM call's inputs: `a`, `b`, `bias`.
type Inputs<'a> = (&'a [f32], &'a [f32], Option<&'a [f32]>);

#[test]
fn wrong_lengths_are_refused_before_writing() {
    let spec = GemmSpec::new(2, 3, 4);
    let (a, b) = ([1.0; 8], [1.0; 12]);
    let length = |operand, expected, got| KernelError::Length {
        operand,
        expected,
        got,
    };
    let cases: [(Inputs, usize, KernelError); 4] = [
        ((&a[..7], &b, None), 6, length(Operand::Lhs, 8, 7)),
        ((&a, &b[..11], None), 6, length(Operand::Rhs, 12, 11)),
        ((&a, &b, None), 5, length(Operand::Output, 6, 5)),
        ((&a, &b, Some(&[0.0; 2])), 6, length(Operand::Bias, 3, 2)),
    ];
    for kernel in [gemm as GemmFn, gemm_portable] {
        for ((a, b, bias), out_len, want) in cases {
            let mut out = vec![7.0; out_len];
            let err = kernel(&spec, a, b, bias, &mut out).unwrap_err();
            assert_eq!(err, want);
            assert_eq!(err.kind(), ErrorKind::Length);
            assert!(out.iter().all(|&v| v == 7.0), "output touched on error");
        }
    }
}

#[test]
fn overflowing_dims_are_refused() {
    let spec = GemmSpec::new(usize::MAX, 2, 2);
    let err = gemm(&spec, &[], &[0.0; 4], None, &mut []).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Overflow);
}

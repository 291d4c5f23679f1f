//! Fuzzes what the kernels derive from TF's attributes and shapes: the
//! window ops' construction (`strides`, `dilations`, `ksize`, `padding`,
//! `explicit_paddings`, `data_format`, `_FusedConv2D`'s `fused_ops`) and
//! geometry over input and filter shapes, `Einsum`'s equation and its
//! lowering for operand shapes, and the shape rules (`broadcast`).
//! Structure-aware: lists are mostly TF's `[1, h, w, 1]` form and dims
//! mostly small, so that inputs get past the first check.
//!
//! Oracles beyond "no panic": a window op that succeeds gives TF's output
//! size (VALID: `(h − span) / s + 1`; SAME: `ceil(h / s)`; EXPLICIT: with
//! the given pads), the batch unchanged and the right channels;
//! `broadcast` follows NumPy's rule and is symmetric.

#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use tensorplug_core::accelerator::Shape;
use tensorplug_host_bridge::internals::kernels::ops::fuzzing::{self, Attrs};
use tensorplug_host_bridge::internals::kernels::shapes;

#[derive(Arbitrary, Debug)]
enum List {
    /// `[1, h, w, 1]`.
    Spatial(u8, u8),
    Raw(Vec<i64>),
}

impl List {
    fn values(&self) -> Vec<i64> {
        match self {
            Self::Spatial(h, w) => vec![1, i64::from(*h), i64::from(*w), 1],
            Self::Raw(v) => v.clone(),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Dim {
    Small(u8),
    Any(u64),
}

impl Dim {
    fn get(&self) -> u64 {
        match self {
            Self::Small(d) => u64::from(*d),
            Self::Any(d) => *d,
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Padding {
    Valid,
    Same,
    /// `[0, 0, t, b, l, r, 0, 0]`.
    Explicit(u8, u8, u8, u8),
    Raw(String, Vec<i64>),
}

#[derive(Arbitrary, Debug)]
enum Input {
    Window {
        op: u8,
        strides: List,
        dilations: List,
        ksize: List,
        padding: Padding,
        nchw: bool,
        fused_ops: Vec<String>,
        num_args: i32,
        x: Vec<Dim>,
        filter: Vec<Dim>,
    },
    Einsum {
        equation: String,
        shapes: Vec<Vec<Dim>>,
    },
    Broadcast {
        a: Vec<Dim>,
        b: Vec<Dim>,
    },
}

fn dims(d: &[Dim]) -> Vec<u64> {
    d.iter().map(Dim::get).collect()
}

fuzz_target!(|input: Input| match input {
    Input::Window {
        op,
        strides,
        dilations,
        ksize,
        padding,
        nchw,
        fused_ops,
        num_args,
        x,
        filter,
    } => window(
        usize::from(op),
        &strides,
        &dilations,
        &ksize,
        &padding,
        nchw,
        fused_ops,
        num_args,
        &dims(&x),
        &dims(&filter),
    ),
    Input::Einsum { equation, shapes } => {
        let shapes: Vec<Vec<u64>> = shapes.iter().map(|s| dims(s)).collect();
        let shapes: Vec<&[u64]> = shapes.iter().map(Vec::as_slice).collect();
        let _ = fuzzing::einsum(&equation, &shapes);
    }
    Input::Broadcast { a, b } => broadcast(&dims(&a), &dims(&b)),
});

#[allow(clippy::too_many_arguments)]
fn window(
    op: usize,
    strides: &List,
    dilations: &List,
    ksize: &List,
    padding: &Padding,
    nchw: bool,
    fused_ops: Vec<String>,
    num_args: i32,
    x: &[u64],
    filter: &[u64],
) {
    let name = fuzzing::WINDOW_OPS[op % fuzzing::WINDOW_OPS.len()];
    let conv = matches!(name, "Conv2D" | "_FusedConv2D" | "DepthwiseConv2dNative");
    let mut attrs = Attrs::default();
    let format = if nchw { "NCHW" } else { "NHWC" };
    attrs.strings.insert("data_format".into(), format.into());
    attrs.int_lists.insert("strides".into(), strides.values());
    attrs
        .int_lists
        .insert("dilations".into(), dilations.values());
    attrs.int_lists.insert("ksize".into(), ksize.values());
    let (text, explicit) = match padding {
        Padding::Valid => ("VALID".to_string(), vec![]),
        Padding::Same => ("SAME".to_string(), vec![]),
        Padding::Explicit(t, b, l, r) => (
            "EXPLICIT".to_string(),
            [0, 0, *t, *b, *l, *r, 0, 0].map(i64::from).to_vec(),
        ),
        Padding::Raw(text, values) => (text.clone(), values.clone()),
    };
    attrs.strings.insert("padding".into(), text.clone());
    attrs
        .int_lists
        .insert("explicit_paddings".into(), explicit.clone());
    attrs.string_lists.insert("fused_ops".into(), fused_ops);
    attrs.ints.insert("num_args".into(), num_args);
    let f = conv.then_some(filter);
    let Ok((window, out)) = fuzzing::window(op, &attrs, x, f) else {
        return;
    };
    // Succeeded: the shapes were NHWC and the lists TF's form.
    assert!(!nchw, "{name} accepted data_format NCHW");
    let (&[n, h, w, c], &[on, oh, ow, oc]) = (x, out.as_slice()) else {
        panic!("{name}: input {x:?} gave output {out:?}");
    };
    assert_eq!(on, n, "{name}: the batch changed");
    let channels = match name {
        "Conv2D" | "_FusedConv2D" => filter[3],
        "DepthwiseConv2dNative" => c * filter[3],
        _ => c,
    };
    assert_eq!(oc, channels, "{name}: output channels");
    let stride = strides.values();
    let dilation = if conv {
        dilations.values()
    } else {
        vec![1, 1, 1, 1]
    };
    let size = if conv {
        vec![1, filter[0] as i64, filter[1] as i64, 1]
    } else {
        ksize.values()
    };
    // In u128: the dims may be near u64::MAX.
    for (axis, (extent, got)) in [(h, oh), (w, ow)].into_iter().enumerate() {
        let wide = |v: i64| u128::try_from(v).expect("accepted lists are positive");
        let (s, d, k) = (
            wide(stride[axis + 1]),
            wide(dilation[axis + 1]),
            wide(size[axis + 1]),
        );
        let extent = u128::from(extent);
        let span = d * (k.max(1) - 1) + 1;
        let (before, after) = (
            u128::from(window.pad[2 * axis]),
            u128::from(window.pad[2 * axis + 1]),
        );
        let want = match text.as_str() {
            "VALID" => {
                assert_eq!((before, after), (0, 0), "{name}: VALID padded");
                (extent + 1).saturating_sub(span).div_ceil(s)
            }
            "SAME" => extent.div_ceil(s),
            _ => {
                let given = (wide(explicit[2 + 2 * axis]), wide(explicit[3 + 2 * axis]));
                assert_eq!((before, after), given, "{name}: explicit pads");
                (extent + before + after + 1)
                    .saturating_sub(span)
                    .div_ceil(s)
            }
        };
        assert_eq!(
            u128::from(got),
            want,
            "{name} {text}: extent {extent}, stride {s}, dilation {d}, size {k}: \
             output {got}, TF's {want}"
        );
    }
}

/// NumPy's rule: align right; each pair equal, or one of them 1.
fn broadcast(a: &[u64], b: &[u64]) {
    let (Some(sa), Some(sb)) = (Shape::new(a), Shape::new(b)) else {
        return;
    };
    let ab = shapes::broadcast(&sa, &sb);
    let ba = shapes::broadcast(&sb, &sa);
    assert_eq!(
        ab.is_ok(),
        ba.is_ok(),
        "broadcast {a:?} {b:?} is not symmetric"
    );
    let rank = a.len().max(b.len());
    let pad = |d: &[u64]| {
        let mut v = vec![1u64; rank - d.len()];
        v.extend_from_slice(d);
        v
    };
    let (pa, pb) = (pad(a), pad(b));
    let numpy: Option<Vec<u64>> = pa
        .iter()
        .zip(&pb)
        .map(|(&x, &y)| match (x, y) {
            _ if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect();
    match (ab, numpy) {
        (Ok(s), Some(want)) => {
            assert_eq!(s.dims(), want.as_slice(), "broadcast {a:?} {b:?}");
            assert_eq!(ba.map(|s| s.dims().to_vec()), Ok(want));
        }
        (Ok(s), None) => panic!("broadcast {a:?} {b:?} gave {:?}, NumPy refuses", s.dims()),
        (Err(_), _) => {} // NumPy-legal but refused: the device's own limits.
    }
}

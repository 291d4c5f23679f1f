//! Reference convolutions and pools over NHWC tensors, in `f64`.

use super::error::{Error, check_len, dim};
use crate::accelerator::{OpKind, Shape, Window};

/// One output element's window: the sum of its products (`f64`), the sum
/// of their magnitudes, the maximum and the number of in-bounds taps.
#[derive(Clone, Copy)]
pub(super) struct Taps {
    pub(super) sum: f64,
    pub(super) abs: f64,
    pub(super) max: f32,
    pub(super) count: u32,
}

/// The dims of a window op: input `[n,h,w,c]`, filter `[kh,kw,c,k]` (or
/// none), output `[n,oh,ow,oc]`.
pub(super) struct Dims {
    x: [usize; 4],
    f: [usize; 4],
    out: [usize; 4],
}

impl Dims {
    pub(super) fn new(inputs: &[(&[f32], Shape)], out: Shape) -> Result<Self, Error> {
        let four = |s: &Shape| -> Result<[usize; 4], Error> {
            let mut d = [1usize; 4];
            for (slot, &v) in d.iter_mut().zip(s.dims()) {
                *slot = dim(v)?;
            }
            Ok(d)
        };
        let f = match inputs.get(1) {
            Some((_, s)) => four(s)?,
            None => [1; 4],
        };
        Ok(Self {
            x: four(&inputs[0].1)?,
            f,
            out: four(&out)?,
        })
    }

    pub(super) fn out_len(&self) -> usize {
        self.out.iter().product()
    }

    /// The window of output element `flat` of `kind` over `x` (and `filter`).
    pub(super) fn taps(&self, kind: OpKind, x: &[f32], filter: &[f32], flat: usize) -> Taps {
        let (w, depthwise) = match kind {
            OpKind::Conv2D(w) | OpKind::FusedConv2D(w, _) => (w, false),
            OpKind::DepthwiseConv2D(w) => (w, true),
            OpKind::MaxPool(w) | OpKind::AvgPool(w) => (w, false),
            _ => (Window::new([1, 1]), false),
        };
        let [_, h, wd, c] = self.x;
        let [_, oh_n, ow_n, oc_n] = self.out;
        let oc = flat % oc_n;
        let ow = flat / oc_n % ow_n;
        let oh = flat / (oc_n * ow_n) % oh_n;
        let n = flat / (oc_n * ow_n * oh_n);
        let pool = matches!(kind, OpKind::MaxPool(_) | OpKind::AvgPool(_));
        let mut t = Taps {
            sum: 0.0,
            abs: 0.0,
            max: f32::MIN,
            count: 0,
        };
        for kh in 0..usize::from(w.size[0]) {
            let ih = (oh * usize::from(w.stride[0]) + kh * usize::from(w.dilation[0]))
                .checked_sub(usize::from(w.pad[0]));
            let Some(ih) = ih.filter(|&i| i < h) else {
                continue;
            };
            for kw in 0..usize::from(w.size[1]) {
                let iw = (ow * usize::from(w.stride[1]) + kw * usize::from(w.dilation[1]))
                    .checked_sub(usize::from(w.pad[2]));
                let Some(iw) = iw.filter(|&i| i < wd) else {
                    continue;
                };
                let at = |ch: usize| x[((n * h + ih) * wd + iw) * c + ch];
                t.count += 1;
                if pool {
                    let v = at(oc);
                    t.sum += f64::from(v);
                    t.abs += f64::from(v).abs();
                    if v > t.max {
                        t.max = v;
                    }
                    continue;
                }
                let tap = (kh * self.f[1] + kw) * self.f[2];
                let products: &mut dyn Iterator<Item = (f32, f32)> = if depthwise {
                    let (ch, j) = (oc / self.f[3], oc % self.f[3]);
                    &mut core::iter::once((at(ch), filter[(tap + ch) * self.f[3] + j]))
                } else {
                    &mut (0..c).map(|ch| (at(ch), filter[(tap + ch) * self.f[3] + oc]))
                };
                for (a, b) in products {
                    let p = f64::from(a) * f64::from(b);
                    t.sum += p;
                    t.abs += p.abs();
                }
            }
        }
        t
    }
}

/// Runs a window op (`Conv2D`, `FusedConv2D`, `DepthwiseConv2D`, `MaxPool`, `AvgPool`);
/// lengths were checked by the caller against shapes already validated.
pub(super) fn run(
    kind: OpKind,
    inputs: &[(&[f32], Shape)],
    out_shape: Shape,
    out: &mut [f32],
) -> Result<(), Error> {
    let d = Dims::new(inputs, out_shape)?;
    check_len(inputs.len() as u8, d.out_len(), out.len())?;
    let filter = inputs.get(1).map_or(&[][..], |f| f.0);
    let bias = inputs.get(2).map_or(&[][..], |b| b.0);
    for (i, o) in out.iter_mut().enumerate() {
        let t = d.taps(kind, inputs[0].0, filter, i);
        *o = match kind {
            OpKind::FusedConv2D(_, act) => {
                act.apply((t.sum + f64::from(bias[i % d.out[3]])) as f32)
            }
            OpKind::MaxPool(_) => t.max,
            OpKind::AvgPool(_) if t.count == 0 => 0.0,
            OpKind::AvgPool(_) => (t.sum / f64::from(t.count)) as f32,
            _ => t.sum as f32,
        };
    }
    Ok(())
}

/// Per-element bounds: exact for `MaxPool`; `(taps + 2)·ε·Σ|terms|` (over the
/// count for `AvgPool`), as a dot product of that many terms.
pub(super) fn tolerance(
    kind: OpKind,
    inputs: &[(&[f32], Shape)],
    out_shape: Shape,
    tol: &mut [f32],
) -> Result<(), Error> {
    let d = Dims::new(inputs, out_shape)?;
    let filter = inputs.get(1).map_or(&[][..], |f| f.0);
    let eps = f64::from(f32::EPSILON);
    let tiny = f64::from(f32::MIN_POSITIVE);
    let channels = match kind {
        OpKind::Conv2D(_) | OpKind::FusedConv2D(..) => d.x[3] as f64,
        _ => 1.0,
    };
    let bias = inputs.get(2).map_or(&[][..], |b| b.0);
    for (i, t) in tol.iter_mut().enumerate() {
        let mut taps = d.taps(kind, inputs[0].0, filter, i);
        if let Some(&b) = bias.get(i % d.out[3].max(1)) {
            taps.abs += f64::from(b).abs();
        }
        let terms = f64::from(taps.count) * channels;
        *t = match kind {
            OpKind::MaxPool(_) => 0.0,
            OpKind::AvgPool(_) => {
                ((terms + 2.0) * eps * taps.abs / f64::from(taps.count.max(1)) + tiny) as f32
            }
            _ => ((terms + 2.0) * eps * taps.abs + tiny) as f32,
        };
    }
    Ok(())
}

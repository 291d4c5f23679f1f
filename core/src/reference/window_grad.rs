//! Reference gradients of the window ops (`Conv2DBackpropInput`,
//! `Conv2DBackpropFilter`, `MaxPoolGrad`, `AvgPoolGrad`) in `f64`, one output element at a
//! time (no allocation), and their bounds.

use super::error::{Error, check_len, dim};
use crate::accelerator::{OpKind, Shape, Window};

/// The forward op's geometry: input `x [n,h,w,c]`, output `dy [n,oh,ow,k]`.
struct Geometry {
    w: Window,
    x: [usize; 4],
    dy: [usize; 4],
}

/// One gradient element: its sum, the sum of its terms' magnitudes and
/// how many terms it has.
#[derive(Default)]
struct Terms {
    sum: f64,
    abs: f64,
    count: u32,
}

impl Terms {
    fn add(&mut self, term: f64) {
        self.sum += term;
        self.abs += term.abs();
        self.count += 1;
    }
}

fn four(s: &Shape) -> Result<[usize; 4], Error> {
    let mut d = [1usize; 4];
    for (slot, &v) in d.iter_mut().zip(s.dims()) {
        *slot = dim(v)?;
    }
    Ok(d)
}

impl Geometry {
    fn new(kind: OpKind, inputs: &[(&[f32], Shape)], out: Shape) -> Result<Self, Error> {
        let (w, x, dy) = match kind {
            OpKind::Conv2DBackpropInput(w) | OpKind::AvgPoolGrad(w) => (w, out, inputs[0].1),
            OpKind::Conv2DBackpropFilter(w) | OpKind::MaxPoolGrad(w) => {
                (w, inputs[0].1, inputs[1].1)
            }
            _ => return Err(Error::Overflow),
        };
        Ok(Self {
            w,
            x: four(&x)?,
            dy: four(&dy)?,
        })
    }

    /// The input row (`axis` 0) or column of output index `o`, tap `a`.
    fn source(&self, axis: usize, o: usize, a: usize) -> Option<usize> {
        let w = &self.w;
        (o * usize::from(w.stride[axis]) + a * usize::from(w.dilation[axis]))
            .checked_sub(usize::from(w.pad[2 * axis]))
            .filter(|&i| i < self.x[1 + axis])
    }

    /// The output index whose tap `a` reads input index `i` on `axis`, if any.
    fn reader(&self, axis: usize, i: usize, a: usize) -> Option<usize> {
        let w = &self.w;
        let (stride, dilation) = (usize::from(w.stride[axis]), usize::from(w.dilation[axis]));
        let offset = (i + usize::from(w.pad[2 * axis])).checked_sub(a * dilation)?;
        let o = offset / stride;
        (offset % stride == 0 && o < self.dy[1 + axis]).then_some(o)
    }

    fn x_at(&self, [n, h, w, c]: [usize; 4]) -> usize {
        ((n * self.x[1] + h) * self.x[2] + w) * self.x[3] + c
    }

    fn dy_at(&self, [n, h, w, k]: [usize; 4]) -> usize {
        ((n * self.dy[1] + h) * self.dy[2] + w) * self.dy[3] + k
    }

    /// The in-bounds taps of window `[_, oh, ow]`.
    fn taps_in(&self, oh: usize, ow: usize) -> usize {
        let rows = (0..usize::from(self.w.size[0])).filter(|&a| self.source(0, oh, a).is_some());
        let cols = (0..usize::from(self.w.size[1])).filter(|&b| self.source(1, ow, b).is_some());
        rows.count() * cols.count()
    }

    /// The tap of window `[n, oh, ow]` that max pooling's gradient picks for
    /// channel `c`: the first in-bounds one, or a later one greater than all before.
    fn argmax(&self, x: &[f32], [n, oh, ow, c]: [usize; 4]) -> Option<[usize; 2]> {
        let mut best: Option<([usize; 2], f32)> = None;
        for a in 0..usize::from(self.w.size[0]) {
            let Some(ih) = self.source(0, oh, a) else {
                continue;
            };
            for b in 0..usize::from(self.w.size[1]) {
                let Some(iw) = self.source(1, ow, b) else {
                    continue;
                };
                let v = x[self.x_at([n, ih, iw, c])];
                if best.is_none_or(|(_, m)| m < v) {
                    best = Some(([ih, iw], v));
                }
            }
        }
        best.map(|(at, _)| at)
    }

    /// The terms of output element `flat` of `kind`.
    fn terms(&self, kind: OpKind, inputs: &[(&[f32], Shape)], flat: usize) -> Terms {
        let [n_n, h_n, w_n, c_n] = self.x;
        let [_, oh_n, ow_n, k_n] = self.dy;
        let [kh_n, kw_n] = [0, 1].map(|a| usize::from(self.w.size[a]));
        let mut t = Terms::default();
        match kind {
            OpKind::Conv2DBackpropFilter(_) => {
                // flat indexes [kh, kw, c, k].
                let (a, b) = (flat / (kw_n * c_n * k_n), flat / (c_n * k_n) % kw_n);
                let (c, k) = (flat / k_n % c_n, flat % k_n);
                let (x, dy) = (inputs[0].0, inputs[1].0);
                for n in 0..n_n {
                    for oh in 0..oh_n {
                        let Some(ih) = self.source(0, oh, a) else {
                            continue;
                        };
                        for ow in 0..ow_n {
                            if let Some(iw) = self.source(1, ow, b) {
                                let xv = f64::from(x[self.x_at([n, ih, iw, c])]);
                                t.add(xv * f64::from(dy[self.dy_at([n, oh, ow, k])]));
                            }
                        }
                    }
                }
            }
            _ => {
                // flat indexes x's [n, h, w, c].
                let c = flat % c_n;
                let (iw, ih, n) = (
                    flat / c_n % w_n,
                    flat / (c_n * w_n) % h_n,
                    flat / (c_n * w_n * h_n),
                );
                for a in 0..kh_n {
                    let Some(oh) = self.reader(0, ih, a) else {
                        continue;
                    };
                    for b in 0..kw_n {
                        let Some(ow) = self.reader(1, iw, b) else {
                            continue;
                        };
                        if let OpKind::MaxPoolGrad(_) = kind {
                            if self.argmax(inputs[0].0, [n, oh, ow, c]) == Some([ih, iw]) {
                                t.add(f64::from(inputs[1].0[self.dy_at([n, oh, ow, c])]));
                            }
                            continue;
                        }
                        if let OpKind::AvgPoolGrad(_) = kind {
                            let g = f64::from(inputs[0].0[self.dy_at([n, oh, ow, c])]);
                            t.add(g / self.taps_in(oh, ow) as f64);
                            continue;
                        }
                        let (dy, filter) = (inputs[0].0, inputs[1].0);
                        let tap = ((a * kw_n + b) * c_n + c) * k_n;
                        for k in 0..k_n {
                            let g = f64::from(dy[self.dy_at([n, oh, ow, k])]);
                            t.add(g * f64::from(filter[tap + k]));
                        }
                    }
                }
            }
        }
        t
    }
}

/// Runs a window gradient; shapes were validated by the caller.
pub(super) fn run(
    kind: OpKind,
    inputs: &[(&[f32], Shape)],
    out_shape: Shape,
    out: &mut [f32],
) -> Result<(), Error> {
    let g = Geometry::new(kind, inputs, out_shape)?;
    check_len(
        inputs.len() as u8,
        dim(out_shape.elements().unwrap_or(0))?,
        out.len(),
    )?;
    for (i, o) in out.iter_mut().enumerate() {
        *o = g.terms(kind, inputs, i).sum as f32;
    }
    Ok(())
}

/// Per-element bounds: `(t + 2)·ε·Σ|terms|` over the `t` terms, and exact
/// for a `MaxPoolGrad` element that receives at most one gradient.
pub(super) fn tolerance(
    kind: OpKind,
    inputs: &[(&[f32], Shape)],
    out_shape: Shape,
    tol: &mut [f32],
) -> Result<(), Error> {
    let g = Geometry::new(kind, inputs, out_shape)?;
    let eps = f64::from(f32::EPSILON);
    let tiny = f64::from(f32::MIN_POSITIVE);
    for (i, t) in tol.iter_mut().enumerate() {
        let terms = g.terms(kind, inputs, i);
        *t = match kind {
            OpKind::MaxPoolGrad(_) if terms.count <= 1 => 0.0,
            _ => ((f64::from(terms.count) + 2.0) * eps * terms.abs + tiny) as f32,
        };
    }
    Ok(())
}

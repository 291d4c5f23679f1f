//! A weight fake-quant computed inside `QatWeights`, so the graph's own
//! `FakeQuantWithMinMaxVars…` node, which would run on the CPU every step,
//! can go: TF's CPU kernel's arithmetic step for step
//! (`tensorflow/core/kernels/fake_quant_ops_functor.h`, unchanged from TF
//! 2.15 to 2.21), in f32 with no fused multiply-add (TF's wheels are built
//! without FMA), so the result is TF's to the bit.

use super::params::ParamResult;

/// Which of TF's two weight fake-quants; they differ in one operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightFakeQuant {
    /// `FakeQuantWithMinMaxVars`: one range, divides by the scale.
    PerTensor,
    /// `FakeQuantWithMinMaxVarsPerChannel`: a range per innermost index,
    /// multiplies by the inverse scale.
    PerChannel,
}

/// TF's `Nudge`: `(nudged_min, nudged_max, scale, inverse scale)`.
fn nudge(min: f32, max: f32, quant_min: u16, quant_max: u16) -> (f32, f32, f32, f32) {
    let (lo, hi) = (f32::from(quant_min), f32::from(quant_max));
    let scale = (max - min) / (hi - lo);
    let inv_scale = (hi - lo) / (max - min);
    let zero_point_from_min = lo - min / scale;
    let zero_point = if zero_point_from_min < lo {
        quant_min
    } else if zero_point_from_min > hi {
        quant_max
    } else {
        // `static_cast<uint16_t>(std::round(…))`, in range here.
        zero_point_from_min.round() as u16
    };
    let zero_point = f32::from(zero_point);
    (
        (lo - zero_point) * scale,
        (hi - zero_point) * scale,
        scale,
        inv_scale,
    )
}

/// `w` fake-quantized in 8 bits, narrow range (`[1, 255]`, as weights
/// are), with the range `(min[j], max[j])` for the elements whose index is
/// `j` modulo the range's length (one entry per tensor, or one per
/// innermost index).
pub fn fake_quant(
    w: &[f32],
    min: &[f32],
    max: &[f32],
    kind: WeightFakeQuant,
) -> ParamResult<Vec<f32>> {
    let len = max.len();
    let fits = len > 0 && min.len() == len && w.len().is_multiple_of(len);
    if !fits || (kind == WeightFakeQuant::PerTensor && len != 1) {
        return Err(format!(
            "a {kind:?} weight fake-quant range of {} minima and {len} maxima for {} weights",
            min.len(),
            w.len()
        ));
    }
    let ranges: Vec<Option<(f32, f32, f32, f32)>> = min
        .iter()
        .zip(max)
        .map(|(&lo, &hi)| (lo != 0.0 || hi != 0.0).then(|| nudge(lo, hi, 1, 255)))
        .collect();
    Ok(w.iter()
        .enumerate()
        .map(|(i, &x)| {
            // TF outputs zeros for a `[0, 0]` range.
            let Some((nudged_min, nudged_max, scale, inv_scale)) = ranges[i % len] else {
                return 0.0;
            };
            let quant_zero = (-nudged_min * inv_scale + 0.5).floor();
            let shifted = x.min(nudged_max).max(nudged_min) - nudged_min;
            let steps = match kind {
                WeightFakeQuant::PerTensor => shifted / scale,
                WeightFakeQuant::PerChannel => shifted * inv_scale,
            };
            (steps - quant_zero + 0.5).floor() * scale
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_land_on_the_nudged_grid_and_clamp() {
        // [-1.27, 1.27] in 254 steps: a step of 0.01, zero exact.
        let w = [0.0, 0.004, 0.006, -0.013, 5.0, -5.0];
        for kind in [WeightFakeQuant::PerTensor, WeightFakeQuant::PerChannel] {
            let q = fake_quant(&w, &[-1.27], &[1.27], kind).unwrap();
            let steps: Vec<f32> = q.iter().map(|v| (v / 0.01).round()).collect();
            assert_eq!(steps, [0.0, 0.0, 1.0, -1.0, 127.0, -127.0], "{kind:?}");
            assert_eq!(q[0], 0.0);
        }
    }

    #[test]
    fn ranges_repeat_along_the_innermost_index_and_zero_ranges_give_zeros() {
        let q = fake_quant(
            &[0.5, 0.5, 0.5, 0.5],
            &[-1.27, 0.0],
            &[1.27, 0.0],
            WeightFakeQuant::PerChannel,
        )
        .unwrap();
        assert_eq!(q[1], 0.0);
        assert_eq!(q[3], 0.0);
        assert!((q[0] - 0.5).abs() < 1e-6 && q[0] == q[2]);
    }

    #[test]
    fn mismatched_ranges_are_named() {
        let per_tensor = fake_quant(&[1.0; 4], &[-1.0; 2], &[1.0; 2], WeightFakeQuant::PerTensor);
        assert!(per_tensor.unwrap_err().contains("PerTensor"));
        assert!(
            fake_quant(
                &[1.0; 3],
                &[-1.0; 2],
                &[1.0; 2],
                WeightFakeQuant::PerChannel
            )
            .is_err()
        );
        assert!(fake_quant(&[1.0; 2], &[-1.0], &[], WeightFakeQuant::PerChannel).is_err());
    }
}

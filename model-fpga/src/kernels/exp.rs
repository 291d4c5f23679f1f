//! A branch-free `eˣ` for the row kernels, so a loop over a row vectorizes
//! (`libm::expf` is a call per element: 13% of a transformer block's
//! forward on the sim went there).
//!
//! Cephes' `expf`: `x = n·ln 2 + r` with `|r| ≤ ln 2 / 2` (Cody–Waite, two
//! constants), a degree-7 polynomial for `eʳ`, then `2ⁿ` applied in two
//! halves so results in the subnormal range round once. Within 1 ulp of
//! the exact value on normal results (`exp_stays_within_one_ulp`); NaN
//! stays NaN, `+∞` and `x > 88.73` give `+∞`, `−∞` and `x < −103.98` give 0.

const LOG2E: f32 = core::f32::consts::LOG2_E;
/// `ln 2` split so `n·LN2_HI` is exact for every `n` here (`|n| ≤ 150`;
/// `LN2_HI` has 9 significant bits).
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// `1.5·2²³`: adding it rounds a float of magnitude below 2²² to an integer.
const ROUNDER: f32 = 12_582_912.0;
/// Inputs are clamped to this range first; beyond it the result is already
/// `+∞` or 0 (and the integer `n` stays small).
const LO: f32 = -104.0;
const HI: f32 = 89.0;

/// `eˣ`; see the module docs for its accuracy.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    let clamped = x.clamp(LO, HI);
    let shifted = clamped * LOG2E + ROUNDER;
    let n = shifted - ROUNDER;
    let n_int = shifted.to_bits() as i32 - ROUNDER.to_bits() as i32;
    let r = clamped - n * LN2_HI - n * LN2_LO;
    let z = r * r;
    let poly = ((((1.987_569_2e-4 * r + 1.398_2e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let y = poly * z + r + 1.0;
    // 2ⁿ in two factors, each a normal float (n ∈ [−150, 128]).
    let half = n_int >> 1;
    let y = y * pow2(half) * pow2(n_int - half);
    if x.is_nan() { x } else { y }
}

/// `2ᵏ` for `k ∈ [−126, 127]`.
#[inline(always)]
fn pow2(k: i32) -> f32 {
    f32::from_bits(((k + 127) as u32) << 23)
}

#[cfg(test)]
mod tests {
    use super::exp;

    fn ulp_error(x: f32) -> f64 {
        let want = libm::exp(f64::from(x));
        let got = f64::from(exp(x));
        let ulp = f64::from(f32::EPSILON) * libm::exp2(libm::floor(libm::log2(want)));
        (got - want).abs() / ulp.max(f64::from(f32::from_bits(1)))
    }

    #[test]
    fn exp_stays_within_one_ulp() {
        // Every 97th float from −103.9 to 88.7, both signs' exponents.
        let mut worst = (0.0f64, 0.0f32);
        for sign in [0u32, 0x8000_0000] {
            let mut bits = 0u32;
            while bits < 0x42b1_0000 {
                let x = f32::from_bits(bits | sign);
                if (-103.9..88.7).contains(&x) {
                    let e = ulp_error(x);
                    if e > worst.0 {
                        worst = (e, x);
                    }
                }
                bits += 97;
            }
        }
        assert!(worst.0 <= 1.0, "{} ulp at {:e}", worst.0, worst.1);
    }

    #[test]
    fn edges() {
        assert!(exp(f32::NAN).is_nan());
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(88.73), f32::INFINITY);
        assert_eq!(exp(-104.0), 0.0);
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-0.0), 1.0);
        assert_eq!(exp(1.0), core::f32::consts::E);
        assert!(exp(88.72) < f32::INFINITY && exp(88.72) > 3.3e38);
        // Subnormal results, rounded once.
        let tiny = exp(-100.0);
        assert!(tiny > 0.0 && tiny < f32::MIN_POSITIVE);
        assert!((tiny - libm::expf(-100.0)).abs() <= f32::from_bits(1));
    }
}

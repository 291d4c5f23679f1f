//! [`OpKind::RandomUniform`](crate::accelerator::OpKind::RandomUniform):
//! TF's stateless uniform floats, bit for bit. Philox-4×32-10 (Salmon et
//! al., "Parallel random numbers: as easy as 1, 2, 3", 2011) from a 64-bit
//! key and a 128-bit counter; group `g` of four outputs is the generator
//! skipped by `g`, each 32-bit word turned into `[1, 2)` by its low 23
//! bits as the mantissa, minus 1 (TF's `UniformDistribution<float>`).

const W32A: u32 = 0x9E37_79B9;
const W32B: u32 = 0xBB67_AE85;
const M4X32A: u32 = 0xD251_1F53;
const M4X32B: u32 = 0xCD9E_8D57;

/// The 128-bit counter as four words, low first.
type Counter = [u32; 4];

fn words(counter: [u64; 2]) -> Counter {
    let [a, b] = counter;
    [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32]
}

/// TF's `PhiloxRandom::Skip`, carries and all.
fn skip(c: &mut Counter, count: u64) {
    let lo = count as u32;
    let mut hi = (count >> 32) as u32;
    c[0] = c[0].wrapping_add(lo);
    if c[0] < lo {
        hi = hi.wrapping_add(1);
    }
    c[1] = c[1].wrapping_add(hi);
    if c[1] < hi {
        c[2] = c[2].wrapping_add(1);
        if c[2] == 0 {
            c[3] = c[3].wrapping_add(1);
        }
    }
}

/// Ten Philox rounds of `c` under `key`.
fn philox(mut c: Counter, key: u64) -> Counter {
    let mut k = [key as u32, (key >> 32) as u32];
    for round in 0..10 {
        let p0 = u64::from(M4X32A) * u64::from(c[0]);
        let p1 = u64::from(M4X32B) * u64::from(c[2]);
        c = [
            (p1 >> 32) as u32 ^ c[1] ^ k[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ c[3] ^ k[1],
            p0 as u32,
        ];
        if round < 9 {
            k = [k[0].wrapping_add(W32A), k[1].wrapping_add(W32B)];
        }
    }
    c
}

/// A 32-bit word as a float in `[0, 1)`.
fn to_unit(x: u32) -> f32 {
    f32::from_bits(127 << 23 | (x & 0x7f_ffff)) - 1.0
}

/// `counter` skipped by `count` groups, as TF's `PhiloxRandom::Skip` (a
/// stateful op's generator reserving its samples).
pub fn skipped(counter: [u64; 2], count: u64) -> [u64; 2] {
    let mut c = words(counter);
    skip(&mut c, count);
    [
        u64::from(c[0]) | u64::from(c[1]) << 32,
        u64::from(c[2]) | u64::from(c[3]) << 32,
    ]
}

/// Fills `out` with TF's `StatelessRandomUniformV2` floats for `key` and
/// `counter` (Philox).
pub fn uniform(key: u64, counter: [u64; 2], out: &mut [f32]) {
    let start = words(counter);
    for (g, group) in out.chunks_mut(4).enumerate() {
        let mut c = start;
        skip(&mut c, g as u64);
        for (o, &w) in group.iter_mut().zip(&philox(c, key)) {
            *o = to_unit(w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known-answer tests of Philox-4×32-10 from the Random123
    /// distribution (`kat_vectors`): counter, key, result.
    #[test]
    fn philox_matches_the_random123_known_answers() {
        let zero = philox([0; 4], 0);
        assert_eq!(zero, [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]);
        let ones = philox([u32::MAX; 4], u64::MAX);
        assert_eq!(ones, [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]);
        let pi = philox(
            [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
            0x299f_31d0 << 32 | 0xa409_3822,
        );
        assert_eq!(pi, [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]);
    }

    #[test]
    fn groups_skip_the_counter_with_its_carries() {
        let mut c = [u32::MAX, u32::MAX, 5, 0];
        skip(&mut c, 1);
        assert_eq!(c, [0, 0, 6, 0]);
        let mut out = [0.0; 6];
        uniform(7, [1, 2], &mut out);
        assert!(out.iter().all(|v| (0.0..1.0).contains(v)), "{out:?}");
        let mut second = [0.0; 4];
        uniform(7, [2, 2], &mut second);
        assert_eq!(out[4..], second[..2], "group 1 is the counter skipped by 1");
    }
}

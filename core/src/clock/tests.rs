use super::*;
use proptest::prelude::*;

const NOMINAL_HZ: u64 = 250_000_000;
/// The synthetic device oscillator runs 100 ppm fast.
const TRUE_HZ: u64 = 250_025_000;
/// Start the tick counter close to the top of the u64 range.
const T0: u64 = u64::MAX - (1 << 41);
const H0: u64 = 1_700_000_000_000_000_000;
const HOUR_NS: u64 = 3_600_000_000_000;
const TICK_NS: u64 = 1_000_000_000 / NOMINAL_HZ;

/// The synthetic device counter at true host time `host_ns` (floor).
fn device_ticks_at(host_ns: u64) -> u64 {
    let elapsed = u128::from(host_ns - H0);
    T0 + u64::try_from(elapsed * u128::from(TRUE_HZ) / 1_000_000_000).unwrap()
}

/// A sync pair read at `host_ns`, with an asymmetric host window (the device
/// read lands 500 ns after the first host read and 2500 ns before the second).
fn pair_at(host_ns: u64) -> SyncPair {
    SyncPair::new(device_ticks_at(host_ns), host_ns - 500, host_ns + 2_500)
}

fn error_ns(map: &ClockMap, host_ns: u64) -> u64 {
    map.to_host_ns(device_ticks_at(host_ns)).abs_diff(host_ns)
}

#[test]
fn pair_midpoint_and_uncertainty() {
    let pair = SyncPair::new(7, 1_000, 4_001);
    assert_eq!(pair.host_ns(), 2_500);
    assert_eq!(pair.uncertainty_ns(), 1_501);
}

#[test]
fn two_pairs_cancel_100_ppm_drift_within_documented_bound() {
    let start = pair_at(H0);
    let stop = pair_at(H0 + HOUR_NS);
    let map = ClockMap::from_pairs(start, stop, NOMINAL_HZ).unwrap();
    assert_eq!(map.rate_source(), RateSource::Measured);
    // docs/profiling.md: |error| <= max(u_start, u_stop) + 1 tick + 1 ns.
    let bound = start.uncertainty_ns().max(stop.uncertainty_ns()) + TICK_NS + 1;
    let mut worst = 0;
    for step in 0..=1_000u64 {
        let host_ns = H0 + HOUR_NS / 1_000 * step + step % 7;
        worst = worst.max(error_ns(&map, host_ns));
    }
    assert!(worst <= bound, "worst error {worst} ns > bound {bound} ns");
    // The window asymmetry really shows: the error is not trivially zero.
    assert!(worst >= 900, "worst error {worst} ns");
}

#[test]
fn one_pair_drifts_by_ppm_times_elapsed_within_documented_bound() {
    let start = pair_at(H0);
    let map = ClockMap::nominal(start, NOMINAL_HZ).unwrap();
    assert_eq!(map.rate_source(), RateSource::Nominal);
    let elapsed = HOUR_NS;
    // 100 ppm of an hour is 360 ms.
    let drift_ns = elapsed / 10_000;
    let bound = start.uncertainty_ns() + TICK_NS + 1 + drift_ns;
    let err = error_ns(&map, H0 + elapsed);
    assert!(err <= bound, "error {err} ns > bound {bound} ns");
    assert!(
        err >= drift_ns - start.uncertainty_ns() - TICK_NS,
        "error {err} ns"
    );
}

#[test]
fn extrapolation_past_the_stop_pair_grows_as_documented() {
    let start = pair_at(H0);
    let stop = pair_at(H0 + HOUR_NS);
    let map = ClockMap::from_pairs(start, stop, NOMINAL_HZ).unwrap();
    // k = 1.5 sessions from start: |1 - k| * u_start + k * u_stop + tick + 1.
    let (u0, u1) = (start.uncertainty_ns(), stop.uncertainty_ns());
    let bound = u0 / 2 + u1 * 3 / 2 + TICK_NS + 1;
    let err = error_ns(&map, H0 + HOUR_NS + HOUR_NS / 2);
    assert!(err <= bound, "error {err} ns > bound {bound} ns");
}

#[test]
fn unusable_stop_pairs_fall_back_to_nominal() {
    let start = SyncPair::new(1_000, 10_000, 10_000);
    for stop in [
        SyncPair::new(1_000, 20_000, 20_000), // no ticks elapsed
        SyncPair::new(999, 20_000, 20_000),   // ticks went backwards
        SyncPair::new(2_000, 10_000, 10_000), // no host time elapsed
    ] {
        let map = ClockMap::from_pairs(start, stop, 1_000_000_000).unwrap();
        assert_eq!(map.rate_source(), RateSource::Nominal, "{stop:?}");
        assert_eq!(map.to_host_ns(1_100), 10_100);
    }
}

#[test]
fn bad_input_is_an_error() {
    let pair = SyncPair::new(0, 5, 4);
    let err = ClockMap::nominal(pair, 1).unwrap_err();
    assert_eq!(err, ClockError::InvertedWindow);
    assert_eq!(err.kind(), ClockErrorKind::InvalidInput);
    let ok = SyncPair::new(0, 4, 5);
    assert_eq!(ClockMap::nominal(ok, 0), Err(ClockError::ZeroFrequency));
    assert_eq!(
        ClockMap::from_pairs(ok, pair, 1),
        Err(ClockError::InvertedWindow)
    );
}

#[test]
fn extreme_rates_and_ticks_saturate_instead_of_overflowing() {
    // 1 Hz nominal, full 64-bit span either side of the reference.
    let map = ClockMap::nominal(SyncPair::new(u64::MAX / 2, 0, 0), 1).unwrap();
    assert_eq!(map.to_host_ns(0), 0);
    assert_eq!(map.to_host_ns(u64::MAX), u64::MAX);
    // One tick that took 2^64 ns: the whole part saturates.
    let start = SyncPair::new(0, 0, 0);
    let stop = SyncPair::new(1, u64::MAX, u64::MAX);
    let map = ClockMap::from_pairs(start, stop, 1).unwrap();
    assert!(map.ps_from_ref(u64::MAX) > 0);
    assert_eq!(map.to_host_ns(u64::MAX), u64::MAX);
}

#[test]
fn sub_nanosecond_ticks_keep_picosecond_resolution() {
    // 4 GHz: 250 ps per tick.
    let map = ClockMap::nominal(SyncPair::new(0, 1_000, 1_000), 4_000_000_000).unwrap();
    assert_eq!(map.ps_from_ref(3), 750);
    assert_eq!(map.ps_since(999, 3), 1_750);
}

proptest! {
    #[test]
    fn mapping_is_monotonic(
        ref_ticks in any::<u64>(),
        hz in 1u64..10_000_000_000,
        a in any::<u64>(),
        b in any::<u64>(),
        stop_ticks in any::<u64>(),
        stop_ns in any::<u64>(),
    ) {
        let start = SyncPair::new(ref_ticks, 1 << 40, 1 << 40);
        let stop = SyncPair::new(stop_ticks, stop_ns, stop_ns);
        let map = ClockMap::from_pairs(start, stop, hz).unwrap();
        let (lo, hi) = (a.min(b), a.max(b));
        prop_assert!(map.ps_from_ref(lo) <= map.ps_from_ref(hi));
        prop_assert!(map.to_host_ns(lo) <= map.to_host_ns(hi));
    }
}

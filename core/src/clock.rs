//! Clock-domain mapping: device ticks to host time.
//!
//! A [`SyncPair`] is one simultaneous reading of both clocks: the host reads
//! its clock, reads the device tick counter, and reads its clock again. The
//! device read happened somewhere in that host window, so the pair's host time
//! is the window's midpoint with an uncertainty of half its width.
//!
//! A [`ClockMap`] is the linear map `host = ref_host + (ticks - ref_ticks) *
//! rate`. With pairs taken at start and stop the rate is measured (this
//! cancels a constant drift of the device oscillator); with one pair it falls
//! back to the nominal frequency. The error bound is in `docs/profiling.md`.
//!
//! The rate is held as a 64.64 fixed-point number of picoseconds per tick, so
//! mapping is a few integer multiplies: no floats, no overflow for any 64-bit
//! tick count, monotonic, and the rounding error stays below 1 ps.

/// One simultaneous reading of the host clock and the device tick counter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SyncPair {
    /// Device tick counter, read between the two host readings.
    pub device_ticks: u64,
    /// Host clock (ns) just before the device read.
    pub host_ns_before: u64,
    /// Host clock (ns) just after the device read.
    pub host_ns_after: u64,
}

impl SyncPair {
    /// A pair whose host window is `host_ns_before..=host_ns_after`.
    pub const fn new(device_ticks: u64, host_ns_before: u64, host_ns_after: u64) -> Self {
        Self {
            device_ticks,
            host_ns_before,
            host_ns_after,
        }
    }

    /// The best estimate of the host time of the device read (window midpoint).
    pub const fn host_ns(&self) -> u64 {
        let width = self.host_ns_after.saturating_sub(self.host_ns_before);
        self.host_ns_before + width / 2
    }

    /// Half the host window, rounded up: the uncertainty of [`Self::host_ns`].
    pub const fn uncertainty_ns(&self) -> u64 {
        self.host_ns_after
            .saturating_sub(self.host_ns_before)
            .div_ceil(2)
    }
}

/// Why a [`ClockMap`] could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ClockError {
    /// The nominal frequency is zero.
    ZeroFrequency,
    /// A sync pair's `host_ns_after` is before its `host_ns_before`.
    InvertedWindow,
}

/// Category of a [`ClockError`], in the embedded-hal style.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ClockErrorKind {
    /// The caller passed an impossible value.
    InvalidInput,
}

impl ClockError {
    /// The error's category.
    pub const fn kind(&self) -> ClockErrorKind {
        match self {
            Self::ZeroFrequency | Self::InvertedWindow => ClockErrorKind::InvalidInput,
        }
    }
}

impl core::fmt::Display for ClockError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Self::ZeroFrequency => "the device's nominal clock frequency is zero",
            Self::InvertedWindow => "a clock sync pair ends before it starts",
        })
    }
}

/// How a [`ClockMap`]'s rate was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RateSource {
    /// Measured from the start and stop sync pairs.
    Measured,
    /// The device's nominal frequency (one pair, or unusable pairs).
    Nominal,
}

/// A linear, monotonic map from device ticks to host time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ClockMap {
    ref_ticks: u64,
    ref_host_ns: u64,
    /// Whole picoseconds per tick.
    ps_per_tick: u64,
    /// Fractional picoseconds per tick, in units of 2^-64 ps.
    ps_per_tick_frac: u64,
    source: RateSource,
}

const PS_PER_NS: u128 = 1_000;
const PS_PER_S: u128 = 1_000_000_000_000;

impl ClockMap {
    /// A map through `pair` at the nominal rate of `frequency_hz`.
    pub fn nominal(pair: SyncPair, frequency_hz: u64) -> Result<Self, ClockError> {
        check_window(&pair)?;
        if frequency_hz == 0 {
            return Err(ClockError::ZeroFrequency);
        }
        let (ps_per_tick, ps_per_tick_frac) = fixed_rate(PS_PER_S, u128::from(frequency_hz));
        Ok(Self {
            ref_ticks: pair.device_ticks,
            ref_host_ns: pair.host_ns(),
            ps_per_tick,
            ps_per_tick_frac,
            source: RateSource::Nominal,
        })
    }

    /// A map through `start` whose rate is measured against `stop`.
    ///
    /// Falls back to the nominal rate when the pairs cannot give a rate: no
    /// ticks or no host time elapsed between them, or time ran backwards.
    pub fn from_pairs(
        start: SyncPair,
        stop: SyncPair,
        frequency_hz: u64,
    ) -> Result<Self, ClockError> {
        let nominal = Self::nominal(start, frequency_hz)?;
        check_window(&stop)?;
        let ticks = stop.device_ticks.saturating_sub(start.device_ticks);
        let host_ns = stop.host_ns().saturating_sub(start.host_ns());
        if ticks == 0 || host_ns == 0 {
            return Ok(nominal);
        }
        let (ps_per_tick, ps_per_tick_frac) =
            fixed_rate(u128::from(host_ns) * PS_PER_NS, u128::from(ticks));
        Ok(Self {
            ps_per_tick,
            ps_per_tick_frac,
            source: RateSource::Measured,
            ..nominal
        })
    }

    /// Where the rate came from.
    pub const fn rate_source(&self) -> RateSource {
        self.source
    }

    /// The host time (ns) of the reference pair.
    pub const fn ref_host_ns(&self) -> u64 {
        self.ref_host_ns
    }

    /// The rate in picoseconds per tick, rounded down (for display).
    pub const fn ps_per_tick(&self) -> u64 {
        self.ps_per_tick
    }

    /// Picoseconds from the reference pair's host time to `ticks` (negative
    /// before it). Monotonic non-decreasing in `ticks`.
    #[inline]
    pub fn ps_from_ref(&self, ticks: u64) -> i128 {
        // scale() < 2^128; beyond i128::MAX (only with absurd rates) saturate.
        if ticks >= self.ref_ticks {
            i128::try_from(self.scale(ticks - self.ref_ticks)).unwrap_or(i128::MAX)
        } else {
            -i128::try_from(self.scale(self.ref_ticks - ticks)).unwrap_or(i128::MAX)
        }
    }

    /// Picoseconds from `base_host_ns` to `ticks` on the host clock.
    #[inline]
    pub fn ps_since(&self, base_host_ns: u64, ticks: u64) -> i128 {
        let ref_from_base = (i128::from(self.ref_host_ns) - i128::from(base_host_ns)) * 1_000;
        ref_from_base.saturating_add(self.ps_from_ref(ticks))
    }

    /// The host time (ns, rounded down) of `ticks`, saturating at the ends of
    /// the `u64` range.
    pub fn to_host_ns(&self, ticks: u64) -> u64 {
        let ns = (i128::from(self.ref_host_ns) * 1_000).saturating_add(self.ps_from_ref(ticks));
        let ns = ns.div_euclid(1_000);
        u64::try_from(ns.max(0)).unwrap_or(u64::MAX)
    }

    /// `delta` ticks in picoseconds, rounded down.
    #[inline]
    fn scale(&self, delta: u64) -> u128 {
        let delta = u128::from(delta);
        delta * u128::from(self.ps_per_tick) + ((delta * u128::from(self.ps_per_tick_frac)) >> 64)
    }
}

fn check_window(pair: &SyncPair) -> Result<(), ClockError> {
    if pair.host_ns_after < pair.host_ns_before {
        return Err(ClockError::InvertedWindow);
    }
    Ok(())
}

/// `num / den` as 64.64 fixed point (whole part saturates at `u64::MAX`).
fn fixed_rate(num: u128, den: u128) -> (u64, u64) {
    let whole = num / den;
    let rem = num % den;
    // rem < den <= 2^64 (den comes from a u64 count or frequency), so the
    // shifted remainder fits in u128 and the quotient is below 2^64.
    let frac = (rem << 64) / den;
    (
        u64::try_from(whole).unwrap_or(u64::MAX),
        u64::try_from(frac).unwrap_or(u64::MAX),
    )
}

#[cfg(all(test, not(miri)))]
mod tests;

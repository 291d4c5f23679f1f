//! The conformance suite: device-neutral checks any
//! [`Accelerator`] can run (feature `conformance`).
//!
//! Each case drives the device only through the trait and checks one part
//! of its contract: device facts, allocation, copies, fills, fence order,
//! the clock, every declared op against the [reference
//! kernels](crate::reference) (and the refusal of every op not declared),
//! error reporting, reset, profiling events and timeouts. What each case
//! checks, the tolerances and what "skipped" means: `docs/conformance.md`.
//!
//! No case panics on device misbehaviour: a wrong result, an error where
//! none was due, or a panic inside the driver is a [`Outcome::Failed`] with
//! a message. A case that cannot apply (profiling on a device without it, a
//! timeout on a fixture that cannot make the device hang) is
//! [`Outcome::Skipped`] with the reason, never passed.
//!
//! # Running it
//! Three ways, from the most to the least granular:
//! - [`conformance_tests!`](crate::conformance_tests): one `#[test]` per case,
//!   each on a fresh fixture.
//! - Each case is a `pub fn` in [`cases`], to call from your own tests.
//! - [`run_all`] (a bare device) or [`run_fixture`]: every case, one after
//!   the other on the same device, into a [`Report`].
//!
//! ```no_run
//! use tensorplug_core::accelerator::Accelerator;
//! use tensorplug_core::conformance::{self, Config};
//!
//! fn check<A: Accelerator>(dev: &mut A) {
//!     let report = conformance::run_all(dev, &Config::default());
//!     println!("{report}");
//!     report.assert_passed(); // panics listing every failed case
//! }
//! ```

mod case;
pub mod cases;
mod index;
mod int8;
mod ops;
pub(crate) mod support;
mod types;

pub use types::{Bare, Config, Fixture, Outcome};

use crate::accelerator::prelude::*;
use core::fmt;
use core::time::Duration;
use std::format;
use std::string::{String, ToString};
use std::time::Instant;
use std::vec::Vec;

use crate::accelerator::Accelerator;

type CaseFn<F> = fn(&mut F, &Config) -> Outcome;

macro_rules! case_table {
    ($f:ty; $($name:ident),* $(,)?) => {
        [$((stringify!($name), cases::$name::<$f> as CaseFn<$f>)),*]
    };
}

macro_rules! case_names {
    (; $($name:ident),* $(,)?) => {
        [$(stringify!($name)),*]
    };
}

/// One case in a [`Report`].
#[derive(Clone, Debug)]
pub struct CaseReport {
    /// The case's name (its function in [`cases`]).
    pub name: &'static str,
    /// How it ended.
    pub outcome: Outcome,
    /// How long it took.
    pub elapsed: Duration,
}

/// The outcome of every case of a run.
#[derive(Clone, Debug)]
pub struct Report {
    /// The device's name, from [`DeviceInfo`](crate::accelerator::DeviceInfo).
    pub device: String,
    /// Every case, in the order run.
    pub cases: Vec<CaseReport>,
}

impl Report {
    /// True if no case failed (skipped cases do not fail a run).
    pub fn passed(&self) -> bool {
        !self.cases.iter().any(|c| c.outcome.is_failed())
    }

    /// The failed cases.
    pub fn failures(&self) -> impl Iterator<Item = &CaseReport> {
        self.cases.iter().filter(|c| c.outcome.is_failed())
    }

    /// The skipped cases.
    pub fn skipped(&self) -> impl Iterator<Item = &CaseReport> {
        self.cases.iter().filter(|c| c.outcome.is_skipped())
    }

    /// The case named `name`, if it ran.
    pub fn case(&self, name: &str) -> Option<&CaseReport> {
        self.cases.iter().find(|c| c.name == name)
    }

    /// Panics, listing every failed case, unless the run passed.
    #[track_caller]
    pub fn assert_passed(&self) {
        if !self.passed() {
            let list: Vec<String> = self
                .failures()
                .map(|c| format!("  {}: {}", c.name, c.outcome.message()))
                .collect();
            panic!(
                "{} of {} conformance cases failed on {}:\n{}\n\nfull report:\n{self}",
                list.len(),
                self.cases.len(),
                self.device,
                list.join("\n")
            );
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let failed = self.failures().count();
        let skipped = self.skipped().count();
        writeln!(
            f,
            "conformance of {:?}: {} passed, {skipped} skipped, {failed} failed",
            self.device,
            self.cases.len() - failed - skipped,
        )?;
        for c in &self.cases {
            writeln!(
                f,
                "  {:<40} {:>8.1} ms  {}",
                c.name,
                c.elapsed.as_secs_f64() * 1e3,
                c.outcome
            )?;
        }
        Ok(())
    }
}

/// Runs every case on `dev`, one after the other, without fixture hooks
/// (so the timeout case is skipped). Never panics on device misbehaviour.
pub fn run_all<A: Accelerator>(dev: &mut A, cfg: &Config) -> Report {
    run_fixture(&mut Bare(dev), cfg)
}

/// Runs every case on the fixture's device, one after the other.
pub fn run_fixture<F: Fixture>(f: &mut F, cfg: &Config) -> Report {
    let table = crate::__conformance_with_cases!([case_table] F);
    let device = f.device().info().name.as_str().to_string();
    let cases = table
        .iter()
        .map(|&(name, case)| {
            let start = Instant::now();
            let outcome = case(f, cfg);
            CaseReport {
                name,
                outcome,
                elapsed: start.elapsed(),
            }
        })
        .collect();
    Report { device, cases }
}

/// The names of every case, in the order [`run_fixture`] runs them.
pub const CASES: &[&str] = &crate::__conformance_with_cases!([case_names]);

/// The one list of cases: calls `callback! { args; case, case, … }`.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_with_cases {
    ([$($callback:tt)*] $($args:tt)*) => {
        $($callback)*! {
            $($args)*;
            info_is_sane,
            allocations_are_aligned_and_accounted,
            oversized_allocation_is_out_of_memory,
            copies_round_trip,
            copy_on_device_moves_bytes,
            fill_repeats_the_pattern,
            fences_complete_in_order,
            clock_is_monotonic,
            op_matmul,
            op_fused_matmul,
            op_bias_add,
            op_unary,
            op_binary,
            op_records,
            op_softmax,
            op_reduce_sum,
            op_log_softmax,
            op_conv2d,
            op_depthwise_conv2d,
            op_max_pool,
            op_avg_pool,
            op_conv2d_backprop_input,
            op_conv2d_backprop_filter,
            op_max_pool_grad,
            op_avg_pool_grad,
            op_fused_conv2d,
            op_transpose,
            op_reduce_max,
            op_reduce_min,
            op_reduce_prod,
            op_gather,
            op_segment_sum,
            op_cast,
            op_select,
            op_arg_max,
            op_arg_min,
            op_concat,
            op_random_uniform,
            op_int8,
            vendor_ops,
            inconsistent_op_is_invalid_argument,
            out_of_range_access_is_an_error,
            reset_recovers,
            profiling_records_op_events,
            timeout_then_reset_recovers,
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_emit_tests {
    ($module:ident, $make:expr, $cfg:expr; $($name:ident),* $(,)?) => {
        /// The conformance suite, one test per case.
        mod $module {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $name() {
                    let mut fixture = $make;
                    let cfg: $crate::conformance::Config = $cfg;
                    $crate::conformance::cases::$name(&mut fixture, &cfg)
                        .assert_ok(stringify!($name));
                }
            )*
        }
    };
}

/// Expands to a module with one `#[test]` per case, each on a fresh
/// fixture built by the expression (a [`Fixture`]), optionally with a
/// [`Config`] expression (default [`Config::default()`]). The module is
/// `conformance_suite` unless named with `mod name =` first (to run the
/// suite over several fixtures in one file).
///
/// Compiled users: `examples/device-npu/tests/conformance.rs` and
/// `model-fpga/tests/conformance.rs`. In short:
///
/// ```text
/// // tests/conformance.rs of a device crate
/// tensorplug_core::conformance_tests!(MyFixture::new());
/// tensorplug_core::conformance_tests!(mod over_spi = MyFixture::spi(), Config {
///     short_timeout: Duration::from_millis(500),
///     ..Config::default()
/// });
/// ```
/// A failed case panics with its message; a skipped one passes and prints
/// why it was skipped (visible with `--nocapture`).
#[macro_export]
macro_rules! conformance_tests {
    (mod $module:ident = $make:expr, $cfg:expr $(,)?) => {
        $crate::__conformance_with_cases!([$crate::__conformance_emit_tests] $module, $make, $cfg);
    };
    (mod $module:ident = $make:expr $(,)?) => {
        $crate::conformance_tests!(mod $module = $make, $crate::conformance::Config::default());
    };
    ($make:expr, $cfg:expr $(,)?) => {
        $crate::conformance_tests!(mod conformance_suite = $make, $cfg);
    };
    ($make:expr $(,)?) => {
        $crate::conformance_tests!(mod conformance_suite = $make);
    };
}

#[cfg(test)]
mod tests;

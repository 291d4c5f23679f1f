//! `selftest-requantize` builds only: `tensorplug_core::quant` checked on
//! the Cortex-M4 against the golden vectors the host checks it against
//! (`core/tests/data/requantize_golden.txt`); the verdict is a defmt line
//! and QEMU's exit code.

use cortex_m_semihosting::debug;
use tensorplug_core::quant::{
    Requantize, Rounding, rounding_divide_by_pot, saturating_rounding_doubling_high_mul,
};

const GOLDEN: &str = include_str!("../../core/tests/data/requantize_golden.txt");

/// Checks every golden line, logs the counts and exits QEMU (without
/// semihosting it returns, and the firmware starts as usual).
pub fn requantize() {
    let (mut checked, mut failed) = (0u32, 0u32);
    for line in GOLDEN.lines().filter(|l| !l.starts_with('#')) {
        checked += 1;
        if !holds(line) {
            failed += 1;
            defmt::error!("requantize golden line fails: {=str}", line);
        }
    }
    defmt::info!(
        "requantize golden: {=u32} checked, {=u32} failed",
        checked,
        failed
    );
    debug::exit(if failed == 0 {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
}

/// Whether the Rust code gives `line`'s answer (an unparsable line fails).
fn holds(line: &str) -> bool {
    let mut f = line.split(' ');
    let kind = f.next().unwrap_or("");
    let mut int = || f.next().and_then(|w| w.parse::<i64>().ok());
    match kind {
        "mbqm" | "mbqm1" => {
            let (Some(x), Some(m), Some(s)) = (int(), int(), int()) else {
                return false;
            };
            let want = f.next();
            let rounding = if kind == "mbqm" {
                Rounding::Double
            } else {
                Rounding::Single
            };
            match Requantize::new(m as i32, s as i32) {
                Ok(r) => {
                    want.and_then(|w| w.parse::<i32>().ok()) == Some(r.apply(x as i32, rounding))
                }
                Err(_) => want == Some("refused"),
            }
        }
        "srdhm" | "rdbpot" => {
            let (Some(a), Some(b), Some(want)) = (int(), int(), int()) else {
                return false;
            };
            let got = if kind == "srdhm" {
                saturating_rounding_doubling_high_mul(a as i32, b as i32)
            } else {
                rounding_divide_by_pot(a as i32, b as u32)
            };
            i64::from(got) == want
        }
        "quantize" => {
            let Some(bits) = f.next().and_then(|h| u64::from_str_radix(h, 16).ok()) else {
                return false;
            };
            let got = Requantize::from_real(f64::from_bits(bits));
            match (f.next(), f.next()) {
                (Some("refused"), None) => got.is_err(),
                (Some(m), Some(s)) => match (m.parse(), s.parse()) {
                    (Ok(m), Ok(s)) => got == Requantize::new(m, s),
                    _ => false,
                },
                _ => false,
            }
        }
        _ => false,
    }
}

//! `tensorplug_core::quant` against golden vectors computed from TFLite's
//! formulas by an independent implementation
//! (`tests/python/requantize_golden.py`): ties, saturation, wrapping left
//! shifts, shifts beyond ±31 and multipliers that cannot be represented, in
//! both of TFLite's roundings.

use tensorplug_core::quant::{
    QuantError, Requantize, Rounding, rounding_divide_by_pot, saturating_rounding_doubling_high_mul,
};

const GOLDEN: &str = include_str!("data/requantize_golden.txt");

#[test]
fn requantize_matches_the_golden_vectors() {
    let (mut applied, mut refused) = (0, 0);
    for line in GOLDEN.lines().filter(|l| l.starts_with("mbqm")) {
        let f: Vec<&str> = line.split(' ').collect();
        let rounding = match f[0] {
            "mbqm" => Rounding::Double,
            _ => Rounding::Single,
        };
        let x: i32 = f[1].parse().unwrap();
        let (m, s): (i32, i32) = (f[2].parse().unwrap(), f[3].parse().unwrap());
        match (Requantize::new(m, s), f[4]) {
            (Err(QuantError::ShiftOutOfRange { shift }), "refused") => {
                assert_eq!(shift, s);
                refused += 1;
            }
            (Err(QuantError::Negative), "refused") => {
                assert!(m < 0, "{line}");
                refused += 1;
            }
            (Ok(r), want) => {
                assert_eq!(r.apply(x, rounding).to_string(), want, "{line}");
                applied += 1;
            }
            (got, _) => panic!("{line}: {got:?}"),
        }
    }
    assert!(
        applied > 1400 && refused >= 100,
        "{applied} applied, {refused} refused"
    );
}

#[test]
fn quantize_multiplier_matches_the_golden_vectors() {
    let mut n = 0;
    for line in GOLDEN.lines().filter(|l| l.starts_with("quantize ")) {
        let f: Vec<&str> = line.split(' ').collect();
        let real = f64::from_bits(u64::from_str_radix(f[1], 16).unwrap());
        let got = Requantize::from_real(real);
        match f[2] {
            "refused" => assert!(got.is_err(), "{line}: {got:?}"),
            m => {
                let want = Requantize::new(m.parse().unwrap(), f[3].parse().unwrap()).unwrap();
                assert_eq!(got, Ok(want), "{line} ({real:e})");
            }
        }
        n += 1;
    }
    assert!(n > 150, "{n}");
}

#[test]
fn refusals_say_why() {
    assert_eq!(Requantize::from_real(f64::NAN), Err(QuantError::NotFinite));
    assert_eq!(Requantize::from_real(-0.5), Err(QuantError::Negative));
    assert_eq!(Requantize::new(-1, 0), Err(QuantError::Negative));
    let e = Requantize::from_real(2f64.powi(31)).unwrap_err();
    assert_eq!(e, QuantError::ShiftOutOfRange { shift: 32 });
    assert_eq!(
        e.to_string(),
        "the requantization shift 32 is outside [-31, 30] (a multiplier of 2^30 or more)"
    );
}

#[test]
fn the_two_roundings_match_the_golden_vectors() {
    let mut n = 0;
    for line in GOLDEN.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let got = match f[0] {
            "srdhm" => {
                saturating_rounding_doubling_high_mul(f[1].parse().unwrap(), f[2].parse().unwrap())
            }
            "rdbpot" => rounding_divide_by_pot(f[1].parse().unwrap(), f[2].parse().unwrap()),
            _ => continue,
        };
        assert_eq!(got.to_string(), f[3], "{line}");
        n += 1;
    }
    assert!(n > 450, "{n}");
}

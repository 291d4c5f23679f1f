"""Golden vectors for int8 requantization, from TFLite's formulas.

An independent implementation in Python integers, with C's semantics, of
tflite::QuantizeMultiplier and both builds of
tflite::MultiplyByQuantizedMultiplier: double rounding (gemmlowp's
SaturatingRoundingDoublingHighMul, then RoundingDivideByPOT; tflite-micro's
default) and TFLITE_SINGLE_ROUNDING (one rounding 64-bit shift; the TFLite
interpreter of the tensorflow wheel). Writes
core/tests/data/requantize_golden.txt (or the path given), which
core/tests/requantize_golden.rs checks the Rust implementation against;
tests/tests/quant.rs checks that this script still writes the same file.

usage: requantize_golden.py [out | -]   (- writes to stdout)
"""
import math
import random
import struct
import sys

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def wrap32(v):
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


def c_div(n, d):
    """C integer division: truncates toward zero."""
    q = abs(n) // abs(d)
    return q if (n >= 0) == (d > 0) else -q


def srdhm(a, b):
    """gemmlowp::SaturatingRoundingDoublingHighMul for int32."""
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return c_div(ab + nudge, 1 << 31)


def rdbpot(x, exponent):
    """gemmlowp::RoundingDivideByPOT (exponent in [0, 31])."""
    assert 0 <= exponent <= 31
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def mbqm(x, multiplier, shift):
    """tflite::MultiplyByQuantizedMultiplier, double rounding; None where the
    device refuses the parameters (multiplier < 0, shift outside [-31, 30])."""
    if multiplier < 0 or not -31 <= shift <= 30:
        return None
    left = shift if shift > 0 else 0
    right = 0 if shift > 0 else -shift
    return rdbpot(srdhm(wrap32(x * (1 << left)), multiplier), right)


def mbqm_single(x, multiplier, shift):
    """The TFLITE_SINGLE_ROUNDING build of MultiplyByQuantizedMultiplier
    (int64 arithmetic, an arithmetic right shift; the int32 cast wraps)."""
    if multiplier < 0 or not -31 <= shift <= 30:
        return None
    total = 31 - shift
    return wrap32((x * multiplier + (1 << (total - 1))) >> total)


def quantize_multiplier(m):
    """tflite::QuantizeMultiplier; None where the device refuses m (not
    finite, negative, or a shift over 30)."""
    if not math.isfinite(m) or m < 0:
        return None
    if m == 0:
        return 0, 0
    q, shift = math.frexp(m)
    v = q * (1 << 31)
    q_fixed = int(math.floor(v + 0.5))  # TfLiteRound: half away from zero (v > 0)
    assert q_fixed <= 1 << 31
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        shift, q_fixed = 0, 0
    if shift > 30:
        return None
    return q_fixed, shift


def f64_hex(m):
    return struct.pack(">d", m).hex()


def main():
    rng = random.Random(20261126)
    lines = ["# requantize golden vectors: see tests/python/requantize_golden.py",
             "# mbqm <x> <multiplier> <shift> <result | refused> (double rounding)",
             "# mbqm1 <x> <multiplier> <shift> <result | refused> (TFLITE_SINGLE_ROUNDING)",
             "# quantize <f64 bits, hex> <multiplier> <shift> | refused",
             "# srdhm <a> <b> <result>; rdbpot <x> <exponent> <result>"]
    xs = [0, 1, -1, 2, -2, 3, -3, 127, -128, 255, -255, 1 << 20, -(1 << 20),
          INT32_MAX, INT32_MIN, INT32_MAX - 1, INT32_MIN + 1, 12345, -12345]
    multipliers = [0, 1, 1 << 30, (1 << 30) + 1, INT32_MAX, 1518500250, 1073741823]
    shifts = [-31, -30, -16, -8, -1, 0, 1, 2, 8, 30, -32, 31, 40, -40]
    cases = [(x, m, s) for x in xs for m in multipliers for s in (0, -1, -8, 1)]
    cases += [(x, (1 << 30), s) for x in xs for s in shifts]
    # Ties: x·m/2³¹ exactly half-way, either sign, in both roundings.
    cases += [(1, 1 << 30, 0), (-1, 1 << 30, 0), (3, 1 << 30, -1), (-3, 1 << 30, -1),
              (5, 1 << 30, -1), (-5, 1 << 30, -1), (6, 1 << 30, -2), (-6, 1 << 30, -2)]
    # Saturation: the one overflowing product, and left shifts that wrap x.
    cases += [(INT32_MIN, INT32_MIN, 0), (INT32_MIN, INT32_MAX, 0), (1 << 30, INT32_MAX, 2),
              (-(1 << 30), INT32_MAX, 2), (INT32_MAX, INT32_MAX, 30)]
    for _ in range(300):
        x = rng.choice([rng.randint(-(1 << 16), 1 << 16), rng.randint(INT32_MIN, INT32_MAX)])
        cases.append((x, rng.randint(1 << 30, INT32_MAX), rng.randint(-31, 2)))
    for x, m, s in cases:
        r = mbqm(x, m, s)
        lines.append(f"mbqm {x} {m} {s} {'refused' if r is None else r}")
    for x, m, s in cases:
        r = mbqm_single(x, m, s)
        lines.append(f"mbqm1 {x} {m} {s} {'refused' if r is None else r}")
    edges = [0, 1, -1, 2, -2, 3, -3, (1 << 30), -(1 << 30), (1 << 30) + 1, INT32_MAX, INT32_MIN,
             INT32_MIN + 1, 1518500250, -1518500250, 46341, -46341]
    for a in edges:
        for b in edges:
            lines.append(f"srdhm {a} {b} {srdhm(a, b)}")
    for x in edges + [5, -5, 6, -6, 7, -7, 12345, -12345]:
        for e in (0, 1, 2, 3, 15, 16, 30, 31):
            lines.append(f"rdbpot {x} {e} {rdbpot(x, e)}")
    reals = [0.0, 1.0, 0.5, 0.25, 2.0, 0.75, 1e-3, 3.0517578125e-05, 2.0 ** -31, 2.0 ** -32,
             2.0 ** -33, 1e-12, 2.0 ** 30, 2.0 ** 31, 2.0 ** 40, -0.5, math.inf, math.nan,
             0.9999999999, 1 - 2.0 ** -53, 0.0039215686274509803, 0.02352941176470588]
    reals += [rng.uniform(1e-6, 1.0) for _ in range(100)]
    reals += [rng.uniform(1e-6, 1.0) * 2.0 ** rng.randint(-40, 35) for _ in range(60)]
    for m in reals:
        r = quantize_multiplier(m)
        lines.append(f"quantize {f64_hex(m)} " + ("refused" if r is None else f"{r[0]} {r[1]}"))
    text = "\n".join(lines) + "\n"
    out = sys.argv[1] if len(sys.argv) > 1 else "core/tests/data/requantize_golden.txt"
    if out == "-":
        sys.stdout.write(text)
        return
    with open(out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()

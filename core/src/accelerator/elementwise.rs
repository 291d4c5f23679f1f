//! The element-wise families: ops of one operand ([`Unary`]) and NumPy-
//! broadcasting ops of two ([`Binary`]). A member is nothing but its
//! catalogue declaration and its scalar rules ([`Elementwise`]): the shape
//! rule, cost, conformance cases, device command and TF kernel are the
//! family's. `docs/ops.md`, "Adding a device op".

use super::catalogue::{BUILTIN, ELEMENTWISE_RULES};
use super::op::{Form, OpDecl};

/// Absolute part of the element-wise bound (`docs/device-numerics.md`).
pub const ELEMENTWISE_ABS: f32 = 1e-5;
/// Relative part of the element-wise bound.
pub const ELEMENTWISE_REL: f32 = 1e-5;

/// What the catalogue declares about an element-wise op besides its
/// identity ([`ELEMENTWISE_RULES`](super::catalogue::ELEMENTWISE_RULES)).
#[derive(Clone, Copy)]
pub struct Elementwise {
    /// The reference kernel on one element: `reference(a, b)` (`b` is 0
    /// for a unary op), computed in `f64` where it matters and rounded once.
    pub reference: fn(f32, f32) -> f32,
    /// The bound on a device's error for operands `a`, `b` whose reference
    /// result is `want`: `|got − want| ≤ bound(a, b, want)` (NaN must give
    /// NaN and ±∞ the same ∞ whatever the bound).
    pub bound: fn(f32, f32, f32) -> f32,
    /// Floating-point operations per output element, for the profiler.
    pub flops: u8,
}

macro_rules! family {
    ($(#[$doc:meta])* $name:ident, $form:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name(pub(super) u16);

        impl $name {
            /// The built-in op named `name` (its [`OpDecl::name`]); a
            /// compile-time error in a `const` if the catalogue has no such
            /// member of this family.
            pub const fn named(name: &str) -> Self {
                let mut i = 0;
                while i < BUILTIN.len() {
                    let decl = &BUILTIN[i];
                    if let (Form::$form(op), true) = (decl.form, str_eq(decl.name, name)) {
                        return op;
                    }
                    i += 1;
                }
                panic!(concat!("no ", $what, " op of that name in the catalogue"))
            }

            /// The member whose declaration is `decl`, if it is one.
            pub const fn of(decl: &OpDecl) -> Option<Self> {
                match decl.form {
                    Form::$form(op) => Some(op),
                    _ => None,
                }
            }

            /// The member of catalogue code `code`, if there is one.
            pub const fn from_code(code: u16) -> Option<Self> {
                if code == 0 || code as usize > BUILTIN.len() {
                    return None;
                }
                Self::of(&BUILTIN[code as usize - 1])
            }

            /// Its catalogue code ([`OpId::code`](super::OpId::code)).
            pub const fn code(self) -> u16 {
                self.0
            }

            /// Its declaration.
            pub const fn decl(self) -> &'static OpDecl {
                &BUILTIN[self.0 as usize - 1]
            }

            /// Its scalar rules (a catalogue test checks every member has
            /// them; [`Elementwise::MISSING`] otherwise).
            pub fn rules(self) -> &'static Elementwise {
                rules_of(self.0)
            }

            /// Its name, as in errors.
            pub const fn name(self) -> &'static str {
                self.decl().name
            }

            /// Every member of the family in the catalogue, in code order.
            pub fn all() -> impl Iterator<Item = Self> {
                BUILTIN.iter().filter_map(Self::of)
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.name())
            }
        }

        #[cfg(feature = "defmt")]
        impl defmt::Format for $name {
            fn format(&self, f: defmt::Formatter<'_>) {
                defmt::write!(f, "{=str}", self.name())
            }
        }
    };
}

family!(
    /// An element-wise op of one operand (`out[i] = op(x[i])`), by its
    /// catalogue code.
    Unary,
    Unary,
    "unary"
);
family!(
    /// An element-wise op of two operands with NumPy broadcasting
    /// (`out = a ∘ b`), by its catalogue code.
    Binary,
    Binary,
    "binary"
);

impl Elementwise {
    /// The rules of a member without an entry in `ELEMENTWISE_RULES`: a
    /// negative bound, so no device passes its cases.
    pub const MISSING: Self = Self {
        reference: |_, _| 0.0,
        bound: |_, _, _| -1.0,
        flops: 0,
    };
}

fn rules_of(code: u16) -> &'static Elementwise {
    ELEMENTWISE_RULES
        .iter()
        .find(|(c, _)| *c == code)
        .map_or(&Elementwise::MISSING, |(_, rules)| rules)
}

impl Unary {
    /// The op on one element (its [`Elementwise::reference`]).
    pub fn apply(self, x: f32) -> f32 {
        (self.rules().reference)(x, 0.0)
    }
}

impl Binary {
    /// The op on one pair of elements (its [`Elementwise::reference`]).
    pub fn apply(self, a: f32, b: f32) -> f32 {
        (self.rules().reference)(a, b)
    }
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

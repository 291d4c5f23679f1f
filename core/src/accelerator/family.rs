//! The element-wise families' lookups in the catalogue: names, codes,
//! declarations and scalar rules of [`Unary`] and [`Binary`].

use super::catalogue::{BUILTIN, ELEMENTWISE_RULES};
use super::elementwise::{Binary, Elementwise, Unary};
use super::op::{Form, OpDecl};

macro_rules! family {
    ($name:ident, $what:literal) => {
        impl $name {
            /// The built-in op named `name` (its [`OpDecl::name`]); a
            /// compile-time error in a `const` if the catalogue has no such
            /// member of this family.
            pub const fn named(name: &str) -> Self {
                if let Some(decl) = super::catalogue::named(name) {
                    if let Some(op) = Self::of(decl) {
                        return op;
                    }
                }
                panic!(concat!("no ", $what, " op of that name in the catalogue"))
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

            /// The op with parameter `value`; `self` unchanged if its
            /// declaration names no parameter ([`OpDecl::param`]).
            pub const fn with_param(self, value: f32) -> Self {
                match self.decl().param() {
                    Some(_) => Self(self.0, value.to_bits()),
                    None => self,
                }
            }

            /// Its parameter (0.0 for an op without one).
            pub const fn param(self) -> f32 {
                f32::from_bits(self.1)
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
                f.write_str(self.name())?;
                match self.decl().param() {
                    Some(name) => write!(f, "({name}={:?})", self.param()),
                    None => Ok(()),
                }
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

family!(Unary, "unary");
family!(Binary, "binary");

fn rules_of(code: u16) -> &'static Elementwise {
    ELEMENTWISE_RULES
        .iter()
        .find(|(c, _)| *c == code)
        .map_or(&Elementwise::MISSING, |(_, rules)| rules)
}

impl Unary {
    /// The member whose declaration is `decl`, if it is one.
    pub const fn of(decl: &OpDecl) -> Option<Self> {
        match decl.form {
            Form::Unary(op, _) => Some(op),
            _ => None,
        }
    }

    /// The op on one element (its rules' [`Elementwise::eval`]).
    pub fn apply(self, x: f32) -> f32 {
        self.rules().eval(x, 0.0, self.param())
    }
}

impl Binary {
    /// The member whose declaration is `decl`, if it is one.
    pub const fn of(decl: &OpDecl) -> Option<Self> {
        match decl.form {
            Form::Binary(op, _) => Some(op),
            _ => None,
        }
    }

    /// The op on one pair of elements (its rules' [`Elementwise::eval`]).
    pub fn apply(self, a: f32, b: f32) -> f32 {
        self.rules().eval(a, b, self.param())
    }
}

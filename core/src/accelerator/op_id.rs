//! An op's identity ([`OpId`], in a [`Namespace`]) and its attribute block
//! ([`Attrs`]): plain values that the catalogue, capabilities and the link
//! share.

use serde::{Deserialize, Serialize};

/// Whose op an [`OpId`] names: tensorplug's own (0) or a vendor's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Namespace(pub u32);

impl Namespace {
    /// tensorplug's built-in ops ([`BUILTIN`](super::BUILTIN)).
    pub const TENSORPLUG: Self = Self(0);

    /// A vendor's namespace, from a name they own (e.g. `"com.acme.npu"`):
    /// its 32-bit FNV-1a hash, never 0. Two names collide with odds of
    /// 1 in 4·10⁹; the host bridge refuses a plugin whose ids collide.
    pub const fn named(name: &str) -> Self {
        let bytes = name.as_bytes();
        let mut hash: u32 = 0x811c_9dc5;
        let mut i = 0;
        while i < bytes.len() {
            hash ^= bytes[i] as u32;
            hash = hash.wrapping_mul(0x0100_0193);
            i += 1;
        }
        Self(if hash == 0 { 1 } else { hash })
    }
}

/// An op's stable identity: append new codes, never reuse one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct OpId {
    /// Whose op.
    pub namespace: Namespace,
    /// The op within its namespace (≥ 1).
    pub code: u16,
}

impl OpId {
    /// A built-in op's identity.
    pub const fn builtin(code: u16) -> Self {
        Self {
            namespace: Namespace::TENSORPLUG,
            code,
        }
    }
}

/// Bytes in an [`Attrs`] block.
pub const ATTR_BYTES: usize = 24;

/// An op's attributes in a fixed-size block, which the link carries
/// without per-op code. Unused bytes are 0; each family's layout is in
/// `docs/link-protocol.md`, "Attribute blocks". Serialized as bytes without
/// the trailing zeros (an op without attributes costs one byte).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Attrs(pub [u8; ATTR_BYTES]);

impl Serialize for Attrs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let len = self.0.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        s.serialize_bytes(&self.0[..len])
    }
}

impl<'de> Deserialize<'de> for Attrs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Bytes;
        impl serde::de::Visitor<'_> for Bytes {
            type Value = Attrs;
            fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, "at most {ATTR_BYTES} attribute bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Attrs, E> {
                let mut a = [0u8; ATTR_BYTES];
                a.get_mut(..v.len())
                    .ok_or_else(|| E::invalid_length(v.len(), &self))?
                    .copy_from_slice(v);
                Ok(Attrs(a))
            }
        }
        d.deserialize_bytes(Bytes)
    }
}

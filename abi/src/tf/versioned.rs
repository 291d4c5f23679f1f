//! Version negotiation for structs TensorFlow allocates and fills.
//!
//! TF sets `struct_size` to *its* `*_STRUCT_SIZE`. An older TF passes a
//! smaller struct, a newer TF a larger one. [`Versioned`] (exclusive) and
//! [`VersionedRef`] (shared, read-only) read or write a
//! field only when `offset + size <= struct_size`, so it never touches
//! memory past the end of the caller's struct, and ignores bytes it does not
//! know about.

use super::layout::{CStruct, FieldLayout};
use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;

/// A typed handle to one field of `T`; build it with [`tf_field!`](crate::tf_field).
pub struct Field<T, F> {
    layout: FieldLayout,
    _types: PhantomData<fn(&T) -> &F>,
}

impl<T, F> Clone for Field<T, F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, F> Copy for Field<T, F> {}

impl<T, F> Field<T, F> {
    /// Used by [`tf_field!`](crate::tf_field); `_project` only drives type inference.
    ///
    /// # Safety
    /// `offset` must be `offset_of!(T, <field>)` and `F` that field's type.
    #[doc(hidden)]
    pub const unsafe fn new_unchecked(
        name: &'static str,
        offset: usize,
        _project: fn(&T) -> &F,
    ) -> Self {
        Self {
            layout: FieldLayout {
                name,
                offset,
                size: core::mem::size_of::<F>(),
            },
            _types: PhantomData,
        }
    }

    /// The field's C name, offset and size.
    pub const fn layout(&self) -> FieldLayout {
        self.layout
    }
}

/// Why a struct from TF cannot be used, or a field is not in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SizeError {
    /// TF passed a null pointer.
    Null { struct_name: &'static str },
    /// `struct_size` does not even cover `struct_size` itself.
    TooSmall {
        struct_name: &'static str,
        struct_size: usize,
    },
    /// The caller's (older) struct ends before this field.
    NotCovered {
        struct_name: &'static str,
        field: &'static str,
        field_end: usize,
        struct_size: usize,
    },
}

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Null { struct_name } => {
                write!(f, "TensorFlow passed a null `{struct_name}*`")
            }
            Self::TooSmall {
                struct_name,
                struct_size,
            } => write!(
                f,
                "`{struct_name}.struct_size` is {struct_size}, too small to be a `{struct_name}`; \
                 TensorFlow and tensorplug disagree about the C API"
            ),
            Self::NotCovered {
                struct_name,
                field,
                field_end,
                struct_size,
            } => write!(
                f,
                "`{struct_name}.{field}` ends at byte {field_end} but this TensorFlow's \
                 `{struct_name}` has only {struct_size} bytes (an older TensorFlow); \
                 the field is not available"
            ),
        }
    }
}

impl core::error::Error for SizeError {}

/// A `T` that TensorFlow allocated and may share with other threads, seen
/// through its own `struct_size`: reads only (e.g. an `SP_Device` every
/// stream-executor call receives).
pub struct VersionedRef<'a, T: CStruct> {
    base: NonNull<u8>,
    struct_size: usize,
    _borrow: PhantomData<&'a T>,
}

impl<T: CStruct> Clone for VersionedRef<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: CStruct> Copy for VersionedRef<'_, T> {}

impl<'a, T: CStruct> VersionedRef<'a, T> {
    /// Wraps a struct TF passed in, reading only its leading `struct_size`.
    ///
    /// # Safety
    /// `ptr` is null, or it is aligned for `T`, the `usize` at its start is
    /// the struct's `struct_size`, and the first `struct_size` bytes are
    /// valid for reads and not written by anyone for `'a`.
    pub unsafe fn from_ptr(ptr: *const T) -> Result<Self, SizeError> {
        let base = NonNull::new(ptr.cast_mut().cast::<u8>()).ok_or(SizeError::Null {
            struct_name: T::LAYOUT.name,
        })?;
        // SAFETY: every mirrored struct starts with `size_t struct_size`,
        // which the caller guarantees is readable.
        let struct_size = unsafe { base.cast::<usize>().as_ptr().read_unaligned() };
        Self::with_size(base, struct_size)
    }

    fn with_size(base: NonNull<u8>, struct_size: usize) -> Result<Self, SizeError> {
        if struct_size < core::mem::size_of::<usize>() {
            return Err(SizeError::TooSmall {
                struct_name: T::LAYOUT.name,
                struct_size,
            });
        }
        Ok(Self {
            base,
            struct_size,
            _borrow: PhantomData,
        })
    }

    /// The caller's `struct_size`.
    pub fn struct_size(&self) -> usize {
        self.struct_size
    }

    /// Whether the caller's struct contains all of `field`.
    pub fn covers<F>(&self, field: Field<T, F>) -> bool {
        field.layout.end() <= self.struct_size
    }

    /// The field's value, or `None` when the caller's struct ends before it.
    pub fn get<F: Copy>(&self, field: Field<T, F>) -> Option<F> {
        self.require(field).ok()
    }

    /// The field's value, or an error naming the field.
    pub fn require<F: Copy>(&self, field: Field<T, F>) -> Result<F, SizeError> {
        self.check(field.layout)?;
        // SAFETY: in bounds (checked); `Field` guarantees `F` is the field's
        // type, and `CStruct` that any bit pattern of it is valid.
        Ok(unsafe {
            self.base
                .add(field.layout.offset)
                .cast::<F>()
                .as_ptr()
                .read_unaligned()
        })
    }

    /// A copy of the struct: every field the caller's struct covers, and
    /// zero / null for the fields it does not.
    pub fn read_covered(&self) -> T {
        let mut out = T::zeroed();
        let dst = (&mut out as *mut T).cast::<u8>();
        for field in self.covered_fields() {
            // SAFETY: source in bounds (covered), destination inside `out`.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    self.base.as_ptr().add(field.offset),
                    dst.add(field.offset),
                    field.size,
                )
            };
        }
        out
    }

    /// The fields of this build's `T` that the caller's struct lacks.
    pub fn missing_fields(&self) -> impl Iterator<Item = &'static FieldLayout> + 'a {
        let struct_size = self.struct_size;
        T::LAYOUT
            .fields
            .iter()
            .filter(move |f| f.end() > struct_size)
    }

    fn covered_fields(&self) -> impl Iterator<Item = &'static FieldLayout> + 'a {
        let struct_size = self.struct_size;
        T::LAYOUT
            .fields
            .iter()
            .filter(move |f| f.end() <= struct_size)
    }

    fn check(&self, field: FieldLayout) -> Result<(), SizeError> {
        if field.end() <= self.struct_size {
            Ok(())
        } else {
            Err(SizeError::NotCovered {
                struct_name: T::LAYOUT.name,
                field: field.name,
                field_end: field.end(),
                struct_size: self.struct_size,
            })
        }
    }
}

/// A `T` that TensorFlow allocated and hands to this call alone (an
/// out-parameter, a params struct), seen through its own `struct_size`:
/// reads and writes.
pub struct Versioned<'a, T: CStruct> {
    read: VersionedRef<'a, T>,
    _borrow: PhantomData<&'a mut T>,
}

impl<'a, T: CStruct> Versioned<'a, T> {
    /// Wraps a struct TF passed in, reading only its leading `struct_size`.
    ///
    /// # Safety
    /// `ptr` is null, or it is aligned for `T`, the `usize` at its start is
    /// the struct's `struct_size`, and the first `struct_size` bytes are
    /// valid for reads and writes and not accessed by anyone else for `'a`.
    pub unsafe fn from_raw(ptr: *mut T) -> Result<Self, SizeError> {
        // SAFETY: the caller's contract, which is stronger.
        let read = unsafe { VersionedRef::from_ptr(ptr) }?;
        Ok(Self {
            read,
            _borrow: PhantomData,
        })
    }

    /// Wraps a struct this crate owns; its own `struct_size` decides, capped
    /// at `size_of::<T>()`.
    pub fn from_mut(value: &'a mut T) -> Result<Self, SizeError> {
        let base = NonNull::from(value).cast::<u8>();
        // SAFETY: a `&mut T` starts with its `usize` `struct_size`.
        let struct_size = unsafe { base.cast::<usize>().as_ptr().read_unaligned() };
        let read = VersionedRef::with_size(base, struct_size.min(core::mem::size_of::<T>()))?;
        Ok(Self {
            read,
            _borrow: PhantomData,
        })
    }

    /// The read-only view.
    pub fn as_ref(&self) -> VersionedRef<'_, T> {
        VersionedRef {
            base: self.read.base,
            struct_size: self.read.struct_size,
            _borrow: PhantomData,
        }
    }

    /// The caller's `struct_size`.
    pub fn struct_size(&self) -> usize {
        self.read.struct_size
    }

    /// Whether the caller's struct contains all of `field`.
    pub fn covers<F>(&self, field: Field<T, F>) -> bool {
        self.read.covers(field)
    }

    /// The field's value, or `None` when the caller's struct ends before it.
    pub fn get<F: Copy>(&self, field: Field<T, F>) -> Option<F> {
        self.read.get(field)
    }

    /// The field's value, or an error naming the field.
    pub fn require<F: Copy>(&self, field: Field<T, F>) -> Result<F, SizeError> {
        self.read.require(field)
    }

    /// Writes the field if the caller's struct contains it.
    pub fn set<F: Copy>(&mut self, field: Field<T, F>, value: F) -> Result<(), SizeError> {
        self.read.check(field.layout)?;
        // SAFETY: in bounds (checked) and exclusively borrowed for 'a.
        unsafe {
            self.read
                .base
                .add(field.layout.offset)
                .cast::<F>()
                .as_ptr()
                .write_unaligned(value)
        };
        Ok(())
    }

    /// A copy of the struct: every field the caller's struct covers, and
    /// zero / null for the fields it does not.
    pub fn read_covered(&self) -> T {
        self.read.read_covered()
    }

    /// Writes every field of `value` that the caller's struct covers, except
    /// `struct_size` (which stays the caller's); returns how many it wrote.
    pub fn write_covered(&mut self, value: &T) -> usize {
        let src = (value as *const T).cast::<u8>();
        let mut written = 0;
        for field in self.read.covered_fields().filter(|f| f.offset != 0) {
            // SAFETY: destination in bounds (covered) and exclusively
            // borrowed, source inside `value`.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    src.add(field.offset),
                    self.read.base.as_ptr().add(field.offset),
                    field.size,
                )
            };
            written += 1;
        }
        written
    }

    /// The fields of this build's `T` that the caller's struct lacks.
    pub fn missing_fields(&self) -> impl Iterator<Item = &'static FieldLayout> + '_ {
        self.read.missing_fields()
    }
}

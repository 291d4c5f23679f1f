//! Field tables of the mirrored C types, recorded by the `c_struct!` and
//! `c_enum!` macros so that the layout check and version negotiation never
//! list a field twice.

/// One field of a C struct: its C name, byte offset and byte size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldLayout {
    pub name: &'static str,
    pub offset: usize,
    pub size: usize,
}

impl FieldLayout {
    /// `TF_OFFSET_OF_END` of this field: offset plus size.
    pub const fn end(&self) -> usize {
        self.offset + self.size
    }
}

/// The layout of one mirrored C struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StructLayout {
    /// The C type name (`SP_Platform`).
    pub name: &'static str,
    pub size: usize,
    pub align: usize,
    /// Every field, in declaration order.
    pub fields: &'static [FieldLayout],
    /// The header's `*_STRUCT_SIZE` constant for this struct, if it has one.
    pub struct_size: Option<StructSizeConst>,
}

/// A `*_STRUCT_SIZE` constant: its C name, the field it ends at, its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StructSizeConst {
    pub name: &'static str,
    pub last_field: &'static str,
    pub value: usize,
}

impl StructLayout {
    /// The field called `name`, if any.
    pub fn field(&self, name: &str) -> Option<&'static FieldLayout> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// `TF_OFFSET_OF_END` of the field called `name`; a compile-time error in
/// const context when no field has that name.
pub const fn offset_of_end(fields: &[FieldLayout], name: &str) -> usize {
    let mut i = 0;
    while i < fields.len() {
        if str_eq(fields[i].name, name) {
            return fields[i].end();
        }
        i += 1;
    }
    panic!("offset_of_end: no field with that name")
}

/// The layout of one mirrored C enum (a `#[repr(transparent)]` newtype).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnumLayout {
    pub name: &'static str,
    pub size: usize,
    pub signed: bool,
    /// Every enumerator as (C name, value).
    pub values: &'static [(&'static str, i64)],
}

/// A mirrored C struct whose field table is known.
///
/// # Safety
/// `LAYOUT` must describe `Self` exactly, `Self` must be `#[repr(C)]`, and
/// every bit pattern of every field (all zeros included) must be a valid
/// value of that field's type: integers, raw pointers, `Option<fn>`,
/// transparent enum newtypes and `TF_Bool` (`u8`), never `bool` or references.
pub unsafe trait CStruct: Copy + Sized {
    const LAYOUT: StructLayout;

    /// All fields zero / null.
    fn zeroed() -> Self {
        // SAFETY: all-zero is valid for every field (trait contract).
        unsafe { core::mem::zeroed() }
    }
}

/// A mirrored C enum.
pub trait CEnum: Copy {
    const LAYOUT: EnumLayout;
}

/// Const string equality (`str::eq` is not const).
pub const fn str_eq(a: &str, b: &str) -> bool {
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

/// Strips the `r#` of a raw identifier (`r#type` is the C field `type`).
pub const fn c_name(ident: &'static str) -> &'static str {
    match ident.as_bytes() {
        [b'r', b'#', rest @ ..] => match core::str::from_utf8(rest) {
            Ok(name) => name,
            Err(_) => ident,
        },
        _ => ident,
    }
}

/// Declares a `#[repr(C)]` struct and its [`CStruct`] field table, and
/// optionally its `*_STRUCT_SIZE` constant (`TF_OFFSET_OF_END` of the named
/// field, computed from the table).
macro_rules! c_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty ),* $(,)?
        }
        $( size $size_const:ident = $last:ident; )?
    ) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty ),*
        }

        impl $name {
            #[doc(hidden)]
            pub const FIELD_TABLE: &'static [$crate::tf::layout::FieldLayout] = &[ $( $crate::tf::layout::FieldLayout {
                name: $crate::tf::layout::c_name(stringify!($field)),
                offset: core::mem::offset_of!($name, $field),
                size: core::mem::size_of::<$ty>(),
            } ),* ];
        }

        // SAFETY: the table is generated from the declaration above with
        // `offset_of!`/`size_of`; every field type is plain old data.
        unsafe impl $crate::tf::layout::CStruct for $name {
            const LAYOUT: $crate::tf::layout::StructLayout = $crate::tf::layout::StructLayout {
                name: stringify!($name),
                size: core::mem::size_of::<$name>(),
                align: core::mem::align_of::<$name>(),
                fields: $name::FIELD_TABLE,
                struct_size: {
                    #[allow(unused_variables)]
                    let size: Option<$crate::tf::layout::StructSizeConst> = None;
                    $( let size = Some($crate::tf::layout::StructSizeConst {
                        name: stringify!($size_const),
                        last_field: stringify!($last),
                        value: $size_const,
                    }); )?
                    size
                },
            };
        }

        $(
            #[doc = concat!("`TF_OFFSET_OF_END(", stringify!($name), ", ", stringify!($last), ")`.")]
            pub const $size_const: usize =
                $crate::tf::layout::offset_of_end($name::FIELD_TABLE, stringify!($last));

            impl $name {
                /// All fields zero / null, `struct_size` set to this build's constant.
                pub fn new() -> Self {
                    let mut value = <Self as $crate::tf::layout::CStruct>::zeroed();
                    value.struct_size = $size_const;
                    value
                }
            }

            impl Default for $name {
                fn default() -> Self {
                    Self::new()
                }
            }
        )?
    };
}
/// Declares a C enum as a `#[repr(transparent)]` newtype over its C integer
/// type with one associated const per enumerator, so that any value TF
/// passes (known or not) is sound.
macro_rules! c_enum {
    (
        $(#[$meta:meta])*
        pub struct $name:ident($repr:ty) {
            $( $(#[$vmeta:meta])* $variant:ident = $value:expr ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name(pub $repr);

        #[allow(non_upper_case_globals)]
        impl $name {
            $( $(#[$vmeta])* pub const $variant: Self = Self($value); )*

            /// The C name of this value, if it is one the headers know.
            pub fn c_name(self) -> Option<&'static str> {
                <Self as $crate::tf::layout::CEnum>::LAYOUT
                    .values
                    .iter()
                    .find(|(_, v)| *v == self.0 as i64)
                    .map(|(n, _)| *n)
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self.c_name() {
                    Some(name) => f.write_str(name),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }

        impl $crate::tf::layout::CEnum for $name {
            const LAYOUT: $crate::tf::layout::EnumLayout = $crate::tf::layout::EnumLayout {
                name: stringify!($name),
                size: core::mem::size_of::<$name>(),
                signed: <$repr>::MIN != 0,
                values: &[ $( (stringify!($variant), $value as i64) ),* ],
            };
        }
    };
}

/// Declares opaque C types (only ever used behind a pointer).
macro_rules! c_opaque {
    ($( $(#[$meta:meta])* $name:ident ),* $(,)?) => {
        $(
            $(#[$meta])*
            #[repr(C)]
            pub struct $name {
                _private: [u8; 0],
                _not_send_sync_unpin: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
            }
        )*
    };
}

pub(crate) use {c_enum, c_opaque, c_struct};

//! [`forward_capabilities!`](crate::forward_capabilities): a wrapper's
//! capability traits, forwarded to the device it holds.

/// Implements capability traits for a wrapper by forwarding every method to
/// one of its fields, optionally mapping the error. The wrapper implements
/// [`Device`](crate::accelerator::Device) itself (its error type, `info`)
/// and whatever capability it changes.
///
/// ```
/// use tensorplug_core::accelerator::*;
/// use tensorplug_core::forward_capabilities;
///
/// /// Counts launches, forwards everything else.
/// struct Counted<D> { inner: D, launches: u64 }
///
/// impl<D: Accelerator> Device for Counted<D> {
///     type Error = D::Error;
///     fn info(&self) -> DeviceInfo { self.inner.info() }
/// }
/// impl<D: Accelerator> Launch for Counted<D> {
///     fn launch(&mut self, queue: QueueId, op: &OpDesc<'_>) -> Result<Fence, D::Error> {
///         self.launches += 1;
///         self.inner.launch(queue, op)
///     }
/// }
/// forward_capabilities!([D: Accelerator] Counted<D> => inner: Memory, Transfer, Reset, Profiling);
/// ```
///
/// `[generics] Type => field, map_err(f): Traits` maps each error with `f`
/// (the host bridge's `Erased` turns a driver's error into its own).
#[macro_export]
macro_rules! forward_capabilities {
    ($gens:tt $ty:ty => $field:ident : $($cap:ident),+ $(,)?) => {
        $( $crate::forward_capabilities!(@$cap $gens $ty, $field, ::core::convert::identity); )+
    };
    ($gens:tt $ty:ty => $field:ident, map_err($map:expr) : $($cap:ident),+ $(,)?) => {
        $( $crate::forward_capabilities!(@$cap $gens $ty, $field, $map); )+
    };
    (@Memory [$($g:tt)*] $ty:ty, $field:ident, $map:expr) => {
        impl<$($g)*> $crate::accelerator::Memory for $ty {
            fn allocate(
                &mut self,
                bytes: u64,
                align: u64,
            ) -> ::core::result::Result<$crate::accelerator::DeviceAddr, Self::Error> {
                $crate::accelerator::Memory::allocate(&mut self.$field, bytes, align).map_err($map)
            }
            fn deallocate(
                &mut self,
                addr: $crate::accelerator::DeviceAddr,
            ) -> ::core::result::Result<(), Self::Error> {
                $crate::accelerator::Memory::deallocate(&mut self.$field, addr).map_err($map)
            }
            fn memory_usage(&self) -> $crate::accelerator::MemoryUsage {
                $crate::accelerator::Memory::memory_usage(&self.$field)
            }
        }
    };
    (@Transfer [$($g:tt)*] $ty:ty, $field:ident, $map:expr) => {
        impl<$($g)*> $crate::accelerator::Transfer for $ty {
            unsafe fn copy_to_device(
                &mut self,
                queue: $crate::accelerator::QueueId,
                dst: $crate::accelerator::DeviceAddr,
                src: *const u8,
                len: usize,
            ) -> ::core::result::Result<$crate::accelerator::Fence, Self::Error> {
                // SAFETY: the caller's contract, forwarded.
                unsafe {
                    $crate::accelerator::Transfer::copy_to_device(&mut self.$field, queue, dst, src, len)
                }
                .map_err($map)
            }
            unsafe fn copy_from_device(
                &mut self,
                queue: $crate::accelerator::QueueId,
                dst: *mut u8,
                src: $crate::accelerator::DeviceAddr,
                len: usize,
            ) -> ::core::result::Result<$crate::accelerator::Fence, Self::Error> {
                // SAFETY: the caller's contract, forwarded.
                unsafe {
                    $crate::accelerator::Transfer::copy_from_device(&mut self.$field, queue, dst, src, len)
                }
                .map_err($map)
            }
            fn copy_on_device(
                &mut self,
                queue: $crate::accelerator::QueueId,
                dst: $crate::accelerator::DeviceAddr,
                src: $crate::accelerator::DeviceAddr,
                len: usize,
            ) -> ::core::result::Result<$crate::accelerator::Fence, Self::Error> {
                $crate::accelerator::Transfer::copy_on_device(&mut self.$field, queue, dst, src, len)
                    .map_err($map)
            }
            fn fill(
                &mut self,
                queue: $crate::accelerator::QueueId,
                dst: $crate::accelerator::DeviceAddr,
                len: usize,
                pattern: u32,
            ) -> ::core::result::Result<$crate::accelerator::Fence, Self::Error> {
                $crate::accelerator::Transfer::fill(&mut self.$field, queue, dst, len, pattern)
                    .map_err($map)
            }
            fn copy_on_device_tagged(
                &mut self,
                queue: $crate::accelerator::QueueId,
                dst: $crate::accelerator::DeviceAddr,
                src: $crate::accelerator::DeviceAddr,
                len: usize,
                op_id: u16,
            ) -> ::core::result::Result<$crate::accelerator::Fence, Self::Error> {
                $crate::accelerator::Transfer::copy_on_device_tagged(
                    &mut self.$field, queue, dst, src, len, op_id,
                )
                .map_err($map)
            }
            fn fill_tagged(
                &mut self,
                queue: $crate::accelerator::QueueId,
                dst: $crate::accelerator::DeviceAddr,
                len: usize,
                pattern: u32,
                op_id: u16,
            ) -> ::core::result::Result<$crate::accelerator::Fence, Self::Error> {
                $crate::accelerator::Transfer::fill_tagged(
                    &mut self.$field, queue, dst, len, pattern, op_id,
                )
                .map_err($map)
            }
            fn poll(
                &mut self,
                fence: $crate::accelerator::Fence,
            ) -> ::core::result::Result<bool, Self::Error> {
                $crate::accelerator::Transfer::poll(&mut self.$field, fence).map_err($map)
            }
            fn wait(
                &mut self,
                fence: $crate::accelerator::Fence,
                timeout: ::core::time::Duration,
            ) -> ::core::result::Result<(), Self::Error> {
                $crate::accelerator::Transfer::wait(&mut self.$field, fence, timeout).map_err($map)
            }
        }
    };
    (@Launch [$($g:tt)*] $ty:ty, $field:ident, $map:expr) => {
        impl<$($g)*> $crate::accelerator::Launch for $ty {
            fn launch(
                &mut self,
                queue: $crate::accelerator::QueueId,
                op: &$crate::accelerator::OpDesc<'_>,
            ) -> ::core::result::Result<$crate::accelerator::Fence, Self::Error> {
                $crate::accelerator::Launch::launch(&mut self.$field, queue, op).map_err($map)
            }
            fn load_program(
                &mut self,
                program: &[u8],
            ) -> ::core::result::Result<::core::option::Option<u32>, Self::Error> {
                $crate::accelerator::Launch::load_program(&mut self.$field, program).map_err($map)
            }
            fn run_program(
                &mut self,
                queue: $crate::accelerator::QueueId,
                program: u32,
                slots: &[$crate::accelerator::DeviceAddr],
                arena: $crate::accelerator::DeviceAddr,
            ) -> ::core::option::Option<
                ::core::result::Result<$crate::accelerator::Fence, Self::Error>,
            > {
                $crate::accelerator::Launch::run_program(&mut self.$field, queue, program, slots, arena)
                    .map(|r| r.map_err($map))
            }
        }
    };
    (@Reset [$($g:tt)*] $ty:ty, $field:ident, $map:expr) => {
        impl<$($g)*> $crate::accelerator::Reset for $ty {
            fn reset(&mut self) -> ::core::result::Result<(), Self::Error> {
                $crate::accelerator::Reset::reset(&mut self.$field).map_err($map)
            }
        }
    };
    (@Profiling [$($g:tt)*] $ty:ty, $field:ident, $map:expr) => {
        impl<$($g)*> $crate::accelerator::Profiling for $ty {
            fn timestamp(&mut self) -> ::core::result::Result<u64, Self::Error> {
                $crate::accelerator::Profiling::timestamp(&mut self.$field).map_err($map)
            }
            fn set_profiling(&mut self, enabled: bool) -> ::core::result::Result<(), Self::Error> {
                $crate::accelerator::Profiling::set_profiling(&mut self.$field, enabled).map_err($map)
            }
            fn drain_events(
                &mut self,
                out: &mut [$crate::event::Event],
            ) -> ::core::result::Result<$crate::accelerator::Drained, Self::Error> {
                $crate::accelerator::Profiling::drain_events(&mut self.$field, out).map_err($map)
            }
        }
    };
}

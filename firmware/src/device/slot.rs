//! A static slot for one value.

use core::cell::RefCell;
use critical_section::Mutex;

/// A slot for one value whose empty state is all zeros, so that the static
/// lands in `.bss`: an `Option`'s `None` is a niche value, which would put
/// the whole static (3.7 KB for the driver) into flash as `.data`.
pub type Slot<T> = Mutex<RefCell<heapless::Vec<T, 1>>>;

/// An empty slot.
pub const fn empty<T>() -> Slot<T> {
    Mutex::new(RefCell::new(heapless::Vec::new()))
}

//! The board's chip: the glue the board file's `hal` names (`build.rs`
//! sets `cfg(tp_hal)`), each with the same items: `init()` and its
//! `Hardware`, `Chip`, `clock` (`TICK_HZ`, `now`), `uart` (`Uart`,
//! `LINK_WINDOW`) and `watchdog` (`start`, `feed`). What they share is in
//! `shared`, over their `Chip`: [`Feeder`], [`DriverClock`], the widened
//! clock. `docs/boards.md`.

#[cfg(tp_hal = "cmsdk")]
mod cmsdk;
#[cfg(tp_hal = "cmsdk")]
pub use cmsdk::*;

#[cfg(tp_hal = "stm32f4")]
mod stm32f4;
#[cfg(tp_hal = "stm32f4")]
pub use stm32f4::*;

mod shared;
/// The main loop's watchdog feeder.
pub type Feeder = shared::Feeder<Chip>;
/// The driver's clock for bounded waits.
pub type DriverClock = shared::DriverClock<Chip>;

//! The board's chip: the glue the board file's `hal` names (`build.rs`
//! sets `cfg(tp_hal)`), each with the same items: `init()` and its
//! `Hardware`, `clock` (`TICK_HZ`, `now`, `DriverClock`), `uart` (`Uart`,
//! `LINK_WINDOW`) and `watchdog` (`start`, `Feeder`). `docs/boards.md`.

#[cfg(tp_hal = "cmsdk")]
mod cmsdk;
#[cfg(tp_hal = "cmsdk")]
pub use cmsdk::*;

#[cfg(tp_hal = "stm32f4")]
mod stm32f4;
#[cfg(tp_hal = "stm32f4")]
pub use stm32f4::*;

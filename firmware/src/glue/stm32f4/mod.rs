//! The STM32F4 glue, through `stm32f4xx-hal`: the clock tree from the
//! board's crystal (or the HSI), a free-running timer, the link on a USART,
//! the independent watchdog, and, with a real FPGA, its SPI bus as an
//! `embedded-hal` 1.0 `SpiDevice` (the HAL's `Spi` with a GPIO chip
//! select, through `embedded-hal-bus`'s `ExclusiveDevice`). Boards:
//! `netduinoplus2` (a real FPGA) and `netduinoplus2-qemu` (the model).
//!
//! It wires fixed peripherals and pins (`USART6` on PC6/PC7, `SPI1` on
//! PA5/PA6/PA7 with PA4 as chip select); the `const` checks below fail the
//! build when the board file (`firmware/boards/*.toml`) names others, so a
//! board and its glue never disagree silently.

pub mod clock;
pub mod uart;
pub mod watchdog;

use crate::board;
#[cfg(tp_fpga = "spi")]
use embedded_hal_bus::spi::{ExclusiveDevice, NoDelay};
#[cfg(tp_fpga = "spi")]
use stm32f4xx_hal::gpio::{Output, PA4, PinState, PushPull, Speed};
use stm32f4xx_hal::pac;
use stm32f4xx_hal::prelude::*;
use stm32f4xx_hal::rcc::Config;
#[cfg(tp_fpga = "spi")]
use stm32f4xx_hal::spi::{Mode, Phase, Polarity, Spi};

/// The FPGA's SPI device: the HAL's `SPI1` bus, chip select on `PA4`.
#[cfg(tp_fpga = "spi")]
pub type FpgaSpiDevice = ExclusiveDevice<Spi<pac::SPI1>, PA4<Output<PushPull>>, NoDelay>;

/// SPI mode 0, as the FPGA's SPI port is specified (`docs/transports.md`).
#[cfg(tp_fpga = "spi")]
const SPI_MODE: Mode = Mode {
    polarity: Polarity::IdleLow,
    phase: Phase::CaptureOnFirstTransition,
};

const fn same(a: &str, b: &str) -> bool {
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

const _: () = {
    assert!(
        same(board::LINK_UART, "USART6"),
        "this glue's link is USART6"
    );
    assert!(same(board::LINK_TX, "PC6"), "this glue's USART6 TX is PC6");
    assert!(same(board::LINK_RX, "PC7"), "this glue's USART6 RX is PC7");
    assert!(
        board::CORE_HZ <= 168_000_000,
        "an STM32F405/407 runs at most 168 MHz"
    );
};

#[cfg(tp_fpga = "spi")]
const _: () = {
    assert!(
        same(board::FPGA_SPI_BUS, "SPI1"),
        "this glue's FPGA bus is SPI1"
    );
    assert!(
        same(board::FPGA_SPI_SCK, "PA5"),
        "this glue's SPI1 SCK is PA5"
    );
    assert!(
        same(board::FPGA_SPI_MISO, "PA6"),
        "this glue's SPI1 MISO is PA6"
    );
    assert!(
        same(board::FPGA_SPI_MOSI, "PA7"),
        "this glue's SPI1 MOSI is PA7"
    );
    assert!(
        same(board::FPGA_SPI_CS, "PA4"),
        "this glue's chip select is PA4"
    );
};

/// What `main` gets from the board.
pub struct Hardware {
    /// The host link.
    pub uart: uart::Uart,
    /// The FPGA's SPI device, for `crate::device::install`.
    #[cfg(tp_fpga = "spi")]
    pub fpga_spi: FpgaSpiDevice,
}

/// Brings the chip up: the clock tree (from the board's crystal, or the
/// HSI, to `clocks.core_hz`), the free-running timer, the watchdog (not yet
/// started), the link's USART and, with a real FPGA, its SPI bus.
pub fn init() -> Hardware {
    let Some(dp) = pac::Peripherals::take() else {
        defmt::panic!("the chip's peripherals were taken twice");
    };
    // Why the last boot ended, before the clock set-up clears nothing of it.
    watchdog::read_reset_cause(&dp.RCC);
    let config = match board::HSE_HZ {
        Some(hse) => Config::hse(hse.Hz()),
        // The 16 MHz HSI; at that core clock the PLL stays off (QEMU models
        // no RCC: a wait for the PLL or the crystal would never end).
        None => Config::hsi(),
    };
    let mut rcc = dp.RCC.freeze(config.sysclk((board::CORE_HZ as u32).Hz()));
    let sysclk = u64::from(rcc.clocks.sysclk().raw());
    if sysclk != board::CORE_HZ {
        defmt::warn!(
            "the clock tree gives {=u64} Hz, the board file says {=u64}",
            sysclk,
            board::CORE_HZ
        );
    }
    clock::start(dp.TIM2, &mut rcc);
    watchdog::install(dp.IWDG);
    let gpioc = dp.GPIOC.split(&mut rcc);
    let uart = uart::Uart::new(dp.USART6, gpioc.pc6, gpioc.pc7, &mut rcc);
    #[cfg(tp_fpga = "spi")]
    let fpga_spi = fpga_spi(dp.SPI1, dp.GPIOA.split(&mut rcc), &mut rcc);
    Hardware {
        uart,
        #[cfg(tp_fpga = "spi")]
        fpga_spi,
    }
}

/// SPI1 (mode 0, the board's clock) with PA4 as the chip select.
#[cfg(tp_fpga = "spi")]
fn fpga_spi(
    spi1: pac::SPI1,
    gpioa: stm32f4xx_hal::gpio::gpioa::Parts,
    rcc: &mut stm32f4xx_hal::rcc::Rcc,
) -> FpgaSpiDevice {
    let sck = gpioa.pa5.into_alternate().speed(Speed::VeryHigh);
    let mosi = gpioa.pa7.into_alternate().speed(Speed::VeryHigh);
    let spi = Spi::new(
        spi1,
        (Some(sck), Some(gpioa.pa6), Some(mosi)),
        SPI_MODE,
        board::FPGA_SPI_HZ.Hz(),
        rcc,
    );
    let cs = gpioa.pa4.into_push_pull_output_in_state(PinState::High);
    match ExclusiveDevice::new_no_delay(spi, cs) {
        Ok(device) => device,
        Err(never) => match never {},
    }
}

/// This board's clock and watchdog, for the shared glue.
pub struct Chip;

impl super::shared::Chip for Chip {
    const TICK_HZ: u64 = clock::TICK_HZ;
    fn now() -> u64 {
        clock::now()
    }
    fn feed_watchdog() {
        watchdog::feed();
    }
}

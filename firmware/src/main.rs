//! tensorplug firmware for a Cortex-M MCU next to the FPGA, built for one
//! board (`firmware/boards/<name>.toml`, `docs/boards.md`).
//!
//! It answers the link protocol (`docs/link-protocol.md`) on the board's
//! link UART in both modes: op-level requests run on the reference FPGA
//! driver here, which drives the FPGA over SPI; remote-bus requests go
//! straight to the FPGA's registers and memory for a driver on the host.
//! The FPGA is its behavioural model in this MCU's RAM on an emulated board
//! (QEMU mps2-an386), a real FPGA on the board's SPI bus in a production
//! image (`docs/firmware.md`). A tick interrupt moves device events into an
//! event ring. A quiet link lets the core sleep. Logs are defmt, over
//! semihosting under QEMU and over RTT on a board.
#![no_std]
#![no_main]

/// The board this image is built for: constants generated from its file
/// `firmware/boards/<name>.toml` by `build.rs` (`docs/boards.md`).
#[allow(dead_code)] // every board file's facts, not all of which each glue reads
mod board {
    include!(concat!(env!("OUT_DIR"), "/board.rs"));
}
mod debug_faults;
mod device;
mod events;
mod glue;
mod idle;
#[cfg(feature = "selftest-requantize")]
mod selftest;

use core::sync::atomic::Ordering;
use cortex_m as _;
use cortex_m_rt::entry;
#[cfg(tp_log = "rtt")]
use defmt_rtt as _;
#[cfg(tp_log = "semihosting")]
use defmt_semihosting as _;
use tensorplug_core::link::ops::error_code;
use tensorplug_core::link::{
    Decoder, FeedResult, Frame, MAX_ENCODED_FRAME_LEN, Message, NO_REQUEST, OpServer,
    RemoteErrorCode, Session,
};
use tensorplug_device_fpga::transport::link::LinkServer;

use crate::device::FpgaPort;
use crate::events::McuEvents;
use crate::glue::uart::{LINK_WINDOW, Uart};
use crate::glue::watchdog;

/// Commands the op-level server keeps outstanding.
const PENDING: usize = 16;
/// RAM for device programs (`LoadProgram`), from the board's `ram_budget`:
/// a larger one is refused with `ProgramRefused` / `TooLarge(Bytes)`.
/// `docs/firmware.md`.
const PROGRAM_BYTES: usize = board::PROGRAM_BYTES;

/// Both servers and the one session they answer in.
struct Servers {
    session: Session,
    ops: OpServer<PENDING, PROGRAM_BYTES>,
    bus: LinkServer,
    events: McuEvents,
    out: [u8; MAX_ENCODED_FRAME_LEN],
}

#[entry]
fn main() -> ! {
    #[cfg(tp_fpga = "model")]
    defmt::info!(
        "tensorplug firmware {=str}: link protocol on {=str}, FPGA model with {=usize} KiB",
        env!("CARGO_PKG_VERSION"),
        board::LINK_UART,
        device::DEVICE_MEMORY / 1024
    );
    #[cfg(tp_fpga = "spi")]
    defmt::info!(
        "tensorplug firmware {=str} for {=str} ({=str}): link protocol on {=str}, the FPGA on {=str}",
        env!("CARGO_PKG_VERSION"),
        board::NAME,
        board::CHIP,
        board::LINK_UART,
        board::FPGA_SPI_BUS
    );
    if cfg!(feature = "selftest-panic") {
        panic!("selftest-panic: this build panics on purpose");
    }
    #[cfg(feature = "selftest-requantize")]
    selftest::requantize();
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        defmt::panic!("the core peripherals were taken twice");
    };
    let hardware = glue::init();
    #[cfg(tp_fpga = "model")]
    if let Err(error) = device::init() {
        defmt::panic!("the model refused its memory: {}", error);
    }
    #[cfg(tp_fpga = "spi")]
    device::install(hardware.fpga_spi);
    let events = events::start(peripherals.SYST);
    let mut uart = hardware.uart;
    if cfg!(feature = "bench-echo") {
        defmt::info!("bench-echo: every byte comes back, no link protocol");
        uart.echo();
    }
    if watchdog::start() {
        defmt::warn!("the watchdog reset the MCU: the main loop had stalled");
    }
    let mut feeder = glue::Feeder::new();
    let mut idle = idle::Idle::start();
    let mut servers = Servers {
        session: Session::new(),
        ops: OpServer::new().with_window(LINK_WINDOW),
        bus: LinkServer::new(),
        events,
        out: [0; MAX_ENCODED_FRAME_LEN],
    };
    servers.announce_boot(&mut uart);
    let mut decoder = Decoder::requests();
    let mut frames: u32 = 0;
    loop {
        feeder.alive();
        debug_faults::take();
        let Some(byte) = uart.try_read() else {
            servers.idle(&mut uart);
            if servers.ops.outstanding() == 0 {
                idle.quiet(&mut uart);
            } else {
                idle.busy();
            }
            continue;
        };
        idle.busy();
        match decoder.feed(&[byte]) {
            FeedResult::Consumed => {}
            FeedResult::Frame { frame, .. } => {
                frames = frames.wrapping_add(1);
                if frames == 1 {
                    defmt::info!("first frame from the host");
                }
                servers.answer(&frame, &mut uart);
                feeder.answered();
            }
            FeedResult::Error { error, .. } => {
                defmt::warn!("bad frame from the host: {}", error);
                match servers.session.answer_bad_frame(&error, &mut servers.out) {
                    Ok(len) => uart.write_all(&servers.out[..len]),
                    Err(error) => defmt::error!("cannot encode an answer: {}", error),
                }
            }
        }
    }
}

impl Servers {
    /// Says, unasked, that this device has no session: a host that was in
    /// one learns at once that the MCU restarted (`docs/link-protocol.md`,
    /// "Handshake").
    fn announce_boot(&mut self, uart: &mut Uart) {
        let code = RemoteErrorCode::HandshakeRequired as u16;
        match self.session.error(NO_REQUEST, code, 0, &mut self.out) {
            Ok(len) => uart.write_all(&self.out[..len]),
            Err(error) => defmt::error!("cannot encode the boot announcement: {}", error),
        }
    }

    /// Answers one frame: remote-bus requests on the FPGA's port, everything
    /// else on the driver.
    fn answer(&mut self, frame: &Frame<'_>, uart: &mut Uart) {
        let remote_bus = frame.message.is_remote_bus();
        if let Message::Hello(_) = frame.message {
            // A new host session starts from a device it brings up itself.
            device::release_driver();
            self.ops = OpServer::new().with_window(LINK_WINDOW);
            events::PROFILING.store(false, Ordering::Relaxed);
            self.events.clear();
        }
        if remote_bus || matches!(frame.message, Message::Hello(_) | Message::Ping(_)) {
            if remote_bus && self.session.is_open() {
                device::release_driver();
            }
            match self
                .bus
                .answer_in(&mut self.session, &mut FpgaPort, frame, &mut self.out)
            {
                Ok(len) => uart.write_all(&self.out[..len]),
                Err(error) => defmt::error!("cannot encode an answer: {}", error),
            }
            return;
        }
        if let Message::SetProfiling(p) = &frame.message {
            events::PROFILING.store(p.enabled, Ordering::Relaxed);
        }
        let mut send = |bytes: &[u8]| uart.write_all(bytes);
        let answered = critical_section::with(|cs| {
            device::with_driver(cs, |driver| {
                self.ops.answer(
                    &mut self.session,
                    driver,
                    &mut self.events,
                    frame,
                    &mut send,
                )
            })
        });
        match answered {
            Ok(Ok(())) => {}
            Ok(Err(error)) => defmt::error!("cannot encode an answer: {}", error),
            Err(error) => {
                defmt::error!("the FPGA did not come up: {}", error);
                let code = error_code(tensorplug_core::accelerator::Error::kind(&error));
                let id = frame.header.request_id;
                if let Ok(len) = self.session.error(id, code, 0, &mut self.out) {
                    uart.write_all(&self.out[..len]);
                }
            }
        }
    }

    /// No byte waiting: completes finished commands and streams events.
    fn idle(&mut self, uart: &mut Uart) {
        let mut send = |bytes: &[u8]| uart.write_all(bytes);
        critical_section::with(|cs| {
            device::if_driver(cs, |driver| {
                if let Err(error) =
                    self.ops
                        .poll(&mut self.session, driver, &mut self.events, &mut send)
                {
                    defmt::error!("cannot encode a completion: {}", error);
                }
            });
        });
    }
}

/// A panic prints its message and where it happened, and ends QEMU with a
/// failure exit code (an emulated board) or resets the MCU (a board on a
/// desk: the host sees the boot announcement). A message with arguments prints its
/// location only: formatting it would link `core::fmt` (about 2.5 KB of
/// flash).
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    let message = info.message().as_str().unwrap_or("(a formatted message)");
    match info.location() {
        Some(at) => defmt::error!(
            "panic at {=str}:{=u32}: {=str}",
            at.file(),
            at.line(),
            message
        ),
        None => defmt::error!("panic: {=str}", message),
    }
    stop()
}

#[cortex_m_rt::exception]
unsafe fn HardFault(frame: &cortex_m_rt::ExceptionFrame) -> ! {
    defmt::error!("hard fault at pc {=u32:#010x}", frame.pc());
    stop()
}

/// After a panic or a fault: QEMU exits with a failure code.
#[cfg(tp_log = "semihosting")]
fn stop() -> ! {
    cortex_m_semihosting::debug::exit(cortex_m_semihosting::debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::bkpt();
    }
}

/// After a panic or a fault: the MCU resets (semihosting would fault
/// without a debugger attached).
#[cfg(tp_log = "rtt")]
fn stop() -> ! {
    cortex_m::peripheral::SCB::sys_reset()
}

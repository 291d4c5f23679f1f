//! tensorplug firmware for a Cortex-M4 next to the FPGA (QEMU mps2-an386).
//!
//! It answers the link protocol (`docs/link-protocol.md`) on UART0 in
//! remote-bus mode: register and memory accesses from the host's driver go
//! to the reference FPGA. Here the FPGA is its behavioural model, in this
//! MCU's RAM (`docs/firmware.md`). Logs are defmt over semihosting.
#![no_std]
#![no_main]

mod clock;
mod uart;

use cortex_m as _;
use cortex_m_rt::entry;
use defmt_semihosting as _;
use tensorplug_core::link::{Decoder, FeedResult, MAX_ENCODED_FRAME_LEN};
use tensorplug_device_fpga::model::{Model, ModelConfig, NoHostBus};
use tensorplug_device_fpga::transport::link::LinkServer;

/// Device memory of the modelled FPGA: 3 MiB of the board's 4 MiB of RAM.
const DEVICE_MEMORY: usize = 3 << 20;

#[repr(C, align(64))]
struct DeviceMemory([u8; DEVICE_MEMORY]);

/// The model's device memory, under a fixed name so that `cargo xtask size`
/// can leave it out of the firmware's own RAM footprint.
#[unsafe(no_mangle)]
static mut TENSORPLUG_DEVICE_MEMORY: DeviceMemory = DeviceMemory([0; DEVICE_MEMORY]);

#[entry]
fn main() -> ! {
    defmt::info!(
        "tensorplug firmware {=str}: link protocol on UART0, FPGA model with {=usize} KiB",
        env!("CARGO_PKG_VERSION"),
        DEVICE_MEMORY / 1024
    );
    // SAFETY: `main` runs once and is the device memory's only user.
    let memory = unsafe { &mut *core::ptr::addr_of_mut!(TENSORPLUG_DEVICE_MEMORY) };
    let peripherals = cortex_m::Peripherals::take().expect("main runs once");
    let clock = clock::start(peripherals.SYST);
    let config = ModelConfig::default();
    let mut model = match Model::new(&mut memory.0[..], NoHostBus, clock, config, false) {
        Ok(model) => model,
        Err(error) => defmt::panic!("the model refused its memory: {}", error),
    };
    // SAFETY: UART0 is this firmware's; nothing else drives it.
    let mut uart = unsafe { uart::Uart::new(uart::UART0, 16) };
    let mut server = LinkServer::new();
    let mut decoder = Decoder::new();
    let mut out = [0u8; MAX_ENCODED_FRAME_LEN];
    let mut frames: u32 = 0;
    loop {
        let Some(byte) = uart.try_read() else {
            continue;
        };
        let answer = match decoder.feed(&[byte]) {
            FeedResult::Consumed => continue,
            FeedResult::Frame { frame, .. } => {
                frames = frames.wrapping_add(1);
                if frames == 1 {
                    defmt::info!("first frame from the host");
                }
                server.answer(&mut model, &frame, &mut out)
            }
            FeedResult::Error { error, .. } => {
                defmt::warn!("bad frame from the host: {}", error);
                server.answer_bad_frame(&error, &mut out)
            }
        };
        match answer {
            Ok(len) => uart.write_all(&out[..len]),
            Err(error) => defmt::error!("cannot encode an answer: {}", error),
        }
    }
}

/// A panic prints its message and ends QEMU with a failure exit code.
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    defmt::error!("panic: {}", defmt::Display2Format(info));
    cortex_m_semihosting::debug::exit(cortex_m_semihosting::debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::bkpt();
    }
}

#[cortex_m_rt::exception]
unsafe fn HardFault(frame: &cortex_m_rt::ExceptionFrame) -> ! {
    defmt::error!("hard fault at pc {=u32:#010x}", frame.pc());
    cortex_m_semihosting::debug::exit(cortex_m_semihosting::debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::bkpt();
    }
}

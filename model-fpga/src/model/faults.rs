//! Fault injection: switches a test sets to make the model misbehave in the
//! ways a real device can. Each one-shot switch clears itself when it fires.

/// Settable fault switches; `Faults::default()` is a healthy device.
///
/// | switch | what the device does | what the driver observes |
/// |---|---|---|
/// | `lose_next_completion` | runs the next command but writes no completion and does not advance `CPLQ_TAIL` | its wait for that command times out |
/// | `stuck_busy` | takes no commands; `STATUS.BUSY` stays set | submissions time out (queue full / fence never signals) |
/// | `reset_mid_command` | resets itself while executing the next command: no completion, every register back to its reset value | `STATUS.ENABLED` clear, `CMDQ_HEAD` 0, timeout; recover by re-running bring-up |
/// | `cap_event_ring` | treats the event ring as holding at most this many entries | `EVQ_DROPPED` counts, `Irq::EVENTS_DROPPED` |
/// | `fault_next_command` | the next command completes with `DEVICE_FAULT` (`detail` = [`DEVICE_FAULT_DETAIL`]) and the device halts | status `DEVICE_FAULT`, `STATUS.HALTED`, `HALT_REASON` = 8 |
///
/// Corrupted SPI frames are injected on the SPI slave
/// (`SpiSlave::corrupt_next_request`/`corrupt_next_response`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Faults {
    /// One-shot: the next completion is not written.
    pub lose_next_completion: bool,
    /// Persistent: no command is taken and `BUSY` never clears.
    pub stuck_busy: bool,
    /// One-shot: the device resets in the middle of the next command.
    pub reset_mid_command: bool,
    /// Persistent: the event ring's usable capacity (`None`: its full size).
    pub cap_event_ring: Option<u32>,
    /// One-shot: the next command ends in `DEVICE_FAULT` and halts the device.
    pub fault_next_command: bool,
}

/// The `detail` of an injected `DEVICE_FAULT` completion ("FA17").
pub const DEVICE_FAULT_DETAIL: u32 = 0x0000_FA17;

//! The SPI transport over the model's slave state machine.

use tensorplug_device_fpga::transport::spi::frame::{self, MAX_PAYLOAD};
use tensorplug_device_fpga::transport::spi::slave::{SpiSlave, SpiTarget, TargetError};
use tensorplug_device_fpga::transport::spi::{CountingSpi, SpiConfig, SpiTransport};
use tensorplug_device_fpga::transport::{CrcSide, Error, ErrorKind, Transport};

/// 64 registers and 16 KiB of memory; register 0x3C is read-only.
struct Target {
    regs: [u32; 64],
    mem: Vec<u8>,
}

impl Target {
    fn new() -> Self {
        Self {
            regs: [0; 64],
            mem: vec![0; 16 * 1024],
        }
    }
    fn range(&self, addr: u64, len: usize) -> Result<std::ops::Range<usize>, TargetError> {
        let start = usize::try_from(addr).map_err(|_| TargetError::OutOfRange)?;
        let end = start.checked_add(len).filter(|&e| e <= self.mem.len());
        end.map(|end| start..end).ok_or(TargetError::OutOfRange)
    }
}

impl SpiTarget for Target {
    fn read_reg(&mut self, offset: u32) -> Result<u32, TargetError> {
        self.regs
            .get(offset as usize / 4)
            .copied()
            .ok_or(TargetError::OutOfRange)
    }
    fn write_reg(&mut self, offset: u32, value: u32) -> Result<(), TargetError> {
        let reg = self
            .regs
            .get_mut(offset as usize / 4)
            .ok_or(TargetError::OutOfRange)?;
        *reg = value;
        Ok(())
    }
    fn read_mem(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), TargetError> {
        let r = self.range(addr, buf.len())?;
        buf.copy_from_slice(&self.mem[r]);
        Ok(())
    }
    fn write_mem(&mut self, addr: u64, data: &[u8]) -> Result<(), TargetError> {
        let r = self.range(addr, data.len())?;
        self.mem[r].copy_from_slice(data);
        Ok(())
    }
}

fn transport() -> SpiTransport<SpiSlave<Target>> {
    SpiTransport::new(SpiSlave::new(Target::new()), SpiConfig::default())
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 + 7) as u8).collect()
}

#[test]
fn registers_round_trip() {
    let mut t = transport();
    t.write_reg(0x0C, 0xDEAD_BEEF).unwrap();
    t.write_reg(0xFC, 42).unwrap();
    assert_eq!(t.read_reg(0x0C).unwrap(), 0xDEAD_BEEF);
    assert_eq!(t.read_reg(0xFC).unwrap(), 42);
    assert_eq!(t.device().target().regs[3], 0xDEAD_BEEF);
}

#[test]
fn memory_round_trips_across_chunks() {
    let mut t = transport();
    let data = pattern(3 * MAX_PAYLOAD + 17);
    t.write_mem(0x123, &data).unwrap();
    let mut back = vec![0; data.len()];
    t.read_mem(0x123, &mut back).unwrap();
    assert_eq!(back, data);
    assert_eq!(
        &t.device().target().mem[0x123..0x123 + data.len()],
        &data[..]
    );
}

#[test]
fn corrupted_response_is_a_crc_error_and_the_next_request_works() {
    let mut t = transport();
    t.write_reg(0x10, 5).unwrap();
    t.device_mut().corrupt_next_response();
    assert_eq!(t.read_reg(0x10), Err(Error::Crc(CrcSide::Response)));
    assert_eq!(t.read_reg(0x10).unwrap(), 5);
}

#[test]
fn corrupted_request_is_reported_and_not_executed() {
    let mut t = transport();
    t.device_mut().corrupt_next_request();
    let err = t.write_reg(0x10, 7).unwrap_err();
    assert_eq!(err, Error::Crc(CrcSide::Request));
    assert_eq!(err.kind(), ErrorKind::Crc);
    assert_eq!(
        t.read_reg(0x10).unwrap(),
        0,
        "a corrupted write must not land"
    );

    t.device_mut().corrupt_next_request();
    let mut buf = [0; 100];
    assert_eq!(t.read_mem(0, &mut buf), Err(Error::Crc(CrcSide::Request)));
}

#[test]
fn stuck_busy_is_a_timeout() {
    let mut t = SpiTransport::new(
        SpiSlave::new(Target::new()),
        SpiConfig {
            max_busy_polls: 50,
            ..SpiConfig::default()
        },
    );
    t.device_mut().stay_busy_for(u32::MAX);
    let err = t.write_reg(0x10, 1).unwrap_err();
    assert_eq!(err, Error::Timeout { polls: 51 });
    assert_eq!(err.kind(), ErrorKind::Timeout);
}

#[test]
fn busy_within_the_limit_succeeds() {
    let mut t = SpiTransport::new(
        SpiSlave::new(Target::new()),
        SpiConfig {
            max_busy_polls: 50,
            ..SpiConfig::default()
        },
    );
    t.device_mut().stay_busy_for(50);
    t.write_reg(0x10, 9).unwrap();
    t.device_mut().stay_busy_for(51);
    assert_eq!(t.read_reg(0x10), Err(Error::Timeout { polls: 51 }));
}

#[test]
fn out_of_range_is_reported_with_the_frame() {
    let mut t = transport();
    let mut buf = [0; 8];
    assert_eq!(
        t.read_mem(16 * 1024 - 4, &mut buf),
        Err(Error::OutOfRange {
            addr: 16 * 1024 - 4,
            len: 8
        })
    );
    assert_eq!(
        t.write_reg(0x100, 1),
        Err(Error::OutOfRange {
            addr: 0x100,
            len: 4
        })
    );
    assert_eq!(
        t.read_reg(0x100).unwrap_err().kind(),
        ErrorKind::OutOfRange,
        "a register past the register space"
    );
    let err = t.write_mem(u64::MAX - 2, &[1; 8]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutOfRange, "address overflow: {err}");
}

#[test]
fn dropped_request_shows_as_a_sequence_mismatch() {
    let mut t = transport();
    t.write_reg(0x10, 1).unwrap();
    t.device_mut().drop_next_request();
    let err = t.write_reg(0x10, 2).unwrap_err();
    assert_eq!(
        err,
        Error::Framing {
            status: 0xA0,
            expected_seq: 2,
            seq: 1
        }
    );
    assert_eq!(t.read_reg(0x10).unwrap(), 1);
}

#[test]
fn fresh_device_answers_idle() {
    let mut slave = SpiSlave::new(Target::new());
    let mut answer = [0; 4];
    embedded_hal::spi::SpiDevice::transaction(
        &mut slave,
        &mut [
            embedded_hal::spi::Operation::Write(&[0x05]),
            embedded_hal::spi::Operation::Read(&mut answer),
        ],
    )
    .unwrap();
    let crc = frame::crc16(&[&[0xA4, 0x00]]).to_le_bytes();
    assert_eq!(answer, [0xA4, 0x00, crc[0], crc[1]]);
}

#[test]
fn truncated_and_noisy_transactions_are_rejected() {
    let mut slave = SpiSlave::new(Target::new());
    use embedded_hal::spi::{Operation, SpiDevice};
    // A header cut short.
    slave
        .transaction(&mut [Operation::Write(&[0x02, 0x09, 0x0C])])
        .unwrap();
    let mut answer = [0; 4];
    slave
        .transaction(&mut [Operation::Write(&[0x05]), Operation::Read(&mut answer)])
        .unwrap();
    assert_eq!(answer[..2], [0xA3, 0x09]);
    // A bad length (5 for a register write).
    let mut t = SpiTransport::new(slave, SpiConfig::default());
    let head = [0x02, 0x01, 0x0C, 0, 0, 0, 0, 0, 0, 0, 0x05, 0x00];
    t.device_mut()
        .transaction(&mut [Operation::Write(&head), Operation::Write(&[0; 7])])
        .unwrap();
    t.device_mut()
        .transaction(&mut [Operation::Write(&[0x05]), Operation::Read(&mut answer)])
        .unwrap();
    assert_eq!(answer[..2], [0xA3, 0x01]);
    // Line noise as a command byte is ignored; the transport still works.
    t.device_mut()
        .transaction(&mut [Operation::Write(&[0xFF; 16])])
        .unwrap();
    t.write_reg(0x0C, 3).unwrap();
    assert_eq!(t.read_reg(0x0C).unwrap(), 3);
}

#[test]
fn full_duplex_transfers_are_understood() {
    use embedded_hal::spi::{Operation, SpiDevice};
    let mut slave = SpiSlave::new(Target::new());
    slave.target_mut().regs[1] = 0x0102_0304;
    let head = frame::Header {
        command: frame::Command::ReadReg,
        seq: 9,
        addr: 4,
        len: 4,
    }
    .encode();
    let crc = frame::crc16(&[&head]).to_le_bytes();
    let mut request = head.to_vec();
    request.extend_from_slice(&crc);
    slave
        .transaction(&mut [Operation::TransferInPlace(&mut request)])
        .unwrap();
    let mut miso = [0; 9];
    slave
        .transaction(&mut [Operation::Transfer(&mut miso, &[0x05])])
        .unwrap();
    // Byte 0 clocks out while the command clocks in.
    assert_eq!(miso[..7], [frame::FILLER, 0xA0, 9, 0x04, 0x03, 0x02, 0x01]);
}

#[test]
fn write_of_4_kib_is_at_least_97_percent_payload() {
    let mut t = SpiTransport::new(
        CountingSpi::new(SpiSlave::new(Target::new())),
        SpiConfig::default(),
    );
    let data = pattern(4096);
    t.write_mem(0, &data).unwrap();
    let clocked = t.device().bytes_clocked();
    assert_eq!(
        clocked,
        frame::bytes_clocked_for_write(4096, MAX_PAYLOAD) as u64
    );
    assert_eq!(clocked, 4172);
    assert_eq!(t.device().transactions(), 8);
    let efficiency = 4096.0 / clocked as f64;
    assert!(efficiency >= 0.97, "payload efficiency {efficiency}");
    assert_eq!(&t.device().inner().target().mem[..4096], &data[..]);
}

proptest::proptest! {
    /// Whatever a host clocks in, the slave neither panics nor loses the
    /// ability to serve the next well-formed exchange.
    #[test]
    fn arbitrary_bus_traffic_never_wedges_the_slave(
        transactions in proptest::collection::vec(
            proptest::collection::vec((0u8..3, proptest::collection::vec(proptest::num::u8::ANY, 0..40)), 0..4),
            0..12,
        )
    ) {
        use embedded_hal::spi::{Operation, SpiDevice};
        let mut slave = SpiSlave::new(Target::new());
        for ops in transactions {
            let mut bufs: Vec<(u8, Vec<u8>)> = ops;
            let mut operations: Vec<Operation<'_, u8>> = bufs
                .iter_mut()
                .map(|(kind, bytes)| match kind {
                    0 => Operation::Write(bytes.as_slice()),
                    1 => Operation::Read(bytes.as_mut_slice()),
                    _ => Operation::TransferInPlace(bytes.as_mut_slice()),
                })
                .collect();
            slave.transaction(&mut operations).unwrap();
        }
        let mut t = SpiTransport::new(slave, SpiConfig::default());
        t.write_reg(0x08, 0x55AA).unwrap();
        proptest::prop_assert_eq!(t.read_reg(0x08).unwrap(), 0x55AA);
    }
}

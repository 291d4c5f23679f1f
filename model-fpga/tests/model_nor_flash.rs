//! The SPI NOR configuration flash model.

use embedded_hal::spi::{Operation, SpiDevice};
use tensorplug_model_fpga::model::ManualClock;
use tensorplug_model_fpga::model::nor_flash::{JEDEC_ID, NorFlash, NorTiming};

const SIZE: usize = 16 << 20;
type Flash = NorFlash<Vec<u8>, ManualClock>;

fn flash() -> Flash {
    NorFlash::new(vec![0xFF; SIZE], ManualClock::new(), NorTiming::W25Q128JV)
}

fn status(f: &mut Flash) -> u8 {
    let mut s = [0; 2];
    f.transaction(&mut [Operation::Write(&[0x05]), Operation::Read(&mut s)])
        .unwrap();
    assert_eq!(s[0], s[1], "status repeats");
    s[0]
}

fn cmd(f: &mut Flash, bytes: &[u8]) {
    f.write(bytes).unwrap();
}

fn addr_cmd(op: u8, addr: u32) -> Vec<u8> {
    vec![op, (addr >> 16) as u8, (addr >> 8) as u8, addr as u8]
}

fn read(f: &mut Flash, addr: u32, n: usize) -> Vec<u8> {
    let mut buf = vec![0; n];
    f.transaction(&mut [
        Operation::Write(&addr_cmd(0x03, addr)),
        Operation::Read(&mut buf),
    ])
    .unwrap();
    buf
}

fn program(f: &mut Flash, addr: u32, data: &[u8]) {
    cmd(f, &[0x06]);
    let mut bytes = addr_cmd(0x02, addr);
    bytes.extend_from_slice(data);
    cmd(f, &bytes);
}

fn wait_ready(f: &mut Flash) {
    for _ in 0..10_000 {
        if status(f) & 1 == 0 {
            return;
        }
        f.clock_mut().advance(1_000);
    }
    panic!("flash stayed busy");
}

#[test]
fn jedec_id_is_the_w25q128jv() {
    let mut f = flash();
    let mut id = [0; 3];
    f.transaction(&mut [Operation::Write(&[0x9F]), Operation::Read(&mut id)])
        .unwrap();
    assert_eq!(id, JEDEC_ID);
    assert_eq!(id, [0xEF, 0x40, 0x18]);
    // Full-duplex transfer: the command byte clocks out filler.
    let mut buf = [0x9F, 0, 0, 0];
    f.transfer_in_place(&mut buf).unwrap();
    assert_eq!(buf, [0xFF, 0xEF, 0x40, 0x18]);
}

#[test]
fn program_needs_write_enable_and_clears_it() {
    let mut f = flash();
    let mut bytes = addr_cmd(0x02, 0x100);
    bytes.extend_from_slice(&[0x00; 4]);
    cmd(&mut f, &bytes);
    assert_eq!(read(&mut f, 0x100, 4), [0xFF; 4], "ignored without WEL");
    cmd(&mut f, &[0x06]);
    assert_eq!(status(&mut f), 0b10, "WEL set");
    cmd(&mut f, &[0x04]);
    assert_eq!(status(&mut f), 0, "write disable clears it");
    program(&mut f, 0x100, &[1, 2, 3, 4]);
    assert_eq!(status(&mut f), 0b01, "busy, WEL cleared");
    wait_ready(&mut f);
    assert_eq!(read(&mut f, 0x100, 4), [1, 2, 3, 4]);
}

#[test]
fn busy_lasts_the_modelled_time_and_blocks_other_commands() {
    let mut f = flash();
    program(&mut f, 0, &[0x55]);
    f.clock_mut()
        .advance(NorTiming::W25Q128JV.page_program_ticks - 1);
    assert_eq!(status(&mut f) & 1, 1);
    let mut id = [0; 3];
    f.transaction(&mut [Operation::Write(&[0x9F]), Operation::Read(&mut id)])
        .unwrap();
    assert_eq!(id, [0xFF; 3], "only READ_STATUS while busy");
    f.clock_mut().advance(1);
    assert_eq!(status(&mut f) & 1, 0);
}

#[test]
fn program_only_clears_bits_and_wraps_inside_the_page() {
    let mut f = flash();
    program(&mut f, 0x10, &[0xF0]);
    wait_ready(&mut f);
    program(&mut f, 0x10, &[0x3C]);
    wait_ready(&mut f);
    assert_eq!(read(&mut f, 0x10, 1), [0x30], "1 → 0 only");
    // 4 bytes from the last two of page 0x200: the last two wrap to its start.
    program(&mut f, 0x2FE, &[1, 2, 3, 4]);
    wait_ready(&mut f);
    assert_eq!(read(&mut f, 0x2FE, 2), [1, 2]);
    assert_eq!(read(&mut f, 0x200, 2), [3, 4]);
    assert_eq!(read(&mut f, 0x300, 1), [0xFF], "next page untouched");
}

#[test]
fn sector_erase_sets_the_whole_4k_sector_to_ff() {
    let mut f = flash();
    f.storage_mut()[0x1000..0x3000].fill(0);
    cmd(&mut f, &[0x06]);
    cmd(&mut f, &addr_cmd(0x20, 0x1ABC));
    assert_eq!(status(&mut f) & 1, 1);
    f.clock_mut()
        .advance(NorTiming::W25Q128JV.sector_erase_ticks);
    assert_eq!(status(&mut f), 0);
    assert!(f.storage()[0x1000..0x2000].iter().all(|&b| b == 0xFF));
    assert!(
        f.storage()[0x2000..0x3000].iter().all(|&b| b == 0),
        "only one sector"
    );
    cmd(&mut f, &addr_cmd(0x20, 0x2000));
    assert_eq!(status(&mut f) & 1, 0, "no erase without WEL");
}

#[test]
fn read_streams_across_pages_and_wraps_at_the_end() {
    let mut f = flash();
    let n = f.storage().len();
    f.storage_mut()[n - 2..].copy_from_slice(&[7, 8]);
    f.storage_mut()[..2].copy_from_slice(&[9, 10]);
    assert_eq!(read(&mut f, (n - 2) as u32, 4), [7, 8, 9, 10]);
}

#[test]
fn power_cut_interrupts_a_program_after_n_bytes() {
    let mut f = flash();
    f.cut_power_after(300);
    program(&mut f, 0, &[0u8; 256]);
    wait_ready(&mut f);
    assert!(!f.power_failed());
    program(&mut f, 256, &[0u8; 256]);
    assert!(f.power_failed());
    assert_eq!(read(&mut f, 0, 1), [0xFF], "no answer without power");
    f.power_on();
    assert_eq!(status(&mut f), 0);
    let data = read(&mut f, 0, 1024);
    assert!(
        data[..300].iter().all(|&b| b == 0),
        "programmed before the cut"
    );
    assert!(data[300..].iter().all(|&b| b == 0xFF), "nothing after it");
}

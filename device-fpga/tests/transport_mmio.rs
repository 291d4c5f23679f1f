//! The MMIO transport over heap, shared-file and sysfs-style backings.
#![cfg(feature = "std")]

use std::path::PathBuf;
use std::sync::Arc;

use tensorplug_device_fpga::transport::mmio::{
    Bar, BarLayout, BarWindow, HeapBar, MmioRegion, MmioTransport, ShmBar, SysfsBar,
};
use tensorplug_device_fpga::transport::{Error, ErrorKind, Transport};

fn layout() -> BarLayout {
    BarLayout::new(0x100, 64 * 1024, 16 * 1024).unwrap()
}

#[test]
fn heap_registers_and_memory_round_trip() {
    let bar = Arc::new(HeapBar::new(layout()).unwrap());
    let mut host = MmioTransport::new(Arc::clone(&bar));
    host.write_reg(0x0C, 0xDEAD_BEEF).unwrap();
    // The device side sees the write, little-endian, at the same offset.
    let device = bar.registers();
    assert_eq!(device.read_u32(0x0C).unwrap(), 0xDEAD_BEEF);
    let mut raw = [0; 4];
    device.read_bytes(0x0C, &mut raw).unwrap();
    assert_eq!(raw, [0xEF, 0xBE, 0xAD, 0xDE]);
    device.write_u32(0x10, 77).unwrap();
    assert_eq!(host.read_reg(0x10).unwrap(), 77);

    let data: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
    host.write_mem(0x300, &data).unwrap();
    let mut back = vec![0; data.len()];
    bar.memory().read_bytes(0x300, &mut back).unwrap();
    assert_eq!(back, data);
    back.fill(0);
    host.read_mem(0x300, &mut back).unwrap();
    assert_eq!(back, data);
}

#[test]
fn heap_bounds_and_alignment_are_errors() {
    let bar = HeapBar::new(layout()).unwrap();
    let mut t = MmioTransport::new(&bar);
    assert_eq!(
        t.read_reg(0x100),
        Err(Error::OutOfRange {
            addr: 0x100,
            len: 4
        })
    );
    assert_eq!(t.write_reg(0xFE, 1), Err(Error::Misaligned { addr: 0xFE }));
    assert_eq!(t.read_reg(0xFC).unwrap(), 0, "last register is in range");
    let mut buf = [0; 16];
    let err = t.read_mem(64 * 1024 - 8, &mut buf).unwrap_err();
    assert_eq!(
        err,
        Error::OutOfRange {
            addr: 64 * 1024 - 8,
            len: 16
        }
    );
    assert_eq!(
        t.write_mem(u64::MAX, &[1]).unwrap_err().kind(),
        ErrorKind::OutOfRange
    );
    assert_eq!(
        t.write_mem(64 * 1024, &[]),
        Ok(()),
        "empty access at the end"
    );
    let region = bar.registers();
    assert_eq!(
        region.window(2, 4).unwrap_err().kind(),
        ErrorKind::Misaligned
    );
    assert_eq!(
        region.window(0xF0, 0x20).unwrap_err().kind(),
        ErrorKind::OutOfRange
    );
    assert_eq!(region.window(0xF0, 0x10).unwrap().read_u32(0x0C), Ok(0));
}

#[test]
fn heap_dma_window_uses_bus_addresses() {
    let bar = HeapBar::new(layout()).unwrap();
    let t = MmioTransport::new(&bar);
    let dma = t.dma().expect("a heap BAR has a DMA window");
    assert_eq!(dma.bus_base(), layout().dma_offset() as u64);
    assert_eq!(dma.len(), 16 * 1024);
    let at = dma.bus_base() + 100;
    dma.write(at, b"descriptor").unwrap();
    let mut back = [0; 10];
    bar.dma().unwrap().read(at, &mut back).unwrap();
    assert_eq!(&back, b"descriptor");
    assert_eq!(
        dma.read(dma.bus_base() - 1, &mut back).unwrap_err().kind(),
        ErrorKind::OutOfRange
    );
    assert_eq!(
        dma.write(dma.bus_base() + 16 * 1024 - 4, &[0; 5]),
        Err(Error::OutOfRange {
            addr: dma.bus_base() + 16 * 1024 - 4,
            len: 5
        })
    );
}

#[test]
fn region_refuses_null_and_misaligned_bases() {
    let mut words = [0u32; 4];
    let base = words.as_mut_ptr().cast::<u8>();
    // SAFETY: `words` outlives the regions and is only used through them.
    unsafe {
        assert_eq!(
            MmioRegion::new(base.add(1), 8).unwrap_err(),
            Error::Misaligned {
                addr: base.add(1).addr() as u64
            }
        );
        assert_eq!(
            MmioRegion::new(std::ptr::null_mut(), 8).unwrap_err().kind(),
            ErrorKind::OutOfRange
        );
        let region = MmioRegion::new(base, 16).unwrap();
        region.write_u32(12, 5).unwrap();
        assert_eq!(
            region.read_u32(16).unwrap_err().kind(),
            ErrorKind::OutOfRange
        );
    }
    assert_eq!(words[3], u32::from_le(5));
}

/// A unique path in the temp dir, removed on drop.
struct TempPath(PathBuf);

impl TempPath {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!("tensorplug-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        let _ = std::fs::remove_file(&path);
        Self(path)
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
#[cfg_attr(miri, ignore = "mmap is a foreign call")]
fn shm_file_opened_twice_shares_everything() {
    let path = TempPath::new("bar-shared");
    let host_bar = ShmBar::create(&path.0, layout()).unwrap();
    // The "other process": a second, independent mapping of the same file.
    let device_bar = ShmBar::open(&path.0).unwrap();
    assert_eq!(device_bar.layout(), &layout());
    let mut host = MmioTransport::new(&host_bar);
    let mut device = MmioTransport::new(&device_bar);

    host.write_reg(0x20, 0x1234_5678).unwrap();
    assert_eq!(device.read_reg(0x20).unwrap(), 0x1234_5678);
    device.write_reg(0x24, 9).unwrap();
    assert_eq!(host.read_reg(0x24).unwrap(), 9);

    host.write_mem(0x8000, b"tensor bytes").unwrap();
    let mut buf = [0; 12];
    device.read_mem(0x8000, &mut buf).unwrap();
    assert_eq!(&buf, b"tensor bytes");

    let (host_dma, device_dma) = (host.dma().unwrap(), device.dma().unwrap());
    assert_eq!(host_dma.bus_base(), device_dma.bus_base());
    device_dma
        .write(device_dma.bus_base() + 8, b"result")
        .unwrap();
    let mut out = [0; 6];
    host_dma.read(host_dma.bus_base() + 8, &mut out).unwrap();
    assert_eq!(&out, b"result");

    // The file holds the bytes at the documented offsets.
    drop((host_bar, device_bar));
    let file = std::fs::read(&path.0).unwrap();
    assert_eq!(&file[..8], b"TPLUGBAR");
    assert_eq!(file.len(), layout().total_len());
    let reg = layout().registers_offset() + 0x20;
    assert_eq!(file[reg..reg + 4], 0x1234_5678u32.to_le_bytes());
    let mem = layout().memory_offset() + 0x8000;
    assert_eq!(&file[mem..mem + 12], b"tensor bytes");
    let dma = layout().dma_offset() + 8;
    assert_eq!(&file[dma..dma + 6], b"result");
}

#[test]
#[cfg_attr(miri, ignore = "files are foreign calls")]
fn shm_open_refuses_foreign_or_truncated_files() {
    let path = TempPath::new("bar-bad");
    std::fs::write(&path.0, vec![0u8; 3 * 4096]).unwrap();
    let err = ShmBar::open(&path.0).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    drop(ShmBar::create(&path.0, layout()).unwrap());
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path.0)
        .unwrap();
    file.set_len(layout().total_len() as u64 - 4096).unwrap();
    assert_eq!(
        ShmBar::open(&path.0).unwrap_err().kind(),
        std::io::ErrorKind::InvalidData
    );
    assert!(ShmBar::open(path.0.join("missing")).is_err());
}

#[test]
#[cfg_attr(miri, ignore = "mmap is a foreign call")]
fn sysfs_resources_are_mapped_and_windowed() {
    let dir = TempPath::new("pci-device");
    std::fs::create_dir_all(&dir.0).unwrap();
    std::fs::write(dir.0.join("resource0"), vec![0u8; 4096]).unwrap();
    std::fs::write(dir.0.join("resource2"), vec![0u8; 4 * 4096]).unwrap();
    let regs = BarWindow {
        bar: 0,
        offset: 0,
        len: 0x100,
    };
    let mem = BarWindow {
        bar: 2,
        offset: 4096,
        len: 8192,
    };
    {
        let bar = SysfsBar::open(&dir.0, regs, mem).unwrap();
        let mut t = MmioTransport::new(&bar);
        assert!(t.dma().is_none(), "sysfs has no DMA window");
        t.write_reg(0x04, 0xA5A5_0001).unwrap();
        t.write_mem(0x10, b"card").unwrap();
        assert_eq!(t.read_reg(0x100).unwrap_err().kind(), ErrorKind::OutOfRange);
        assert_eq!(
            t.write_mem(8190, b"xyz").unwrap_err().kind(),
            ErrorKind::OutOfRange
        );
    }
    let bar0 = std::fs::read(dir.0.join("resource0")).unwrap();
    assert_eq!(bar0[4..8], 0xA5A5_0001u32.to_le_bytes());
    let bar2 = std::fs::read(dir.0.join("resource2")).unwrap();
    assert_eq!(&bar2[4096 + 0x10..4096 + 0x14], b"card");

    let too_big = BarWindow {
        bar: 2,
        offset: 4096,
        len: 4 * 4096,
    };
    assert!(SysfsBar::open(&dir.0, regs, too_big).is_err());
    assert!(SysfsBar::open(&dir.0, BarWindow { bar: 6, ..regs }, mem).is_err());
    assert!(
        SysfsBar::open(&dir.0, BarWindow { bar: 1, ..regs }, mem).is_err(),
        "no resource1"
    );
}

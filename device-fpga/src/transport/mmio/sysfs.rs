//! A real PCIe card's BARs through sysfs: `/sys/bus/pci/devices/<BDF>/resourceN`.

use std::fs::OpenOptions;
use std::io;
use std::path::Path;

use memmap2::MmapRaw;

use super::bar::Bar;
use super::region::MmioRegion;

/// Where a window lives: BAR number and byte range inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarWindow {
    /// BAR index (`resource<bar>`), 0..=5.
    pub bar: u8,
    /// Byte offset of the window in the BAR.
    pub offset: usize,
    /// Size of the window in bytes.
    pub len: usize,
}

/// The register window and memory aperture of a card, mapped from its sysfs
/// `resourceN` files (which must be mapped, not read; root or a udev rule is
/// needed). No DMA window: real DMA needs pinned, IOMMU-mapped memory
/// (VFIO), which this backend does not set up.
#[derive(Debug)]
pub struct SysfsBar {
    // Keep the mappings alive; the windows point into them.
    _maps: [Option<MmapRaw>; 2],
    registers: MmioRegion<'static>,
    memory: MmioRegion<'static>,
}

impl SysfsBar {
    /// Maps the BARs of the device directory `device` (for example
    /// `/sys/bus/pci/devices/0000:01:00.0`) and cuts out the two windows.
    pub fn open(
        device: impl AsRef<Path>,
        registers: BarWindow,
        memory: BarWindow,
    ) -> io::Result<Self> {
        let device = device.as_ref();
        let regs_map = map_resource(device, registers.bar)?;
        let mem_map = if memory.bar == registers.bar {
            None
        } else {
            Some(map_resource(device, memory.bar)?)
        };
        let registers = cut(&regs_map, registers)?;
        let memory = cut(mem_map.as_ref().unwrap_or(&regs_map), memory)?;
        Ok(Self {
            _maps: [Some(regs_map), mem_map],
            registers,
            memory,
        })
    }
}

impl Bar for SysfsBar {
    fn registers(&self) -> MmioRegion<'_> {
        self.registers
    }
    fn memory(&self) -> MmioRegion<'_> {
        self.memory
    }
}

fn map_resource(device: &Path, bar: u8) -> io::Result<MmapRaw> {
    if bar > 5 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a PCI function has BARs 0..=5",
        ));
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(device.join(std::format!("resource{bar}")))?;
    MmapRaw::map_raw(&file)
}

fn cut(map: &MmapRaw, window: BarWindow) -> io::Result<MmioRegion<'static>> {
    // SAFETY: the mapping is kept alive by `SysfsBar::_maps` for as long as
    // the window is handed out (re-borrowed from `&self`); it is device
    // memory reached only through raw pointers.
    let whole =
        unsafe { MmioRegion::new(map.as_mut_ptr(), map.len()) }.map_err(io::Error::other)?;
    whole
        .window(window.offset, window.len)
        .map_err(io::Error::other)
}

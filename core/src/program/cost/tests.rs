use super::*;

const LINK: LinkCost = LinkCost {
    round_trip_ns: 2_000_000,
    bytes_per_s: 1_000_000,
};
const RATES: Rates = Rates {
    host_flops_per_s: 1_000_000_000,
    device_flops_per_s: None,
};

#[test]
fn a_round_trip_and_the_bytes_against_the_hosts_compute() {
    let small = Work {
        flops: 512,
        bytes: 192,
        round_trips: 1,
    };
    let e = estimate(&LINK, &RATES, &small);
    assert_eq!(e.device_ns, 2_000_000 + 192_000);
    assert_eq!(e.host_ns, 512);
    assert!(!e.pays());
    let big = Work {
        flops: 10_000_000_000,
        ..small
    };
    assert!(estimate(&LINK, &RATES, &big).pays());
}

#[test]
fn a_declared_device_rate_adds_its_compute() {
    let w = Work {
        flops: 4_000_000,
        bytes: 0,
        round_trips: 1,
    };
    let slow = Rates {
        device_flops_per_s: Some(1_000_000_000),
        ..RATES
    };
    let e = estimate(&LINK, &slow, &w);
    assert_eq!(e.device_ns, 2_000_000 + 4_000_000);
    assert_eq!(e.host_ns, 4_000_000);
    assert!(!e.pays());
    assert!(estimate(&LINK, &RATES, &w).pays());
}

#[test]
fn zero_rates_and_huge_figures_saturate_instead_of_overflowing() {
    let w = Work {
        flops: u64::MAX,
        bytes: u64::MAX,
        round_trips: u32::MAX,
    };
    let stuck = LinkCost {
        round_trip_ns: u64::MAX,
        bytes_per_s: 0,
    };
    let e = estimate(&stuck, &RATES, &w);
    assert_eq!(e.device_ns, u64::MAX);
    assert!(!e.pays());
    let none = Rates {
        host_flops_per_s: 0,
        device_flops_per_s: None,
    };
    assert_eq!(estimate(&LINK, &none, &Work::default()).host_ns, u64::MAX);
}

#[cfg(feature = "alloc")]
mod probe {
    use super::super::*;
    use crate::accelerator::{
        DeviceAddr, DeviceInfo, Drained, Error, ErrorKind, Fence, Launch, Memory, MemoryUsage,
        OpDesc, Profiling, QueueId, Reset, Transfer, Version,
    };
    use alloc::rc::Rc;
    use core::cell::Cell;

    /// A link on a fake clock: each copy is one round trip plus its bytes
    /// at `bytes_per_s`; memory holds `memory` bytes.
    struct Wire {
        clock: Rc<Cell<u64>>,
        link: LinkCost,
        /// Extra time each copy on the device takes (a slow spell while
        /// the probe times its round trips).
        spell_ns: u64,
        memory: u64,
        used: u64,
        blocks: alloc::vec::Vec<(u64, u64)>,
        next: u64,
    }

    #[derive(Debug)]
    struct Refused;
    impl core::fmt::Display for Refused {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.write_str("refused")
        }
    }
    impl Error for Refused {
        fn kind(&self) -> ErrorKind {
            ErrorKind::OutOfMemory
        }
    }

    impl Wire {
        fn copy(&mut self, len: usize) -> Fence {
            let ns = self.link.round_trip_ns + ns(len as u64, self.link.bytes_per_s);
            self.clock.set(self.clock.get() + ns);
            Fence(1)
        }
    }
    impl crate::accelerator::Device for Wire {
        type Error = Refused;
        fn info(&self) -> DeviceInfo {
            DeviceInfo::new("wire", self.memory, 1, Version::new(1, 0, 0), 1)
        }
    }
    impl Memory for Wire {
        fn allocate(&mut self, bytes: u64, _align: u64) -> Result<DeviceAddr, Refused> {
            if self.used + bytes > self.memory {
                return Err(Refused);
            }
            self.used += bytes;
            self.next += bytes.max(64);
            self.blocks.push((self.next, bytes));
            Ok(DeviceAddr(self.next))
        }
        fn deallocate(&mut self, addr: DeviceAddr) -> Result<(), Refused> {
            let i = self
                .blocks
                .iter()
                .position(|b| b.0 == addr.0)
                .ok_or(Refused)?;
            self.used -= self.blocks.remove(i).1;
            Ok(())
        }
        fn memory_usage(&self) -> MemoryUsage {
            MemoryUsage {
                total: self.memory,
                used: self.used,
            }
        }
    }
    impl Transfer for Wire {
        unsafe fn copy_to_device(
            &mut self,
            _: QueueId,
            _: DeviceAddr,
            _: *const u8,
            len: usize,
        ) -> Result<Fence, Refused> {
            Ok(self.copy(len))
        }
        unsafe fn copy_from_device(
            &mut self,
            _: QueueId,
            _: *mut u8,
            _: DeviceAddr,
            len: usize,
        ) -> Result<Fence, Refused> {
            Ok(self.copy(len))
        }
        fn copy_on_device(
            &mut self,
            _: QueueId,
            _: DeviceAddr,
            _: DeviceAddr,
            _: usize,
        ) -> Result<Fence, Refused> {
            self.clock.set(self.clock.get() + self.spell_ns);
            Ok(self.copy(0))
        }
        fn fill(&mut self, _: QueueId, _: DeviceAddr, _: usize, _: u32) -> Result<Fence, Refused> {
            Err(Refused)
        }
        fn poll(&mut self, _: Fence) -> Result<bool, Refused> {
            Ok(true)
        }
        fn wait(&mut self, _: Fence, _: Duration) -> Result<(), Refused> {
            Ok(())
        }
    }
    impl Launch for Wire {
        fn launch(&mut self, _: QueueId, _: &OpDesc<'_>) -> Result<Fence, Refused> {
            Err(Refused)
        }
    }
    impl Reset for Wire {}
    impl Profiling for Wire {
        fn drain_events(&mut self, _: &mut [crate::event::Event]) -> Result<Drained, Refused> {
            Ok(Drained::default())
        }
    }

    fn measure(link: LinkCost, memory: u64) -> (LinkCost, Wire) {
        measure_with(link, memory, 0)
    }

    fn measure_with(link: LinkCost, memory: u64, spell_ns: u64) -> (LinkCost, Wire) {
        let clock = Rc::new(Cell::new(0));
        let mut wire = Wire {
            clock: clock.clone(),
            link,
            spell_ns,
            memory,
            used: 0,
            blocks: alloc::vec::Vec::new(),
            next: 0,
        };
        let mut now = || clock.get();
        let got = probe(&mut wire, QueueId(0), &mut now, &ProbeLimits::DEFAULT).unwrap();
        (got, wire)
    }

    #[test]
    fn the_probe_reads_back_the_links_round_trip_and_rate_and_frees_its_buffers() {
        // A UART-like link: 2 ms a turn, 100 kB/s: 1 KiB there and back takes
        // 24 ms, past the probe's 20.
        let uart = LinkCost {
            round_trip_ns: 2_000_000,
            bytes_per_s: 100_000,
        };
        let (got, wire) = measure(uart, 1 << 20);
        assert_eq!(got.round_trip_ns, uart.round_trip_ns);
        assert!(got.bytes_per_s.abs_diff(uart.bytes_per_s) <= 1, "{got:?}");
        assert_eq!((wire.used, wire.blocks.len()), (0, 0));
    }

    #[test]
    fn a_small_device_memory_bounds_the_copy_and_still_gives_a_rate() {
        let fast = LinkCost {
            round_trip_ns: 10_000,
            bytes_per_s: 1_000_000_000,
        };
        // A quarter of 8 KiB: only the 1 KiB copy fits the probe's cap. Its
        // two round trips are most of it, so the rate is the whole copy's:
        // a lower bound, 2 KiB in 22 µs.
        let (got, wire) = measure(fast, 8 * 1024);
        assert_eq!(got.round_trip_ns, fast.round_trip_ns);
        assert_eq!(got.bytes_per_s, 2048 * 1_000_000_000 / 22_048);
        assert_eq!(wire.used, 0);
        // With memory for larger copies, the 64 KiB one reads it back.
        let (got, _) = measure(fast, 1 << 20);
        assert!(got.bytes_per_s.abs_diff(fast.bytes_per_s) <= 1, "{got:?}");
    }

    #[test]
    fn a_slow_spell_during_the_round_trips_gives_no_impossible_rate() {
        // `sim`-like: 0.5 µs a turn, 5 GB/s; the round trips measured 67 µs.
        let sim = LinkCost {
            round_trip_ns: 500,
            bytes_per_s: 5_000_000_000,
        };
        let (got, _) = measure_with(sim, 1 << 20, 66_500);
        assert_eq!(got.round_trip_ns, 67_000);
        // Before: 2 × 64 KiB in max(1, 27 µs − 134 µs) ns, 131 TB/s.
        assert!(got.bytes_per_s <= sim.bytes_per_s, "{got:?}");
        assert!(got.bytes_per_s > sim.bytes_per_s / 2, "{got:?}");
    }
}

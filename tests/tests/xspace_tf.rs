//! Our XSpace bytes, parsed by TensorFlow's own `xplane_pb2` from the
//! tensorflow-cpu wheel (`tests/python/check_xspace.py`). The expectations are
//! written out by hand from the input events, not computed by the encoder.

use std::path::PathBuf;
use tensorplug_core::clock::{ClockMap, SyncPair};
use tensorplug_core::event::{Event, EventKind as K};
use tensorplug_core::xspace::{DeviceTrace, OpInfo, XSpaceBuilder};
use tensorplug_tests::run_python;

const START_NS: u64 = 1_700_000_000_000_000_000;

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("tensorplug-{}-{name}", std::process::id()))
}

/// Writes `bytes` and `expected`, runs the checker, cleans up.
fn check_with_tf(name: &str, bytes: &[u8], expected: &str) {
    let pb = temp_path(&format!("{name}.xplane.pb"));
    let json = temp_path(&format!("{name}.json"));
    std::fs::write(&pb, bytes).expect("write xspace");
    std::fs::write(&json, expected).expect("write expectations");
    let out = run_python(
        "check_xspace.py",
        &[
            pb.to_str().expect("utf-8 path"),
            json.to_str().expect("utf-8 path"),
        ],
    );
    let _ = std::fs::remove_file(&pb);
    let _ = std::fs::remove_file(&json);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "check_xspace.py failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.contains("check_xspace: OK"), "{stdout}");
}

#[test]
fn tf_xplane_pb2_reads_our_planes_lines_events_and_stats() {
    const OPS: [OpInfo<'static>; 1] = [OpInfo {
        name: "dense/MatMul",
        tf_op: "dense/MatMul:MatMul",
        flops: 131_072,
        bytes_accessed: 8_192,
    }];
    // Device 0 ticks at 500 MHz: 2 ns per tick, tick 1000 at START_NS.
    let start = SyncPair::new(1_000, START_NS, START_NS);
    let stop = SyncPair::new(
        1_000 + 500_000_000,
        START_NS + 1_000_000_000,
        START_NS + 1_000_000_000,
    );
    let clock = ClockMap::from_pairs(start, stop, 500_000_000).expect("clock");
    let device = [
        Event::new(K::OpBegin, 1_100, 0, 0, 0x20),
        Event::new(K::CopyD2HBegin, 2_000, 1, 2, 1_024),
        Event::new(K::OpEnd, 1_600, 0, 0, 0x20),
        Event::new(K::CopyD2HEnd, 2_250, 1, 2, 0),
        Event::new(K::OpBegin, 3_000, 0, 3, 0), // never ends
    ];
    let host = [
        Event::new(K::HostLaunchBegin, START_NS + 10, 0, 1, 0),
        Event::new(K::HostLaunchEnd, START_NS + 40, 0, 1, 0),
        Event::new(K::HostSyncBegin, START_NS + 700, 0, 0, 0),
        Event::new(K::HostSyncEnd, START_NS + 900, 0, 0, 0),
    ];
    let devices = [
        DeviceTrace {
            device_index: 0,
            clock,
            device_events: &device,
            host_events: &host,
            dropped_device_events: 5,
            dropped_host_events: 0,
        },
        DeviceTrace {
            device_index: 1,
            clock,
            device_events: &[],
            host_events: &[],
            dropped_device_events: 0,
            dropped_host_events: 0,
        },
    ];
    let bytes = XSpaceBuilder::new(START_NS, &OPS, &devices).encode_to_vec();
    let ts = START_NS;
    let expected = format!(
        r#"{{
  "warnings": [
    "/device:GPU:1000: 5 device events and 0 host API events were dropped",
    "/device:GPU:1000: 1 begin events had no matching end"
  ],
  "planes": [
    {{"id": 1000, "name": "/device:GPU:1000", "dropped_traces": 5, "lines": [
      {{"id": 0, "name": "Queue 0", "timestamp_ns": {ts}, "events": [
        {{"name": "dense/MatMul", "offset_ps": 200000, "duration_ps": 1000000,
          "stats": {{"tf_op": "dense/MatMul:MatMul"}},
          "metadata_stats": {{"flops": 131072, "bytes_accessed": 8192}}}}
      ]}},
      {{"id": 256, "name": "Memcpy", "timestamp_ns": {ts}, "events": [
        {{"name": "MemcpyD2H", "offset_ps": 2000000, "duration_ps": 500000,
          "stats": {{"bytes_transferred": 1024}}, "metadata_stats": {{}}}}
      ]}},
      {{"id": 257, "name": "Host API", "timestamp_ns": {ts}, "events": [
        {{"name": "HostLaunch", "offset_ps": 10000, "duration_ps": 30000, "stats": {{}}, "metadata_stats": {{}}}},
        {{"name": "HostSync", "offset_ps": 700000, "duration_ps": 200000, "stats": {{}}, "metadata_stats": {{}}}}
      ]}}
    ]}},
    {{"id": 1001, "name": "/device:GPU:1001", "dropped_traces": 0, "lines": []}}
  ]
}}"#
    );
    check_with_tf("full", &bytes, &expected);
}

#[test]
fn tf_xplane_pb2_reads_no_device_as_zero_planes() {
    let bytes = XSpaceBuilder::new(START_NS, &[], &[]).encode_to_vec();
    assert!(bytes.is_empty(), "no device, no output");
    check_with_tf("empty", &bytes, r#"{"warnings": [], "planes": []}"#);
}

use super::layout::*;
use super::proto::{XEvent, XPlane, XSpace, x_event, x_stat};
use super::*;
use crate::clock::{ClockMap, SyncPair};
use crate::event::{Event, EventKind as K};
use alloc::vec;
use alloc::vec::Vec;
use proptest::prelude::*;

const START_NS: u64 = 1_000_000;

/// 1 GHz device whose tick 0 is at host START_NS: 1 tick = 1 ns = 1000 ps.
fn clock() -> ClockMap {
    ClockMap::nominal(SyncPair::new(0, START_NS, START_NS), 1_000_000_000).unwrap()
}

const OPS: [OpInfo<'static>; 2] = [
    OpInfo {
        name: "dense/MatMul",
        tf_op: "dense/MatMul:MatMul",
        flops: 2_048,
        bytes_accessed: 4_096,
    },
    OpInfo {
        name: "relu",
        tf_op: "",
        flops: 0,
        bytes_accessed: 0,
    },
];

fn trace<'a>(device_events: &'a [Event], host_events: &'a [Event]) -> DeviceTrace<'a> {
    DeviceTrace {
        device_index: 0,
        clock: clock(),
        device_events,
        host_events,
        dropped_device_events: 0,
        dropped_host_events: 0,
    }
}

/// Encodes through the plan, checks it against the prost reference, decodes.
fn encode_and_decode(builder: &XSpaceBuilder<'_>) -> XSpace {
    let plan = builder.plan();
    let mut buf = vec![0u8; plan.encoded_len()];
    assert_eq!(plan.encode_into(&mut buf), Ok(buf.len()));
    let reference = builder.to_message();
    assert_eq!(
        buf,
        reference.encode_to_vec(),
        "streamed bytes differ from prost's"
    );
    let decoded = XSpace::decode(buf.as_slice()).unwrap();
    assert_eq!(decoded, reference);
    decoded
}

fn offset(event: &XEvent) -> i64 {
    match event.data {
        Some(x_event::Data::OffsetPs(ps)) => ps,
        other => panic!("no offset: {other:?}"),
    }
}

fn uint_stat(plane: &XPlane, stats: &[proto::XStat], name: &str) -> Option<u64> {
    let id = plane.stat_metadata.values().find(|m| m.name == name)?.id;
    stats
        .iter()
        .find(|s| s.metadata_id == id)
        .map(|s| match s.value {
            Some(x_stat::Value::Uint64Value(v)) => v,
            ref other => panic!("{name} is {other:?}"),
        })
}

#[test]
fn no_device_gives_zero_planes_and_zero_bytes() {
    let builder = XSpaceBuilder::new(START_NS, &OPS, &[]);
    let plan = builder.plan();
    assert_eq!(plan.encoded_len(), 0);
    assert_eq!(plan.encode_into(&mut []), Ok(0));
    assert!(builder.encode_to_vec().is_empty());
    assert!(builder.to_message().planes.is_empty());
}

#[test]
fn device_without_events_gives_one_empty_plane() {
    let devices = [trace(&[], &[])];
    let space = encode_and_decode(&XSpaceBuilder::new(START_NS, &OPS, &devices));
    assert_eq!(space.planes.len(), 1);
    assert_eq!(space.planes[0].name, "/device:GPU:1000");
    assert!(space.planes[0].lines.is_empty());
    assert!(space.warnings.is_empty());
}

#[test]
fn ops_copies_and_host_calls_land_on_their_lines() {
    let device = [
        Event::new(K::OpBegin, 100, 1, 0, 0x20),
        Event::new(K::CopyH2DBegin, 120, 0, 8, 65_536),
        Event::new(K::OpEnd, 350, 1, 0, 0x20),
        Event::new(K::CopyH2DEnd, 220, 0, 8, 0),
        Event::new(K::OpBegin, 400, 0, 1, 0x34),
        Event::new(K::OpEnd, 410, 0, 1, 0x34),
    ];
    let host = [
        Event::new(K::HostLaunchBegin, START_NS + 50, 1, 7, 0),
        Event::new(K::HostLaunchEnd, START_NS + 90, 1, 7, 0),
        Event::new(K::HostCopyBegin, START_NS + 95, 0, 8, 65_536),
        Event::new(K::HostCopyEnd, START_NS + 97, 0, 8, 0),
    ];
    let devices = [trace(&device, &host)];
    let space = encode_and_decode(&XSpaceBuilder::new(START_NS, &OPS, &devices));
    let plane = &space.planes[0];
    let ids: Vec<i64> = plane.lines.iter().map(|l| l.id).collect();
    assert_eq!(ids, [0, 1, 256, 257]);
    let names: Vec<&str> = plane.lines.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["Queue 0", "Queue 1", "Memcpy", "Host API"]);
    assert!(
        plane
            .lines
            .iter()
            .all(|l| l.timestamp_ns == START_NS as i64)
    );

    let queue1 = &plane.lines[1].events[0];
    let matmul = &plane.event_metadata[&queue1.metadata_id];
    assert_eq!(matmul.name, "dense/MatMul");
    assert_eq!((offset(queue1), queue1.duration_ps), (100_000, 250_000));
    assert_eq!(uint_stat(plane, &matmul.stats, "flops"), Some(2_048));
    assert_eq!(
        uint_stat(plane, &matmul.stats, "bytes_accessed"),
        Some(4_096)
    );
    // `tf_op` is on each op event, a ref to the stat metadata that names it.
    assert_eq!(tf_op(plane, queue1), Some("dense/MatMul:MatMul"));
    assert!(matmul.stats.iter().all(|s| s.metadata_id != STAT_TF_OP));
    let relu = &plane.lines[0].events[0];
    assert_eq!(plane.event_metadata[&relu.metadata_id].name, "relu");
    assert!(plane.event_metadata[&relu.metadata_id].stats.is_empty());
    assert_eq!(tf_op(plane, relu), Some(""), "no tf_op: an empty name");
    assert_eq!(plane.lines[0].duration_ps, 410_000);

    let copy = &plane.lines[2].events[0];
    assert_eq!(plane.event_metadata[&copy.metadata_id].name, "MemcpyH2D");
    assert_eq!((offset(copy), copy.duration_ps), (120_000, 100_000));
    assert_eq!(
        uint_stat(plane, &copy.stats, "bytes_transferred"),
        Some(65_536)
    );

    let host_line = &plane.lines[3];
    let launch = &host_line.events[0];
    assert_eq!(plane.event_metadata[&launch.metadata_id].name, "HostLaunch");
    assert_eq!((offset(launch), launch.duration_ps), (50_000, 40_000));
    let host_copy = &host_line.events[1];
    assert_eq!(
        uint_stat(plane, &host_copy.stats, "bytes_transferred"),
        Some(65_536)
    );
    assert!(space.warnings.is_empty());
}

#[test]
fn unmatched_and_unknown_events_are_counted_and_reported() {
    let device = [
        Event::new(K::OpBegin, 10, 0, 1, 0),
        Event::new(K::OpBegin, 20, 0, 1, 0), // replaces the first: 1 unmatched
        Event::new(K::OpEnd, 30, 0, 1, 0),
        Event::new(K::OpEnd, 40, 0, 2, 0),         // no begin
        Event::new(K::HostSyncBegin, 40, 0, 3, 0), // host kind on device stream
        Event {
            kind: 200,
            ..Event::default()
        },
        Event::new(K::CopyD2HBegin, 50, 0, 4, 9), // never ends
        Event::new(K::OpBegin, 60, 0, 99, 0),     // op_id outside the table
        Event::new(K::OpEnd, 70, 0, 99, 0),
    ];
    let devices = [trace(&device, &[])];
    let builder = XSpaceBuilder::new(START_NS, &OPS, &devices);
    let anomalies = builder.plan().anomalies();
    assert_eq!(anomalies.unmatched_begins, 2);
    assert_eq!(anomalies.unmatched_ends, 1);
    assert_eq!(anomalies.skipped, 2);
    let space = encode_and_decode(&builder);
    assert_eq!(space.warnings.len(), 3, "{:?}", space.warnings);
    assert!(space.warnings[0].starts_with("/device:GPU:1000: 2 begin events had no matching end"));
    assert!(space.warnings[1].contains("1 end events had no matching begin"));
    assert!(space.warnings[2].contains("2 events had an unknown kind"));
    let plane = &space.planes[0];
    assert_eq!(plane.lines[0].events.len(), 2);
    assert_eq!(plane.event_metadata[&(OP_METADATA_BASE + 99)].name, "op#99");
}

#[test]
fn dropped_events_go_into_warnings_and_a_plane_stat() {
    let devices = [DeviceTrace {
        device_index: 3,
        dropped_device_events: 12,
        dropped_host_events: 3,
        ..trace(&[], &[])
    }];
    let space = encode_and_decode(&XSpaceBuilder::new(START_NS, &OPS, &devices));
    assert_eq!(
        space.warnings,
        [
            "/device:GPU:1003: 12 device events and 3 host API events were dropped because the \
             profiling rings were full; the timeline has gaps. Profile a shorter window or drain \
             the rings more often."
        ]
    );
    let plane = &space.planes[0];
    assert_eq!((plane.id, plane.name.as_str()), (1003, "/device:GPU:1003"));
    assert_eq!(uint_stat(plane, &plane.stats, "dropped_traces"), Some(15));
}

#[test]
fn spans_before_start_or_inverted_are_clamped_and_reported() {
    let host = [
        Event::new(K::HostSyncBegin, START_NS - 10, 0, 1, 0),
        Event::new(K::HostSyncEnd, START_NS + 5, 0, 1, 0),
        Event::new(K::HostSyncBegin, START_NS + 50, 0, 2, 0),
        Event::new(K::HostSyncEnd, START_NS + 40, 0, 2, 0),
    ];
    let devices = [trace(&[], &host)];
    let space = encode_and_decode(&XSpaceBuilder::new(START_NS, &OPS, &devices));
    let events = &space.planes[0].lines[0].events;
    assert_eq!((offset(&events[0]), events[0].duration_ps), (0, 5_000));
    assert_eq!((offset(&events[1]), events[1].duration_ps), (50_000, 0));
    assert!(space.warnings[0].contains("2 spans started before the session"));
}

#[test]
fn too_small_buffer_is_an_error_and_nothing_is_written() {
    let device = [
        Event::new(K::OpBegin, 1, 0, 1, 0),
        Event::new(K::OpEnd, 2, 0, 1, 0),
    ];
    let devices = [trace(&device, &[])];
    let builder = XSpaceBuilder::new(START_NS, &OPS, &devices);
    let plan = builder.plan();
    let needed = plan.encoded_len();
    let mut buf = vec![0xAA; needed - 1];
    let err = plan.encode_into(&mut buf).unwrap_err();
    assert_eq!(
        err,
        XSpaceError::BufferTooSmall {
            needed,
            given: needed - 1
        }
    );
    assert_eq!(err.kind(), XSpaceErrorKind::BufferTooSmall);
    assert!(buf.iter().all(|&b| b == 0xAA));
    // A larger buffer is fine: only the first `needed` bytes are written.
    let mut big = vec![0xAA; needed + 8];
    assert_eq!(plan.encode_into(&mut big), Ok(needed));
    assert!(big[needed..].iter().all(|&b| b == 0xAA));
}

#[test]
fn ids_are_stable_across_collects() {
    let device = [
        Event::new(K::OpBegin, 1, 0, 0, 0),
        Event::new(K::OpEnd, 2, 0, 0, 0),
    ];
    let devices = [trace(&device, &[])];
    let first = XSpaceBuilder::new(START_NS, &OPS, &devices).encode_to_vec();
    let second = XSpaceBuilder::new(START_NS, &OPS, &devices).encode_to_vec();
    assert_eq!(first, second);
    let space = XSpace::decode(first.as_slice()).unwrap();
    let ids: Vec<i64> = space.planes[0].event_metadata.keys().copied().collect();
    assert_eq!(ids, [OP_METADATA_BASE]);
    let stat_ids: Vec<i64> = space.planes[0].stat_metadata.keys().copied().collect();
    assert_eq!(stat_ids, [1, 2, 3, 4, 5, OP_METADATA_BASE]);
}

fn arb_event() -> impl Strategy<Value = Event> {
    (any::<u64>(), 0u32..4, 0u16..4, 0u8..3, 0u8..24).prop_map(
        |(timestamp, arg, op_id, queue, kind)| Event {
            timestamp: timestamp % 1_000_000_000_000,
            arg,
            op_id,
            queue,
            kind,
        },
    )
}

proptest! {
    #[test]
    fn any_events_encode_exactly_and_match_prost(
        device in proptest::collection::vec(arb_event(), 0..64),
        host in proptest::collection::vec(arb_event(), 0..32),
        dropped in 0u64..3,
    ) {
        let devices = [DeviceTrace { dropped_host_events: dropped, ..trace(&device, &host) }];
        let builder = XSpaceBuilder::new(START_NS, &OPS, &devices);
        let plan = builder.plan();
        let mut buf = vec![0u8; plan.encoded_len()];
        prop_assert_eq!(plan.encode_into(&mut buf), Ok(buf.len()));
        prop_assert_eq!(&buf, &builder.to_message().encode_to_vec());
        prop_assert!(XSpace::decode(buf.as_slice()).is_ok());
    }
}

#[test]
fn many_open_spans_pair_correctly_beyond_the_small_table() {
    // 40 ops in flight on one queue, ending in reverse order.
    let mut device = Vec::new();
    for tag in 0..40u16 {
        device.push(Event::new(K::OpBegin, u64::from(tag), 0, tag, 1));
    }
    for tag in (0..40u16).rev() {
        device.push(Event::new(K::OpEnd, 1_000 + u64::from(tag), 0, tag, 0));
    }
    // A repeated begin for a spilled key replaces it (1 unmatched).
    device.insert(40, Event::new(K::OpBegin, 500, 0, 30, 1));
    let devices = [trace(&device, &[])];
    let builder = XSpaceBuilder::new(START_NS, &OPS, &devices);
    assert_eq!(builder.plan().anomalies().unmatched_begins, 1);
    let space = encode_and_decode(&builder);
    let events = &space.planes[0].lines[0].events;
    assert_eq!(events.len(), 40);
    for event in events {
        let begin_tick = offset(event) / 1_000;
        let tag = if begin_tick == 500 { 30 } else { begin_tick };
        assert_eq!(offset(event) + event.duration_ps, (1_000 + tag) * 1_000);
    }
}

/// The `tf_op` of an event: its ref stat's target name.
fn tf_op<'p>(plane: &'p XPlane, event: &XEvent) -> Option<&'p str> {
    let tf_op_id = plane.stat_metadata.values().find(|m| m.name == "tf_op")?.id;
    let stat = event.stats.iter().find(|s| s.metadata_id == tf_op_id)?;
    match stat.value {
        Some(x_stat::Value::RefValue(id)) => {
            Some(plane.stat_metadata.get(&(id as i64))?.name.as_str())
        }
        _ => None,
    }
}

fn arb_span() -> impl Strategy<Value = pairing::Span> {
    (
        any::<u16>(),
        any::<i64>(),
        any::<i64>(),
        any::<i64>(),
        proptest::option::of(any::<u64>()),
        proptest::option::of(any::<i64>()),
    )
        .prop_map(
            |(line, metadata_id, offset_ps, duration_ps, bytes, tf_op_ref)| pairing::Span {
                line,
                metadata_id,
                offset_ps,
                duration_ps,
                bytes,
                tf_op_ref,
            },
        )
}

proptest! {
    /// The hand-written event field equals prost's, for any values (also
    /// negative ones, which are 10-byte varints), and its length is planned.
    #[test]
    fn event_field_matches_prost_for_any_span(span in arb_span()) {
        let mut scratch = [0u8; wire::EVENT_SCRATCH];
        let len = wire::encode_event(&span, &mut scratch);
        prop_assert_eq!(len, wire::event_field_len(&span));
        let line = proto::XLine {
            events: vec![message::span_to_event(&span)],
            ..proto::XLine::default()
        };
        let expected = line.encode_to_vec();
        prop_assert_eq!(&scratch[..len], expected.as_slice());
    }
}

"""Parses an XSpace written by tensorplug with TF's own xplane_pb2 and checks
it against expectations computed independently by the Rust test.

usage: check_xspace.py <xspace.pb> <expected.json>
expected.json: {"warnings": [substring, ...], "planes": [{"id", "name",
  "dropped_traces", "lines": [{"id", "name", "timestamp_ns",
  "events": [{"name", "offset_ps", "duration_ps", "stats": {name: value},
  "metadata_stats": {name: value}}]}]}]}
Exits 1 with a message naming the first mismatch.
"""
import json
import sys

from tensorflow.tsl.profiler.protobuf import xplane_pb2


def fail(msg):
    print(f"check_xspace: {msg}", file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def stat_value(plane, stat):
    """The stat's value; a ref_value is resolved to the name of the stat
    metadata it points at, as TF's XStatVisitor::StrOrRefValue does."""
    kind = stat.WhichOneof("value")
    check(kind is not None, f"stat {stat.metadata_id} has no value")
    if kind == "ref_value":
        check(stat.ref_value in plane.stat_metadata,
              f"{plane.name}: ref_value {stat.ref_value} has no stat metadata")
        return plane.stat_metadata[stat.ref_value].name
    return getattr(stat, kind)


def stats_by_name(plane, stats):
    out = {}
    for stat in stats:
        check(stat.metadata_id in plane.stat_metadata,
              f"{plane.name}: stat id {stat.metadata_id} has no stat metadata")
        out[plane.stat_metadata[stat.metadata_id].name] = stat_value(plane, stat)
    return out


def main():
    path, expected_path = sys.argv[1], sys.argv[2]
    with open(path, "rb") as f:
        data = f.read()
    with open(expected_path) as f:
        expected = json.load(f)
    space = xplane_pb2.XSpace()
    space.ParseFromString(data)
    check(space.ByteSize() == len(data),
          f"size mismatch: file {len(data)} bytes, TF sizes the message at {space.ByteSize()}")
    check(len(space.planes) == len(expected["planes"]),
          f"{len(space.planes)} planes, expected {len(expected['planes'])}")
    for want in expected["warnings"]:
        check(any(want in w for w in space.warnings),
              f"no warning contains {want!r}; warnings: {list(space.warnings)}")
    events_checked = 0
    for plane, want_plane in zip(space.planes, expected["planes"]):
        check(plane.name == want_plane["name"], f"plane name {plane.name!r} != {want_plane['name']!r}")
        check(plane.id == want_plane["id"], f"{plane.name}: id {plane.id} != {want_plane['id']}")
        for key, meta in plane.event_metadata.items():
            check(key == meta.id, f"{plane.name}: event metadata key {key} != id {meta.id}")
        for key, meta in plane.stat_metadata.items():
            check(key == meta.id, f"{plane.name}: stat metadata key {key} != id {meta.id}")
        plane_stats = stats_by_name(plane, plane.stats)
        check(plane_stats.get("dropped_traces", 0) == want_plane["dropped_traces"],
              f"{plane.name}: dropped_traces {plane_stats.get('dropped_traces')} "
              f"!= {want_plane['dropped_traces']}")
        check(len(plane.lines) == len(want_plane["lines"]),
              f"{plane.name}: {len(plane.lines)} lines, expected {len(want_plane['lines'])}")
        for line, want_line in zip(plane.lines, want_plane["lines"]):
            where = f"{plane.name} line {line.name!r}"
            check((line.id, line.name) == (want_line["id"], want_line["name"]),
                  f"{where}: id/name ({line.id}, {line.name!r}) != "
                  f"({want_line['id']}, {want_line['name']!r})")
            check(line.timestamp_ns == want_line["timestamp_ns"],
                  f"{where}: timestamp_ns {line.timestamp_ns} != {want_line['timestamp_ns']}")
            check(len(line.events) == len(want_line["events"]),
                  f"{where}: {len(line.events)} events, expected {len(want_line['events'])}")
            for i, (event, want) in enumerate(zip(line.events, want_line["events"])):
                here = f"{where} event {i}"
                check(event.metadata_id in plane.event_metadata,
                      f"{here}: metadata id {event.metadata_id} missing")
                meta = plane.event_metadata[event.metadata_id]
                check(meta.name == want["name"], f"{here}: name {meta.name!r} != {want['name']!r}")
                check(event.WhichOneof("data") == "offset_ps", f"{here}: no offset_ps")
                check(event.offset_ps == want["offset_ps"],
                      f"{here}: offset_ps {event.offset_ps} != {want['offset_ps']}")
                check(event.duration_ps == want["duration_ps"],
                      f"{here}: duration_ps {event.duration_ps} != {want['duration_ps']}")
                got = stats_by_name(plane, event.stats)
                check(got == want["stats"], f"{here}: stats {got} != {want['stats']}")
                got_meta = stats_by_name(plane, meta.stats)
                check(got_meta == want["metadata_stats"],
                      f"{here}: metadata stats {got_meta} != {want['metadata_stats']}")
                events_checked += 1
    print(f"check_xspace: OK: {len(space.planes)} planes, {events_checked} events, "
          f"{len(space.warnings)} warnings, {len(data)} bytes")


if __name__ == "__main__":
    main()

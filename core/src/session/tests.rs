use super::*;
use crate::clock::RateSource;

const HZ: u64 = 1_000_000_000;

fn device(ticks: u64, host_ns: u64) -> DeviceSync {
    DeviceSync {
        pair: SyncPair::new(ticks, host_ns, host_ns),
        frequency_hz: HZ,
    }
}

#[test]
fn stop_without_start_is_an_error_and_changes_nothing() {
    let mut session = Session::<2>::new();
    assert_eq!(session.stop(10, &[]), Err(SessionError::NotStarted));
    assert_eq!(
        SessionError::NotStarted.kind(),
        SessionErrorKind::WrongState
    );
    assert!(!session.is_running());
    assert_eq!(session.collect(), Err(SessionError::NoSession));
}

#[test]
fn collect_without_session_is_an_error() {
    let mut session = Session::<2>::new();
    assert_eq!(session.collect(), Err(SessionError::NoSession));
    session.start(0, &[device(0, 0)]).unwrap();
    assert_eq!(session.collect(), Err(SessionError::StillRunning));
    session.stop(5, &[]).unwrap();
    assert!(session.collect().is_ok());
    // The second collect of the same window has nothing left.
    assert_eq!(session.collect(), Err(SessionError::NoSession));
}

#[test]
fn start_twice_is_an_error_and_keeps_the_running_session() {
    let mut session = Session::<2>::new();
    session.start(100, &[device(0, 100)]).unwrap();
    assert_eq!(session.start(200, &[]), Err(SessionError::AlreadyRunning));
    session.stop(300, &[]).unwrap();
    let collected = session.collect().unwrap();
    assert_eq!(collected.start_host_ns, 100);
    assert_eq!(collected.clocks.len(), 1);
}

#[test]
fn restarts_100_times_with_fresh_clocks_each_time() {
    let mut session = Session::<2>::new();
    for round in 0..100u64 {
        let t = round * 1_000_000;
        session.start(t, &[device(t * 2, t), device(t, t)]).unwrap();
        assert!(session.is_running());
        // Device 0 ticks at twice the nominal rate; device 1 has no stop pair.
        let stop = SyncPair::new(t * 2 + 2_000, t + 1_000, t + 1_000);
        session.stop(t + 1_000, &[stop]).unwrap();
        let collected = session.collect().unwrap();
        assert_eq!(
            (collected.start_host_ns, collected.stop_host_ns),
            (t, t + 1_000)
        );
        assert_eq!(collected.clocks[0].rate_source(), RateSource::Measured);
        assert_eq!(collected.clocks[0].to_host_ns(t * 2 + 1_000), t + 500);
        assert_eq!(collected.clocks[1].rate_source(), RateSource::Nominal);
        assert_eq!(collected.clocks[1].to_host_ns(t + 10), t + 10);
    }
    assert_eq!(session.discarded_windows(), 0);
}

#[test]
fn start_after_uncollected_stop_discards_and_counts_it() {
    let mut session = Session::<1>::new();
    session.start(0, &[]).unwrap();
    session.stop(1, &[]).unwrap();
    session.start(2, &[]).unwrap();
    assert_eq!(session.discarded_windows(), 1);
    session.stop(3, &[]).unwrap();
    assert_eq!(session.collect().unwrap().start_host_ns, 2);
}

#[test]
fn zero_devices_collects_no_clocks() {
    let mut session = Session::<4>::new();
    session.start(0, &[]).unwrap();
    session.stop(10, &[]).unwrap();
    assert!(session.collect().unwrap().clocks.is_empty());
}

#[test]
fn bad_input_is_refused_without_changing_state() {
    let mut session = Session::<1>::new();
    let two = [device(0, 0), device(0, 0)];
    assert_eq!(session.start(0, &two), Err(SessionError::TooManyDevices));
    let zero_hz = DeviceSync {
        frequency_hz: 0,
        ..device(0, 0)
    };
    assert_eq!(
        session.start(0, &[zero_hz]),
        Err(SessionError::Clock(ClockError::ZeroFrequency))
    );
    assert!(!session.is_running());

    session.start(0, &[device(0, 0)]).unwrap();
    let inverted = SyncPair::new(5, 10, 9);
    let err = session.stop(10, &[inverted]).unwrap_err();
    assert_eq!(err, SessionError::Clock(ClockError::InvertedWindow));
    assert_eq!(err.kind(), SessionErrorKind::InvalidInput);
    assert!(
        session.is_running(),
        "a refused stop keeps the session running"
    );
    let extra = [SyncPair::default(), SyncPair::default()];
    assert_eq!(session.stop(10, &extra), Err(SessionError::TooManyDevices));
    session.stop(10, &[]).unwrap();
}

#[test]
fn stop_time_before_start_is_clamped_to_an_empty_window() {
    let mut session = Session::<1>::new();
    session.start(100, &[]).unwrap();
    session.stop(50, &[]).unwrap();
    let collected = session.collect().unwrap();
    assert_eq!(
        (collected.start_host_ns, collected.stop_host_ns),
        (100, 100)
    );
}

#[test]
fn host_events_only_while_running_and_only_host_kinds() {
    let mut session = Session::<1>::new();
    let launch = EventKind::HostLaunchBegin;
    assert_eq!(session.host_event(launch, 5, 0, 1, 2), Ok(None));
    session.start(0, &[]).unwrap();
    let event = session.host_event(launch, 5, 3, 1, 2).unwrap().unwrap();
    assert_eq!(event, Event::new(launch, 5, 3, 1, 2));
    assert_eq!(
        session.host_event(EventKind::OpBegin, 5, 0, 1, 2),
        Err(SessionError::NotHostKind)
    );
    session.stop(6, &[]).unwrap();
    assert_eq!(
        session.host_event(EventKind::HostSyncEnd, 7, 0, 0, 0),
        Ok(None)
    );
}

//! The PluggableDevice end to end, against the real `tensorflow-cpu` wheel:
//! discovery, memory info, copies, and init errors (the plugin declines).
//! Each scenario is its own Python process.

use std::process::Output;
use tensorplug_tests::model_server::ModelServer;
use tensorplug_tests::{run_tf_with_plugin, run_tf_with_plugin_in, unsupported_tf_python};

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[track_caller]
fn assert_ok(output: &Output, marker: &str) -> String {
    let (stdout, stderr) = text(output);
    assert!(
        output.status.success(),
        "scenario failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(stdout.contains(marker), "no `{marker}` in:\n{stdout}");
    stdout
}

/// The plugin declines on an init failure (an error status would make TF
/// abort `import tensorflow`): exit 0, no FPGA device, the CPU computes, and
/// one line on stderr says why.
#[track_caller]
fn assert_declined(output: &Output, needles: &[&str]) {
    let stdout = assert_ok(output, "discovered 0 FPGA devices; the CPU computes");
    let (_, stderr) = text(output);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("no FPGA device is registered, TensorFlow runs on the CPU"))
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "one decline line expected:\n{stderr}\n{stdout}"
    );
    for needle in needles {
        assert!(lines[0].contains(needle), "no `{needle}` in: {}", lines[0]);
    }
}

#[test]
fn one_sim_device_by_default() {
    let out = run_tf_with_plugin("tf_device_discovery.py", &["1"], None);
    assert_ok(&out, "discovered 1 FPGA devices");
}

#[test]
fn two_devices_from_a_list() {
    let out = run_tf_with_plugin("tf_device_discovery.py", &["2"], Some("sim,sim"));
    assert_ok(&out, "discovered 2 FPGA devices");
}

#[test]
fn memory_info_follows_a_device_tensor() {
    let out = run_tf_with_plugin("tf_device_memory_info.py", &[], Some("sim"));
    assert_ok(&out, "memory info:");
}

#[test]
fn copies_round_trip_on_two_devices() {
    let out = run_tf_with_plugin("tf_device_copies.py", &["2"], Some("sim,sim"));
    assert_ok(&out, "14 round trips bit-exact on 2 device(s)");
}

#[test]
fn a_bad_device_list_declines_with_a_clear_message() {
    let out = run_tf_with_plugin("tf_device_discovery.py", &["0"], Some("sim,bogus"));
    assert_declined(
        &out,
        &[
            "item 2 of TENSORPLUG_DEVICE=\"sim,bogus\"",
            "unknown device `bogus`",
            "tcp:<host:port>",
        ],
    );
}

#[test]
fn a_missing_serial_port_declines_naming_it() {
    let out = run_tf_with_plugin(
        "tf_device_discovery.py",
        &["0"],
        Some("serial:/dev/tty-tensorplug-missing"),
    );
    assert_declined(
        &out,
        &[
            "cannot open device `serial:/dev/tty-tensorplug-missing`",
            "cannot open it at 115200 baud",
        ],
    );
}

/// TF 2.14 is outside the range the plugin serves (2.15 to 2.21): the
/// real wheel imports, the plugin registers no device and says what to
/// install, and the CPU computes. `TENSORPLUG_ALLOW_UNTESTED_TF=1` serves it.
#[test]
fn a_tf_outside_the_tested_range_is_declined() {
    let python = unsupported_tf_python();
    let out = run_tf_with_plugin_in(&python, "tf_device_discovery.py", &["0"], None);
    assert_declined(
        &out,
        &[
            "TensorFlow 2.14.1 is outside the versions this plugin serves (2.15 to 2.21)",
            "install tensorflow-cpu>=2.15,<2.22",
        ],
    );
}

/// `spidev:` opens the node through linux-embedded-hal; a node that does
/// not exist (no FPGA on this machine) declines saying so.
#[test]
fn a_missing_spidev_node_declines_naming_it() {
    let out = run_tf_with_plugin(
        "tf_device_discovery.py",
        &["0"],
        Some("spidev:/dev/spidev-tensorplug-missing"),
    );
    assert_declined(
        &out,
        &[
            "cannot open device `spidev:/dev/spidev-tensorplug-missing`",
            "spidev driver bound",
        ],
    );
}

#[test]
fn a_pcie_device_served_by_the_model_in_another_process() {
    let server = ModelServer::start("tf-device-pcie");
    let devices = format!("pcie:{},sim", server.file.display());
    let out = run_tf_with_plugin("tf_device_copies.py", &["2"], Some(&devices));
    assert_ok(&out, "14 round trips bit-exact on 2 device(s)");
}

/// `tcp:<host:port>`: the driver over the link protocol to the model in a
/// second process (`tensorplug-model-server --link`, the MCU firmware's
/// part): copies bit-exact, next to a `sim` device.
#[test]
fn a_tcp_device_served_over_the_link_protocol() {
    let server = ModelServer::start_link();
    assert!(
        server.ready.starts_with("tcp:127.0.0.1:"),
        "{}",
        server.ready
    );
    let devices = format!("{},sim", server.ready);
    let out = run_tf_with_plugin("tf_device_copies.py", &["2"], Some(&devices));
    assert_ok(&out, "14 round trips bit-exact on 2 device(s)");
}

/// The Keras MLP of `tf_kernels.rs` on a `tcp:` device: every compute op of
/// `predict` placed on FPGA:0 (TF's placement log), results equal to the CPU,
/// `fit` reaching the CPU's losses — over the link protocol.
#[test]
fn keras_mlp_runs_on_a_tcp_device() {
    let server = ModelServer::start_link();
    let script = tensorplug_tests::workspace_root().join("tests/python/tf_kernels_keras.py");
    let out = std::process::Command::new(tensorplug_tests::python())
        .arg(&script)
        .env("TF_CPP_MIN_LOG_LEVEL", "0")
        .env(
            "TF_PLUGGABLE_DEVICE_LIBRARY_PATH",
            tensorplug_tests::plugin_path(),
        )
        .env("TENSORPLUG_DEVICE", &server.ready)
        .env_remove("TENSORPLUG_SIM_FAULTS")
        .output()
        .expect("cannot start python");
    let stdout = assert_ok(&out, "keras MLP on FPGA matches the CPU");
    assert!(
        stdout.contains("model op types on FPGA:0: ['BiasAdd', 'MatMul', 'Relu', 'Softmax']"),
        "{stdout}"
    );
}

/// `serial:<tty>`: the link protocol on a pseudo-terminal, the model serving
/// the other end in this process (as the MCU firmware would on a UART):
/// copies bit-exact.
#[test]
fn a_serial_device_served_over_a_pty() {
    use std::sync::Arc;
    use std::time::Duration;
    use tensorplug_model_fpga::model::host::{ServeControl, serve_link};
    use tensorplug_model_fpga::model::{HostModel, ModelConfig};

    let (mut device_end, host_end) = tensorplug_tests::pty_pair();
    let path = serialport::SerialPort::name(&host_end).expect("the pty's name");
    serialport::SerialPort::set_timeout(&mut device_end, Duration::from_millis(50)).unwrap();
    let control = Arc::new(ServeControl::default());
    let serving = Arc::clone(&control);
    let server = std::thread::spawn(move || {
        let mut model = HostModel::on_host(64 << 20, ModelConfig::default()).expect("model");
        serve_link(device_end, &mut model, &serving)
    });
    let out = run_tf_with_plugin(
        "tf_device_copies.py",
        &["1"],
        Some(&format!("serial:{path}")),
    );
    control.stop();
    let served = server.join().expect("server thread");
    drop(host_end);
    assert_ok(&out, "7 round trips bit-exact on 1 device(s)");
    served.expect("the link server ended cleanly");
}

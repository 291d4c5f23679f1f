//! `cargo xtask dist`: a TensorFlow plugin crate as a pip wheel.
//!
//! A plugin crate's `[lib] name` (`tensorplug_fpga`) names everything, so
//! two vendors' wheels install side by side:
//! `target/wheels/tensorplug_fpga-<version>-py3-none-<platform>.whl` holds
//! `tensorflow-plugins/libtensorplug_fpga.so` at the wheel's root with
//! `Root-Is-Purelib: false`, so pip puts it in platlib
//! (`site-packages/tensorflow-plugins/`), where `import tensorflow` loads
//! every PluggableDevice library it finds. Layout, tag and dependency choices:
//! `docs/wheel.md`.

use crate::util::{cargo, output, root, run};
use anyhow::{Context, Result, bail};
use base64::Engine as _;
use sha2::{Digest as _, Sha256};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A plugin crate (a `cdylib` calling `tensorplug_host_bridge::export_plugin!`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PluginCrate {
    /// The cargo package.
    pub package: &'static str,
    /// Its `[lib] name`: the wheel's file name, and `lib<lib>.so`.
    pub lib: &'static str,
    /// The device type its backend declares, for the summary.
    pub device_type: &'static str,
    /// The wheel's version.
    pub version: &'static str,
}

impl PluginCrate {
    /// The distribution name pip shows (`pip uninstall tensorplug-fpga`).
    pub fn dist_name(&self) -> String {
        self.lib.replace('_', "-")
    }
    /// The `.so` as cargo names it, and as it is installed.
    pub fn so_file(&self) -> String {
        format!("lib{}.so", self.lib)
    }

    /// A plugin built outside this workspace, named by its `.so`
    /// (`libacme_npu.so`: lib `acme_npu`).
    pub fn outside(so: &Path, device_type: &str, version: &str) -> Result<Self> {
        let file = so.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let lib = file
            .strip_prefix("lib")
            .and_then(|rest| rest.strip_suffix(".so"))
            .filter(|lib| {
                !lib.is_empty() && lib.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            })
            .with_context(|| {
                format!(
                    "{}: a plugin is named lib<name>.so, <name> of [A-Za-z0-9_]",
                    so.display()
                )
            })?;
        let leak = |s: &str| -> &'static str { Box::leak(s.to_owned().into_boxed_str()) };
        Ok(Self {
            package: leak(lib),
            lib: leak(lib),
            device_type: leak(device_type),
            version: leak(version),
        })
    }
}

/// The reference FPGA's plugin.
pub const FPGA: PluginCrate = PluginCrate {
    package: "tensorplug-plugin-fpga",
    lib: "tensorplug_fpga",
    device_type: "FPGA",
    version: VERSION,
};
/// The example NPU's plugin (`examples/plugin-npu`).
pub const NPU: PluginCrate = PluginCrate {
    package: "tensorplug-plugin-npu",
    lib: "tensorplug_npu",
    device_type: "NPU",
    version: VERSION,
};
/// Every plugin crate `--plugin-crate` accepts.
pub const PLUGINS: &[PluginCrate] = &[FPGA, NPU];

/// The version: the workspace's.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// Where TF looks for plugins, relative to site-packages.
pub const PLUGIN_DIR: &str = "tensorflow-plugins";
/// The TFs the one plugin build is tested with (`setup::TF_VERSIONS`: its
/// C ABI checked against each one's headers, the real-TF suite run on each
/// with `cargo xtask test --tf-matrix`). On any other the plugin declines.
pub const REQUIRES_TF: &str = "tensorflow-cpu>=2.15,<2.22";

#[derive(clap::Args)]
pub struct DistArgs {
    /// The plugin crate of this workspace to build and package.
    #[arg(long, default_value = "tensorplug-plugin-fpga")]
    pub plugin_crate: String,
    /// With `--plugin` of a crate outside this workspace: its device type
    /// (for the wheel's summary).
    #[arg(long)]
    pub device_type: Option<String>,
    /// With `--plugin` of a crate outside this workspace: the wheel's version.
    #[arg(long)]
    pub version: Option<String>,
    /// Package this `.so` instead of building the plugin in release (the
    /// wheel test packs the debug build it already has).
    #[arg(long)]
    pub plugin: Option<PathBuf>,
    /// Write the wheel here instead of `target/wheels`.
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
}

/// `cargo xtask dist`: builds the plugin in release and writes the wheel.
pub fn run_task(args: &DistArgs) -> Result<()> {
    let known = PLUGINS.iter().find(|p| p.package == args.plugin_crate);
    let outside;
    let vendor = args.device_type.is_some() || args.version.is_some() || known.is_none();
    let krate = match (&args.plugin, known) {
        // A vendor's `.so`, named by its file.
        (Some(so), _) if vendor => {
            let ty = args.device_type.as_deref().unwrap_or("?");
            let version = args.version.as_deref().unwrap_or(VERSION);
            outside = PluginCrate::outside(so, ty, version)?;
            &outside
        }
        (_, Some(krate)) => krate,
        (_, None) => {
            let known: Vec<_> = PLUGINS.iter().map(|p| p.package).collect();
            bail!(
                "unknown plugin crate `{}` (known: {known:?}); for a crate outside this \
                 workspace pass its built .so with --plugin",
                args.plugin_crate
            )
        }
    };
    let plugin = match &args.plugin {
        Some(plugin) => plugin.clone(),
        None => {
            run(&mut plugin_build_command(krate))?;
            plugin_built_path(krate)
        }
    };
    let dir = args.out_dir.clone().unwrap_or_else(wheel_dir);
    let wheel = write_wheel(krate, &plugin, &dir)?;
    println!("{}", wheel.display());
    eprintln!(
        "install it with: pip install {}",
        wheel.strip_prefix(root()).unwrap_or(&wheel).display()
    );
    Ok(())
}

/// `cargo build --release` of the plugin `.so` into xtask's target dir.
pub fn plugin_build_command(krate: &PluginCrate) -> Command {
    let mut cmd = cargo();
    cmd.args(["build", "--release", "--package", krate.package])
        .arg("--lib")
        .env("CARGO_TARGET_DIR", crate::util::target_dir());
    cmd
}

/// Where [`plugin_build_command`] leaves the `.so`.
pub fn plugin_built_path(krate: &PluginCrate) -> PathBuf {
    crate::util::target_dir()
        .join("release")
        .join(krate.so_file())
}

/// Where wheels go: `<workspace>/target/wheels`.
pub fn wheel_dir() -> PathBuf {
    root().join("target/wheels")
}

/// Packs `plugin` into a wheel in `dir`; returns its path.
pub fn write_wheel(krate: &PluginCrate, plugin: &Path, dir: &Path) -> Result<PathBuf> {
    let so = std::fs::read(plugin).with_context(|| format!("reading {}", plugin.display()))?;
    let tag = platform_tag(plugin)?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(format!(
        "{}-{}-py3-none-{tag}.whl",
        krate.lib, krate.version
    ));
    let bytes = wheel_bytes(krate, &so, &tag)?;
    std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// One file of the wheel.
struct Entry {
    name: String,
    data: Vec<u8>,
    mode: u32,
}

/// The whole wheel, deterministic: fixed order, timestamps and modes.
fn wheel_bytes(krate: &PluginCrate, so: &[u8], tag: &str) -> Result<Vec<u8>> {
    let dist_info = format!("{}-{}.dist-info", krate.lib, krate.version);
    let hook = format!("_{}_keras", krate.lib);
    let mut entries = vec![
        Entry {
            name: format!("{PLUGIN_DIR}/{}", krate.so_file()),
            data: so.to_vec(),
            mode: 0o755,
        },
        Entry {
            name: format!("{hook}.py"),
            data: keras_hook(krate).into_bytes(),
            mode: 0o644,
        },
        Entry {
            name: format!("{}_int8.py", krate.lib),
            data: int8_module(krate).into_bytes(),
            mode: 0o644,
        },
        Entry {
            name: format!("{}_fallback.py", krate.lib),
            data: fallback_module(krate).into_bytes(),
            mode: 0o644,
        },
        Entry {
            name: format!("{}_keras.pth", krate.lib),
            data: format!("import {hook}\n").into_bytes(),
            mode: 0o644,
        },
        Entry {
            name: format!("_{}_session.py", krate.lib),
            data: session_guard(krate).into_bytes(),
            mode: 0o644,
        },
        Entry {
            name: format!("{}_session.pth", krate.lib),
            data: format!("import _{}_session\n", krate.lib).into_bytes(),
            mode: 0o644,
        },
        Entry {
            name: format!("{dist_info}/METADATA"),
            data: metadata(krate).into_bytes(),
            mode: 0o644,
        },
        Entry {
            name: format!("{dist_info}/WHEEL"),
            data: wheel_file(tag).into_bytes(),
            mode: 0o644,
        },
    ];
    let record = record(&entries, &format!("{dist_info}/RECORD"));
    entries.push(Entry {
        name: format!("{dist_info}/RECORD"),
        data: record.into_bytes(),
        mode: 0o644,
    });

    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for entry in &entries {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .last_modified_time(zip::DateTime::default())
            .unix_permissions(entry.mode);
        zip.start_file(entry.name.as_str(), options)
            .with_context(|| format!("adding {} to the wheel", entry.name))?;
        zip.write_all(&entry.data)?;
    }
    Ok(zip.finish().context("finishing the wheel")?.into_inner())
}

/// The Python module that keeps Keras' `jit_compile="auto"` off XLA on
/// this plugin's devices (`xtask/python/keras_auto_jit.py`, run at start by
/// the wheel's `.pth`; `docs/wheel.md`, "Keras and XLA").
pub fn keras_hook(krate: &PluginCrate) -> String {
    include_str!("../python/keras_auto_jit.py")
        .replace("{lib}", krate.lib)
        .replace("{device_type}", krate.device_type)
}

/// The module that makes a TF1 callable fetching into this plugin's device
/// memory fail clearly instead of crashing Python (`xtask/python/session_guard.py`,
/// run at start by the wheel's `.pth`; `docs/wheel.md`, "TF1 callables").
pub fn session_guard(krate: &PluginCrate) -> String {
    include_str!("../python/session_guard.py")
        .replace("{lib}", krate.lib)
        .replace("{device_type}", krate.device_type)
}

/// The module that runs a TFLite int8 model on this plugin's devices with
/// its int8 ops (`xtask/python/int8.py`; `docs/ops.md`, "A TFLite int8
/// model on the device").
pub fn int8_module(krate: &PluginCrate) -> String {
    include_str!("../python/int8.py")
        .replace("{lib}", krate.lib)
        .replace("{device_type}", krate.device_type)
}

/// The module that asks the plugin's fallback report for one function
/// (`xtask/python/fallback.py`; `docs/graph-optimizer.md`, "The fallback
/// report").
pub fn fallback_module(krate: &PluginCrate) -> String {
    include_str!("../python/fallback.py")
        .replace("{lib}", krate.lib)
        .replace("{device_type}", krate.device_type)
}

/// Core metadata 2.1 (what pip reads).
fn metadata(krate: &PluginCrate) -> String {
    format!(
        "Metadata-Version: 2.1\n\
         Name: {}\n\
         Version: {}\n\
         Summary: TensorFlow PluggableDevice plugin: /device:{}:0, built with tensorplug\n\
         License: {}\n\
         Requires-Python: >=3.9\n\
         Requires-Dist: {REQUIRES_TF}\n",
        krate.dist_name(),
        krate.version,
        krate.device_type,
        env!("CARGO_PKG_LICENSE"),
    )
}

fn wheel_file(tag: &str) -> String {
    format!(
        "Wheel-Version: 1.0\n\
         Generator: tensorplug xtask {VERSION}\n\
         Root-Is-Purelib: false\n\
         Tag: py3-none-{tag}\n"
    )
}

/// `RECORD`: `path,sha256=<urlsafe base64, no padding>,size` per file, and
/// the RECORD itself without hash or size.
fn record(entries: &[Entry], record_name: &str) -> String {
    let mut out = String::new();
    for entry in entries {
        let hash =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(&entry.data));
        out.push_str(&format!(
            "{},sha256={hash},{}\n",
            entry.name,
            entry.data.len()
        ));
    }
    out.push_str(&format!("{record_name},,\n"));
    out
}

/// Libraries a manylinux wheel may link against (PEP 600 / auditwheel's
/// policy, the subset a Rust `cdylib` can need).
const MANYLINUX_LIBS: &[&str] = &[
    "libc.so.6",
    "libm.so.6",
    "libdl.so.2",
    "librt.so.1",
    "libpthread.so.0",
    "libgcc_s.so.1",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
];

/// The oldest glibc PEP 600 tags (manylinux2014 = 2.17).
const MIN_GLIBC_MINOR: u32 = 17;
/// Newest libgcc_s symbol version the manylinux_2_28+ policies allow.
const MAX_GCC_VERSION: [u32; 3] = [7, 0, 0];

/// `manylinux_2_<N>_<arch>` where N is the newest `GLIBC_2.N` symbol version
/// the `.so` needs, if it links only [`MANYLINUX_LIBS`] and libgcc_s symbols
/// the policy allows; `linux_<arch>` (installable, but only on the machine
/// type it was built for) otherwise.
pub fn platform_tag(so: &Path) -> Result<String> {
    let arch = std::env::consts::ARCH;
    if !cfg!(target_os = "linux") || !matches!(arch, "x86_64" | "aarch64") {
        bail!("wheels are built for Linux x86_64/aarch64 only, not {arch}");
    }
    let needed = needed_libs(&objdump(so, "-p")?);
    let versions = symbol_versions(&objdump(so, "-T")?);
    let glibc_minor = versions
        .iter()
        .filter_map(|v| v.strip_prefix("GLIBC_2."))
        .filter_map(|minor| minor.split('.').next()?.parse::<u32>().ok())
        .max()
        .unwrap_or(MIN_GLIBC_MINOR)
        .max(MIN_GLIBC_MINOR);
    let libs_ok = needed
        .iter()
        .all(|lib| MANYLINUX_LIBS.contains(&lib.as_str()));
    let gcc_ok = versions
        .iter()
        .filter_map(|v| v.strip_prefix("GCC_"))
        .all(|v| parse_version(v).is_some_and(|v| v <= MAX_GCC_VERSION));
    Ok(if libs_ok && gcc_ok {
        format!("manylinux_2_{glibc_minor}_{arch}")
    } else {
        eprintln!("    {needed:?} / {versions:?} are outside manylinux: tagging linux_{arch}");
        format!("linux_{arch}")
    })
}

fn objdump(so: &Path, flag: &str) -> Result<String> {
    output(Command::new("objdump").arg(flag).arg(so))
        .context("objdump (binutils) reads the plugin's glibc needs for the wheel tag")
}

/// `NEEDED` entries of `objdump -p`.
fn needed_libs(private_headers: &str) -> Vec<String> {
    private_headers
        .lines()
        .filter_map(|line| line.trim().strip_prefix("NEEDED"))
        .map(|lib| lib.trim().to_string())
        .collect()
}

/// Symbol versions of undefined dynamic symbols in `objdump -T`
/// (`0000 DF *UND* 0000 (GLIBC_2.34) pthread_create`), deduplicated.
fn symbol_versions(dynamic_symbols: &str) -> Vec<String> {
    let mut versions: Vec<String> = dynamic_symbols
        .lines()
        .filter(|line| line.contains("*UND*"))
        .filter_map(|line| {
            let start = line.find('(')? + 1;
            let end = start + line[start..].find(')')?;
            Some(line[start..end].to_string())
        })
        .collect();
    versions.sort();
    versions.dedup();
    versions
}

/// `4.2.0` → `[4, 2, 0]`; missing parts are 0.
fn parse_version(text: &str) -> Option<[u32; 3]> {
    let mut out = [0; 3];
    for (slot, part) in out.iter_mut().zip(text.split('.')) {
        *slot = part.parse().ok()?;
    }
    (text.split('.').count() <= 3).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    #[test]
    fn record_lists_every_file_with_its_sha256_and_size() {
        let entries = [Entry {
            name: "a/b".into(),
            data: b"hello".to_vec(),
            mode: 0o644,
        }];
        // sha256("hello"), urlsafe base64 without padding (as pip checks it).
        assert_eq!(
            record(&entries, "x.dist-info/RECORD"),
            "a/b,sha256=LPJNul-wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ,5\nx.dist-info/RECORD,,\n"
        );
    }

    #[test]
    fn wheel_is_deterministic_and_its_record_matches_its_files() {
        let so = vec![0x7f; 1000];
        let first = wheel_bytes(&FPGA, &so, "manylinux_2_28_x86_64").unwrap();
        assert_eq!(
            first,
            wheel_bytes(&FPGA, &so, "manylinux_2_28_x86_64").unwrap()
        );

        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(first)).unwrap();
        let mut read = |name: &str| {
            let mut data = Vec::new();
            zip.by_name(name).unwrap().read_to_end(&mut data).unwrap();
            data
        };
        let info = format!("tensorplug_fpga-{VERSION}.dist-info");
        assert_eq!(read("tensorflow-plugins/libtensorplug_fpga.so"), so);
        let metadata = String::from_utf8(read(&format!("{info}/METADATA"))).unwrap();
        assert!(metadata.contains("Name: tensorplug-fpga\n"), "{metadata}");
        let npu = wheel_bytes(&NPU, &so, "manylinux_2_28_x86_64").unwrap();
        let mut npu = zip::ZipArchive::new(std::io::Cursor::new(npu)).unwrap();
        assert!(
            npu.by_name("tensorflow-plugins/libtensorplug_npu.so")
                .is_ok()
        );
        assert!(
            npu.by_name(&format!("tensorplug_npu-{VERSION}.dist-info/RECORD"))
                .is_ok()
        );
        let wheel = String::from_utf8(read(&format!("{info}/WHEEL"))).unwrap();
        assert!(wheel.contains("Root-Is-Purelib: false\nTag: py3-none-manylinux_2_28_x86_64\n"));
        let record = String::from_utf8(read(&format!("{info}/RECORD"))).unwrap();
        for line in record.lines().filter(|l| !l.ends_with(",,")) {
            let mut fields = line.split(',');
            let (name, hash, size) = (
                fields.next().unwrap(),
                fields.next().unwrap(),
                fields.next().unwrap(),
            );
            let data = read(name);
            assert_eq!(size, data.len().to_string(), "{name}");
            let want =
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(&data));
            assert_eq!(hash, format!("sha256={want}"), "{name}");
        }
        assert_eq!(record.lines().count(), 10);
        let fallback = String::from_utf8(read("tensorplug_fpga_fallback.py")).unwrap();
        assert!(fallback.contains("TENSORPLUG_FPGA_FALLBACK_FILE"));
        assert!(!fallback.contains("{device_type}") && !fallback.contains("{lib}"));
        let int8 = String::from_utf8(read("tensorplug_fpga_int8.py")).unwrap();
        assert!(int8.contains("DEVICE_TYPE = \"FPGA\""));
        assert!(int8.contains("import tensorplug_fpga_int8 as int8"));
        assert!(!int8.contains("{device_type}") && !int8.contains("{lib}"));
        let hook = String::from_utf8(read("_tensorplug_fpga_keras.py")).unwrap();
        assert!(hook.contains("DEVICE_TYPE = \"FPGA\""), "{hook}");
        assert!(!hook.contains("{device_type}") && !hook.contains("{lib}"));
        assert_eq!(
            read("tensorplug_fpga_keras.pth"),
            b"import _tensorplug_fpga_keras\n"
        );
        let guard = String::from_utf8(read("_tensorplug_fpga_session.py")).unwrap();
        assert!(guard.contains("DEVICE_TYPE = \"FPGA\""), "{guard}");
        assert!(!guard.contains("{device_type}") && !guard.contains("{lib}"));
        assert_eq!(
            read("tensorplug_fpga_session.pth"),
            b"import _tensorplug_fpga_session\n"
        );
    }

    #[test]
    fn a_vendor_plugin_is_named_by_its_so() {
        let acme = PluginCrate::outside(Path::new("/x/libacme_npu.so"), "ACME", "0.3.1").unwrap();
        assert_eq!(
            (acme.lib, acme.dist_name(), acme.so_file()),
            ("acme_npu", "acme-npu".into(), "libacme_npu.so".into())
        );
        let wheel = wheel_bytes(&acme, b"so", "manylinux_2_28_x86_64").unwrap();
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(wheel)).unwrap();
        assert!(zip.by_name("acme_npu-0.3.1.dist-info/METADATA").is_ok());
        for bad in [
            "/x/acme.so",
            "/x/lib.so",
            "/x/libacme-npu.so",
            "/x/libacme.dylib",
        ] {
            assert!(
                PluginCrate::outside(Path::new(bad), "?", "1").is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn objdump_output_gives_needed_libs_and_symbol_versions() {
        let headers = "Dynamic Section:\n  NEEDED               libgcc_s.so.1\n  NEEDED               libc.so.6\n  SONAME  x\n";
        assert_eq!(needed_libs(headers), ["libgcc_s.so.1", "libc.so.6"]);
        let symbols = "0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.34) pthread_create\n\
                       0000000000000000      DF *UND*\t0000000000000000 (GCC_4.2.0) _Unwind_Resume\n\
                       0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.2.5) memcpy\n\
                       00000000000a1000 g    DF .text\t0000000000000010  Base        SE_InitPlugin\n";
        assert_eq!(
            symbol_versions(symbols),
            ["GCC_4.2.0", "GLIBC_2.2.5", "GLIBC_2.34"]
        );
        assert_eq!(parse_version("4.2.0"), Some([4, 2, 0]));
        assert_eq!(parse_version("3.3"), Some([3, 3, 0]));
        assert_eq!(parse_version("1.2.3.4"), None);
        assert_eq!(parse_version("x"), None);
    }

    #[test]
    fn the_wheel_range_the_matrix_and_the_plugins_served_range_agree() {
        let versions = crate::setup::TF_VERSIONS;
        let minor = |v: &str| -> (u32, u32) {
            let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap());
            (parts.next().unwrap(), parts.next().unwrap())
        };
        let (oldest, newest) = (minor(versions[0]), minor(versions[versions.len() - 1]));
        assert_eq!(
            REQUIRES_TF,
            format!(
                "tensorflow-cpu>={}.{},<{}.{}",
                oldest.0,
                oldest.1,
                newest.0,
                newest.1 + 1
            )
        );
        // One minor version each, consecutive.
        for pair in versions.windows(2) {
            assert_eq!(minor(pair[1]), (minor(pair[0]).0, minor(pair[0]).1 + 1));
        }
        let support =
            std::fs::read_to_string(crate::util::root().join("host-bridge/src/tf_versions.rs"))
                .unwrap();
        let served = format!(
            "pub const TESTED: [(u32, u32); 2] = [({}, {}), ({}, {})];",
            oldest.0, oldest.1, newest.0, newest.1
        );
        assert!(support.contains(&served), "tf_versions.rs lacks `{served}`");
        assert!(minor(crate::setup::TF_UNSUPPORTED) < oldest);
    }
}

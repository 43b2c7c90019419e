//! Builds the CUDA kernels in `kernels/*.cu` twice (Note [Two builds of every kernel]):
//!
//! - for the host, with the C++ compiler under the emulator's force-included header
//!   (`emu/cuda_cpu.h`), into a static library with one `extern "C"` entry per kernel and a name
//!   table, so the emulated device runs the very same source;
//! - for the GPU, with nvcc, into one fatbin per file (SASS for sm_80 and sm_90 plus compute_90
//!   PTX), embedded in the crate, with the `ptxas -v` resources of every kernel recorded in a
//!   generated table. A kernel that spills registers fails the build. nvcc's output is cached by
//!   content (Note [The fatbin cache]).
//!
//! Nothing happens without the `cuda` feature: the default build needs neither the CUDA headers
//! nor nvcc. With it, the CUDA headers are required (they come from the pinned pip wheels, see
//! `kernels-cuda/setup-cuda.sh`); nvcc is used when found and skipped otherwise, in which case the
//! real driver reports that the crate has no device code.
//!
//! Tools are found through `CUDA_INCLUDE` (the directory holding `cuda_fp16.h`) and `NVCC`, or
//! else in the virtual environment `setup-cuda.sh` creates (`<workspace>/.cuda/venv`).
//! `CUDA_EMU_SANITIZE=1` builds the emulator and kernels with AddressSanitizer and UBSan.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "cuda")]
    cuda::build();
}

#[cfg(feature = "cuda")]
mod cuda {
    use std::collections::BTreeMap;
    use std::env;
    use std::fmt::Write as _;
    use std::fs;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    pub fn build() {
        println!("cargo:rerun-if-changed=kernels");
        println!("cargo:rerun-if-changed=emu");
        for var in ["CUDA_INCLUDE", "NVCC", "CUDA_EMU_SANITIZE"] {
            println!("cargo:rerun-if-env-changed={var}");
        }
        let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
        let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
        let wheels = manifest.join("../.cuda/venv");
        let include = find_include(&wheels);
        let kernels = kernel_files(&manifest.join("kernels"), &manifest.join("emu"), &include);
        mirror_args(&manifest.join("kernels/args.h"), &out);
        emulator_build(&manifest, &out, &include, &kernels);
        device_build(&out, &include, &kernels, find_nvcc(&wheels));
    }

    /// GPU architectures in the fatbin: SASS for each, plus PTX for the newest so later GPUs can JIT
    /// it. The target driver is CUDA 13.0, which cannot JIT newer PTX than nvcc 13.0 writes.
    /// SASS runs on every GPU of its major version with the same or a higher minor one, so sm_80's
    /// serves the A100, the sm_86 and the sm_89 parts alike: SASS of their own would only tune
    /// them, at two more compilations of every kernel per build (nvcc's time doubled).
    const SASS_ARCHS: [&str; 2] = ["80", "90"];
    const PTX_ARCH: &str = "90";

    /// Mirrors the kernel argument structs of `kernels/args.h` into Rust (`OUT_DIR/args.rs`), so
    /// Rust builds the very layout the kernels read.
    fn mirror_args(header: &Path, out: &Path) {
        let bindings = bindgen::Builder::default()
            .header(header.to_str().expect("UTF-8 path"))
            .allowlist_type("Kc.*")
            .allowlist_var("KC_.*")
            .derive_default(true)
            .layout_tests(true)
            .generate()
            .unwrap_or_else(|e| panic!("bindgen on {}: {e}", header.display()));
        bindings.write_to_file(out.join("args.rs")).expect("writing OUT_DIR/args.rs");
    }

    /// One `.cu` file and the kernels it defines.
    struct KernelFile {
        path: PathBuf,
        stem: String,
        kernels: Vec<String>,
    }

    /// The `.cu` files of `dir` (sorted, so the generated code is stable) with their entry points.
    fn kernel_files(dir: &Path, emu: &Path, include: &Path) -> Vec<KernelFile> {
        let mut paths: Vec<PathBuf> = fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|e| e.expect("directory entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "cu"))
            .collect();
        paths.sort();
        paths
            .into_iter()
            .map(|path| {
                let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
                KernelFile { kernels: entry_points(&path, dir, emu, include), path, stem }
            })
            .collect()
    }

    /// The kernels a `.cu` file defines: every `extern "C" __global__ void NAME(`, after the
    /// preprocessor (entry points are stamped out per dtype by macros). With `CUDA_EMU_SCAN` the
    /// emulator header turns `__global__` into the marker `CUDA_EMU_GLOBAL_MARK`, which survives
    /// preprocessing. Kernel authors write every entry point this way (`docs/src/cuda.md`): the
    /// emulator's table and the driver's `cuModuleGetFunction` both need unmangled names.
    fn entry_points(path: &Path, kernels: &Path, emu: &Path, include: &Path) -> Vec<String> {
        let compiler = cc::Build::new().cpp(true).get_compiler();
        let output = Command::new(compiler.path())
            .args(["-std=c++17", "-E", "-P", "-x", "c++", "-DCUDA_EMU_SCAN"])
            .arg("-include")
            .arg(emu.join("cuda_cpu.h"))
            .arg("-I")
            .arg(emu)
            .arg("-I")
            .arg(kernels)
            .arg("-I")
            .arg(include)
            .arg("-I")
            .arg(include.join("cccl"))
            .arg(path)
            .output()
            .unwrap_or_else(|e| panic!("running the preprocessor on {}: {e}", path.display()));
        assert!(
            output.status.success(),
            "preprocessing {} failed:\n{}",
            path.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        let text = String::from_utf8_lossy(&output.stdout);
        let mut names = Vec::new();
        let mut rest: &str = &text;
        while let Some(at) = rest.find("CUDA_EMU_GLOBAL_MARK") {
            rest = &rest[at + "CUDA_EMU_GLOBAL_MARK".len()..];
            let Some(s) = rest.trim_start().strip_prefix("void") else { continue };
            let s = s.trim_start();
            let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
            assert!(
                end > 0 && s[end..].trim_start().starts_with('('),
                "unparsable kernel declaration in {} near: {}",
                path.display(),
                &s[..s.len().min(60)]
            );
            names.push(s[..end].to_string());
        }
        names.sort();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "a kernel is defined twice in {}", path.display());
        names
    }

    fn find_include(wheels: &Path) -> PathBuf {
        if let Some(dir) = env::var_os("CUDA_INCLUDE") {
            return PathBuf::from(dir);
        }
        if let Some(cu) = wheel_root(wheels) {
            return cu.join("include");
        }
        panic!(
            "the `cuda` feature needs the CUDA headers (cuda_fp16.h, vector_types.h): run \
             kernels-cuda/setup-cuda.sh, or set CUDA_INCLUDE to a directory that has them"
        );
    }

    fn find_nvcc(wheels: &Path) -> Option<PathBuf> {
        if let Some(nvcc) = env::var_os("NVCC") {
            return Some(PathBuf::from(nvcc));
        }
        wheel_root(wheels).map(|cu| cu.join("bin/nvcc")).filter(|p| p.exists())
    }

    /// `venv/lib/python3.X/site-packages/nvidia/cu13` of the pip wheels, if installed.
    fn wheel_root(venv: &Path) -> Option<PathBuf> {
        let lib = venv.join("lib");
        let mut pythons: Vec<PathBuf> = fs::read_dir(&lib).ok()?.filter_map(|e| e.ok().map(|e| e.path())).collect();
        pythons.sort();
        pythons
            .into_iter()
            .map(|p| p.join("site-packages/nvidia/cu13"))
            .find(|p| p.join("include/cuda_fp16.h").exists())
    }

    /// Note [Two builds of every kernel]: the emulator build compiles each `.cu` as C++ under
    /// `emu/cuda_cpu.h`, through a generated wrapper that adds one `CUDA_EMU_EXPORT(name)` per
    /// kernel, and a registry `CUDA_EMU_KERNELS` of `{name, entry}` that the Rust side reads. The
    /// registry is referenced from Rust, so the linker keeps every kernel object; static
    /// constructors would not be (unreferenced objects of a static library are dropped).
    fn emulator_build(manifest: &Path, out: &Path, include: &Path, files: &[KernelFile]) {
        let emu = manifest.join("emu");
        let gen = out.join("emu");
        fs::create_dir_all(&gen).expect("creating OUT_DIR/emu");
        let sanitize = env::var_os("CUDA_EMU_SANITIZE").is_some_and(|v| v == "1");
        let base = || {
            let mut b = cc::Build::new();
            b.cpp(true)
                .std("c++17")
                // The emulator runs kernels at near-CPU speed only when optimised, also in debug builds.
                .opt_level(2)
                .include(&emu)
                .include(manifest.join("kernels"))
                .include(include)
                .include(include.join("cccl"))
                .flag("-ftls-model=initial-exec")
                .flag("-Wno-unknown-pragmas");
            if sanitize {
                // -O1 as the emulator's own sanitizer run (emu/selftest/run.sh): at -O2 GCC 12's null
                // check misfires on the initial-exec TLS thread coordinates.
                b.opt_level(1)
                    .flag("-fsanitize=address,undefined")
                    .flag("-fno-sanitize-recover=all")
                    .flag("-fno-omit-frame-pointer")
                    .flag("-g");
            }
            b
        };
        // Kernel sources (and the registry) get the emulator header force-included; the runtime is
        // plain C++ and is a library of its own, linked after the kernels that call into it.
        let mut build = base();
        build.flag("-include").flag(emu.join("cuda_cpu.h").to_str().expect("UTF-8 path")).flag("-Wno-unused-parameter");
        let mut registry = String::from(
            "// @generated by kernels-cuda/build.rs\n#include <cstddef>\n\
             typedef int (*cuda_emu_entry)(const unsigned*, const unsigned*, unsigned, void**);\n",
        );
        let mut table = String::new();
        let mut count = 0usize;
        for f in files {
            let mut wrapper = format!("// @generated by kernels-cuda/build.rs\n#include \"{}\"\n", f.path.display());
            for k in &f.kernels {
                writeln!(wrapper, "CUDA_EMU_EXPORT({k})").unwrap();
                writeln!(
                    registry,
                    "extern \"C\" int cuda_emu_kernel_{k}(const unsigned*, const unsigned*, unsigned, void**);"
                )
                .unwrap();
                writeln!(table, "    {{\"{k}\", cuda_emu_kernel_{k}}},").unwrap();
                count += 1;
            }
            let path = gen.join(format!("emu_{}.cpp", f.stem));
            write_if_changed(&path, &wrapper);
            build.file(&path);
        }
        writeln!(
            registry,
            "struct CudaEmuKernel {{ const char* name; cuda_emu_entry entry; }};\n\
             extern \"C\" const CudaEmuKernel CUDA_EMU_KERNELS[] = {{\n{table}    {{nullptr, nullptr}}\n}};\n\
             extern \"C\" const size_t CUDA_EMU_KERNEL_COUNT = {count};"
        )
        .unwrap();
        let registry_path = gen.join("emu_registry.cpp");
        write_if_changed(&registry_path, &registry);
        build.file(&registry_path);
        build.compile("cuda_emu_kernels");
        base().file(emu.join("cuda_cpu_rt.cpp")).compile("cuda_emu_runtime");
        if sanitize {
            // The sanitizer runtimes as shared libraries: works on stable Rust, no LD_PRELOAD.
            println!("cargo:rustc-link-lib=dylib=asan");
            println!("cargo:rustc-link-lib=dylib=ubsan");
        }
        println!("cargo:rustc-link-lib=dylib=stdc++");
    }

    /// Compiles every `.cu` with nvcc into a fatbin and writes `OUT_DIR/device.rs`: the embedded
    /// fatbins and the `ptxas -v` resources per kernel and architecture. Without nvcc the tables
    /// are empty.
    fn device_build(out: &Path, include: &Path, files: &[KernelFile], nvcc: Option<PathBuf>) {
        let mut fatbins = String::new();
        let mut resources = String::new();
        if let Some(nvcc) = &nvcc {
            let dir = files.first().and_then(|f| f.path.parent()).unwrap_or(Path::new("."));
            let cache = FatbinCache::new(out, nvcc, include, dir);
            let cache = &cache;
            let results: Vec<(String, String)> = std::thread::scope(|s| {
                let jobs: Vec<_> =
                    files.iter().map(|f| s.spawn(move || compile_fatbin(nvcc, include, out, f, cache))).collect();
                jobs.into_iter().map(|j| j.join().expect("nvcc job panicked")).collect()
            });
            let mut spills = Vec::new();
            for (f, (fatbin, log)) in files.iter().zip(results) {
                writeln!(fatbins, "    (\"{}\", include_bytes!(\"{fatbin}\")),", f.stem).unwrap();
                for r in parse_ptxas(&log).values() {
                    if r.spill_stores + r.spill_loads > 0 {
                        spills.push(format!(
                            "{} on sm_{}: {} B spill stores, {} B spill loads",
                            r.kernel, r.arch, r.spill_stores, r.spill_loads
                        ));
                    }
                    writeln!(
                        resources,
                        "    KernelResources {{ kernel: \"{}\", arch: {}, registers: {}, shared_bytes: {}, stack_bytes: {}, spill_stores: {}, spill_loads: {} }},",
                        r.kernel, r.arch, r.registers, r.shared, r.stack, r.spill_stores, r.spill_loads
                    )
                    .unwrap();
                }
            }
            assert!(spills.is_empty(), "kernels spill registers (ptxas -v):\n{}", spills.join("\n"));
        } else {
            println!("cargo:warning=nvcc not found (set NVCC or run kernels-cuda/setup-cuda.sh): no device code is embedded, only the emulated device can run kernels");
        }
        let code = format!(
            "// @generated by kernels-cuda/build.rs\n\
             /// Whether nvcc built device code into this crate.\n\
             pub const HAS_DEVICE_CODE: bool = {};\n\
             /// `(file stem, fatbin)` of every kernel file.\n\
             pub static FATBINS: &[(&str, &[u8])] = &[\n{fatbins}];\n\
             /// `ptxas -v` resources of every kernel on every SASS architecture.\n\
             pub static KERNEL_RESOURCES: &[KernelResources] = &[\n{resources}];\n",
            nvcc.is_some()
        );
        write_if_changed(&out.join("device.rs"), &code);
    }

    /// nvcc's flags for every file, output and include paths aside.
    fn nvcc_flags() -> Vec<String> {
        let mut flags: Vec<String> =
            ["-fatbin", "-O3", "-std=c++17", "-Xptxas", "-v", "--Werror", "all-warnings"].map(String::from).into();
        for arch in SASS_ARCHS {
            flags.push("-gencode".into());
            flags.push(format!("arch=compute_{arch},code=sm_{arch}"));
        }
        flags.push("-gencode".into());
        flags.push(format!("arch=compute_{PTX_ARCH},code=compute_{PTX_ARCH}"));
        flags
    }

    /// Note [The fatbin cache]: nvcc takes minutes per build (the elementwise file alone, most of
    /// them), and cargo runs this script again for every set of features and build-dependency
    /// features it sees and whenever `CUDA_EMU_SANITIZE` changes: CI's clippy, test, MPI, parity
    /// and sanitizer steps ran nvcc four times over the same sources. Its output depends only on
    /// the kernel sources, nvcc and its flags, so it is kept in `<target dir>/cuda-fatbin-cache`
    /// (or `CUDA_FATBIN_CACHE`), named by a hash of all of them: the `.cu` file itself, every
    /// header of `kernels/` (any of them may be included; kernel files include headers only, not
    /// one another), `nvcc --version`, the flags and the CUDA include path. So a change to one
    /// kernel file compiles that file alone. A hit copies the fatbin and its `ptxas -v` log into `OUT_DIR`; a miss
    /// compiles and stores both (through a rename, so a concurrent build never reads half a
    /// file) and drops that file's older entries. Only the GPU build is cached: the emulator's
    /// objects depend on the sanitizer flags and take a minute.
    struct FatbinCache {
        dir: Option<PathBuf>,
        /// nvcc's version, the flags, the include path and every header, hashed with each file.
        common: Vec<u8>,
    }

    impl FatbinCache {
        fn new(out: &Path, nvcc: &Path, include: &Path, kernels: &Path) -> Self {
            // OUT_DIR is <target dir>[/<triple>]/<profile>/build/<package>-<hash>/out.
            let dir = env::var_os("CUDA_FATBIN_CACHE").map(PathBuf::from).or_else(|| {
                let build = out.ancestors().nth(2)?;
                (build.file_name()? == "build")
                    .then(|| build.parent()?.parent().map(|t| t.join("cuda-fatbin-cache")))?
            });
            let version = Command::new(nvcc).arg("--version").output().map(|o| o.stdout).unwrap_or_default();
            let mut sources: Vec<PathBuf> =
                fs::read_dir(kernels).map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default();
            sources.sort();
            let mut bytes = version;
            for flag in nvcc_flags() {
                bytes.extend(flag.as_bytes());
                bytes.push(0);
            }
            bytes.extend(include.to_string_lossy().as_bytes());
            for path in sources.iter().filter(|p| p.extension().is_none_or(|e| e != "cu")) {
                append_file(&mut bytes, path);
            }
            FatbinCache { dir, common: bytes }
        }

        /// `(fatbin, log)` paths of a file's entry.
        fn entry(&self, f: &KernelFile) -> Option<(PathBuf, PathBuf)> {
            let dir = self.dir.as_ref()?;
            let mut bytes = self.common.clone();
            append_file(&mut bytes, &f.path);
            let (key, stem) = (hash128(&bytes), &f.stem);
            Some((dir.join(format!("{stem}-{key:032x}.fatbin")), dir.join(format!("{stem}-{key:032x}.log"))))
        }

        fn load(&self, f: &KernelFile, fatbin: &Path) -> Option<String> {
            let (cached, log) = self.entry(f)?;
            let log = fs::read_to_string(log).ok()?;
            fs::copy(cached, fatbin).ok()?;
            Some(log)
        }

        /// Best effort: a cache that cannot be written only costs the next build its time.
        fn store(&self, f: &KernelFile, fatbin: &Path, log: &str) {
            let (Some(dir), Some((cached, cached_log))) = (&self.dir, self.entry(f)) else { return };
            if fs::create_dir_all(dir).is_err() {
                return;
            }
            let tmp = |p: &Path| {
                let mut name = p.as_os_str().to_owned();
                name.push(format!(".tmp{}", std::process::id()));
                PathBuf::from(name)
            };
            let stored = fs::copy(fatbin, tmp(&cached)).is_ok()
                && fs::write(tmp(&cached_log), log).is_ok()
                && fs::rename(tmp(&cached), &cached).is_ok()
                && fs::rename(tmp(&cached_log), &cached_log).is_ok();
            if !stored {
                return;
            }
            let prefix = format!("{}-", f.stem);
            let current = [cached.file_name().map(|n| n.to_owned()), cached_log.file_name().map(|n| n.to_owned())];
            for e in fs::read_dir(dir).into_iter().flatten().flatten() {
                let name = e.file_name();
                let ours = name.to_str().is_some_and(|n| {
                    n.strip_prefix(&prefix)
                        .is_some_and(|rest| rest.len() > 32 && rest[..32].bytes().all(|b| b.is_ascii_hexdigit()))
                });
                if ours && !current.iter().any(|c| c.as_deref() == Some(name.as_os_str())) {
                    let _ = fs::remove_file(e.path());
                }
            }
        }
    }

    /// Appends a file's name, length and contents (nothing when it cannot be read: nvcc will
    /// report it).
    fn append_file(bytes: &mut Vec<u8>, path: &Path) {
        let Ok(contents) = fs::read(path) else { return };
        bytes.extend(path.file_name().unwrap_or_default().as_encoded_bytes());
        bytes.push(0);
        bytes.extend((contents.len() as u64).to_le_bytes());
        bytes.extend(contents);
    }

    /// Two differently seeded SipHashes of `bytes`: a cache key, not a security boundary.
    fn hash128(bytes: &[u8]) -> u128 {
        use std::hash::{DefaultHasher, Hasher};
        let half = |seed: u64| {
            let mut h = DefaultHasher::new();
            h.write_u64(seed);
            h.write(bytes);
            h.finish()
        };
        (u128::from(half(0x6b65726e656c73)) << 64) | u128::from(half(0x66617462696e))
    }

    fn compile_fatbin(
        nvcc: &Path,
        include: &Path,
        out: &Path,
        f: &KernelFile,
        cache: &FatbinCache,
    ) -> (String, String) {
        let fatbin = out.join(format!("{}.fatbin", f.stem));
        if let Some(log) = cache.load(f, &fatbin) {
            return (fatbin.display().to_string(), log);
        }
        let mut cmd = Command::new(nvcc);
        // `--threads 0`: the architectures of one file compile in parallel, so the biggest file
        // does not finish alone on one core.
        cmd.args(nvcc_flags()).args(["--threads", "0"]);
        cmd.arg("-I").arg(include).arg("-I").arg(f.path.parent().unwrap());
        cmd.arg(&f.path).arg("-o").arg(&fatbin);
        let output = cmd.output().unwrap_or_else(|e| panic!("running {}: {e}", nvcc.display()));
        let log = String::from_utf8_lossy(&output.stderr).into_owned() + &String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "nvcc failed on {}:\n{log}", f.path.display());
        cache.store(f, &fatbin, &log);
        (fatbin.display().to_string(), log)
    }

    /// One kernel's resources on one architecture, from `ptxas -v`.
    #[derive(Default)]
    struct Resources {
        kernel: String,
        arch: u32,
        registers: u32,
        shared: u32,
        stack: u32,
        spill_stores: u32,
        spill_loads: u32,
    }

    /// Parses `ptxas -v` output: "Compiling entry function 'K' for 'sm_90'", then "N bytes stack
    /// frame, N bytes spill stores, N bytes spill loads" and "Used N registers, ... N bytes smem".
    fn parse_ptxas(log: &str) -> BTreeMap<(String, u32), Resources> {
        let mut all = BTreeMap::new();
        let mut current: Option<(String, u32)> = None;
        let number_before = |line: &str, word: &str| -> Option<u32> {
            let at = line.find(word)?;
            line[..at].split_whitespace().last()?.parse().ok()
        };
        for line in log.lines() {
            if let Some(rest) = line.split("Compiling entry function '").nth(1) {
                let kernel = rest.split('\'').next().unwrap_or_default().to_string();
                let arch = rest
                    .split("'sm_")
                    .nth(1)
                    .and_then(|a| a.split('\'').next())
                    .and_then(|a| a.parse().ok())
                    .unwrap_or(0);
                all.insert((kernel.clone(), arch), Resources { kernel: kernel.clone(), arch, ..Default::default() });
                current = Some((kernel, arch));
                continue;
            }
            let Some(r) = current.as_ref().and_then(|k| all.get_mut(k)) else { continue };
            if line.contains("bytes stack frame") {
                r.stack = number_before(line, "bytes stack frame").unwrap_or(0);
                r.spill_stores = number_before(line, "bytes spill stores").unwrap_or(0);
                r.spill_loads = number_before(line, "bytes spill loads").unwrap_or(0);
            } else if line.contains("registers") {
                r.registers = number_before(line, "registers").unwrap_or(0);
                r.shared = number_before(line, "bytes smem").unwrap_or(0);
            }
        }
        all
    }

    fn write_if_changed(path: &Path, contents: &str) {
        if fs::read_to_string(path).ok().as_deref() != Some(contents) {
            fs::write(path, contents).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        }
    }
}

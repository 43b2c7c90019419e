//! With the `gloo` feature: compiles the C++ shim over Gloo (`gloo/shim.cc`) and generates its
//! Rust declarations from `gloo/shim.h` with bindgen (Note [The Gloo backend]). Gloo's headers
//! and library come from the system (Debian's `libgloo-dev`); `GLOO_INCLUDE_DIR` and
//! `GLOO_LIB_DIR` point elsewhere.
use std::env;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if env::var_os("CARGO_FEATURE_GLOO").is_none() {
        return;
    }
    gloo();
}

#[cfg(feature = "gloo")]
fn gloo() {
    use std::path::PathBuf;
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("gloo");
    for f in ["shim.h", "shim.cc"] {
        println!("cargo:rerun-if-changed={}", dir.join(f).display());
    }
    println!("cargo:rerun-if-env-changed=GLOO_INCLUDE_DIR");
    println!("cargo:rerun-if-env-changed=GLOO_LIB_DIR");
    let include = env::var_os("GLOO_INCLUDE_DIR").map(PathBuf::from);
    let header = include.clone().unwrap_or_else(|| PathBuf::from("/usr/include")).join("gloo/context.h");
    if !header.exists() {
        panic!(
            "the `gloo` feature needs Gloo's headers and library, {} is missing: install Debian's \
             libgloo-dev (apt-get install libgloo-dev) or set GLOO_INCLUDE_DIR and GLOO_LIB_DIR",
            header.display()
        );
    }
    let mut build = cc::Build::new();
    build.cpp(true).std("c++17").file(dir.join("shim.cc")).include(&dir).warnings(false);
    if let Some(inc) = &include {
        build.include(inc);
    }
    build.compile("torch_gloo_shim");
    if let Some(lib) = env::var_os("GLOO_LIB_DIR") {
        println!("cargo:rustc-link-search=native={}", PathBuf::from(lib).display());
    }
    println!("cargo:rustc-link-lib=dylib=gloo");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    bindgen::Builder::default()
        .header(dir.join("shim.h").display().to_string())
        .allowlist_function("gloo_shim_.*")
        .allowlist_type("gloo_shim_.*")
        .allowlist_var("GLOO_SHIM_.*")
        .generate()
        .unwrap_or_else(|e| panic!("bindgen on gloo/shim.h: {e}"))
        .write_to_file(out.join("gloo_shim.rs"))
        .unwrap_or_else(|e| panic!("writing the Gloo bindings: {e}"));
}

#[cfg(not(feature = "gloo"))]
fn gloo() {}

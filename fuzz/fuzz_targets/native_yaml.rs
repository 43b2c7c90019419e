//! Fuzzes the YAML front end of the code generator on arbitrary text: the
//! `native_functions.yaml` loader (`codegen::yaml::parse_native_functions`), the
//! `derivatives.yaml` loader (`codegen::autograd::parse_derivatives`) and, for what loads, the
//! emitters (`generate_aten`; `generate_autograd` against the real operator list).
//!
//! Invariant: every input gives `Ok` or a `LoadError` whose line lies within the text; nothing
//! panics.

#![no_main]

use std::sync::LazyLock;

use codegen::autograd::{generate_autograd, parse_derivatives};
use codegen::gen::generate_aten;
use codegen::yaml::{parse_native_functions, NativeFunction};
use libfuzzer_sys::fuzz_target;

/// The real operator list, for checking fuzzed derivatives against.
static REAL_FUNCTIONS: LazyLock<Vec<NativeFunction>> = LazyLock::new(|| {
    parse_native_functions("native_functions.yaml", include_str!("../../aten/native_functions.yaml"))
        .expect("the checked-in native_functions.yaml loads")
});

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // Any character YAML may count as a line break bounds the line numbers.
    let lines = 1 + text.chars().filter(|c| matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')).count();
    let check = |what: &str, loc: &codegen::yaml::Location| {
        // Locations are 1-based; one past the last line is allowed for errors at the end.
        assert!(loc.line <= lines + 1, "{what}: location {loc} in a text of at most {lines} lines");
    };
    match parse_native_functions("native_functions.yaml", text) {
        Ok(fns) => {
            for f in &fns {
                check("native_functions", &f.loc);
            }
            if let Err(e) = generate_aten(&fns) {
                check("generate_aten", &e.loc);
            }
        }
        Err(e) => check("native_functions", &e.loc),
    }
    match parse_derivatives("derivatives.yaml", text) {
        Ok(ders) => {
            for d in &ders {
                check("derivatives", &d.loc);
            }
            if let Err(e) = generate_autograd(&REAL_FUNCTIONS, &ders) {
                // It may point into the real native_functions.yaml instead.
                if e.loc.file == "derivatives.yaml" {
                    check("generate_autograd", &e.loc);
                }
            }
        }
        Err(e) => check("derivatives", &e.loc),
    }
});

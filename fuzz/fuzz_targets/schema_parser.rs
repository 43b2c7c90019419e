//! Fuzzes PyTorch's schema grammar: `schema::parse_schema` on arbitrary UTF-8, and the
//! run-time registration path that parses schemas of operators registered by strings
//! (`aten::dispatcher().def`).
//!
//! Invariants: parsing never panics; an error's column lies within the string (or one past its
//! end); a parsed schema prints in canonical form, the canonical form reparses to an equal
//! value and prints identically (the round trip `FunctionSchema`'s `Display` promises).

#![no_main]

use libfuzzer_sys::fuzz_target;
use schema::{parse_schema, FunctionSchema};

/// Throwaway operator names for `def`; a small fixed set so the dispatcher's table (whose
/// entries live for the whole process) stays small however long the run.
const SCRATCH_NAMES: usize = 8;

fuzz_target!(
    init: {
        // The dispatcher's registration leaks replaced fallbacks on purpose; see op_surface.rs.
        let _ = aten::dispatcher();
    },
    |data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse_schema(text) {
        Err(e) => {
            let len = text.chars().count();
            assert!(e.column >= 1 && e.column <= len + 1, "column {} outside 1..={} for {text:?}", e.column, len + 1);
            // The dispatcher must reject it too, with an error value.
            assert!(aten::dispatcher().def(text).is_err(), "def accepted {text:?}, which parse_schema rejects");
        }
        Ok(schema) => {
            let canonical = schema.to_string();
            let again = parse_schema(&canonical)
                .unwrap_or_else(|e| panic!("canonical form {canonical:?} of {text:?} does not reparse: {e}"));
            assert_eq!(again, schema, "canonical form {canonical:?} reparses to a different schema");
            assert_eq!(again.to_string(), canonical, "printing is not idempotent");
            // Exercise the queries the generator and the dispatcher use.
            let _ = (schema.is_inplace(), schema.is_out_fn(), schema.is_mutable(), schema.full_name());
            for a in &schema.arguments {
                let _ = (a.ty.is_tensor_like(), a.ty.is_optional(), a.is_write());
            }
            register_under_scratch_name(&schema, data);
        }
    }
});

/// Declares `schema` under one of a few throwaway names through `dispatcher().def`: the first
/// declaration stores it, a different one under the same name must be an error, the same one
/// again a no-op.
fn register_under_scratch_name(schema: &FunctionSchema, data: &[u8]) {
    let slot = data.iter().fold(0usize, |h, &b| h.wrapping_mul(31).wrapping_add(b as usize)) % SCRATCH_NAMES;
    let renamed = FunctionSchema { name: format!("fuzz_scratch_{slot}"), overload: String::new(), ..schema.clone() };
    let text = format!("fuzz::{renamed}");
    match aten::dispatcher().def(&text) {
        Ok(op) => {
            let stored = op.schema().expect("a defined operator has a schema");
            // Either we stored it, or an equal schema was already there.
            assert_eq!(*stored, renamed, "def returned an operator with another schema");
        }
        Err(c10::Error::Schema(_)) => {
            let (_, stored) =
                aten::dispatcher().find_schema(&renamed.full_name()).expect("the scratch name is defined");
            assert_ne!(*stored, renamed, "def refused a schema equal to the stored one");
        }
        Err(e) => panic!("def failed with an unexpected error kind: {e}"),
    }
}

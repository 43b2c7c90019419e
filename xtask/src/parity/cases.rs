//! The data model of `cases.json` (see `parity/FORMAT.md`): cases, their ARGs and grad blocks,
//! and the loader that turns a malformed file into an error naming the file.

use std::collections::HashSet;
use std::fmt;
use std::path::Path;

use serde::de::{Deserializer, Error as _, MapAccess, Visitor};
use serde::Deserialize;

/// The only `format` version this runner understands.
pub const FORMAT_VERSION: u32 = 1;

/// The top level of `cases.json`.
#[derive(Deserialize)]
struct CasesFile {
    format: u32,
    cases: Vec<Case>,
}

/// One operator call and its expected results.
#[derive(Debug, Deserialize)]
pub struct Case {
    /// Unique name, `OP/TAG`.
    pub id: String,
    /// Schema name without namespace: `add.Tensor`.
    pub op: String,
    /// Positional arguments, a prefix of the schema's arguments.
    #[serde(default)]
    pub args: Vec<ArgSpec>,
    /// Arguments by schema name, in the order the file lists them (which matters for the order
    /// of differentiable inputs).
    #[serde(default, deserialize_with = "ordered_kwargs")]
    pub kwargs: Vec<(String, ArgSpec)>,
    /// Safetensors keys of the expected returned tensors (`None` = not compared); absent when
    /// nothing is compared.
    #[serde(default)]
    pub outputs: Option<Vec<Option<String>>>,
    /// Relative tolerance (0 when absent: exact).
    #[serde(default)]
    pub rtol: f64,
    /// Absolute tolerance (0 when absent: exact).
    #[serde(default)]
    pub atol: f64,
    /// The gradient check, if any.
    #[serde(default)]
    pub grad: Option<GradSpec>,
    /// The call must return an error.
    #[serde(default)]
    pub expect_error: bool,
    /// What is compared of the outputs: values (the default) or, for random results, only
    /// shapes and dtypes (`"compare": "meta"`).
    #[serde(default)]
    pub compare: Compare,
    /// Outputs determined only up to the sign of each vector (see `parity/gauge.rs`).
    #[serde(default)]
    pub gauge: Vec<super::gauge::GaugeSpec>,
    /// Several calls instead of `op` (see `parity/graph.rs`); `args` are the graph's inputs.
    #[serde(default)]
    pub graph: Option<super::graph::GraphSpec>,
}

/// A case's `compare` field.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compare {
    /// Shapes, dtypes and values.
    #[default]
    Values,
    /// Shapes and dtypes only (random or uninitialised results).
    Meta,
}

/// A case's `grad` block.
#[derive(Debug, Deserialize)]
pub struct GradSpec {
    /// Indices of the returned tensors that are differentiated.
    pub outputs: Vec<usize>,
    /// Keys of the upstream gradients, one per entry of `outputs`.
    pub grad_outputs: Vec<String>,
    /// Keys of the expected gradients of the differentiable inputs, in order.
    pub expected: Vec<String>,
    /// Relative tolerance of the gradient comparison.
    pub rtol: f64,
    /// Absolute tolerance of the gradient comparison.
    pub atol: f64,
    /// Outputs whose upstream gradient is the stored tensor times the output itself (gauge
    /// outputs: see `parity/gauge.rs`).
    #[serde(default)]
    pub gauge_outputs: Vec<usize>,
}

/// One ARG of a case (`{"tensor": "in1"}`, `{"int": 3}`, `null`, ...).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "Option<RawArg>")]
pub enum ArgSpec {
    /// `null`: `None` for an optional argument.
    None,
    /// `{"tensor": KEY}`, optionally non-contiguous and/or excluded from differentiation.
    Tensor {
        /// Safetensors key.
        key: String,
        /// Pass a non-contiguous tensor with the same values.
        noncontig: bool,
        /// Not a differentiable input.
        no_grad: bool,
    },
    /// `{"tensors": [KEY, ...]}`
    Tensors(Vec<String>),
    /// `{"optional_tensors": [KEY or null, ...]}`
    OptionalTensors(Vec<Option<String>>),
    /// `{"int": N}`
    Int(i64),
    /// `{"float": X}`
    Float(f64),
    /// `{"bool": B}`
    Bool(bool),
    /// `{"ints": [...]}`
    Ints(Vec<i64>),
    /// `{"floats": [...]}`
    Floats(Vec<f64>),
    /// `{"bools": [...]}`
    Bools(Vec<bool>),
    /// `{"str": S}`
    Str(String),
    /// `{"dtype": NAME}`
    Dtype(String),
}

impl ArgSpec {
    /// A tensor ARG without flags (tests and helpers).
    #[cfg(test)]
    pub fn tensor(key: &str) -> ArgSpec {
        ArgSpec::Tensor { key: key.to_string(), noncontig: false, no_grad: false }
    }
}

impl fmt::Display for ArgSpec {
    /// The ARG in the file's JSON notation, for error messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgSpec::None => f.write_str("null"),
            ArgSpec::Tensor { key, noncontig, no_grad } => {
                write!(f, "{{\"tensor\": {key:?}")?;
                if *noncontig {
                    f.write_str(", \"noncontig\": true")?;
                }
                if *no_grad {
                    f.write_str(", \"no_grad\": true")?;
                }
                f.write_str("}")
            }
            ArgSpec::Tensors(v) => write!(f, "{{\"tensors\": {v:?}}}"),
            ArgSpec::OptionalTensors(v) => {
                let items: Vec<String> =
                    v.iter().map(|k| k.as_ref().map_or("null".to_string(), |k| format!("{k:?}"))).collect();
                write!(f, "{{\"optional_tensors\": [{}]}}", items.join(", "))
            }
            ArgSpec::Int(i) => write!(f, "{{\"int\": {i}}}"),
            ArgSpec::Float(x) => write!(f, "{{\"float\": {x:?}}}"),
            ArgSpec::Bool(b) => write!(f, "{{\"bool\": {b}}}"),
            ArgSpec::Ints(v) => write!(f, "{{\"ints\": {v:?}}}"),
            ArgSpec::Floats(v) => write!(f, "{{\"floats\": {v:?}}}"),
            ArgSpec::Bools(v) => write!(f, "{{\"bools\": {v:?}}}"),
            ArgSpec::Str(s) => write!(f, "{{\"str\": {s:?}}}"),
            ArgSpec::Dtype(s) => write!(f, "{{\"dtype\": {s:?}}}"),
        }
    }
}

/// An ARG object as written: exactly one value field, plus the tensor flags.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArg {
    tensor: Option<String>,
    #[serde(default)]
    noncontig: bool,
    #[serde(default)]
    no_grad: bool,
    tensors: Option<Vec<String>>,
    optional_tensors: Option<Vec<Option<String>>>,
    int: Option<i64>,
    float: Option<FloatArg>,
    bool: Option<bool>,
    ints: Option<Vec<i64>>,
    floats: Option<Vec<f64>>,
    bools: Option<Vec<bool>>,
    str: Option<String>,
    dtype: Option<String>,
}

/// A `float` ARG: a JSON number, or `"inf"`, `"-inf"` or `"nan"` (JSON has no literal for
/// them).
#[derive(Deserialize)]
#[serde(untagged)]
enum FloatArg {
    Number(f64),
    Named(String),
}

impl FloatArg {
    fn value(self) -> Result<f64, String> {
        match self {
            FloatArg::Number(x) => Ok(x),
            FloatArg::Named(s) => match s.as_str() {
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                "nan" => Ok(f64::NAN),
                _ => Err(format!("a float ARG is a number, \"inf\", \"-inf\" or \"nan\", not {s:?}")),
            },
        }
    }
}

impl TryFrom<Option<RawArg>> for ArgSpec {
    type Error = String;

    fn try_from(raw: Option<RawArg>) -> Result<ArgSpec, String> {
        let Some(r) = raw else {
            return Ok(ArgSpec::None);
        };
        let flags = r.noncontig || r.no_grad;
        let mut kinds: Vec<ArgSpec> = Vec::new();
        if let Some(key) = r.tensor {
            kinds.push(ArgSpec::Tensor { key, noncontig: r.noncontig, no_grad: r.no_grad });
        }
        kinds.extend(r.tensors.map(ArgSpec::Tensors));
        kinds.extend(r.optional_tensors.map(ArgSpec::OptionalTensors));
        kinds.extend(r.int.map(ArgSpec::Int));
        if let Some(x) = r.float {
            kinds.push(ArgSpec::Float(x.value()?));
        }
        kinds.extend(r.bool.map(ArgSpec::Bool));
        kinds.extend(r.ints.map(ArgSpec::Ints));
        kinds.extend(r.floats.map(ArgSpec::Floats));
        kinds.extend(r.bools.map(ArgSpec::Bools));
        kinds.extend(r.str.map(ArgSpec::Str));
        kinds.extend(r.dtype.map(ArgSpec::Dtype));
        if kinds.len() != 1 {
            return Err(format!(
                "an ARG must have exactly one of tensor, tensors, optional_tensors, int, float, \
                 bool, ints, floats, bools, str, dtype (found {})",
                kinds.len()
            ));
        }
        let arg = kinds.remove(0);
        if flags && !matches!(arg, ArgSpec::Tensor { .. }) {
            return Err(format!("\"noncontig\"/\"no_grad\" only apply to a tensor ARG, not {arg}"));
        }
        Ok(arg)
    }
}

/// Reads `kwargs` keeping the file's order (a plain map would sort the names).
fn ordered_kwargs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, ArgSpec)>, D::Error> {
    struct Ordered;
    impl<'de> Visitor<'de> for Ordered {
        type Value = Vec<(String, ArgSpec)>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object mapping argument names to ARGs")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out: Vec<(String, ArgSpec)> = Vec::new();
            while let Some((name, arg)) = map.next_entry::<String, ArgSpec>()? {
                if out.iter().any(|(n, _)| *n == name) {
                    return Err(A::Error::custom(format!("keyword argument '{name}' given twice")));
                }
                out.push((name, arg));
            }
            Ok(out)
        }
    }
    d.deserialize_map(Ordered)
}

/// Parses the text of a `cases.json`; `path` only names the file in errors.
pub fn parse_cases(path: &Path, text: &str) -> Result<Vec<Case>, String> {
    let file: CasesFile = serde_json::from_str(text).map_err(|e| format!("{}: {e}", path.display()))?;
    if file.format != FORMAT_VERSION {
        return Err(format!(
            "{}: format {} is not supported (this runner reads format {FORMAT_VERSION})",
            path.display(),
            file.format
        ));
    }
    let mut seen = HashSet::new();
    for case in &file.cases {
        if !seen.insert(case.id.as_str()) {
            return Err(format!("{}: case id '{}' appears twice", path.display(), case.id));
        }
    }
    Ok(file.cases)
}

/// Reads and parses `cases.json`.
pub fn load_cases(path: &Path) -> Result<Vec<Case>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_cases(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Case>, String> {
        parse_cases(Path::new("cases.json"), text)
    }

    #[test]
    fn parses_args_kwargs_in_order_and_grad() {
        let cases = parse(
            r#"{"format": 1, "generator": "x", "cases": [{
                "id": "a/0", "op": "add.Tensor",
                "args": [{"tensor": "in1", "noncontig": true}, null, {"int": 2}],
                "kwargs": {"z": {"float": 1.5}, "a": {"dtype": "float16"},
                           "m": {"optional_tensors": ["k", null]}},
                "outputs": ["out", null], "rtol": 1e-5, "atol": 1e-6,
                "grad": {"outputs": [0], "grad_outputs": ["g"], "expected": ["e"],
                         "rtol": 1e-4, "atol": 1e-4}
            }]}"#,
        )
        .unwrap();
        let c = &cases[0];
        assert_eq!(
            c.args,
            vec![
                ArgSpec::Tensor { key: "in1".into(), noncontig: true, no_grad: false },
                ArgSpec::None,
                ArgSpec::Int(2)
            ]
        );
        let names: Vec<&str> = c.kwargs.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["z", "a", "m"]);
        assert_eq!(c.kwargs[2].1, ArgSpec::OptionalTensors(vec![Some("k".into()), None]));
        assert_eq!(c.outputs, Some(vec![Some("out".into()), None]));
        assert_eq!(c.grad.as_ref().unwrap().expected, ["e"]);
        assert!(!c.expect_error);
    }

    #[test]
    fn rejects_bad_files_naming_the_file() {
        let e =
            parse(r#"{"format": 1, "cases": [{"id": "a", "op": "x", "args": [{"int": 1, "float": 2}]}]}"#).unwrap_err();
        assert!(e.starts_with("cases.json:") && e.contains("exactly one"), "{e}");
        let e = parse(r#"{"format": 1, "cases": [{"id": "a", "op": "x", "args": [{"tensr": "k"}]}]}"#).unwrap_err();
        assert!(e.contains("tensr"), "{e}");
        let e = parse(r#"{"format": 1, "cases": [{"id": "a", "op": "x", "args": [{"int": 1, "no_grad": true}]}]}"#)
            .unwrap_err();
        assert!(e.contains("only apply to a tensor"), "{e}");
        let e = parse(r#"{"format": 2, "cases": []}"#).unwrap_err();
        assert!(e.contains("format 2"), "{e}");
        let e = parse(r#"{"format": 1, "cases": [{"id": "a", "op": "x"}, {"id": "a", "op": "y"}]}"#).unwrap_err();
        assert!(e.contains("appears twice"), "{e}");
        let e =
            parse(r#"{"format": 1, "cases": [{"id": "a", "op": "x", "kwargs": {"k": null, "k": null}}]}"#).unwrap_err();
        assert!(e.contains("given twice"), "{e}");
        assert!(parse("not json").unwrap_err().starts_with("cases.json:"));
    }
}

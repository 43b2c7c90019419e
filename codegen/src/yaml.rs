//! Loads PyTorch-format `native_functions.yaml` into checked [`NativeFunction`] records, each
//! carrying the `file:line` of its `- func:` entry so later errors can point back at the YAML.
//!
//! The YAML is read into a small span-carrying tree first (serde-saphyr's [`Spanned`]), and the
//! entries are interpreted by hand, so every error, including unknown keys, names a line.

use std::collections::HashMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

use schema::{parse_schema, FunctionSchema, Type};

/// A place in a YAML file: `native_functions.yaml:123`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Location {
    /// The file name as given to [`parse_native_functions`].
    pub file: String,
    /// 1-based line number.
    pub line: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One entry of `native_functions.yaml`.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeFunction {
    /// The parsed `func:` schema.
    pub func: FunctionSchema,
    /// The `func:` text verbatim, without an `aten::` prefix.
    pub schema_str: String,
    /// Where the entry's `func:` key is.
    pub loc: Location,
    /// `variants` includes `function` (the default when `variants` is absent).
    pub variants_function: bool,
    /// `variants` includes `method`.
    pub variants_method: bool,
    /// `(dispatch key, kernel name)` pairs in file order; `CPU, CUDA: foo` gives two pairs.
    /// Empty when `dispatch` is absent.
    pub dispatch: Vec<(String, String)>,
    /// `structured: True` (only on out= variants).
    pub structured: bool,
    /// `structured_delegate: op.out`: the structured out= operator this one is generated from.
    pub structured_delegate: Option<String>,
    /// `tags: core` or `tags: [core, pointwise]`.
    pub tags: Vec<String>,
    /// `device_check: NoCheck` or `ExactSame`.
    pub device_check: Option<String>,
    /// `manual_kernel_registration: True`.
    pub manual_kernel_registration: bool,
}

/// An error loading `native_functions.yaml`, at the line it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// Where the problem is.
    pub loc: Location,
    /// What the problem is.
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.loc, self.message)
    }
}

impl std::error::Error for LoadError {}

/// Keys torchgen knows that this loader accepts and ignores.
const IGNORED_KEYS: &[&str] = &[
    "python_module",
    "cpp_no_default_args",
    "autogen",
    "ufunc_inner_loop",
    "precomputed",
    "device_guard",
    "structured_inherits",
    "category_override",
    "manual_cpp_binding",
    "use_const_ref_for_mutable_tensors",
];

/// The values `device_check` may take (torchgen's `DeviceCheckType`).
const DEVICE_CHECKS: &[&str] = &["NoCheck", "ExactSame"];

/// Parses the text of a `native_functions.yaml`; `file` is used only in locations.
///
/// Besides the schema grammar, this enforces torchgen's checks: unique `name.overload`, known
/// keys and variants, `structured: True` only on out= variants, a `structured_delegate` naming a
/// structured operator of the same file, a `Tensor self` argument for `variants: method`, and a
/// trailing `_` on `inplace_view` operators.
///
/// ```
/// let yaml = "\
/// - func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
///   structured: True
///   dispatch:
///     CPU, CUDA: add_out
/// ";
/// let fns = codegen::yaml::parse_native_functions("native_functions.yaml", yaml).unwrap();
/// assert_eq!(fns[0].func.full_name(), "add.out");
/// assert_eq!(fns[0].dispatch[1], ("CUDA".to_string(), "add_out".to_string()));
/// assert_eq!(fns[0].loc.to_string(), "native_functions.yaml:1");
/// ```
pub fn parse_native_functions(file: &str, text: &str) -> Result<Vec<NativeFunction>, LoadError> {
    let loader = Loader { file };
    let root: Option<Spanned<Node>> = if text.lines().all(is_blank_or_comment) {
        None
    } else {
        Some(serde_saphyr::from_str(text).map_err(|e| loader.yaml_error(&e))?)
    };
    let entries = match root {
        None => return Ok(Vec::new()),
        Some(Spanned { value: Node::Null, .. }) => return Ok(Vec::new()),
        Some(Spanned { value: Node::Seq(items), .. }) => items,
        Some(other) => {
            return Err(loader.error(
                line_of(&other),
                format!("expected a list of `- func:` entries at the top level, found {}", other.value.kind()),
            ))
        }
    };

    let mut functions: Vec<NativeFunction> = Vec::with_capacity(entries.len());
    let mut seen: HashMap<String, usize> = HashMap::new();
    for entry in entries {
        let f = loader.entry(entry)?;
        let name = f.func.full_name();
        if let Some(&first) = seen.get(&name) {
            return Err(LoadError {
                loc: f.loc.clone(),
                message: format!("duplicate operator `{name}` (first defined at {})", functions[first].loc),
            });
        }
        seen.insert(name, functions.len());
        functions.push(f);
    }

    for f in &functions {
        let Some(delegate) = &f.structured_delegate else {
            continue;
        };
        match seen.get(delegate).map(|&i| &functions[i]) {
            None => {
                return Err(LoadError {
                    loc: f.loc.clone(),
                    message: format!(
                        "structured_delegate `{delegate}` of `{}` does not name an operator in this file",
                        f.func.full_name()
                    ),
                })
            }
            Some(target) if !target.structured => {
                return Err(LoadError {
                    loc: f.loc.clone(),
                    message: format!(
                        "structured_delegate `{delegate}` of `{}` names an operator without `structured: True` (at {})",
                        f.func.full_name(),
                        target.loc
                    ),
                })
            }
            Some(_) => {}
        }
    }
    Ok(functions)
}

pub(crate) fn is_blank_or_comment(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#') || t == "---"
}

pub(crate) fn line_of<T>(s: &Spanned<T>) -> usize {
    usize::try_from(s.referenced.line()).unwrap_or(usize::MAX)
}

// ---------------------------------------------------------------------------------------------
// A span-carrying YAML tree
// ---------------------------------------------------------------------------------------------

/// A YAML node. Numbers become [`Node::Scalar`] text: no field of the format is numeric.
#[derive(Debug)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    Scalar(String),
    Seq(Vec<Spanned<Node>>),
    /// Entries in file order, keys with their own locations.
    Map(Vec<(Spanned<String>, Spanned<Node>)>),
}

impl Node {
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Node::Null => "nothing",
            Node::Bool(_) => "a boolean",
            Node::Scalar(_) => "a string",
            Node::Seq(_) => "a list",
            Node::Map(_) => "a mapping",
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Scalar(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        Ok(Node::Scalar(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        Node::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Node>>()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            let value = map.next_value::<Spanned<Node>>()?;
            entries.push((key, value));
        }
        Ok(Node::Map(entries))
    }
}

// ---------------------------------------------------------------------------------------------
// Interpreting entries
// ---------------------------------------------------------------------------------------------

pub(crate) struct Loader<'a> {
    pub(crate) file: &'a str,
}

impl Loader<'_> {
    pub(crate) fn loc(&self, line: usize) -> Location {
        Location { file: self.file.to_string(), line }
    }

    pub(crate) fn error(&self, line: usize, message: impl Into<String>) -> LoadError {
        LoadError { loc: self.loc(line), message: message.into() }
    }

    pub(crate) fn yaml_error(&self, e: &serde_saphyr::Error) -> LoadError {
        let line = e.location().map_or(1, |l| usize::try_from(l.line()).unwrap_or(usize::MAX));
        // The rendered error may carry a source snippet after its first line; the location
        // already says where, so keep the message itself.
        let rendered = e.to_string();
        let first = rendered.lines().next().unwrap_or_default().trim();
        let message = first.strip_prefix("error:").unwrap_or(first).trim();
        self.error(line, format!("invalid YAML: {message}"))
    }

    fn string(&self, value: &Spanned<Node>, key: &str) -> Result<String, LoadError> {
        match &value.value {
            Node::Scalar(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
            Node::Scalar(_) => Err(self.error(line_of(value), format!("`{key}` is empty"))),
            other => Err(self.error(line_of(value), format!("`{key}` must be a string, found {}", other.kind()))),
        }
    }

    fn boolean(&self, value: &Spanned<Node>, key: &str) -> Result<bool, LoadError> {
        match &value.value {
            Node::Bool(b) => Ok(*b),
            Node::Scalar(s) if s == "True" || s == "False" => Ok(s == "True"),
            other => {
                Err(self.error(line_of(value), format!("`{key}` must be True or False, found {}", describe(other))))
            }
        }
    }

    /// A comma-separated string (`function, method`) or a YAML list (`[core, pointwise]`),
    /// each item with its line.
    fn names(&self, value: &Spanned<Node>, key: &str) -> Result<Vec<(String, usize)>, LoadError> {
        let mut out = Vec::new();
        let mut push = |s: &str, line: usize| -> Result<(), LoadError> {
            for item in s.split(',') {
                let item = item.trim();
                if item.is_empty() {
                    return Err(self.error(line, format!("empty name in `{key}`")));
                }
                out.push((item.to_string(), line));
            }
            Ok(())
        };
        match &value.value {
            Node::Scalar(s) => push(s, line_of(value))?,
            Node::Seq(items) => {
                for item in items {
                    let s = self.string(item, key)?;
                    push(&s, line_of(item))?;
                }
            }
            other => {
                return Err(self.error(
                    line_of(value),
                    format!("`{key}` must be a name or a list of names, found {}", other.kind()),
                ))
            }
        }
        Ok(out)
    }

    fn dispatch(&self, value: &Spanned<Node>) -> Result<Vec<(String, String)>, LoadError> {
        let Node::Map(pairs) = &value.value else {
            return Err(self.error(
                line_of(value),
                format!("`dispatch` must be a mapping `Key: kernel`, found {}", value.value.kind()),
            ));
        };
        let mut out: Vec<(String, String)> = Vec::new();
        for (keys, kernel) in pairs {
            let line = line_of(keys);
            let kernel = self.string(kernel, "dispatch")?;
            for key in keys.value.split(',') {
                let key = key.trim();
                if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(self.error(line, format!("bad dispatch key `{key}` in `{}`", keys.value)));
                }
                if out.iter().any(|(k, _)| k == key) {
                    return Err(self.error(line, format!("dispatch key `{key}` appears twice")));
                }
                out.push((key.to_string(), kernel.clone()));
            }
        }
        Ok(out)
    }

    /// Interprets one `- func:` entry and runs the checks that need only that entry.
    fn entry(&self, entry: Spanned<Node>) -> Result<NativeFunction, LoadError> {
        let entry_line = line_of(&entry);
        let Node::Map(pairs) = entry.value else {
            return Err(self.error(
                entry_line,
                format!("expected an entry starting with `- func:`, found {}", entry.value.kind()),
            ));
        };
        let Some((func_key, func_value)) = pairs.iter().find(|(k, _)| k.value == "func") else {
            let line = pairs.first().map_or(entry_line, |(k, _)| line_of(k));
            return Err(self.error(line, "entry has no `func:` key"));
        };
        let loc = self.loc(line_of(func_key));
        let text = self.string(func_value, "func")?;
        let func = parse_schema(&text)
            .map_err(|e| LoadError { loc: loc.clone(), message: format!("invalid schema `{text}`: {e}") })?;
        let schema_str = match text.split_once("::") {
            Some((ns, rest)) if !ns.contains('(') => {
                if ns.trim() != "aten" {
                    return Err(LoadError {
                        loc,
                        message: format!("namespace `{}` in `{text}`: only `aten` is supported", ns.trim()),
                    });
                }
                rest.trim_start().to_string()
            }
            _ => text.clone(),
        };
        let name = func.full_name();

        let mut f = NativeFunction {
            func,
            schema_str,
            loc,
            variants_function: true,
            variants_method: false,
            dispatch: Vec::new(),
            structured: false,
            structured_delegate: None,
            tags: Vec::new(),
            device_check: None,
            manual_kernel_registration: false,
        };
        for (key, value) in &pairs {
            match key.value.as_str() {
                "func" => {}
                "variants" => {
                    f.variants_function = false;
                    for (variant, line) in self.names(value, "variants")? {
                        match variant.as_str() {
                            "function" => f.variants_function = true,
                            "method" => f.variants_method = true,
                            other => {
                                return Err(self.error(
                                    line,
                                    format!("unknown variant `{other}` for `{name}` (expected `function` or `method`)"),
                                ))
                            }
                        }
                    }
                }
                "dispatch" => f.dispatch = self.dispatch(value)?,
                "structured" => f.structured = self.boolean(value, "structured")?,
                "structured_delegate" => f.structured_delegate = Some(self.string(value, "structured_delegate")?),
                "tags" => f.tags = self.names(value, "tags")?.into_iter().map(|(t, _)| t).collect(),
                "device_check" => {
                    let check = self.string(value, "device_check")?;
                    if !DEVICE_CHECKS.contains(&check.as_str()) {
                        return Err(self.error(
                            line_of(value),
                            format!("unknown device_check `{check}` (expected `NoCheck` or `ExactSame`)"),
                        ));
                    }
                    f.device_check = Some(check);
                }
                "manual_kernel_registration" => {
                    f.manual_kernel_registration = self.boolean(value, "manual_kernel_registration")?
                }
                k if IGNORED_KEYS.contains(&k) => {}
                k => return Err(self.error(line_of(key), format!("unknown key `{k}` in the entry for `{name}`"))),
            }
        }

        let fail = |message: String| Err(LoadError { loc: f.loc.clone(), message });
        if f.structured && f.structured_delegate.is_some() {
            return fail(format!("`{name}` has both `structured: True` and `structured_delegate`"));
        }
        if f.structured && !f.func.is_out_fn() {
            return fail(format!(
                "`structured: True` is only allowed on out= variants, and `{name}` has no keyword-only `Tensor(a!)` argument"
            ));
        }
        if f.variants_method && !f.func.argument("self").is_some_and(|a| a.ty == Type::Tensor) {
            return fail(format!("`{name}` has `variants: method` but no `Tensor self` argument"));
        }
        if f.tags.iter().any(|t| t == "inplace_view") && !f.func.name.ends_with('_') {
            return fail(format!("`{name}` is tagged `inplace_view` but its name does not end in `_`"));
        }
        Ok(f)
    }
}

fn describe(node: &Node) -> String {
    match node {
        Node::Scalar(s) => format!("`{s}`"),
        other => other.kind().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schema::DefaultValue;

    const FILE: &str = "native_functions.yaml";

    /// A realistic excerpt with comments, blank lines and every key this loader reads.
    const GOOD: &str = "\
# See README.md in this directory for more guidance

# Comment between entries, then a blank line.

- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  device_check: NoCheck   # TensorIterator
  structured_delegate: add.out
  variants: function, method
  dispatch:
    SparseCPU, SparseCUDA: add_sparse
    MkldnnCPU: mkldnn_add
  tags: [core, pointwise]

- func: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
  device_check: NoCheck   # TensorIterator
  variants: method
  structured_delegate: add.out
  tags: pointwise

# out= variant
- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  device_check: NoCheck   # TensorIterator
  structured: True
  structured_inherits: TensorIteratorBase
  ufunc_inner_loop:
    Generic: add (AllAndComplex, BFloat16, Half)
    ScalarOnly: add (Bool)
  dispatch:
    SparseCPU: add_out_sparse_cpu
    # no CPU/CUDA line: those come from ufunc_inner_loop
    MkldnnCPU: mkldnn_add_out

- func: aten::relu_(Tensor(a!) self) -> Tensor(a!)
  variants: function, method
  manual_kernel_registration: True
  python_module: nn
  autogen: relu.out

- func: split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]
  variants: function, method
  device_guard: False
  dispatch:
    CompositeExplicitAutograd: split

- func: _nnpack_available() -> bool
";

    fn load(text: &str) -> Vec<NativeFunction> {
        parse_native_functions(FILE, text).unwrap_or_else(|e| panic!("load failed: {e}"))
    }

    fn load_err(text: &str) -> LoadError {
        match parse_native_functions(FILE, text) {
            Ok(v) => panic!("expected an error, loaded {} entries", v.len()),
            Err(e) => e,
        }
    }

    fn assert_err(text: &str, line: usize, needle: &str) {
        let e = load_err(text);
        assert_eq!(e.loc, Location { file: FILE.into(), line }, "{e}");
        let shown = e.to_string();
        assert!(shown.starts_with(&format!("{FILE}:{line}: ")), "{shown}");
        assert!(e.message.contains(needle), "`{shown}` should contain `{needle}`");
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn loads_good_file() {
        let fns = load(GOOD);
        let names: Vec<_> = fns.iter().map(|f| f.func.full_name()).collect();
        assert_eq!(names, ["add.Tensor", "add_.Tensor", "add.out", "relu_", "split.Tensor", "_nnpack_available"]);
        let lines: Vec<_> = fns.iter().map(|f| f.loc.line).collect();
        assert_eq!(lines, [5, 14, 21, 33, 39, 45]);
        assert!(fns.iter().all(|f| f.loc.file == FILE));

        let add = &fns[0];
        assert_eq!(add.schema_str, "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
        assert_eq!(add.func.arguments[2].default, Some(DefaultValue::Int(1)));
        assert!(add.variants_function && add.variants_method);
        assert_eq!(
            add.dispatch,
            pairs(&[("SparseCPU", "add_sparse"), ("SparseCUDA", "add_sparse"), ("MkldnnCPU", "mkldnn_add")])
        );
        assert!(!add.structured);
        assert_eq!(add.structured_delegate.as_deref(), Some("add.out"));
        assert_eq!(add.tags, ["core", "pointwise"]);
        assert_eq!(add.device_check.as_deref(), Some("NoCheck"));
        assert!(!add.manual_kernel_registration);

        let add_ = &fns[1];
        assert!(!add_.variants_function && add_.variants_method);
        assert!(add_.dispatch.is_empty());
        assert_eq!(add_.tags, ["pointwise"]);
        assert!(add_.func.is_inplace());

        let out = &fns[2];
        assert!(out.structured && out.structured_delegate.is_none() && out.func.is_out_fn());
        assert_eq!(out.dispatch, pairs(&[("SparseCPU", "add_out_sparse_cpu"), ("MkldnnCPU", "mkldnn_add_out")]));
        assert!(out.variants_function && !out.variants_method);

        let relu = &fns[3];
        assert_eq!(relu.schema_str, "relu_(Tensor(a!) self) -> Tensor(a!)");
        assert!(relu.manual_kernel_registration);
        assert!(relu.tags.is_empty() && relu.device_check.is_none());

        assert_eq!(fns[4].dispatch, pairs(&[("CompositeExplicitAutograd", "split")]));
        let nnpack = &fns[5];
        assert!(nnpack.func.arguments.is_empty());
        assert!(nnpack.variants_function && !nnpack.variants_method && nnpack.dispatch.is_empty());
    }

    #[test]
    fn empty_and_comment_only_files() {
        assert!(load("").is_empty());
        assert!(load("# nothing here\n\n   # still nothing\n").is_empty());
    }

    #[test]
    fn location_and_error_display() {
        let loc = Location { file: "a/b.yaml".into(), line: 7 };
        assert_eq!(loc.to_string(), "a/b.yaml:7");
        let e = LoadError { loc, message: "boom".into() };
        assert_eq!(e.to_string(), "a/b.yaml:7: boom");
    }

    #[test]
    fn schema_error_reported_at_entry_line_with_column() {
        let text = "\
- func: ok(Tensor self) -> Tensor

# a comment

- func: bad(Tensr self) -> Tensor
  variants: function
";
        let e = load_err(text);
        assert_eq!(
            e.to_string(),
            "native_functions.yaml:5: invalid schema `bad(Tensr self) -> Tensor`: column 5: unknown type `Tensr`"
        );
    }

    #[test]
    fn schema_error_after_comments_inside_entries() {
        // Comment lines inside and between entries, and a multi-line dispatch block, must not
        // shift the reported line.
        let text = "\
- func: a(Tensor self) -> Tensor
  # comment inside
  dispatch:
    # comment in dispatch
    CPU: a_cpu

    CUDA: a_cuda
# top-level comment
- func: b(Tensor self) -> Tensor
  dispatch:
    CPU: b_cpu
- func: c(Tensor self, int k=) -> Tensor
";
        assert_err(text, 12, "column 22: missing default value");
    }

    #[test]
    fn unknown_key_is_an_error_naming_it() {
        let text = "\
- func: a(Tensor self) -> Tensor
  variants: function
  dispatchh:
    CPU: a
";
        assert_err(text, 3, "unknown key `dispatchh`");
    }

    #[test]
    fn ignored_keys_are_accepted() {
        let mut text = String::from("- func: a(Tensor self) -> Tensor\n");
        for key in IGNORED_KEYS {
            text.push_str(&format!("  {key}: whatever\n"));
        }
        assert_eq!(load(&text).len(), 1);
    }

    #[test]
    fn duplicate_operator_reported_at_second() {
        let text = "\
- func: add.Tensor(Tensor self, Tensor other) -> Tensor

- func: add.Scalar(Tensor self, Scalar other) -> Tensor

- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
";
        assert_err(text, 5, "duplicate operator `add.Tensor` (first defined at native_functions.yaml:1)");
        // Same base name, different overloads: fine. No overload vs an overload: fine.
        load("- func: f(Tensor self) -> Tensor\n- func: f.x(Tensor self) -> Tensor\n");
    }

    #[test]
    fn structured_delegate_must_name_a_structured_op() {
        let missing = "\
- func: mm(Tensor self, Tensor mat2) -> Tensor
  structured_delegate: mm.out
";
        assert_err(missing, 1, "structured_delegate `mm.out` of `mm` does not name an operator in this file");

        let not_structured = "\
- func: mm(Tensor self, Tensor mat2) -> Tensor
  structured_delegate: mm.out
- func: mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: mm_out_cpu
";
        assert_err(not_structured, 1, "names an operator without `structured: True` (at native_functions.yaml:3)");

        // The delegate may come after its users, as in the real file.
        let good = "\
- func: mm(Tensor self, Tensor mat2) -> Tensor
  structured_delegate: mm.out
- func: mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
";
        assert_eq!(load(good).len(), 2);

        let both = "\
- func: mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_delegate: mm.out
";
        assert_err(both, 1, "both `structured: True` and `structured_delegate`");
    }

    #[test]
    fn structured_only_on_out_variants() {
        let text = "\
- func: mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
- func: mm(Tensor self, Tensor mat2) -> Tensor
  structured: True
";
        assert_err(text, 3, "`structured: True` is only allowed on out= variants");
        // `structured: False` is fine anywhere.
        load("- func: mm(Tensor self, Tensor mat2) -> Tensor\n  structured: False\n");
        assert_err("- func: f(Tensor self) -> Tensor\n  structured: yes please\n", 2, "must be True or False");
    }

    #[test]
    fn method_variant_needs_tensor_self() {
        let text = "\
- func: where(Tensor condition, Tensor self, Tensor other) -> Tensor
  variants: function, method
- func: arange(Scalar end) -> Tensor
  variants: method
";
        assert_err(text, 3, "`arange` has `variants: method` but no `Tensor self` argument");
        assert_err("- func: f(Tensor? self) -> Tensor\n  variants: method\n", 1, "no `Tensor self` argument");
    }

    #[test]
    fn unknown_variant() {
        let text = "\
- func: f(Tensor self) -> Tensor
  variants: function, methd
";
        assert_err(text, 2, "unknown variant `methd`");
        assert_err("- func: f(Tensor self) -> Tensor\n  variants: function,\n", 2, "empty name in `variants`");
    }

    #[test]
    fn other_entry_errors() {
        assert_err("- variants: function\n", 1, "entry has no `func:` key");
        assert_err("func: f() -> ()\n", 1, "expected a list of `- func:` entries");
        assert_err("- just a string\n", 1, "expected an entry starting with `- func:`");
        assert_err("- func: foo::f(Tensor self) -> Tensor\n", 1, "namespace `foo`");
        assert_err("- func: f(Tensor self) -> Tensor\n  device_check: Sometimes\n", 2, "unknown device_check");
        assert_err("- func: f(Tensor self) -> Tensor\n  dispatch: f_kernel\n", 2, "`dispatch` must be a mapping");
        assert_err(
            "- func: f(Tensor self) -> Tensor\n  dispatch:\n    CPU: a\n    CUDA, CPU: b\n",
            4,
            "dispatch key `CPU` appears twice",
        );
        assert_err("- func: f(Tensor self) -> Tensor\n  tags: inplace_view\n", 1, "inplace_view");
        load("- func: f_(Tensor(a!) self) -> Tensor(a!)\n  tags: inplace_view\n");
    }

    #[test]
    fn invalid_yaml_has_a_line() {
        let text = "\
- func: f(Tensor self) -> Tensor
  dispatch:
    CPU: [unclosed
";
        let e = load_err(text);
        assert_eq!(e.loc.line, 3, "{e}");
        assert!(e.message.starts_with("invalid YAML: line 3 column 10: unclosed bracket"), "{e}");

        let dup = "- func: f(Tensor self) -> Tensor\n  variants: method\n  variants: function\n";
        let e = load_err(dup);
        assert_eq!(e.loc.line, 3, "{e}");
        assert!(e.message.contains("duplicate mapping key: variants"), "{e}");
    }
}

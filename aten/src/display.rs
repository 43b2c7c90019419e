//! `Display` for [`Tensor`]: exactly PyTorch's `str(t)` / `print(t)` text under the default print
//! options (precision 4, threshold 1000, edgeitems 3, linewidth 80), after `torch/_tensor_str.py`.

use std::fmt;

use c10::{Element, Result, ScalarType};

use crate::Tensor;

/// Digits after the point (`PRINT_OPTS.precision`).
const PRECISION: usize = 4;
/// Tensors with more elements are summarised with `...` (`PRINT_OPTS.threshold`).
const THRESHOLD: i64 = 1000;
/// Items kept at each end of a summarised dimension (`PRINT_OPTS.edgeitems`).
const EDGEITEMS: i64 = 3;
/// Characters per line before a 1-d row wraps (`PRINT_OPTS.linewidth`).
const LINEWIDTH: usize = 80;

/// One element, widened: floating dtypes print through f64 (as Python's `item()` does after
/// `_tensor_str` turns half/bfloat16 into float), integers through i64.
#[derive(Copy, Clone, Debug)]
enum Value {
    Float(f64),
    Int(i64),
    Bool(bool),
    /// A complex element's real and imaginary parts.
    Complex(f64, f64),
}

impl Value {
    fn of<T: Element>(v: T) -> Value {
        if T::DTYPE.is_floating_point() {
            Value::Float(v.to_f64())
        } else {
            Value::Int(v.to_i64())
        }
    }
}

/// Python's spelling of the non-finite floats (`nan`, `inf`, `-inf`) in every format mode.
fn non_finite(x: f64) -> Option<&'static str> {
    if x.is_nan() {
        Some("nan")
    } else if x.is_infinite() {
        Some(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        None
    }
}

/// Python's `'{:.4e}'.format(x)`: the exponent has a sign and at least two digits.
#[doc(hidden)]
pub fn sci(x: f64) -> String {
    if let Some(s) = non_finite(x) {
        return s.to_string();
    }
    let s = format!("{x:.PRECISION$e}");
    let (mant, exp) = s.split_once('e').expect("`{:e}` always has an exponent");
    let exp: i32 = exp.parse().expect("exponent is an integer");
    format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

/// Python's `'{:.4f}'.format(x)` (Rust's fixed formatting rounds the exact binary value
/// half-to-even, as Python does).
fn fixed(x: f64) -> String {
    match non_finite(x) {
        Some(s) => s.to_string(),
        None => format!("{x:.PRECISION$}"),
    }
}

/// Python's `f'{x:.0f}'`.
fn integral(x: f64) -> String {
    match non_finite(x) {
        Some(s) => s.to_string(),
        None => format!("{x:.0}"),
    }
}

/// PyTorch's `_Formatter`: one width and one notation for all printed elements.
struct Formatter {
    floating: bool,
    int_mode: bool,
    sci_mode: bool,
    max_width: usize,
}

impl Formatter {
    /// Chooses the notation from the elements that will be printed (the summarised data when
    /// summarising). For floats only the finite non-zero values count: integral values print as
    /// `1.`; a max/min ratio above 1000, a max above 1e8 or (non-integral) a min below 1e-4 switch
    /// to scientific notation.
    fn new(values: &[Value], floating: bool) -> Formatter {
        let mut f = Formatter { floating, int_mode: true, sci_mode: false, max_width: 1 };
        if !floating {
            for &v in values {
                f.max_width = f.max_width.max(f.plain(v).len());
            }
            return f;
        }
        let nz: Vec<f64> = values
            .iter()
            .filter_map(|v| match *v {
                Value::Float(x) if x.is_finite() && x != 0.0 => Some(x),
                _ => None,
            })
            .collect();
        if nz.is_empty() {
            return f;
        }
        let min = nz.iter().fold(f64::INFINITY, |m, x| m.min(x.abs()));
        let max = nz.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        f.int_mode = nz.iter().all(|&x| x == x.ceil());
        let width = |g: &dyn Fn(f64) -> String, extra: usize| nz.iter().map(|&x| g(x).len() + extra).max().unwrap_or(1);
        if f.int_mode {
            if max / min > 1000.0 || max > 1e8 {
                f.sci_mode = true;
                f.max_width = f.max_width.max(width(&sci, 0));
            } else {
                f.max_width = f.max_width.max(width(&integral, 1));
            }
        } else if max / min > 1000.0 || max > 1e8 || min < 1e-4 {
            f.sci_mode = true;
            f.max_width = f.max_width.max(width(&sci, 0));
        } else {
            f.max_width = f.max_width.max(width(&fixed, 0));
        }
        f
    }

    /// The unpadded text of one element.
    fn plain(&self, v: Value) -> String {
        match v {
            Value::Float(x) if self.floating => {
                if self.sci_mode {
                    sci(x)
                } else if self.int_mode {
                    let mut s = integral(x);
                    if x.is_finite() {
                        s.push('.');
                    }
                    s
                } else {
                    fixed(x)
                }
            }
            Value::Float(x) => format!("{x}"),
            Value::Int(i) => i.to_string(),
            Value::Bool(b) => if b { "True" } else { "False" }.to_string(),
            // Complex elements are written by `Writer::element` with two formatters.
            Value::Complex(re, im) => format!("{re}+{im}j"),
        }
    }

    /// One element right-aligned to the common width.
    fn format(&self, v: Value) -> String {
        let s = self.plain(v);
        format!("{s:>width$}", width = self.max_width)
    }
}

/// Whether a dimension of this size is cut to its edge items.
fn elided(size: i64, summarize: bool) -> bool {
    summarize && size > 2 * EDGEITEMS
}

/// The indices printed along a dimension (all, or the edge items when summarising).
fn kept(size: i64, summarize: bool) -> impl Iterator<Item = i64> {
    let (head, tail_start) = if elided(size, summarize) { (EDGEITEMS, size - EDGEITEMS) } else { (size, size) };
    (0..head).chain(tail_start..size)
}

/// Element offsets of the printed elements, in row-major logical order.
fn printed_offsets(sizes: &[i64], strides: &[i64], summarize: bool, base: isize, out: &mut Vec<isize>) {
    match sizes.split_first() {
        None => out.push(base),
        Some((&n, rest)) => {
            for i in kept(n, summarize) {
                printed_offsets(rest, &strides[1..], summarize, base + (i * strides[0]) as isize, out);
            }
        }
    }
}

/// Reads the printed elements of a CPU tensor.
fn printed_values(t: &Tensor, summarize: bool) -> Result<Vec<Value>> {
    let mut offsets = Vec::new();
    printed_offsets(t.sizes(), t.strides(), summarize, 0, &mut offsets);
    if t.dtype() == ScalarType::Bool {
        // Read bools as bytes: a byte other than 0/1 (uninitialised memory) must not become an
        // invalid `bool`.
        let base = t.data_ptr() as *const u8;
        return Ok(offsets
            .iter()
            // SAFETY: each offset is sum(i_d * stride_d) with 0 <= i_d < size_d, the position of
            // an element of `t`, which its storage covers (TensorImpl invariant); `base` is
            // element 0 of a one-byte dtype on the CPU; we only read.
            .map(|&off| Value::Bool(unsafe { *base.offset(off) } != 0))
            .collect());
    }
    if t.dtype().is_complex() {
        return c10::dispatch_complex_types!(t.dtype(), R => {
            let base = t.data_ptr() as *const c10::Complex<R>;
            Ok(offsets
                .iter()
                .map(|&off| {
                    // SAFETY: as above, every offset addresses an element of `t` inside its CPU
                    // storage, and `base` points at element 0 of complex type; we only read.
                    let z = unsafe { *base.offset(off) };
                    Value::Complex(z.re.to_f64(), z.im.to_f64())
                })
                .collect())
        });
    }
    c10::dispatch_all_types!(t.dtype(), T => {
        let base = t.data_ptr() as *const T;
        Ok(offsets
            .iter()
            // SAFETY: as above, every offset addresses an element of `t` inside its CPU storage,
            // and `base` points at element 0 with the tensor's element type T; we only read.
            .map(|&off| Value::of(unsafe { *base.offset(off) }))
            .collect())
    })
}

/// Builds the nested-bracket text (`_tensor_str_with_formatter`), consuming the printed values
/// in order.
struct Writer<'a> {
    sizes: &'a [i64],
    summarize: bool,
    fmt: Formatter,
    /// The imaginary parts' formatter of a complex tensor (`fmt` formats the real parts).
    imag: Option<Formatter>,
    values: std::slice::Iter<'a, Value>,
}

impl Writer<'_> {
    fn next(&mut self) -> Value {
        *self.values.next().expect("one printed value per kept index")
    }

    /// One element; a complex one as `re+imj` with its parts in their own formats
    /// (`_val_formatter`).
    fn element(&self, v: Value) -> String {
        match (v, &self.imag) {
            (Value::Complex(re, im), Some(fi)) => {
                let real = self.fmt.format(Value::Float(re));
                let imag = format!("{}j", fi.format(Value::Float(im)));
                let imag = imag.trim_start();
                if imag.starts_with(['+', '-']) {
                    format!("{real}{imag}")
                } else {
                    format!("{real}+{imag}")
                }
            }
            _ => self.fmt.format(v),
        }
    }

    fn tensor(&mut self, level: usize, indent: usize) -> String {
        let ndim = self.sizes.len() - level;
        if ndim == 0 {
            let v = self.next();
            return self.element(v);
        }
        let size = self.sizes[level];
        if ndim == 1 {
            return self.vector(size, indent);
        }
        let cut = elided(size, self.summarize);
        let mut slices = Vec::new();
        for (k, _) in kept(size, self.summarize).enumerate() {
            if cut && k as i64 == EDGEITEMS {
                slices.push("...".to_string());
            }
            slices.push(self.tensor(level + 1, indent + 1));
        }
        let sep = format!(",{}{}", "\n".repeat(ndim - 1), " ".repeat(indent + 1));
        format!("[{}]", slices.join(&sep))
    }

    /// A 1-d row, wrapped so each line holds as many elements as fit in the line width.
    fn vector(&mut self, size: i64, indent: usize) -> String {
        let element_length = self.fmt.max_width + 2 + self.imag.as_ref().map_or(0, |f| f.max_width + 1);
        let per_line = ((LINEWIDTH as f64 - indent as f64) / element_length as f64).floor().max(1.0) as usize;
        let cut = elided(size, self.summarize);
        let mut data = Vec::new();
        for (k, _) in kept(size, self.summarize).enumerate() {
            if cut && k as i64 == EDGEITEMS {
                data.push(" ...".to_string());
            }
            let v = self.next();
            data.push(self.element(v));
        }
        let lines: Vec<String> = data.chunks(per_line).map(|c| c.join(", ")).collect();
        format!("[{}]", lines.join(&format!(",\n{}", " ".repeat(indent + 1))))
    }
}

/// The element text of a non-empty CPU tensor (`_tensor_str`).
fn tensor_str(t: &Tensor, indent: usize) -> String {
    let summarize = t.numel() > THRESHOLD;
    let values = match printed_values(t, summarize) {
        Ok(v) => v,
        // Only a dtype without element reads gets here; say which instead of printing nothing.
        Err(e) => return format!("<{e}>"),
    };
    let (fmt, imag) = if t.dtype().is_complex() {
        let part = |f: fn(&Value) -> f64| values.iter().map(|v| Value::Float(f(v))).collect::<Vec<_>>();
        let re = part(|v| if let Value::Complex(re, _) = *v { re } else { 0.0 });
        let im = part(|v| if let Value::Complex(_, im) = *v { im } else { 0.0 });
        (Formatter::new(&re, true), Some(Formatter::new(&im, true)))
    } else {
        (Formatter::new(&values, t.dtype().is_floating_point()), None)
    };
    let mut w = Writer { sizes: t.sizes(), summarize, fmt, imag, values: values.iter() };
    w.tensor(0, indent)
}

/// Python's `str(tuple(shape))`: `(2, 3)`, `(5,)`, `()`.
#[doc(hidden)]
pub fn py_tuple(sizes: &[i64]) -> String {
    match sizes {
        [one] => format!("({one},)"),
        _ => format!("({})", sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

/// Appends `, suffix` items, moving one to a new line when it would pass the line width
/// (`_add_suffixes`).
#[doc(hidden)]
pub fn add_suffixes(out: String, suffixes: &[String], indent: usize) -> String {
    add_suffixes_forced(out, suffixes, indent, false)
}

/// Whether PyTorch leaves the dtype out of a tensor's text (`has_default_dtype`).
fn has_default_dtype(dtype: ScalarType) -> bool {
    matches!(dtype, ScalarType::F32 | ScalarType::C64 | ScalarType::I64 | ScalarType::Bool)
}

/// A member tensor's text inside a sparse tensor's: `_tensor_str` (no dtype), with its size
/// when empty.
fn member_str(t: &Tensor, indent: usize) -> String {
    if t.numel() == 0 {
        return format!("[], size={}", py_tuple(t.sizes()));
    }
    tensor_str(t, indent)
}

/// PyTorch's `_str_intern` for a sparse COO or CSR tensor: the members by name, then `size`,
/// `nnz`, a dtype that is not a default one, and the layout (a COO tensor's first suffix on
/// a line of its own).
fn sparse_repr(t: &Tensor) -> String {
    const PREFIX: &str = "tensor(";
    let indent = PREFIX.len();
    let dtype = t.dtype();
    let Some(sp) = t.sparse_impl() else { return tensor_repr(t) };
    let parts = sp.parts();
    let mut suffixes = vec![format!("size={}", py_tuple(t.sizes())), format!("nnz={}", sp.nnz())];
    if !has_default_dtype(dtype) {
        suffixes.push(format!("dtype=torch.{}", dtype.name()));
    }
    let member = |name: &str, imp: &std::sync::Arc<c10::TensorImpl>| {
        let m = Tensor::from_arc(imp.clone());
        let m = if m.device().is_cpu() { Ok(m) } else { m.to_device(c10::Device::CPU) };
        let prefix = format!("{name}=tensor(");
        match m {
            Ok(m) => format!("{prefix}{})", member_str(&m, indent + prefix.len())),
            Err(e) => format!("{prefix}<{e}>)"),
        }
    };
    let sep = format!(",\n{}", " ".repeat(indent));
    let body = match (t.layout(), &parts.col_indices) {
        (c10::Layout::SparseCsr, Some(col)) => {
            [member("crow_indices", &parts.indices), member("col_indices", col), member("values", &parts.values)]
                .join(&sep)
        }
        _ => [member("indices", &parts.indices), member("values", &parts.values)].join(&sep),
    };
    suffixes.push(format!("layout={}", t.layout()));
    if !t.device().is_cpu() {
        suffixes.insert(0, format!("device='{}'", t.device()));
    }
    if t.imp().autograd_meta().is_some_and(|m| m.requires_grad()) {
        suffixes.push("requires_grad=True".to_string());
    }
    add_suffixes_forced(format!("{PREFIX}{body}"), &suffixes, indent, t.layout() == c10::Layout::SparseCoo)
}

/// [`add_suffixes`] whose first suffix may be forced onto a new line (`force_newline`, as for
/// a COO tensor).
fn add_suffixes_forced(mut out: String, suffixes: &[String], indent: usize, mut force_newline: bool) -> String {
    // Python computes `len(s) - s.rfind('\n') + 1`, with rfind = -1 when there is no newline.
    let last_nl = out.rfind('\n').map_or(-1, |p| p as i64);
    let mut last_line_len = (out.len() as i64 - last_nl + 1) as usize;
    for suffix in suffixes {
        if force_newline || last_line_len + suffix.len() + 2 > LINEWIDTH {
            out.push_str(",\n");
            out.push_str(&" ".repeat(indent));
            out.push_str(suffix);
            last_line_len = indent + suffix.len();
            force_newline = false;
        } else {
            out.push_str(", ");
            out.push_str(suffix);
            last_line_len += suffix.len() + 2;
        }
    }
    out.push(')');
    out
}

/// PyTorch's `_str_intern` for a plain strided tensor.
fn tensor_repr(t: &Tensor) -> String {
    const PREFIX: &str = "tensor(";
    let indent = PREFIX.len();
    let dtype = t.dtype();
    let dtype_suffix = format!("dtype=torch.{}", dtype.name());
    let mut suffixes = Vec::new();
    let device = t.device();
    if !device.is_cpu() {
        suffixes.push(format!("device='{device}'"));
    }
    let body = if !device.is_cpu() {
        // Data off the CPU is not readable from here; print what PyTorch prints for meta
        // tensors.
        suffixes.push(format!("size={}", py_tuple(t.sizes())));
        if dtype != ScalarType::default_float() {
            suffixes.push(dtype_suffix);
        }
        "...".to_string()
    } else if t.numel() == 0 {
        if t.dim() != 1 {
            suffixes.push(format!("size={}", py_tuple(t.sizes())));
        }
        if dtype != ScalarType::default_float() {
            suffixes.push(dtype_suffix);
        }
        "[]".to_string()
    } else {
        if !has_default_dtype(dtype) {
            suffixes.push(dtype_suffix);
        }
        tensor_str(t, indent)
    };
    if t.imp().autograd_meta().is_some_and(|m| m.requires_grad()) {
        suffixes.push("requires_grad=True".to_string());
    }
    add_suffixes(format!("{PREFIX}{body}"), &suffixes, indent)
}

impl fmt::Display for Tensor {
    /// PyTorch's `str(t)`:
    ///
    /// ```
    /// let t = aten::Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.5], &[2, 2]).unwrap();
    /// assert_eq!(t.to_string(), "tensor([[1.0000, 2.0000],\n        [3.0000, 4.5000]])");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.sparse_impl().is_some() {
            return f.write_str(&sparse_repr(self));
        }
        f.write_str(&tensor_repr(self))
    }
}

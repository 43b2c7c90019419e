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
fn sci(x: f64) -> String {
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
fn py_tuple(sizes: &[i64]) -> String {
    match sizes {
        [one] => format!("({one},)"),
        _ => format!("({})", sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

/// Appends `, suffix` items, moving one to a new line when it would pass the line width
/// (`_add_suffixes`).
fn add_suffixes(mut out: String, suffixes: &[String], indent: usize) -> String {
    // Python computes `len(s) - s.rfind('\n') + 1`, with rfind = -1 when there is no newline.
    let last_nl = out.rfind('\n').map_or(-1, |p| p as i64);
    let mut last_line_len = (out.len() as i64 - last_nl + 1) as usize;
    for suffix in suffixes {
        if last_line_len + suffix.len() + 2 > LINEWIDTH {
            out.push_str(",\n");
            out.push_str(&" ".repeat(indent));
            out.push_str(suffix);
            last_line_len = indent + suffix.len();
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
        if !matches!(dtype, ScalarType::F32 | ScalarType::C64 | ScalarType::I64 | ScalarType::Bool) {
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
        f.write_str(&tensor_repr(self))
    }
}

// Expected values are PyTorch's float32 outputs printed as doubles (exactly the f32 values).
#[allow(clippy::excessive_precision)]
#[cfg(test)]
mod tests {
    use super::*;
    use c10::{bf16, f16};
    use smallvec::SmallVec;

    fn t<T: Element>(v: Vec<T>, shape: &[i64]) -> Tensor {
        Tensor::from_vec(v, shape).unwrap()
    }

    fn s(t: &Tensor) -> String {
        t.to_string()
    }

    // Every expected string below is PyTorch 2.15's `str()` of the same tensor.

    #[test]
    fn basic_dtypes() {
        assert_eq!(s(&t(vec![1f32, 2., 3., 4.], &[2, 2])), "tensor([[1., 2.],\n        [3., 4.]])");
        assert_eq!(s(&t(vec![1i64, 2, 3], &[3])), "tensor([1, 2, 3])");
        assert_eq!(s(&t(vec![true, false], &[2])), "tensor([ True, False])");
        assert_eq!(s(&t(vec![1f64, 2.], &[2])), "tensor([1., 2.], dtype=torch.float64)");
        assert_eq!(s(&t(vec![1i32, 2], &[2])), "tensor([1, 2], dtype=torch.int32)");
        assert_eq!(s(&t(vec![1u8, 200], &[2])), "tensor([  1, 200], dtype=torch.uint8)");
        assert_eq!(s(&t(vec![-10i64, 5, 300], &[3])), "tensor([-10,   5, 300])");
        let h = t(vec![f16::from_f32(0.1), f16::from_f32(1.5)], &[2]);
        assert_eq!(s(&h), "tensor([0.1000, 1.5000], dtype=torch.float16)");
        let b = t(vec![bf16::from_f32(1.0), bf16::from_f32(2.5)], &[2]);
        assert_eq!(s(&b), "tensor([1.0000, 2.5000], dtype=torch.bfloat16)");
    }

    #[test]
    fn zero_dim_and_empty() {
        assert_eq!(s(&Tensor::scalar_tensor(3.0f32)), "tensor(3.)");
        assert_eq!(s(&Tensor::scalar_tensor(2.5f32)), "tensor(2.5000)");
        assert_eq!(s(&Tensor::scalar_tensor(true)), "tensor(True)");
        assert_eq!(s(&Tensor::scalar_tensor(7i32)), "tensor(7, dtype=torch.int32)");
        assert_eq!(s(&t(Vec::<f32>::new(), &[0])), "tensor([])");
        assert_eq!(s(&t(Vec::<f32>::new(), &[0, 3])), "tensor([], size=(0, 3))");
        // Empty tensors name every dtype but float32, int64 included.
        assert_eq!(s(&t(Vec::<i64>::new(), &[0])), "tensor([], dtype=torch.int64)");
        assert_eq!(s(&t(Vec::<f64>::new(), &[2, 0])), "tensor([], size=(2, 0), dtype=torch.float64)");
    }

    #[test]
    fn fixed_and_scientific_modes() {
        assert_eq!(s(&t(vec![-1.5f32, 0.25, 100.125], &[3])), "tensor([ -1.5000,   0.2500, 100.1250])");
        assert_eq!(s(&t(vec![1e-5f32, 1.0, 3.0], &[3])), "tensor([1.0000e-05, 1.0000e+00, 3.0000e+00])");
        assert_eq!(s(&t(vec![1e9f32, 2e9], &[2])), "tensor([1.0000e+09, 2.0000e+09])");
        assert_eq!(s(&t(vec![1f32, 10000.], &[2])), "tensor([1.0000e+00, 1.0000e+04])");
        assert_eq!(s(&t(vec![-1e-5f32, 12345.678], &[2])), "tensor([-1.0000e-05,  1.2346e+04])");
        assert_eq!(s(&t(vec![123456789f32], &[1])), "tensor([1.2346e+08])");
        assert_eq!(s(&t(vec![0.4963f32, 0.7682, 0.0885], &[3])), "tensor([0.4963, 0.7682, 0.0885])");
        assert_eq!(s(&t(vec![-0.0f32, 1.0], &[2])), "tensor([-0., 1.])");
    }

    #[test]
    fn nan_and_inf() {
        let v = vec![1.5f32, f32::NAN, f32::INFINITY, f32::NEG_INFINITY];
        assert_eq!(s(&t(v, &[4])), "tensor([1.5000,    nan,    inf,   -inf])");
        assert_eq!(s(&t(vec![0f32, f32::NAN, 2.], &[3])), "tensor([0., nan, 2.])");
        assert_eq!(s(&t(vec![0f32, f32::NAN], &[2])), "tensor([0., nan])");
    }

    #[test]
    fn line_wrapping() {
        let v: Vec<f32> = (0..30).map(|i| i as f32 / 7.0).collect();
        assert_eq!(s(&t(v, &[30])), "tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n        1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n        2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n        3.8571, 4.0000, 4.1429])");
        assert_eq!(s(&t((0..40i64).collect(), &[40])), "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,\n        36, 37, 38, 39])");
        let v: Vec<f32> = (0..60).map(|i| i as f32 / 7.0).collect();
        assert_eq!(s(&t(v, &[2, 30])), "tensor([[0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n         1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n         2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n         3.8571, 4.0000, 4.1429],\n        [4.2857, 4.4286, 4.5714, 4.7143, 4.8571, 5.0000, 5.1429, 5.2857, 5.4286,\n         5.5714, 5.7143, 5.8571, 6.0000, 6.1429, 6.2857, 6.4286, 6.5714, 6.7143,\n         6.8571, 7.0000, 7.1429, 7.2857, 7.4286, 7.5714, 7.7143, 7.8571, 8.0000,\n         8.1429, 8.2857, 8.4286]])");
        // The dtype suffix goes on the last line when it fits.
        let v: Vec<i16> = (0..25).map(|i| i * 1000).collect();
        assert_eq!(s(&t(v, &[25])), "tensor([    0,  1000,  2000,  3000,  4000,  5000,  6000,  7000,  8000,  9000,\n        10000, 11000, 12000, 13000, 14000, 15000, 16000, 17000, 18000, 19000,\n        20000, 21000, 22000, 23000, 24000], dtype=torch.int16)");
    }

    #[test]
    fn multi_dim_and_strided() {
        let v: Vec<f32> = (0..24).map(|i| i as f32).collect();
        assert_eq!(s(&t(v, &[2, 3, 4])), "tensor([[[ 0.,  1.,  2.,  3.],\n         [ 4.,  5.,  6.,  7.],\n         [ 8.,  9., 10., 11.]],\n\n        [[12., 13., 14., 15.],\n         [16., 17., 18., 19.],\n         [20., 21., 22., 23.]]])");
        // torch.arange(6).reshape(2, 3).t(): logical values, not memory order.
        let base = t((0..6i64).collect(), &[2, 3]);
        let tt =
            Tensor::from_storage(base.storage().clone(), &[3, 2], SmallVec::from_slice(&[1, 3]), 0, ScalarType::I64);
        assert_eq!(s(&tt), "tensor([[0, 3],\n        [1, 4],\n        [2, 5]])");
    }

    #[test]
    fn summarised() {
        let v: Vec<f32> = (0..2000).map(|i| i as f32).collect();
        assert_eq!(
            s(&t(v, &[2000])),
            "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])"
        );
        assert_eq!(s(&t((0..10000i64).collect(), &[100, 100])), "tensor([[   0,    1,    2,  ...,   97,   98,   99],\n        [ 100,  101,  102,  ...,  197,  198,  199],\n        [ 200,  201,  202,  ...,  297,  298,  299],\n        ...,\n        [9700, 9701, 9702,  ..., 9797, 9798, 9799],\n        [9800, 9801, 9802,  ..., 9897, 9898, 9899],\n        [9900, 9901, 9902,  ..., 9997, 9998, 9999]])");
        assert_eq!(s(&t(vec![0f32; 1331], &[11, 11, 11])), "tensor([[[0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         ...,\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.]],\n\n        [[0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         ...,\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.]],\n\n        [[0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         ...,\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.]],\n\n        ...,\n\n        [[0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         ...,\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.]],\n\n        [[0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         ...,\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.]],\n\n        [[0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         ...,\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.],\n         [0., 0., 0.,  ..., 0., 0., 0.]]])");
    }

    #[test]
    fn helpers() {
        assert_eq!(py_tuple(&[5]), "(5,)");
        assert_eq!(py_tuple(&[]), "()");
        assert_eq!(py_tuple(&[2, 0]), "(2, 0)");
        assert_eq!(sci(-1.5e-300), "-1.5000e-300");
        assert_eq!(
            add_suffixes("tensor([1.]".into(), &["x".repeat(70)], 7),
            format!("tensor([1.],\n       {})", "x".repeat(70))
        );
    }
}

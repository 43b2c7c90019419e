//! Fuzzes the operator surface: every operator with a schema in `aten::dispatcher()` (the CPU
//! kernels and the autograd kernels of `aten` and `autograd`), called by schema name through
//! the boxed dispatcher with a `Stack` of `IValue`s built from the fuzz bytes, as the parity
//! runner (`xtask parity`) calls operators.
//!
//! Arguments follow the schema's types: tensors of every dtype with 0-sized dimensions,
//! non-contiguous, overlapping (stride 0) and expanded layouts made with `as_strided` /
//! `expand` on a small base, occasionally a `2^40`-sized dimension that is never allocated;
//! ints that are small, dimension-like (including out-of-range dims), sizes, or extreme;
//! floats including NaN and infinities; scalars, bools, int and float lists, dtypes, devices,
//! memory formats, strings and `None` for optionals; sometimes the schema's default.
//!
//! Invariant (see Note [Op surface invariant]): a call returns `Ok` with consistent outputs or
//! an `Err`; it never panics, aborts or touches memory out of bounds (AddressSanitizer).
//! Counts of calls, `Ok`s, `Err`s and distinct operators are printed to stderr every
//! [`REPORT_EVERY`] calls and when the process exits.

#![no_main]

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, LazyLock};

use aten::{IValue, OperatorEntry, Stack, Tensor};
use autograd::TensorAutograd;
use c10::{bf16, f16, Device, DeviceType, Layout, MemoryFormat, Scalar, ScalarType};
use libfuzzer_sys::fuzz_target;
use schema::{DefaultValue, FunctionSchema, Type};

/// Real elements allocated for one generated tensor at most (its base for strided views).
const MAX_ELEMS: usize = 4096;
/// The size given to "huge" dimensions: never allocated, only expanded to (stride 0).
const HUGE: i64 = 1 << 40;
/// Outputs with at most this many elements are read back with `to_vec`.
const MAX_READ: i64 = 1 << 16;
/// Whether operators other than views get tensors with a huge dimension (and zero elements).
/// Their outputs can be huge (reducing `[2^40, 0]` over dim 1 gives 2^40 values): the kernels
/// must return `Error::OutOfMemory`, never abort (Note [Fallible scratch buffers] in c10).
const HUGE_OUTSIDE_VIEWS: bool = true;
/// Statistics go to stderr every this many calls.
const REPORT_EVERY: u64 = 20_000;

/// Operators never called, each with the reason.
///
/// Note [Op surface deny-list]: only operators whose work is unbounded by design, or that
/// change process-wide state the other calls depend on, belong here; an operator whose work
/// grows with an int argument is called with small ints instead (see `gen_int`).
const DENY: &[(&str, &str)] = &[];

// ---- statistics --------------------------------------------------------------------------

static CALLS: AtomicU64 = AtomicU64::new(0);
static OKS: AtomicU64 = AtomicU64::new(0);
static ERRS: AtomicU64 = AtomicU64::new(0);
static BACKWARDS: AtomicU64 = AtomicU64::new(0);
static BACKWARD_OKS: AtomicU64 = AtomicU64::new(0);

/// Per operator: bit 0 set once called, bit 1 once it returned `Ok`.
static SEEN: LazyLock<Vec<AtomicU8>> = LazyLock::new(|| (0..HARNESS.ops.len()).map(|_| AtomicU8::new(0)).collect());

fn report() {
    let seen = SEEN.iter().map(|s| s.load(Ordering::Relaxed)).collect::<Vec<_>>();
    eprintln!(
        "op_surface: calls={} ok={} err={} distinct_ops_called={}/{} distinct_ops_ok={} backward_calls={} backward_ok={}",
        CALLS.load(Ordering::Relaxed),
        OKS.load(Ordering::Relaxed),
        ERRS.load(Ordering::Relaxed),
        seen.iter().filter(|&&s| s & 1 != 0).count(),
        seen.len(),
        seen.iter().filter(|&&s| s & 2 != 0).count(),
        BACKWARDS.load(Ordering::Relaxed),
        BACKWARD_OKS.load(Ordering::Relaxed),
    );
}

extern "C" fn report_at_exit() {
    report();
}

// ---- the operator table --------------------------------------------------------------------

struct Op {
    name: String,
    entry: &'static OperatorEntry,
    schema: Arc<FunctionSchema>,
    /// Some return aliases an input without writing it (`-> Tensor(a)`) and none is a list: a
    /// view, which does no per-element work, so it may see tensors with huge element counts.
    /// List-returning views (`split`, `unbind`, `chunk`) make one tensor per slice of a dim,
    /// 2^40 of them for a huge dim, so they do not count.
    is_view: bool,
    /// Some return is a list of tensors. Such operators never get huge dims: how many tensors
    /// they return can follow a dim's size (`unbind` of a 2^40 dim makes 2^40 tensors, in
    /// PyTorch too), which is unbounded work by design (Note [Op surface deny-list]).
    returns_list: bool,
}

struct Harness {
    ops: Vec<Op>,
    /// String literals to pass to `str` arguments: every string default of the schemas.
    strings: Vec<String>,
}

static HARNESS: LazyLock<Harness> = LazyLock::new(|| {
    // Exact-size allocations, so that AddressSanitizer sees every out-of-bounds access (the
    // caching allocator rounds sizes up and reuses freed blocks).
    c10::allocator::set_allocator(DeviceType::Cpu, &c10::CpuAllocator);
    aten::set_num_threads(1).expect("one thread");
    // Links the autograd crate, whose registrar adds the Autograd kernels.
    let _ = autograd::is_grad_enabled();
    let d = aten::dispatcher();
    let mut strings = vec!["none".to_string(), "mean".into(), "sum".into(), String::new()];
    let mut ops = Vec::new();
    for name in d.operator_names() {
        if DENY.iter().any(|(n, _)| *n == name) {
            continue;
        }
        let (entry, schema) = d.find_schema(&name).expect("listed operators have schemas");
        for a in &schema.arguments {
            if let Some(DefaultValue::Str(s)) = &a.default {
                if !strings.contains(s) {
                    strings.push(s.clone());
                }
            }
        }
        let returns_list = schema.returns.iter().any(|r| matches!(r.ty, Type::List(..)));
        let is_view = schema.returns.iter().any(|r| r.alias.as_ref().is_some_and(|a| !a.is_write)) && !returns_list;
        ops.push(Op { name, entry, schema, is_view, returns_list });
    }
    assert!(ops.len() > 100, "only {} operators registered: are the kernels linked?", ops.len());
    // SAFETY: `report_at_exit` is a plain function that only reads atomics and writes stderr.
    unsafe { libc::atexit(report_at_exit) };
    Harness { ops, strings }
});

// ---- reading the fuzz bytes ----------------------------------------------------------------

/// The fuzz bytes as a source of choices; zeros once exhausted.
struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        let v = if n <= 256 { self.byte() as usize } else { u16::from_le_bytes([self.byte(), self.byte()]) as usize };
        v % n
    }
    /// True with probability about `num / 256`.
    fn chance(&mut self, num: u8) -> bool {
        self.byte() < num
    }
    fn pick<'t, T>(&mut self, items: &'t [T]) -> &'t T {
        &items[self.below(items.len())]
    }
}

// ---- values --------------------------------------------------------------------------------

/// What earlier arguments of the call look like, so later ones can match or deliberately miss.
struct Ctx {
    /// The shape most tensors of the call share (so binary ops get past broadcasting).
    shape: Vec<i64>,
    /// The dtype most tensors of the call share.
    dtype: ScalarType,
    /// The operator is a view (may take huge tensors).
    is_view: bool,
    /// The operator returns a list of tensors (never takes huge dims).
    returns_list: bool,
}

const EXTREME_INTS: [i64; 10] = [i64::MIN, i64::MAX, HUGE, -HUGE, 1 << 31, -(1 << 31) - 1, 1 << 62, 1 << 32, -65, 1000];
const FLOATS: [f64; 16] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    2.0,
    -2.5,
    3.0,
    1e-8,
    1e10,
    1e300,
    -1e300,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::MIN_POSITIVE,
];

/// An int argument: mostly small, dimension-like (in and out of range) or a size of the call's
/// shape, sometimes a medium count, rarely extreme. Extreme values ask for allocations far
/// beyond the address space, which must fail cleanly (see run.sh's allocator options).
fn gen_int(b: &mut Bytes, ctx: &Ctx, in_list: bool) -> i64 {
    let ndim = ctx.shape.len() as i64;
    match b.byte() {
        0..=119 => b.byte() as i64 % 9 - 3,
        120..=169 => b.byte() as i64 % (2 * ndim + 3) - ndim - 1,
        170..=209 => ctx.shape.get(b.below(ctx.shape.len().max(1))).copied().unwrap_or(1),
        // Not in lists: a list of several medium ints multiplies to a large allocation.
        210..=239 if !in_list => 6 + b.byte() as i64 % 59,
        210..=239 => b.byte() as i64 % 6,
        _ => *b.pick(&EXTREME_INTS),
    }
}

fn gen_float(b: &mut Bytes) -> f64 {
    if b.chance(128) {
        *b.pick(&FLOATS)
    } else {
        (b.byte() as i8) as f64 / 8.0
    }
}

fn gen_scalar(b: &mut Bytes, ctx: &Ctx) -> Scalar {
    match b.below(3) {
        0 => Scalar::Int(gen_int(b, ctx, false)),
        1 => Scalar::Float(gen_float(b)),
        _ => Scalar::Bool(b.byte() & 1 == 1),
    }
}

/// Element values: small numbers mostly, with the dtype's extremes and (for floats) NaN and
/// infinities.
fn gen_values(b: &mut Bytes, dtype: ScalarType, n: usize) -> Tensor {
    macro_rules! ints {
        ($t:ty) => {{
            let v: Vec<$t> = (0..n)
                .map(|_| match b.byte() {
                    0..=15 => <$t>::MIN,
                    16..=31 => <$t>::MAX,
                    x => (x % 11) as $t - 3 as $t,
                })
                .collect();
            Tensor::from_vec(v, &[n as i64])
        }};
    }
    macro_rules! floats {
        ($t:ty, $from:expr) => {{
            let v: Vec<$t> = (0..n).map(|_| $from(gen_float(b))).collect();
            Tensor::from_vec(v, &[n as i64])
        }};
    }
    let t = match dtype {
        // Unsigned: `x % 11 - 3` wraps to large values too, on purpose.
        ScalarType::U8 => {
            let v: Vec<u8> = (0..n).map(|_| b.byte() % 12).collect();
            Tensor::from_vec(v, &[n as i64])
        }
        ScalarType::I8 => ints!(i8),
        ScalarType::I16 => ints!(i16),
        ScalarType::I32 => ints!(i32),
        ScalarType::I64 => ints!(i64),
        ScalarType::F16 => floats!(f16, f16::from_f64),
        ScalarType::BF16 => floats!(bf16, bf16::from_f64),
        ScalarType::F32 => floats!(f32, |x: f64| x as f32),
        ScalarType::F64 => floats!(f64, |x: f64| x),
        ScalarType::C64 => {
            let v: Vec<c10::Complex<f32>> =
                (0..n).map(|_| c10::Complex::new(gen_float(b) as f32, gen_float(b) as f32)).collect();
            Tensor::from_complex_vec(v, &[n as i64])
        }
        ScalarType::C128 => {
            let v: Vec<c10::Complex<f64>> = (0..n).map(|_| c10::Complex::new(gen_float(b), gen_float(b))).collect();
            Tensor::from_complex_vec(v, &[n as i64])
        }
        ScalarType::Bool => {
            let v: Vec<bool> = (0..n).map(|_| b.byte() & 1 == 1).collect();
            Tensor::from_vec(v, &[n as i64])
        }
    };
    t.expect("a 1-d tensor of n values")
}

fn numel(shape: &[i64]) -> usize {
    shape.iter().map(|&s| s.max(0) as usize).product()
}

/// A random small shape: up to 4 dims of size 0..=5 (0 and 1 favoured now and then).
fn gen_shape(b: &mut Bytes) -> Vec<i64> {
    let ndim = b.below(5);
    (0..ndim)
        .map(|_| match b.byte() {
            0..=19 => 0,
            20..=79 => 1,
            x => 2 + (x % 4) as i64,
        })
        .collect()
}

/// A shape related to `base`: equal, broadcastable (dims set to 1 or leading dims dropped),
/// or unrelated.
fn related_shape(b: &mut Bytes, base: &[i64]) -> Vec<i64> {
    match b.byte() {
        0..=139 => base.to_vec(),
        140..=189 => {
            let drop = b.below(base.len() + 1);
            base[drop..].iter().map(|&s| if b.chance(64) { 1 } else { s }).collect()
        }
        190..=209 => Vec::new(),
        _ => gen_shape(b),
    }
}

/// A tensor of `shape` and `dtype` in one of several layouts; `None` when the harness's own
/// set-up call fails (then the case is skipped: the set-up ops are fuzzed on their own).
fn gen_tensor(b: &mut Bytes, ctx: &Ctx, shape: &[i64], dtype: ScalarType) -> Option<Tensor> {
    let n = numel(shape);
    let t = match b.byte() {
        // Contiguous.
        0..=109 => gen_values(b, dtype, n).reshape(shape).ok()?,
        // Transposed: the last two dims swapped in memory.
        110..=149 if shape.len() >= 2 => {
            let k = shape.len();
            let mut swapped = shape.to_vec();
            swapped.swap(k - 2, k - 1);
            gen_values(b, dtype, n).reshape(&swapped).ok()?.transpose(-1, -2).ok()?
        }
        // Arbitrary non-negative strides on a small base: gaps, overlap (stride 0 or smaller
        // than the inner extent), an offset.
        150..=199 => {
            let strides: Vec<i64> = shape
                .iter()
                .map(|_| match b.byte() {
                    0..=39 => 0,
                    x => 1 + (x % 6) as i64,
                })
                .collect();
            let offset = b.below(3) as i64;
            let span: i64 = if n == 0 {
                0
            } else {
                offset + 1 + shape.iter().zip(&strides).map(|(s, st)| (s - 1) * st).sum::<i64>()
            };
            if span as usize > MAX_ELEMS {
                return None;
            }
            let len = span.max(offset) as usize + b.below(2);
            let base = gen_values(b, dtype, len);
            base.as_strided_with(shape, &strides, Some(offset)).ok()?
        }
        // Expanded: some dims of a smaller tensor broadcast (stride 0).
        200..=239 => {
            let small: Vec<i64> = shape.iter().map(|&s| if b.chance(128) { 1.min(s) } else { s }).collect();
            gen_values(b, dtype, numel(&small)).reshape(&small).ok()?.expand(shape).call().ok()?
        }
        // Huge: a dim of 2^40 expanded from 1. Outside views the element count is kept at 0
        // (another dim is 0), so no operator has 2^40 elements of work to do.
        _ if ctx.is_view || (HUGE_OUTSIDE_VIEWS && !ctx.returns_list) => {
            let mut huge = shape.to_vec();
            if huge.is_empty() {
                huge.push(1);
            }
            let at = b.below(huge.len());
            huge[at] = HUGE;
            if !ctx.is_view && !huge.contains(&0) {
                if huge.len() == 1 {
                    huge.push(0);
                } else {
                    let next = (at + 1) % huge.len();
                    huge[next] = 0;
                }
            }
            let small: Vec<i64> = huge.iter().map(|&s| if s == HUGE { 1 } else { s }).collect();
            gen_values(b, dtype, numel(&small)).reshape(&small).ok()?.expand(&huge).call().ok()?
        }
        _ => gen_values(b, dtype, n).reshape(shape).ok()?,
    };
    if dtype.is_floating_point() && b.chance(40) {
        // A leaf that requires grad sends the call through the autograd kernel.
        return t.detach().requires_grad_(true).ok();
    }
    Some(t)
}

fn gen_dtype(b: &mut Bytes, ctx: &Ctx) -> ScalarType {
    if b.chance(110) {
        ctx.dtype
    } else {
        *b.pick(&ScalarType::ALL)
    }
}

fn gen_call_tensor(b: &mut Bytes, ctx: &Ctx) -> Option<Tensor> {
    let shape = related_shape(b, &ctx.shape);
    let dtype = gen_dtype(b, ctx);
    gen_tensor(b, ctx, &shape, dtype)
}

fn gen_device(b: &mut Bytes) -> Device {
    match b.byte() {
        0..=219 => Device::CPU,
        220..=245 => Device { ty: DeviceType::Meta, index: -1 },
        _ => Device { ty: DeviceType::Cuda, index: 0 },
    }
}

/// A schema default as a value, for the literal kinds that need no table (identifiers such as
/// `contiguous_format` or `Mean` are generated like any other value instead).
fn literal_default(d: &DefaultValue, ty: &Type) -> Option<IValue> {
    let base = match ty {
        Type::Optional(inner) => inner,
        t => t,
    };
    Some(match (base, d) {
        (_, DefaultValue::None) => IValue::None,
        (Type::Int | Type::SymInt, DefaultValue::Int(i)) => IValue::Int(*i),
        (Type::Float, DefaultValue::Int(i)) => IValue::Double(*i as f64),
        (Type::Float, DefaultValue::Float(x)) => IValue::Double(*x),
        (Type::Bool, DefaultValue::Bool(v)) => IValue::Bool(*v),
        (Type::Scalar, DefaultValue::Int(i)) => IValue::Scalar(Scalar::Int(*i)),
        (Type::Scalar, DefaultValue::Float(x)) => IValue::Scalar(Scalar::Float(*x)),
        (Type::Str, DefaultValue::Str(s)) => IValue::Str(s.clone()),
        (Type::List(_, n), DefaultValue::Int(i)) => IValue::IntList(vec![*i; n.unwrap_or(1)]),
        (Type::List(_, _), DefaultValue::IntList(v)) => IValue::IntList(v.clone()),
        _ => return None,
    })
}

/// A value of schema type `ty`.
fn gen_value(b: &mut Bytes, ctx: &Ctx, ty: &Type) -> Option<IValue> {
    Some(match ty {
        Type::Optional(inner) => {
            if b.chance(64) {
                IValue::None
            } else {
                gen_value(b, ctx, inner)?
            }
        }
        Type::Tensor => IValue::Tensor(gen_call_tensor(b, ctx)?),
        Type::Int | Type::SymInt => IValue::Int(gen_int(b, ctx, false)),
        Type::Float => IValue::Double(gen_float(b)),
        Type::Bool => IValue::Bool(b.byte() & 1 == 1),
        Type::Scalar => IValue::Scalar(gen_scalar(b, ctx)),
        Type::ScalarType => IValue::ScalarType(*b.pick(&ScalarType::ALL)),
        Type::Layout => IValue::Layout(Layout::Strided),
        Type::Device => IValue::Device(gen_device(b)),
        Type::MemoryFormat => IValue::MemoryFormat(*b.pick(&[
            MemoryFormat::Contiguous,
            MemoryFormat::Preserve,
            MemoryFormat::ChannelsLast,
            MemoryFormat::ChannelsLast3d,
        ])),
        Type::Generator => {
            let g = aten::Generator::new(Device::CPU);
            g.manual_seed(b.byte() as u64);
            IValue::Generator(g)
        }
        Type::Str => {
            if b.chance(220) {
                IValue::Str(b.pick(&HARNESS.strings).clone())
            } else {
                let len = b.below(6);
                IValue::Str((0..len).map(|_| (b'a' + b.byte() % 26) as char).collect())
            }
        }
        Type::List(elem, n) => {
            let len = match n {
                Some(n) if b.chance(220) => *n,
                _ => b.below(6),
            };
            match &**elem {
                Type::Int | Type::SymInt => IValue::IntList((0..len).map(|_| gen_int(b, ctx, true)).collect()),
                Type::Float => IValue::DoubleList((0..len).map(|_| gen_float(b)).collect()),
                Type::Bool => IValue::BoolList((0..len).map(|_| b.byte() & 1 == 1).collect()),
                Type::Tensor => {
                    let len = len.min(4);
                    IValue::TensorList((0..len).map(|_| gen_call_tensor(b, ctx)).collect::<Option<_>>()?)
                }
                Type::Optional(inner) if **inner == Type::Tensor => {
                    let len = len.min(3);
                    let mut v = Vec::with_capacity(len);
                    for _ in 0..len {
                        if b.chance(60) {
                            v.push(None);
                        } else {
                            // Index tensors: mostly int64 or bool.
                            let shape = related_shape(b, &ctx.shape);
                            let dtype = match b.byte() {
                                0..=127 => ScalarType::I64,
                                128..=179 => ScalarType::Bool,
                                _ => *b.pick(&ScalarType::ALL),
                            };
                            v.push(Some(gen_tensor(b, ctx, &shape, dtype)?));
                        }
                    }
                    IValue::OptionalTensorList(v)
                }
                _ => IValue::None,
            }
        }
        // Not used by our operators; a wrong kind must be an argument error.
        Type::Dimname | Type::Storage | Type::Stream => IValue::None,
    })
}

// ---- the invariant -------------------------------------------------------------------------

/// Note [Op surface invariant]: an `Ok` call leaves one value per schema return on the stack,
/// and every returned tensor is consistent: as many strides as sizes, no negative size, an
/// element count equal to the product of the sizes, a CPU storage that covers every element
/// its sizes, strides and offset address, and (when small enough) values that `to_vec` reads.
/// Everything else must be an `Err`.
fn check_output(op: &str, v: &IValue) {
    match v {
        IValue::Tensor(t) => check_tensor(op, t),
        IValue::TensorList(ts) => ts.iter().for_each(|t| check_tensor(op, t)),
        IValue::OptionalTensorList(ts) => ts.iter().flatten().for_each(|t| check_tensor(op, t)),
        IValue::Tuple(vs) => vs.iter().for_each(|v| check_output(op, v)),
        _ => {}
    }
}

fn check_tensor(op: &str, t: &Tensor) {
    let sizes = t.sizes();
    assert!(sizes.iter().all(|&s| s >= 0), "{op}: negative size in {sizes:?}");
    // An empty shape counts 0 even when its other sizes multiply past i64 (Note [Checked
    // sizes]: `[i64::MAX, 2^40, 0]` is a valid empty result).
    let product = if sizes.contains(&0) { Some(0) } else { sizes.iter().try_fold(1i64, |n, &s| n.checked_mul(s)) };
    assert_eq!(product, Some(t.numel()), "{op}: numel {} for sizes {sizes:?}", t.numel());
    if t.layout() != Layout::Strided {
        check_sparse(op, t);
        return;
    }
    let strides = t.strides();
    assert_eq!(sizes.len(), strides.len(), "{op}: sizes {sizes:?} but strides {strides:?}");
    if t.numel() == 0 || !t.device().is_cpu() {
        return;
    }
    assert!(t.storage_offset() >= 0, "{op}: negative storage offset {}", t.storage_offset());
    let (mut lo, mut hi) = (t.storage_offset() as i128, t.storage_offset() as i128);
    for (&s, &st) in sizes.iter().zip(strides) {
        let reach = (s as i128 - 1) * st as i128;
        if reach < 0 {
            lo += reach;
        } else {
            hi += reach;
        }
    }
    let itemsize = t.dtype().size() as i128;
    assert!(
        lo >= 0 && (hi + 1) * itemsize <= t.storage().nbytes() as i128,
        "{op}: sizes {sizes:?}, strides {strides:?}, offset {} address elements {lo}..={hi} of a {}-byte storage of {}",
        t.storage_offset(),
        t.storage().nbytes(),
        t.dtype()
    );
    if t.numel() <= MAX_READ {
        // Complex elements are read as complex128 (every element is read either way).
        let n = if t.dtype().is_complex() {
            t.to_complex_vec::<f64>().unwrap_or_else(|e| panic!("{op}: to_complex_vec of an output failed: {e}")).len()
        } else {
            t.to_vec::<f64>().unwrap_or_else(|e| panic!("{op}: to_vec of an output failed: {e}")).len()
        };
        assert_eq!(n as i64, t.numel(), "{op}: to_vec length");
    }
}

/// A sparse result has no storage or strides of its own (PyTorch's `.stride()` of one raises):
/// its member tensors carry the invariant, each checked as a strided result, and they must fit
/// its shape: COO indices `[sparse_dim, nnz]` and values `[nnz, *dense sizes]`; CSR
/// `crow_indices` `[rows + 1]`, `col_indices` and values `[nnz]`.
fn check_sparse(op: &str, t: &Tensor) {
    let part = |r: c10::Result<Tensor>, what: &str| r.unwrap_or_else(|e| panic!("{op}: {what} of a sparse output: {e}"));
    let sizes = t.sizes();
    match t.layout() {
        Layout::SparseCoo => {
            let (i, v) = (part(aten::ops::_indices(t), "_indices"), part(aten::ops::_values(t), "_values"));
            check_tensor(op, &i);
            check_tensor(op, &v);
            assert_eq!(i.dim(), 2, "{op}: COO indices {:?}", i.sizes());
            let (sparse_dim, nnz) = (i.sizes()[0] as usize, i.sizes()[1]);
            assert!(sparse_dim <= sizes.len(), "{op}: {sparse_dim} sparse dims of {sizes:?}");
            let mut want = vec![nnz];
            want.extend(&sizes[sparse_dim..]);
            assert_eq!(v.sizes(), &want[..], "{op}: COO values for {sizes:?} with indices {:?}", i.sizes());
        }
        Layout::SparseCsr => {
            let crow = part(aten::ops::crow_indices(t), "crow_indices");
            let col = part(aten::ops::col_indices(t), "col_indices");
            let v = part(aten::ops::values(t), "values");
            for m in [&crow, &col, &v] {
                check_tensor(op, m);
            }
            // PyTorch's compressed layout: sizes `[*batch, rows, cols, *dense]`, crow_indices
            // `[*batch, rows + 1]`, col_indices `[*batch, nnz]`, values `[*batch, nnz, *dense]`.
            let what = format!(
                "{op}: CSR {sizes:?} with crow_indices {:?}, col_indices {:?}, values {:?}",
                crow.sizes(),
                col.sizes(),
                v.sizes()
            );
            assert!(crow.dim() >= 1, "{what}");
            let b = crow.dim() - 1;
            assert!(col.dim() == b + 1 && v.dim() > b && sizes.len() >= b + 2, "{what}");
            let dense = v.dim() - b - 1;
            assert_eq!(sizes.len(), b + 2 + dense, "{what}");
            for m in [crow.sizes(), col.sizes(), v.sizes()] {
                assert_eq!(&m[..b], &sizes[..b], "{what}");
            }
            assert_eq!(crow.sizes()[b], sizes[b] + 1, "{what}");
            assert_eq!(col.sizes()[b], v.sizes()[b], "{what}");
            assert_eq!(&v.sizes()[b + 1..], &sizes[b + 2..], "{what}");
        }
        other => panic!("{op}: a result of layout {other:?}"),
    }
}

/// Backward through a small floating output that requires grad: `sum()` then `backward()`;
/// either result is fine, a panic is not.
fn try_backward(v: &IValue) {
    let IValue::Tensor(t) = v else { return };
    if !t.requires_grad() || !t.is_floating_point() || !t.device().is_cpu() || t.numel() > MAX_READ {
        return;
    }
    BACKWARDS.fetch_add(1, Ordering::Relaxed);
    if aten::ops::sum(t, None).and_then(|s| s.backward()).is_ok() {
        BACKWARD_OKS.fetch_add(1, Ordering::Relaxed);
    }
}

fuzz_target!(
    init: {
        // Registration leaks a few boxes on purpose (replaced fallbacks); doing it before the
        // first input keeps LeakSanitizer's per-input check from blaming that input.
        LazyLock::force(&HARNESS);
        LazyLock::force(&SEEN);
    },
    |data: &[u8]| {
    let h = &*HARNESS;
    let mut b = Bytes { data, pos: 0 };
    let index = b.below(h.ops.len());
    let op = &h.ops[index];
    let dtype = *b.pick(&ScalarType::ALL);
    let ctx = Ctx { shape: gen_shape(&mut b), dtype, is_view: op.is_view, returns_list: op.returns_list };
    let mut stack: Stack = Vec::with_capacity(op.schema.arguments.len());
    for arg in &op.schema.arguments {
        let default = arg.default.as_ref().filter(|_| b.chance(64)).and_then(|d| literal_default(d, &arg.ty));
        let value = match default {
            Some(v) => v,
            None => match gen_value(&mut b, &ctx, &arg.ty) {
                Some(v) => v,
                None => return,
            },
        };
        stack.push(value);
    }
    SEEN[index].fetch_or(1, Ordering::Relaxed);
    let calls = CALLS.fetch_add(1, Ordering::Relaxed) + 1;
    match op.entry.call_boxed(&mut stack) {
        Ok(()) => {
            OKS.fetch_add(1, Ordering::Relaxed);
            SEEN[index].fetch_or(2, Ordering::Relaxed);
            assert_eq!(
                stack.len(),
                op.schema.returns.len(),
                "{}: {} values on the stack for {} returns",
                op.name,
                stack.len(),
                op.schema.returns.len()
            );
            for v in &stack {
                check_output(&op.name, v);
            }
            if b.chance(128) {
                if let Some(v) = stack.first() {
                    try_backward(v);
                }
            }
        }
        Err(_) => {
            ERRS.fetch_add(1, Ordering::Relaxed);
        }
    }
    if calls % REPORT_EVERY == 0 {
        report();
    }
});

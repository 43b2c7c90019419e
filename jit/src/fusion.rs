//! The CPU kernel of a `prim::FusionGroup` (made by [`crate::passes::fuse`]): the group's
//! subgraph compiled into a small register program of elementwise instructions, run over the
//! broadcast output in chunks that stay in L1. Each input is read once and each output written
//! once; no intermediate tensor exists. Inputs the kernel does not take (another dtype or
//! device, shapes whose outputs would differ, tensors that need a gradient) run the subgraph in
//! the interpreter instead, so a group computes what its nodes would in every case.
//!
//! Note [Fused kernel layout]: the inputs are broadcast to the output shape, the dimensions
//! ordered as TensorIterator orders them (the first input with a non-zero stride in a
//! dimension decides; an input laid out transposed gives an output laid out the same way) and
//! coalesced where every operand allows. The output is dense in that order, so element `i` of
//! the iteration is element `i` of the output's memory. An input whose strides are the
//! output's is read in place; one that is constant over the whole iteration (a broadcast
//! scalar) is splatted into a buffer once per task; every other one is gathered, one chunk at a
//! time, into a buffer. Chunks are `CHUNK_BYTES` per operand and every instruction is a loop
//! over one chunk, which LLVM vectorises; the program's scratch registers are allocated by last
//! use, so a long chain needs as many buffers as values alive at once. The iteration is cut
//! into tasks by aten's `parallel::Dense` (the parallel loop aten offers code outside it): run
//! over the first output's buffer, it hands rayon tasks of 32768 elements above that size (on
//! one thread, in order), and a task's range is where its part of the buffer starts.
//!
//! Note [Fast exp and tanh]: every unary function runs aten's eager function as eager kernels
//! run it (`UnaryFloatOp::f32_fast` in f32, with multiply-adds fused where the kernel's ISA has
//! FMA): the branch-free, vectorisable `exp`, `tanh`, `sigmoid`, `silu` and `log` of Note
//! [Vectorised transcendentals] in `aten/src/native/cpu/vec.rs`, and the scalar functions for
//! the rest (`sin`, `cos`, `erf`, `pow`) and in f64, so fused results are eager's bits. The
//! tanh-approximated `gelu` is `x sigmoid(2z)` (`0.5 (1 + tanh z) = sigmoid(2z)`), free of the
//! cancellation of `1 + tanh z` for negative `x`; `jit/tests/jit/fusion.rs` measures its error
//! against eager.

use std::mem::size_of;

use aten::native::unary::{Cos, Erf, Exp, GeluErf, GeluTanh, Log, Sigmoid, Silu, Sin, Tanh, UnaryFloatOp};
use aten::parallel::Dense;
use aten::{IValue, Tensor};
use c10::tensor_impl::DimVec;
use c10::{Element, Error, Result, ScalarType};

use crate::interpreter::{resolve, Code};
use crate::ir::{Constant, Graph, NodeId, ValueId};
use crate::types::JitType;

/// Bytes of one operand's chunk: 1024 f32 or 512 f64 elements, so that a program's live
/// buffers stay in a 32 KiB L1 cache.
const CHUNK_BYTES: usize = 4096;

// ---- what a fusible node computes --------------------------------------------------------

/// A one-input elementwise function (parameters are the node's constants).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum UnaryOp {
    Neg,
    Exp,
    Log,
    Tanh,
    Sigmoid,
    Relu,
    Sqrt,
    Rsqrt,
    Abs,
    Sin,
    Cos,
    Erf,
    Silu,
    /// `gelu(x, approximate='none')`.
    GeluErf,
    /// `gelu(x, approximate='tanh')`.
    GeluTanh,
    /// `pow(x, 1)`.
    Copy,
    /// `pow(x, 2)`.
    Square,
    /// `pow(x, 3)`.
    Cube,
    /// `pow(x, e)` for any other number `e`.
    Pow(f64),
    /// `clamp(x, min, max)`, `clamp_min`, `clamp_max` (bounds are never NaN).
    Clamp(Option<f64>, Option<f64>),
}

/// A two-input elementwise function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    /// `maximum` (NaN propagates).
    Max,
    /// `minimum` (NaN propagates).
    Min,
}

/// What one fusible node computes. Its data inputs are input 0 (`Unary`) or inputs 0 and 1
/// (the others); a data input is a tensor or, for the `Scalar` overloads, a constant number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Pointwise {
    Unary(UnaryOp),
    Binary(BinaryOp),
    /// `add`/`sub` with `alpha`: `self op alpha * other`; `rsub`: `other - alpha * self`.
    Scaled {
        op: BinaryOp,
        alpha: f64,
        reversed: bool,
    },
}

impl Pointwise {
    /// How many of the node's inputs are data (the rest are constant parameters).
    pub(crate) fn arity(&self) -> usize {
        match self {
            Pointwise::Unary(_) => 1,
            _ => 2,
        }
    }
}

/// A constant int or float.
fn number(g: &Graph, v: ValueId) -> Option<f64> {
    match g.constant_value(v)? {
        Constant::Int(i) => Some(i as f64),
        Constant::Float(x) => Some(x),
        _ => None,
    }
}

/// A constant `Scalar?`: `Some(None)` for `None`, `Some(Some(x))` for a number.
fn optional_number(g: &Graph, v: ValueId) -> Option<Option<f64>> {
    match g.constant_value(v)? {
        Constant::None => Some(None),
        _ => number(g, v).map(Some),
    }
}

/// What node `n` computes, if it is an elementwise operator the fused kernel implements with
/// constant parameters (`alpha`, exponents, bounds, `approximate`) and data inputs that are
/// tensors or constant numbers. Types and shapes are the fusion pass's to check.
pub(crate) fn pointwise_of(g: &Graph, n: NodeId) -> Option<Pointwise> {
    if !g.kind(n).starts_with("aten::") || g.outputs_of(n).len() != 1 || !g.blocks_of(n).is_empty() {
        return None;
    }
    let (_, schema) = resolve(g, n).ok()?;
    let ins = g.inputs_of(n);
    let data = |k: usize| g.value_type(ins[k]).is_tensor() || number(g, ins[k]).is_some();
    let unary = |op| Some(Pointwise::Unary(op));
    use UnaryOp::*;
    let p = match (schema.name.as_str(), schema.overload.as_str()) {
        ("add" | "sub", "Tensor" | "Scalar") => {
            let op = if schema.name == "add" { BinaryOp::Add } else { BinaryOp::Sub };
            Pointwise::Scaled { op, alpha: number(g, ins[2])?, reversed: false }
        }
        ("rsub", "Scalar") => Pointwise::Scaled { op: BinaryOp::Sub, alpha: number(g, ins[2])?, reversed: true },
        ("mul", "Tensor" | "Scalar") => Pointwise::Binary(BinaryOp::Mul),
        ("div", "Tensor" | "Scalar") => Pointwise::Binary(BinaryOp::Div),
        ("maximum", "") => Pointwise::Binary(BinaryOp::Max),
        ("minimum", "") => Pointwise::Binary(BinaryOp::Min),
        ("neg", "") => unary(Neg)?,
        ("exp", "") => unary(Exp)?,
        ("log", "") => unary(Log)?,
        ("tanh", "") => unary(Tanh)?,
        ("sigmoid", "") => unary(Sigmoid)?,
        ("relu", "") => unary(Relu)?,
        ("sqrt", "") => unary(Sqrt)?,
        ("rsqrt", "") => unary(Rsqrt)?,
        ("abs", "") => unary(Abs)?,
        ("sin", "") => unary(Sin)?,
        ("cos", "") => unary(Cos)?,
        ("erf", "") => unary(Erf)?,
        ("silu", "") => unary(Silu)?,
        ("gelu", "") => match g.constant_value(ins[1])? {
            Constant::Str(s) if s == "none" => Pointwise::Unary(GeluErf),
            Constant::Str(s) if s == "tanh" => Pointwise::Unary(GeluTanh),
            _ => return None,
        },
        ("pow", "Tensor_Scalar") => Pointwise::Unary(match number(g, ins[1])? {
            1.0 => Copy,
            2.0 => Square,
            3.0 => Cube,
            e => Pow(e),
        }),
        ("clamp", "") => {
            let (lo, hi) = (optional_number(g, ins[1])?, optional_number(g, ins[2])?);
            if (lo.is_none() && hi.is_none()) || lo.is_some_and(f64::is_nan) || hi.is_some_and(f64::is_nan) {
                return None;
            }
            Pointwise::Unary(Clamp(lo, hi))
        }
        ("clamp_min", "") => Pointwise::Unary(Clamp(Some(number(g, ins[1]).filter(|x| !x.is_nan())?), None)),
        ("clamp_max", "") => Pointwise::Unary(Clamp(None, Some(number(g, ins[1]).filter(|x| !x.is_nan())?))),
        _ => return None,
    };
    // `self` is a tensor in every schema above; `other` may be a constant number.
    if !g.value_type(ins[0]).is_tensor() || !(0..p.arity()).all(data) {
        return None;
    }
    Some(p)
}

// ---- the register program ----------------------------------------------------------------

/// An instruction's operand: a slot (an input, an output or a scratch buffer) or a constant.
#[derive(Clone, Copy, Debug)]
enum Arg {
    Slot(u16),
    Imm(f64),
}

#[derive(Clone, Copy, Debug)]
enum Inst {
    Unary { op: UnaryOp, dst: u16, a: u16 },
    Binary { op: BinaryOp, dst: u16, a: Arg, b: Arg },
}

/// A value while lowering: an input, a constant or a virtual register.
#[derive(Clone, Copy, Debug)]
enum Val {
    Input(usize),
    Imm(f64),
    Reg(usize),
}

/// The compiled subgraph of a fusion group.
#[derive(Debug)]
pub struct FusedKernel {
    dtype: ScalarType,
    n_inputs: usize,
    n_outputs: usize,
    /// Slots: the inputs, then the outputs, then `n_scratch` scratch buffers.
    n_scratch: usize,
    insts: Vec<Inst>,
    /// The inputs each output depends on, for outputs that do not depend on all of them (their
    /// shape can be smaller than the iteration's; Note [Fused kernel layout]).
    partial_deps: Vec<Vec<usize>>,
}

fn unsupported(msg: impl Into<String>) -> Error {
    Error::invalid("jit::fusion", msg)
}

fn fold(op: BinaryOp, a: f64, b: f64) -> f64 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Max if a.is_nan() || b.is_nan() => f64::NAN,
        BinaryOp::Max => a.max(b),
        BinaryOp::Min if a.is_nan() || b.is_nan() => f64::NAN,
        BinaryOp::Min => a.min(b),
    }
}

struct Lowering {
    insts: Vec<(Pointwise, usize, Val, Val)>,
    regs: usize,
}

impl Lowering {
    fn emit(&mut self, op: Pointwise, a: Val, b: Val) -> Val {
        if let (Pointwise::Binary(op), Val::Imm(x), Val::Imm(y)) = (op, a, b) {
            return Val::Imm(fold(op, x, y));
        }
        let r = self.regs;
        self.regs += 1;
        self.insts.push((op, r, a, b));
        Val::Reg(r)
    }
}

impl FusedKernel {
    /// Compiles a fusion group's subgraph: tensor inputs of one float dtype, nodes that
    /// [`pointwise_of`] accepts, outputs computed by distinct nodes.
    pub fn compile(sub: &Graph) -> Result<FusedKernel> {
        let dtype = match sub.inputs().first().map(|&v| sub.value_type(v)) {
            Some(JitType::Tensor(t)) => t.dtype,
            _ => None,
        };
        let dtype = match dtype {
            Some(d @ (ScalarType::F32 | ScalarType::F64)) => d,
            other => return Err(unsupported(format!("a fused kernel of dtype {other:?}"))),
        };
        let mut vals: std::collections::HashMap<ValueId, Val> = std::collections::HashMap::new();
        for (k, &v) in sub.inputs().iter().enumerate() {
            match sub.value_type(v) {
                JitType::Tensor(t) if t.dtype == Some(dtype) => vals.insert(v, Val::Input(k)),
                other => return Err(unsupported(format!("fused input {k} of type {other}"))),
            };
        }
        let mut low = Lowering { insts: Vec::new(), regs: 0 };
        for &n in sub.block_nodes(sub.root()) {
            if sub.kind(n) == "prim::Constant" {
                continue;
            }
            let p = pointwise_of(sub, n).ok_or_else(|| unsupported(format!("{} in a fusion group", sub.kind(n))))?;
            let ins = sub.inputs_of(n);
            let arg = |k: usize| -> Result<Val> {
                match vals.get(&ins[k]) {
                    Some(v) => Ok(*v),
                    None => number(sub, ins[k]).map(Val::Imm).ok_or_else(|| unsupported("a fused operand")),
                }
            };
            let out = match p {
                Pointwise::Unary(_) => low.emit(p, arg(0)?, Val::Imm(0.0)),
                Pointwise::Binary(_) => low.emit(p, arg(0)?, arg(1)?),
                Pointwise::Scaled { op, alpha, reversed } => {
                    let (x, y) = if reversed { (arg(1)?, arg(0)?) } else { (arg(0)?, arg(1)?) };
                    // `a + alpha * b` as eager computes it: the product rounded, then the sum.
                    let y =
                        if alpha == 1.0 { y } else { low.emit(Pointwise::Binary(BinaryOp::Mul), y, Val::Imm(alpha)) };
                    low.emit(Pointwise::Binary(op), x, y)
                }
            };
            vals.insert(sub.outputs_of(n)[0], out);
        }
        // Outputs are distinct registers; what each depends on.
        let mut out_regs = Vec::new();
        for &v in sub.outputs() {
            match vals.get(&v) {
                Some(Val::Reg(r)) if !out_regs.contains(r) => out_regs.push(*r),
                _ => return Err(unsupported("a fusion group output that is not computed by one of its nodes")),
            }
        }
        let n_inputs = sub.inputs().len();
        let mut deps: Vec<Vec<bool>> = Vec::with_capacity(low.regs);
        for (_, r, a, b) in &low.insts {
            debug_assert_eq!(*r, deps.len());
            let mut d = vec![false; n_inputs];
            for v in [a, b] {
                match *v {
                    Val::Input(k) => d[k] = true,
                    Val::Reg(q) => d.iter_mut().zip(&deps[q]).for_each(|(x, y)| *x |= *y),
                    Val::Imm(_) => {}
                }
            }
            deps.push(d);
        }
        let partial_deps = out_regs
            .iter()
            .map(|&r| {
                let d = &deps[r];
                if d.iter().all(|x| *x) {
                    Vec::new()
                } else {
                    (0..n_inputs).filter(|&k| d[k]).collect()
                }
            })
            .collect();
        let (insts, n_scratch) = allocate(&low, n_inputs, &out_regs)?;
        Ok(FusedKernel { dtype, n_inputs, n_outputs: out_regs.len(), n_scratch, insts, partial_deps })
    }

    /// The dtype the kernel computes in.
    pub fn dtype(&self) -> ScalarType {
        self.dtype
    }

    /// Runs the kernel, or returns `None` when these inputs are for the interpreter (Note
    /// [Fusion is for inference], Note [Fused kernel layout]): inputs that are not tensors of
    /// the kernel's dtype on the CPU, that require grad in grad mode, whose shapes do not
    /// broadcast or would give an output a smaller shape, or a thread that includes a dispatch
    /// key beyond the defaults (tracing: the operators must be recorded).
    pub fn try_run(&self, inputs: &[IValue]) -> Result<Option<Vec<IValue>>> {
        use autograd::TensorAutograd;
        if inputs.len() != self.n_inputs {
            return Ok(None);
        }
        // A key added on this thread (the tracer's, a mode's) wants to see every operator.
        let local = c10::LocalDispatchKeySet::get();
        if !(local.included - c10::DispatchKeySet::default_included_set()).is_empty() {
            return Ok(None);
        }
        let grad = autograd::is_grad_enabled();
        let mut tensors = Vec::with_capacity(inputs.len());
        for v in inputs {
            match v {
                IValue::Tensor(t) if t.dtype() == self.dtype && t.device().is_cpu() && !(grad && t.requires_grad()) => {
                    tensors.push(t)
                }
                _ => return Ok(None),
            }
        }
        let Some(shape) = broadcast_all(tensors.iter().map(|t| t.sizes())) else { return Ok(None) };
        for deps in self.partial_deps.iter().filter(|d| !d.is_empty()) {
            if broadcast_all(deps.iter().map(|&k| tensors[k].sizes())).as_deref() != Some(&shape[..]) {
                return Ok(None);
            }
        }
        let outs = match self.dtype {
            ScalarType::F32 => self.run_typed::<f32>(&tensors, &shape)?,
            ScalarType::F64 => self.run_typed::<f64>(&tensors, &shape)?,
            _ => return Ok(None),
        };
        Ok(outs.map(|v| v.into_iter().map(IValue::Tensor).collect()))
    }

    fn run_typed<T: Real>(&self, inputs: &[&Tensor], shape: &[i64]) -> Result<Option<Vec<Tensor>>> {
        let (layout, out_strides) = Layout::new::<T>(shape, inputs)?;
        let n = layout.numel;
        let buffers = (0..self.n_outputs)
            .map(|_| Tensor::empty_uninit(&[n as i64], T::DTYPE, c10::Device::CPU))
            .collect::<Result<Vec<_>>>()?;
        if n > 0 {
            let mut out_bases = Vec::with_capacity(buffers.len());
            for b in &buffers {
                out_bases.push(b.typed_data_ptr::<T>()? as usize);
            }
            let Some(dense) = Dense::<T, 1>::new([&buffers[0]])? else { return Ok(None) };
            let first = out_bases[0];
            let isa = Isa::detect();
            // A fresh buffer: nobody holds a version of it, so its counter stays.
            dense.run([false], |[chunk]| {
                let start = (chunk.as_mut_ptr() as usize - first) / size_of::<T>();
                // SAFETY: `chunk` is elements [start, start + len) of output 0's buffer, given to
                // this call alone; the other outputs are fresh buffers of the same length, of
                // which this call writes the same range; the inputs are live tensors that
                // `layout` addresses within their storage and that nothing writes during the run.
                unsafe { run_range::<T>(isa, self, &layout, start, chunk.len(), &out_bases) };
            });
        }
        let strides = DimVec::from_slice(&out_strides);
        Ok(Some(
            buffers
                .into_iter()
                .map(|b| Tensor::from_storage(b.storage().clone(), shape, strides.clone(), 0, T::DTYPE))
                .collect(),
        ))
    }
}

/// Slots of the register program (Note [Fused kernel layout]): a register takes a free scratch
/// buffer when it is defined (never one its own operands use, so an instruction's slices are
/// disjoint) and gives it back after its last use; outputs are written in place.
fn allocate(low: &Lowering, n_inputs: usize, outputs: &[usize]) -> Result<(Vec<Inst>, usize)> {
    let mut last = vec![usize::MAX; low.regs];
    for (i, (_, _, a, b)) in low.insts.iter().enumerate() {
        for v in [a, b] {
            if let Val::Reg(r) = *v {
                last[r] = i;
            }
        }
    }
    let first_scratch = n_inputs + outputs.len();
    let mut slot_of = vec![0usize; low.regs];
    let (mut free, mut n_scratch) = (Vec::new(), 0usize);
    let mut insts = Vec::with_capacity(low.insts.len());
    let arg = |v: Val, slot_of: &[usize]| match v {
        Val::Input(k) => Arg::Slot(k as u16),
        Val::Reg(r) => Arg::Slot(slot_of[r] as u16),
        Val::Imm(x) => Arg::Imm(x),
    };
    for (i, &(op, r, a, b)) in low.insts.iter().enumerate() {
        let (sa, sb) = (arg(a, &slot_of), arg(b, &slot_of));
        slot_of[r] = match outputs.iter().position(|&o| o == r) {
            Some(k) => n_inputs + k,
            None => free.pop().unwrap_or_else(|| {
                n_scratch += 1;
                first_scratch + n_scratch - 1
            }),
        };
        let dst = slot_of[r] as u16;
        insts.push(match op {
            Pointwise::Unary(u) => match sa {
                Arg::Slot(a) => Inst::Unary { op: u, dst, a },
                Arg::Imm(_) => return Err(unsupported("a unary function of a constant")),
            },
            Pointwise::Binary(op) => Inst::Binary { op, dst, a: sa, b: sb },
            Pointwise::Scaled { .. } => unreachable!("lowered to binary instructions"),
        });
        // Operands used for the last time, and a result nothing uses, give their buffers back.
        for v in [a, b, Val::Reg(r)] {
            if let Val::Reg(q) = v {
                let done = last[q] == i || last[q] == usize::MAX;
                if done && slot_of[q] >= first_scratch && !free.contains(&slot_of[q]) {
                    free.push(slot_of[q]);
                }
            }
        }
    }
    if first_scratch + n_scratch > u16::MAX as usize {
        return Err(unsupported("a fusion group with too many values"));
    }
    Ok((insts, n_scratch))
}

/// The broadcast of several shapes, `None` if they do not broadcast.
fn broadcast_all<'a>(shapes: impl Iterator<Item = &'a [i64]>) -> Option<Vec<i64>> {
    let mut out: Vec<i64> = Vec::new();
    for s in shapes {
        if s.len() > out.len() {
            let mut wider = vec![1; s.len() - out.len()];
            wider.extend_from_slice(&out);
            out = wider;
        }
        let off = out.len() - s.len();
        for (o, &d) in out[off..].iter_mut().zip(s) {
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return None;
            }
        }
    }
    Some(out)
}

// ---- the iteration (Note [Fused kernel layout]) -------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Read in place: the input's strides are the output's.
    Direct,
    /// One value for the whole iteration.
    Splat,
    /// Gathered chunk by chunk.
    Gather,
}

struct InputLayout {
    base: usize,
    mode: Mode,
    /// Per coalesced dimension, innermost first, in elements.
    strides: DimVec,
}

struct Layout {
    numel: usize,
    /// Coalesced sizes, innermost first (at least one dimension).
    sizes: DimVec,
    inputs: Vec<InputLayout>,
}

impl Layout {
    /// The iteration over `shape` and the output's strides (in `shape`'s dimension order).
    fn new<T: Element>(shape: &[i64], inputs: &[&Tensor]) -> Result<(Layout, Vec<i64>)> {
        let nd = shape.len();
        // Each input's strides in the broadcast shape (0 where it is broadcast).
        let strides: Vec<Vec<i64>> = inputs
            .iter()
            .map(|t| {
                let off = nd - t.dim();
                (0..nd).map(|d| if d < off || t.sizes()[d - off] == 1 { 0 } else { t.strides()[d - off] }).collect()
            })
            .collect();
        // Dimensions innermost first: row-major, then insertion-sorted by the first input that
        // tells two dimensions apart (TensorIterator's reorder_dimensions).
        let mut order: Vec<usize> = (0..nd).rev().collect();
        let outer = |a: usize, b: usize| {
            for s in &strides {
                let (sa, sb) = (s[a], s[b]);
                if sa != 0 && sb != 0 && sa != sb {
                    return sa > sb;
                }
            }
            false
        };
        for i in 1..nd {
            let mut j = i;
            while j > 0 && outer(order[j - 1], order[j]) {
                order.swap(j - 1, j);
                j -= 1;
            }
        }
        let mut out_strides = vec![0i64; nd];
        let mut step = 1i64;
        for &d in &order {
            out_strides[d] = step;
            step *= shape[d];
        }
        // Coalesce: an outer dimension joins the inner one when every operand allows.
        let mut sizes = DimVec::new();
        let mut st: Vec<DimVec> = vec![DimVec::new(); inputs.len() + 1];
        for &d in order.iter().filter(|&&d| shape[d] != 1) {
            let all: Vec<i64> = strides.iter().map(|s| s[d]).chain(std::iter::once(out_strides[d])).collect();
            if let Some(&inner) = sizes.last() {
                let k = sizes.len() - 1;
                if st.iter().zip(&all).all(|(s, &x)| x == s[k] * inner) {
                    sizes[k] *= shape[d];
                    continue;
                }
            }
            sizes.push(shape[d]);
            for (s, x) in st.iter_mut().zip(all) {
                s.push(x);
            }
        }
        if sizes.is_empty() {
            sizes.push(1);
            for s in st.iter_mut() {
                s.push(0);
            }
        }
        let out = st.pop().expect("the output's strides");
        let numel = shape.iter().product::<i64>() as usize;
        let mut layouts = Vec::with_capacity(inputs.len());
        for (t, s) in inputs.iter().zip(st) {
            let mode = if s.iter().all(|x| *x == 0) {
                Mode::Splat
            } else if s == out {
                Mode::Direct
            } else {
                Mode::Gather
            };
            layouts.push(InputLayout { base: t.typed_data_ptr::<T>()? as usize, mode, strides: s });
        }
        Ok((Layout { numel, sizes, inputs: layouts }, out_strides))
    }
}

/// Copies elements `[start, start + dst.len())` of the iteration over `sizes` and `strides` of
/// an input at `base` into `dst`.
///
/// # Safety
/// `base`, `sizes` and `strides` address valid elements of type `T` for the whole iteration.
#[inline(always)]
unsafe fn gather<T: Copy>(dst: &mut [T], base: *const T, sizes: &[i64], strides: &[i64], start: usize) {
    let dims = sizes.len();
    let mut idx = DimVec::from_elem(0, dims);
    let (mut rem, mut off) = (start as i64, 0i64);
    for d in 0..dims {
        idx[d] = rem % sizes[d];
        rem /= sizes[d];
        off += idx[d] * strides[d];
    }
    let (n, s0) = (dst.len(), strides[0]);
    let mut done = 0;
    while done < n {
        let run = ((sizes[0] - idx[0]) as usize).min(n - done);
        let out = &mut dst[done..done + run];
        // SAFETY: the run stays inside dimension 0 at offset `off` of a valid iteration.
        let p = unsafe { base.offset(off as isize) };
        if s0 == 1 {
            // SAFETY: as above, `run` consecutive elements.
            out.copy_from_slice(unsafe { std::slice::from_raw_parts(p, run) });
        } else if s0 == 0 {
            // SAFETY: as above.
            out.fill(unsafe { *p });
        } else {
            for (i, o) in out.iter_mut().enumerate() {
                // SAFETY: element i of the run, inside dimension 0.
                *o = unsafe { *p.offset(i as isize * s0 as isize) };
            }
        }
        done += run;
        idx[0] += run as i64;
        off += run as i64 * s0;
        let mut d = 0;
        while idx[d] == sizes[d] && d + 1 < dims {
            off -= sizes[d] * strides[d];
            idx[d] = 0;
            d += 1;
            idx[d] += 1;
            off += strides[d];
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Isa {
    Baseline,
    #[cfg(target_arch = "x86_64")]
    Avx2Fma,
}

impl Isa {
    fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            return Isa::Avx2Fma;
        }
        Isa::Baseline
    }
}

/// Runs the kernel over elements `[start, start + len)` of the iteration.
///
/// # Safety
/// The layout addresses live inputs that nothing writes meanwhile; `outs` are the bases of
/// dense output buffers of the iteration's length whose range `[start, start + len)` only this
/// call accesses.
unsafe fn run_range<T: Real>(isa: Isa, k: &FusedKernel, l: &Layout, start: usize, len: usize, outs: &[usize]) {
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx2Fma {
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2<T: Real>(k: &FusedKernel, l: &Layout, start: usize, len: usize, outs: &[usize]) {
            // SAFETY: the caller's contract, forwarded.
            unsafe { range_body::<T, true>(k, l, start, len, outs) }
        }
        // SAFETY: the CPU has AVX2 and FMA (`Isa::detect`); the rest is the caller's contract.
        return unsafe { avx2::<T>(k, l, start, len, outs) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = isa;
    // SAFETY: the caller's contract, forwarded.
    unsafe { range_body::<T, false>(k, l, start, len, outs) }
}

/// See [`run_range`]; `FMA` when compiled with fused multiply-adds.
#[inline(always)]
unsafe fn range_body<T: Real, const FMA: bool>(k: &FusedKernel, l: &Layout, start: usize, len: usize, outs: &[usize]) {
    let chunk = (CHUNK_BYTES / size_of::<T>()).min(len);
    let staged: Vec<usize> = (0..k.n_inputs).filter(|&i| l.inputs[i].mode != Mode::Direct).collect();
    let mut scratch = vec![T::default(); (staged.len() + k.n_scratch) * chunk];
    let sp = scratch.as_mut_ptr();
    let (ni, no) = (k.n_inputs, k.n_outputs);
    let mut ptrs: Vec<*mut T> = vec![std::ptr::null_mut(); ni + no + k.n_scratch];
    for (j, &i) in staged.iter().enumerate() {
        // SAFETY: buffer j of the scratch vector, inside it.
        ptrs[i] = unsafe { sp.add(j * chunk) };
        if l.inputs[i].mode == Mode::Splat {
            // SAFETY: a splatted input has one value, element 0 (Layout::new).
            let v = unsafe { *(l.inputs[i].base as *const T) };
            // SAFETY: the buffer's `chunk` elements, inside the scratch vector.
            unsafe { std::slice::from_raw_parts_mut(ptrs[i], chunk) }.fill(v);
        }
    }
    for s in 0..k.n_scratch {
        // SAFETY: scratch buffer s, after the staged inputs' buffers, inside the vector.
        ptrs[ni + no + s] = unsafe { sp.add((staged.len() + s) * chunk) };
    }
    let mut at = start;
    while at < start + len {
        let n = chunk.min(start + len - at);
        for &i in &staged {
            let inp = &l.inputs[i];
            if inp.mode == Mode::Gather {
                // SAFETY: the staged buffer has `chunk >= n` elements; the input's layout is valid
                // for the whole iteration (caller's contract).
                unsafe {
                    gather(std::slice::from_raw_parts_mut(ptrs[i], n), inp.base as *const T, &l.sizes, &inp.strides, at)
                };
            }
        }
        for (i, inp) in l.inputs.iter().enumerate() {
            if inp.mode == Mode::Direct {
                // SAFETY: a direct input is dense in iteration order, so element `at` is at `at`.
                ptrs[i] = unsafe { (inp.base as *mut T).add(at) };
            }
        }
        for (j, &o) in outs.iter().enumerate() {
            // SAFETY: output j's buffer has the iteration's length; this call owns [start, start+len).
            ptrs[ni + j] = unsafe { (o as *mut T).add(at) };
        }
        // SAFETY: every slot addresses `n` elements (above); destinations are outputs or scratch
        // buffers distinct from the instruction's operands (`allocate`), and inputs are only read.
        unsafe { eval_chunk::<T, FMA>(&k.insts, &ptrs, n) };
        at += n;
    }
    // The buffers outlive every pointer into them.
    drop(scratch);
}

/// Runs the program over one chunk of `n` elements.
///
/// # Safety
/// Every slot pointer addresses `n` valid elements; an instruction's destination is disjoint
/// from its operands and written by nothing else during the call.
#[inline(always)]
unsafe fn eval_chunk<T: Real, const FMA: bool>(insts: &[Inst], ptrs: &[*mut T], n: usize) {
    for inst in insts {
        let src = |s: u16| {
            // SAFETY: slot s addresses n elements (contract); no instruction writes it while
            // this slice lives, because a destination is never one of its own operands.
            unsafe { std::slice::from_raw_parts(ptrs[s as usize] as *const T, n) }
        };
        let arg = |a: Arg| match a {
            Arg::Slot(s) => Src::Slice(src(s)),
            Arg::Imm(x) => Src::Splat(T::from_f64(x)),
        };
        match *inst {
            Inst::Unary { op, dst, a } => {
                // SAFETY: the destination addresses n elements disjoint from the operand.
                let d = unsafe { std::slice::from_raw_parts_mut(ptrs[dst as usize], n) };
                unary::<T, FMA>(op, d, src(a));
            }
            Inst::Binary { op, dst, a, b } => {
                // SAFETY: the destination addresses n elements disjoint from the operands.
                let d = unsafe { std::slice::from_raw_parts_mut(ptrs[dst as usize], n) };
                binary(op, d, arg(a), arg(b));
            }
        }
    }
}

#[inline(always)]
fn map<T: Copy>(d: &mut [T], a: &[T], f: impl Fn(T) -> T) {
    for (o, &x) in d.iter_mut().zip(a) {
        *o = f(x);
    }
}

#[inline(always)]
fn unary<T: Real, const FMA: bool>(op: UnaryOp, d: &mut [T], a: &[T]) {
    let zero = T::from_f64(0.0);
    let one = T::from_f64(1.0);
    match op {
        UnaryOp::Neg => map(d, a, |x| -x),
        UnaryOp::Exp => map(d, a, T::eager::<Exp, FMA>),
        UnaryOp::Log => map(d, a, T::eager::<Log, FMA>),
        UnaryOp::Tanh => map(d, a, T::eager::<Tanh, FMA>),
        UnaryOp::Sigmoid => map(d, a, T::eager::<Sigmoid, FMA>),
        UnaryOp::Relu => map(d, a, |x| if x <= zero { zero } else { x }),
        UnaryOp::Sqrt => map(d, a, T::fsqrt),
        UnaryOp::Rsqrt => map(d, a, |x| one / x.fsqrt()),
        UnaryOp::Abs => map(d, a, T::fabs),
        UnaryOp::Sin => map(d, a, T::eager::<Sin, FMA>),
        UnaryOp::Cos => map(d, a, T::eager::<Cos, FMA>),
        UnaryOp::Erf => map(d, a, T::eager::<Erf, FMA>),
        UnaryOp::Silu => map(d, a, T::eager::<Silu, FMA>),
        UnaryOp::GeluErf => map(d, a, T::eager::<GeluErf, FMA>),
        UnaryOp::GeluTanh => map(d, a, T::eager::<GeluTanh, FMA>),
        UnaryOp::Copy => d.copy_from_slice(a),
        UnaryOp::Square => map(d, a, |x| x * x),
        UnaryOp::Cube => map(d, a, |x| x * x * x),
        UnaryOp::Pow(e) => {
            let e = T::from_f64(e);
            map(d, a, |x| x.fpow(e))
        }
        UnaryOp::Clamp(lo, hi) => {
            // `clamp_value` of aten: a NaN stays; the lower bound, then the upper one.
            let (lo, hi) = (lo.map(T::from_f64), hi.map(T::from_f64));
            match (lo, hi) {
                (Some(l), Some(h)) => map(d, a, |x| {
                    let v = if x < l { l } else { x };
                    if v > h {
                        h
                    } else {
                        v
                    }
                }),
                (Some(l), None) => map(d, a, |x| if x < l { l } else { x }),
                (None, Some(h)) => map(d, a, |x| if x > h { h } else { x }),
                (None, None) => d.copy_from_slice(a),
            }
        }
    }
}

/// A binary instruction's operand during a chunk.
#[derive(Clone, Copy)]
enum Src<'a, T> {
    Slice(&'a [T]),
    Splat(T),
}

#[inline(always)]
fn zip<T: Copy>(d: &mut [T], a: Src<'_, T>, b: Src<'_, T>, f: impl Fn(T, T) -> T) {
    match (a, b) {
        (Src::Slice(a), Src::Slice(b)) => {
            for ((o, &x), &y) in d.iter_mut().zip(a).zip(b) {
                *o = f(x, y);
            }
        }
        (Src::Slice(a), Src::Splat(y)) => map(d, a, |x| f(x, y)),
        (Src::Splat(x), Src::Slice(b)) => map(d, b, |y| f(x, y)),
        (Src::Splat(x), Src::Splat(y)) => d.fill(f(x, y)),
    }
}

#[inline(always)]
fn binary<T: Real>(op: BinaryOp, d: &mut [T], a: Src<'_, T>, b: Src<'_, T>) {
    match op {
        BinaryOp::Add => zip(d, a, b, |x, y| x + y),
        BinaryOp::Sub => zip(d, a, b, |x, y| x - y),
        BinaryOp::Mul => zip(d, a, b, |x, y| x * y),
        BinaryOp::Div => zip(d, a, b, |x, y| x / y),
        // aten's `maximum`/`minimum`: NaN propagates.
        #[allow(clippy::eq_op)]
        BinaryOp::Max => zip(d, a, b, |x, y| {
            if x != x || y != y {
                x + y
            } else if x > y {
                x
            } else {
                y
            }
        }),
        #[allow(clippy::eq_op)]
        BinaryOp::Min => zip(d, a, b, |x, y| {
            if x != x || y != y {
                x + y
            } else if x < y {
                x
            } else {
                y
            }
        }),
    }
}

// ---- scalar functions (Note [Fast exp and tanh]) -----------------------------------------

/// A float the fused kernel computes in.
trait Real:
    Element
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
{
    fn fabs(self) -> Self;
    fn fsqrt(self) -> Self;
    fn fpow(self, e: Self) -> Self;
    /// aten's eager function, as eager kernels run it with multiply-adds fused when `FMA`
    /// (Note [Vectorised transcendentals] in `aten/src/native/cpu/vec.rs`).
    fn eager<Op: UnaryFloatOp, const FMA: bool>(self) -> Self;
}

impl Real for f64 {
    #[inline(always)]
    fn fabs(self) -> f64 {
        self.abs()
    }
    #[inline(always)]
    fn fsqrt(self) -> f64 {
        self.sqrt()
    }
    #[inline(always)]
    fn fpow(self, e: f64) -> f64 {
        self.powf(e)
    }
    #[inline(always)]
    fn eager<Op: UnaryFloatOp, const FMA: bool>(self) -> f64 {
        Op::f64(self)
    }
}

impl Real for f32 {
    #[inline(always)]
    fn fabs(self) -> f32 {
        self.abs()
    }
    #[inline(always)]
    fn fsqrt(self) -> f32 {
        self.sqrt()
    }
    #[inline(always)]
    fn fpow(self, e: f32) -> f32 {
        self.powf(e)
    }
    #[inline(always)]
    fn eager<Op: UnaryFloatOp, const FMA: bool>(self) -> f32 {
        Op::f32_fast::<FMA>(self)
    }
}

// ---- the node the interpreter runs -------------------------------------------------------

/// A `prim::FusionGroup` ready to run: its kernel, and its subgraph compiled for the
/// interpreter for the inputs the kernel does not take (Note [Fusion is for inference]).
pub struct FusionGroup {
    kernel: Option<FusedKernel>,
    fallback: Code,
}

impl FusionGroup {
    /// Compiles a group's subgraph. A subgraph the kernel cannot compile always runs in the
    /// interpreter.
    pub fn new(sub: &Graph) -> Result<FusionGroup> {
        let kernel = match FusedKernel::compile(sub) {
            Ok(k) => Some(k),
            Err(e) => {
                tracing::debug!(target: "torch::jit", reason = %e, "fusion group runs in the interpreter");
                None
            }
        };
        Ok(FusionGroup { kernel, fallback: Code::new(sub)? })
    }

    /// Whether the group has a fused kernel.
    pub fn is_fused(&self) -> bool {
        self.kernel.is_some()
    }

    /// Runs the group on its inputs.
    pub fn run(&self, inputs: Vec<IValue>) -> Result<Vec<IValue>> {
        if let Some(k) = &self.kernel {
            if let Some(out) = k.try_run(&inputs)? {
                return Ok(out);
            }
        }
        self.fallback.run(inputs)
    }
}

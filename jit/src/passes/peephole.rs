//! Peephole and algebraic rules, each matched on a node and its inputs:
//! - `x.t().t()` → `x`;
//! - `x * 1`, `x / 1`, `x + 0`, `x - 0` (a constant number) → `x` when the result's dtype is
//!   `x`'s (a float tensor with any number, an integer tensor with an int);
//! - `x.contiguous()` → `x` when `x` is known to be contiguous;
//! - `x.to(dtype)` → `x` when `x` already has that dtype and no copy is asked for;
//! - `x.view(a).view(b)` → `x.view(b)` for a contiguous `x`, `x.reshape(a).reshape(b)` →
//!   `x.reshape(b)`.
//!
//! The rules make results share memory with their inputs, so a rule only rewrites nodes whose
//! inputs and outputs no node writes, directly or through an alias (Note [Alias classes]). Run
//! dead-code elimination after it.

use c10::ScalarType;

use crate::ir::{Constant, Graph, NodeId, ValueId};
use crate::types::{JitType, TensorType};

use super::AliasDb;

/// Runs the pass; returns whether anything was rewritten.
pub fn peephole(g: &mut Graph) -> bool {
    let mut aliases = AliasDb::new(g);
    let mut changed = false;
    for n in g.all_nodes() {
        if !g.is_alive(n) || !aliases.untouched(g, n) {
            continue;
        }
        // The view chain's inner node too.
        let inner = g.inputs_of(n).first().and_then(|&v| g.producer(v));
        if inner.is_some_and(|p| !aliases.untouched(g, p)) {
            continue;
        }
        if let Some(replacement) = rewrite(g, n) {
            let out = g.outputs_of(n)[0];
            g.replace_all_uses_with(out, replacement);
            changed = true;
        } else if chain(g, n) {
            changed = true;
        }
    }
    changed
}

fn tensor_type(g: &Graph, v: ValueId) -> Option<&TensorType> {
    match g.value_type(v) {
        JitType::Tensor(t) => Some(t),
        _ => None,
    }
}

fn producer_kind(g: &Graph, v: ValueId) -> Option<(NodeId, &str)> {
    g.producer(v).map(|p| (p, g.kind(p)))
}

fn is_contiguous(t: &TensorType) -> bool {
    let (Some(sizes), Some(strides)) = (&t.sizes, &t.strides) else { return false };
    let mut expected = 1i64;
    for (s, st) in sizes.iter().zip(strides).rev() {
        if *s != 1 && *st != expected {
            return false;
        }
        expected *= *s;
    }
    true
}

/// Whether `x op c` keeps `x`'s dtype for the constant number `c`.
fn keeps_dtype(x: &TensorType, c: &Constant) -> bool {
    match (x.dtype, c) {
        (Some(d), Constant::Int(_) | Constant::Float(_)) if d.is_floating_point() => true,
        (Some(d), Constant::Int(_)) => d != ScalarType::Bool,
        _ => false,
    }
}

fn number(c: &Constant) -> Option<f64> {
    match c {
        Constant::Int(i) => Some(*i as f64),
        Constant::Float(x) => Some(*x),
        _ => None,
    }
}

/// The value a node can be replaced by, if a rule applies.
fn rewrite(g: &Graph, n: NodeId) -> Option<ValueId> {
    let ins = g.inputs_of(n);
    let x = *ins.first()?;
    let xt = tensor_type(g, x)?;
    if g.outputs_of(n).len() != 1 {
        return None;
    }
    match (g.kind(n), ins.len()) {
        ("aten::t", 1) => match producer_kind(g, x) {
            Some((p, "aten::t")) => Some(g.inputs_of(p)[0]),
            _ => None,
        },
        ("aten::mul" | "aten::div", 2) | ("aten::add" | "aten::sub", 3) => {
            let c = g.constant_value(ins[1])?;
            let identity = if matches!(g.kind(n), "aten::mul" | "aten::div") { 1.0 } else { 0.0 };
            // Integer division is true division: `int_tensor / 1` is a float tensor.
            let float_only = g.kind(n) == "aten::div" && !xt.dtype.is_some_and(|d| d.is_floating_point());
            (number(&c)? == identity && keeps_dtype(xt, &c) && !float_only).then_some(x)
        }
        ("aten::contiguous", 2) => is_contiguous(xt).then_some(x),
        ("aten::to", 5) => {
            let dtype = match g.constant_value(ins[1])? {
                Constant::Int(code) => crate::types::dtype_from_code(code)?,
                _ => return None,
            };
            let copy = g.constant_value(ins[3])?;
            let format = g.constant_value(ins[4])?;
            let keeps_format = matches!(format, Constant::None | Constant::Int(1));
            (xt.dtype == Some(dtype) && copy == Constant::Bool(false) && keeps_format).then_some(x)
        }
        _ => None,
    }
}

/// `x.view(a).view(b)` → `x.view(b)` (and reshape): rewires the outer node's input.
fn chain(g: &mut Graph, n: NodeId) -> bool {
    let kind = g.kind(n).to_string();
    if !(kind == "aten::view" || kind == "aten::reshape") || g.inputs_of(n).len() != 2 {
        return false;
    }
    let inner = g.inputs_of(n)[0];
    let Some(p) = g.producer(inner) else { return false };
    if g.kind(p) != kind || g.inputs_of(p).len() != 2 {
        return false;
    }
    let x = g.inputs_of(p)[0];
    if kind == "aten::view" && !tensor_type(g, x).is_some_and(is_contiguous) {
        return false;
    }
    g.replace_input(n, 0, x);
    true
}

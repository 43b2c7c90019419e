//! The autograd fallback: the kernel of every operator without a derivative formula on the
//! autograd keys. Without an input that requires grad (or with grad mode off) it just runs
//! the operator below autograd. Otherwise a functional operator's floating outputs get a node
//! that fails in backward naming the operator, and an operator that writes its arguments is an
//! error right away (PyTorch's "not implemented" autograd kernels).

use aten::{IValue, OperatorEntry, Stack};
use c10::{DispatchKeySet, Error, ExcludeDispatchKeyGuard, Result};

use crate::node::{NodeRef, NotImplementedNode};

fn tensors_of(v: &IValue) -> Vec<&aten::Tensor> {
    match v {
        IValue::Tensor(t) => vec![t],
        IValue::TensorList(ts) => ts.iter().collect(),
        IValue::OptionalTensorList(ts) => ts.iter().flatten().collect(),
        _ => Vec::new(),
    }
}

/// The boxed fallback registered for the autograd keys.
pub(crate) fn autograd_fallback(op: &'static OperatorEntry, ks: DispatchKeySet, stack: &mut Stack) -> Result<()> {
    let schema = op.schema();
    let n_args = schema.as_ref().map_or(stack.len(), |s| s.arguments.len()).min(stack.len());
    let args = &stack[stack.len() - n_args..];
    let needs = crate::grad_mode::is_grad_enabled() && args.iter().flat_map(tensors_of).any(crate::meta::requires_grad);
    if !needs {
        let _below = ExcludeDispatchKeyGuard::below_ad_inplace_or_view();
        return op.redispatch_boxed(ks & DispatchKeySet::after_autograd_keyset(), stack);
    }
    if let Some(s) = schema.as_ref().filter(|s| s.is_out_fn()) {
        return Err(Error::invalid(
            op.name(),
            format!(
                "{}(): functions with out=... arguments don't support automatic differentiation, but one of the \
                 arguments requires grad.",
                s.name
            ),
        ));
    }
    if schema.as_ref().is_some_and(|s| s.is_mutable()) {
        for t in args.iter().flat_map(tensors_of) {
            crate::kernel_support::check_inplace(t)?;
        }
        return Err(Error::NotImplemented {
            op: op.name().to_string(),
            msg: format!(
                "{}: the derivative of this in-place or out= operator is not implemented, and one of its arguments \
                 requires grad",
                op.name()
            ),
        });
    }
    let inputs: Vec<aten::Tensor> = args.iter().flat_map(tensors_of).cloned().collect();
    let edges = crate::meta::collect_next_edges(&inputs.iter().map(Some).collect::<Vec<_>>());
    let node: NodeRef = std::sync::Arc::new(NotImplementedNode::new(op.name(), edges));
    {
        let _below = ExcludeDispatchKeyGuard::below_ad_inplace_or_view();
        op.redispatch_boxed(ks & DispatchKeySet::after_autograd_keyset(), stack)?;
    }
    let n_ret = schema.as_ref().map_or(0, |s| s.returns.len()).min(stack.len());
    let mut nr = 0u32;
    for v in &stack[stack.len() - n_ret..] {
        for t in tensors_of(v) {
            crate::kernel_support::set_history(t, &node, nr, true)?;
            nr += 1;
        }
    }
    Ok(())
}

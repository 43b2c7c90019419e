//! The gradient half of a case (its `grad` block). Autograd does not exist yet, so gradients are
//! not computed; [`check_grad`] validates the block against the call and reports "not run".
//!
//! When autograd lands, [`check_grad`] should: mark the [`GradPlan::inputs`] as requiring grad
//! (on fresh leaves), re-run the call, compute `d(sum_i <out_i, grad_output_i>)/d(input)` with
//! `autograd::grad` over the outputs selected by `grad.outputs`, and compare each input's
//! gradient with its `grad.expected` tensor using `compare::compare_tensors` and the block's
//! tolerances; an input that does not influence the outputs must have an all-zero gradient.

use aten::{IValue, Tensor};

use super::args::ResolvedArgs;
use super::cases::{ArgSpec, Case, GradSpec};

/// What a gradient check needs, derived from the case and its resolved arguments.
#[derive(Debug)]
#[expect(dead_code, reason = "read by the gradient check once autograd exists")]
pub struct GradPlan<'c> {
    /// The `grad` block.
    pub spec: &'c GradSpec,
    /// The differentiable inputs in FORMAT.md's order: every floating-point tensor argument,
    /// positional first, then keyword arguments in the file's order, a tensor list contributing
    /// each element, except tensors marked `"no_grad": true`.
    pub inputs: Vec<Tensor>,
}

impl<'c> GradPlan<'c> {
    /// The plan of a case with a `grad` block (`None` without one), or why the block does not fit
    /// the call: the expected gradients must match the differentiable inputs one to one, the
    /// upstream gradients the selected outputs, and the selected outputs must exist.
    pub fn new(case: &'c Case, args: &ResolvedArgs, n_outputs: usize) -> Option<Result<Self, String>> {
        let spec = case.grad.as_ref()?;
        let specs = case.args.iter().chain(case.kwargs.iter().map(|(_, a)| a));
        let values = args.positional.iter().chain(args.kwargs.iter().map(|(_, v)| v));
        let mut inputs = Vec::new();
        for (spec, value) in specs.zip(values) {
            if matches!(spec, ArgSpec::Tensor { no_grad: true, .. }) {
                continue;
            }
            match value {
                IValue::Tensor(t) => inputs.push(t.clone()),
                IValue::TensorList(ts) => inputs.extend(ts.iter().cloned()),
                IValue::OptionalTensorList(ts) => inputs.extend(ts.iter().flatten().cloned()),
                _ => {}
            }
        }
        inputs.retain(Tensor::is_floating_point);
        Some(Self::check(spec, inputs, n_outputs))
    }

    fn check(spec: &'c GradSpec, inputs: Vec<Tensor>, n_outputs: usize) -> Result<Self, String> {
        if spec.expected.len() != inputs.len() {
            return Err(format!(
                "the grad block lists {} expected gradients, but the call has {} differentiable inputs",
                spec.expected.len(),
                inputs.len()
            ));
        }
        if spec.grad_outputs.len() != spec.outputs.len() {
            return Err(format!(
                "the grad block has {} grad_outputs for {} differentiated outputs",
                spec.grad_outputs.len(),
                spec.outputs.len()
            ));
        }
        if let Some(i) = spec.outputs.iter().find(|&&i| i >= n_outputs) {
            return Err(format!("the grad block differentiates output {i}, but the call returned {n_outputs}"));
        }
        Ok(GradPlan { spec, inputs })
    }
}

/// Checks the gradients of a case whose call succeeded with `n_outputs` returned values:
/// `None` when there is nothing to check or the check cannot run (no autograd yet),
/// `Some(Err(reason))` when it fails, `Some(Ok(()))` when it passes.
pub fn check_grad(case: &Case, args: &ResolvedArgs, n_outputs: usize) -> Option<Result<(), String>> {
    match GradPlan::new(case, args, n_outputs)? {
        Err(e) => Some(Err(e)),
        // Autograd does not exist yet: see the module documentation for what goes here.
        Ok(_plan) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(args: Vec<ArgSpec>, expected: usize) -> Case {
        let json = serde_json::json!({
            "id": "t", "op": "x", "args": [],
            "grad": {"outputs": [0], "grad_outputs": ["g"], "expected": vec!["e"; expected],
                     "rtol": 0.0, "atol": 0.0}
        });
        let mut c: Case = serde_json::from_value(json).unwrap();
        c.args = args;
        c
    }

    #[test]
    fn differentiable_inputs_follow_the_format() {
        let f = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
        let i = Tensor::from_vec(vec![1i64], &[1]).unwrap();
        let args = ResolvedArgs {
            positional: vec![
                IValue::Tensor(f.clone()),
                IValue::Tensor(f.clone()),
                IValue::Tensor(i.clone()),
                IValue::TensorList(vec![f.clone(), i, f.clone()]),
            ],
            kwargs: vec![("w".into(), IValue::Tensor(f))],
        };
        let mut specs = vec![
            ArgSpec::tensor("a"),
            ArgSpec::Tensor { key: "b".into(), noncontig: false, no_grad: true },
            ArgSpec::tensor("c"),
            ArgSpec::Tensors(vec!["d".into(), "e".into(), "f".into()]),
        ];
        let mut c = case(specs.clone(), 4);
        c.kwargs = vec![("w".into(), ArgSpec::tensor("w"))];
        assert_eq!(check_grad(&c, &args, 1), None);
        let e = check_grad(&c, &args, 0).unwrap().unwrap_err();
        assert!(e.contains("differentiates output 0"), "{e}");

        specs[1] = ArgSpec::tensor("b");
        let mut c = case(specs, 4);
        c.kwargs = vec![("w".into(), ArgSpec::tensor("w"))];
        let e = check_grad(&c, &args, 1).unwrap().unwrap_err();
        assert!(e.contains("4 expected gradients, but the call has 5"), "{e}");

        let mut no_grad = case(vec![], 0);
        no_grad.grad = None;
        assert_eq!(check_grad(&no_grad, &ResolvedArgs::default(), 1), None);
    }
}

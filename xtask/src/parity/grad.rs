//! The gradient half of a case (its `grad` block): [`check_grad`] marks the differentiable
//! inputs ([`GradPlan::inputs`]) as requiring grad, re-runs the call through the dispatcher,
//! computes `d(sum_i <out_i, grad_output_i>)/d(input)` with `autograd::grad` over the outputs
//! selected by `grad.outputs`, and compares each input's gradient with its `grad.expected`
//! tensor within the block's tolerances; an input the outputs do not depend on must have an
//! all-zero expected gradient.

use aten::{IValue, Tensor};
use autograd::TensorAutograd;

use super::args::{fill_stack, ResolvedArgs};
use super::cases::{ArgSpec, Case, GradSpec};
use super::compare::{compare_tensors, flatten_returns, Tolerance};
use super::store::TensorStore;

/// What a gradient check needs, derived from the case and its resolved arguments.
#[derive(Debug)]
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
        inputs.retain(|t| t.is_floating_point() && !t.is_wrapped_number());
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
/// `None` when there is nothing to check, `Some(Err(reason))` when it fails, `Some(Ok(()))`
/// when it passes. Without a `store` only the block is validated against the call.
pub fn check_grad(
    case: &Case,
    args: &ResolvedArgs,
    n_outputs: usize,
    store: Option<&TensorStore<'_>>,
) -> Option<Result<(), GradError>> {
    match GradPlan::new(case, args, n_outputs)? {
        Err(e) => Some(Err(GradError::Check(e))),
        Ok(plan) => store.map(|s| run_plan(case, args, &plan, s)),
    }
}

/// Why a gradient check failed: an operator call (forward or backward) returned an error, or
/// the check itself failed.
#[derive(Debug, Clone, PartialEq)]
pub enum GradError {
    /// The call's error, kept typed so a device run can tell a missing kernel from a bug.
    Call(c10::Error),
    /// A mismatch or a malformed case.
    Check(String),
}

impl From<String> for GradError {
    fn from(s: String) -> Self {
        GradError::Check(s)
    }
}

impl std::fmt::Display for GradError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GradError::Call(e) => write!(f, "{e}"),
            GradError::Check(s) => f.write_str(s),
        }
    }
}

fn run_plan(case: &Case, args: &ResolvedArgs, plan: &GradPlan<'_>, store: &TensorStore<'_>) -> Result<(), GradError> {
    // Fresh leaves sharing the inputs' data, so nothing recorded by the value check leaks in.
    let mut leaves: Vec<(Tensor, Tensor)> = Vec::new();
    for t in &plan.inputs {
        if !leaves.iter().any(|(orig, _)| orig.is_same(t)) {
            let l = t.detach().requires_grad_(true).map_err(|e| e.to_string())?;
            leaves.push((t.clone(), l));
        }
    }
    let swap = |v: &IValue| -> IValue {
        let sub = |t: &Tensor| leaves.iter().find(|(o, _)| o.is_same(t)).map_or_else(|| t.clone(), |(_, l)| l.clone());
        match v {
            IValue::Tensor(t) => IValue::Tensor(sub(t)),
            IValue::TensorList(ts) => IValue::TensorList(ts.iter().map(sub).collect()),
            IValue::OptionalTensorList(ts) => {
                IValue::OptionalTensorList(ts.iter().map(|t| t.as_ref().map(sub)).collect())
            }
            other => other.clone(),
        }
    };
    let swapped = ResolvedArgs {
        positional: args.positional.iter().map(swap).collect(),
        kwargs: args.kwargs.iter().map(|(k, v)| (k.clone(), swap(v))).collect(),
    };
    let returned = match &case.graph {
        Some(g) => {
            let load = |key: &str, noncontig: bool| store.tensor(key, noncontig);
            super::graph::run(g, &swapped.positional, &load)?
        }
        None => {
            let (op, schema) = aten::dispatcher().find_schema(&case.op).map_err(|e| e.to_string())?;
            let mut stack = fill_stack(&schema, swapped)?;
            op.call_boxed(&mut stack).map_err(GradError::Call)?;
            flatten_returns(stack)
        }
    };
    let mut outs = Vec::new();
    let mut gos = Vec::new();
    for (&i, key) in plan.spec.outputs.iter().zip(&plan.spec.grad_outputs) {
        let IValue::Tensor(t) = &returned[i] else {
            return Err(format!("output {i} is not a tensor").into());
        };
        if !t.requires_grad() {
            continue;
        }
        outs.push(t.clone());
        // The output's gradient lives where the output does.
        let g = store.tensor(key, false)?.to_device(t.device()).map_err(GradError::Call)?;
        let g = if plan.spec.gauge_outputs.contains(&i) {
            aten::ops::mul(&g, &t.detach()).map_err(GradError::Call)?
        } else {
            g
        };
        gos.push(Some(g));
    }
    let inputs: Vec<Tensor> = plan
        .inputs
        .iter()
        .map(|t| leaves.iter().find(|(o, _)| o.is_same(t)).map(|(_, l)| l.clone()).expect("every input has a leaf"))
        .collect();
    let grads = if outs.is_empty() {
        vec![None; inputs.len()]
    } else {
        autograd::grad(&outs, &inputs, &gos, None, false, true).map_err(GradError::Call)?
    };
    let tol = Tolerance { rtol: plan.spec.rtol, atol: plan.spec.atol };
    for (j, (g, key)) in grads.iter().zip(&plan.spec.expected).enumerate() {
        let expected = store.tensor(key, false)?;
        if let Some(g) = g.as_ref().filter(|g| g.device() != inputs[j].device()) {
            // Note [Outputs on the device] in parity.rs: gradients live where their inputs do.
            return Err(
                format!("gradient of input {j} is on {}, the input on {}", g.device(), inputs[j].device()).into()
            );
        }
        let ours = match g {
            Some(g) => g.cpu().map_err(GradError::Call)?,
            None => aten::ops::zeros_like(&expected, None, None, None, None, None).map_err(|e| e.to_string())?,
        };
        compare_tensors(&ours, &expected, tol).map_err(|e| format!("gradient of input {j}: {e}"))?;
    }
    Ok(())
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
        assert_eq!(check_grad(&c, &args, 1, None), None);
        let e = check_grad(&c, &args, 0, None).unwrap().unwrap_err().to_string();
        assert!(e.contains("differentiates output 0"), "{e}");

        specs[1] = ArgSpec::tensor("b");
        let mut c = case(specs, 4);
        c.kwargs = vec![("w".into(), ArgSpec::tensor("w"))];
        let e = check_grad(&c, &args, 1, None).unwrap().unwrap_err().to_string();
        assert!(e.contains("4 expected gradients, but the call has 5"), "{e}");

        let mut no_grad = case(vec![], 0);
        no_grad.grad = None;
        assert_eq!(check_grad(&no_grad, &ResolvedArgs::default(), 1, None), None);
    }
}

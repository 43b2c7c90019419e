//! `gradcheck` and `gradgradcheck`: compare the gradients autograd computes with finite
//! differences, in f64, with PyTorch's default tolerances.
//!
//! The analytical Jacobian is built row by row with `grad` (one backward per output element);
//! the numerical one column by column with central differences (two forward calls per input
//! element). They agree when `|analytical - numerical| <= atol + rtol * |numerical|` everywhere.
//!
//! Note [Gradcheck with sparse tensors]: a sparse COO input is coalesced, and its Jacobian
//! columns are its stored values (PyTorch's gradcheck perturbs a sparse input's values too):
//! the numerical column perturbs one stored element and rebuilds the tensor on the same
//! indices, the analytical one reads the gradient (sparse or dense) at the stored positions. A
//! sparse output is compared in its dense form (`to_dense`, through autograd).

use aten::Tensor;
use c10::{Error, Result, ScalarType};

use crate::TensorAutograd;

/// Tolerances and step (PyTorch's defaults: `eps=1e-6, atol=1e-5, rtol=1e-3`).
#[derive(Clone, Copy, Debug)]
pub struct GradcheckOptions {
    /// Finite-difference step.
    pub eps: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance.
    pub rtol: f64,
}

impl Default for GradcheckOptions {
    fn default() -> Self {
        GradcheckOptions { eps: 1e-6, atol: 1e-5, rtol: 1e-3 }
    }
}

/// The outputs of `f`, sparse ones made dense (Note [Gradcheck with sparse tensors]).
fn dense_outputs(f: &dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    f(inputs)?.into_iter().map(|o| if o.is_sparse() { aten::ops::to_dense(&o, None, None) } else { Ok(o) }).collect()
}

/// The outputs of `f`, flattened to f64 values. Grad mode stays on: `f` may itself
/// differentiate (as the function `gradgradcheck` checks does).
fn flat_outputs(f: &dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>, inputs: &[Tensor]) -> Result<Vec<Vec<f64>>> {
    dense_outputs(f, inputs)?.iter().map(|o| o.to_vec::<f64>()).collect()
}

/// The values a Jacobian column stands for: a strided tensor's elements, a sparse one's stored
/// values (of a coalesced tensor).
fn column_values(t: &Tensor) -> Result<Vec<f64>> {
    if t.is_sparse() {
        aten::ops::_values(t)?.to_vec::<f64>()
    } else {
        t.to_vec::<f64>()
    }
}

/// `like` with `values` in place of its own, a leaf that requires grad.
fn with_values(like: &Tensor, values: Vec<f64>) -> Result<Tensor> {
    if like.is_sparse() {
        let vals = aten::ops::_values(like)?;
        let v = Tensor::from_vec(values, vals.sizes())?;
        let t = aten::ops::sparse_coo_tensor(
            &aten::ops::_indices(like)?,
            &v,
            like.sizes(),
            None,
            None,
            None,
            None,
            Some(true),
        )?;
        return t.requires_grad_(true);
    }
    Tensor::from_vec(values, like.sizes())?.requires_grad_(true)
}

/// The analytical gradient `g` for input `t` as a Jacobian row: at `t`'s stored positions when
/// `t` is sparse (`g` sparse or dense), every element otherwise.
fn gradient_values(g: &Tensor, t: &Tensor) -> Result<Vec<f64>> {
    if t.is_sparse() {
        let dense = if g.is_sparse() { aten::ops::to_dense(g, None, None)? } else { g.clone() };
        return aten::ops::_values(&aten::ops::sparse_mask(&dense, t)?)?.to_vec::<f64>();
    }
    if g.is_sparse() {
        return aten::ops::to_dense(g, None, None)?.to_vec::<f64>();
    }
    g.to_vec::<f64>()
}

/// Checks the gradients of `f` at `inputs` (every input that requires grad must be f64) against
/// finite differences. `Ok(())` when they agree; otherwise an error naming the output, the input
/// and both Jacobians.
pub fn gradcheck(
    f: &dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>,
    inputs: &[Tensor],
    opts: GradcheckOptions,
) -> Result<()> {
    for (i, t) in inputs.iter().enumerate() {
        if t.requires_grad() && t.dtype() != ScalarType::F64 {
            return Err(Error::invalid(
                "gradcheck",
                format!("input {i} requires grad but is {}: gradcheck needs double precision", t.dtype()),
            ));
        }
    }
    // Sparse inputs coalesced, so that each stored value is one position.
    let inputs: Vec<Tensor> = inputs
        .iter()
        .map(|t| {
            if !t.is_sparse() {
                return Ok(t.clone());
            }
            let c = aten::ops::coalesce(&t.detach())?;
            if t.requires_grad() {
                with_values(&c, column_values(&c)?)
            } else {
                Ok(c)
            }
        })
        .collect::<Result<_>>()?;
    let inputs = inputs.as_slice();
    let outputs = dense_outputs(f, inputs)?;
    let diff_inputs: Vec<usize> = (0..inputs.len()).filter(|&i| inputs[i].requires_grad()).collect();
    if diff_inputs.is_empty() {
        return Err(Error::invalid("gradcheck", "gradcheck expects at least one input tensor to require gradient"));
    }
    // Numerical Jacobians: numerical[o][j][k][m] = d out_o[m] / d in_j[k].
    let mut numerical: Vec<Vec<Vec<Vec<f64>>>> = vec![Vec::new(); outputs.len()];
    for &j in &diff_inputs {
        let base = column_values(&inputs[j])?;
        let mut cols: Vec<Vec<Vec<f64>>> = vec![Vec::with_capacity(base.len()); outputs.len()];
        for k in 0..base.len() {
            let eval = |delta: f64| -> Result<Vec<Vec<f64>>> {
                let mut v = base.clone();
                v[k] += delta;
                let mut args = inputs.to_vec();
                args[j] = with_values(&inputs[j], v)?;
                flat_outputs(f, &args)
            };
            let plus = eval(opts.eps)?;
            let minus = eval(-opts.eps)?;
            for (o, (p, m)) in plus.iter().zip(&minus).enumerate() {
                cols[o].push(p.iter().zip(m).map(|(a, b)| (a - b) / (2.0 * opts.eps)).collect());
            }
        }
        for (o, c) in cols.into_iter().enumerate() {
            numerical[o].push(c);
        }
    }
    // Analytical Jacobians, one backward per output element.
    let diff_tensors: Vec<Tensor> = diff_inputs.iter().map(|&i| inputs[i].clone()).collect();
    for (o, out) in outputs.iter().enumerate() {
        if !out.dtype().is_floating_point() || !out.requires_grad() {
            let all_zero = numerical[o].iter().flatten().flatten().all(|&x| x.abs() <= opts.atol);
            if all_zero {
                continue;
            }
            return Err(Error::invalid(
                "gradcheck",
                format!("output {o} does not require grad but its numerical gradient is not zero"),
            ));
        }
        let n = out.numel() as usize;
        for m in 0..n {
            let mut onehot = vec![0.0f64; n];
            onehot[m] = 1.0;
            let go = Tensor::from_vec(onehot, out.sizes())?.to(out.dtype()).call()?;
            let gs =
                crate::engine::grad(std::slice::from_ref(out), &diff_tensors, &[Some(go)], Some(true), false, true)?;
            for (jj, g) in gs.iter().enumerate() {
                let a: Vec<f64> = match g {
                    Some(g) => gradient_values(g, &diff_tensors[jj])?,
                    None => vec![0.0; numerical[o][jj].len()],
                };
                for (k, &av) in a.iter().enumerate() {
                    let nv = numerical[o][jj][k][m];
                    if (av - nv).abs() > opts.atol + opts.rtol * nv.abs() {
                        return Err(Error::invalid(
                            "gradcheck",
                            format!(
                                "Jacobian mismatch for output {o} with respect to input {}: d out[{m}] / d in[{k}] is \
                                 {av} (analytical) but {nv} (numerical)",
                                diff_inputs[jj]
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Checks second derivatives: `gradcheck` of the function that maps `(inputs, grad_outputs)` to
/// the gradients of `f` (computed with `create_graph`), with seeded random `grad_outputs`.
pub fn gradgradcheck(
    f: &dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>,
    inputs: &[Tensor],
    opts: GradcheckOptions,
) -> Result<()> {
    let outputs = f(inputs)?;
    let gen = aten::Generator::new(c10::Device::CPU);
    gen.manual_seed(1234);
    let mut grad_outputs = Vec::new();
    for o in &outputs {
        if o.dtype().is_floating_point() && o.requires_grad() {
            let g = aten::ops::randn_generator(o.sizes(), Some(&gen), Some(ScalarType::F64), None, None, None)?;
            grad_outputs.push(g.requires_grad_(true)?);
        }
    }
    let n_in = inputs.len();
    let diff_idx: Vec<usize> = (0..n_in).filter(|&i| inputs[i].requires_grad()).collect();
    let gg = move |args: &[Tensor]| -> Result<Vec<Tensor>> {
        let (ins, gos) = args.split_at(n_in);
        let outs = f(ins)?;
        let diff_outs: Vec<Tensor> =
            outs.into_iter().filter(|o| o.dtype().is_floating_point() && o.requires_grad()).collect();
        let targets: Vec<Tensor> = diff_idx.iter().map(|&i| ins[i].clone()).collect();
        let gos: Vec<Option<Tensor>> = gos.iter().cloned().map(Some).collect();
        let gs = crate::engine::grad(&diff_outs, &targets, &gos, Some(true), true, true)?;
        gs.into_iter()
            .zip(&targets)
            .map(|(g, t)| match g {
                Some(g) => Ok(g),
                None => aten::ops::zeros_like(t, None, None, None, None, None),
            })
            .collect()
    };
    let mut all = inputs.to_vec();
    all.extend(grad_outputs);
    gradcheck(&gg, &all, opts)
}

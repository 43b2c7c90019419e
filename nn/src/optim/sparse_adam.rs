//! `torch.optim.SparseAdam`: Adam for sparse gradients (`Embedding(sparse=true)`), which moves
//! the moments and the parameter only at the positions the gradient holds.

use aten::{ops, Tensor};
use c10::{Error, Result, Scalar};

use crate::module::{Parameter, StateDict};
use crate::optim::{
    deep_copy, float, forward_to_param_groups, param_group_methods, py_float, set_bool, set_f64, signed_grad,
    step_tensor, with_values, zeros_like, GroupOptions, Optimizer, OptionValue, ParamGroups, ParamState, StateLoader,
};

/// The options of [`SparseAdam`], with PyTorch's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SparseAdamOptions {
    /// `lr` (default 1e-3).
    pub lr: f64,
    /// `betas` (default (0.9, 0.999)).
    pub betas: (f64, f64),
    /// `eps` (default 1e-8).
    pub eps: f64,
    /// `maximize` (default false).
    pub maximize: bool,
}

/// A learning rate alone: `SparseAdam::new(params, 0.01)` is PyTorch's `SparseAdam(params, lr=0.01)`.
impl From<f64> for SparseAdamOptions {
    fn from(lr: f64) -> SparseAdamOptions {
        SparseAdamOptions { lr, ..Default::default() }
    }
}

impl Default for SparseAdamOptions {
    fn default() -> SparseAdamOptions {
        SparseAdamOptions { lr: 1e-3, betas: (0.9, 0.999), eps: 1e-8, maximize: false }
    }
}

impl SparseAdamOptions {
    /// Sets `lr`.
    pub fn lr(mut self, lr: f64) -> Self {
        self.lr = lr;
        self
    }
    /// Sets `betas`.
    pub fn betas(mut self, beta1: f64, beta2: f64) -> Self {
        self.betas = (beta1, beta2);
        self
    }
    /// Sets `eps`.
    pub fn eps(mut self, eps: f64) -> Self {
        self.eps = eps;
        self
    }
    /// Sets `maximize`.
    pub fn maximize(mut self, maximize: bool) -> Self {
        self.maximize = maximize;
        self
    }
}

impl GroupOptions for SparseAdamOptions {
    const OPTIMIZER: &'static str = "SparseAdam";

    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr
    }
    fn momentum(&self) -> Option<f64> {
        Some(self.betas.0)
    }
    fn set_momentum(&mut self, beta1: f64) -> bool {
        self.betas.0 = beta1;
        true
    }
    /// PyTorch's checks in `SparseAdam.__init__`, in its order (a zero rate or epsilon is
    /// refused here, unlike Adam).
    fn validate(&self) -> Result<()> {
        let op = "SparseAdam";
        if self.lr.is_nan() || self.lr <= 0.0 {
            return Err(Error::invalid(op, format!("Invalid learning rate: {}", py_float(self.lr))));
        }
        if self.eps.is_nan() || self.eps <= 0.0 {
            return Err(Error::invalid(op, format!("Invalid epsilon value: {}", py_float(self.eps))));
        }
        for (i, b) in [self.betas.0, self.betas.1].into_iter().enumerate() {
            if !(0.0..1.0).contains(&b) {
                return Err(Error::invalid(op, format!("Invalid beta parameter at index {i}: {}", py_float(b))));
            }
        }
        Ok(())
    }
    fn to_values(&self) -> Vec<(&'static str, OptionValue)> {
        vec![
            ("lr", OptionValue::Float(self.lr)),
            ("betas", OptionValue::Pair(self.betas.0, self.betas.1)),
            ("eps", OptionValue::Float(self.eps)),
            ("maximize", OptionValue::Bool(self.maximize)),
        ]
    }
    fn set_value(&mut self, name: &str, value: OptionValue) -> Result<bool> {
        match name {
            "lr" => set_f64(&mut self.lr, name, value),
            "betas" => {
                self.betas = value.as_pair(name)?;
                Ok(true)
            }
            "eps" => set_f64(&mut self.eps, name, value),
            "maximize" => set_bool(&mut self.maximize, name, value),
            _ => Ok(false),
        }
    }
}

/// SparseAdam's per-parameter state (dense moments, as PyTorch's).
pub(crate) struct SparseAdamState {
    step: f64,
    exp_avg: Tensor,
    exp_avg_sq: Tensor,
}

impl ParamState for SparseAdamState {
    fn save(&self, out: &mut StateDict) -> Result<()> {
        out.insert("step", step_tensor(self.step));
        out.insert("exp_avg", deep_copy(&self.exp_avg)?);
        out.insert("exp_avg_sq", deep_copy(&self.exp_avg_sq)?);
        Ok(())
    }
    fn load(loader: &StateLoader<'_>) -> Result<SparseAdamState> {
        Ok(SparseAdamState {
            step: loader.step()?,
            exp_avg: loader.tensor("exp_avg")?,
            exp_avg_sq: loader.tensor("exp_avg_sq")?,
        })
    }
}

/// One SparseAdam step for one parameter (PyTorch's `F.sparse_adam`): the gradient coalesced;
/// at its positions `m += (1 - beta1) (g - m)`, `v += (1 - beta2) (g^2 - v)`, and
/// `p -= lr sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps)`; elsewhere nothing moves.
fn sparse_adam_update(
    o: &SparseAdamOptions,
    param: &Tensor,
    grad: &Tensor,
    state: &mut Option<SparseAdamState>,
) -> Result<()> {
    if grad.layout() == c10::Layout::Strided {
        return Err(Error::invalid(
            "SparseAdam",
            "SparseAdam does not support dense gradients, please consider Adam instead",
        ));
    }
    let s = match state {
        Some(s) => s,
        None => {
            state.insert(SparseAdamState { step: 0.0, exp_avg: zeros_like(param)?, exp_avg_sq: zeros_like(param)? })
        }
    };
    s.step += 1.0;
    let grad = ops::coalesce(&signed_grad(grad, o.maximize)?)?;
    let values = ops::_values(&grad)?;
    if values.numel() == 0 {
        return Ok(());
    }
    let make = |v: &Tensor| with_values(&grad, v);
    let (beta1, beta2) = o.betas;
    let one = Scalar::Int(1);
    let old_m = ops::_values(&ops::sparse_mask(&s.exp_avg, &grad)?)?;
    let m_update = ops::mul_scalar(&ops::sub(&values, &old_m, one)?, float(1.0 - beta1))?;
    ops::add_(&s.exp_avg, &make(&m_update)?, one)?;
    let old_v = ops::_values(&ops::sparse_mask(&s.exp_avg_sq, &grad)?)?;
    let sq = ops::pow_tensor_scalar(&values, float(2.0))?;
    let v_update = ops::mul_scalar(&ops::sub(&sq, &old_v, one)?, float(1.0 - beta2))?;
    ops::add_(&s.exp_avg_sq, &make(&v_update)?, one)?;
    let numer = ops::add(&m_update, &old_m, one)?;
    let denom = ops::add_scalar(&ops::sqrt(&ops::add(&v_update, &old_v, one)?)?, float(o.eps), one)?;
    let bias_correction1 = 1.0 - beta1.powf(s.step);
    let bias_correction2 = 1.0 - beta2.powf(s.step);
    let step_size = o.lr * bias_correction2.sqrt() / bias_correction1;
    let upd = ops::mul_scalar(&ops::div(&numer, &denom)?, float(-step_size))?;
    ops::add_(param, &make(&upd)?, one)?;
    Ok(())
}

/// `torch.optim.SparseAdam`: see [`sparse_adam_update`]. Dense gradients are refused with
/// PyTorch's message, as are sparse parameters.
pub struct SparseAdam {
    groups: ParamGroups<SparseAdamOptions, SparseAdamState>,
}

impl SparseAdam {
    /// `SparseAdam(params, **options)`: one group.
    pub fn new(
        params: impl IntoIterator<Item = Parameter>,
        options: impl Into<SparseAdamOptions>,
    ) -> Result<SparseAdam> {
        SparseAdam::from_param_groups(ParamGroups::single(params, options.into())?)
    }

    param_group_methods!(SparseAdamOptions);

    fn from_param_groups(groups: ParamGroups<SparseAdamOptions, SparseAdamState>) -> Result<SparseAdam> {
        let mut opt = SparseAdam { groups };
        opt.after_add_param_group()?;
        Ok(opt)
    }

    /// PyTorch's constructor check: every parameter strided.
    fn after_add_param_group(&mut self) -> Result<()> {
        // [group, index] of each sparse parameter, as PyTorch lists them.
        let sparse: Vec<[usize; 2]> = (self.groups.groups().iter().enumerate())
            .flat_map(|(g, group)| group.params().iter().enumerate().map(move |(i, p)| (g, i, p)))
            .filter(|(_, _, p)| p.tensor().layout() != c10::Layout::Strided)
            .map(|(g, i, _)| [g, i])
            .collect();
        if !sparse.is_empty() {
            return Err(Error::invalid(
                "SparseAdam",
                format!("Sparse params at indices {sparse:?}: SparseAdam requires dense parameter tensors"),
            ));
        }
        Ok(())
    }
}

impl Optimizer for SparseAdam {
    fn name(&self) -> &'static str {
        "SparseAdam"
    }

    fn step(&mut self) -> Result<()> {
        let _range = super::step_range(self.name());
        self.groups.update(sparse_adam_update)
    }

    forward_to_param_groups!();
}

//! Optimizers, learning-rate schedulers and gradient clipping (`torch.optim`,
//! `torch.optim.lr_scheduler`, `torch.nn.utils.clip_grad_*`).
//!
//! Every optimizer keeps its parameters in [`ParamGroup`]s, each with its own options (its own
//! `lr`, `momentum`, ...), and implements the object-safe [`Optimizer`] trait, which is what the
//! [`lr_scheduler`]s drive. The updates follow PyTorch's single-tensor ("for-loop")
//! implementations operation by operation, so results agree with PyTorch to rounding; SGD with
//! momentum and Adam/AdamW run as one fused loop per dense f32/f64 parameter (Note [Fused
//! updates] in `fused.rs`).
//!
//! ```
//! use autograd::TensorAutograd;
//! use nn::optim::{Optimizer, SGDOptions, SGD};
//!
//! let w = nn::Parameter::new(aten::Tensor::from_slice(&[1.0f32, -2.0])).unwrap();
//! let mut opt = SGD::new([w.clone()], SGDOptions::default().lr(0.1).momentum(0.9)).unwrap();
//! w.set_grad(Some(aten::Tensor::from_slice(&[0.5f32, 0.5]))).unwrap();
//! opt.step().unwrap();
//! assert_eq!(w.to_vec::<f32>().unwrap(), [0.95, -2.05]);
//! opt.zero_grad(true).unwrap();
//! assert!(w.grad().is_none());
//! ```

use std::collections::BTreeMap;
use std::fmt;

use aten::{ops, Tensor};
use autograd::TensorAutograd;
use c10::{Error, Result, Scalar, ScalarType};

use crate::module::{Parameter, StateDict};

mod adagrad;
mod adam;
mod clip;
mod fused;
pub mod lr_scheduler;
mod rmsprop;
mod sgd;
mod sparse_adam;

pub use adagrad::{Adagrad, AdagradOptions};
pub use adam::{Adam, AdamOptions, AdamW, AdamWOptions};
pub use clip::{clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm};
pub use lr_scheduler::{
    AnnealStrategy, CosineAnnealingLR, ExponentialLR, LRScheduler, LambdaLR, LinearLR, MultiStepLR, OneCycleLR,
    OneCycleOptions, PlateauMode, PlateauOptions, ReduceLROnPlateau, SchedulerState, SequentialLR, StepLR,
    ThresholdMode,
};
pub use rmsprop::{RMSprop, RMSpropOptions};
pub use sgd::{SGDOptions, SGD};
pub use sparse_adam::{SparseAdam, SparseAdamOptions};

/// The profiling range of an optimizer step, named as PyTorch names it (`Optimizer.step#SGD.step`).
pub(crate) fn step_range(name: &'static str) -> c10::record_function::RecordFunction {
    use c10::record_function::{RecordFunction, RecordScope};
    RecordFunction::start_named(RecordScope::Optimizer, || format!("Optimizer.step#{name}.step"))
}

/// The profiling range of `zero_grad` (`Optimizer.zero_grad#SGD.zero_grad`, PyTorch's name).
pub(crate) fn zero_grad_range(name: &'static str) -> c10::record_function::RecordFunction {
    use c10::record_function::{RecordFunction, RecordScope};
    RecordFunction::start_named(RecordScope::Optimizer, || format!("Optimizer.zero_grad#{name}.zero_grad"))
}

/// `optimizer.zero_grad(set_to_none)` over `params`: clears every `.grad` (`true`) or zeroes it in
/// place (`false`). For optimizers that wrap others (`ZeroRedundancyOptimizer`).
pub fn zero_grad_params<'a>(params: impl IntoIterator<Item = &'a Parameter>, set_to_none: bool) -> Result<()> {
    let _no_grad = autograd::no_grad();
    for p in params {
        if set_to_none {
            p.set_grad(None)?;
        } else if let Some(g) = p.grad() {
            g.detach().zero_()?;
        }
    }
    Ok(())
}

/// What every optimizer offers: the update, gradient clearing, its parameter groups' learning
/// rates (what [`lr_scheduler`]s change) and its state as a [`OptimizerStateDict`].
///
/// Group indices passed to the accessors must be below [`num_param_groups`]; like slice
/// indexing, the accessors panic otherwise.
///
/// [`num_param_groups`]: Optimizer::num_param_groups
pub trait Optimizer {
    /// PyTorch's class name (`"SGD"`, `"Adam"`, ...), used in error messages.
    fn name(&self) -> &'static str;

    /// `optimizer.step()`: updates every parameter that has a `.grad`; parameters whose
    /// `.grad` is `None` are skipped (their state, step counts included, is untouched). Runs
    /// without recording autograd history.
    fn step(&mut self) -> Result<()>;

    /// `optimizer.zero_grad(set_to_none)`: clears every parameter's `.grad` (`true`, PyTorch's
    /// default) or fills it with zeros (`false`).
    fn zero_grad(&self, set_to_none: bool) -> Result<()>;

    /// Number of parameter groups (`len(optimizer.param_groups)`).
    fn num_param_groups(&self) -> usize;

    /// The parameters of group `group`.
    fn group_params(&self, group: usize) -> &[Parameter];

    /// `param_groups[group]["lr"]`.
    fn lr(&self, group: usize) -> f64;

    /// Sets `param_groups[group]["lr"]` (what schedulers do; not validated).
    fn set_lr(&mut self, group: usize, lr: f64);

    /// `param_groups[group]["initial_lr"]`: recorded by the first scheduler attached to the
    /// optimizer; `None` before.
    fn initial_lr(&self, group: usize) -> Option<f64>;

    /// Sets or clears `param_groups[group]["initial_lr"]`.
    fn set_initial_lr(&mut self, group: usize, lr: Option<f64>);

    /// The group's momentum as `OneCycleLR` cycles it: `momentum` for SGD and RMSprop, `beta1`
    /// for Adam and AdamW, `None` for optimizers without one (Adagrad).
    fn momentum(&self, group: usize) -> Option<f64>;

    /// Sets the value [`momentum`](Optimizer::momentum) reads; an error for optimizers without
    /// one.
    fn set_momentum(&mut self, group: usize, momentum: f64) -> Result<()>;

    /// `optimizer.state_dict()`: the per-parameter state (deep copies) and each group's
    /// options, parameters numbered in group order as in PyTorch.
    fn state_dict(&self) -> Result<OptimizerStateDict>;

    /// `optimizer.load_state_dict(state)`: takes the saved options and per-parameter state.
    /// The number of groups and of parameters per group must match, and each state tensor must
    /// have its parameter's shape; tensors are copied to the parameter's dtype and device (step
    /// counts excepted). On error the optimizer is unchanged.
    fn load_state_dict(&mut self, state: &OptimizerStateDict) -> Result<()>;
}

/// A group of parameters sharing one set of options (one entry of PyTorch's
/// `optimizer.param_groups`).
///
/// Groups with different options are built with struct-update syntax, PyTorch's per-group
/// overrides:
///
/// ```
/// use nn::optim::{Optimizer, ParamGroup, SGDOptions, SGD};
/// let p = |v: f32| nn::Parameter::new(aten::Tensor::from_slice(&[v])).unwrap();
/// let base = SGDOptions::default().lr(0.1).momentum(0.9);
/// let opt = SGD::with_groups(vec![
///     ParamGroup::new([p(1.0)], base),
///     ParamGroup::new([p(2.0)], SGDOptions { lr: 0.01, ..base }),
/// ])
/// .unwrap();
/// assert_eq!((opt.lr(0), opt.lr(1)), (0.1, 0.01));
/// ```
#[derive(Clone)]
pub struct ParamGroup<O> {
    params: Vec<Parameter>,
    /// The group's options.
    pub options: O,
    initial_lr: Option<f64>,
}

impl<O> ParamGroup<O> {
    /// A group of `params` with `options`.
    pub fn new(params: impl IntoIterator<Item = Parameter>, options: O) -> ParamGroup<O> {
        ParamGroup { params: params.into_iter().collect(), options, initial_lr: None }
    }

    /// The group's parameters.
    pub fn params(&self) -> &[Parameter] {
        &self.params
    }

    /// `group["initial_lr"]`, set by the first scheduler attached to the optimizer.
    pub fn initial_lr(&self) -> Option<f64> {
        self.initial_lr
    }
}

impl<O: fmt::Debug> fmt::Debug for ParamGroup<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shapes: Vec<&[i64]> = self.params.iter().map(|p| p.sizes()).collect();
        f.debug_struct("ParamGroup")
            .field("params", &shapes)
            .field("options", &self.options)
            .field("initial_lr", &self.initial_lr)
            .finish()
    }
}

/// The per-group options of one optimizer (`SGDOptions`, `AdamOptions`, ...): what a
/// [`ParamGroup`] carries, and how it appears in a state dict.
pub trait GroupOptions: Clone + fmt::Debug {
    /// PyTorch's class name of the optimizer these options belong to.
    const OPTIMIZER: &'static str;

    /// The learning rate.
    fn lr(&self) -> f64;

    /// Sets the learning rate.
    fn set_lr(&mut self, lr: f64);

    /// The momentum `OneCycleLR` cycles (see [`Optimizer::momentum`]); `None` by default.
    fn momentum(&self) -> Option<f64> {
        None
    }

    /// Sets the value [`momentum`](GroupOptions::momentum) reads; returns whether the options
    /// have one.
    fn set_momentum(&mut self, _momentum: f64) -> bool {
        false
    }

    /// Checks the values as PyTorch's constructor does (`Invalid learning rate: -0.1`, ...).
    fn validate(&self) -> Result<()>;

    /// The options under PyTorch's names (`lr`, `betas`, `weight_decay`, ...).
    fn to_values(&self) -> Vec<(&'static str, OptionValue)>;

    /// Sets the option PyTorch calls `name`; `Ok(false)` for a name these options do not have
    /// (e.g. PyTorch's `foreach`), an error for a value of the wrong kind.
    fn set_value(&mut self, name: &str, value: OptionValue) -> Result<bool>;
}

/// One value of a parameter group's options in a state dict.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OptionValue {
    /// A number (`lr`, `momentum`, ...).
    Float(f64),
    /// A flag (`nesterov`, `amsgrad`, ...).
    Bool(bool),
    /// A pair (Adam's `betas`).
    Pair(f64, f64),
}

impl OptionValue {
    /// The number, or an error naming `key` for another kind of value.
    pub fn as_f64(&self, key: &str) -> Result<f64> {
        match *self {
            OptionValue::Float(v) => Ok(v),
            other => {
                Err(Error::invalid("load_state_dict", format!("option '{key}' should be a number, got {other:?}")))
            }
        }
    }

    /// The flag, or an error naming `key` for another kind of value.
    pub fn as_bool(&self, key: &str) -> Result<bool> {
        match *self {
            OptionValue::Bool(v) => Ok(v),
            other => Err(Error::invalid("load_state_dict", format!("option '{key}' should be a bool, got {other:?}"))),
        }
    }

    /// The pair, or an error naming `key` for another kind of value.
    pub fn as_pair(&self, key: &str) -> Result<(f64, f64)> {
        match *self {
            OptionValue::Pair(a, b) => Ok((a, b)),
            other => Err(Error::invalid("load_state_dict", format!("option '{key}' should be a pair, got {other:?}"))),
        }
    }
}

/// The saved options of one parameter group: PyTorch's `state_dict()["param_groups"][i]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParamGroupState {
    /// Options by PyTorch's names, plus `initial_lr` once a scheduler set it.
    pub options: BTreeMap<String, OptionValue>,
    /// Indices of the group's parameters (all parameters numbered in group order).
    pub params: Vec<usize>,
}

/// An optimizer's state: PyTorch's `{"state": ..., "param_groups": ...}`.
#[derive(Clone, Debug, Default)]
pub struct OptimizerStateDict {
    /// Per-parameter state by parameter index (`momentum_buffer`, `step`, `exp_avg`, ...);
    /// parameters without state are absent.
    pub state: BTreeMap<usize, StateDict>,
    /// The groups' options and parameter indices.
    pub param_groups: Vec<ParamGroupState>,
}

impl OptimizerStateDict {
    /// The state as one flat tensor dict, e.g. to save with safetensors: `state.{i}.{name}`
    /// for the per-parameter tensors, `param_groups.{g}.params` (int64) and
    /// `param_groups.{g}.{option}` (a float64 scalar for numbers, a bool scalar for flags, two
    /// float64 values for pairs).
    pub fn to_tensors(&self) -> StateDict {
        let mut out = StateDict::new();
        for (i, s) in &self.state {
            for (name, t) in s.iter() {
                out.insert(format!("state.{i}.{name}"), t.clone());
            }
        }
        for (g, group) in self.param_groups.iter().enumerate() {
            let ids: Vec<i64> = group.params.iter().map(|&i| i as i64).collect();
            out.insert(format!("param_groups.{g}.params"), Tensor::from_slice(&ids));
            for (k, v) in &group.options {
                let t = match *v {
                    OptionValue::Float(x) => Tensor::scalar_tensor(x),
                    OptionValue::Bool(b) => Tensor::scalar_tensor(b),
                    OptionValue::Pair(a, b) => Tensor::from_slice(&[a, b]),
                };
                out.insert(format!("param_groups.{g}.{k}"), t);
            }
        }
        out
    }

    /// Reads back what [`to_tensors`](OptimizerStateDict::to_tensors) wrote.
    pub fn from_tensors(flat: &StateDict) -> Result<OptimizerStateDict> {
        let bad = |key: &str, what: &str| Error::invalid("OptimizerStateDict", format!("key '{key}': {what}"));
        let mut out = OptimizerStateDict::default();
        let mut groups: BTreeMap<usize, ParamGroupState> = BTreeMap::new();
        for (key, t) in flat.iter() {
            let mut parts = key.splitn(3, '.');
            let (kind, index, name) = match (parts.next(), parts.next(), parts.next()) {
                (Some(k), Some(i), Some(n)) => (k, i, n),
                _ => return Err(bad(key, "expected state.<index>.<name> or param_groups.<index>.<name>")),
            };
            let index: usize = index.parse().map_err(|_| bad(key, "the index is not a number"))?;
            match kind {
                "state" => out.state.entry(index).or_default().insert(name, t.clone()),
                "param_groups" => {
                    let g = groups.entry(index).or_default();
                    if name == "params" {
                        g.params = t.to_vec::<i64>()?.into_iter().map(|i| i as usize).collect();
                    } else if t.dtype() == ScalarType::Bool && t.numel() == 1 {
                        g.options.insert(name.to_string(), OptionValue::Bool(t.item::<bool>()?));
                    } else if t.dim() == 0 {
                        g.options.insert(name.to_string(), OptionValue::Float(t.item::<f64>()?));
                    } else if t.numel() == 2 {
                        let v = t.to_vec::<f64>()?;
                        g.options.insert(name.to_string(), OptionValue::Pair(v[0], v[1]));
                    } else {
                        return Err(bad(key, "an option must be a scalar or a pair"));
                    }
                }
                _ => return Err(bad(key, "expected state.<index>.<name> or param_groups.<index>.<name>")),
            }
        }
        for (expect, (g, group)) in groups.into_iter().enumerate() {
            if g != expect {
                return Err(Error::invalid("OptimizerStateDict", format!("param_groups.{expect} is missing")));
            }
            out.param_groups.push(group);
        }
        Ok(out)
    }
}

// ---- shared plumbing -----------------------------------------------------------------------

/// The per-parameter state of one optimizer (momentum buffer, moments, step count), saved
/// under PyTorch's names.
pub(crate) trait ParamState: Sized {
    /// Writes deep copies of the state under PyTorch's names.
    fn save(&self, out: &mut StateDict) -> Result<()>;
    /// Reads a saved state for `loader`'s parameter.
    fn load(loader: &StateLoader<'_>) -> Result<Self>;
}

/// Reads one parameter's saved state, checking names and shapes.
pub(crate) struct StateLoader<'a> {
    optimizer: &'static str,
    saved: &'a StateDict,
    param: &'a Tensor,
    index: usize,
}

impl StateLoader<'_> {
    fn error(&self, msg: String) -> Error {
        Error::invalid(format!("{}.load_state_dict", self.optimizer), msg)
    }

    /// The tensor saved as `name`, copied to the parameter's dtype and device; an error if it
    /// is missing or its shape is not the parameter's.
    pub(crate) fn tensor(&self, name: &str) -> Result<Tensor> {
        self.optional_tensor(name)?
            .ok_or_else(|| self.error(format!("the state of parameter {} has no '{name}'", self.index)))
    }

    /// Like [`tensor`](StateLoader::tensor), `None` when absent.
    pub(crate) fn optional_tensor(&self, name: &str) -> Result<Option<Tensor>> {
        let Some(t) = self.saved.get(name) else { return Ok(None) };
        if t.sizes() != self.param.sizes() {
            return Err(self.error(format!(
                "'{name}' of parameter {} has shape {:?}, but the parameter has shape {:?}",
                self.index,
                t.sizes(),
                self.param.sizes()
            )));
        }
        let p = self.param;
        Ok(Some(ops::_to_copy(t, Some(p.dtype()), None, Some(p.device()), None, false, None)?))
    }

    /// The step count saved as `step` (a one-element tensor, PyTorch's float32 scalar).
    pub(crate) fn step(&self) -> Result<f64> {
        let t = self
            .saved
            .get("step")
            .ok_or_else(|| self.error(format!("the state of parameter {} has no 'step'", self.index)))?;
        if t.numel() != 1 {
            return Err(self.error(format!(
                "'step' of parameter {} has {} elements, expected 1",
                self.index,
                t.numel()
            )));
        }
        t.item::<f64>()
    }
}

/// A step count as PyTorch stores it: a float32 scalar tensor.
pub(crate) fn step_tensor(step: f64) -> Tensor {
    Tensor::scalar_tensor(step as f32)
}

/// A deep copy (for state dicts: saved state must not alias the live state).
pub(crate) fn deep_copy(t: &Tensor) -> Result<Tensor> {
    ops::clone(t, None)
}

/// The groups, and per parameter its optional state, of one optimizer: everything that is the
/// same for all optimizers (validation, `zero_grad`, state dicts, the update loop).
pub(crate) struct ParamGroups<O, S> {
    groups: Vec<ParamGroup<O>>,
    /// `state[g][i]` belongs to `groups[g].params[i]` (a parameter is in one group only).
    state: Vec<Vec<Option<S>>>,
}

impl<O: GroupOptions, S: ParamState> ParamGroups<O, S> {
    /// One group of `params` (PyTorch's `Optimizer(params, defaults)` with a list of tensors).
    pub(crate) fn single(params: impl IntoIterator<Item = Parameter>, options: O) -> Result<ParamGroups<O, S>> {
        let group = ParamGroup::new(params, options);
        if group.params.is_empty() {
            return Err(Error::invalid(O::OPTIMIZER, "optimizer got an empty parameter list"));
        }
        ParamGroups::new(vec![group])
    }

    /// Checks and takes `groups` (PyTorch's `Optimizer.__init__` with a list of dicts).
    pub(crate) fn new(groups: Vec<ParamGroup<O>>) -> Result<ParamGroups<O, S>> {
        if groups.is_empty() {
            return Err(Error::invalid(O::OPTIMIZER, "optimizer got an empty parameter list"));
        }
        let mut out = ParamGroups { groups: Vec::with_capacity(groups.len()), state: Vec::new() };
        for g in groups {
            out.add(g)?;
        }
        Ok(out)
    }

    /// `add_param_group`: validates the options and that no parameter is already present.
    pub(crate) fn add(&mut self, group: ParamGroup<O>) -> Result<()> {
        group.options.validate()?;
        for (i, p) in group.params.iter().enumerate() {
            if group.params[..i].iter().any(|q| q.is_same(p)) {
                return Err(Error::invalid(
                    O::OPTIMIZER,
                    "optimizer contains a parameter group with duplicate parameters",
                ));
            }
            if self.groups.iter().flat_map(|g| &g.params).any(|q| q.is_same(p)) {
                return Err(Error::invalid(O::OPTIMIZER, "some parameters appear in more than one parameter group"));
            }
        }
        self.state.push(group.params.iter().map(|_| None).collect());
        self.groups.push(group);
        Ok(())
    }

    pub(crate) fn groups(&self) -> &[ParamGroup<O>] {
        &self.groups
    }

    pub(crate) fn options_mut(&mut self, group: usize) -> &mut O {
        &mut self.groups[group].options
    }

    /// Creates the state of every parameter that has none (Adagrad's eager initialisation).
    pub(crate) fn init_state(&mut self, mut init: impl FnMut(&O, &Tensor) -> Result<S>) -> Result<()> {
        for (group, states) in self.groups.iter().zip(&mut self.state) {
            for (p, s) in group.params.iter().zip(states.iter_mut()) {
                if s.is_none() {
                    *s = Some(init(&group.options, p.tensor())?);
                }
            }
        }
        Ok(())
    }

    /// Runs `update(options, param, grad, state)` for every parameter that has a `.grad`,
    /// without recording autograd history.
    pub(crate) fn update(
        &mut self,
        mut update: impl FnMut(&O, &Tensor, &Tensor, &mut Option<S>) -> Result<()>,
    ) -> Result<()> {
        let _no_grad = autograd::no_grad();
        for (group, states) in self.groups.iter().zip(&mut self.state) {
            for (p, s) in group.params.iter().zip(states.iter_mut()) {
                if let Some(grad) = p.grad() {
                    update(&group.options, p.tensor(), &grad, s)?;
                }
            }
        }
        Ok(())
    }

    pub(crate) fn zero_grad(&self, set_to_none: bool) -> Result<()> {
        zero_grad_params(self.groups.iter().flat_map(|g| &g.params), set_to_none)
    }

    pub(crate) fn lr(&self, group: usize) -> f64 {
        self.groups[group].options.lr()
    }

    pub(crate) fn set_lr(&mut self, group: usize, lr: f64) {
        self.groups[group].options.set_lr(lr)
    }

    pub(crate) fn params(&self, group: usize) -> &[Parameter] {
        &self.groups[group].params
    }

    pub(crate) fn initial_lr(&self, group: usize) -> Option<f64> {
        self.groups[group].initial_lr
    }

    pub(crate) fn set_initial_lr(&mut self, group: usize, lr: Option<f64>) {
        self.groups[group].initial_lr = lr
    }

    pub(crate) fn momentum(&self, group: usize) -> Option<f64> {
        self.groups[group].options.momentum()
    }

    pub(crate) fn set_momentum(&mut self, group: usize, momentum: f64) -> Result<()> {
        if self.groups[group].options.set_momentum(momentum) {
            Ok(())
        } else {
            Err(Error::invalid(O::OPTIMIZER, format!("{} has no momentum or beta1 option", O::OPTIMIZER)))
        }
    }

    pub(crate) fn state_dict(&self) -> Result<OptimizerStateDict> {
        let mut out = OptimizerStateDict::default();
        let mut index = 0;
        for (group, states) in self.groups.iter().zip(&self.state) {
            let mut options: BTreeMap<String, OptionValue> =
                group.options.to_values().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            if let Some(lr) = group.initial_lr {
                options.insert("initial_lr".into(), OptionValue::Float(lr));
            }
            let params: Vec<usize> = (index..index + group.params.len()).collect();
            for (i, s) in params.iter().zip(states) {
                if let Some(s) = s {
                    let mut saved = StateDict::new();
                    s.save(&mut saved)?;
                    out.state.insert(*i, saved);
                }
            }
            index += group.params.len();
            out.param_groups.push(ParamGroupState { options, params });
        }
        Ok(out)
    }

    pub(crate) fn load_state_dict(&mut self, saved: &OptimizerStateDict) -> Result<()> {
        let op = format!("{}.load_state_dict", O::OPTIMIZER);
        if saved.param_groups.len() != self.groups.len() {
            return Err(Error::invalid(op, "loaded state dict has a different number of parameter groups"));
        }
        if self.groups.iter().zip(&saved.param_groups).any(|(g, s)| g.params.len() != s.params.len()) {
            return Err(Error::invalid(
                op,
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group",
            ));
        }
        // Saved parameter index -> (group, position), pairing saved and current groups in order.
        let mut where_is: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
        for (g, s) in saved.param_groups.iter().enumerate() {
            for (i, &id) in s.params.iter().enumerate() {
                if where_is.insert(id, (g, i)).is_some() {
                    return Err(Error::invalid(
                        op,
                        format!("parameter index {id} appears twice in the loaded param_groups"),
                    ));
                }
            }
        }
        // Build everything first so that an error leaves the optimizer unchanged.
        let mut options = Vec::with_capacity(self.groups.len());
        let mut initial_lrs = Vec::with_capacity(self.groups.len());
        for (group, s) in self.groups.iter().zip(&saved.param_groups) {
            let mut o = group.options.clone();
            let mut initial_lr = None;
            for (k, v) in &s.options {
                if k == "initial_lr" {
                    initial_lr = Some(v.as_f64(k)?);
                } else {
                    o.set_value(k, *v)?;
                }
            }
            o.validate()?;
            options.push(o);
            initial_lrs.push(initial_lr);
        }
        let mut state: Vec<Vec<Option<S>>> =
            self.groups.iter().map(|g| g.params.iter().map(|_| None).collect()).collect();
        for (&id, saved_state) in &saved.state {
            let Some(&(g, i)) = where_is.get(&id) else {
                return Err(Error::invalid(
                    op,
                    format!("loaded state dict has state for parameter {id}, which no group lists"),
                ));
            };
            let loader = StateLoader {
                optimizer: O::OPTIMIZER,
                saved: saved_state,
                param: self.groups[g].params[i].tensor(),
                index: id,
            };
            state[g][i] = Some(S::load(&loader)?);
        }
        for ((group, o), lr) in self.groups.iter_mut().zip(options).zip(initial_lrs) {
            group.options = o;
            group.initial_lr = lr;
        }
        self.state = state;
        Ok(())
    }
}

/// Implements [`Optimizer`]'s group and state accessors by forwarding to the optimizer's
/// `groups: ParamGroups<..>` field; the optimizer writes `name` and `step` itself.
macro_rules! forward_to_param_groups {
    () => {
        fn zero_grad(&self, set_to_none: bool) -> c10::Result<()> {
            let _range = $crate::optim::zero_grad_range(self.name());
            self.groups.zero_grad(set_to_none)
        }
        fn num_param_groups(&self) -> usize {
            self.groups.groups().len()
        }
        fn group_params(&self, group: usize) -> &[crate::module::Parameter] {
            self.groups.params(group)
        }
        fn lr(&self, group: usize) -> f64 {
            self.groups.lr(group)
        }
        fn set_lr(&mut self, group: usize, lr: f64) {
            self.groups.set_lr(group, lr)
        }
        fn initial_lr(&self, group: usize) -> Option<f64> {
            self.groups.initial_lr(group)
        }
        fn set_initial_lr(&mut self, group: usize, lr: Option<f64>) {
            self.groups.set_initial_lr(group, lr)
        }
        fn momentum(&self, group: usize) -> Option<f64> {
            self.groups.momentum(group)
        }
        fn set_momentum(&mut self, group: usize, momentum: f64) -> c10::Result<()> {
            self.groups.set_momentum(group, momentum)
        }
        fn state_dict(&self) -> c10::Result<crate::optim::OptimizerStateDict> {
            self.groups.state_dict()
        }
        fn load_state_dict(&mut self, state: &crate::optim::OptimizerStateDict) -> c10::Result<()> {
            self.groups.load_state_dict(state)
        }
    };
}
pub(crate) use forward_to_param_groups;

/// The inherent methods every optimizer has besides its constructor: `with_groups`,
/// `add_param_group`, `param_groups`, `options_mut`.
macro_rules! param_group_methods {
    ($options:ty) => {
        /// An optimizer over several parameter groups, each with its own options (PyTorch's
        /// list of dicts). Every group's options are validated.
        pub fn with_groups(groups: Vec<crate::optim::ParamGroup<$options>>) -> c10::Result<Self> {
            Self::from_param_groups(crate::optim::ParamGroups::new(groups)?)
        }

        /// `optimizer.add_param_group(group)`: the group's parameters must not already be
        /// optimized.
        pub fn add_param_group(&mut self, group: crate::optim::ParamGroup<$options>) -> c10::Result<()> {
            self.groups.add(group)?;
            self.after_add_param_group()
        }

        /// `optimizer.param_groups`.
        pub fn param_groups(&self) -> &[crate::optim::ParamGroup<$options>] {
            self.groups.groups()
        }

        /// The options of group `group`, to change them between steps (not validated).
        ///
        /// # Panics
        /// If `group` is not below the number of groups.
        pub fn options_mut(&mut self, group: usize) -> &mut $options {
            self.groups.options_mut(group)
        }
    };
}
pub(crate) use param_group_methods;

// ---- in-place helpers ----------------------------------------------------------------------
//
// `addcmul_` and `addcdiv_` are aten's in-place kernels; aten has the out-of-place `lerp` and
// `maximum` only, so those compute the result and copy it back, one temporary per call (the
// update loops stay per parameter, never per element).

pub(crate) fn float(v: f64) -> Scalar {
    Scalar::Float(v)
}

/// `t.addcmul_(a, b, value=value)`.
pub(crate) fn addcmul_(t: &Tensor, a: &Tensor, b: &Tensor, value: f64) -> Result<()> {
    t.addcmul_with_(a, b, float(value))?;
    Ok(())
}

/// `t.addcdiv_(a, b, value=value)`.
pub(crate) fn addcdiv_(t: &Tensor, a: &Tensor, b: &Tensor, value: f64) -> Result<()> {
    t.addcdiv_with_(a, b, float(value))?;
    Ok(())
}

/// `t.lerp_(end, weight)`.
pub(crate) fn lerp_(t: &Tensor, end: &Tensor, weight: f64) -> Result<()> {
    t.copy_(&t.lerp(end, float(weight))?).call()?;
    Ok(())
}

/// `torch.maximum(t, other, out=t)`.
pub(crate) fn maximum_(t: &Tensor, other: &Tensor) -> Result<()> {
    t.copy_(&t.maximum(other)?).call()?;
    Ok(())
}

/// `zeros_like(t)`.
pub(crate) fn zeros_like(t: &Tensor) -> Result<Tensor> {
    ops::zeros_like(t, None, None, None, None, None)
}

/// `maximize ? -grad : grad`.
/// PyTorch's refusal of a sparse gradient by an optimizer without a sparse update
/// (`RMSprop does not support sparse gradients`); `hint` follows the message (Adam's names
/// SparseAdam).
pub(crate) fn refuse_sparse(name: &str, grad: &Tensor, hint: &str) -> Result<()> {
    if grad.layout() == c10::Layout::Strided {
        return Ok(());
    }
    Err(Error::invalid(name, format!("{name} does not support sparse gradients{hint}")))
}

/// The pattern of coalesced sparse gradient `grad` carrying other `values` (PyTorch's
/// `make_sparse` in Adagrad and SparseAdam).
pub(crate) fn with_values(grad: &Tensor, values: &Tensor) -> Result<Tensor> {
    aten::native::sparse::new_coo(grad.sizes(), &ops::_indices(grad)?, values, true)
}

pub(crate) fn signed_grad(grad: &Tensor, maximize: bool) -> Result<Tensor> {
    if maximize {
        grad.neg()
    } else {
        Ok(grad.clone())
    }
}

// ---- argument checks -----------------------------------------------------------------------

/// Python's `repr` of a float, for messages that quote PyTorch (`-1.0`, `1e-05`, `inf`).
pub(crate) fn py_float(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let a = v.abs();
    if a != 0.0 && !(1e-4..1e16).contains(&a) {
        // Rust writes `1e-5`; Python writes `1e-05`.
        let s = format!("{v:e}");
        let (mantissa, exp) = s.split_once('e').expect("exponent form");
        let (sign, digits) = exp.strip_prefix('-').map_or(("+", exp), |d| ("-", d));
        return format!("{mantissa}e{sign}{digits:0>2}");
    }
    if v.fract() == 0.0 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

/// An error unless `value >= 0` (NaN is rejected too): `Invalid {what}: {value}`.
pub(crate) fn check_non_negative(op: &str, what: &str, value: f64) -> Result<()> {
    if value >= 0.0 {
        Ok(())
    } else {
        Err(Error::invalid(op, format!("Invalid {what}: {}", py_float(value))))
    }
}

/// Reads a numeric option by name for `set_value`.
pub(crate) fn set_f64(slot: &mut f64, name: &str, value: OptionValue) -> Result<bool> {
    *slot = value.as_f64(name)?;
    Ok(true)
}

/// Reads a flag option by name for `set_value`.
pub(crate) fn set_bool(slot: &mut bool, name: &str, value: OptionValue) -> Result<bool> {
    *slot = value.as_bool(name)?;
    Ok(true)
}

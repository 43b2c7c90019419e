//! Learning-rate schedulers (`torch.optim.lr_scheduler`).
//!
//! A scheduler does not hold its optimizer: it is given `&mut dyn Optimizer` when built and at
//! every `step`, so the training loop keeps using the optimizer in between. As in PyTorch,
//! building a scheduler records each group's `initial_lr` (if not yet set) and performs the
//! initial step, and `step` advances `last_epoch` and applies the *chainable* form (each new lr
//! computed from the group's current lr), so schedulers applied to the same optimizer compose.
//!
//! ```
//! use nn::optim::lr_scheduler::{LRScheduler, StepLR};
//! use nn::optim::{Optimizer, SGDOptions, SGD};
//! let w = nn::Parameter::new(aten::Tensor::from_slice(&[1.0f32])).unwrap();
//! let mut opt = SGD::new([w], SGDOptions::default().lr(0.1)).unwrap();
//! let mut sched = StepLR::new(&mut opt, 2, 0.5).unwrap();
//! let mut lrs = vec![];
//! for _ in 0..5 {
//!     opt.step().unwrap();
//!     lrs.push(sched.get_last_lr()[0]);
//!     sched.step(&mut opt).unwrap();
//! }
//! assert_eq!(lrs, [0.1, 0.1, 0.05, 0.05, 0.025]);
//! ```

use std::f64::consts::PI;
use std::sync::Arc;

use c10::{Error, Result};

use crate::optim::{py_float, Optimizer};

/// What every scheduler tracks: PyTorch's `base_lrs`, `last_epoch`, `_step_count` and
/// `_last_lr`.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedulerState {
    /// The groups' `initial_lr` when the scheduler was built.
    pub base_lrs: Vec<f64>,
    /// The number of `step` calls since the schedule started (0 after construction).
    pub last_epoch: i64,
    /// `step` calls including the initial one.
    pub step_count: i64,
    /// The learning rates after the last step ([`LRScheduler::get_last_lr`]).
    pub last_lr: Vec<f64>,
    is_initial: bool,
}

impl SchedulerState {
    /// Attaches to `optimizer` as PyTorch's `LRScheduler.__init__` does with `last_epoch=-1`:
    /// each group's `initial_lr` is set to its current lr unless already set, and the
    /// `initial_lr`s become the base lrs.
    pub fn new(optimizer: &mut dyn Optimizer) -> SchedulerState {
        let n = optimizer.num_param_groups();
        for g in 0..n {
            if optimizer.initial_lr(g).is_none() {
                let lr = optimizer.lr(g);
                optimizer.set_initial_lr(g, Some(lr));
            }
        }
        SchedulerState {
            base_lrs: (0..n).map(|g| optimizer.initial_lr(g).unwrap_or_else(|| optimizer.lr(g))).collect(),
            last_epoch: -1,
            step_count: 0,
            last_lr: current_lrs(optimizer),
            is_initial: false,
        }
    }

    /// Whether the current step is the initial one, run by the constructor (PyTorch's
    /// `_is_initial`): chainable forms that would otherwise change the lr keep it.
    pub fn is_initial(&self) -> bool {
        self.is_initial
    }
}

/// Every group's current lr.
fn current_lrs(optimizer: &dyn Optimizer) -> Vec<f64> {
    (0..optimizer.num_param_groups()).map(|g| optimizer.lr(g)).collect()
}

/// A learning-rate schedule: PyTorch's `LRScheduler`. An implementation provides the state
/// accessors and [`get_lr`](LRScheduler::get_lr) (and, optionally, a closed form); stepping is
/// provided.
pub trait LRScheduler {
    /// PyTorch's class name, for error messages.
    fn name(&self) -> &'static str;

    /// The scheduler's counters and learning rates.
    fn state(&self) -> &SchedulerState;

    /// The same, mutably (to restore a saved schedule).
    fn state_mut(&mut self) -> &mut SchedulerState;

    /// The learning rates for `state().last_epoch`, in chainable form (from the optimizer's
    /// current lrs). Called by `step` after advancing `last_epoch`.
    fn get_lr(&mut self, optimizer: &mut dyn Optimizer) -> Result<Vec<f64>>;

    /// The learning rates at `state().last_epoch` from the base lrs (PyTorch's
    /// `_get_closed_form_lr`), for schedulers that have one.
    fn closed_form_lr(&self) -> Option<Vec<f64>> {
        None
    }

    /// `scheduler.step()`: advances one epoch (or batch) and sets the groups' lrs. Call it after
    /// `optimizer.step()`.
    fn step(&mut self, optimizer: &mut dyn Optimizer) -> Result<()> {
        self.state_mut().step_count += 1;
        self.update_lr(optimizer, None)
    }

    /// Sets the groups' lrs for the next epoch (`epoch == None`: `last_epoch + 1`, chainable
    /// form) or for `epoch` (closed form when there is one), PyTorch's `_update_lr`.
    fn update_lr(&mut self, optimizer: &mut dyn Optimizer, epoch: Option<i64>) -> Result<()> {
        let groups = optimizer.num_param_groups();
        if groups != self.state().base_lrs.len() {
            return Err(Error::invalid(
                self.name(),
                format!(
                    "the optimizer has {groups} parameter groups, but the scheduler was built for {}",
                    self.state().base_lrs.len()
                ),
            ));
        }
        let values = match epoch {
            None => {
                self.state_mut().last_epoch += 1;
                self.get_lr(optimizer)?
            }
            Some(e) => {
                self.state_mut().last_epoch = e;
                match self.closed_form_lr() {
                    Some(v) => v,
                    None => self.get_lr(optimizer)?,
                }
            }
        };
        for (g, lr) in values.into_iter().enumerate() {
            optimizer.set_lr(g, lr);
        }
        self.state_mut().last_lr = current_lrs(optimizer);
        Ok(())
    }

    /// The constructor's step (PyTorch's `_initial_step`): resets the step count and steps
    /// with [`SchedulerState::is_initial`] set.
    fn initial_step(&mut self, optimizer: &mut dyn Optimizer) -> Result<()> {
        self.state_mut().step_count = 0;
        self.state_mut().is_initial = true;
        let result = self.step(optimizer);
        self.state_mut().is_initial = false;
        result
    }

    /// Moves `last_epoch` back by one (what `SequentialLR` does to the schedulers it wraps,
    /// undoing their constructors' steps).
    fn undo_step(&mut self) {
        self.state_mut().last_epoch -= 1;
    }

    /// `scheduler.get_last_lr()`: the lrs set by the last step.
    fn get_last_lr(&self) -> &[f64] {
        &self.state().last_lr
    }

    /// `scheduler.last_epoch`.
    fn last_epoch(&self) -> i64 {
        self.state().last_epoch
    }
}

/// Python's `x ** n` for a float and an int (C `pow`, which `powi` is not bit-for-bit).
fn pow(x: f64, n: i64) -> f64 {
    x.powf(n as f64)
}

// ---- LambdaLR ------------------------------------------------------------------------------

/// A multiplicative factor of the epoch, for [`LambdaLR`].
pub type LrLambda = Arc<dyn Fn(i64) -> f64 + Send + Sync>;

/// `LambdaLR(optimizer, lr_lambda)`: `lr = base_lr * lr_lambda(last_epoch)`.
pub struct LambdaLR {
    state: SchedulerState,
    lr_lambdas: Vec<LrLambda>,
}

impl LambdaLR {
    /// One function for every group.
    pub fn new(
        optimizer: &mut dyn Optimizer,
        lr_lambda: impl Fn(i64) -> f64 + Send + Sync + 'static,
    ) -> Result<LambdaLR> {
        let f: LrLambda = Arc::new(lr_lambda);
        let groups = optimizer.num_param_groups();
        LambdaLR::with_lambdas(optimizer, vec![f; groups])
    }

    /// One function per group (`lr_lambda=[f1, f2]`).
    pub fn with_lambdas(optimizer: &mut dyn Optimizer, lr_lambdas: Vec<LrLambda>) -> Result<LambdaLR> {
        let groups = optimizer.num_param_groups();
        if lr_lambdas.len() != groups {
            return Err(Error::invalid(
                "LambdaLR",
                format!("Expected {groups} lr_lambdas, but got {}", lr_lambdas.len()),
            ));
        }
        let mut s = LambdaLR { state: SchedulerState::new(optimizer), lr_lambdas };
        s.initial_step(optimizer)?;
        Ok(s)
    }
}

impl LRScheduler for LambdaLR {
    fn name(&self) -> &'static str {
        "LambdaLR"
    }
    fn state(&self) -> &SchedulerState {
        &self.state
    }
    fn state_mut(&mut self) -> &mut SchedulerState {
        &mut self.state
    }
    fn get_lr(&mut self, _: &mut dyn Optimizer) -> Result<Vec<f64>> {
        let e = self.state.last_epoch;
        Ok(self.state.base_lrs.iter().zip(&self.lr_lambdas).map(|(base, f)| base * f(e)).collect())
    }
}

// ---- StepLR --------------------------------------------------------------------------------

/// `StepLR(optimizer, step_size, gamma)`: multiplies the lr by `gamma` every `step_size`
/// epochs.
pub struct StepLR {
    state: SchedulerState,
    step_size: i64,
    gamma: f64,
}

impl StepLR {
    /// `StepLR(optimizer, step_size, gamma)` (PyTorch's default `gamma` is 0.1). `step_size`
    /// must be positive.
    pub fn new(optimizer: &mut dyn Optimizer, step_size: i64, gamma: f64) -> Result<StepLR> {
        if step_size <= 0 {
            return Err(Error::invalid("StepLR", format!("step_size must be a positive integer, but got {step_size}")));
        }
        let mut s = StepLR { state: SchedulerState::new(optimizer), step_size, gamma };
        s.initial_step(optimizer)?;
        Ok(s)
    }
}

impl LRScheduler for StepLR {
    fn name(&self) -> &'static str {
        "StepLR"
    }
    fn state(&self) -> &SchedulerState {
        &self.state
    }
    fn state_mut(&mut self) -> &mut SchedulerState {
        &mut self.state
    }
    fn get_lr(&mut self, optimizer: &mut dyn Optimizer) -> Result<Vec<f64>> {
        let e = self.state.last_epoch;
        let lrs = current_lrs(optimizer);
        if e == 0 || e % self.step_size != 0 {
            return Ok(lrs);
        }
        Ok(lrs.into_iter().map(|lr| lr * self.gamma).collect())
    }
    fn closed_form_lr(&self) -> Option<Vec<f64>> {
        let k = self.state.last_epoch.div_euclid(self.step_size);
        Some(self.state.base_lrs.iter().map(|b| b * pow(self.gamma, k)).collect())
    }
}

// ---- MultiStepLR ---------------------------------------------------------------------------

/// `MultiStepLR(optimizer, milestones, gamma)`: multiplies the lr by `gamma` at each milestone
/// (by `gamma^k` at a milestone listed `k` times).
pub struct MultiStepLR {
    state: SchedulerState,
    /// Sorted, repeats kept (PyTorch's `Counter`).
    milestones: Vec<i64>,
    gamma: f64,
}

impl MultiStepLR {
    /// `MultiStepLR(optimizer, milestones, gamma)` (PyTorch's default `gamma` is 0.1).
    pub fn new(optimizer: &mut dyn Optimizer, milestones: &[i64], gamma: f64) -> Result<MultiStepLR> {
        let mut milestones = milestones.to_vec();
        milestones.sort_unstable();
        let mut s = MultiStepLR { state: SchedulerState::new(optimizer), milestones, gamma };
        s.initial_step(optimizer)?;
        Ok(s)
    }
}

impl LRScheduler for MultiStepLR {
    fn name(&self) -> &'static str {
        "MultiStepLR"
    }
    fn state(&self) -> &SchedulerState {
        &self.state
    }
    fn state_mut(&mut self) -> &mut SchedulerState {
        &mut self.state
    }
    fn get_lr(&mut self, optimizer: &mut dyn Optimizer) -> Result<Vec<f64>> {
        let e = self.state.last_epoch;
        let count = self.milestones.iter().filter(|&&m| m == e).count() as i64;
        let lrs = current_lrs(optimizer);
        if count == 0 {
            return Ok(lrs);
        }
        Ok(lrs.into_iter().map(|lr| lr * pow(self.gamma, count)).collect())
    }
    fn closed_form_lr(&self) -> Option<Vec<f64>> {
        let passed = self.milestones.partition_point(|&m| m <= self.state.last_epoch) as i64;
        Some(self.state.base_lrs.iter().map(|b| b * pow(self.gamma, passed)).collect())
    }
}

// ---- ExponentialLR -------------------------------------------------------------------------

/// `ExponentialLR(optimizer, gamma)`: multiplies the lr by `gamma` every epoch.
pub struct ExponentialLR {
    state: SchedulerState,
    gamma: f64,
}

impl ExponentialLR {
    /// `ExponentialLR(optimizer, gamma)`.
    pub fn new(optimizer: &mut dyn Optimizer, gamma: f64) -> Result<ExponentialLR> {
        let mut s = ExponentialLR { state: SchedulerState::new(optimizer), gamma };
        s.initial_step(optimizer)?;
        Ok(s)
    }
}

impl LRScheduler for ExponentialLR {
    fn name(&self) -> &'static str {
        "ExponentialLR"
    }
    fn state(&self) -> &SchedulerState {
        &self.state
    }
    fn state_mut(&mut self) -> &mut SchedulerState {
        &mut self.state
    }
    fn get_lr(&mut self, optimizer: &mut dyn Optimizer) -> Result<Vec<f64>> {
        let lrs = current_lrs(optimizer);
        if self.state.is_initial {
            return Ok(lrs);
        }
        Ok(lrs.into_iter().map(|lr| lr * self.gamma).collect())
    }
    fn closed_form_lr(&self) -> Option<Vec<f64>> {
        Some(self.state.base_lrs.iter().map(|b| b * pow(self.gamma, self.state.last_epoch)).collect())
    }
}

// ---- LinearLR ------------------------------------------------------------------------------

/// `LinearLR(optimizer, start_factor, end_factor, total_iters)`: scales the lr by a factor
/// going linearly from `start_factor` to `end_factor` over `total_iters` epochs.
pub struct LinearLR {
    state: SchedulerState,
    start_factor: f64,
    end_factor: f64,
    total_iters: i64,
}

impl LinearLR {
    /// PyTorch's defaults: `start_factor` 1/3, `end_factor` 1.0, `total_iters` 5.
    pub fn new(optimizer: &mut dyn Optimizer) -> Result<LinearLR> {
        LinearLR::with_factors(optimizer, 1.0 / 3.0, 1.0, 5)
    }

    /// `LinearLR(optimizer, start_factor, end_factor, total_iters)`.
    pub fn with_factors(
        optimizer: &mut dyn Optimizer,
        start_factor: f64,
        end_factor: f64,
        total_iters: i64,
    ) -> Result<LinearLR> {
        if start_factor > 1.0 || start_factor <= 0.0 {
            return Err(Error::invalid(
                "LinearLR",
                "Starting multiplicative factor expected to be greater than 0 and less or equal to 1.",
            ));
        }
        if !(0.0..=1.0).contains(&end_factor) {
            return Err(Error::invalid("LinearLR", "Ending multiplicative factor expected to be between 0 and 1."));
        }
        let mut s = LinearLR { state: SchedulerState::new(optimizer), start_factor, end_factor, total_iters };
        s.initial_step(optimizer)?;
        Ok(s)
    }
}

impl LRScheduler for LinearLR {
    fn name(&self) -> &'static str {
        "LinearLR"
    }
    fn state(&self) -> &SchedulerState {
        &self.state
    }
    fn state_mut(&mut self) -> &mut SchedulerState {
        &mut self.state
    }
    fn get_lr(&mut self, optimizer: &mut dyn Optimizer) -> Result<Vec<f64>> {
        let e = self.state.last_epoch;
        let lrs = current_lrs(optimizer);
        if e == 0 {
            return Ok(lrs.into_iter().map(|lr| lr * self.start_factor).collect());
        }
        if self.state.is_initial || e > self.total_iters {
            return Ok(lrs);
        }
        let (s, f) = (self.start_factor, self.end_factor);
        let factor = 1.0 + (f - s) / (self.total_iters as f64 * s + (e - 1) as f64 * (f - s));
        Ok(lrs.into_iter().map(|lr| lr * factor).collect())
    }
    fn closed_form_lr(&self) -> Option<Vec<f64>> {
        if self.total_iters == 0 {
            return None; // PyTorch divides by zero here; the chainable form is defined
        }
        let (s, f) = (self.start_factor, self.end_factor);
        let t = self.total_iters.min(self.state.last_epoch) as f64;
        Some(self.state.base_lrs.iter().map(|b| b * (s + (f - s) * t / self.total_iters as f64)).collect())
    }
}

// ---- CosineAnnealingLR ---------------------------------------------------------------------

/// `CosineAnnealingLR(optimizer, T_max, eta_min)`: anneals each lr from its base value to
/// `eta_min` along half a cosine over `T_max` epochs (and back up over the next `T_max`),
/// with PyTorch's recursive update.
pub struct CosineAnnealingLR {
    state: SchedulerState,
    t_max: i64,
    eta_min: f64,
}

impl CosineAnnealingLR {
    /// `CosineAnnealingLR(optimizer, T_max, eta_min)` (PyTorch's default `eta_min` is 0).
    /// `t_max` must be positive.
    pub fn new(optimizer: &mut dyn Optimizer, t_max: i64, eta_min: f64) -> Result<CosineAnnealingLR> {
        if t_max <= 0 {
            return Err(Error::invalid(
                "CosineAnnealingLR",
                format!("T_max must be a positive integer, but got {t_max}"),
            ));
        }
        let mut s = CosineAnnealingLR { state: SchedulerState::new(optimizer), t_max, eta_min };
        s.initial_step(optimizer)?;
        Ok(s)
    }
}

impl LRScheduler for CosineAnnealingLR {
    fn name(&self) -> &'static str {
        "CosineAnnealingLR"
    }
    fn state(&self) -> &SchedulerState {
        &self.state
    }
    fn state_mut(&mut self) -> &mut SchedulerState {
        &mut self.state
    }
    fn get_lr(&mut self, optimizer: &mut dyn Optimizer) -> Result<Vec<f64>> {
        let (e, t, eta_min) = (self.state.last_epoch, self.t_max, self.eta_min);
        let lrs = current_lrs(optimizer);
        if self.state.is_initial {
            return Ok(lrs);
        }
        let bases = &self.state.base_lrs;
        if self.state.step_count == 1 && e > 0 {
            return Ok(bases
                .iter()
                .map(|b| eta_min + (b - eta_min) * (1.0 + (e as f64 * PI / t as f64).cos()) / 2.0)
                .collect());
        }
        if (e - 1 - t).rem_euclid(2 * t) == 0 {
            return Ok(lrs
                .iter()
                .zip(bases)
                .map(|(lr, b)| lr + (b - eta_min) * (1.0 - (PI / t as f64).cos()) / 2.0)
                .collect());
        }
        let ratio = (1.0 + (PI * e as f64 / t as f64).cos()) / (1.0 + (PI * (e - 1) as f64 / t as f64).cos());
        Ok(lrs.into_iter().map(|lr| ratio * (lr - eta_min) + eta_min).collect())
    }
    fn closed_form_lr(&self) -> Option<Vec<f64>> {
        let (e, t, eta_min) = (self.state.last_epoch as f64, self.t_max as f64, self.eta_min);
        Some(self.state.base_lrs.iter().map(|b| eta_min + (b - eta_min) * (1.0 + (PI * e / t).cos()) / 2.0).collect())
    }
}

// ---- OneCycleLR ----------------------------------------------------------------------------

/// How [`OneCycleLR`] interpolates within a phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AnnealStrategy {
    /// `"cos"` (the default): half a cosine.
    #[default]
    Cos,
    /// `"linear"`.
    Linear,
}

impl AnnealStrategy {
    /// From `start` (at `pct` 0) to `end` (at `pct` 1).
    fn anneal(self, start: f64, end: f64, pct: f64) -> f64 {
        match self {
            AnnealStrategy::Cos => end + (start - end) / 2.0 * ((PI * pct).cos() + 1.0),
            AnnealStrategy::Linear => (end - start) * pct + start,
        }
    }
}

/// The arguments of [`OneCycleLR`], with PyTorch's defaults. Per-group values (`max_lr`,
/// `base_momentum`, `max_momentum`) hold one value for every group or one per group.
#[derive(Clone, Debug, PartialEq)]
pub struct OneCycleOptions {
    /// `max_lr`: the peak lr.
    pub max_lr: Vec<f64>,
    /// `total_steps`; or give `epochs` and `steps_per_epoch`.
    pub total_steps: Option<i64>,
    /// `epochs`.
    pub epochs: Option<i64>,
    /// `steps_per_epoch`.
    pub steps_per_epoch: Option<i64>,
    /// `pct_start`: the fraction of the cycle spent increasing the lr (default 0.3).
    pub pct_start: f64,
    /// `anneal_strategy` (default cos).
    pub anneal_strategy: AnnealStrategy,
    /// `cycle_momentum`: cycle momentum (SGD, RMSprop) or beta1 (Adam, AdamW) inversely to the
    /// lr (default true).
    pub cycle_momentum: bool,
    /// `base_momentum` (default 0.85).
    pub base_momentum: Vec<f64>,
    /// `max_momentum` (default 0.95).
    pub max_momentum: Vec<f64>,
    /// `div_factor`: `initial_lr = max_lr / div_factor` (default 25).
    pub div_factor: f64,
    /// `final_div_factor`: `min_lr = initial_lr / final_div_factor` (default 1e4).
    pub final_div_factor: f64,
    /// `three_phase`: annealing back to `initial_lr` before going to `min_lr` (default false).
    pub three_phase: bool,
}

impl OneCycleOptions {
    /// `OneCycleLR(optimizer, max_lr, total_steps)` with the other defaults.
    pub fn new(max_lr: f64, total_steps: i64) -> OneCycleOptions {
        OneCycleOptions {
            max_lr: vec![max_lr],
            total_steps: Some(total_steps),
            epochs: None,
            steps_per_epoch: None,
            pct_start: 0.3,
            anneal_strategy: AnnealStrategy::Cos,
            cycle_momentum: true,
            base_momentum: vec![0.85],
            max_momentum: vec![0.95],
            div_factor: 25.0,
            final_div_factor: 1e4,
            three_phase: false,
        }
    }
    /// Sets one `max_lr` per group.
    pub fn max_lrs(mut self, max_lr: Vec<f64>) -> Self {
        self.max_lr = max_lr;
        self
    }
    /// Replaces `total_steps` by `epochs * steps_per_epoch`.
    pub fn epochs(mut self, epochs: i64, steps_per_epoch: i64) -> Self {
        self.total_steps = None;
        self.epochs = Some(epochs);
        self.steps_per_epoch = Some(steps_per_epoch);
        self
    }
    /// Sets `pct_start`.
    pub fn pct_start(mut self, pct_start: f64) -> Self {
        self.pct_start = pct_start;
        self
    }
    /// Sets `anneal_strategy`.
    pub fn anneal_strategy(mut self, strategy: AnnealStrategy) -> Self {
        self.anneal_strategy = strategy;
        self
    }
    /// Sets `cycle_momentum`.
    pub fn cycle_momentum(mut self, cycle: bool) -> Self {
        self.cycle_momentum = cycle;
        self
    }
    /// Sets `base_momentum` and `max_momentum` for every group.
    pub fn momentum_range(mut self, base_momentum: f64, max_momentum: f64) -> Self {
        self.base_momentum = vec![base_momentum];
        self.max_momentum = vec![max_momentum];
        self
    }
    /// Sets `div_factor`.
    pub fn div_factor(mut self, div_factor: f64) -> Self {
        self.div_factor = div_factor;
        self
    }
    /// Sets `final_div_factor`.
    pub fn final_div_factor(mut self, final_div_factor: f64) -> Self {
        self.final_div_factor = final_div_factor;
        self
    }
    /// Sets `three_phase`.
    pub fn three_phase(mut self, three_phase: bool) -> Self {
        self.three_phase = three_phase;
        self
    }
}

/// One value per group from one value for all or one per group (PyTorch's `_format_param`).
fn per_group(name: &str, values: &[f64], groups: usize) -> Result<Vec<f64>> {
    match values {
        [v] => Ok(vec![*v; groups]),
        _ if values.len() == groups => Ok(values.to_vec()),
        _ => Err(Error::invalid(
            "OneCycleLR",
            format!(
                "{name} must have the same length as optimizer.param_groups. {name} has {} values, param_groups has {groups}.",
                values.len()
            ),
        )),
    }
}

/// Where a phase starts or ends, per group.
#[derive(Clone, Copy, Debug)]
enum LrPoint {
    Initial,
    Max,
    Min,
}

#[derive(Clone, Copy, Debug)]
enum MomentumPoint {
    Max,
    Base,
}

#[derive(Clone, Copy, Debug)]
struct Phase {
    end_step: f64,
    lr: (LrPoint, LrPoint),
    momentum: (MomentumPoint, MomentumPoint),
}

/// `OneCycleLR`: the 1cycle policy. The lr rises from `max_lr / div_factor` to `max_lr` over
/// the first `pct_start` of `total_steps`, then falls to `initial_lr / final_div_factor`; with
/// `cycle_momentum`, momentum (or Adam's beta1) moves the opposite way between
/// `max_momentum` and `base_momentum`. Step it after every batch.
pub struct OneCycleLR {
    state: SchedulerState,
    total_steps: i64,
    phases: Vec<Phase>,
    anneal: AnnealStrategy,
    cycle_momentum: bool,
    initial_lrs: Vec<f64>,
    max_lrs: Vec<f64>,
    min_lrs: Vec<f64>,
    max_momentums: Vec<f64>,
    base_momentums: Vec<f64>,
}

impl OneCycleLR {
    /// `OneCycleLR(optimizer, max_lr, total_steps)` with PyTorch's defaults.
    pub fn new(optimizer: &mut dyn Optimizer, max_lr: f64, total_steps: i64) -> Result<OneCycleLR> {
        OneCycleLR::with_options(optimizer, OneCycleOptions::new(max_lr, total_steps))
    }

    /// `OneCycleLR(optimizer, **options)`. Sets every group's `initial_lr` to
    /// `max_lr / div_factor` and, with `cycle_momentum`, its momentum to `max_momentum`.
    pub fn with_options(optimizer: &mut dyn Optimizer, o: OneCycleOptions) -> Result<OneCycleLR> {
        let err = |msg: String| Error::invalid("OneCycleLR", msg);
        let total_steps = match (o.total_steps, o.epochs, o.steps_per_epoch) {
            (Some(t), _, _) if t <= 0 => {
                return Err(err(format!("Expected positive integer total_steps, but got {t}")))
            }
            (Some(t), _, _) => t,
            (None, Some(e), Some(s)) => {
                if e <= 0 {
                    return Err(err(format!("Expected positive integer epochs, but got {e}")));
                }
                if s <= 0 {
                    return Err(err(format!("Expected positive integer steps_per_epoch, but got {s}")));
                }
                e * s
            }
            _ => return Err(err("You must define either total_steps OR (epochs AND steps_per_epoch)".into())),
        };
        let pct = o.pct_start;
        let total = total_steps as f64;
        let phases = if o.three_phase {
            vec![
                Phase {
                    end_step: pct * total - 1.0,
                    lr: (LrPoint::Initial, LrPoint::Max),
                    momentum: (MomentumPoint::Max, MomentumPoint::Base),
                },
                Phase {
                    end_step: 2.0 * pct * total - 2.0,
                    lr: (LrPoint::Max, LrPoint::Initial),
                    momentum: (MomentumPoint::Base, MomentumPoint::Max),
                },
                Phase {
                    end_step: total - 1.0,
                    lr: (LrPoint::Initial, LrPoint::Min),
                    momentum: (MomentumPoint::Max, MomentumPoint::Max),
                },
            ]
        } else {
            vec![
                Phase {
                    end_step: pct * total - 1.0,
                    lr: (LrPoint::Initial, LrPoint::Max),
                    momentum: (MomentumPoint::Max, MomentumPoint::Base),
                },
                Phase {
                    end_step: total - 1.0,
                    lr: (LrPoint::Max, LrPoint::Min),
                    momentum: (MomentumPoint::Base, MomentumPoint::Max),
                },
            ]
        };
        if !(0.0..=1.0).contains(&pct) {
            return Err(err(format!("Expected float between 0 and 1 pct_start, but got {}", py_float(pct))));
        }
        let groups = optimizer.num_param_groups();
        let max_lrs = per_group("max_lr", &o.max_lr, groups)?;
        let initial_lrs: Vec<f64> = max_lrs.iter().map(|m| m / o.div_factor).collect();
        let min_lrs: Vec<f64> = initial_lrs.iter().map(|i| i / o.final_div_factor).collect();
        let (mut max_momentums, mut base_momentums) = (Vec::new(), Vec::new());
        if o.cycle_momentum {
            if (0..groups).any(|g| optimizer.momentum(g).is_none()) {
                return Err(
                    err("optimizer must support momentum or beta1 with `cycle_momentum` option enabled".into()),
                );
            }
            max_momentums = per_group("max_momentum", &o.max_momentum, groups)?;
            base_momentums = per_group("base_momentum", &o.base_momentum, groups)?;
        }
        for g in 0..groups {
            optimizer.set_initial_lr(g, Some(initial_lrs[g]));
            if o.cycle_momentum {
                optimizer.set_momentum(g, max_momentums[g])?;
            }
        }
        let mut s = OneCycleLR {
            state: SchedulerState::new(optimizer),
            total_steps,
            phases,
            anneal: o.anneal_strategy,
            cycle_momentum: o.cycle_momentum,
            initial_lrs,
            max_lrs,
            min_lrs,
            max_momentums,
            base_momentums,
        };
        s.initial_step(optimizer)?;
        Ok(s)
    }

    fn lr_at(&self, point: LrPoint, g: usize) -> f64 {
        match point {
            LrPoint::Initial => self.initial_lrs[g],
            LrPoint::Max => self.max_lrs[g],
            LrPoint::Min => self.min_lrs[g],
        }
    }

    fn momentum_at(&self, point: MomentumPoint, g: usize) -> f64 {
        match point {
            MomentumPoint::Max => self.max_momentums[g],
            MomentumPoint::Base => self.base_momentums[g],
        }
    }

    /// `total_steps` as given or computed from `epochs * steps_per_epoch`.
    pub fn total_steps(&self) -> i64 {
        self.total_steps
    }
}

impl LRScheduler for OneCycleLR {
    fn name(&self) -> &'static str {
        "OneCycleLR"
    }
    fn state(&self) -> &SchedulerState {
        &self.state
    }
    fn state_mut(&mut self) -> &mut SchedulerState {
        &mut self.state
    }
    fn get_lr(&mut self, optimizer: &mut dyn Optimizer) -> Result<Vec<f64>> {
        let step = self.state.last_epoch;
        if step > self.total_steps {
            return Err(Error::invalid(
                "OneCycleLR",
                format!("Tried to step {step} times. The specified number of total steps is {}", self.total_steps),
            ));
        }
        let step = step as f64;
        let mut lrs = Vec::with_capacity(self.state.base_lrs.len());
        for g in 0..self.state.base_lrs.len() {
            let mut start_step = 0.0;
            for (i, phase) in self.phases.iter().enumerate() {
                if step <= phase.end_step || i == self.phases.len() - 1 {
                    let pct = (step - start_step) / (phase.end_step - start_step);
                    let (from, to) = phase.lr;
                    lrs.push(self.anneal.anneal(self.lr_at(from, g), self.lr_at(to, g), pct));
                    if self.cycle_momentum {
                        let (from, to) = phase.momentum;
                        let m = self.anneal.anneal(self.momentum_at(from, g), self.momentum_at(to, g), pct);
                        optimizer.set_momentum(g, m)?;
                    }
                    break;
                }
                start_step = phase.end_step;
            }
        }
        Ok(lrs)
    }
}

// ---- SequentialLR --------------------------------------------------------------------------

/// `SequentialLR(optimizer, schedulers, milestones)`: runs `schedulers[0]` until
/// `milestones[0]`, then `schedulers[1]` (restarted at its epoch 0), and so on.
pub struct SequentialLR {
    state: SchedulerState,
    schedulers: Vec<Box<dyn LRScheduler>>,
    milestones: Vec<i64>,
}

impl SequentialLR {
    /// `SequentialLR(optimizer, schedulers, milestones)`: the schedulers must have been built
    /// on `optimizer`, and there must be one milestone fewer than schedulers. Resets the lrs to
    /// the groups' `initial_lr`, undoes the wrapped schedulers' initial steps and redoes the
    /// first one's.
    pub fn new(
        optimizer: &mut dyn Optimizer,
        mut schedulers: Vec<Box<dyn LRScheduler>>,
        milestones: Vec<i64>,
    ) -> Result<SequentialLR> {
        if schedulers.is_empty() {
            return Err(Error::invalid(
                "SequentialLR",
                "SequentialLR expects at least one scheduler, but got no scheduler.",
            ));
        }
        let groups = optimizer.num_param_groups();
        if let Some(i) = schedulers.iter().position(|s| s.state().base_lrs.len() != groups) {
            return Err(Error::invalid(
                "SequentialLR",
                format!(
                    "SequentialLR expects all schedulers to belong to the same optimizer, but got scheduler {} at index {i} built for {} parameter groups instead of {groups}",
                    schedulers[i].name(),
                    schedulers[i].state().base_lrs.len()
                ),
            ));
        }
        if milestones.len() != schedulers.len() - 1 {
            return Err(Error::invalid(
                "SequentialLR",
                format!(
                    "Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone points, but got number of schedulers {} and the number of milestones to be equal to {}",
                    schedulers.len(),
                    milestones.len()
                ),
            ));
        }
        for g in 0..groups {
            let lr = optimizer.initial_lr(g).unwrap_or_else(|| optimizer.lr(g));
            optimizer.set_lr(g, lr);
        }
        let mut state = SchedulerState::new(optimizer);
        state.last_epoch = 0;
        for s in &mut schedulers {
            s.undo_step();
        }
        let first = milestones.partition_point(|&m| m <= 0);
        schedulers[first].initial_step(optimizer)?;
        state.last_lr = schedulers[first].get_last_lr().to_vec();
        Ok(SequentialLR { state, schedulers, milestones })
    }

    /// The wrapped schedulers.
    pub fn schedulers(&self) -> &[Box<dyn LRScheduler>] {
        &self.schedulers
    }
}

impl LRScheduler for SequentialLR {
    fn name(&self) -> &'static str {
        "SequentialLR"
    }
    fn state(&self) -> &SchedulerState {
        &self.state
    }
    fn state_mut(&mut self) -> &mut SchedulerState {
        &mut self.state
    }
    /// The current lrs (a `SequentialLR` steps its schedulers instead).
    fn get_lr(&mut self, optimizer: &mut dyn Optimizer) -> Result<Vec<f64>> {
        Ok(current_lrs(optimizer))
    }
    fn step(&mut self, optimizer: &mut dyn Optimizer) -> Result<()> {
        self.state.step_count += 1;
        self.state.last_epoch += 1;
        let e = self.state.last_epoch;
        let idx = self.milestones.partition_point(|&m| m <= e);
        let scheduler = &mut self.schedulers[idx];
        if idx > 0 && self.milestones[idx - 1] == e {
            scheduler.update_lr(optimizer, Some(0))?;
        } else {
            scheduler.step(optimizer)?;
        }
        self.state.last_lr = scheduler.get_last_lr().to_vec();
        Ok(())
    }
    /// Undoes the wrapped schedulers' steps (PyTorch's `recursive_undo`).
    fn undo_step(&mut self) {
        for s in &mut self.schedulers {
            s.undo_step();
        }
    }
}

// ---- ReduceLROnPlateau ---------------------------------------------------------------------

/// Whether [`ReduceLROnPlateau`]'s metric should go down or up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PlateauMode {
    /// `"min"` (the default): a loss.
    #[default]
    Min,
    /// `"max"`: an accuracy.
    Max,
}

/// How [`ReduceLROnPlateau`] compares a metric with the best one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ThresholdMode {
    /// `"rel"` (the default): better by a factor `1 ± threshold`.
    #[default]
    Rel,
    /// `"abs"`: better by `threshold`.
    Abs,
}

/// The arguments of [`ReduceLROnPlateau`], with PyTorch's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct PlateauOptions {
    /// `mode` (default min).
    pub mode: PlateauMode,
    /// `factor`: `new_lr = lr * factor` (default 0.1); must be below 1.
    pub factor: f64,
    /// `patience`: epochs without improvement tolerated (default 10).
    pub patience: i64,
    /// `threshold` (default 1e-4).
    pub threshold: f64,
    /// `threshold_mode` (default rel).
    pub threshold_mode: ThresholdMode,
    /// `cooldown`: epochs after a reduction during which bad epochs are not counted (default 0).
    pub cooldown: i64,
    /// `min_lr`: one lower bound for every group, or one per group (default 0).
    pub min_lr: Vec<f64>,
    /// `eps`: reductions smaller than this are skipped (default 1e-8).
    pub eps: f64,
}

impl Default for PlateauOptions {
    fn default() -> PlateauOptions {
        PlateauOptions {
            mode: PlateauMode::Min,
            factor: 0.1,
            patience: 10,
            threshold: 1e-4,
            threshold_mode: ThresholdMode::Rel,
            cooldown: 0,
            min_lr: vec![0.0],
            eps: 1e-8,
        }
    }
}

impl PlateauOptions {
    /// Sets `mode`.
    pub fn mode(mut self, mode: PlateauMode) -> Self {
        self.mode = mode;
        self
    }
    /// Sets `factor`.
    pub fn factor(mut self, factor: f64) -> Self {
        self.factor = factor;
        self
    }
    /// Sets `patience`.
    pub fn patience(mut self, patience: i64) -> Self {
        self.patience = patience;
        self
    }
    /// Sets `threshold`.
    pub fn threshold(mut self, threshold: f64) -> Self {
        self.threshold = threshold;
        self
    }
    /// Sets `threshold_mode`.
    pub fn threshold_mode(mut self, mode: ThresholdMode) -> Self {
        self.threshold_mode = mode;
        self
    }
    /// Sets `cooldown`.
    pub fn cooldown(mut self, cooldown: i64) -> Self {
        self.cooldown = cooldown;
        self
    }
    /// Sets `min_lr` (one value for all groups, or one per group).
    pub fn min_lr(mut self, min_lr: Vec<f64>) -> Self {
        self.min_lr = min_lr;
        self
    }
    /// Sets `eps`.
    pub fn eps(mut self, eps: f64) -> Self {
        self.eps = eps;
        self
    }
}

/// `ReduceLROnPlateau`: multiplies the lrs by `factor` once a metric has not improved for
/// `patience` epochs. Unlike the other schedulers it is stepped with the metric, does not
/// change the lrs when built, and does not implement [`LRScheduler`].
///
/// ```
/// use nn::optim::lr_scheduler::{PlateauOptions, ReduceLROnPlateau};
/// use nn::optim::{SGDOptions, SGD};
/// let w = nn::Parameter::new(aten::Tensor::from_slice(&[1.0f32])).unwrap();
/// let mut opt = SGD::new([w], SGDOptions::default().lr(1.0)).unwrap();
/// let mut sched = ReduceLROnPlateau::new(&opt, PlateauOptions::default().patience(1)).unwrap();
/// for loss in [1.0, 0.5, 0.6, 0.7] {
///     sched.step(&mut opt, loss).unwrap();
/// }
/// assert_eq!(sched.get_last_lr(), [0.1]);
/// ```
pub struct ReduceLROnPlateau {
    /// The options (public, as PyTorch's attributes).
    pub options: PlateauOptions,
    min_lrs: Vec<f64>,
    /// The best metric so far.
    pub best: f64,
    /// Consecutive epochs without improvement.
    pub num_bad_epochs: i64,
    /// Epochs of cooldown left.
    pub cooldown_counter: i64,
    /// The number of `step` calls.
    pub last_epoch: i64,
    last_lr: Vec<f64>,
}

impl ReduceLROnPlateau {
    /// `ReduceLROnPlateau(optimizer, **options)`: `factor` must be below 1, and `min_lr` must
    /// have one value or one per group.
    pub fn new(optimizer: &dyn Optimizer, options: PlateauOptions) -> Result<ReduceLROnPlateau> {
        if options.factor >= 1.0 {
            return Err(Error::invalid("ReduceLROnPlateau", "Factor should be < 1.0."));
        }
        let groups = optimizer.num_param_groups();
        let min_lrs = match options.min_lr.as_slice() {
            [m] => vec![*m; groups],
            m if m.len() == groups => m.to_vec(),
            m => {
                return Err(Error::invalid("ReduceLROnPlateau", format!("expected {groups} min_lrs, got {}", m.len())))
            }
        };
        let best = match options.mode {
            PlateauMode::Min => f64::INFINITY,
            PlateauMode::Max => f64::NEG_INFINITY,
        };
        Ok(ReduceLROnPlateau {
            options,
            min_lrs,
            best,
            num_bad_epochs: 0,
            cooldown_counter: 0,
            last_epoch: 0,
            last_lr: current_lrs(optimizer),
        })
    }

    fn is_better(&self, a: f64, best: f64) -> bool {
        let t = self.options.threshold;
        match (self.options.mode, self.options.threshold_mode) {
            (PlateauMode::Min, ThresholdMode::Rel) => a < best * (1.0 - t),
            (PlateauMode::Min, ThresholdMode::Abs) => a < best - t,
            (PlateauMode::Max, ThresholdMode::Rel) => a > best * (t + 1.0),
            (PlateauMode::Max, ThresholdMode::Abs) => a > best + t,
        }
    }

    /// `scheduler.step(metric)`: records the epoch's metric and reduces the lrs after
    /// `patience` epochs without improvement.
    pub fn step(&mut self, optimizer: &mut dyn Optimizer, metric: f64) -> Result<()> {
        self.last_epoch += 1;
        if self.is_better(metric, self.best) {
            self.best = metric;
            self.num_bad_epochs = 0;
        } else {
            self.num_bad_epochs += 1;
        }
        if self.cooldown_counter > 0 {
            self.cooldown_counter -= 1;
            self.num_bad_epochs = 0;
        }
        if self.num_bad_epochs > self.options.patience {
            self.reduce_lr(optimizer)?;
            self.cooldown_counter = self.options.cooldown;
            self.num_bad_epochs = 0;
        }
        self.last_lr = current_lrs(optimizer);
        Ok(())
    }

    fn reduce_lr(&mut self, optimizer: &mut dyn Optimizer) -> Result<()> {
        let groups = optimizer.num_param_groups();
        if groups != self.min_lrs.len() {
            match self.options.min_lr.as_slice() {
                [m] => self.min_lrs = vec![*m; groups],
                _ => {
                    return Err(Error::invalid(
                        "ReduceLROnPlateau",
                        format!(
                            "The number of param groups in the `optimizer` ({groups}) differs from when `ReduceLROnPlateau` was initialized ({}), usually due to a new param group being added to the optimizer. Please modify the `min_lrs` field to match the length of the `optimizer` param groups.",
                            self.min_lrs.len()
                        ),
                    ))
                }
            }
        }
        for g in 0..groups {
            let old = optimizer.lr(g);
            let new = (old * self.options.factor).max(self.min_lrs[g]);
            if old - new > self.options.eps {
                optimizer.set_lr(g, new);
            }
        }
        Ok(())
    }

    /// The lrs after the last step.
    pub fn get_last_lr(&self) -> &[f64] {
        &self.last_lr
    }

    /// Whether a reduction's cooldown is running.
    pub fn in_cooldown(&self) -> bool {
        self.cooldown_counter > 0
    }
}

//! Mixed-precision training: [`GradScaler`] (`torch.amp.GradScaler`), the companion of autocast
//! regions ([`aten::autocast::AutocastGuard`]).
//!
//! ```
//! use aten::autocast::AutocastGuard;
//! use autograd::TensorAutograd;
//! use c10::DeviceType;
//! use nn::amp::GradScaler;
//! use nn::optim::{Optimizer, SGDOptions, SGD};
//! use nn::Parameter;
//!
//! let w = Parameter::new(aten::ops::ones(&[3, 3], None, None, None, None).unwrap()).unwrap();
//! let mut opt = SGD::new(vec![w.clone()], SGDOptions::default().lr(0.1)).unwrap();
//! let mut scaler = GradScaler::new(DeviceType::Cpu);
//! let x = aten::ops::ones(&[2, 3], None, None, None, None).unwrap();
//! let loss = {
//!     let _region = AutocastGuard::new(DeviceType::Cpu, None).unwrap();
//!     x.mm(&w).unwrap().sum().call().unwrap()
//! };
//! scaler.scale(&loss).unwrap().backward().unwrap();
//! assert!(scaler.step(&mut opt).unwrap()); // finite gradients: the optimizer stepped
//! scaler.update(None).unwrap();
//! assert_eq!(scaler.get_scale().unwrap(), 65536.0);
//! ```

use std::collections::HashMap;

use aten::{ops, Tensor};
use autograd::TensorAutograd;
use c10::{Device, DeviceType, Error, Result, ScalarType};

use crate::optim::Optimizer;

/// Where an optimizer is in the scaler's iteration (PyTorch's `OptState`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Stage {
    Ready,
    Unscaled,
    Stepped,
}

/// What the scaler remembers of one optimizer between `unscale_`/`step` and `update`.
#[derive(Debug)]
struct OptimizerState {
    stage: Stage,
    /// One `found_inf` per device the optimizer's gradients live on.
    found_inf_per_device: Vec<(Device, Tensor)>,
}

/// The settings of a [`GradScaler`], PyTorch's defaults included.
#[derive(Clone, Debug, PartialEq)]
pub struct GradScalerOptions {
    /// The scale before the first `update` (`init_scale=2.**16`).
    pub init_scale: f64,
    /// The factor the scale grows by after `growth_interval` clean steps (`2.0`).
    pub growth_factor: f64,
    /// The factor the scale shrinks by after a step with inf or NaN gradients (`0.5`).
    pub backoff_factor: f64,
    /// Clean steps in a row before the scale grows (`2000`).
    pub growth_interval: i64,
    /// `enabled=False` makes every method a pass-through (`scale` returns its input, `step`
    /// just steps).
    pub enabled: bool,
}

impl Default for GradScalerOptions {
    fn default() -> Self {
        GradScalerOptions {
            init_scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
            enabled: true,
        }
    }
}

/// `GradScaler.state_dict()`: the scale, the factors, the interval and the growth tracker.
#[derive(Clone, Debug, PartialEq)]
pub struct GradScalerState {
    /// `"scale"`.
    pub scale: f64,
    /// `"growth_factor"`.
    pub growth_factor: f64,
    /// `"backoff_factor"`.
    pub backoff_factor: f64,
    /// `"growth_interval"`.
    pub growth_interval: i64,
    /// `"_growth_tracker"`.
    pub growth_tracker: i64,
}

/// Scales the loss so small float16/bfloat16 gradients do not flush to zero, unscales the
/// gradients before the optimizer steps, skips steps whose gradients hold inf or NaN, and adapts
/// the scale (`torch.amp.GradScaler`).
///
/// The scale and the growth tracker live on the device of the first scaled output, and the
/// checks run there (`_amp_foreach_non_finite_check_and_unscale_`, `_amp_update_scale_`); the
/// one host read per iteration is `step`'s look at `found_inf`, as in PyTorch.
///
/// An optimizer is recognised by its address, as PyTorch uses `id(optimizer)`: between
/// `unscale_`/`step` and `update` it must not move (a boxed or otherwise pinned optimizer never
/// does).
#[derive(Debug)]
pub struct GradScaler {
    device: DeviceType,
    options: GradScalerOptions,
    scale: Option<Tensor>,
    growth_tracker: Option<Tensor>,
    /// Set by `load_state_dict` before the tracker exists.
    init_growth_tracker: i64,
    per_optimizer: HashMap<usize, OptimizerState>,
}

/// The key of an optimizer in the per-optimizer states (`id(optimizer)`).
fn optimizer_id(opt: &dyn Optimizer) -> usize {
    opt as *const dyn Optimizer as *const () as usize
}

impl GradScaler {
    /// A scaler with PyTorch's defaults for `device` (`"cuda"` in PyTorch; the CPU works too).
    pub fn new(device: DeviceType) -> Self {
        Self::with_options(device, GradScalerOptions::default())
    }

    /// A scaler with explicit settings.
    pub fn with_options(device: DeviceType, options: GradScalerOptions) -> Self {
        GradScaler {
            device,
            options,
            scale: None,
            growth_tracker: None,
            init_growth_tracker: 0,
            per_optimizer: HashMap::new(),
        }
    }

    /// `is_enabled()`.
    pub fn is_enabled(&self) -> bool {
        self.options.enabled
    }

    /// The device type the scaler was made for.
    pub fn device_type(&self) -> DeviceType {
        self.device
    }

    fn check_options(&self) -> Result<()> {
        let o = &self.options;
        if o.growth_factor <= 1.0 {
            return Err(Error::invalid("GradScaler", "The growth factor must be > 1.0."));
        }
        if o.backoff_factor >= 1.0 {
            return Err(Error::invalid("GradScaler", "The backoff factor must be < 1.0."));
        }
        if o.growth_interval <= 0 {
            return Err(Error::invalid("GradScaler", "growth_interval must be a positive integer."));
        }
        Ok(())
    }

    /// The scale and tracker, made on `device` the first time.
    fn lazy_init(&mut self, device: Device) -> Result<()> {
        if self.scale.is_none() {
            self.check_options()?;
            let f32_ = Some(ScalarType::F32);
            self.scale = Some(ops::full(&[], self.options.init_scale.into(), f32_, None, Some(device), None)?);
            self.growth_tracker =
                Some(ops::full(&[], self.init_growth_tracker.into(), Some(ScalarType::I32), None, Some(device), None)?);
        }
        Ok(())
    }

    fn scale_and_tracker(&self, what: &str) -> Result<(&Tensor, &Tensor)> {
        match (&self.scale, &self.growth_tracker) {
            (Some(s), Some(t)) => Ok((s, t)),
            _ => Err(Error::invalid(
                "GradScaler",
                format!(
                    "Attempted {what} but _scale is None.  This may indicate your script did not use \
                     scaler.scale(loss or outputs) earlier in the iteration."
                ),
            )),
        }
    }

    /// `scale(outputs)`: `outputs` multiplied by the scale (the outputs themselves when the
    /// scaler is disabled).
    pub fn scale(&mut self, outputs: &Tensor) -> Result<Tensor> {
        if !self.options.enabled {
            return Ok(outputs.clone());
        }
        if outputs.device().ty != self.device {
            return Err(Error::invalid(
                "GradScaler.scale",
                format!("outputs are on {} but the scaler was made for {}", outputs.device(), self.device),
            ));
        }
        self.lazy_init(outputs.device())?;
        let (scale, _) = self.scale_and_tracker("scale")?;
        let scale =
            if scale.device() == outputs.device() { scale.clone() } else { scale.to_device(outputs.device())? };
        ops::mul(outputs, &scale)
    }

    /// `scale` for several outputs (PyTorch accepts an iterable of tensors).
    pub fn scale_all(&mut self, outputs: &[Tensor]) -> Result<Vec<Tensor>> {
        outputs.iter().map(|o| self.scale(o)).collect()
    }

    /// Unscales the optimizer's gradients in place, grouped by device and dtype, and records
    /// per device whether any held an inf or NaN.
    fn unscale_grads(
        &self,
        opt: &dyn Optimizer,
        inv_scale: &Tensor,
        found_inf: &Tensor,
        allow_fp16: bool,
    ) -> Result<Vec<(Device, Tensor)>> {
        // In order of first appearance, so the calls are made in a fixed order.
        let mut groups: Vec<((Device, ScalarType), Vec<Tensor>)> = Vec::new();
        for g in 0..opt.num_param_groups() {
            for p in opt.group_params(g) {
                let Some(grad) = p.tensor().grad() else { continue };
                if !allow_fp16 && grad.dtype() == ScalarType::F16 {
                    return Err(Error::Value {
                        op: "GradScaler.unscale_".into(),
                        msg: "Attempting to unscale FP16 gradients.".into(),
                    });
                }
                let target = if grad.is_sparse() {
                    // Unscaling the values scales the sparse gradient; float16 ones are
                    // coalesced first so duplicate entries cannot overflow when summed later.
                    let grad = if grad.dtype() == ScalarType::F16 {
                        let c = grad.coalesce()?;
                        p.tensor().set_grad(Some(c.clone()))?;
                        c
                    } else {
                        grad
                    };
                    ops::_values(&grad)?
                } else {
                    grad
                };
                let key = (target.device(), target.dtype());
                match groups.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, v)) => v.push(target),
                    None => groups.push((key, vec![target])),
                }
            }
        }
        let mut per_device: Vec<(Device, Tensor)> = Vec::new();
        for ((device, _), grads) in groups {
            let i = match per_device.iter().position(|(d, _)| *d == device) {
                Some(i) => i,
                None => {
                    per_device.push((device, found_inf.to_device(device)?));
                    per_device.len() - 1
                }
            };
            let inv = inv_scale.to_device(device)?;
            ops::_amp_foreach_non_finite_check_and_unscale_(&grads, &per_device[i].1, &inv)?;
        }
        Ok(per_device)
    }

    /// `unscale_(optimizer)`: divides the optimizer's gradients by the scale in place (for
    /// gradient clipping between `backward` and `step`). At most once per optimizer per
    /// iteration.
    pub fn unscale_(&mut self, opt: &mut dyn Optimizer) -> Result<()> {
        if !self.options.enabled {
            return Ok(());
        }
        let (scale, _) = self.scale_and_tracker("unscale_")?;
        let id = optimizer_id(opt);
        match self.per_optimizer.get(&id).map(|s| s.stage) {
            Some(Stage::Unscaled) => {
                return Err(Error::invalid(
                    "GradScaler.unscale_",
                    "unscale_() has already been called on this optimizer since the last update().",
                ))
            }
            Some(Stage::Stepped) => {
                return Err(Error::invalid("GradScaler.unscale_", "unscale_() is being called after step()."))
            }
            _ => {}
        }
        // The reciprocal in double precision, as PyTorch computes it.
        let double = ops::_to_copy(scale, Some(ScalarType::F64), None, None, None, false, None)?;
        let inv_scale = ops::_to_copy(&double.reciprocal()?, Some(ScalarType::F32), None, None, None, false, None)?;
        let found_inf = ops::full(&[], 0.0.into(), Some(ScalarType::F32), None, Some(scale.device()), None)?;
        let found = self.unscale_grads(opt, &inv_scale, &found_inf, false)?;
        self.per_optimizer.insert(id, OptimizerState { stage: Stage::Unscaled, found_inf_per_device: found });
        Ok(())
    }

    /// `step(optimizer)`: unscales the gradients (unless `unscale_` already did) and runs
    /// `optimizer.step()` only if none of them holds an inf or NaN. Returns whether the
    /// optimizer stepped. A disabled scaler just steps.
    pub fn step(&mut self, opt: &mut dyn Optimizer) -> Result<bool> {
        if !self.options.enabled {
            opt.step()?;
            return Ok(true);
        }
        self.scale_and_tracker("step")?;
        let id = optimizer_id(opt);
        let stage = self.per_optimizer.get(&id).map_or(Stage::Ready, |s| s.stage);
        if stage == Stage::Stepped {
            return Err(Error::invalid("GradScaler.step", "step() has already been called since the last update()."));
        }
        if stage == Stage::Ready {
            self.unscale_(opt)?;
        }
        let state = self.per_optimizer.get_mut(&id).expect("unscale_ recorded the optimizer");
        if state.found_inf_per_device.is_empty() {
            return Err(Error::invalid("GradScaler.step", "No inf checks were recorded for this optimizer."));
        }
        let mut found = 0.0;
        for (_, f) in &state.found_inf_per_device {
            found += f.item::<f64>()?;
        }
        let stepped = found == 0.0;
        if stepped {
            opt.step()?;
        }
        state.stage = Stage::Stepped;
        Ok(stepped)
    }

    /// `update(new_scale=None)`: the scale for the next iteration. With `new_scale` the scale
    /// is set to it; otherwise it backs off if any optimizer saw an inf or NaN since the last
    /// update, and grows after `growth_interval` clean iterations. Forgets every optimizer's
    /// stage.
    pub fn update(&mut self, new_scale: Option<f64>) -> Result<()> {
        if !self.options.enabled {
            return Ok(());
        }
        let (scale, tracker) = self.scale_and_tracker("update")?;
        if let Some(v) = new_scale {
            ops::fill_(scale, v.into())?;
        } else {
            let mut found: Option<Tensor> = None;
            for state in self.per_optimizer.values() {
                for (_, f) in &state.found_inf_per_device {
                    let f = f.to_device(scale.device())?;
                    found = Some(match found {
                        None => f,
                        Some(acc) => ops::add(&acc, &f, 1.into())?,
                    });
                }
            }
            let Some(found) = found else {
                return Err(Error::invalid("GradScaler.update", "No inf checks were recorded prior to update."));
            };
            let o = &self.options;
            ops::_amp_update_scale_(scale, tracker, &found, o.growth_factor, o.backoff_factor, o.growth_interval)?;
        }
        self.per_optimizer.clear();
        Ok(())
    }

    /// `get_scale()`: the current scale (the initial one before the first `scale`; 1.0 when
    /// disabled). Reads the device.
    pub fn get_scale(&self) -> Result<f64> {
        if !self.options.enabled {
            return Ok(1.0);
        }
        match &self.scale {
            None => Ok(self.options.init_scale),
            Some(s) => s.item::<f64>(),
        }
    }

    /// `get_growth_factor()`.
    pub fn get_growth_factor(&self) -> f64 {
        self.options.growth_factor
    }

    /// `set_growth_factor(new_factor)`.
    pub fn set_growth_factor(&mut self, f: f64) {
        self.options.growth_factor = f;
    }

    /// `get_backoff_factor()`.
    pub fn get_backoff_factor(&self) -> f64 {
        self.options.backoff_factor
    }

    /// `set_backoff_factor(new_factor)`.
    pub fn set_backoff_factor(&mut self, f: f64) {
        self.options.backoff_factor = f;
    }

    /// `get_growth_interval()`.
    pub fn get_growth_interval(&self) -> i64 {
        self.options.growth_interval
    }

    /// `set_growth_interval(new_interval)`.
    pub fn set_growth_interval(&mut self, n: i64) {
        self.options.growth_interval = n;
    }

    fn growth_tracker_value(&self) -> Result<i64> {
        match &self.growth_tracker {
            None => Ok(self.init_growth_tracker),
            Some(t) => Ok(t.item::<i64>()?),
        }
    }

    /// `state_dict()`: `None` for a disabled scaler (PyTorch returns an empty dict).
    pub fn state_dict(&self) -> Result<Option<GradScalerState>> {
        if !self.options.enabled {
            return Ok(None);
        }
        Ok(Some(GradScalerState {
            scale: self.get_scale()?,
            growth_factor: self.options.growth_factor,
            backoff_factor: self.options.backoff_factor,
            growth_interval: self.options.growth_interval,
            growth_tracker: self.growth_tracker_value()?,
        }))
    }

    /// `load_state_dict(state_dict)`; `None` (what a disabled scaler saved) is an error for an
    /// enabled one.
    pub fn load_state_dict(&mut self, state: Option<&GradScalerState>) -> Result<()> {
        if !self.options.enabled {
            return Ok(());
        }
        let Some(s) = state else {
            return Err(Error::invalid(
                "GradScaler.load_state_dict",
                "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.",
            ));
        };
        self.options.init_scale = s.scale;
        self.options.growth_factor = s.growth_factor;
        self.options.backoff_factor = s.backoff_factor;
        self.options.growth_interval = s.growth_interval;
        self.init_growth_tracker = s.growth_tracker;
        if let Some(t) = &self.scale {
            ops::fill_(t, s.scale.into())?;
        }
        if let Some(t) = &self.growth_tracker {
            ops::fill_(t, s.growth_tracker.into())?;
        }
        Ok(())
    }
}

//! Linear layers: Identity, Linear, Bilinear.

use aten::{ops, Tensor};
use c10::Result;

use crate::init::{self, FanMode, Nonlinearity};
use crate::layers::invalid;
use crate::module::{Forward, Hooks, Parameter};
use crate::Module;

pub(crate) fn empty(shape: &[i64]) -> Result<Tensor> {
    ops::zeros(shape, None, None, None, None)
}

/// Initialises a weight like PyTorch's Linear/Conv `reset_parameters`: kaiming uniform with
/// `a = sqrt(5)`, i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
pub(crate) fn reset_weight(w: &Tensor) -> Result<()> {
    init::kaiming_uniform_(w, FanMode::FanIn, Nonlinearity::LeakyRelu(5f64.sqrt()))
}

/// The bias of Linear/Conv: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in from the weight.
pub(crate) fn reset_bias(b: &Tensor, weight: &Tensor) -> Result<()> {
    let (fan_in, _) = init::calculate_fan_in_and_fan_out(weight)?;
    let bound = if fan_in > 0 { 1.0 / (fan_in as f64).sqrt() } else { 0.0 };
    init::uniform_(b, -bound, bound)
}

/// `nn.Identity()`.
#[derive(Module, Clone, Default)]
pub struct Identity {
    hooks: Hooks,
}

impl Identity {
    /// `Identity()`.
    pub fn new() -> Identity {
        Identity::default()
    }
}

impl Forward for Identity {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
}

/// `nn.Linear(in_features, out_features, bias=True)`: `y = x W^T + b`.
///
/// ```
/// use nn::{Forward, Linear, Module};
/// aten::manual_seed(0);
/// let fc = Linear::new(3, 2).unwrap();
/// assert_eq!(fc.weight.sizes(), &[2, 3]);
/// let y = fc.call(&aten::ops::ones(&[5, 3], None, None, None, None).unwrap()).unwrap();
/// assert_eq!(y.sizes(), &[5, 2]);
/// ```
#[derive(Module, Clone)]
pub struct Linear {
    /// `(out_features, in_features)`.
    pub weight: Parameter,
    /// `(out_features,)`, if `bias=True`.
    pub bias: Option<Parameter>,
    /// `in_features`.
    pub in_features: i64,
    /// `out_features`.
    pub out_features: i64,
    hooks: Hooks,
}

impl Linear {
    /// `Linear(in_features, out_features)` with a bias.
    pub fn new(in_features: i64, out_features: i64) -> Result<Linear> {
        Linear::with_bias(in_features, out_features, true)
    }

    /// `Linear(in_features, out_features, bias=bias)`.
    pub fn with_bias(in_features: i64, out_features: i64, bias: bool) -> Result<Linear> {
        if in_features < 0 || out_features < 0 {
            return Err(invalid(
                "Linear",
                format!("in_features and out_features must be non-negative, got {in_features} and {out_features}"),
            ));
        }
        let w = empty(&[out_features, in_features])?;
        reset_weight(&w)?;
        let b = if bias {
            let b = empty(&[out_features])?;
            reset_bias(&b, &w)?;
            Some(Parameter::new(b)?)
        } else {
            None
        };
        Ok(Linear { weight: Parameter::new(w)?, bias: b, in_features, out_features, hooks: Hooks::default() })
    }
}

impl Forward for Linear {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::linear(x, &self.weight, self.bias.as_deref())
    }
}

/// `nn.Bilinear(in1_features, in2_features, out_features, bias=True)`:
/// `y_o = x1^T W_o x2 + b_o`.
#[derive(Module, Clone)]
pub struct Bilinear {
    /// `(out_features, in1_features, in2_features)`.
    pub weight: Parameter,
    /// `(out_features,)`.
    pub bias: Option<Parameter>,
}

impl Bilinear {
    /// `Bilinear(in1, in2, out, bias)`; weight and bias are U(-1/sqrt(in1), 1/sqrt(in1)).
    pub fn new(in1_features: i64, in2_features: i64, out_features: i64, bias: bool) -> Result<Bilinear> {
        let bound = 1.0 / (in1_features as f64).sqrt();
        let w = empty(&[out_features, in1_features, in2_features])?;
        init::uniform_(&w, -bound, bound)?;
        let b = if bias {
            let b = empty(&[out_features])?;
            init::uniform_(&b, -bound, bound)?;
            Some(Parameter::new(b)?)
        } else {
            None
        };
        Ok(Bilinear { weight: Parameter::new(w)?, bias: b })
    }

    /// The forward pass on `(.., in1)` and `(.., in2)`.
    pub fn forward(&self, x1: &Tensor, x2: &Tensor) -> Result<Tensor> {
        let y = ops::einsum("...i,oij,...j->...o", &[x1.clone(), (*self.weight).clone(), x2.clone()], None)?;
        match &self.bias {
            Some(b) => y.add(b).call(),
            None => Ok(y),
        }
    }
}

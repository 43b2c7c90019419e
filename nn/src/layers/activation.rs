//! Every activation as a module (PyTorch's `torch/nn/modules/activation.py`).

use aten::{ops, Tensor};
use c10::{Result, Scalar};

use crate::layers::invalid;
use crate::module::{Forward, Hooks, Parameter};
use crate::Module;

macro_rules! simple_activation {
    ($($(#[$doc:meta])* $name:ident => |$x:ident| $body:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Module, Clone, Default)]
        pub struct $name {
            hooks: Hooks,
        }
        impl $name {
            #[doc = concat!("`nn.", stringify!($name), "()`.")]
            pub fn new() -> $name {
                $name::default()
            }
        }
        impl Forward for $name {
            fn forward(&self, $x: &Tensor) -> Result<Tensor> {
                $body
            }
        }
    )*};
}

simple_activation! {
    /// `nn.ReLU()`: `max(0, x)`.
    ReLU => |x| ops::relu(x);
    /// `nn.ReLU6()`: `min(max(0, x), 6)`.
    ReLU6 => |x| ops::relu6(x);
    /// `nn.Sigmoid()`.
    Sigmoid => |x| ops::sigmoid(x);
    /// `nn.Tanh()`.
    Tanh => |x| ops::tanh(x);
    /// `nn.SiLU()`: `x * sigmoid(x)`.
    SiLU => |x| ops::silu(x);
    /// `nn.Mish()`: `x * tanh(softplus(x))`.
    Mish => |x| ops::mish(x);
    /// `nn.Hardsigmoid()`.
    Hardsigmoid => |x| ops::hardsigmoid(x);
    /// `nn.Hardswish()`.
    Hardswish => |x| ops::hardswish(x);
    /// `nn.SELU()`.
    SELU => |x| ops::selu(x);
    /// `nn.LogSigmoid()`.
    LogSigmoid => |x| ops::log_sigmoid(x);
    /// `nn.Softsign()`: `x / (1 + |x|)`.
    Softsign => |x| x.div(&ops::abs(x)?.add(Scalar::Float(1.0)).call()?).call();
    /// `nn.Tanhshrink()`: `x - tanh(x)`.
    Tanhshrink => |x| x.sub(&ops::tanh(x)?).call();
}

/// `nn.GELU(approximate='none')`.
#[derive(Module, Clone)]
pub struct GELU {
    /// `none` or `tanh`.
    pub approximate: String,
    hooks: Hooks,
}

impl GELU {
    /// `GELU()`: the exact erf form.
    pub fn new() -> GELU {
        GELU { approximate: "none".into(), hooks: Hooks::default() }
    }
    /// `GELU(approximate=...)`.
    pub fn with_approximate(approximate: &str) -> Result<GELU> {
        if approximate != "none" && approximate != "tanh" {
            return Err(invalid(
                "GELU",
                format!("approximate argument must be either none or tanh, got {approximate}"),
            ));
        }
        Ok(GELU { approximate: approximate.into(), hooks: Hooks::default() })
    }
}

impl Default for GELU {
    fn default() -> GELU {
        GELU::new()
    }
}

impl Forward for GELU {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::gelu(x, &self.approximate)
    }
}

macro_rules! param_activation {
    ($($(#[$doc:meta])* $name:ident { $($field:ident : $ty:ty = $default:expr),* } => |$s:ident, $x:ident| $body:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Module, Clone)]
        pub struct $name {
            $(
                #[doc = concat!("`", stringify!($field), "`.")]
                pub $field: $ty,
            )*
            hooks: Hooks,
        }
        impl $name {
            #[doc = concat!("`nn.", stringify!($name), "` with PyTorch's defaults.")]
            pub fn new() -> $name {
                $name { $($field: $default,)* hooks: Hooks::default() }
            }
            #[doc = concat!("`nn.", stringify!($name), "` with every argument.")]
            pub fn with($($field: $ty),*) -> $name {
                $name { $($field,)* hooks: Hooks::default() }
            }
        }
        impl Default for $name {
            fn default() -> $name {
                $name::new()
            }
        }
        impl Forward for $name {
            fn forward(&self, $x: &Tensor) -> Result<Tensor> {
                let $s = self;
                $body
            }
        }
    )*};
}

param_activation! {
    /// `nn.LeakyReLU(negative_slope=0.01)`.
    LeakyReLU { negative_slope: f64 = 0.01 } => |s, x| ops::leaky_relu(x, Scalar::Float(s.negative_slope));
    /// `nn.ELU(alpha=1.0)`.
    ELU { alpha: f64 = 1.0 } => |s, x| ops::elu(x, Scalar::Float(s.alpha), Scalar::Float(1.0), Scalar::Float(1.0));
    /// `nn.CELU(alpha=1.0)`.
    CELU { alpha: f64 = 1.0 } => |s, x| ops::celu(x, Scalar::Float(s.alpha));
    /// `nn.Softplus(beta=1.0, threshold=20.0)`.
    Softplus { beta: f64 = 1.0, threshold: f64 = 20.0 } => |s, x| ops::softplus(x, Scalar::Float(s.beta), Scalar::Float(s.threshold));
    /// `nn.Hardtanh(min_val=-1.0, max_val=1.0)`.
    Hardtanh { min_val: f64 = -1.0, max_val: f64 = 1.0 } => |s, x| ops::hardtanh(x, Scalar::Float(s.min_val), Scalar::Float(s.max_val));
    /// `nn.Threshold(threshold, value)`: `x if x > threshold else value`.
    Threshold { threshold: f64 = 0.0, value: f64 = 0.0 } => |s, x| ops::threshold(x, Scalar::Float(s.threshold), Scalar::Float(s.value));
    /// `nn.GLU(dim=-1)`.
    GLU { dim: i64 = -1 } => |s, x| ops::glu(x, s.dim);
    /// `nn.Softmax(dim)`.
    Softmax { dim: i64 = -1 } => |s, x| ops::softmax(x, s.dim, None);
    /// `nn.LogSoftmax(dim)`.
    LogSoftmax { dim: i64 = -1 } => |s, x| ops::log_softmax(x, s.dim, None);
    /// `nn.Softmin(dim)`: `softmax(-x)`.
    Softmin { dim: i64 = -1 } => |s, x| ops::softmax(&ops::neg(x)?, s.dim, None);
    /// `nn.Hardshrink(lambd=0.5)`: `x if |x| > lambd else 0`.
    Hardshrink { lambd: f64 = 0.5 } => |s, x| {
        let keep = ops::abs(x)?.gt(Scalar::Float(s.lambd))?;
        x.mul(&keep)
    };
    /// `nn.Softshrink(lambd=0.5)`: `x - lambd` above, `x + lambd` below, 0 between.
    Softshrink { lambd: f64 = 0.5 } => |s, x| {
        let shrunk = ops::abs(x)?.sub(Scalar::Float(s.lambd)).call()?.relu()?;
        shrunk.mul(&ops::sign(x)?)
    };
}

/// `nn.PReLU(num_parameters=1, init=0.25)`: a learned negative slope.
#[derive(Module, Clone)]
pub struct PReLU {
    /// `(num_parameters,)` filled with `init`.
    pub weight: Parameter,
    hooks: Hooks,
}

impl PReLU {
    /// `PReLU()`.
    pub fn new() -> Result<PReLU> {
        PReLU::with(1, 0.25)
    }
    /// `PReLU(num_parameters, init)`.
    pub fn with(num_parameters: i64, init: f64) -> Result<PReLU> {
        let w = ops::full(&[num_parameters], Scalar::Float(init), None, None, None, None)?;
        Ok(PReLU { weight: Parameter::new(w)?, hooks: Hooks::default() })
    }
}

impl Forward for PReLU {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::prelu(x, &self.weight)
    }
}

//! Dropout layers: Dropout, Dropout2d, AlphaDropout.

use aten::{ops, Tensor};
use c10::Result;

use crate::layers::invalid;
use crate::module::{Forward, Hooks};
use crate::Module;

fn check_p(op: &str, p: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&p) {
        return Err(invalid(op, format!("dropout probability has to be between 0 and 1, but got {p}")));
    }
    Ok(())
}

macro_rules! dropout_module {
    ($(#[$doc:meta])* $name:ident, $f:ident, $f_:ident) => {
        $(#[$doc])*
        #[derive(Module, Clone)]
        pub struct $name {
            /// Probability of an element (or channel) to be zeroed.
            pub p: f64,
            /// Whether to modify the input in place.
            pub inplace: bool,
            training: bool,
            hooks: Hooks,
        }

        impl $name {
            /// With probability `p` (PyTorch's default is 0.5).
            pub fn new(p: f64) -> Result<$name> {
                $name::with_inplace(p, false)
            }
            /// With probability `p`, in place if `inplace`.
            pub fn with_inplace(p: f64, inplace: bool) -> Result<$name> {
                check_p(stringify!($name), p)?;
                Ok($name { p, inplace, training: true, hooks: Hooks::default() })
            }
        }

        impl Forward for $name {
            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                if self.inplace {
                    ops::$f_(x, self.p, self.training)
                } else {
                    ops::$f(x, self.p, self.training)
                }
            }
        }
    };
}

dropout_module!(
    /// `nn.Dropout(p=0.5, inplace=False)`: zeroes elements with probability `p` in training and
    /// scales the rest by `1 / (1 - p)`; the identity in eval mode.
    Dropout,
    dropout,
    dropout_
);
dropout_module!(
    /// `nn.Dropout2d(p=0.5)`: zeroes whole channels.
    Dropout2d,
    feature_dropout,
    feature_dropout_
);
dropout_module!(
    /// `nn.AlphaDropout(p=0.5)`: dropout that keeps SELU's self-normalising statistics.
    AlphaDropout,
    alpha_dropout,
    alpha_dropout_
);

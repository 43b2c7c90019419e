//! A crate that depends on `torch` alone (no `nn`, `aten` or `c10` in its `Cargo.toml`), as a
//! user's crate does: `#[derive(Module)]` and `nn::module!` must expand to paths it can name.

use torch::nn::{self, Forward, Linear, Module};
use torch::{Result, Tensor};

#[derive(nn::Module)]
struct Derived {
    fc: Linear,
    #[module(skip)]
    label: String,
}

nn::module! {
    /// Two layers, declared with their constructors.
    struct Declared(hidden: i64) {
        fc1 = Linear::new(4, hidden)?,
        dropout = nn::Dropout::new(0.5)?,
        fc2: Linear = Linear::with_bias(hidden, 2, false)?,
    }
}

impl Forward for Declared {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.fc2.call(&self.dropout.call(&self.fc1.call(x)?.relu()?)?)
    }
}

#[test]
fn derive_and_module_macro_work_from_the_facade() {
    // One test: the seeded checks below share the global generator.
    torch::manual_seed(0);
    let d = Derived { fc: Linear::new(3, 5).unwrap(), label: "skipped".into() };
    let keys: Vec<String> = d.state_dict().keys().map(|k| k.to_string()).collect();
    assert_eq!(keys, ["fc.weight", "fc.bias"]);
    assert_eq!(d.label, "skipped");

    let mut m = Declared::new(8).unwrap();
    let keys: Vec<String> = m.state_dict().keys().map(|k| k.to_string()).collect();
    assert_eq!(keys, ["fc1.weight", "fc1.bias", "fc2.weight"]);
    assert_eq!(m.fc1.weight.sizes(), &[8, 4]);
    m.eval();
    let y = m.call(&Tensor::ones(&[3, 4]).call().unwrap()).unwrap();
    assert_eq!(y.sizes(), &[3, 2]);
    // The constructor's errors come back as values.
    let err = Declared::new(-1).err().expect("a negative width is refused");
    assert!(err.to_string().contains("-1"), "{err}");

    // Declaration order is PyTorch's registration order, so the same seed gives the same weights
    // as building the layers one after another by hand.
    torch::manual_seed(7);
    let m = Declared::new(3).unwrap();
    torch::manual_seed(7);
    let fc1 = Linear::new(4, 3).unwrap();
    let fc2 = Linear::with_bias(3, 2, false).unwrap();
    assert!(m.fc1.weight.equal(&fc1.weight).unwrap());
    assert!(m.fc2.weight.equal(&fc2.weight).unwrap());
}

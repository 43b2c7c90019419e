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

// Forty fields in the three spellings: each is one step of the macro (the recursion limit is
// 128 steps).
nn::module! {
    struct Wide {
        a0 = Linear::new(1, 1)?, a1 = nn::Linear::new(1, 1)?, a2 = torch::nn::Linear::new(1, 1)?, a3: Linear = Linear::new(1, 1)?,
        b0 = Linear::new(1, 1)?, b1 = nn::Linear::new(1, 1)?, b2 = torch::nn::Linear::new(1, 1)?, b3: Linear = Linear::new(1, 1)?,
        c0 = Linear::new(1, 1)?, c1 = nn::Linear::new(1, 1)?, c2 = torch::nn::Linear::new(1, 1)?, c3: Linear = Linear::new(1, 1)?,
        d0 = Linear::new(1, 1)?, d1 = nn::Linear::new(1, 1)?, d2 = torch::nn::Linear::new(1, 1)?, d3: Linear = Linear::new(1, 1)?,
        e0 = Linear::new(1, 1)?, e1 = nn::Linear::new(1, 1)?, e2 = torch::nn::Linear::new(1, 1)?, e3: Linear = Linear::new(1, 1)?,
        f0 = Linear::new(1, 1)?, f1 = nn::Linear::new(1, 1)?, f2 = torch::nn::Linear::new(1, 1)?, f3: Linear = Linear::new(1, 1)?,
        g0 = Linear::new(1, 1)?, g1 = nn::Linear::new(1, 1)?, g2 = torch::nn::Linear::new(1, 1)?, g3: Linear = Linear::new(1, 1)?,
        h0 = Linear::new(1, 1)?, h1 = nn::Linear::new(1, 1)?, h2 = torch::nn::Linear::new(1, 1)?, h3: Linear = Linear::new(1, 1)?,
        i0 = Linear::new(1, 1)?, i1 = nn::Linear::new(1, 1)?, i2 = torch::nn::Linear::new(1, 1)?, i3: Linear = Linear::new(1, 1)?,
        j0 = Linear::new(1, 1)?, j1 = nn::Linear::new(1, 1)?, j2 = torch::nn::Linear::new(1, 1)?, j3: Linear = Linear::new(1, 1)?,
    }
}

nn::module! {
    /// No fields at all.
    pub struct Empty {}
}

/// Held by every test that draws from the global generator: the seeded comparison below reads
/// two runs of it, which another test's draws in between would shift.
static GLOBAL_GENERATOR: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn module_macro_takes_many_fields_and_none() {
    let _generator = GLOBAL_GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let w = Wide::new().unwrap();
    assert_eq!(w.parameters().len(), 80);
    let keys: Vec<String> = w.state_dict().keys().map(|k| k.to_string()).collect();
    assert_eq!((keys[0].as_str(), keys[79].as_str()), ("a0.weight", "j3.bias"));
    assert!(Empty::new().unwrap().state_dict().is_empty());
}

#[test]
fn derive_and_module_macro_work_from_the_facade() {
    // One test: the seeded checks below share the global generator.
    let _generator = GLOBAL_GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
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

//! Tests of nn's optim: every optimizer against PyTorch 2.15 over a fixed gradient sequence,
//! parameter groups, state_dict round trips and load errors, argument errors, gradient
//! clipping, and every LR scheduler's lr sequence.
//!
//! Expected values were printed by PyTorch 2.15 (CPU, the default single-tensor code path). The
//! optimizer cases all ran this loop (`cls`, `kw` as in the comment above each constant):
//!
//! ```python
//! a = torch.nn.Parameter(torch.tensor(A0, dtype=torch.float32))   # A0, B0, GA, GB below
//! b = torch.nn.Parameter(torch.tensor(B0, dtype=torch.float64))
//! opt = cls([a, b], **kw)
//! for t in range(4):
//!     a.grad = torch.tensor(GA[t], dtype=torch.float32)
//!     b.grad = None if GB[t] is None else torch.tensor(GB[t], dtype=torch.float64)
//!     opt.step()
//! print(a.flatten().tolist(), b.tolist())
//! ```

use aten::Tensor;
use autograd::TensorAutograd;
use c10::{Error, Result, ScalarType};
use nn::optim::lr_scheduler::{
    AnnealStrategy, CosineAnnealingLR, ExponentialLR, LRScheduler, LambdaLR, LinearLR, LrLambda, MultiStepLR,
    OneCycleLR, OneCycleOptions, PlateauMode, PlateauOptions, ReduceLROnPlateau, SequentialLR, StepLR, ThresholdMode,
};
use nn::optim::{
    clip_grad_norm_, clip_grad_value_, Adagrad, AdagradOptions, Adam, AdamOptions, AdamW, AdamWOptions, Optimizer,
    OptimizerStateDict, OptionValue, ParamGroup, RMSprop, RMSpropOptions, SGDOptions, SGD,
};
use nn::Parameter;

fn vals(t: &Tensor) -> Vec<f64> {
    t.to(ScalarType::F64).call().unwrap().contiguous().call().unwrap().to_vec::<f64>().unwrap()
}

/// `|a - b| <= tol * (1 + |b|)` elementwise.
fn close(what: &str, a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len(), "{what}: {a:?} vs {b:?}");
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{what}: {a:?} vs {b:?}");
    }
}

fn message(e: Error) -> String {
    e.to_string()
}

fn err_contains<T>(r: Result<T>, needle: &str) {
    match r {
        Ok(_) => panic!("expected an error containing {needle:?}"),
        Err(e) => assert!(message(e).contains(needle), "error does not contain {needle:?}"),
    }
}

// ---- the optimizer cases -------------------------------------------------------------------

const A0: [f32; 6] = [0.5, -1.0, 1.5, 2.0, -0.25, 0.0];
const B0: [f64; 4] = [1.0, -2.0, 0.3, 0.7];
const GA: [[f32; 6]; 4] = [
    [0.1, -0.2, 0.3, 0.4, 0.5, -0.6],
    [-0.3, 0.1, 0.2, 0.05, -0.4, 0.3],
    [0.02, 0.03, -0.01, 0.2, 0.1, 0.05],
    [0.01, -0.05, 0.1, -0.1, 0.02, 0.04],
];
/// `b` has no gradient at step 2: it must be skipped (no update, no step count).
const GB: [Option<[f64; 4]>; 4] =
    [Some([0.5, -0.5, 1.0, -1.0]), Some([0.2, 0.1, -0.3, 0.4]), None, Some([-0.05, 0.02, 0.01, 0.03])];

/// `a` (float32, 2x3) and `b` (float64, 4) at their initial values.
fn params() -> (Parameter, Parameter) {
    let a = Parameter::new(Tensor::from_vec(A0.to_vec(), &[2, 3]).unwrap()).unwrap();
    let b = Parameter::new(Tensor::from_slice(&B0)).unwrap();
    (a, b)
}

/// Runs steps `steps` of the gradient sequence.
fn run(opt: &mut dyn Optimizer, a: &Parameter, b: &Parameter, steps: std::ops::Range<usize>) {
    for t in steps {
        a.set_grad(Some(Tensor::from_vec(GA[t].to_vec(), &[2, 3]).unwrap())).unwrap();
        b.set_grad(GB[t].map(|g| Tensor::from_slice(&g))).unwrap();
        opt.step().unwrap();
    }
}

fn check(what: &str, a: &Parameter, b: &Parameter, expected: &([f64; 6], [f64; 4])) {
    close(&format!("{what} (float32 a)"), &vals(a), &expected.0, 5e-7);
    close(&format!("{what} (float64 b)"), &vals(b), &expected.1, 1e-15);
}

type Build = fn(Vec<Parameter>) -> Result<Box<dyn Optimizer>>;
/// A name, a constructor over `[a, b]` and PyTorch's final `(a, b)`.
type Case = (&'static str, Build, ([f64; 6], [f64; 4]));

fn boxed<O: Optimizer + 'static>(o: Result<O>) -> Result<Box<dyn Optimizer>> {
    Ok(Box::new(o?))
}

// sgd_plain: SGD(lr=0.1)
const SGD_PLAIN: ([f64; 6], [f64; 4]) = (
    [
        0.5170000791549683,
        -0.9880000352859497,
        1.4410001039505005,
        1.9450000524520874,
        -0.2720000147819519,
        0.020999999716877937,
    ],
    [0.9349999999999999, -1.962, 0.22899999999999998, 0.7569999999999999],
);
// sgd_momentum: SGD(lr=0.1, momentum=0.9)
const SGD_MOMENTUM: ([f64; 6], [f64; 4]) = (
    [
        0.542110025882721,
        -0.9590200185775757,
        1.3345298767089844,
        1.820889949798584,
        -0.33454999327659607,
        0.11154000461101532,
    ],
    [0.8314999999999999, -1.8855, 0.08499999999999994, 0.892],
);
// sgd_dampening_wd: SGD(lr=0.1, momentum=0.9, dampening=0.5, weight_decay=0.01)
const SGD_DAMPENING_WD: ([f64; 6], [f64; 4]) = (
    [
        0.5007579922676086,
        -0.9389616847038269,
        1.3564767837524414,
        1.8293787240982056,
        -0.3765002489089966,
        0.1586989313364029,
    ],
    [0.84394213725, -1.8667767869999998, 0.055935119924999985, 0.928409529825],
);
// sgd_nesterov_wd: SGD(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)
const SGD_NESTEROV_WD: ([f64; 6], [f64; 4]) = (
    [
        0.4978748857975006,
        -0.9288274049758911,
        1.335855484008789,
        1.8077925443649292,
        -0.27472254633903503,
        0.04509574547410011,
    ],
    [0.8718962259999999, -1.8698930969999998, 0.17934767129999996, 0.7692731997],
);
// sgd_maximize: SGD(lr=0.1, momentum=0.5, maximize=True)
const SGD_MAXIMIZE: ([f64; 6], [f64; 4]) = (
    [
        0.4702499806880951,
        -1.0204999446868896,
        1.5997499227523804,
        2.103749990463257,
        -0.20925000309944153,
        -0.04850000515580177,
    ],
    [1.1125, -2.0705, 0.43100000000000005, 0.588],
);
// adam_default: Adam(lr=0.01)
const ADAM_DEFAULT: ([f64; 6], [f64; 4]) = (
    [
        0.5009585022926331,
        -0.9839354157447815,
        1.465643048286438,
        1.9691424369812012,
        -0.2633622884750366,
        0.015185956843197346,
    ],
    [0.9746891678825053, -1.9811931506210145, 0.2823531411285805, 0.7159485301113782],
);
// adam_amsgrad_wd: Adam(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True)
const ADAM_AMSGRAD_WD: ([f64; 6], [f64; 4]) = (
    [
        0.4936293363571167,
        -0.9706855416297913,
        1.4625778198242188,
        1.9639142751693726,
        -0.2600786089897156,
        0.013407616876065731,
    ],
    [0.9736781544943026, -1.9759911625259916, 0.28273798159159963, 0.7128808775818682],
);
// adam_maximize_eps: Adam(lr=0.02, maximize=True, eps=0.001)
const ADAM_MAXIMIZE_EPS: ([f64; 6], [f64; 4]) = (
    [
        0.49799877405166626,
        -1.0319398641586304,
        1.5684235095977783,
        2.0615053176879883,
        -0.22333386540412903,
        -0.030313726514577866,
    ],
    [1.050494264324659, -2.0375204836442378, 0.3352509980104413, 0.6681399893208391],
);
// adam_decoupled: Adam(lr=0.01, amsgrad=True, weight_decay=0.1, decoupled_weight_decay=True)
const ADAM_DECOUPLED: ([f64; 6], [f64; 4]) = (
    [
        0.49897822737693787,
        -0.9799779653549194,
        1.4597097635269165,
        1.9612077474594116,
        -0.26233118772506714,
        0.015149085782468319,
    ],
    [0.9717211426339152, -1.9752242488812448, 0.2814798391937841, 0.7138269048431145],
);
// adamw_default: AdamW(lr=0.01)
const ADAMW_DEFAULT: ([f64; 6], [f64; 4]) = (
    [
        0.5007601976394653,
        -0.9835391044616699,
        1.4650487899780273,
        1.9683477878570557,
        -0.26325905323028564,
        0.015182266011834145,
    ],
    [0.9743920963566463, -1.9805957215450376, 0.2822655778768462, 0.7157362056048547],
);
// adamw_amsgrad_maximize: AdamW(lr=0.01, weight_decay=0.5, amsgrad=True, maximize=True)
const ADAMW_AMSGRAD_MAXIMIZE: ([f64; 6], [f64; 4]) = (
    [
        0.48903337121009827,
        -0.9960322976112366,
        1.5042977333068848,
        1.990891456604004,
        -0.23183731734752655,
        -0.015002249740064144,
    ],
    [1.0102410283604415, -1.9888312980778302, 0.31304664906358515, 0.6737211911898228],
);
// rmsprop_default: RMSprop(lr=0.01)
const RMSPROP_DEFAULT: ([f64; 6], [f64; 4]) = (
    [
        0.4853813648223877,
        -0.9363915920257568,
        1.3200794458389282,
        1.8646975755691528,
        -0.30601632595062256,
        0.0415792353451252,
    ],
    [0.8720309684768223, -1.9236646695728745, 0.22790046790871982, 0.7598893042753486],
);
// rmsprop_momentum: RMSprop(lr=0.01, momentum=0.9)
const RMSPROP_MOMENTUM: ([f64; 6], [f64; 4]) = (
    [
        0.3980754613876343,
        -0.7813472151756287,
        0.9835121631622314,
        1.5591620206832886,
        -0.4567635655403137,
        0.20194785296916962,
    ],
    [0.6674608358410326, -1.7704006272846802, 0.08288124462225152, 0.8973191172091335],
);
// rmsprop_centered_wd: RMSprop(lr=0.01, centered=True, weight_decay=0.1)
const RMSPROP_CENTERED_WD: ([f64; 6], [f64; 4]) = (
    [
        0.4456634819507599,
        -0.8407568335533142,
        1.2782443761825562,
        1.7985589504241943,
        -0.2924620509147644,
        0.039450325071811676,
    ],
    [0.8499892094544786, -1.8629392035222054, 0.2228303882409562, 0.7442936252865001],
);
// rmsprop_all: RMSprop(lr=0.005, centered=True, momentum=0.5, alpha=0.9, maximize=True, eps=0.0001)
const RMSPROP_ALL: ([f64; 6], [f64; 4]) = (
    [
        0.5063566565513611,
        -1.0187205076217651,
        1.5534030199050903,
        2.0436418056488037,
        -0.23206371068954468,
        -0.01521755289286375,
    ],
    [1.0374765797886243, -2.0234243814041366, 0.32204501777056405, 0.6806550034270887],
);
// adagrad_default: Adagrad(lr=0.1)
const ADAGRAD_DEFAULT: ([f64; 6], [f64; 4]) = (
    [
        0.4854019582271576,
        -0.936381459236145,
        1.32058584690094,
        1.8648450374603271,
        -0.30604541301727295,
        0.041909828782081604,
    ],
    [0.8721059356601973, -1.923530922537552, 0.22777700621271543, 0.7600765822120452],
);
// adagrad_all: Adagrad(lr=0.1, lr_decay=0.1, weight_decay=0.05, initial_accumulator_value=0.5, eps=1e-06)
const ADAGRAD_ALL: ([f64; 6], [f64; 4]) = (
    [
        0.5067050457000732,
        -0.9608538746833801,
        1.402618408203125,
        1.9008147716522217,
        -0.2752229869365692,
        0.028753455728292465,
    ],
    [0.914829932797195, -1.9287415253096498, 0.23719844324937278, 0.7449375762229389],
);
// adagrad_maximize: Adagrad(lr=0.1, maximize=True)
const ADAGRAD_MAXIMIZE: ([f64; 6], [f64; 4]) = (
    [
        0.5145980715751648,
        -1.0636184215545654,
        1.67941415309906,
        2.135154962539673,
        -0.19395458698272705,
        -0.041909828782081604,
    ],
    [1.127894064339803, -2.0764690774624475, 0.37222299378728463, 0.6399234177879547],
);
// groups: SGD([{params: [a]}, {params: [b], lr: 0.01, momentum: 0.5}], lr=0.1, momentum=0.9)
const SGD_GROUPS: ([f64; 6], [f64; 4]) = (
    [
        0.542110025882721,
        -0.9590200185775757,
        1.3345298767089844,
        1.820889949798584,
        -0.33454999327659607,
        0.11154000461101532,
    ],
    [0.98875, -1.99295, 0.2869, 0.7111999999999999],
);
// groups: Adam([{params: [a], betas: (0.5, 0.6)}, {params: [b], lr: 0.1, amsgrad: True}], lr=0.01)
const ADAM_GROUPS: ([f64; 6], [f64; 4]) = (
    [
        0.5020818710327148,
        -0.9894168376922607,
        1.4679675102233887,
        1.9731578826904297,
        -0.2589242160320282,
        0.007553262636065483,
    ],
    [0.7468916788250524, -1.8119315062101464, 0.1235467100812693, 0.8594825160134839],
);

/// Every optimizer configuration with its PyTorch result.
fn cases() -> Vec<Case> {
    vec![
        ("sgd_plain", |p| boxed(SGD::new(p, SGDOptions::default().lr(0.1))), SGD_PLAIN),
        ("sgd_momentum", |p| boxed(SGD::new(p, SGDOptions::default().lr(0.1).momentum(0.9))), SGD_MOMENTUM),
        (
            "sgd_dampening_wd",
            |p| boxed(SGD::new(p, SGDOptions::default().lr(0.1).momentum(0.9).dampening(0.5).weight_decay(0.01))),
            SGD_DAMPENING_WD,
        ),
        (
            "sgd_nesterov_wd",
            |p| boxed(SGD::new(p, SGDOptions::default().lr(0.05).momentum(0.8).nesterov(true).weight_decay(0.1))),
            SGD_NESTEROV_WD,
        ),
        (
            "sgd_maximize",
            |p| boxed(SGD::new(p, SGDOptions::default().lr(0.1).momentum(0.5).maximize(true))),
            SGD_MAXIMIZE,
        ),
        ("adam_default", |p| boxed(Adam::new(p, AdamOptions::default().lr(0.01))), ADAM_DEFAULT),
        (
            "adam_amsgrad_wd",
            |p| boxed(Adam::new(p, AdamOptions::default().lr(0.01).betas(0.8, 0.9).weight_decay(0.1).amsgrad(true))),
            ADAM_AMSGRAD_WD,
        ),
        (
            "adam_maximize_eps",
            |p| boxed(Adam::new(p, AdamOptions::default().lr(0.02).maximize(true).eps(1e-3))),
            ADAM_MAXIMIZE_EPS,
        ),
        (
            "adam_decoupled",
            |p| {
                let o = AdamOptions::default().lr(0.01).amsgrad(true).weight_decay(0.1).decoupled_weight_decay(true);
                boxed(Adam::new(p, o))
            },
            ADAM_DECOUPLED,
        ),
        ("adamw_default", |p| boxed(AdamW::new(p, AdamWOptions::default().lr(0.01))), ADAMW_DEFAULT),
        (
            "adamw_amsgrad_maximize",
            |p| boxed(AdamW::new(p, AdamWOptions::default().lr(0.01).weight_decay(0.5).amsgrad(true).maximize(true))),
            ADAMW_AMSGRAD_MAXIMIZE,
        ),
        ("rmsprop_default", |p| boxed(RMSprop::new(p, RMSpropOptions::default().lr(0.01))), RMSPROP_DEFAULT),
        (
            "rmsprop_momentum",
            |p| boxed(RMSprop::new(p, RMSpropOptions::default().lr(0.01).momentum(0.9))),
            RMSPROP_MOMENTUM,
        ),
        (
            "rmsprop_centered_wd",
            |p| boxed(RMSprop::new(p, RMSpropOptions::default().lr(0.01).centered(true).weight_decay(0.1))),
            RMSPROP_CENTERED_WD,
        ),
        (
            "rmsprop_all",
            |p| {
                let o = RMSpropOptions::default()
                    .lr(0.005)
                    .centered(true)
                    .momentum(0.5)
                    .alpha(0.9)
                    .maximize(true)
                    .eps(1e-4);
                boxed(RMSprop::new(p, o))
            },
            RMSPROP_ALL,
        ),
        ("adagrad_default", |p| boxed(Adagrad::new(p, AdagradOptions::default().lr(0.1))), ADAGRAD_DEFAULT),
        (
            "adagrad_all",
            |p| {
                let o = AdagradOptions::default()
                    .lr(0.1)
                    .lr_decay(0.1)
                    .weight_decay(0.05)
                    .initial_accumulator_value(0.5)
                    .eps(1e-6);
                boxed(Adagrad::new(p, o))
            },
            ADAGRAD_ALL,
        ),
        (
            "adagrad_maximize",
            |p| boxed(Adagrad::new(p, AdagradOptions::default().lr(0.1).maximize(true))),
            ADAGRAD_MAXIMIZE,
        ),
    ]
}

fn run_cases(prefix: &str) {
    let mut n = 0;
    for (name, build, expected) in cases().into_iter().filter(|c| c.0.starts_with(prefix)) {
        let (a, b) = params();
        let mut opt = build(vec![a.clone(), b.clone()]).unwrap();
        run(opt.as_mut(), &a, &b, 0..4);
        check(name, &a, &b, &expected);
        n += 1;
    }
    assert!(n >= 3, "{prefix}: only {n} cases");
}

#[test]
fn sgd_matches_pytorch() {
    run_cases("sgd_");
}

#[test]
fn adam_matches_pytorch() {
    run_cases("adam_");
}

#[test]
fn adamw_matches_pytorch() {
    // AdamW's default weight decay is 0.01, Adam's 0.
    assert_eq!(AdamWOptions::default().weight_decay, 0.01);
    assert_eq!(AdamOptions::default().weight_decay, 0.0);
    let (a, b) = params();
    let mut opt = AdamW::new([a.clone(), b.clone()], AdamWOptions::default().lr(0.01)).unwrap();
    run(&mut opt, &a, &b, 0..4);
    check("adamw_default", &a, &b, &ADAMW_DEFAULT);
    let (a, b) = params();
    let o = AdamWOptions::default().lr(0.01).weight_decay(0.5).amsgrad(true).maximize(true);
    let mut opt = AdamW::new([a.clone(), b.clone()], o).unwrap();
    run(&mut opt, &a, &b, 0..4);
    check("adamw_amsgrad_maximize", &a, &b, &ADAMW_AMSGRAD_MAXIMIZE);
}

#[test]
fn rmsprop_matches_pytorch() {
    run_cases("rmsprop_");
}

#[test]
fn adagrad_matches_pytorch() {
    run_cases("adagrad_");
}

#[test]
fn param_groups_have_their_own_options() {
    let (a, b) = params();
    let base = SGDOptions::default().lr(0.1).momentum(0.9);
    let mut opt = SGD::with_groups(vec![
        ParamGroup::new([a.clone()], base),
        ParamGroup::new([b.clone()], SGDOptions { lr: 0.01, momentum: 0.5, ..base }),
    ])
    .unwrap();
    assert_eq!(opt.num_param_groups(), 2);
    assert_eq!((opt.lr(0), opt.lr(1)), (0.1, 0.01));
    assert_eq!(opt.param_groups()[1].options.momentum, 0.5);
    assert!(opt.group_params(1)[0].is_same(&b));
    run(&mut opt, &a, &b, 0..4);
    check("sgd groups", &a, &b, &SGD_GROUPS);

    let (a, b) = params();
    let base = AdamOptions::default().lr(0.01);
    let mut opt = Adam::with_groups(vec![ParamGroup::new([a.clone()], base.betas(0.5, 0.6))]).unwrap();
    opt.add_param_group(ParamGroup::new([b.clone()], base.lr(0.1).amsgrad(true))).unwrap();
    run(&mut opt, &a, &b, 0..4);
    check("adam groups", &a, &b, &ADAM_GROUPS);
}

#[test]
fn set_lr_between_steps_changes_the_update() {
    let p = Parameter::new(Tensor::from_slice(&[1.0f64])).unwrap();
    let mut opt = SGD::new([p.clone()], SGDOptions::default().lr(0.5)).unwrap();
    p.set_grad(Some(Tensor::from_slice(&[1.0f64]))).unwrap();
    opt.step().unwrap();
    opt.set_lr(0, 0.25);
    opt.step().unwrap();
    opt.options_mut(0).maximize = true;
    opt.step().unwrap();
    assert_eq!(vals(&p), [1.0 - 0.5 - 0.25 + 0.25]);
}

#[test]
fn zero_grad_clears_or_zeroes() {
    let (a, b) = params();
    let opt = SGD::new([a.clone(), b.clone()], SGDOptions::default()).unwrap();
    a.set_grad(Some(Tensor::from_vec(GA[0].to_vec(), &[2, 3]).unwrap())).unwrap();
    b.set_grad(Some(Tensor::from_slice(&[1.0f64, 2.0, 3.0, 4.0]))).unwrap();
    opt.zero_grad(false).unwrap();
    assert_eq!(vals(&a.grad().unwrap()), [0.0; 6]);
    assert_eq!(vals(&b.grad().unwrap()), [0.0; 4]);
    opt.zero_grad(true).unwrap();
    assert!(a.grad().is_none() && b.grad().is_none());
}

#[test]
fn step_through_autograd_and_no_history() {
    // loss = sum((w - 3)^2): SGD(lr=0.25) halves the distance to 3 each step.
    let w = Parameter::new(Tensor::from_slice(&[1.0f32, 5.0])).unwrap();
    let mut opt = SGD::new([w.clone()], SGDOptions::default().lr(0.25)).unwrap();
    for _ in 0..3 {
        opt.zero_grad(true).unwrap();
        let d = w.sub(3.0).call().unwrap();
        d.mul(&d).unwrap().sum().call().unwrap().backward().unwrap();
        opt.step().unwrap();
    }
    close("w", &vals(&w), &[2.75, 3.25], 1e-7);
    assert!(w.is_leaf() && w.grad_fn().is_none());
}

// ---- state_dict ----------------------------------------------------------------------------

/// Copies of `a` and `b` at their current values (a fresh model with loaded weights).
fn copies(a: &Parameter, b: &Parameter) -> (Parameter, Parameter) {
    (
        Parameter::new(aten::ops::clone(a, None).unwrap()).unwrap(),
        Parameter::new(aten::ops::clone(b, None).unwrap()).unwrap(),
    )
}

#[test]
fn state_dict_round_trip_continues_like_the_uninterrupted_run() {
    for (name, build, expected) in cases() {
        let (a, b) = params();
        let mut opt = build(vec![a.clone(), b.clone()]).unwrap();
        run(opt.as_mut(), &a, &b, 0..2);
        let saved = opt.state_dict().unwrap();
        let (a2, b2) = copies(&a, &b);
        let (a3, b3) = copies(&a, &b);
        // The saved state is a snapshot: stepping the original further must not change it.
        run(opt.as_mut(), &a, &b, 2..4);
        check(name, &a, &b, &expected);

        let mut fresh = build(vec![a2.clone(), b2.clone()]).unwrap();
        fresh.load_state_dict(&saved).unwrap();
        run(fresh.as_mut(), &a2, &b2, 2..4);
        check(&format!("{name} resumed"), &a2, &b2, &expected);

        // Through the flat tensor form (what a safetensors checkpoint holds).
        let flat = OptimizerStateDict::from_tensors(&saved.to_tensors()).unwrap();
        let mut fresh = build(vec![a3.clone(), b3.clone()]).unwrap();
        fresh.load_state_dict(&flat).unwrap();
        run(fresh.as_mut(), &a3, &b3, 2..4);
        check(&format!("{name} resumed from tensors"), &a3, &b3, &expected);
    }
}

#[test]
fn state_dict_contents_follow_pytorch() {
    // PyTorch: after the 4 steps of ADAM_GROUPS, state[0]["step"] == 4, state[1]["step"] == 3 (b
    // had no grad once), and param_groups[1] == {lr: 0.1, betas: (0.9, 0.999), eps: 1e-08,
    // weight_decay: 0, amsgrad: True, maximize: False, decoupled_weight_decay: False, ...,
    // params: [1]}.
    let (a, b) = params();
    let base = AdamOptions::default().lr(0.01);
    let mut opt = Adam::with_groups(vec![
        ParamGroup::new([a.clone()], base.betas(0.5, 0.6)),
        ParamGroup::new([b.clone()], base.lr(0.1).amsgrad(true)),
    ])
    .unwrap();
    let empty = opt.state_dict().unwrap();
    assert!(empty.state.is_empty(), "Adam's state is created lazily");
    run(&mut opt, &a, &b, 0..4);
    let sd = opt.state_dict().unwrap();
    let keys: Vec<Vec<&str>> = sd.state.values().map(|s| s.keys().collect()).collect();
    assert_eq!(keys, [vec!["step", "exp_avg", "exp_avg_sq"], vec!["step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"]]);
    let step = |i: usize| sd.state[&i].get("step").unwrap().clone();
    assert_eq!((step(0).dtype(), step(0).dim()), (ScalarType::F32, 0));
    assert_eq!((vals(&step(0)), vals(&step(1))), (vec![4.0], vec![3.0]));
    assert_eq!(sd.state[&1].get("exp_avg").unwrap().dtype(), ScalarType::F64);
    let g1 = &sd.param_groups[1];
    assert_eq!(g1.params, [1]);
    let expected: Vec<(&str, OptionValue)> = vec![
        ("amsgrad", OptionValue::Bool(true)),
        ("betas", OptionValue::Pair(0.9, 0.999)),
        ("decoupled_weight_decay", OptionValue::Bool(false)),
        ("eps", OptionValue::Float(1e-8)),
        ("lr", OptionValue::Float(0.1)),
        ("maximize", OptionValue::Bool(false)),
        ("weight_decay", OptionValue::Float(0.0)),
    ];
    assert_eq!(g1.options.iter().map(|(k, v)| (k.as_str(), *v)).collect::<Vec<_>>(), expected);
    assert_eq!(sd.param_groups[0].options["betas"], OptionValue::Pair(0.5, 0.6));

    // SGD without momentum keeps no state; with momentum, a buffer per parameter with a grad.
    let (a, b) = params();
    let mut opt = SGD::new([a.clone(), b.clone()], SGDOptions::default().lr(0.1)).unwrap();
    run(&mut opt, &a, &b, 0..2);
    assert!(opt.state_dict().unwrap().state.is_empty());
    // Adagrad creates its state in the constructor, as PyTorch does.
    let (a, b) = params();
    let opt = Adagrad::new([a, b], AdagradOptions::default().initial_accumulator_value(0.5)).unwrap();
    let sd = opt.state_dict().unwrap();
    assert_eq!(sd.state.len(), 2);
    assert_eq!(vals(sd.state[&1].get("sum").unwrap()), [0.5; 4]);
    assert_eq!(vals(sd.state[&1].get("step").unwrap()), [0.0]);
}

#[test]
fn load_state_dict_options_and_initial_lr() {
    let (a, b) = params();
    let mut opt = SGD::new([a.clone(), b.clone()], SGDOptions::default().lr(0.1).momentum(0.9)).unwrap();
    let _sched = StepLR::new(&mut opt, 2, 0.5).unwrap();
    run(&mut opt, &a, &b, 0..1);
    let mut sd = opt.state_dict().unwrap();
    assert_eq!(sd.param_groups[0].options["initial_lr"], OptionValue::Float(0.1));
    sd.param_groups[0].options.insert("lr".into(), OptionValue::Float(0.02));
    sd.param_groups[0].options.insert("nesterov".into(), OptionValue::Bool(true));
    // Keys PyTorch has and this crate does not (foreach, fused, ...) are ignored.
    sd.param_groups[0].options.insert("foreach".into(), OptionValue::Bool(false));
    let (c, d) = copies(&a, &b);
    let mut other = SGD::new([c, d], SGDOptions::default()).unwrap();
    other.load_state_dict(&sd).unwrap();
    assert_eq!(other.lr(0), 0.02);
    assert_eq!(other.initial_lr(0), Some(0.1));
    assert_eq!(other.param_groups()[0].options, SGDOptions::default().lr(0.02).momentum(0.9).nesterov(true));
}

#[test]
fn load_state_dict_errors_leave_the_optimizer_unchanged() {
    let (a, b) = params();
    let mut opt = Adam::new([a.clone(), b.clone()], AdamOptions::default().lr(0.01)).unwrap();
    run(&mut opt, &a, &b, 0..2);
    let good = opt.state_dict().unwrap();

    let (c, d) = copies(&a, &b);
    let mut target = Adam::new([c.clone(), d.clone()], AdamOptions::default().lr(0.01)).unwrap();
    target.load_state_dict(&good).unwrap();
    let before = target.state_dict().unwrap();
    let unchanged = |t: &Adam| {
        let now = t.state_dict().unwrap();
        assert_eq!(now.param_groups, before.param_groups);
        assert_eq!(now.state.len(), before.state.len());
        for (i, s) in &before.state {
            for (k, v) in s.iter() {
                assert_eq!(vals(now.state[i].get(k).unwrap()), vals(v), "state {i}.{k}");
            }
        }
    };

    let mut two_groups = good.clone();
    two_groups.param_groups.push(good.param_groups[0].clone());
    err_contains(target.load_state_dict(&two_groups), "loaded state dict has a different number of parameter groups");

    let mut short = good.clone();
    short.param_groups[0].params.pop();
    err_contains(
        target.load_state_dict(&short),
        "loaded state dict contains a parameter group that doesn't match the size of optimizer's group",
    );

    // A valid lr change together with a bad tensor: nothing may be applied.
    let mut bad_shape = good.clone();
    bad_shape.param_groups[0].options.insert("lr".into(), OptionValue::Float(0.5));
    bad_shape.state.get_mut(&1).unwrap().insert("exp_avg", Tensor::from_slice(&[0.0f64; 3]));
    err_contains(
        target.load_state_dict(&bad_shape),
        "'exp_avg' of parameter 1 has shape [3], but the parameter has shape [4]",
    );

    let mut missing = good.clone();
    missing.state.get_mut(&0).unwrap().remove("exp_avg_sq");
    err_contains(target.load_state_dict(&missing), "the state of parameter 0 has no 'exp_avg_sq'");

    let mut wrong_kind = good.clone();
    wrong_kind.param_groups[0].options.insert("lr".into(), OptionValue::Bool(true));
    err_contains(target.load_state_dict(&wrong_kind), "option 'lr' should be a number");

    let mut invalid = good.clone();
    invalid.param_groups[0].options.insert("betas".into(), OptionValue::Pair(1.5, 0.9));
    err_contains(target.load_state_dict(&invalid), "Invalid beta parameter at index 0: 1.5");

    let mut unknown = good.clone();
    let s = unknown.state[&1].clone();
    unknown.state.insert(7, s);
    err_contains(target.load_state_dict(&unknown), "parameter 7");

    unchanged(&target);
    assert_eq!(target.lr(0), 0.01);
    // And it still continues exactly like the uninterrupted run.
    run(&mut target, &c, &d, 2..4);
    check("after failed loads", &c, &d, &ADAM_DEFAULT);
}

// ---- argument errors -----------------------------------------------------------------------

#[test]
fn invalid_arguments_have_pytorchs_messages() {
    let p = || Parameter::new(Tensor::from_slice(&[0.0f32])).unwrap();
    let sgd = SGDOptions::default();
    err_contains(SGD::new([p()], sgd.lr(-0.1)), "Invalid learning rate: -0.1");
    err_contains(SGD::new([p()], sgd.momentum(-1.0)), "Invalid momentum value: -1.0");
    err_contains(SGD::new([p()], sgd.weight_decay(-0.5)), "Invalid weight_decay value: -0.5");
    err_contains(
        SGD::new([p()], sgd.lr(0.1).nesterov(true)),
        "Nesterov momentum requires a momentum and zero dampening",
    );
    err_contains(
        SGD::new([p()], sgd.momentum(0.9).dampening(0.1).nesterov(true)),
        "Nesterov momentum requires a momentum and zero dampening",
    );
    err_contains(SGD::new([], sgd), "optimizer got an empty parameter list");
    err_contains(SGD::with_groups(vec![]), "optimizer got an empty parameter list");
    let adam = AdamOptions::default();
    err_contains(Adam::new([p()], adam.lr(f64::NAN)), "Invalid learning rate: nan");
    err_contains(Adam::new([p()], adam.eps(-1e-8)), "Invalid epsilon value: -1e-08");
    err_contains(Adam::new([p()], adam.betas(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0");
    err_contains(Adam::new([p()], adam.betas(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1");
    err_contains(AdamW::new([p()], AdamWOptions::default().weight_decay(-0.01)), "Invalid weight_decay value: -0.01");
    err_contains(RMSprop::new([p()], RMSpropOptions::default().alpha(-0.5)), "Invalid alpha value: -0.5");
    err_contains(RMSprop::new([p()], RMSpropOptions::default().momentum(-0.5)), "Invalid momentum value: -0.5");
    err_contains(Adagrad::new([p()], AdagradOptions::default().lr_decay(-1.0)), "Invalid lr_decay value: -1.0");
    err_contains(
        Adagrad::new([p()], AdagradOptions::default().initial_accumulator_value(-0.1)),
        "Invalid initial_accumulator_value value: -0.1",
    );
    // Group options are validated too, and a parameter may be in one group only.
    let q = p();
    err_contains(
        SGD::with_groups(vec![ParamGroup::new([p()], sgd), ParamGroup::new([p()], sgd.lr(-1.0))]),
        "Invalid learning rate: -1.0",
    );
    err_contains(
        SGD::with_groups(vec![ParamGroup::new([q.clone()], sgd), ParamGroup::new([q.clone()], sgd)]),
        "some parameters appear in more than one parameter group",
    );
    let mut opt = SGD::new([q.clone()], sgd).unwrap();
    err_contains(
        opt.add_param_group(ParamGroup::new([p(), q.clone()], sgd)),
        "some parameters appear in more than one",
    );
    assert_eq!(opt.num_param_groups(), 1);
    err_contains(SGD::new([q.clone(), q.clone()], sgd), "duplicate parameters");
    let mut ada = Adagrad::new([p()], AdagradOptions::default()).unwrap();
    err_contains(ada.set_momentum(0, 0.9), "Adagrad has no momentum or beta1 option");
}

// ---- gradient clipping ---------------------------------------------------------------------
//
// a = Parameter(zeros(2, 3)); b = Parameter(zeros(4, dtype=float64)); c = Parameter(zeros(2))
// a.grad = tensor(G1); b.grad = tensor(G2, dtype=float64)   # c has no grad
// total = torch.nn.utils.clip_grad_norm_([a, b, c], max_norm, norm_type)

const G1: [f32; 6] = [0.3, -1.2, 2.0, 0.5, 0.0, -0.7];
const G2: [f64; 4] = [1.5, -0.25, 3.0, 0.1];

// clip_grad_norm_([a (f32 grad G1), b (f64 grad G2), c (no grad)], max_norm=1.0, norm_type=2.0) -> tensor(4.1943, dtype=torch.float64)
const CLIP_L2: (f64, [f64; 6], [f64; 4]) = (
    4.194341452493193,
    [0.07152491807937622, -0.2860996723175049, 0.476832777261734, 0.1192081943154335, 0.0, -0.16689147055149078],
    [0.3576245900256363, -0.05960409833760605, 0.7152491800512726, 0.023841639335042422],
);
// clip_grad_norm_([a (f32 grad G1), b (f64 grad G2), c (no grad)], max_norm=2.5, norm_type=1.0) -> tensor(9.5500, dtype=torch.float64)
const CLIP_L1: (f64, [f64; 6], [f64; 4]) = (
    9.549999809265136,
    [0.07853402942419052, -0.3141361176967621, 0.5235601663589478, 0.13089004158973694, 0.0, -0.18324606120586395],
    [0.39267012379327315, -0.06544502063221219, 0.7853402475865463, 0.02617800825288488],
);
// clip_grad_norm_([a (f32 grad G1), b (f64 grad G2), c (no grad)], max_norm=1.0, norm_type=inf) -> tensor(3., dtype=torch.float64)
const CLIP_INF: (f64, [f64; 6], [f64; 4]) = (
    3.0,
    [0.09999997168779373, -0.3999998867511749, 0.6666664481163025, 0.16666661202907562, 0.0, -0.2333332598209381],
    [0.4999998333333889, -0.08333330555556481, 0.9999996666667778, 0.033333322222225924],
);
// clip_grad_norm_([a (f32 grad G1), b (f64 grad G2), c (no grad)], max_norm=10.0, norm_type=3.0) -> tensor(3.4374, dtype=torch.float64)
const CLIP_L3: (f64, [f64; 6], [f64; 4]) = (
    3.437379493599578,
    [0.30000001192092896, -1.2000000476837158, 2.0, 0.5, 0.0, -0.699999988079071],
    [1.5, -0.25, 3.0, 0.1],
);
// clip_grad_value_([a], 0.6)
const CLIP_VALUE: [f64; 6] =
    [0.30000001192092896, -0.6000000238418579, 0.6000000238418579, 0.5, 0.0, -0.6000000238418579];

fn clip_params() -> [Parameter; 3] {
    let a = Parameter::new(Tensor::from_vec(vec![0.0f32; 6], &[2, 3]).unwrap()).unwrap();
    let b = Parameter::new(Tensor::from_slice(&[0.0f64; 4])).unwrap();
    let c = Parameter::new(Tensor::from_slice(&[0.0f32; 2])).unwrap();
    a.set_grad(Some(Tensor::from_vec(G1.to_vec(), &[2, 3]).unwrap())).unwrap();
    b.set_grad(Some(Tensor::from_slice(&G2))).unwrap();
    [a, b, c]
}

#[test]
fn clip_grad_norm_matches_pytorch() {
    for (name, max_norm, norm_type, expected) in [
        ("l2", 1.0, 2.0, CLIP_L2),
        ("l1", 2.5, 1.0, CLIP_L1),
        ("inf", 1.0, f64::INFINITY, CLIP_INF),
        ("l3 (no clipping)", 10.0, 3.0, CLIP_L3),
    ] {
        let ps = clip_params();
        let total = clip_grad_norm_(&ps, max_norm, norm_type, false).unwrap();
        assert_eq!((total.dim(), total.dtype()), (0, ScalarType::F64), "{name}: promoted like torch.stack");
        close(name, &vals(&total), &[expected.0], 1e-12);
        close(name, &vals(&ps[0].grad().unwrap()), &expected.1, 1e-6);
        close(name, &vals(&ps[1].grad().unwrap()), &expected.2, 1e-6);
        assert!(ps[2].grad().is_none());
    }
    // No gradients at all: a float32 zero, nothing to clip.
    let p = Parameter::new(Tensor::from_slice(&[1.0f32])).unwrap();
    let total = clip_grad_norm_(&[p], 1.0, 2.0, true).unwrap();
    assert_eq!((total.dtype(), vals(&total)), (ScalarType::F32, vec![0.0]));
}

#[test]
fn clip_grad_norm_nonfinite() {
    let p = Parameter::new(Tensor::from_slice(&[0.0f32, 0.0])).unwrap();
    p.set_grad(Some(Tensor::from_slice(&[f32::INFINITY, 1.0]))).unwrap();
    err_contains(
        clip_grad_norm_(std::slice::from_ref(&p), 1.0, 2.0, true),
        "The total norm of order 2.0 for gradients from `parameters` is non-finite, so it cannot be clipped.",
    );
    assert_eq!(vals(&p.grad().unwrap())[1], 1.0, "the error leaves the gradients alone");
    p.set_grad(Some(Tensor::from_slice(&[f32::NAN, 1.0]))).unwrap();
    err_contains(clip_grad_norm_(std::slice::from_ref(&p), 1.0, f64::INFINITY, true), "The total norm of order inf");
    // Without the check PyTorch scales by the non-finite norm anyway.
    let total = clip_grad_norm_(std::slice::from_ref(&p), 1.0, 2.0, false).unwrap();
    assert!(vals(&total)[0].is_nan());
}

#[test]
fn clip_grad_value_matches_pytorch() {
    let ps = clip_params();
    clip_grad_value_(&ps[..1], 0.6).unwrap();
    close("clip_grad_value_", &vals(&ps[0].grad().unwrap()), &CLIP_VALUE, 1e-7);
}

// ---- LR schedulers -------------------------------------------------------------------------
//
// Each sequence is `[sched.get_last_lr()]` after construction and after each of
// `opt.step(); sched.step()`, per group, printed by PyTorch with SGD on one zero parameter per
// group (`{"params": [p], "lr": lr}`), unless stated otherwise.

/// SGD with one parameter per group, with these lrs.
fn sgd_groups(lrs: &[f64], momentum: f64) -> SGD {
    let groups = lrs
        .iter()
        .map(|&lr| {
            let p = Parameter::new(Tensor::from_slice(&[0.0f32])).unwrap();
            ParamGroup::new([p], SGDOptions::default().lr(lr).momentum(momentum))
        })
        .collect();
    SGD::with_groups(groups).unwrap()
}

fn lr_sequence(opt: &mut dyn Optimizer, sched: &mut dyn LRScheduler, steps: usize) -> Vec<Vec<f64>> {
    let mut out = vec![sched.get_last_lr().to_vec()];
    for _ in 0..steps {
        opt.step().unwrap();
        sched.step(opt).unwrap();
        out.push(sched.get_last_lr().to_vec());
        let current: Vec<f64> = (0..opt.num_param_groups()).map(|g| opt.lr(g)).collect();
        assert_eq!(out.last().unwrap(), &current, "get_last_lr is the optimizer's lr");
    }
    out
}

fn check_sequence(what: &str, got: &[Vec<f64>], expected: &[&[f64]]) {
    for (g, want) in expected.iter().enumerate() {
        let col: Vec<f64> = got.iter().map(|row| row[g]).collect();
        close(&format!("{what} group {g}"), &col, want, 1e-13);
    }
}

#[test]
fn lambda_lr() {
    let mut opt = sgd_groups(&[0.1, 0.05], 0.0);
    let lambdas: Vec<LrLambda> =
        vec![std::sync::Arc::new(|e| 0.95f64.powf(e as f64)), std::sync::Arc::new(|e| 1.0 / (e + 1) as f64)];
    let mut s = LambdaLR::with_lambdas(&mut opt, lambdas).unwrap();
    check_sequence("LambdaLR", &lr_sequence(&mut opt, &mut s, 6), &[&LAMBDA_0, &LAMBDA_1]);
    let mut opt = sgd_groups(&[0.1, 0.05], 0.0);
    err_contains(
        LambdaLR::with_lambdas(&mut opt, vec![std::sync::Arc::new(|_| 1.0)]),
        "Expected 2 lr_lambdas, but got 1",
    );
    let mut s = LambdaLR::new(&mut opt, |e| 0.95f64.powf(e as f64)).unwrap();
    let got = lr_sequence(&mut opt, &mut s, 6);
    check_sequence("LambdaLR (one lambda)", &got, &[&LAMBDA_0]);
}

#[test]
fn step_lr() {
    let mut opt = sgd_groups(&[0.1, 0.05], 0.0);
    let mut s = StepLR::new(&mut opt, 3, 0.5).unwrap();
    assert_eq!(opt.initial_lr(0), Some(0.1));
    check_sequence("StepLR", &lr_sequence(&mut opt, &mut s, 10), &[&STEP_0, &STEP_1]);
    err_contains(StepLR::new(&mut opt, 0, 0.5), "step_size must be a positive integer");
}

#[test]
fn multi_step_lr() {
    let mut opt = sgd_groups(&[0.1], 0.0);
    let mut s = MultiStepLR::new(&mut opt, &[2, 5, 5, 8], 0.1).unwrap();
    check_sequence("MultiStepLR", &lr_sequence(&mut opt, &mut s, 10), &[&MULTISTEP_0]);
}

#[test]
fn exponential_lr() {
    let mut opt = sgd_groups(&[0.1], 0.0);
    let mut s = ExponentialLR::new(&mut opt, 0.9).unwrap();
    check_sequence("ExponentialLR", &lr_sequence(&mut opt, &mut s, 8), &[&EXPONENTIAL_0]);
}

#[test]
fn cosine_annealing_lr() {
    let mut opt = sgd_groups(&[0.1, 0.02], 0.0);
    let mut s = CosineAnnealingLR::new(&mut opt, 5, 0.001).unwrap();
    check_sequence("CosineAnnealingLR", &lr_sequence(&mut opt, &mut s, 15), &[&COSINE_0, &COSINE_1]);
}

#[test]
fn linear_lr() {
    let mut opt = sgd_groups(&[0.1], 0.0);
    let mut s = LinearLR::new(&mut opt).unwrap();
    check_sequence("LinearLR defaults", &lr_sequence(&mut opt, &mut s, 8), &[&LINEAR_DEFAULT_0]);
    let mut opt = sgd_groups(&[0.1], 0.0);
    let mut s = LinearLR::with_factors(&mut opt, 0.5, 0.1, 4).unwrap();
    check_sequence("LinearLR", &lr_sequence(&mut opt, &mut s, 7), &[&LINEAR_0]);
    err_contains(
        LinearLR::with_factors(&mut opt, 0.0, 1.0, 5),
        "Starting multiplicative factor expected to be greater than 0 and less or equal to 1.",
    );
    err_contains(
        LinearLR::with_factors(&mut opt, 0.5, 1.5, 5),
        "Ending multiplicative factor expected to be between 0 and 1.",
    );
}

#[test]
fn one_cycle_lr_cycles_lr_and_momentum() {
    let mut opt = sgd_groups(&[0.1], 0.9);
    let mut s = OneCycleLR::new(&mut opt, 0.1, 10).unwrap();
    assert_eq!(opt.initial_lr(0), Some(0.1 / 25.0));
    let mut momentum = vec![opt.momentum(0).unwrap()];
    let mut lrs = vec![s.get_last_lr().to_vec()];
    for _ in 0..9 {
        opt.step().unwrap();
        s.step(&mut opt).unwrap();
        lrs.push(s.get_last_lr().to_vec());
        momentum.push(opt.momentum(0).unwrap());
    }
    check_sequence("OneCycleLR", &lrs, &[&ONECYCLE_0]);
    close("OneCycleLR momentum", &momentum, &ONECYCLE_MOMENTUM, 1e-13);
    s.step(&mut opt).unwrap(); // step 10 == total_steps is still allowed
    err_contains(s.step(&mut opt), "Tried to step 11 times. The specified number of total steps is 10");
}

#[test]
fn one_cycle_lr_three_phase_linear_with_adam_beta1() {
    let groups = [0.001, 0.001]
        .iter()
        .map(|&lr| {
            ParamGroup::new([Parameter::new(Tensor::from_slice(&[0.0f32])).unwrap()], AdamOptions::default().lr(lr))
        })
        .collect();
    let mut opt = Adam::with_groups(groups).unwrap();
    let o = OneCycleOptions::new(0.0, 1)
        .max_lrs(vec![0.01, 0.02])
        .epochs(2, 4)
        .pct_start(0.25)
        .anneal_strategy(AnnealStrategy::Linear)
        .three_phase(true)
        .div_factor(10.0)
        .final_div_factor(100.0)
        .momentum_range(0.8, 0.9);
    let mut s = OneCycleLR::with_options(&mut opt, o).unwrap();
    assert_eq!(s.total_steps(), 8);
    let mut beta1 = vec![opt.param_groups()[1].options.betas.0];
    let mut lrs = vec![s.get_last_lr().to_vec()];
    for _ in 0..8 {
        s.step(&mut opt).unwrap();
        lrs.push(s.get_last_lr().to_vec());
        beta1.push(opt.param_groups()[1].options.betas.0);
        assert_eq!(opt.param_groups()[1].options.betas.1, 0.999);
    }
    check_sequence("OneCycleLR three-phase", &lrs, &[&ONECYCLE3_0, &ONECYCLE3_1]);
    close("OneCycleLR beta1", &beta1, &ONECYCLE3_BETA1, 1e-13);
}

#[test]
fn one_cycle_lr_errors() {
    let mut opt = sgd_groups(&[0.1], 0.0);
    err_contains(OneCycleLR::new(&mut opt, 0.1, 0), "Expected positive integer total_steps, but got 0");
    let mut o = OneCycleOptions::new(0.1, 10);
    o.total_steps = None;
    err_contains(
        OneCycleLR::with_options(&mut opt, o),
        "You must define either total_steps OR (epochs AND steps_per_epoch)",
    );
    err_contains(
        OneCycleLR::with_options(&mut opt, OneCycleOptions::new(0.1, 10).pct_start(1.5)),
        "Expected float between 0 and 1 pct_start, but got 1.5",
    );
    err_contains(
        OneCycleLR::with_options(&mut opt, OneCycleOptions::new(0.1, 10).max_lrs(vec![0.1, 0.2, 0.3])),
        "max_lr must have the same length as optimizer.param_groups. max_lr has 3 values, param_groups has 1.",
    );
    let p = Parameter::new(Tensor::from_slice(&[0.0f32])).unwrap();
    let mut ada = Adagrad::new([p], AdagradOptions::default()).unwrap();
    err_contains(
        OneCycleLR::new(&mut ada, 0.1, 10),
        "optimizer must support momentum or beta1 with `cycle_momentum` option enabled",
    );
    assert!(OneCycleLR::with_options(&mut ada, OneCycleOptions::new(0.1, 10).cycle_momentum(false)).is_ok());
}

#[test]
fn sequential_lr() {
    let mut opt = sgd_groups(&[0.1, 0.05], 0.0);
    let s1 = LinearLR::with_factors(&mut opt, 0.1, 1.0, 3).unwrap();
    let s2 = ExponentialLR::new(&mut opt, 0.9).unwrap();
    let mut s = SequentialLR::new(&mut opt, vec![Box::new(s1), Box::new(s2)], vec![3]).unwrap();
    check_sequence("SequentialLR", &lr_sequence(&mut opt, &mut s, 8), &[&SEQ_0, &SEQ_1]);

    let mut opt = sgd_groups(&[0.1], 0.0);
    let s1 = ExponentialLR::new(&mut opt, 0.5).unwrap();
    let s2 = CosineAnnealingLR::new(&mut opt, 4, 0.01).unwrap();
    let s3 = StepLR::new(&mut opt, 2, 0.1).unwrap();
    let mut s = SequentialLR::new(&mut opt, vec![Box::new(s1), Box::new(s2), Box::new(s3)], vec![2, 6]).unwrap();
    check_sequence("SequentialLR of three", &lr_sequence(&mut opt, &mut s, 10), &[&SEQ3_0]);
    assert_eq!(s.schedulers().len(), 3);

    let s1 = ExponentialLR::new(&mut opt, 0.5).unwrap();
    err_contains(
        SequentialLR::new(&mut opt, vec![Box::new(s1)], vec![2]),
        "Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone points",
    );
    err_contains(SequentialLR::new(&mut opt, vec![], vec![]), "SequentialLR expects at least one scheduler");
}

#[test]
fn scheduler_rejects_an_optimizer_with_other_groups() {
    let mut opt = sgd_groups(&[0.1], 0.0);
    let mut s = StepLR::new(&mut opt, 1, 0.5).unwrap();
    opt.add_param_group(ParamGroup::new(
        [Parameter::new(Tensor::from_slice(&[0.0f32])).unwrap()],
        SGDOptions::default(),
    ))
    .unwrap();
    err_contains(s.step(&mut opt), "the optimizer has 2 parameter groups, but the scheduler was built for 1");
}

#[test]
fn reduce_lr_on_plateau() {
    let mut opt = sgd_groups(&[0.1, 0.05], 0.0);
    let o = PlateauOptions::default().patience(2).cooldown(1).min_lr(vec![0.001, 0.01]).factor(0.5);
    let mut s = ReduceLROnPlateau::new(&opt, o).unwrap();
    let mut got = vec![s.get_last_lr().to_vec()];
    for m in [1.0, 0.9, 0.95, 0.95, 0.95, 0.89, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9] {
        s.step(&mut opt, m).unwrap();
        got.push(s.get_last_lr().to_vec());
    }
    check_sequence("ReduceLROnPlateau", &got, &[&PLATEAU_0, &PLATEAU_1]);
    assert_eq!(s.last_epoch, 14);

    let mut opt = sgd_groups(&[0.1], 0.0);
    let o =
        PlateauOptions::default().mode(PlateauMode::Max).threshold_mode(ThresholdMode::Abs).threshold(0.1).patience(1);
    let mut s = ReduceLROnPlateau::new(&opt, o).unwrap();
    let mut got = vec![s.get_last_lr().to_vec()];
    for m in [0.5, 0.55, 0.65, 0.7, 0.74, 0.8, 0.85, 0.85] {
        s.step(&mut opt, m).unwrap();
        got.push(s.get_last_lr().to_vec());
    }
    check_sequence("ReduceLROnPlateau max/abs", &got, &[&PLATEAU_MAX_0]);

    err_contains(ReduceLROnPlateau::new(&opt, PlateauOptions::default().factor(1.0)), "Factor should be < 1.0.");
    err_contains(
        ReduceLROnPlateau::new(&opt, PlateauOptions::default().min_lr(vec![0.1, 0.2])),
        "expected 1 min_lrs, got 2",
    );
}

// ---- scheduler expectations (PyTorch 2.15) ---------------------------------------------------

// LambdaLR(SGD lr=[0.1, 0.05], lr_lambda=[lambda e: 0.95**e, lambda e: 1/(e+1)]), 6 steps
const LAMBDA_0: [f64; 7] = [0.1, 0.095, 0.09025, 0.0857375, 0.081450625, 0.07737809374999999, 0.07350918906249998];
const LAMBDA_1: [f64; 7] =
    [0.05, 0.025, 0.016666666666666666, 0.0125, 0.010000000000000002, 0.008333333333333333, 0.007142857142857143];
// StepLR(SGD lr=[0.1, 0.05], step_size=3, gamma=0.5), 10 steps
const STEP_0: [f64; 11] = [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125, 0.0125];
const STEP_1: [f64; 11] = [0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125, 0.0125, 0.0125, 0.00625, 0.00625];
// MultiStepLR(SGD lr=0.1, milestones=[2, 5, 5, 8], gamma=0.1), 10 steps
const MULTISTEP_0: [f64; 11] = [
    0.1,
    0.1,
    0.010000000000000002,
    0.010000000000000002,
    0.010000000000000002,
    0.00010000000000000005,
    0.00010000000000000005,
    0.00010000000000000005,
    1.0000000000000006e-05,
    1.0000000000000006e-05,
    1.0000000000000006e-05,
];
// ExponentialLR(SGD lr=0.1, gamma=0.9), 8 steps
const EXPONENTIAL_0: [f64; 9] = [
    0.1,
    0.09000000000000001,
    0.08100000000000002,
    0.07290000000000002,
    0.06561000000000002,
    0.05904900000000002,
    0.05314410000000002,
    0.04782969000000002,
    0.043046721000000024,
];
// CosineAnnealingLR(SGD lr=[0.1, 0.02], T_max=5, eta_min=0.001), 15 steps
const COSINE_0: [f64; 16] = [
    0.1,
    0.0905463412215599,
    0.06579634122155989,
    0.035203658778440096,
    0.010453658778440105,
    0.001,
    0.010453658778440102,
    0.03520365877844012,
    0.06579634122155993,
    0.09054634122155995,
    0.10000000000000005,
    0.09054634122155998,
    0.06579634122155995,
    0.03520365877844014,
    0.010453658778440116,
    0.001,
];
const COSINE_1: [f64; 16] = [
    0.02,
    0.018185661446562,
    0.013435661446562,
    0.007564338553437999,
    0.002814338553438,
    0.001,
    0.002814338553437999,
    0.007564338553438001,
    0.013435661446562004,
    0.01818566144656201,
    0.020000000000000007,
    0.018185661446562015,
    0.013435661446562008,
    0.007564338553438004,
    0.0028143385534380016,
    0.001,
];
// LinearLR(SGD lr=0.1) (start_factor=1/3, end_factor=1, total_iters=5), 8 steps
const LINEAR_DEFAULT_0: [f64; 9] = [
    0.03333333333333333,
    0.04666666666666667,
    0.060000000000000005,
    0.07333333333333335,
    0.08666666666666668,
    0.1,
    0.1,
    0.1,
    0.1,
];
// LinearLR(SGD lr=0.1, start_factor=0.5, end_factor=0.1, total_iters=4), 7 steps
const LINEAR_0: [f64; 8] =
    [0.05, 0.04000000000000001, 0.030000000000000006, 0.020000000000000004, 0.01, 0.01, 0.01, 0.01];
// OneCycleLR(SGD lr=0.1 momentum=0.9, max_lr=0.1, total_steps=10), 9 steps; momentum after each
const ONECYCLE_0: [f64; 10] = [
    0.0040000000000000036,
    0.052000000000000005,
    0.1,
    0.09504846320134738,
    0.0811745653949763,
    0.06112620219362893,
    0.03887419780637107,
    0.0188258346050237,
    0.004951936798652629,
    4e-07,
];
const ONECYCLE_MOMENTUM: [f64; 10] = [
    0.95,
    0.8999999999999999,
    0.85,
    0.854951556604879,
    0.8688255099070633,
    0.8888739533021842,
    0.9111260466978157,
    0.9311744900929366,
    0.945048443395121,
    0.95,
];
// OneCycleLR(Adam 2 groups, max_lr=[0.01, 0.02], epochs=2, steps_per_epoch=4, pct_start=0.25, anneal_strategy='linear', three_phase=True, div_factor=10, final_div_factor=100, base_momentum=0.8, max_momentum=0.9), 8 steps; beta1 of group 1
const ONECYCLE3_0: [f64; 9] = [
    0.001,
    0.010000000000000002,
    0.0009999999999999992,
    0.000802,
    0.0006039999999999999,
    0.000406,
    0.00020799999999999996,
    1.0000000000000026e-05,
    -0.00018800000000000002,
];
const ONECYCLE3_1: [f64; 9] = [
    0.002,
    0.020000000000000004,
    0.0019999999999999983,
    0.001604,
    0.0012079999999999999,
    0.000812,
    0.0004159999999999999,
    2.0000000000000052e-05,
    -0.00037600000000000003,
];
const ONECYCLE3_BETA1: [f64; 9] = [0.9, 0.8, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9];
// SequentialLR(SGD lr=[0.1, 0.05], [LinearLR(start_factor=0.1, total_iters=3), ExponentialLR(gamma=0.9)], milestones=[3]), 8 steps
const SEQ_0: [f64; 9] = [
    0.010000000000000002,
    0.04,
    0.07,
    0.1,
    0.09000000000000001,
    0.08100000000000002,
    0.07290000000000002,
    0.06561000000000002,
    0.05904900000000002,
];
const SEQ_1: [f64; 9] = [
    0.005000000000000001,
    0.02,
    0.035,
    0.05,
    0.045000000000000005,
    0.04050000000000001,
    0.03645000000000001,
    0.03280500000000001,
    0.02952450000000001,
];
// SequentialLR(SGD lr=0.1, [ExponentialLR(0.5), CosineAnnealingLR(T_max=4, eta_min=0.01), StepLR(2, 0.1)], milestones=[2, 6]), 10 steps
const SEQ3_0: [f64; 11] = [
    0.1,
    0.05,
    0.1,
    0.08681980515339464,
    0.05500000000000001,
    0.023180194846605363,
    0.1,
    0.1,
    0.010000000000000002,
    0.010000000000000002,
    0.0010000000000000002,
];
// ReduceLROnPlateau(SGD lr=[0.1, 0.05], patience=2, cooldown=1, min_lr=[0.001, 0.01], factor=0.5), metrics [1.0, 0.9, 0.95, 0.95, 0.95, 0.89, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]
const PLATEAU_0: [f64; 15] =
    [0.1, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.025, 0.0125, 0.0125];
const PLATEAU_1: [f64; 15] =
    [0.05, 0.05, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.025, 0.0125, 0.0125, 0.0125, 0.0125, 0.01, 0.01];
// ReduceLROnPlateau(SGD lr=0.1, mode='max', threshold_mode='abs', threshold=0.1, patience=1), metrics [0.5, 0.55, 0.65, 0.7, 0.74, 0.8, 0.85, 0.85]
const PLATEAU_MAX_0: [f64; 9] =
    [0.1, 0.1, 0.1, 0.1, 0.1, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002, 0.0010000000000000002];

/// The fused per-parameter loops (dense f32/f64 parameters) give the numbers of the operator
/// path, which a non-contiguous parameter takes, for SGD with momentum, Nesterov, dampening,
/// weight decay and maximize, and for Adam/AdamW with and without amsgrad, over six steps.
#[test]
fn fused_updates_match_the_operator_path() {
    type MakeOpt = fn(Vec<Parameter>) -> Box<dyn Optimizer>;
    let builds: [(&str, MakeOpt); 10] = [
        ("sgd momentum", |p| Box::new(SGD::new(p, SGDOptions::default().lr(0.1).momentum(0.9)).unwrap())),
        ("sgd all", |p| {
            let o = SGDOptions::default().lr(0.05).momentum(0.8).nesterov(true).weight_decay(0.1).maximize(true);
            Box::new(SGD::new(p, o).unwrap())
        }),
        ("sgd dampening", |p| {
            Box::new(SGD::new(p, SGDOptions::default().lr(0.05).momentum(0.5).dampening(0.3)).unwrap())
        }),
        ("adam amsgrad", |p| {
            Box::new(Adam::new(p, AdamOptions::default().lr(0.01).amsgrad(true).weight_decay(0.1)).unwrap())
        }),
        ("adamw", |p| Box::new(AdamW::new(p, AdamWOptions::default().lr(0.01).weight_decay(0.5)).unwrap())),
        ("rmsprop", |p| Box::new(RMSprop::new(p, RMSpropOptions::default().lr(0.01)).unwrap())),
        ("rmsprop centered", |p| {
            Box::new(RMSprop::new(p, RMSpropOptions::default().lr(0.01).centered(true).weight_decay(0.1)).unwrap())
        }),
        ("rmsprop momentum", |p| {
            Box::new(RMSprop::new(p, RMSpropOptions::default().lr(0.01).momentum(0.9).maximize(true)).unwrap())
        }),
        ("rmsprop centered momentum", |p| {
            let o = RMSpropOptions::default().lr(0.005).centered(true).momentum(0.5).alpha(0.3).eps(1e-4);
            Box::new(RMSprop::new(p, o).unwrap())
        }),
        ("adagrad", |p| {
            let o = AdagradOptions::default().lr(0.1).lr_decay(0.1).weight_decay(0.05).maximize(true);
            Box::new(Adagrad::new(p, o).unwrap())
        }),
    ];
    for dtype in [ScalarType::F32, ScalarType::F64] {
        let start = Tensor::from_vec((0..12).map(|i| (i as f64 * 0.37).sin()).collect::<Vec<f64>>(), &[3, 4])
            .unwrap()
            .to(dtype)
            .call()
            .unwrap();
        let grads: Vec<Tensor> = (0..6)
            .map(|s| {
                let v: Vec<f64> = (0..12).map(|i| ((i * 7 + s * 3) as f64 * 0.21).cos()).collect();
                Tensor::from_vec(v, &[3, 4]).unwrap().to(dtype).call().unwrap()
            })
            .collect();
        for (name, build) in &builds {
            // Dense: the fused loop. Transposed storage: the operator path.
            let dense = Parameter::new(start.clone()).unwrap();
            let strided = Parameter::new(start.t().unwrap().contiguous().call().unwrap().t().unwrap()).unwrap();
            assert!(dense.is_contiguous() && !strided.is_contiguous());
            let (mut fused, mut reference) = (build(vec![dense.clone()]), build(vec![strided.clone()]));
            for g in &grads {
                dense.set_grad(Some(g.clone())).unwrap();
                strided.set_grad(Some(g.clone())).unwrap();
                let v0 = dense.version();
                fused.step().unwrap();
                reference.step().unwrap();
                assert!(dense.version() > v0, "{name}: the fused step bumps the parameter's version");
            }
            let tol = if dtype == ScalarType::F32 { 1e-6 } else { 1e-14 };
            close(&format!("{name} {dtype}"), &vals(&dense), &vals(&strided), tol);
        }
    }
}

#[test]
fn a_learning_rate_alone_builds_an_optimizer_with_default_options() {
    // `X::new(params, lr)` is PyTorch's `X(params, lr=lr)`: every other option at its default.
    let (a, b) = params();
    let ps = || vec![a.clone(), b.clone()];
    assert_eq!(*SGD::new(ps(), 0.25).unwrap().options_mut(0), SGDOptions { lr: 0.25, ..Default::default() });
    assert_eq!(*Adam::new(ps(), 0.25).unwrap().options_mut(0), AdamOptions { lr: 0.25, ..Default::default() });
    let adamw = *AdamW::new(ps(), 0.25).unwrap().options_mut(0);
    assert_eq!(adamw, AdamWOptions { lr: 0.25, ..Default::default() });
    assert_eq!(adamw.weight_decay, 0.01);
    let rms = *RMSprop::new(ps(), 0.25).unwrap().options_mut(0);
    assert_eq!(rms, RMSpropOptions { lr: 0.25, ..Default::default() });
    let ada = *Adagrad::new(ps(), 0.25).unwrap().options_mut(0);
    assert_eq!(ada, AdagradOptions { lr: 0.25, ..Default::default() });
    // The learning rate is checked as PyTorch's constructor checks it.
    err_contains(Adam::new(ps(), -1.0), "Invalid learning rate: -1");
}

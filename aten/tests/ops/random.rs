//! Random operators: PyTorch's samples for a seed (values printed by PyTorch 2.15 on the CPU),
//! shapes, dtypes and error messages.

use aten::{ops, Generator, Tensor};
use c10::{Device, ScalarType};

fn gen(seed: u64) -> Generator {
    let g = Generator::new(Device::CPU);
    g.manual_seed(seed);
    g
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

fn err(r: c10::Result<Tensor>) -> String {
    r.unwrap_err().to_string()
}

#[test]
fn randperm_matches_pytorch() {
    let p = ops::randperm_generator(10, Some(&gen(0)), None, None, None, None).unwrap();
    assert_eq!(p.dtype(), ScalarType::I64);
    assert_eq!(p.to_vec::<i64>().unwrap(), vec![4, 1, 7, 5, 3, 9, 0, 8, 6, 2]);
    let f = ops::randperm_generator(10, Some(&gen(0)), Some(ScalarType::F32), None, None, None).unwrap();
    assert_eq!(f32s(&f), vec![4.0, 1.0, 7.0, 5.0, 3.0, 9.0, 0.0, 8.0, 6.0, 2.0]);
    assert_eq!(ops::randperm_generator(0, Some(&gen(0)), None, None, None, None).unwrap().sizes(), &[0]);
    let big = ops::randperm_generator(1000, Some(&gen(7)), None, None, None, None).unwrap();
    let mut v = big.to_vec::<i64>().unwrap();
    v.sort_unstable();
    assert_eq!(v, (0..1000).collect::<Vec<_>>());
    assert!(err(ops::randperm(-1, None, None, None, None)).contains("negative dimension -1"));
    assert!(err(ops::randperm(3000, Some(ScalarType::F16), None, None, None))
        .contains("n cannot be greater than 2049 for Half type."));
    assert!(err(ops::randperm(300, Some(ScalarType::I8), None, None, None))
        .contains("value cannot be converted to type int8_t without overflow"));
    assert!(err(ops::randperm(3, Some(ScalarType::Bool), None, None, None)).contains("not implemented for 'Bool'"));
}

#[test]
fn multinomial_matches_pytorch() {
    let w = Tensor::from_vec(vec![0.1f32, 0.2, 0.3, 0.4, 4.0, 3.0, 2.0, 1.0], &[2, 4]).unwrap();
    // Without replacement: the Gumbel-max trick over exponential draws.
    let s = ops::multinomial(&w, 3, false, Some(&gen(3))).unwrap();
    assert_eq!((s.sizes().to_vec(), s.to_vec::<i64>().unwrap()), (vec![2, 3], vec![0, 3, 1, 2, 1, 0]));
    let row = ops::select(&w, 0, 0).unwrap();
    let one = ops::multinomial(&row, 1, false, Some(&gen(3))).unwrap();
    assert_eq!((one.sizes().to_vec(), one.to_vec::<i64>().unwrap()), (vec![1], vec![0]));
    // With replacement: binary search of a uniform in the cumulative distribution.
    let wd = w.to(ScalarType::F64).call().unwrap();
    let r = ops::multinomial(&wd, 5, true, Some(&gen(5))).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![3, 1, 2, 2, 1, 2, 1, 2, 2, 1]);
    let z = Tensor::from_vec(vec![1.0f32, 0.0, 3.0], &[3]).unwrap();
    assert_eq!(ops::multinomial(&z, 8, true, Some(&gen(5))).unwrap().to_vec::<i64>().unwrap(), vec![2; 8]);
    // Without replacement every index appears once.
    let all = ops::multinomial(&w, 4, false, Some(&gen(1))).unwrap().to_vec::<i64>().unwrap();
    for r in all.chunks(4) {
        let mut r = r.to_vec();
        r.sort_unstable();
        assert_eq!(r, vec![0, 1, 2, 3]);
    }
    let e = Tensor::from_vec(Vec::<f32>::new(), &[0, 3]).unwrap();
    assert_eq!(ops::multinomial(&e, 2, false, None).unwrap().sizes(), &[0, 2]);

    let t = |v: Vec<f32>| Tensor::from_vec(v.clone(), &[v.len() as i64]).unwrap();
    let m = |x: Tensor, n: i64, rep: bool| err(ops::multinomial(&x, n, rep, None));
    assert!(m(t(vec![1.0, 2.0]), 3, false)
        .contains("cannot sample n_sample > prob_dist.size(-1) samples without replacement"));
    assert!(m(t(vec![1.0, -2.0]), 1, false).contains("probability tensor contains either `inf`, `nan` or element < 0"));
    assert!(m(t(vec![1.0, -2.0]), 2, true).contains("(encountering probability entry < 0)"));
    assert!(m(t(vec![1.0, f32::NAN]), 2, true).contains("(encountering probability entry < 0)"));
    assert!(m(t(vec![1.0, f32::INFINITY]), 2, true).contains("(encountering probability entry = infinity or NaN)"));
    assert!(m(t(vec![0.0, 0.0]), 2, true).contains("invalid multinomial distribution (sum of probabilities <= 0)"));
    assert!(m(t(vec![0.0, 0.0]), 1, false).contains("invalid multinomial distribution (sum of probabilities <= 0)"));
    assert!(m(t(vec![1.0, 2.0]), 0, false).contains("cannot sample n_sample <= 0 samples"));
    let ints = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    assert!(err(ops::multinomial(&ints, 1, false, None))
        .contains("multinomial only supports floating-point dtypes for input, got: Long"));
    let cube = Tensor::from_vec(vec![1.0f32; 8], &[2, 2, 2]).unwrap();
    assert!(err(ops::multinomial(&cube, 1, false, None)).contains("prob_dist must be 1 or 2 dim"));
    // A bad row leaves the generator where it was.
    let g = gen(9);
    assert!(ops::multinomial(&t(vec![1.0, -1.0]), 2, true, Some(&g)).is_err());
    let after = ops::multinomial(&t(vec![1.0, 1.0]), 6, true, Some(&g)).unwrap();
    let fresh = ops::multinomial(&t(vec![1.0, 1.0]), 6, true, Some(&gen(9))).unwrap();
    assert_eq!(after.to_vec::<i64>().unwrap(), fresh.to_vec::<i64>().unwrap());
}

#[test]
fn exponential_matches_pytorch() {
    let t = ops::empty(&[5], Some(ScalarType::F32), None, None, None, None).unwrap();
    ops::exponential_(&t, 0.5, Some(&gen(1))).unwrap();
    let want = [
        0.125_993_072_986_602_78f64,
        0.508_635_163_307_189_9,
        0.533_805_608_749_389_6,
        0.389_839_321_374_893_2,
        1.624_168_038_368_225,
    ];
    assert_eq!(f32s(&t), want.map(|v| v as f32).to_vec());
    // A transposed tensor is filled in memory order.
    let base = ops::empty(&[2, 3], Some(ScalarType::F32), None, None, None, None).unwrap();
    let tt = base.t().unwrap();
    ops::exponential_(&tt, 1.0, Some(&gen(1))).unwrap();
    let want = [
        0.062_996_536_493_301_39f64,
        0.194_919_660_687_446_6,
        0.254_317_581_653_594_97,
        0.812_084_019_184_112_5,
        0.266_902_804_374_694_8,
        0.115_909_129_381_179_81,
    ];
    assert_eq!(f32s(&tt.contiguous().call().unwrap()), want.map(|v| v as f32).to_vec());
    assert!(err(ops::exponential_(&t, 0.0, None)).contains("exponential_ expects lambda > 0.0, but found lambda=0"));
    assert!(err(ops::exponential_(&t, -1.0, None)).contains("but found lambda=-1"));
    let ints = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    assert!(err(ops::exponential_(&ints, 1.0, None)).contains(
        "Exponential distribution is a continuous probability distribution. dtype must be a floating point but you specified Long"
    ));
}

#[test]
fn bernoulli_matches_pytorch() {
    let p = Tensor::from_vec(vec![0.2f32, 0.9, 0.5, 0.7], &[2, 2]).unwrap().t().unwrap();
    let b = ops::bernoulli(&p, Some(&gen(2))).unwrap();
    assert_eq!((b.dtype(), b.is_contiguous()), (ScalarType::F32, true));
    assert_eq!(f32s(&b), vec![0.0, 1.0, 1.0, 1.0]);
    let pd = Tensor::from_vec(vec![0.2f64, 0.9, 0.5, 0.7, 0.4], &[5]).unwrap();
    assert_eq!(ops::bernoulli(&pd, Some(&gen(2))).unwrap().to_vec::<f64>().unwrap(), vec![0.0, 1.0, 0.0, 1.0, 0.0]);
    // In place on an int tensor with broadcast probabilities.
    let out = ops::empty(&[2, 3], Some(ScalarType::I32), None, None, None, None).unwrap();
    let row = Tensor::from_vec(vec![0.3f32, 0.6, 0.9], &[3]).unwrap();
    ops::bernoulli_tensor_(&out, &row, Some(&gen(2))).unwrap();
    assert_eq!(out.to_vec::<i32>().unwrap(), vec![0, 1, 1, 0, 0, 1]);
    let half = Tensor::from_vec(vec![0.5f32; 4], &[4]).unwrap();
    assert_eq!(f32s(&ops::bernoulli_p(&half, 0.25, Some(&gen(2))).unwrap()), vec![0.0, 1.0, 0.0, 0.0]);

    let bad = Tensor::from_vec(vec![0.5f32, 1.5], &[2]).unwrap();
    assert!(err(ops::bernoulli(&bad, None)).contains("Expected p_in >= 0 && p_in <= 1 to be true, but got false."));
    let ints = Tensor::from_vec(vec![1i64, 0], &[2]).unwrap();
    assert!(err(ops::bernoulli(&ints, None)).contains("\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'"));
    let wide = ops::empty(&[2, 3], Some(ScalarType::F32), None, None, None, None).unwrap();
    let two = Tensor::from_vec(vec![0.5f32, 0.5], &[2]).unwrap();
    assert!(err(ops::bernoulli_tensor_(&wide, &two, None)).contains("must match the existing size"));
}

#[test]
fn normal_overloads_match_pytorch() {
    let mean = Tensor::from_vec(vec![0.0f32, 10.0, 20.0], &[3]).unwrap();
    let std = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    let a = ops::normal(&mean, 2.0, Some(&gen(4))).unwrap();
    assert_eq!(f32s(&a), vec![-3.210_552_7, 10.464_972, 24.479_74]);
    let b = ops::normal_float_tensor(5.0, &std, Some(&gen(4))).unwrap();
    assert_eq!(f32s(&b), vec![3.394_723_7, 5.464_971_5, 11.719_61]);
    let col = Tensor::from_vec(vec![0.0f32, 10.0], &[2, 1]).unwrap();
    let c = ops::normal_tensor_tensor(&col, &std, Some(&gen(4))).unwrap();
    assert_eq!(c.sizes(), &[2, 3]);
    assert_eq!(f32s(&c), vec![-1.605_276_3, 0.464_971_42, 6.719_61, 10.847_294, 12.401_289, 8.795_349]);
    let d = ops::normal_float_float(1.0, 2.0, &[3], Some(&gen(4)), None, None, None, None).unwrap();
    assert_eq!(f32s(&d), vec![-2.210_552_7, 1.464_971_4, 5.479_74]);
    let e = ops::normal_float_float(1.0, 2.0, &[2], None, Some(ScalarType::F64), None, None, None).unwrap();
    assert_eq!(e.dtype(), ScalarType::F64);

    assert!(err(ops::normal(&mean, -1.0, None)).contains("normal expects std >= 0.0, but found std -1"));
    let neg = Tensor::from_vec(vec![1.0f32, -2.0], &[2]).unwrap();
    assert!(err(ops::normal_tensor_tensor(&neg, &neg, None)).contains("normal expects all elements of std >= 0.0"));
    let ints = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    assert!(err(ops::normal(&ints, 1.0, None)).contains("not implemented for 'Long'"));
    assert!(err(ops::normal_tensor_tensor(&mean, &Tensor::from_vec(vec![1.0f32; 2], &[2]).unwrap(), None))
        .contains("must match the size"));
}

#[test]
fn cauchy_log_normal_geometric_and_randint_like() {
    let g = gen(7);
    let t = ops::empty(&[4000], Some(ScalarType::F64), None, None, None, None).unwrap();
    // Cauchy: the median is the location (the mean does not exist).
    ops::cauchy_(&t, 3.0, 0.5, Some(&g)).unwrap();
    let mut v = t.to_vec::<f64>().unwrap();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert!((v[2000] - 3.0).abs() < 0.1, "median {}", v[2000]);
    // Log-normal: the log has the given mean.
    ops::log_normal_(&t, 1.0, 0.5, Some(&g)).unwrap();
    let v = t.to_vec::<f64>().unwrap();
    assert!(v.iter().all(|&x| x > 0.0));
    let mean_log = v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64;
    assert!((mean_log - 1.0).abs() < 0.05, "{mean_log}");
    // Geometric: positive integers with mean 1/p, in any dtype.
    let i = ops::empty(&[4000], Some(ScalarType::I64), None, None, None, None).unwrap();
    ops::geometric_(&i, 0.25, Some(&g)).unwrap();
    let v = i.to_vec::<i64>().unwrap();
    assert!(v.iter().all(|&x| x >= 1));
    let mean = v.iter().sum::<i64>() as f64 / v.len() as f64;
    assert!((mean - 4.0).abs() < 0.3, "{mean}");
    assert!(err(ops::geometric_(&i, 1.0, None)).contains("geometric_ expects p to be in (0, 1), but got p=1"));
    assert!(err(ops::cauchy_(&t, 0.0, 0.0, None)).contains("cauchy_ expects sigma > 0.0"));
    let like =
        ops::randint_like(&Tensor::from_vec(vec![0i32; 100], &[10, 10]).unwrap(), 5, None, None, None, None, None)
            .unwrap();
    assert_eq!((like.dtype(), like.sizes()), (ScalarType::I32, &[10i64, 10][..]));
    assert!(like.to_vec::<i64>().unwrap().iter().all(|&x| (0..5).contains(&x)));
}

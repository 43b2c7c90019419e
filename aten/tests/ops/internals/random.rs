//! Tests of `native::random`'s internals (moved out of the crate: Note [Tests outside aten]).

// Expected values are PyTorch's float32 outputs printed as doubles (exactly the f32 values).
#![allow(clippy::excessive_precision)]

use aten::native::factory::empty_memory_format;
use aten::native::random::*;
#[allow(unused_imports)]
use aten::{Generator, Tensor};
use c10::{bf16, f16};
#[allow(unused_imports)]
use c10::{Device, Element, MemoryFormat, Result, Scalar, ScalarType};
use smallvec::SmallVec;

fn seeded(seed: u64) -> Generator {
    let g = Generator::new(Device::CPU);
    g.manual_seed(seed);
    g
}

fn empty(size: &[i64], dtype: ScalarType) -> Tensor {
    empty_memory_format(size, Some(dtype), None, None, None, None).unwrap()
}

fn assert_close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tol, "element {i}: {x} vs {y}");
    }
}

// Expected values below come from PyTorch 2.15 (CPU): `torch.manual_seed(S); torch.op(...)`.

#[test]
fn rand_matches_pytorch_seed_0() {
    let g = seeded(0);
    let t = rand_generator(&[5], Some(&g), None, None, None, None).unwrap();
    assert_eq!(t.dtype(), ScalarType::F32);
    let want =
        [0.49625658988952637f32, 0.7682217955589294, 0.08847743272781372, 0.13203048706054688, 0.30742281675338745];
    assert_eq!(t.to_vec::<f32>().unwrap(), want);
    let g = seeded(0);
    let d = rand_generator(&[3], Some(&g), Some(ScalarType::F64), None, None, None).unwrap();
    assert_eq!(d.to_vec::<f64>().unwrap(), vec![0.9700530018065531, 0.707819864399788, 0.45938294312745087]);
    let g = seeded(0);
    let h = rand_generator(&[3], Some(&g), Some(ScalarType::F16), None, None, None).unwrap();
    let want: Vec<f16> = [0.496337890625, 0.76806640625, 0.0885009765625].iter().map(|&x| f16::from_f64(x)).collect();
    assert_eq!(h.to_vec::<f16>().unwrap(), want);
}

#[test]
fn default_generator_is_used_when_none() {
    // The default generator is process-wide and other tests draw from it concurrently, so
    // only check that the values are valid (the seeded streams are tested above).
    let a = rand(&[5], None, None, None, None).unwrap().to_vec::<f32>().unwrap();
    assert!(a.iter().all(|&x| (0.0..1.0).contains(&x)));
    let b = rand_like(&empty(&[4], ScalarType::F64), None, None, None, None, None).unwrap();
    assert_eq!(b.dtype(), ScalarType::F64);
    let c = randn_like(&empty(&[4], ScalarType::F32), Some(ScalarType::BF16), None, None, None, None).unwrap();
    assert_eq!(c.dtype(), ScalarType::BF16);
    assert_eq!(randint(5, &[3], None, None, None, None).unwrap().dtype(), ScalarType::I64);
    assert_eq!(randn(&[2, 2], None, None, None, None).unwrap().sizes(), &[2, 2]);
}

#[test]
fn uniform_range_and_strided_order() {
    let g = seeded(0);
    let t = uniform_(&empty(&[3], ScalarType::F64), -2.0, 3.0, Some(&g)).unwrap();
    assert_eq!(t.to_vec::<f64>().unwrap(), vec![2.8502650090327655, 1.5390993219989397, 0.29691471563725436]);
    let g = seeded(0);
    let t = uniform_(&empty(&[3], ScalarType::F32), -2.0, 3.0, Some(&g)).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![0.48128294944763184, 1.841109037399292, -1.5576128959655762]);
    let g = seeded(0);
    let t = uniform_(&empty(&[3], ScalarType::BF16), -2.0, 3.0, Some(&g)).unwrap();
    let want: Vec<bf16> = [0.48046875, 1.84375, -1.5546875].iter().map(|&x| bf16::from_f64(x)).collect();
    assert_eq!(t.to_vec::<bf16>().unwrap(), want);
    // A transposed view is filled in memory order (torch.empty(2, 3).t().uniform_()).
    let g = seeded(0);
    let base = empty(&[2, 3], ScalarType::F32);
    let tt = Tensor::from_storage(base.storage().clone(), &[3, 2], SmallVec::from_slice(&[1, 3]), 0, ScalarType::F32);
    uniform_(&tt, 0.0, 1.0, Some(&g)).unwrap();
    let want = [
        0.49625658988952637f32,
        0.13203048706054688,
        0.7682217955589294,
        0.30742281675338745,
        0.08847743272781372,
        0.6340786814689636,
    ];
    assert_eq!(tt.to_vec::<f32>().unwrap(), want);
    // Many samples stay in range.
    let big = uniform_(&empty(&[10000], ScalarType::F32), 5.0, 6.0, Some(&g)).unwrap();
    assert!(big.to_vec::<f32>().unwrap().iter().all(|&x| (5.0..6.0).contains(&x)));
}

#[test]
fn uniform_errors() {
    let f = empty(&[3], ScalarType::F32);
    let msg = |r: Result<Tensor>| r.expect_err("error").to_string();
    assert_eq!(msg(uniform_(&f, -1e39, 0.0, None)), "uniform_: from is out of bounds for float");
    assert_eq!(
        msg(uniform_(&f, 2.0, 1.0, None)),
        "uniform_: uniform_ expects to return a [from, to) range, but found from=2 > to=1"
    );
    assert_eq!(
        msg(uniform_(&empty(&[3], ScalarType::I64), 0.0, 1.0, None)),
        "check_uniform_bounds: \"check_uniform_bounds\" not implemented for 'Long'"
    );
    assert_eq!(
        msg(uniform_(&empty(&[3], ScalarType::F64), -1e308, 1e308, None)),
        "uniform_: uniform_ expects to-from <= std::numeric_limits<Double>::max(), but found to=1e+308 and \
         from=-1e+308 which result in to-from to exceed the limit"
    );
    assert_eq!(
        msg(uniform_(&empty(&[3], ScalarType::F16), 0.0, 1e6, None)),
        "uniform_: to is out of bounds for c10::Half"
    );
    let expanded =
        Tensor::from_storage(f.storage().clone(), &[3, 2], SmallVec::from_slice(&[1, 0]), 0, ScalarType::F32);
    assert!(msg(uniform_(&expanded, 0.0, 1.0, None)).contains("more than one element of the written-to tensor"));
    assert!(rand(&[-1], None, None, None, None).is_err());
    assert!(rand(&[2], Some(ScalarType::I32), None, None, None).is_err());
}

#[test]
fn same_seed_same_numbers_different_seed_different() {
    let a = randn_generator(&[100], Some(&seeded(7)), None, None, None, None).unwrap().to_vec::<f32>().unwrap();
    let b = randn_generator(&[100], Some(&seeded(7)), None, None, None, None).unwrap().to_vec::<f32>().unwrap();
    let c = randn_generator(&[100], Some(&seeded(8)), None, None, None, None).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
    let g = seeded(1);
    let x = rand_generator(&[4], Some(&g), None, None, None, None).unwrap().to_vec::<f32>().unwrap();
    let y = rand_generator(&[4], Some(&g), None, None, None, None).unwrap().to_vec::<f32>().unwrap();
    assert_ne!(x, y, "a generator advances");
}

#[test]
fn randn_matches_pytorch() {
    // Fewer than 16 elements: per-element double Box-Muller with the cached second sample.
    let t = randn_generator(&[5], Some(&seeded(0)), None, None, None, None).unwrap();
    let want =
        [1.5409960746765137f32, -0.293428897857666, -2.1787893772125244, 0.5684312582015991, -1.0845223665237427];
    assert_eq!(t.to_vec::<f32>().unwrap(), want);
    let d = randn_generator(&[5], Some(&seeded(0)), Some(ScalarType::F64), None, None, None).unwrap();
    let want = [1.5409961082440433, -0.2934289057609464, -2.1787893820745574, 0.5684312772806678, -1.084522342424021];
    assert_eq!(d.to_vec::<f64>().unwrap(), want);
    // The cache carries over between calls: torch.manual_seed(3); randn(3); randn(3).
    let g = seeded(3);
    let a = randn_generator(&[3], Some(&g), None, None, None, None).unwrap().to_vec::<f32>().unwrap();
    let b = randn_generator(&[3], Some(&g), None, None, None, None).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(a, vec![0.8032760620117188, 0.17483338713645935, 0.08897809684276581]);
    assert_eq!(b, vec![-0.6137180328369141, 0.04618244990706444, -1.3682591915130615]);
    // A transposed (non-contiguous) 3x2 view: per-element path, memory order.
    let base = empty(&[2, 3], ScalarType::F32);
    let tt = Tensor::from_storage(base.storage().clone(), &[3, 2], SmallVec::from_slice(&[1, 3]), 0, ScalarType::F32);
    normal_(&tt, 0.0, 1.0, Some(&seeded(0))).unwrap();
    let want = [
        1.5409960746765137f32,
        0.5684312582015991,
        -0.293428897857666,
        -1.0845223665237427,
        -2.1787893772125244,
        -1.3985954523086548,
    ];
    assert_eq!(tt.to_vec::<f32>().unwrap(), want);
}

#[test]
fn normal_fill_path_matches_pytorch() {
    // 16+ contiguous elements: `normal_fill`. Double is computed exactly as PyTorch does.
    let d = randn_generator(&[16], Some(&seeded(0)), Some(ScalarType::F64), None, None, None).unwrap();
    let want = [
        -2.310411800234176,
        -0.3732508612577643,
        -1.0608166785462863,
        0.9995093547811761,
        -0.8840250045832653,
        -1.2755469302148053,
        -0.623224579866079,
        -0.8664416019125772,
        -1.2956271403277857,
        1.52363162310635,
        0.3236605664983738,
        2.0177260314861085,
        1.1357423400213507,
        -1.226881339001083,
        0.07138847120511693,
        0.3380174030507378,
    ];
    assert_close(&d.to_vec::<f64>().unwrap(), &want, 0.0);
    // Float: PyTorch's vectorised math may differ from libm in the last ulp.
    let f = randn_generator(&[20], Some(&seeded(0)), None, None, None, None).unwrap();
    let want = [
        -1.1258398294448853,
        -1.152360200881958,
        -0.2505785822868347,
        -0.4338788092136383,
        0.5988394618034363,
        -1.5550950765609741,
        -0.3413603901863098,
        1.85300612449646,
        0.46809640526771545,
        -0.1577124446630478,
        1.4436601400375366,
        0.26604941487312317,
        1.3893661499023438,
        1.586334228515625,
        0.946298360824585,
        -0.843676745891571,
        0.9318265914916992,
        1.2590092420578003,
        2.0049805641174316,
        0.05373690277338028,
    ];
    let got: Vec<f64> = f.to_vec::<f64>().unwrap();
    assert_close(&got, &want, 0.0);
    // Half with a ragged tail (17 elements).
    let h = randn_generator(&[17], Some(&seeded(0)), Some(ScalarType::F16), None, None, None).unwrap();
    let want = [
        -1.1259765625,
        -1.3525390625,
        -1.6962890625,
        0.56689453125,
        0.79345703125,
        0.5986328125,
        -1.5546875,
        -0.34130859375,
        1.8525390625,
        0.75,
        -0.58544921875,
        -0.17333984375,
        0.1834716796875,
        1.3896484375,
        1.5859375,
        0.9462890625,
        -0.84375,
    ];
    assert_close(&h.to_vec::<f64>().unwrap(), &want, 0.0);
}

#[test]
fn normal_statistics_and_errors() {
    let t = normal_(&empty(&[100_000], ScalarType::F32), 2.0, 3.0, Some(&seeded(42))).unwrap();
    let v = t.to_vec::<f64>().unwrap();
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let std = (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0)).sqrt();
    assert!((mean - 2.0).abs() < 0.03, "mean {mean}");
    assert!((std - 3.0).abs() < 0.03, "std {std}");
    let msg = |r: Result<Tensor>| r.expect_err("error").to_string();
    assert_eq!(
        msg(normal_(&empty(&[3], ScalarType::F32), 0.0, -1.0, None)),
        "normal_: normal expects std >= 0.0, but found std -1"
    );
    assert_eq!(
        msg(normal_(&empty(&[3], ScalarType::I64), 0.0, 1.0, None)),
        "normal_kernel_cpu: \"normal_kernel_cpu\" not implemented for 'Long'"
    );
    assert_eq!(normal_(&empty(&[0], ScalarType::F32), 0.0, 1.0, None).unwrap().numel(), 0);
}

#[test]
fn randint_and_random_match_pytorch() {
    let t = randint_low_generator(0, 10, &[8], Some(&seeded(0)), None, None, None, None).unwrap();
    assert_eq!((t.dtype(), t.to_vec::<i64>().unwrap()), (ScalarType::I64, vec![4, 9, 3, 0, 3, 9, 7, 3]));
    // A range >= 2^32 draws 64 bits.
    let w = randint_low_generator(-5, 1 << 40, &[3], Some(&seeded(0)), None, None, None, None).unwrap();
    assert_eq!(w.to_vec::<i64>().unwrap(), vec![741234585336, 506077272957, 291397093751]);
    let f = random_from_(&empty(&[4], ScalarType::F32), -3, Some(7), Some(&seeded(0))).unwrap();
    assert_eq!(f.to_vec::<f32>().unwrap(), vec![1.0, 6.0, 0.0, -3.0]);
    let i = random_to_(&empty(&[4], ScalarType::I32), 3, Some(&seeded(0))).unwrap();
    assert_eq!(i.to_vec::<i32>().unwrap(), vec![2, 0, 2, 0]);
    let b = random_(&empty(&[6], ScalarType::Bool), Some(&seeded(0))).unwrap();
    assert_eq!(b.to_vec::<bool>().unwrap(), vec![false, true, true, false, true, true]);
    let r = random_(&empty(&[4], ScalarType::F32), Some(&seeded(0))).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![8325664.0, 12888472.0, 1484222.0, 2214888.0]);
    let s = random_(&empty(&[4], ScalarType::I16), Some(&seeded(0))).unwrap();
    assert_eq!(s.to_vec::<i16>().unwrap(), vec![2732, 10799, 9845, 19648]);
    let full = random_from_(&empty(&[3], ScalarType::I64), i64::MIN, None, Some(&seeded(0))).unwrap();
    assert_eq!(full.to_vec::<i64>().unwrap(), vec![-8322921849960486353, -5253828890213626688, -7327722439656189189]);
    let g = seeded(5);
    let many = randint_low_generator(-3, 4, &[1000], Some(&g), Some(ScalarType::I8), None, None, None).unwrap();
    assert!(many.to_vec::<i8>().unwrap().iter().all(|&x| (-3..4).contains(&x)));
}

#[test]
fn random_errors() {
    let msg = |r: Result<Tensor>| r.expect_err("error").to_string();
    assert_eq!(
        msg(randint_low(5, 2, &[3], None, None, None, None)),
        "random_: random_ expects 'from' to be less than 'to', but got from=5 >= to=2"
    );
    assert_eq!(
        msg(random_from_(&empty(&[3], ScalarType::U8), 0, Some(300), None)),
        "random_: to - 1 is out of bounds for unsigned char"
    );
    assert_eq!(
        msg(random_from_(&empty(&[3], ScalarType::I8), -200, Some(0), None)),
        "random_: from is out of bounds for signed char"
    );
    assert_eq!(
        msg(random_from_(&empty(&[3], ScalarType::Bool), 0, Some(3), None)),
        "random_: to - 1 is out of bounds for bool"
    );
    assert!(randint(5, &[-1], None, None, None, None).is_err());
}

#[test]
fn bernoulli_values_and_errors() {
    let t = bernoulli_float_(&empty(&[1000], ScalarType::F32), 0.3, Some(&seeded(0))).unwrap();
    let v = t.to_vec::<f32>().unwrap();
    assert!(v.iter().all(|&x| x == 0.0 || x == 1.0));
    let ones = v.iter().filter(|&&x| x == 1.0).count();
    assert!((200..400).contains(&ones), "{ones} ones");
    let all = bernoulli_float_(&empty(&[10], ScalarType::Bool), 1.0, None).unwrap();
    assert_eq!(all.to_vec::<bool>().unwrap(), vec![true; 10]);
    assert_eq!(
        bernoulli_float_(&empty(&[3], ScalarType::F32), 1.5, None).expect_err("error").to_string(),
        "bernoulli_: bernoulli_ expects p to be in [0, 1], but got p=1.5"
    );
}

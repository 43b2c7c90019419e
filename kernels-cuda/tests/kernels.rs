//! Every shipped kernel family run on a device and compared with a CPU reference: the c10
//! conversions our CPU kernels use (`Element::cast`), Rust's float math, and closed forms.
//!
//! The device is the one `TORCH_CUDA_DRIVER` names; without it, the emulated device (so the
//! suite runs in CI without a GPU; on a machine with one, `TORCH_CUDA_DRIVER=cuda` runs the same
//! tests on it). `CUDA_EMU_SCHED` varies the emulator's scheduling order.
#![cfg(feature = "cuda")]

use c10::{bf16, f16, Element};
use kernels_cuda::args::{KcColumns, KcGeometry, KcPool, KcReduction, KcRemap};
use kernels_cuda::driver::{self, DevicePtr, Driver, DriverKind, KernelArgs, KernelId, LaunchConfig, StreamId};
use kernels_cuda::geometry;

fn dev() -> &'static dyn Driver {
    if std::env::var_os("TORCH_CUDA_DRIVER").is_none() {
        driver::select(DriverKind::Emulator).unwrap();
    }
    driver::driver().unwrap()
}

/// A device allocation holding elements of `T`, freed on drop.
struct Buf<T> {
    ptr: DevicePtr,
    len: usize,
    _t: std::marker::PhantomData<T>,
}

impl<T: Copy + Default> Buf<T> {
    fn zeroed(len: usize) -> Buf<T> {
        let nbytes = (len * std::mem::size_of::<T>()).max(1);
        let ptr = dev().malloc(0, nbytes).unwrap();
        dev().memset(0, ptr, 0, nbytes, StreamId::DEFAULT).unwrap();
        Buf { ptr, len, _t: std::marker::PhantomData }
    }

    fn from(v: &[T]) -> Buf<T> {
        let b = Buf::zeroed(v.len());
        // SAFETY: plain old data viewed as bytes.
        let bytes = unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) };
        dev().copy_htod(0, b.ptr, bytes, StreamId::DEFAULT).unwrap();
        b
    }

    fn read(&self) -> Vec<T> {
        let mut v = vec![T::default(); self.len];
        // SAFETY: plain old data viewed as bytes; every bit pattern the kernels write is valid.
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), self.len * std::mem::size_of::<T>()) };
        dev().copy_dtoh(0, bytes, self.ptr, StreamId::DEFAULT).unwrap();
        v
    }
}

impl<T> Drop for Buf<T> {
    fn drop(&mut self) {
        dev().free(0, self.ptr);
    }
}

thread_local! {
    /// Names of the kernels launched successfully on this thread (for the coverage test).
    static LAUNCHED: std::cell::RefCell<std::collections::BTreeSet<String>> = Default::default();
}

fn launch(name: &str, cfg: &LaunchConfig, args: &mut KernelArgs) -> c10::Result<()> {
    let kernel = KernelId::find(name).ok_or_else(|| {
        c10::Error::Cuda(format!("CUDA error: named symbol not found (no kernel '{name}' in kernels-cuda)"))
    })?;
    assert_eq!(kernel.name(), name);
    let mut params = args.params();
    LAUNCHED.with(|l| l.borrow_mut().insert(name.to_string()));
    // SAFETY: every test passes the kernel's parameters in order, with live buffers.
    unsafe { dev().launch(0, kernel, cfg, &mut params) }
}

fn contiguous_geometry(n: usize, operands: usize) -> KcGeometry {
    let strides: Vec<[i64; 1]> = vec![[1]; operands];
    let refs: Vec<&[i64]> = strides.iter().map(|s| &s[..]).collect();
    geometry::elementwise(&[n as i64], &refs).unwrap()
}

fn cfg(g: &KcGeometry) -> LaunchConfig {
    geometry::elementwise_launch(g.numel, StreamId::DEFAULT)
}

/// The dtype suffix of the kernels' names.
trait Suffix: Element {
    const SFX: &'static str;
}
macro_rules! suffix {
    ($($t:ty => $s:literal),*) => { $(impl Suffix for $t { const SFX: &'static str = $s; })* };
}
/// Wrapping integer arithmetic, the CPU reference of the integer kernels.
trait IntOps: Copy {
    fn wrapping_add(self, o: Self) -> Self;
    fn wrapping_sub(self, o: Self) -> Self;
    fn wrapping_mul(self, o: Self) -> Self;
    fn wrapping_neg(self) -> Self;
}
macro_rules! int_ops {
    ($($t:ty),*) => {$(impl IntOps for $t {
        fn wrapping_add(self, o: Self) -> Self { <$t>::wrapping_add(self, o) }
        fn wrapping_sub(self, o: Self) -> Self { <$t>::wrapping_sub(self, o) }
        fn wrapping_mul(self, o: Self) -> Self { <$t>::wrapping_mul(self, o) }
        fn wrapping_neg(self) -> Self { <$t>::wrapping_neg(self) }
    })*};
}
int_ops!(u8, i8, i16, i32, i64);
suffix!(f32 => "f32", f64 => "f64", f16 => "f16", bf16 => "bf16", u8 => "u8", i8 => "i8", i16 => "i16", i32 => "i32", i64 => "i64", bool => "b8");

/// Values that exercise a conversion from `S`: signs, fractions, the edges of every integer
/// type, and for floats NaN and infinities.
fn probe_values<S: Element>() -> Vec<S> {
    let ints: [i64; 12] = [0, 1, -1, 7, 127, 128, -128, -129, 255, 256, 40_000, -2_000_000_000];
    let mut v: Vec<S> = ints.iter().map(|&i| S::from_i64(i)).collect();
    if S::DTYPE.is_floating_point() {
        for f in
            [2.5, -2.5, 0.75, -0.999, 300.7, -129.5, 65504.0, 1e10, -3e9, f64::NAN, f64::INFINITY, f64::NEG_INFINITY]
        {
            v.push(S::from_f64(f));
        }
    }
    if S::DTYPE == c10::ScalarType::I64 {
        v.extend([i64::MAX, i64::MIN, 1 << 40].map(S::from_i64));
    }
    v
}

fn check_cast<S: Suffix, D: Suffix>() {
    let src = probe_values::<S>();
    let n = src.len();
    let input = Buf::from(&src);
    let out = Buf::<D>::zeroed(n);
    let g = contiguous_geometry(n, 2);
    let name = format!("cast_{}_{}", S::SFX, D::SFX);
    launch(&name, &cfg(&g), KernelArgs::new().push(g).push(out.ptr).push(input.ptr)).unwrap();
    let got = out.read();
    for (i, s) in src.iter().enumerate() {
        let want: D = s.cast();
        let same = got[i] == want || (got[i].to_f64().is_nan() && want.to_f64().is_nan());
        assert!(same, "{name}({s:?}) = {:?}, want {want:?}", got[i]);
    }
}

macro_rules! cast_from {
    ($s:ty) => {
        check_cast::<$s, f32>();
        check_cast::<$s, f64>();
        check_cast::<$s, f16>();
        check_cast::<$s, bf16>();
        check_cast::<$s, u8>();
        check_cast::<$s, i8>();
        check_cast::<$s, i16>();
        check_cast::<$s, i32>();
        check_cast::<$s, i64>();
        check_cast::<$s, bool>();
    };
}

fn casts_between_every_pair_of_dtypes_match_the_cpu() {
    cast_from!(f32);
    cast_from!(f64);
    cast_from!(f16);
    cast_from!(bf16);
    cast_from!(u8);
    cast_from!(i8);
    cast_from!(i16);
    cast_from!(i32);
    cast_from!(i64);
    cast_from!(bool);
}

fn fill_writes_only_the_strided_positions() {
    // Every third element of 3 rows of 7: a [3, 3] view with strides [7, 3] (from offset 0).
    let out = Buf::<f32>::zeroed(21);
    let g = geometry::elementwise(&[3, 3], &[&[7, 3]]).unwrap();
    launch("fill_f32", &cfg(&g), KernelArgs::new().push(g).push(out.ptr).push(2.5f32)).unwrap();
    let got = out.read();
    for (i, v) in got.iter().enumerate() {
        let inside = i % 7 % 3 == 0 && i % 7 < 9;
        assert_eq!(*v, if inside { 2.5 } else { 0.0 }, "element {i}");
    }
    fn every<T: Suffix>(v: T) {
        let out = Buf::<T>::zeroed(5);
        let g = contiguous_geometry(5, 1);
        launch(&format!("fill_{}", T::SFX), &cfg(&g), KernelArgs::new().push(g).push(out.ptr).push(v)).unwrap();
        assert_eq!(out.read(), vec![v; 5], "fill_{}", T::SFX);
    }
    every(-1.5f32);
    every(1e300f64);
    every(f16::from_f64(-0.125));
    every(bf16::from_f64(3.0));
    every(200u8);
    every(-100i8);
    every(i16::MIN);
    every(i32::MAX);
    every(i64::MIN);
    every(true);
}

fn arange_computes_start_plus_i_step_in_the_accumulation_type() {
    /// `reference(i, fused)`: the value without and with a fused multiply-add (nvcc and the
    /// host compiler may contract `start + i * step`; both are one rounding of the same formula).
    fn floats<T: Suffix, A: Copy + 'static>(start: A, step: A, reference: impl Fn(usize, bool) -> T) {
        let n = 300;
        let out = Buf::<T>::zeroed(n);
        let g = contiguous_geometry(n, 1);
        let name = format!("arange_{}", T::SFX);
        launch(&name, &cfg(&g), KernelArgs::new().push(g).push(out.ptr).push(start).push(step)).unwrap();
        for (i, v) in out.read().into_iter().enumerate() {
            assert!(
                v == reference(i, false) || v == reference(i, true),
                "{name}[{i}] = {v:?}, want {:?}",
                reference(i, false)
            );
        }
    }
    // float32/16-bit: start + i * step in float, rounded once; float64 in double.
    let f32_at =
        |i: usize, fused: bool| if fused { (i as f32).mul_add(0.1, -1.5) } else { -1.5f32 + i as f32 * 0.1f32 };
    floats::<f32, f32>(-1.5, 0.1, f32_at);
    floats::<f64, f64>(-1.5, 0.1, |i, fused| if fused { (i as f64).mul_add(0.1, -1.5) } else { -1.5 + i as f64 * 0.1 });
    let half_at =
        |i: usize, fused: bool| if fused { (i as f32).mul_add(0.3, 2.0) } else { 2.0f32 + i as f32 * 0.3f32 } as f64;
    floats::<f16, f32>(2.0, 0.3, |i, fused| f16::from_f64(half_at(i, fused)));
    floats::<bf16, f32>(2.0, 0.3, |i, fused| bf16::from_f64(half_at(i, fused)));
    fn ints<T: Suffix>(start: i64, step: i64) {
        let n = 300;
        let out = Buf::<T>::zeroed(n);
        let g = contiguous_geometry(n, 1);
        let name = format!("arange_{}", T::SFX);
        launch(&name, &cfg(&g), KernelArgs::new().push(g).push(out.ptr).push(start).push(step)).unwrap();
        for (i, v) in out.read().into_iter().enumerate() {
            // Wrapping int64 arithmetic, then two's-complement narrowing.
            let want = T::from_i64(start.wrapping_add((i as i64).wrapping_mul(step)));
            assert_eq!(v, want, "{name}[{i}]");
        }
    }
    ints::<u8>(250, 1);
    ints::<i8>(-100, 3);
    ints::<i16>(30_000, 7);
    ints::<i32>(-5, -1_000_000);
    ints::<i64>(i64::MAX - 100, 1 << 40);
}

/// Contiguous operands take the vectorised path when their addresses are aligned to a pack and
/// the element path when one starts mid-pack (a view at an odd offset); both give the same
/// values, tails included.
fn aligned_and_misaligned_contiguous_operands_agree() {
    for n in [1usize, 3, 4, 5, 8, 13, 1027] {
        let a: Vec<f32> = (0..n + 1).map(|i| i as f32 * 0.5 - 3.0).collect();
        let b: Vec<f32> = (0..n + 1).map(|i| 7.0 - i as f32).collect();
        let (ba, bb) = (Buf::from(&a), Buf::from(&b));
        let g = contiguous_geometry(n, 3);
        for shift in [0u64, 1] {
            let out = Buf::<f32>::zeroed(n + 1);
            let at = |p: DevicePtr| p + shift * 4;
            launch("mul_f32", &cfg(&g), KernelArgs::new().push(g).push(at(out.ptr)).push(at(ba.ptr)).push(at(bb.ptr)))
                .unwrap();
            let got = out.read();
            for i in 0..n {
                let k = i + shift as usize;
                assert_eq!(got[k], a[k] * b[k], "mul_f32 n={n} shift={shift} [{i}]");
            }
            // Nothing outside the n elements is written.
            let outside = if shift == 0 { n } else { 0 };
            assert_eq!(got[outside], 0.0, "mul_f32 n={n} shift={shift} wrote outside");
            // A one-input kernel and a converting copy on the same layouts.
            let c = Buf::<f64>::zeroed(n + 1);
            let gc = contiguous_geometry(n, 2);
            launch("cast_f32_f64", &cfg(&gc), KernelArgs::new().push(gc).push(c.ptr + shift * 8).push(at(ba.ptr)))
                .unwrap();
            let got = c.read();
            for i in 0..n {
                let k = i + shift as usize;
                assert_eq!(got[k], a[k] as f64, "cast n={n} shift={shift} [{i}]");
            }
        }
    }
}

/// Sizes around block and warp boundaries, and one that needs the grid-stride loop.
fn tails_and_grid_stride_loops_cover_every_element() {
    for n in [1usize, 31, 32, 33, 255, 256, 257, 1000, 65_537] {
        let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let (ba, bb, out) = (Buf::from(&a), Buf::from(&a), Buf::<f32>::zeroed(n));
        let g = contiguous_geometry(n, 3);
        launch("add_f32", &cfg(&g), KernelArgs::new().push(g).push(out.ptr).push(ba.ptr).push(bb.ptr).push(1.0f64))
            .unwrap();
        assert_eq!(out.read(), a.iter().map(|x| 2.0 * x).collect::<Vec<_>>(), "n = {n}");
    }
    // Two blocks of 32 threads for 1000 elements: each thread loops 15 or 16 times.
    let n = 1000;
    let a: Vec<i32> = (0..n).collect();
    let (ba, out) = (Buf::from(&a), Buf::<i32>::zeroed(n as usize));
    let g = contiguous_geometry(n as usize, 2);
    let small = LaunchConfig::linear(2, 32, StreamId::DEFAULT);
    launch("neg_i32", &small, KernelArgs::new().push(g).push(out.ptr).push(ba.ptr)).unwrap();
    assert_eq!(out.read(), a.iter().map(|x| -x).collect::<Vec<_>>());
}

/// `a [3, 1] op b [1, 4]` broadcast to `[3, 4]`, with `a` stored transposed-strided.
fn broadcast_binary<T: Suffix>(name: &str, alpha: Option<(f64, i64)>, reference: impl Fn(T, T) -> T) {
    let a: Vec<T> = [-2.0, 0.5, 7.0].iter().map(|&x| T::from_f64(x)).collect();
    let b: Vec<T> = [3.0, -1.0, 0.0, 2.0].iter().map(|&x| T::from_f64(x)).collect();
    let (ba, bb, out) = (Buf::from(&a), Buf::from(&b), Buf::<T>::zeroed(12));
    let g = geometry::elementwise(&[3, 4], &[&[4, 1], &[1, 0], &[0, 1]]).unwrap();
    let kernel = format!("{name}_{}", T::SFX);
    let mut args = KernelArgs::new();
    args.push(g).push(out.ptr).push(ba.ptr).push(bb.ptr);
    if let Some((fa, ia)) = alpha {
        if T::DTYPE.is_floating_point() {
            args.push(fa);
        } else {
            args.push(ia);
        }
    }
    launch(&kernel, &cfg(&g), &mut args).unwrap();
    let got = out.read();
    for i in 0..3 {
        for j in 0..4 {
            let want = reference(a[i], b[j]);
            let v = got[i * 4 + j];
            assert!(
                v == want || (v.to_f64().is_nan() && want.to_f64().is_nan()),
                "{kernel}({:?}, {:?}) = {v:?}, want {want:?}",
                a[i],
                b[j]
            );
        }
    }
}

/// The reference of a float op on `T`: computed in f32 for f16/bf16 (the kernels' opmath) and
/// in the type itself otherwise, rounded once to `T`.
fn via_f64<T: Element>(f: impl Fn(f64, f64) -> f64) -> impl Fn(T, T) -> T {
    move |x: T, y: T| {
        let r = f(x.to_f64(), y.to_f64());
        if matches!(T::DTYPE, c10::ScalarType::F32 | c10::ScalarType::F16 | c10::ScalarType::BF16) {
            T::from_f64(r as f32 as f64)
        } else {
            T::from_f64(r)
        }
    }
}

fn float_binary_ops_broadcast_and_match_the_cpu() {
    fn all<T: Suffix>() {
        broadcast_binary::<T>("add", Some((2.0, 2)), via_f64(|x, y| x + 2.0 * y));
        broadcast_binary::<T>("sub", Some((0.5, 0)), via_f64(|x, y| x - 0.5 * y));
        broadcast_binary::<T>("mul", None, via_f64(|x, y| x * y));
        broadcast_binary::<T>("div", None, via_f64(|x, y| x / y));
        broadcast_binary::<T>("maximum", None, via_f64(f64::max));
        broadcast_binary::<T>("minimum", None, via_f64(f64::min));
        // The "alpha" slot carries the threshold.
        broadcast_binary::<T>("threshold_backward", Some((0.5, 0)), via_f64(|g, x| if x > 0.5 { g } else { 0.0 }));
    }
    all::<f32>();
    all::<f64>();
    all::<f16>();
    all::<bf16>();
}

fn integer_binary_ops_wrap_like_the_cpu() {
    fn all<T: Suffix + IntOps>() {
        broadcast_binary::<T>("add", Some((0.0, 3)), |x, y| x.wrapping_add(T::from_i64(3).wrapping_mul(y)));
        broadcast_binary::<T>("sub", Some((0.0, -2)), |x, y| x.wrapping_sub(T::from_i64(-2).wrapping_mul(y)));
        broadcast_binary::<T>("mul", None, |x, y| x.wrapping_mul(y));
        broadcast_binary::<T>("maximum", None, |x, y| if x >= y { x } else { y });
        broadcast_binary::<T>("minimum", None, |x, y| if x <= y { x } else { y });
    }
    all::<u8>();
    all::<i8>();
    all::<i16>();
    all::<i32>();
    all::<i64>();
    // Overflow wraps (two's complement), as on the CPU.
    let a = Buf::from(&[i64::MAX, i64::MIN]);
    let out = Buf::<i64>::zeroed(2);
    let g = contiguous_geometry(2, 3);
    launch("add_i64", &cfg(&g), KernelArgs::new().push(g).push(out.ptr).push(a.ptr).push(a.ptr).push(1i64)).unwrap();
    assert_eq!(out.read(), vec![-2, 0]);
}

fn comparisons_write_bools_and_nan_compares_false() {
    fn run<T: Suffix>(a: &[T], b: &[T], cases: &[(&str, [bool; 4])]) {
        let (ba, bb) = (Buf::from(a), Buf::from(b));
        let g = contiguous_geometry(4, 3);
        for (op, want) in cases {
            let out = Buf::<bool>::zeroed(4);
            let name = format!("{op}_{}", T::SFX);
            launch(&name, &cfg(&g), KernelArgs::new().push(g).push(out.ptr).push(ba.ptr).push(bb.ptr)).unwrap();
            assert_eq!(out.read(), *want, "{name}({a:?}, {b:?})");
        }
    }
    // NaN is unordered and unequal to itself; -0.0 == 0.0.
    let cases: [(&str, [bool; 4]); 6] = [
        ("eq", [true, false, false, true]),
        ("ne", [false, true, true, false]),
        ("lt", [false, false, true, false]),
        ("le", [true, false, true, true]),
        ("gt", [false, false, false, false]),
        ("ge", [true, false, false, true]),
    ];
    fn floats<T: Suffix>(cases: &[(&str, [bool; 4])]) {
        let a: Vec<T> = [1.0, f64::NAN, 2.0, -0.0].map(T::from_f64).to_vec();
        let b: Vec<T> = [1.0, f64::NAN, 3.0, 0.0].map(T::from_f64).to_vec();
        run(&a, &b, cases);
    }
    floats::<f32>(&cases);
    floats::<f64>(&cases);
    floats::<f16>(&cases);
    floats::<bf16>(&cases);
    // Integers: equal, greater, less, equal at the type's extremes.
    let int_cases: [(&str, [bool; 4]); 6] = [
        ("eq", [true, false, false, true]),
        ("ne", [false, true, true, false]),
        ("lt", [false, false, true, false]),
        ("le", [true, false, true, true]),
        ("gt", [false, true, false, false]),
        ("ge", [true, true, false, true]),
    ];
    fn ints<T: Suffix>(cases: &[(&str, [bool; 4])], max: i64) {
        let a: Vec<T> = [5, 9, 0, max].map(T::from_i64).to_vec();
        let b: Vec<T> = [5, 3, 7, max].map(T::from_i64).to_vec();
        run(&a, &b, cases);
    }
    ints::<u8>(&int_cases, 255);
    ints::<i8>(&int_cases, 127);
    ints::<i16>(&int_cases, i16::MAX as i64);
    ints::<i32>(&int_cases, i32::MAX as i64);
    ints::<i64>(&int_cases, i64::MAX);
}

/// A unary kernel's name and its CPU reference.
type UnaryCase<T> = (&'static str, fn(T) -> T);

fn unary_float_ops_match_rust_math() {
    let xs: Vec<f64> = vec![-3.5, -1.0, -0.25, 0.0, 0.3, 1.0, 2.0, 10.0, f64::NAN];
    let ops: [UnaryCase<f64>; 10] = [
        ("neg", |x| -x),
        ("abs", f64::abs),
        ("exp", f64::exp),
        ("log", f64::ln),
        ("sqrt", f64::sqrt),
        ("sin", f64::sin),
        ("cos", f64::cos),
        ("tanh", f64::tanh),
        ("sigmoid", |x| 1.0 / (1.0 + (-x).exp())),
        ("relu", |x| if x > 0.0 || x.is_nan() { x } else { 0.0 }),
    ];
    fn run<T: Suffix>(xs: &[f64], op: &str, f: fn(f64) -> f64, rel: f64) {
        let input: Vec<T> = xs.iter().map(|&x| T::from_f64(x)).collect();
        let (bi, out) = (Buf::from(&input), Buf::<T>::zeroed(xs.len()));
        let g = contiguous_geometry(xs.len(), 2);
        let name = format!("{op}_{}", T::SFX);
        launch(&name, &cfg(&g), KernelArgs::new().push(g).push(out.ptr).push(bi.ptr)).unwrap();
        for (x, v) in input.iter().zip(out.read()) {
            let want = f(x.to_f64());
            let v = v.to_f64();
            let ok = (v.is_nan() && want.is_nan()) || v == want || (v - want).abs() <= rel * want.abs().max(1e-30);
            assert!(ok, "{name}({x:?}) = {v}, want {want}");
        }
    }
    for (op, f) in ops {
        run::<f64>(&xs, op, f, 1e-15);
        run::<f32>(&xs, op, f, 1e-6);
        // One rounding to 8 (bf16) or 11 (f16) significant bits.
        run::<f16>(&xs, op, f, 1e-3);
        run::<bf16>(&xs, op, f, 8e-3);
    }
    // The rest, as aten's CPU bodies (native/unary.rs) define them; the device's libm may differ
    // from Rust's by a few ulps, hence the looser f64 and f32 bounds.
    let xs: Vec<f64> = vec![-3.5, -1.0, -0.25, 0.0, 0.3, 1.0, 2.5, 10.0, f64::NAN, f64::INFINITY];
    let more: [UnaryCase<f64>; 29] = [
        ("exp2", f64::exp2),
        ("expm1", f64::exp_m1),
        ("log2", f64::log2),
        ("log10", f64::log10),
        ("log1p", f64::ln_1p),
        ("rsqrt", |x| 1.0 / x.sqrt()),
        ("reciprocal", |x| 1.0 / x),
        ("tan", f64::tan),
        ("asin", f64::asin),
        ("acos", f64::acos),
        ("atan", f64::atan),
        ("sinh", f64::sinh),
        ("cosh", f64::cosh),
        ("asinh", f64::asinh),
        ("acosh", f64::acosh),
        ("atanh", f64::atanh),
        ("erf", libm::erf),
        ("erfc", libm::erfc),
        ("floor", f64::floor),
        ("ceil", f64::ceil),
        ("trunc", f64::trunc),
        ("round", f64::round_ties_even),
        ("frac", |x| x - x.trunc()),
        ("sign", |x| ((0.0 < x) as i32 - (x < 0.0) as i32) as f64),
        ("silu", |x| x / (1.0 + (-x).exp())),
        ("mish", |x| x * (if x > 20.0 { x } else { x.exp().ln_1p() }).tanh()),
        ("hardsigmoid", |x| (x / 6.0 + 0.5).clamp(0.0, 1.0)),
        ("hardswish", |x| x * (x + 3.0).clamp(0.0, 6.0) / 6.0),
        ("selu", |x| {
            let (alpha, scale) = (1.673_263_242_354_377_2, 1.050_700_987_355_480_5);
            if x > 0.0 {
                scale * x
            } else {
                scale * alpha * x.exp_m1()
            }
        }),
    ];
    for (op, f) in more {
        run::<f64>(&xs, op, f, 1e-13);
        run::<f32>(&xs, op, f, 1e-5);
        run::<f16>(&xs, op, f, 1e-3);
        run::<bf16>(&xs, op, f, 8e-3);
    }
}

fn unary_integer_ops_wrap_like_the_cpu() {
    fn run<T: Suffix + IntOps>() {
        let xs: Vec<T> = [0i64, 1, -1, 5, -7, i64::MIN, i64::MAX].map(T::from_i64).to_vec();
        let ops: [UnaryCase<T>; 9] = [
            ("neg", |x| x.wrapping_neg()),
            ("abs", |x| if x < T::default() { x.wrapping_neg() } else { x }),
            ("relu", |x| if x > T::default() { x } else { T::default() }),
            // Integers are whole: the roundings and frac (as aten's CPU body) are the identity.
            ("floor", |x| x),
            ("ceil", |x| x),
            ("trunc", |x| x),
            ("round", |x| x),
            ("frac", |x| x),
            ("sign", |x| {
                if x > T::default() {
                    T::from_i64(1)
                } else if x < T::default() {
                    T::from_i64(-1)
                } else {
                    T::default()
                }
            }),
        ];
        let (bi, g) = (Buf::from(&xs), contiguous_geometry(xs.len(), 2));
        for (op, f) in ops {
            let out = Buf::<T>::zeroed(xs.len());
            let name = format!("{op}_{}", T::SFX);
            launch(&name, &cfg(&g), KernelArgs::new().push(g).push(out.ptr).push(bi.ptr)).unwrap();
            assert_eq!(out.read(), xs.iter().map(|&x| f(x)).collect::<Vec<_>>(), "{name}");
        }
    }
    run::<u8>();
    run::<i8>();
    run::<i16>();
    run::<i32>();
    run::<i64>();
}

fn launch_errors_are_values() {
    let g = contiguous_geometry(4, 1);
    let out = Buf::<f32>::zeroed(4);
    let e = launch("no_such_kernel", &cfg(&g), KernelArgs::new().push(g)).unwrap_err().to_string();
    assert!(e.contains("named symbol not found") && e.contains("no_such_kernel"), "{e}");
    let too_big = LaunchConfig { grid: [1, 1, 1], block: [2048, 1, 1], shared_bytes: 0, stream: StreamId::DEFAULT };
    let e = launch("fill_f32", &too_big, KernelArgs::new().push(g).push(out.ptr).push(1.0f32)).unwrap_err().to_string();
    assert!(e.contains("fill_f32"), "{e}");
    assert_eq!(out.read(), vec![0.0; 4]);
}

/// The emulated device checks copies against its live allocations (the GPU reports such
/// accesses asynchronously, or not at all inside an allocation's rounding).
fn emulated_copies_outside_allocations_are_errors() {
    let drv = kernels_cuda::emu::EmulatedDriver::with_devices(1, 1 << 20);
    let p = drv.malloc(0, 16).unwrap();
    let e = drv.copy_htod(0, p + 8, &[0u8; 16], StreamId::DEFAULT).unwrap_err().to_string();
    assert!(e.contains("illegal memory access"), "{e}");
    let mut back = [1u8; 16];
    drv.copy_dtoh(0, &mut back, p + 1, StreamId::DEFAULT).unwrap_err();
    drv.memset(0, p, 0, 16, StreamId::DEFAULT).unwrap();
    drv.copy_dtoh(0, &mut back, p, StreamId::DEFAULT).unwrap();
    assert_eq!(back, [0u8; 16]);
    // Over the capacity: out of memory, which the caching allocator turns into PyTorch's error.
    assert_eq!(drv.malloc(0, 2 << 20), Err(kernels_cuda::driver::MallocError::OutOfMemory));
    assert!(drv.malloc(1, 16).is_err());
    drv.free(0, p);
    assert_eq!(drv.mem_info(0).unwrap(), (1 << 20, 1 << 20));
}

// ---- reductions (kernels/reduce.cu) -----------------------------------------------------------

/// The geometry of reducing a contiguous `[rows, cols]` input over dim 1 (`over_cols`, inner
/// stride 1) or dim 0 (inner stride `cols`), into a contiguous output.
fn matrix_reduction(rows: i64, cols: i64, over_cols: bool) -> KcReduction {
    let mut r = KcReduction { outer_ndim: 1, inner_ndim: 1, ..Default::default() };
    if over_cols {
        (r.outputs, r.reduced) = (rows, cols);
        (r.outer_sizes[0], r.outer_strides[0], r.inner_sizes[0], r.inner_strides[0]) = (rows, cols, cols, 1);
    } else {
        (r.outputs, r.reduced) = (cols, rows);
        (r.outer_sizes[0], r.outer_strides[0], r.inner_sizes[0], r.inner_strides[0]) = (cols, 1, rows, cols);
    }
    r.out_strides[0] = 1;
    r
}

/// Launches a reduction kernel over `r` with 256-thread blocks (what `KC_REDUCE_THREADS` says).
fn launch_reduction(name: &str, r: &KcReduction, blocks: u32, outs: &[DevicePtr], input: DevicePtr) {
    let mut args = KernelArgs::new();
    args.push(*r);
    for &o in outs {
        args.push(o);
    }
    args.push(input);
    launch(name, &LaunchConfig::linear(blocks, 256, StreamId::DEFAULT), &mut args).unwrap();
}

/// Values of the input matrix, element (i, j), chosen so sums and products stay finite.
fn reduction_input<T: Element>(rows: usize, cols: usize) -> Vec<T> {
    (0..rows * cols)
        .map(|k| T::from_f64(((k * 37 % 29) as f64 - 14.0) / 16.0 + if k % 5 == 0 { 1.0 } else { 0.0 }))
        .collect()
}

fn reduction_sums_and_products_match_f64_folds() {
    fn run<T: Suffix>(tol: f64) {
        let (rows, cols) = (3usize, 300usize);
        let x = reduction_input::<T>(rows, cols);
        let input = Buf::from(&x);
        for over_cols in [true, false] {
            let r = matrix_reduction(rows as i64, cols as i64, over_cols);
            let n = r.outputs as usize;
            let at = |o: usize, k: usize| if over_cols { x[o * cols + k] } else { x[k * cols + o] };
            for (op, identity, f) in [("sum", 0.0, (|a, b| a + b) as fn(f64, f64) -> f64), ("prod", 1.0, |a, b| a * b)]
            {
                let out = Buf::<T>::zeroed(n);
                // Two blocks for many outputs: the kernels loop over the rest.
                launch_reduction(&format!("{op}_{}", T::SFX), &r, 2, &[out.ptr], input.ptr);
                for (o, g) in out.read().iter().enumerate() {
                    // Products of values below 1 in magnitude shrink fast; compare in absolute terms near 0.
                    let want = (0..r.reduced as usize).fold(identity, |a, k| f(a, at(o, k).to_f64()));
                    let g = g.to_f64();
                    assert!((g - want).abs() <= tol * want.abs().max(1.0), "{op}_{}[{o}] = {g}, want {want}", T::SFX);
                }
            }
        }
    }
    run::<f32>(1e-5);
    run::<f64>(1e-12);
    run::<f16>(2e-2);
    run::<bf16>(2e-2);
    // int64 sums and products wrap.
    let x: Vec<i64> = vec![i64::MAX, 1, 7, -3, 1 << 40, 1 << 30];
    let input = Buf::from(&x);
    let r = matrix_reduction(2, 3, true);
    let out = Buf::<i64>::zeroed(2);
    launch_reduction("sum_i64", &r, 1, &[out.ptr], input.ptr);
    assert_eq!(out.read(), vec![i64::MAX.wrapping_add(8), (1i64 << 40) + (1 << 30) - 3]);
    launch_reduction("prod_i64", &r, 1, &[out.ptr], input.ptr);
    assert_eq!(out.read(), vec![i64::MAX.wrapping_mul(7), (-3i64).wrapping_mul(1 << 40).wrapping_mul(1 << 30)]);
}

fn reduction_extremes_take_the_first_index_and_propagate_nan() {
    fn run<T: Suffix>() {
        let (rows, cols) = (4usize, 300usize);
        let mut x = reduction_input::<T>(rows, cols);
        if T::DTYPE.is_floating_point() {
            x[cols + 250] = T::from_f64(f64::NAN);
            x[cols + 270] = T::from_f64(f64::NAN);
        }
        let input = Buf::from(&x);
        for over_cols in [true, false] {
            let r = matrix_reduction(rows as i64, cols as i64, over_cols);
            let n = r.outputs as usize;
            let at = |o: usize, k: usize| if over_cols { x[o * cols + k] } else { x[k * cols + o] };
            for max in [true, false] {
                let (vals, idx) = (Buf::<T>::zeroed(n), Buf::<i64>::zeroed(n));
                let name = format!("{}_{}", if max { "max" } else { "min" }, T::SFX);
                launch_reduction(&name, &r, 3, &[vals.ptr, idx.ptr], input.ptr);
                let (gv, gi) = (vals.read(), idx.read());
                for o in 0..n {
                    // The reference: the first NaN, else the first extreme.
                    let row: Vec<f64> = (0..r.reduced as usize).map(|k| at(o, k).to_f64()).collect();
                    let want = row.iter().position(|v| v.is_nan()).unwrap_or_else(|| {
                        let best = row.iter().copied().fold(if max { f64::MIN } else { f64::MAX }, |a, b| {
                            if max {
                                a.max(b)
                            } else {
                                a.min(b)
                            }
                        });
                        row.iter().position(|&v| v == best).unwrap()
                    });
                    assert_eq!(gi[o], want as i64, "{name}[{o}] index");
                    let same = gv[o] == at(o, want) || (gv[o].to_f64().is_nan() && row[want].is_nan());
                    assert!(same, "{name}[{o}] = {:?}", gv[o]);
                }
            }
        }
    }
    run::<f32>();
    run::<f64>();
    run::<f16>();
    run::<bf16>();
    run::<u8>();
    run::<i8>();
    run::<i16>();
    run::<i32>();
    run::<i64>();
}

fn softmax_rows_sum_to_one_and_match_closed_forms() {
    fn run<T: Suffix>(tol: f64) {
        let (rows, cols) = (3usize, 300usize);
        let x = reduction_input::<T>(rows, cols);
        let input = Buf::from(&x);
        for over_cols in [true, false] {
            let r = matrix_reduction(rows as i64, cols as i64, over_cols);
            for log in [false, true] {
                let out = Buf::<T>::zeroed(rows * cols);
                let name = format!("{}softmax_{}", if log { "log_" } else { "" }, T::SFX);
                launch_reduction(&name, &r, 2, &[out.ptr], input.ptr);
                let got = out.read();
                for o in 0..r.outputs as usize {
                    let pos = |k: usize| if over_cols { o * cols + k } else { k * cols + o };
                    let row: Vec<f64> = (0..r.reduced as usize).map(|k| x[pos(k)].to_f64()).collect();
                    let m = row.iter().copied().fold(f64::MIN, f64::max);
                    let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
                    for (k, v) in row.iter().enumerate() {
                        let want = if log { v - m - s.ln() } else { (v - m).exp() / s };
                        let g = got[pos(k)].to_f64();
                        assert!((g - want).abs() <= tol * want.abs().max(1e-3), "{name}[{o}, {k}] = {g}, want {want}");
                    }
                }
            }
        }
    }
    run::<f32>(1e-5);
    run::<f64>(1e-12);
    run::<f16>(1e-2);
    run::<bf16>(2e-2);
}

// ---- the GEMM behind cuBLAS's contract (Driver::gemm) ------------------------------------------

/// `C = alpha op(A) op(B) + beta C`, column-major with padded leading dimensions and two
/// batches, every transpose combination, against a direct f64 evaluation of the contract.
fn gemm_follows_the_cublas_contract() {
    use kernels_cuda::driver::Gemm;
    let (m, n, k, batch) = (3i64, 4i64, 5i64, 2i64);
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        let (ra, ca) = if ta { (k, m) } else { (m, k) };
        let (rb, cb) = if tb { (n, k) } else { (k, n) };
        let (lda, ldb, ldc) = (ra + 2, rb + 1, m + 3);
        let (sa, sb, sc) = (lda * ca + 7, ldb * cb, ldc * n + 1);
        let a: Vec<f32> = (0..sa * batch).map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.5).collect();
        let b: Vec<f32> = (0..sb * batch).map(|i| ((i * 5 % 13) as f32 - 6.0) * 0.25).collect();
        let c0: Vec<f32> = (0..sc * batch).map(|i| (i % 3) as f32).collect();
        let (ba, bb, bc) = (Buf::from(&a), Buf::from(&b), Buf::from(&c0));
        let g = Gemm {
            dtype: c10::ScalarType::F32,
            trans_a: ta,
            trans_b: tb,
            m,
            n,
            k,
            alpha: 1.5,
            a: (ba.ptr, lda, sa),
            b: (bb.ptr, ldb, sb),
            beta: -0.5,
            c: (bc.ptr, ldc, sc),
            batch,
        };
        // SAFETY: the buffers hold every element the sizes, leading dims and strides address.
        unsafe { dev().gemm(0, &g, StreamId::DEFAULT) }.unwrap();
        let got = bc.read();
        for bi in 0..batch {
            for i in 0..m {
                for j in 0..n {
                    let mut acc = 0.0f64;
                    for l in 0..k {
                        let av =
                            if ta { a[(bi * sa + l + i * lda) as usize] } else { a[(bi * sa + i + l * lda) as usize] };
                        let bv =
                            if tb { b[(bi * sb + j + l * ldb) as usize] } else { b[(bi * sb + l + j * ldb) as usize] };
                        acc += av as f64 * bv as f64;
                    }
                    let at = (bi * sc + i + j * ldc) as usize;
                    let want = 1.5 * acc - 0.5 * c0[at] as f64;
                    assert!(
                        (got[at] as f64 - want).abs() < 1e-4,
                        "gemm {ta} {tb} [{bi}, {i}, {j}] = {}, want {want}",
                        got[at]
                    );
                }
            }
        }
        // The padding between columns and batches is untouched.
        for (at, (&g, &c)) in got.iter().zip(&c0).enumerate() {
            let (bi, r) = (at as i64 / sc, at as i64 % sc);
            if bi >= batch || r % ldc >= m || r / ldc >= n {
                assert_eq!(g, c, "gemm wrote padding at {at}");
            }
        }
    }
    // beta = 0: C is not read (NaN in it does not propagate); a leading dimension below the
    // rows is cuBLAS's invalid-value error; a matrix outside the allocation is an illegal access.
    let (a, b) = (Buf::from(&[1.0f64, 2.0]), Buf::from(&[3.0f64, 4.0]));
    let c = Buf::from(&[f64::NAN]);
    let mut g = Gemm {
        dtype: c10::ScalarType::F64,
        trans_a: false,
        trans_b: false,
        m: 1,
        n: 1,
        k: 2,
        alpha: 1.0,
        a: (a.ptr, 1, 0),
        b: (b.ptr, 2, 0),
        beta: 0.0,
        c: (c.ptr, 1, 0),
        batch: 1,
    };
    // SAFETY: as above.
    unsafe { dev().gemm(0, &g, StreamId::DEFAULT) }.unwrap();
    assert_eq!(c.read(), vec![11.0]);
    g.b.1 = 1;
    // SAFETY: rejected before any access.
    let e = unsafe { dev().gemm(0, &g, StreamId::DEFAULT) }.unwrap_err().to_string();
    assert!(e.contains("INVALID_VALUE"), "{e}");
    if dev().name() == "emulator" {
        g.b.1 = 3;
        g.k = 3;
        // SAFETY: the emulator checks the ranges before it reads (the point of the test).
        let e = unsafe { dev().gemm(0, &g, StreamId::DEFAULT) }.unwrap_err().to_string();
        assert!(e.contains("illegal memory access"), "{e}");
    }
}

// ---- the suite ---------------------------------------------------------------------------------

/// Philox4x32-10 on the host (Salmon et al., SC'11), the reference of the random kernels.
fn philox4x32(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (ctr, key);
    for round in 0..10 {
        if round > 0 {
            k[0] = k[0].wrapping_add(0x9E37_79B9);
            k[1] = k[1].wrapping_add(0xBB67_AE85);
        }
        let p0 = 0xD251_1F53u64 * c[0] as u64;
        let p1 = 0xCD9E_8D57u64 * c[2] as u64;
        c = [(p1 >> 32) as u32 ^ c[1] ^ k[0], p1 as u32, (p0 >> 32) as u32 ^ c[3] ^ k[1], p0 as u32];
    }
    c
}

/// The block of counter `counter` under `seed` (Note [Philox streams] in kernels/random.cu).
fn philox_block(counter: u64, seed: u64) -> [u32; 4] {
    philox4x32([counter as u32, (counter >> 32) as u32, 0, 0], [seed as u32, (seed >> 32) as u32])
}

fn u24(w: u32) -> f32 {
    (w & 0xFF_FFFF) as f32 / 16_777_216.0
}
fn u53(hi: u32, lo: u32) -> f64 {
    ((((hi as u64) << 32) | lo as u64) & ((1 << 53) - 1)) as f64 / 9_007_199_254_740_992.0
}

/// The host reference agrees with published known-answer vectors: Random123's `kat_vectors`
/// for Philox4x32-10 (zero, all-ones and pi-digit inputs) and, for counters and keys in the
/// layout the kernels use, randomgen 2.5.1's `Philox(number=4, width=32)`.
fn philox_reference_matches_known_answers() {
    assert_eq!(philox4x32([0; 4], [0; 2]), [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]);
    assert_eq!(philox4x32([u32::MAX; 4], [u32::MAX; 2]), [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]);
    assert_eq!(
        philox4x32([0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344], [0xa409_3822, 0x299f_31d0]),
        [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
    );
    assert_eq!(philox_block(1, 0), [0xf8e4_cca4, 0x5cb2_00db, 0xb1a5_74eb, 0x097e_ff67]);
    assert_eq!(philox_block((1 << 32) + 5, 42), [0x131a_8a04, 0x494e_fee7, 0xe24f_0e03, 0x5128_a584]);
    assert_eq!(philox_block(0, 67_280_421_310_721), [0x64a3_e0f6, 0xd72e_25ab, 0x0be1_367b, 0x53ec_cf2d]);
}

/// Every random kernel against the host Philox: element `j` of a launch with `offset` takes
/// block `offset + j / per` (Note [Philox streams]); integer, uniform and Bernoulli samples
/// exactly, normal and exponential ones within the device math's ulps. Also: the result does
/// not depend on the launch shape.
fn random_kernels_follow_the_philox_streams() {
    const SEED: u64 = 0x1234_5678_9abc;
    const OFFSET: u64 = 5;
    const N: usize = 37; // not a whole number of groups
    fn words(j: usize, per: usize) -> [u32; 4] {
        philox_block(OFFSET + (j / per) as u64, SEED)
    }
    fn run<T: Suffix>(name: &str, input: Option<DevicePtr>, push: impl Fn(&mut KernelArgs)) -> Vec<T> {
        let out = Buf::<T>::zeroed(N);
        let g = contiguous_geometry(N, 1 + input.is_some() as usize);
        let mut args = KernelArgs::new();
        args.push(g).push(out.ptr);
        if let Some(p) = input {
            args.push(p);
        }
        args.push(SEED).push(OFFSET);
        push(&mut args);
        launch(name, &cfg(&g), &mut args).unwrap();
        out.read()
    }
    fn close(got: f64, want: f64, rel: f64) -> bool {
        (got - want).abs() <= rel * want.abs().max(1.0)
    }

    // random_: bits % range + base, narrow (32-bit words, 4 per block) for every dtype.
    fn ints<T: Suffix>(range: u64, base: i64) {
        let name = format!("random_{}", T::SFX);
        let got = run::<T>(&name, None, |a| {
            a.push(range).push(base).push(false);
        });
        for (j, v) in got.into_iter().enumerate() {
            let w = words(j, 4)[j % 4] as u64;
            assert_eq!(v, T::from_i64((w % range) as i64 + base), "{name}[{j}]");
        }
    }
    ints::<f32>(100, -3);
    ints::<f64>(100, -3);
    ints::<f16>(100, -3);
    ints::<bf16>(100, -3);
    ints::<u8>(200, 5);
    ints::<i8>(100, -50);
    ints::<i16>(1000, -7);
    ints::<i32>(1 << 30, 11);
    ints::<i64>(3, i64::MIN);
    ints::<bool>(2, 0);
    // Wide: 64-bit draws (2 per block); range 0 is the full 64-bit range.
    for (range, base) in [(0u64, 0i64), ((1 << 40) + 7, -5)] {
        let got = run::<i64>("random_i64", None, |a| {
            a.push(range).push(base).push(true);
        });
        for (j, v) in got.into_iter().enumerate() {
            let w = words(j, 2);
            let bits = ((w[2 * (j % 2)] as u64) << 32) | w[2 * (j % 2) + 1] as u64;
            let want = if range == 0 { bits } else { bits % range }.wrapping_add(base as u64) as i64;
            assert_eq!(v, want, "random_i64 wide range {range} [{j}]");
        }
    }

    // uniform_ in [-2, 3): one fused multiply-add in float (double for double), then rounded.
    fn uniform<T: Suffix>(want: impl Fn(usize) -> f64) {
        let name = format!("uniform_{}", T::SFX);
        let got = run::<T>(&name, None, |a| {
            a.push(-2.0f64).push(3.0f64);
        });
        for (j, v) in got.into_iter().enumerate() {
            let mut w = T::from_f64(want(j));
            if w == T::from_f64(3.0) {
                w = T::from_f64(-2.0);
            }
            assert_eq!(v, w, "{name}[{j}]");
            assert!((-2.0..3.0).contains(&v.to_f64()), "{name}[{j}] = {v:?} outside [-2, 3)");
        }
    }
    let uniform_f32 = |j: usize| u24(words(j, 4)[j % 4]).mul_add(5.0, -2.0) as f64;
    uniform::<f32>(uniform_f32);
    uniform::<f16>(uniform_f32);
    uniform::<bf16>(uniform_f32);
    uniform::<f64>(|j| {
        let w = words(j, 2);
        u53(w[2 * (j % 2)], w[2 * (j % 2) + 1]).mul_add(5.0, -2.0)
    });

    // normal_(1, 2): Box-Muller, cosine sample first; exponential_(0.5): -log1p(-u) / 0.5.
    fn approx<T: Suffix>(name: &str, rel: f64, push: impl Fn(&mut KernelArgs), want: impl Fn(usize) -> f64) {
        let got = run::<T>(name, None, push);
        for (j, v) in got.into_iter().enumerate() {
            assert!(close(v.to_f64(), want(j), rel), "{name}[{j}] = {v:?}, want {}", want(j));
        }
    }
    let normal_f32 = |j: usize| {
        let (w, k) = (words(j, 4), j % 4);
        let pair = k / 2;
        let (u1, u2) = (u24(w[2 * pair]), u24(w[2 * pair + 1]));
        let r = (-2.0f32 * (-u2).ln_1p()).sqrt();
        let theta = 2.0f32 * std::f32::consts::PI * u1;
        let z = if k % 2 == 0 { r * theta.cos() } else { r * theta.sin() };
        (z * 2.0 + 1.0) as f64
    };
    let normal_args = |a: &mut KernelArgs| {
        a.push(1.0f64).push(2.0f64);
    };
    approx::<f32>("normal_f32", 1e-5, normal_args, normal_f32);
    approx::<f16>("normal_f16", 2e-3, normal_args, normal_f32);
    approx::<bf16>("normal_bf16", 1e-2, normal_args, normal_f32);
    approx::<f64>("normal_f64", 1e-12, normal_args, |j| {
        let w = words(j, 2);
        let (u1, u2) = (u53(w[0], w[1]), u53(w[2], w[3]));
        let r = (-2.0 * (-u2).ln_1p()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u1;
        (if j % 2 == 0 { r * theta.cos() } else { r * theta.sin() }) * 2.0 + 1.0
    });
    let exp_args = |a: &mut KernelArgs| {
        a.push(0.5f64);
    };
    let exp_f32 = |j: usize| (-(-u24(words(j, 4)[j % 4])).ln_1p() / 0.5f32) as f64;
    approx::<f32>("exponential_f32", 1e-5, exp_args, exp_f32);
    approx::<f16>("exponential_f16", 2e-3, exp_args, exp_f32);
    approx::<bf16>("exponential_bf16", 1e-2, exp_args, exp_f32);
    approx::<f64>("exponential_f64", 1e-12, exp_args, |j| {
        let w = words(j, 2);
        -(-u53(w[2 * (j % 2)], w[2 * (j % 2) + 1])).ln_1p() / 0.5
    });

    // bernoulli_(0.3): a 53-bit uniform below p, for every dtype.
    fn bernoulli<T: Suffix>() {
        let name = format!("bernoulli_{}", T::SFX);
        let got = run::<T>(&name, None, |a| {
            a.push(0.3f64);
        });
        for (j, v) in got.into_iter().enumerate() {
            let w = words(j, 2);
            assert_eq!(v, T::from_bool(u53(w[2 * (j % 2)], w[2 * (j % 2) + 1]) < 0.3), "{name}[{j}]");
        }
    }
    bernoulli::<f32>();
    bernoulli::<f64>();
    bernoulli::<f16>();
    bernoulli::<bf16>();
    bernoulli::<u8>();
    bernoulli::<i8>();
    bernoulli::<i16>();
    bernoulli::<i32>();
    bernoulli::<i64>();
    bernoulli::<bool>();

    // bernoulli_(p tensor): p cycles through 0, 1/4, 1/2, 3/4, 1; a 24-bit float uniform below
    // p, a 53-bit one for double.
    fn bernoulli_tensor<T: Suffix>() {
        let name = format!("bernoulli_tensor_{}", T::SFX);
        let p: Vec<T> = (0..N).map(|j| T::from_f64((j % 5) as f64 / 4.0)).collect();
        let pb = Buf::from(&p);
        let got = run::<T>(&name, Some(pb.ptr), |_| {});
        for (j, v) in got.into_iter().enumerate() {
            let q = p[j].to_f64();
            let want = if T::DTYPE == c10::ScalarType::F64 {
                let w = words(j, 2);
                u53(w[2 * (j % 2)], w[2 * (j % 2) + 1]) < q
            } else {
                u24(words(j, 4)[j % 4]) < q as f32
            };
            assert_eq!(v, T::from_bool(want), "{name}[{j}] with p {q}");
        }
    }
    bernoulli_tensor::<f32>();
    bernoulli_tensor::<f64>();
    bernoulli_tensor::<f16>();
    bernoulli_tensor::<bf16>();

    // The same numbers from one block of 32 threads (a grid-stride loop) as from the default
    // launch shape.
    let n = 1000;
    let g = contiguous_geometry(n, 1);
    let mut outs = Vec::new();
    for cfg in [cfg(&g), LaunchConfig::linear(1, 32, StreamId::DEFAULT)] {
        let out = Buf::<f32>::zeroed(n);
        launch(
            "uniform_f32",
            &cfg,
            KernelArgs::new().push(g).push(out.ptr).push(SEED).push(OFFSET).push(0.0f64).push(1.0f64),
        )
        .unwrap();
        outs.push(out.read());
    }
    assert_eq!(outs[0], outs[1]);
    assert_eq!(outs[0][999], u24(words(999, 4)[3]));
}

/// `remap_<T>`: a 2-d gather through per-dim maps (rows reversed, columns picked with
/// repeats and a hole that takes the fill value) from a transposed source, for every dtype,
/// against the same indexing on the host.
fn remap_gathers_through_per_dim_maps() {
    fn check<T: Suffix>() {
        let (rows, cols) = (3usize, 4usize);
        let src_vals: Vec<T> = (0..rows * cols).map(|i| T::from_i64(i as i64 % 7 + 1)).collect();
        // The source is read transposed: element (r, c) at c * rows + r.
        let src = Buf::from(&src_vals);
        let row_map: Vec<i64> = vec![2, 1, 0];
        let col_map: Vec<i64> = vec![3, -1, 0, 0, 2];
        let maps: Vec<i64> = row_map.iter().chain(&col_map).copied().collect();
        let dmaps = Buf::from(&maps);
        let (orows, ocols) = (row_map.len(), col_map.len());
        let out = Buf::<T>::zeroed(orows * ocols);
        let mut r = KcRemap { ndim: 2, numel: (orows * ocols) as i64, ..Default::default() };
        // Innermost first: dim 0 of the geometry is the output's columns.
        (r.sizes[0], r.src_strides[0], r.map_offsets[0]) = (ocols as i64, rows as i64, row_map.len() as i64);
        (r.sizes[1], r.src_strides[1], r.map_offsets[1]) = (orows as i64, 1, 0);
        let fill = T::from_i64(9);
        let name = format!("remap_{}", T::SFX);
        let cfg = geometry::elementwise_launch(r.numel, StreamId::DEFAULT);
        launch(&name, &cfg, KernelArgs::new().push(r).push(out.ptr).push(src.ptr).push(dmaps.ptr).push(fill)).unwrap();
        let got = out.read();
        for (i, &ri) in row_map.iter().enumerate() {
            for (j, &cj) in col_map.iter().enumerate() {
                let want = if cj < 0 { fill } else { src_vals[cj as usize * rows + ri as usize] };
                assert_eq!(got[i * ocols + j], want, "{name}[{i}, {j}]");
            }
        }
    }
    check::<f32>();
    check::<f64>();
    check::<f16>();
    check::<bf16>();
    check::<u8>();
    check::<i8>();
    check::<i16>();
    check::<i32>();
    check::<i64>();
    check::<bool>();
}

/// `sort_<T>`: every line sorted stably (NaN last ascending, first descending), with the
/// positions, against a stable sort on the host.
fn sort_ranks_lines_stably() {
    fn check<T: Suffix>(vals: &[f64]) {
        let n = 8usize;
        let lines = vals.len() / n;
        let input: Vec<T> = vals.iter().map(|&v| T::from_f64(v)).collect();
        let inb = Buf::from(&input);
        for descending in [false, true] {
            let (values, indices) = (Buf::<T>::zeroed(vals.len()), Buf::<i64>::zeroed(vals.len()));
            let name = format!("sort_{}", T::SFX);
            let cfg = geometry::elementwise_launch(vals.len() as i64, StreamId::DEFAULT);
            let mut args = KernelArgs::new();
            args.push(lines as i64).push(n as i64).push(values.ptr).push(indices.ptr).push(inb.ptr).push(descending);
            launch(&name, &cfg, &mut args).unwrap();
            let (gv, gi) = (values.read(), indices.read());
            for l in 0..lines {
                let line: Vec<f64> = input[l * n..(l + 1) * n].iter().map(|v| v.to_f64()).collect();
                let mut order: Vec<usize> = (0..n).collect();
                // NaN above every number; equal keys keep their positions (a stable sort).
                let key = |x: f64| if x.is_nan() { f64::INFINITY } else { x };
                let rank = |a: usize, b: usize| {
                    let (x, y) = (line[a], line[b]);
                    let o = match (x.is_nan(), y.is_nan()) {
                        (true, true) => std::cmp::Ordering::Equal,
                        (true, false) => std::cmp::Ordering::Greater,
                        (false, true) => std::cmp::Ordering::Less,
                        _ => key(x).partial_cmp(&key(y)).unwrap(),
                    };
                    if descending {
                        o.reverse()
                    } else {
                        o
                    }
                };
                order.sort_by(|&a, &b| rank(a, b));
                for (k, &p) in order.iter().enumerate() {
                    assert_eq!(gi[l * n + k], p as i64, "{name} descending={descending} line {l} place {k}");
                    let (g, w) = (gv[l * n + k].to_f64(), line[p]);
                    assert!(g == w || (g.is_nan() && w.is_nan()), "{name} line {l} place {k}: {g} vs {w}");
                }
            }
        }
    }
    let floats = [3.0, f64::NAN, -1.0, 3.0, 0.0, -1.0, 2.5, f64::NAN, 1.0, 1.0, 1.0, -2.0, 7.0, 0.5, -0.5, 1.0];
    check::<f32>(&floats);
    check::<f64>(&floats);
    check::<f16>(&floats);
    check::<bf16>(&floats);
    let ints = [3.0, 0.0, 1.0, 3.0, 5.0, 1.0, 2.0, 0.0, 1.0, 1.0, 1.0, 2.0, 7.0, 0.0, 4.0, 1.0];
    check::<u8>(&ints);
    check::<i8>(&ints);
    check::<i16>(&ints);
    check::<i32>(&ints);
    check::<i64>(&ints);
    check::<bool>(&[1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0]);
}

/// Note [Merging sorted runs]: `merge_<T>` passes of widths 1, 2, 4, ... (the last run of each
/// pass without a neighbour, lines of a length that is not a power of two) sort every line
/// stably, NaN last ascending and first descending, against a stable sort on the host.
fn merge_passes_sort_lines_stably() {
    fn check<T: Suffix>(pool: &[f64]) {
        let (lines, n) = (3usize, 37usize);
        let input: Vec<T> = (0..lines * n).map(|i| T::from_f64(pool[(i * 7 + i / 5) % pool.len()])).collect();
        let inb = Buf::from(&input);
        let name = format!("merge_{}", T::SFX);
        for descending in [false, true] {
            let pairs = [
                (Buf::<T>::zeroed(input.len()), Buf::<i64>::zeroed(input.len())),
                (Buf::<T>::zeroed(input.len()), Buf::<i64>::zeroed(input.len())),
            ];
            let passes = 6; // ceil(log2(37))
            for k in 0..passes {
                let (ov, oi) = &pairs[k % 2];
                let (iv, ii) = if k == 0 { (inb.ptr, 0) } else { (pairs[(k + 1) % 2].0.ptr, pairs[(k + 1) % 2].1.ptr) };
                let mut args = KernelArgs::new();
                args.push(lines as i64).push(n as i64).push(1i64 << k).push(ov.ptr).push(oi.ptr);
                args.push(iv).push(ii).push(descending);
                launch(&name, &geometry::elementwise_launch(input.len() as i64, StreamId::DEFAULT), &mut args).unwrap();
            }
            let (gv, gi) = (pairs[(passes - 1) % 2].0.read(), pairs[(passes - 1) % 2].1.read());
            for l in 0..lines {
                let line: Vec<f64> = input[l * n..(l + 1) * n].iter().map(|v| v.to_f64()).collect();
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by(|&a, &b| {
                    let (x, y) = (line[a], line[b]);
                    let o = match (x.is_nan(), y.is_nan()) {
                        (true, true) => std::cmp::Ordering::Equal,
                        (true, false) => std::cmp::Ordering::Greater,
                        (false, true) => std::cmp::Ordering::Less,
                        _ => x.partial_cmp(&y).unwrap(),
                    };
                    if descending {
                        o.reverse()
                    } else {
                        o
                    }
                });
                for (k, &p) in order.iter().enumerate() {
                    assert_eq!(gi[l * n + k], p as i64, "{name} descending={descending} line {l} place {k}");
                    let (g, w) = (gv[l * n + k].to_f64(), line[p]);
                    assert!(g == w || (g.is_nan() && w.is_nan()), "{name} line {l} place {k}: {g} vs {w}");
                }
            }
        }
    }
    let floats = [3.0, f64::NAN, -1.0, 3.0, 0.0, -1.0, 2.5, 1.0, 1.0, -2.0, 7.0, 0.5, -0.5];
    check::<f32>(&floats);
    check::<f64>(&floats);
    check::<f16>(&floats);
    check::<bf16>(&floats);
    let ints = [3.0, 0.0, 1.0, 3.0, 5.0, 1.0, 2.0, 7.0, 4.0, 1.0, 6.0];
    check::<u8>(&ints);
    check::<i8>(&ints);
    check::<i16>(&ints);
    check::<i32>(&ints);
    check::<i64>(&ints);
    check::<bool>(&[1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0]);
}

/// Note [Runs of a sorted vector]: `runs_count`, `runs_scan` and `runs_write` find every run of
/// equal keys (runs across chunk boundaries, a run of one, one at each end) with its first
/// position and key, the total after the counts and `n` after the last start.
fn runs_mark_each_run_of_a_sorted_vector() {
    let n = 1000usize;
    // Runs of lengths 1, 2, ..., cycling through 1..=9, keys increasing with gaps.
    let mut sorted = Vec::with_capacity(n);
    let (mut key, mut len) = (-5i64, 1usize);
    while sorted.len() < n {
        for _ in 0..len.min(n - sorted.len()) {
            sorted.push(key);
        }
        key += 3;
        len = len % 9 + 1;
    }
    let mut want_starts: Vec<i64> =
        (0..n).filter(|&p| p == 0 || sorted[p] != sorted[p - 1]).map(|p| p as i64).collect();
    let want_keys: Vec<i64> = want_starts.iter().map(|&p| sorted[p as usize]).collect();
    want_starts.push(n as i64);
    for chunk in [256usize, 7, 1000, 1] {
        let chunks = n.div_ceil(chunk);
        let s = Buf::from(&sorted);
        let counts = Buf::<i64>::zeroed(chunks + 1);
        let (starts, keys) = (Buf::from(&vec![-1i64; n + 1]), Buf::from(&vec![-1i64; n]));
        let mut count = KernelArgs::new();
        count.push(n as i64).push(chunk as i64).push(s.ptr).push(counts.ptr);
        launch("runs_count", &geometry::elementwise_launch(chunks as i64, StreamId::DEFAULT), &mut count).unwrap();
        let mut scan = KernelArgs::new();
        scan.push(chunks as i64).push(counts.ptr);
        launch("runs_scan", &geometry::elementwise_launch(1, StreamId::DEFAULT), &mut scan).unwrap();
        let mut write = KernelArgs::new();
        write.push(n as i64).push(chunk as i64).push(s.ptr).push(counts.ptr).push(starts.ptr).push(keys.ptr);
        launch("runs_write", &geometry::elementwise_launch(chunks as i64, StreamId::DEFAULT), &mut write).unwrap();
        let u = want_keys.len();
        assert_eq!(counts.read()[chunks], u as i64, "chunk {chunk}: the total");
        assert_eq!(&starts.read()[..=u], &want_starts[..], "chunk {chunk}: starts");
        assert_eq!(&keys.read()[..u], &want_keys[..], "chunk {chunk}: keys");
        assert!(starts.read()[u + 1..].iter().all(|&x| x == -1), "chunk {chunk}: nothing past the last start");
    }
}

/// `embedding_backward_<T>`: each group's gradient rows summed in order into its table row,
/// divided by the group size when scaling, other rows untouched.
fn embedding_backward_sums_groups_in_order() {
    fn check<T: Suffix>() {
        let (positions, cols, weights) = (5usize, 3usize, 4usize);
        let grad: Vec<T> = (0..positions * cols).map(|i| T::from_f64(i as f64 * 0.5 - 2.0)).collect();
        // Rows 3 (positions 0, 2, 4) and 1 (position 3); position 1 was the padding index.
        let (order, starts, rows) = (vec![3i64, 0, 2, 4], vec![0i64, 1, 4], vec![1i64, 3]);
        let (g, o, st, ro) = (Buf::from(&grad), Buf::from(&order), Buf::from(&starts), Buf::from(&rows));
        for scale in [false, true] {
            let out = Buf::<T>::zeroed(weights * cols);
            let name = format!("embedding_backward_{}", T::SFX);
            let work = (rows.len() * cols) as i64;
            let mut args = KernelArgs::new();
            args.push(rows.len() as i64).push(cols as i64).push(out.ptr).push(g.ptr);
            args.push(o.ptr).push(st.ptr).push(ro.ptr).push(scale);
            launch(&name, &geometry::elementwise_launch(work, StreamId::DEFAULT), &mut args).unwrap();
            let got: Vec<f64> = out.read().iter().map(|v| v.to_f64()).collect();
            for c in 0..cols {
                let at = |p: usize| grad[p * cols + c].to_f64();
                let row3 = (at(0) + at(2) + at(4)) / if scale { 3.0 } else { 1.0 };
                let tol = if T::DTYPE.size() == 2 { 2e-2 } else { 1e-6 };
                assert!((got[3 * cols + c] - row3).abs() <= tol * row3.abs().max(1.0), "{name} row 3 col {c}");
                assert!((got[cols + c] - at(3)).abs() <= tol * at(3).abs().max(1.0), "{name} row 1 col {c}");
                assert_eq!((got[c], got[2 * cols + c]), (0.0, 0.0), "{name}: rows 0 and 2 are untouched");
            }
        }
    }
    check::<f32>();
    check::<f64>();
    check::<f16>();
    check::<bf16>();
}

/// Note [Row-wise sparse products]: rows of stored elements (row 1 empty), in stored order and
/// through an `order` list, against the products summed in f64; every output element is
/// written (the buffer starts as garbage).
fn spmm_sums_each_rows_elements() {
    fn check<T: Suffix>() {
        let (rows, n) = (3usize, 2usize);
        let dense: Vec<T> = (0..8).map(|i| T::from_f64(i as f64 * 0.75 - 2.5)).collect();
        let values: Vec<T> = [1.5, -2.0, 0.5, 3.0].iter().map(|&v| T::from_f64(v)).collect();
        let (col, crow) = (vec![3i64, 0, 3, 1], vec![0i64, 2, 2, 4]);
        let (d, v, c, cr) = (Buf::from(&dense), Buf::from(&values), Buf::from(&col), Buf::from(&crow));
        for order in [None, Some(vec![3i64, 2, 1, 0])] {
            let ord = order.as_ref().map(|o| Buf::from(o));
            let out = Buf::from(&vec![T::from_f64(7.0); rows * n]);
            let name = format!("spmm_{}", T::SFX);
            let mut args = KernelArgs::new();
            args.push(rows as i64).push(n as i64).push(out.ptr).push(d.ptr).push(v.ptr).push(cr.ptr).push(c.ptr);
            args.push(ord.as_ref().map_or(0u64, |o| o.ptr));
            launch(&name, &geometry::elementwise_launch((rows * n) as i64, StreamId::DEFAULT), &mut args).unwrap();
            let got: Vec<f64> = out.read().iter().map(|x| x.to_f64()).collect();
            for r in 0..rows {
                for j in 0..n {
                    let mut want = 0.0;
                    for p in crow[r] as usize..crow[r + 1] as usize {
                        let k = order.as_ref().map_or(p, |o| o[p] as usize);
                        want += values[k].to_f64() * dense[col[k] as usize * n + j].to_f64();
                    }
                    let tol = if T::DTYPE.size() == 2 { 2e-2 } else { 1e-6 };
                    let g = got[r * n + j];
                    assert!((g - want).abs() <= tol * want.abs().max(1.0), "{name} [{r}, {j}]: got {g}, want {want}");
                }
            }
        }
    }
    check::<f32>();
    check::<f64>();
    check::<f16>();
    check::<bf16>();
}

/// `fused_sgd_<T>` and `fused_adam_<T>` (Note [Fused optimizer kernels]): one step of SGD with
/// momentum (plain, Nesterov with weight decay, maximizing with dampening) and of Adam (L2,
/// AdamW's decoupled decay, amsgrad), against the update written out in double.
fn fused_optimizer_steps_match_closed_forms() {
    fn check<T: Suffix>() {
        let n = 37usize; // not a multiple of a warp
        let val = |i: usize, a: f64, b: f64| ((i * 13 % 17) as f64 - 8.0) * a + b;
        let p0: Vec<f64> = (0..n).map(|i| val(i, 0.1, 0.05)).collect();
        let g0: Vec<f64> = (0..n).map(|i| val(i, -0.07, 0.01)).collect();
        let tol = if T::DTYPE == c10::ScalarType::F32 { 1e-5 } else { 1e-12 };
        let close = |got: Vec<T>, want: &[f64], what: &str| {
            for (i, (g, w)) in got.iter().zip(want).enumerate() {
                let g = g.to_f64();
                assert!((g - w).abs() <= tol * w.abs().max(1.0), "{what}_{} [{i}]: got {g}, want {w}", T::SFX);
            }
        };
        let of = |v: &[f64]| Buf::from(&v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>());
        let cfg = geometry::elementwise_launch(n as i64, StreamId::DEFAULT);
        // (weight_decay, momentum, dampening, lr, nesterov, maximize)
        for (wd, m, damp, lr, nesterov, maximize) in [
            (0.0, 0.9, 0.0, 0.1, false, false),
            (0.01, 0.8, 0.0, 0.05, true, false),
            (0.0, 0.5, 0.3, 0.05, false, true),
        ] {
            let b0: Vec<f64> = (0..n).map(|i| val(i, 0.02, -0.03)).collect();
            let (p, g, b) = (of(&p0), of(&g0), of(&b0));
            let mut args = KernelArgs::new();
            args.push(n as i64).push(p.ptr).push(g.ptr).push(b.ptr);
            args.push(wd).push(m).push(1.0 - damp).push(-lr).push(nesterov).push(maximize);
            launch(&format!("fused_sgd_{}", T::SFX), &cfg, &mut args).unwrap();
            let (mut want_p, mut want_b) = (p0.clone(), b0.clone());
            for i in 0..n {
                let gi = if maximize { -g0[i] } else { g0[i] } + wd * p0[i];
                want_b[i] = b0[i] * m + (1.0 - damp) * gi;
                want_p[i] = p0[i] - lr * if nesterov { gi + m * want_b[i] } else { want_b[i] };
            }
            close(p.read(), &want_p, "fused_sgd param");
            close(b.read(), &want_b, "fused_sgd buf");
        }
        // (weight_decay, decoupled, amsgrad, maximize), at step 3 of beta1 0.9, beta2 0.999.
        let (lr, beta1, beta2, eps, step) = (0.01f64, 0.9f64, 0.999f64, 1e-8f64, 3.0f64);
        for (wd, decoupled, amsgrad, maximize) in [
            (0.0, false, false, false),
            (0.1, false, true, false),
            (0.05, true, false, true),
            (0.05, true, true, false),
        ] {
            let m0: Vec<f64> = (0..n).map(|i| val(i, 0.01, 0.002)).collect();
            let v0: Vec<f64> = (0..n).map(|i| val(i, 0.001, 0.01).abs()).collect();
            let x0: Vec<f64> = (0..n).map(|i| if i % 3 == 0 { 0.5 } else { 0.0 }).collect();
            let (p, g, m, v, x) = (of(&p0), of(&g0), of(&m0), of(&v0), of(&x0));
            let bc2 = (1.0f64 - beta2.powf(step)).sqrt();
            let step_size = lr / (1.0 - beta1.powf(step));
            let decay = if decoupled { 1.0 - lr * wd } else { wd };
            let mut args = KernelArgs::new();
            args.push(n as i64).push(p.ptr).push(g.ptr).push(m.ptr).push(v.ptr).push(if amsgrad {
                x.ptr
            } else {
                0u64
            });
            args.push(1.0 - beta1).push(true).push(beta2).push(1.0 - beta2).push(eps).push(bc2).push(-step_size);
            args.push(decay).push(wd != 0.0 && decoupled).push(wd != 0.0 && !decoupled).push(maximize);
            launch(&format!("fused_adam_{}", T::SFX), &cfg, &mut args).unwrap();
            let (mut wp, mut wm, mut wv, mut wx) = (p0.clone(), m0.clone(), v0.clone(), x0.clone());
            for i in 0..n {
                let mut gi = if maximize { -g0[i] } else { g0[i] };
                if decoupled {
                    wp[i] *= decay;
                } else {
                    gi += wd * p0[i];
                }
                wm[i] = m0[i] + (1.0 - beta1) * (gi - m0[i]);
                wv[i] = v0[i] * beta2 + (1.0 - beta2) * gi * gi;
                wx[i] = x0[i].max(wv[i]);
                let second = if amsgrad { wx[i] } else { wv[i] };
                wp[i] -= step_size * wm[i] / (second.sqrt() / bc2 + eps);
            }
            let what = format!("fused_adam (wd {wd}, decoupled {decoupled}, amsgrad {amsgrad})");
            close(p.read(), &wp, &format!("{what} param"));
            close(m.read(), &wm, &format!("{what} exp_avg"));
            close(v.read(), &wv, &format!("{what} exp_avg_sq"));
            close(x.read(), if amsgrad { &wx } else { &x0 }, &format!("{what} max_exp_avg_sq"));
        }
    }
    check::<f32>();
    check::<f64>();
}

/// `im2col_<T>` and `col2im_<T>`: the column matrix of 1-d, 2-d and 3-d windows with strides,
/// padding and dilation (zeros in the padding), and its adjoint summing every column entry back
/// into the image element it read, against naive host loops.
fn columns_unfold_and_fold_against_host_loops() {
    // (n, channels, input, kernel, stride, padding, dilation)
    type Case = (i64, i64, [i64; 3], [i64; 3], [i64; 3], [i64; 3], [i64; 3]);
    let cases: [Case; 4] = [
        (2, 3, [1, 1, 7], [1, 1, 3], [1, 1, 2], [0, 0, 1], [1, 1, 1]),
        (1, 2, [1, 5, 6], [1, 3, 2], [1, 1, 2], [0, 2, 1], [1, 2, 1]),
        (2, 1, [3, 4, 3], [2, 2, 2], [2, 1, 1], [1, 0, 1], [1, 1, 2]),
        (1, 2, [1, 3, 3], [1, 3, 3], [1, 3, 3], [0, 0, 0], [1, 1, 1]),
    ];
    fn check<T: Suffix>(c: &Case) {
        let &(n, channels, input, kernel, stride, padding, dilation) = c;
        let out: [i64; 3] =
            std::array::from_fn(|d| (input[d] + 2 * padding[d] - dilation[d] * (kernel[d] - 1) - 1) / stride[d] + 1);
        let (k, l, plane) =
            (kernel.iter().product::<i64>(), out.iter().product::<i64>(), input.iter().product::<i64>());
        let g = KcColumns { n, channels, input, kernel, out, stride, padding, dilation };
        let image_len = (n * channels * plane) as usize;
        let cols_len = (n * channels * k * l) as usize;
        let images: Vec<T> = (0..image_len).map(|i| T::from_f64((i % 13) as f64 * 0.5 - 3.0)).collect();
        let cols_in: Vec<T> = (0..cols_len).map(|i| T::from_f64((i % 11) as f64 * 0.25 - 1.0)).collect();
        // The naive loops: every (image-channel, kernel offset, window position).
        let mut want_cols = vec![0.0f64; cols_len];
        let mut want_images = vec![0.0f64; image_len];
        for ic in 0..n * channels {
            for (row, (a, b, e)) in (0..kernel[0])
                .flat_map(|a| (0..kernel[1]).flat_map(move |b| (0..kernel[2]).map(move |e| (a, b, e))))
                .enumerate()
            {
                for (pos, (z, y, x)) in (0..out[0])
                    .flat_map(|z| (0..out[1]).flat_map(move |y| (0..out[2]).map(move |x| (z, y, x))))
                    .enumerate()
                {
                    let at = [
                        z * stride[0] + a * dilation[0] - padding[0],
                        y * stride[1] + b * dilation[1] - padding[1],
                        x * stride[2] + e * dilation[2] - padding[2],
                    ];
                    let c_at = ((ic * k + row as i64) * l) as usize + pos;
                    if (0..3).all(|d| at[d] >= 0 && at[d] < input[d]) {
                        let i_at = (((ic * input[0] + at[0]) * input[1] + at[1]) * input[2] + at[2]) as usize;
                        want_cols[c_at] = images[i_at].to_f64();
                        want_images[i_at] += cols_in[c_at].to_f64();
                    }
                }
            }
        }
        let tol = if T::DTYPE.size() == 2 { 2e-2 } else { 1e-6 };
        let x = Buf::from(&images);
        let cols = Buf::from(&vec![T::from_f64(9.0); cols_len]);
        let name = format!("im2col_{}", T::SFX);
        let mut args = KernelArgs::new();
        args.push(g).push(cols.ptr).push(x.ptr);
        launch(&name, &geometry::elementwise_launch(cols_len as i64, StreamId::DEFAULT), &mut args).unwrap();
        let got: Vec<f64> = cols.read().iter().map(|v| v.to_f64()).collect();
        assert_eq!(got, want_cols, "{name} {c:?}");
        let c_in = Buf::from(&cols_in);
        let y = Buf::from(&vec![T::from_f64(9.0); image_len]);
        let name = format!("col2im_{}", T::SFX);
        let mut args = KernelArgs::new();
        args.push(g).push(y.ptr).push(c_in.ptr);
        launch(&name, &geometry::elementwise_launch(image_len as i64, StreamId::DEFAULT), &mut args).unwrap();
        for (i, (got, want)) in y.read().iter().map(|v| v.to_f64()).zip(&want_images).enumerate() {
            assert!(
                (got - want).abs() <= tol * want.abs().max(1.0),
                "{name} {c:?} element {i}: got {got}, want {want}"
            );
        }
    }
    for c in &cases {
        check::<f32>(c);
        check::<f64>(c);
        check::<f16>(c);
        check::<bf16>(c);
    }
}

/// `pool_max_<T>` and `pool_avg_<T>` over window tables (strided with padding and dilation, a
/// ceil-mode last window, and adaptive windows), against naive host loops over the same
/// windows: the first maximum's index (ties), NaN replacing the running maximum (the last
/// NaN's index), -inf kept, and averages over each divisor (the padded count, the count inside
/// the input, an override).
fn pooling_windows_match_host_loops() {
    type Windows = Vec<[i64; 4]>;
    // Windows of one dim: (first, step, count, padded_count), from the taps start + j * d.
    fn strided(input: i64, k: i64, s: i64, p: i64, d: i64, out: i64) -> Windows {
        (0..out)
            .map(|o| {
                let start = o * s - p;
                let taps: Vec<i64> = (0..k).map(|j| start + j * d).filter(|&i| i >= 0 && i < input).collect();
                [taps[0], d, taps.len() as i64, ((start + k).min(input + p) - start).max(0)]
            })
            .collect()
    }
    fn adaptive(input: i64, out: i64) -> Windows {
        (0..out)
            .map(|o| {
                let (a, b) = (o * input / out, ((o + 1) * input + out - 1) / out);
                [a, 1, b - a, b - a]
            })
            .collect()
    }
    let unit = || vec![[0, 1, 1, 1]];
    // (planes, input, windows of each dim)
    let cases: Vec<(i64, [i64; 3], [Windows; 3])> = vec![
        (3, [1, 1, 9], [unit(), unit(), strided(9, 3, 2, 1, 1, 5)]),
        (2, [1, 6, 7], [unit(), strided(6, 3, 2, 1, 2, 2), strided(7, 2, 1, 0, 1, 6)]),
        (2, [1, 6, 5], [unit(), strided(6, 3, 2, 1, 1, 4), adaptive(5, 3)]),
        (2, [3, 5, 4], [adaptive(3, 2), adaptive(5, 3), adaptive(4, 3)]),
    ];
    fn run<T: Suffix + PartialEq>(case: &(i64, [i64; 3], [Windows; 3]), x: &[T], avg: Option<(i64, bool)>) {
        let (planes, input, wins) = case;
        let out: [i64; 3] = std::array::from_fn(|d| wins[d].len() as i64);
        let (in_plane, out_plane) = (input.iter().product::<i64>() as usize, out.iter().product::<i64>() as usize);
        let total = *planes as usize * out_plane;
        let table: Vec<i64> = wins.iter().flatten().flatten().copied().collect();
        let (divisor, include_pad) = avg.unwrap_or((0, false));
        let g = KcPool { planes: *planes, input: *input, out, divisor, include_pad: include_pad as i32, unused: 0 };
        let xs = Buf::from(x);
        let tb = Buf::from(&table);
        let o = Buf::from(&vec![T::from_f64(7.0); total]);
        let ix = Buf::from(&vec![-5i64; total]);
        let name = format!("pool_{}_{}", if avg.is_some() { "avg" } else { "max" }, T::SFX);
        let mut args = KernelArgs::new();
        args.push(g).push(o.ptr);
        if avg.is_none() {
            args.push(ix.ptr);
        }
        args.push(xs.ptr).push(tb.ptr);
        launch(&name, &geometry::elementwise_launch(total as i64, StreamId::DEFAULT), &mut args).unwrap();
        let (got, got_i) = (o.read(), ix.read());
        let positions = |w: &[i64; 4]| {
            let [first, step, count, _] = *w;
            (0..count).map(move |j| first + j * step)
        };
        let mut k = 0;
        for p in 0..*planes as usize {
            let xp = &x[p * in_plane..(p + 1) * in_plane];
            for wd in &wins[0] {
                for wh in &wins[1] {
                    for ww in &wins[2] {
                        let cells: Vec<usize> = positions(wd)
                            .flat_map(|a| positions(wh).map(move |b| (a, b)))
                            .flat_map(|(a, b)| positions(ww).map(move |c| ((a * input[1] + b) * input[2] + c) as usize))
                            .collect();
                        let at = format!("{name} {input:?} output {k}");
                        match avg {
                            None => {
                                let mut best = cells[0];
                                for &c in &cells {
                                    let (v, b) = (xp[c].to_f64(), xp[best].to_f64());
                                    if v > b || v.is_nan() {
                                        best = c;
                                    }
                                }
                                assert_eq!(got_i[k], best as i64, "{at}: index");
                                let (g, w) = (got[k].to_f64(), xp[best].to_f64());
                                assert!(g == w || (g.is_nan() && w.is_nan()), "{at}: got {g}, want {w}");
                            }
                            Some((d, pad)) => {
                                let sum: f64 = cells.iter().map(|&c| xp[c].to_f64()).sum();
                                let div = match (d, pad) {
                                    (0, true) => wd[3] * wh[3] * ww[3],
                                    (0, false) => cells.len() as i64,
                                    (d, _) => d,
                                };
                                let (g, w) = (got[k].to_f64(), sum / div as f64);
                                let tol = if T::DTYPE.size() == 2 { 2e-2 } else { 1e-6 };
                                assert!((g - w).abs() <= tol * w.abs().max(1.0), "{at}: got {g}, want {w}");
                            }
                        }
                        k += 1;
                    }
                }
            }
        }
    }
    fn check<T: Suffix + PartialEq>(cases: &[(i64, [i64; 3], [Windows; 3])]) {
        let float = T::DTYPE.is_floating_point();
        for c in cases {
            let n = (c.0 * c.1.iter().product::<i64>()) as usize;
            // Repeated values (ties), and for floats a NaN pair and -inf in some windows.
            let x: Vec<T> = (0..n)
                .map(|i| match i {
                    _ if float && (i % 17 == 5 || i % 17 == 7) => T::from_f64(f64::NAN),
                    _ if float && i % 13 == 3 => T::from_f64(f64::NEG_INFINITY),
                    _ => T::from_f64(((i * 7) % 5) as f64 + if float { 0.5 } else { 0.0 }),
                })
                .collect();
            run::<T>(c, &x, None);
            if float {
                let finite: Vec<T> = (0..n).map(|i| T::from_f64(((i * 7) % 9) as f64 * 0.25 - 1.0)).collect();
                for avg in [(0, true), (0, false), (-3, false)] {
                    run::<T>(c, &finite, Some(avg));
                }
            }
        }
    }
    check::<f32>(&cases);
    check::<f64>(&cases);
    check::<f16>(&cases);
    check::<bf16>(&cases);
    check::<i64>(&cases);
    check::<i32>(&cases);
    check::<i16>(&cases);
    check::<i8>(&cases);
    check::<u8>(&cases);
}

/// `atan2`, `pow`, `fmod`, `remainder` and `lerp` (both of its formulas) on floats, the
/// parameterised activations (`leaky_relu`, `hardtanh`, `elu`, `softplus`, `logit` with and
/// without eps, `gelu` exact and tanh), against f64 references of aten's CPU bodies; and the
/// integer `pow` (negative exponents as PyTorch's powi), `fmod` and `remainder` exactly.
fn more_float_functions_and_integer_arithmetic_match_references() {
    type Binary = (&'static str, Option<f64>, fn(f64, f64) -> f64);
    let binaries: [Binary; 7] = [
        ("atan2", None, f64::atan2),
        ("pow", None, f64::powf),
        ("fmod", None, |x, y| x % y),
        ("remainder", None, |x, y| {
            let m = x % y;
            if m != 0.0 && ((y < 0.0) != (m < 0.0)) {
                m + y
            } else {
                m
            }
        }),
        ("lerp", Some(0.25), |s, e| s + 0.25 * (e - s)),
        ("lerp", Some(0.75), |s, e| e - (e - s) * (1.0 - 0.75)),
        ("lerp", Some(-1.5), |s, e| e - (e - s) * (1.0 + 1.5)),
    ];
    type Param = (&'static str, [f64; 3], fn(f64) -> f64);
    let params: [Param; 9] = [
        ("leaky_relu", [0.2, 0.0, 0.0], |x| if x > 0.0 { x } else { 0.2 * x }),
        ("hardtanh", [-0.5, 2.0, 0.0], |x| if x.is_nan() { x } else { x.clamp(-0.5, 2.0) }),
        ("elu", [1.5, 2.0, 0.5], |x| if x > 0.0 { 2.0 * x } else { (0.5 * x).exp_m1() * 1.5 * 2.0 }),
        ("softplus", [2.0, 3.0, 0.0], |x| if 2.0 * x > 3.0 { x } else { (2.0 * x).exp().ln_1p() / 2.0 }),
        ("logit", [0.0, 0.0, 0.0], |x| (x / (1.0 - x)).ln()),
        ("logit", [0.25, 1.0, 0.0], |x| {
            let z = x.clamp(0.25, 0.75);
            (z / (1.0 - z)).ln()
        }),
        ("gelu", [0.0; 3], |x| 0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2))),
        ("gelu_tanh", [0.0; 3], |x| {
            0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
        }),
        ("hardtanh", [0.0, 6.0, 0.0], |x| if x.is_nan() { x } else { x.clamp(0.0, 6.0) }),
    ];
    // Relative, and absolute below 1: `gelu`'s `1 + erf(x / sqrt 2)` cancels for negative x in
    // the opmath type, on the CPU and in PyTorch's CUDA kernel alike.
    fn close(got: f64, want: f64, rel: f64) -> bool {
        (got.is_nan() && want.is_nan()) || got == want || (got - want).abs() <= rel * want.abs().max(1.0)
    }
    fn run<T: Suffix>(binaries: &[Binary], params: &[Param], rel: f64) {
        let xs: Vec<f64> = vec![-3.5, -1.0, -0.25, 0.0, 0.3, 0.6, 1.0, 2.5, 7.0, f64::NAN];
        let ys: Vec<f64> = vec![2.0, -1.5, 0.5, 3.0, -0.75, 2.0, 0.25, -2.0, 1.5, 1.0];
        let (a, b): (Vec<T>, Vec<T>) =
            (xs.iter().map(|&x| T::from_f64(x)).collect(), ys.iter().map(|&y| T::from_f64(y)).collect());
        let (ba, bb, g) = (Buf::from(&a), Buf::from(&b), contiguous_geometry(xs.len(), 3));
        for &(op, w, f) in binaries {
            let out = Buf::<T>::zeroed(xs.len());
            let name = format!("{op}_{}", T::SFX);
            let mut args = KernelArgs::new();
            args.push(g).push(out.ptr).push(ba.ptr).push(bb.ptr);
            if let Some(w) = w {
                args.push(w);
            }
            launch(&name, &cfg(&g), &mut args).unwrap();
            for ((x, y), v) in a.iter().zip(&b).zip(out.read()) {
                let (want, got) = (f(x.to_f64(), y.to_f64()), v.to_f64());
                assert!(close(got, want, rel), "{name}({x:?}, {y:?}) = {got}, want {want}");
            }
        }
        let g2 = contiguous_geometry(xs.len(), 2);
        for &(op, p, f) in params {
            let out = Buf::<T>::zeroed(xs.len());
            let name = format!("{op}_{}", T::SFX);
            let mut args = KernelArgs::new();
            args.push(g2).push(out.ptr).push(ba.ptr).push(p[0]).push(p[1]).push(p[2]);
            launch(&name, &cfg(&g2), &mut args).unwrap();
            for (x, v) in a.iter().zip(out.read()) {
                let (want, got) = (f(x.to_f64()), v.to_f64());
                assert!(close(got, want, rel), "{name}{p:?}({x:?}) = {got}, want {want}");
            }
        }
    }
    run::<f64>(&binaries, &params, 1e-13);
    run::<f32>(&binaries, &params, 1e-5);
    run::<f16>(&binaries, &params, 2e-3);
    run::<bf16>(&binaries, &params, 1.6e-2);
    fn ints<T: Suffix + IntOps>() {
        let signed = T::from_i64(-1).to_f64() < 0.0;
        let xs: Vec<i64> =
            if signed { vec![7, -7, 0, 5, -128, 3, -2, 1, -1] } else { vec![7, 200, 0, 5, 128, 3, 2, 1, 9] };
        let ys: Vec<i64> = if signed { vec![3, 3, 2, -3, -1, 4, 3, -2, -3] } else { vec![3, 7, 2, 4, 255, 4, 3, 5, 2] };
        let (a, b): (Vec<T>, Vec<T>) =
            (xs.iter().map(|&x| T::from_i64(x)).collect(), ys.iter().map(|&y| T::from_i64(y)).collect());
        let (ba, bb, g) = (Buf::from(&a), Buf::from(&b), contiguous_geometry(xs.len(), 3));
        for op in ["pow", "fmod", "remainder"] {
            let out = Buf::<T>::zeroed(xs.len());
            let name = format!("{op}_{}", T::SFX);
            launch(&name, &cfg(&g), KernelArgs::new().push(g).push(out.ptr).push(ba.ptr).push(bb.ptr)).unwrap();
            let want: Vec<T> = a
                .iter()
                .zip(&b)
                .map(|(&x, &y)| {
                    let (p, q) = (x.to_f64() as i128, y.to_f64() as i128);
                    let r = match op {
                        "pow" if q < 0 => match p {
                            1 => 1,
                            -1 => {
                                if q % 2 == 0 {
                                    1
                                } else {
                                    -1
                                }
                            }
                            _ => 0,
                        },
                        "pow" => (0..q).fold(1i128, |acc, _| acc.wrapping_mul(p) % (1i128 << 64)),
                        "fmod" => p % q,
                        _ => ((p % q) + q) % q,
                    };
                    T::from_i64(r as i64)
                })
                .collect();
            assert_eq!(out.read(), want, "{name}({xs:?}, {ys:?})");
        }
    }
    ints::<u8>();
    ints::<i8>();
    ints::<i16>();
    ints::<i32>();
    ints::<i64>();
}

/// `where`, `masked_fill` and `logical_not` for every dtype, the bool `logical_and/or/xor`, the
/// floating predicates (`isnan`, `isinf`, `isfinite`, `isposinf`, `isneginf`), `addcmul` and
/// `addcdiv` (integers wrap), rounded division (`div_trunc`, `div_floor`: Python's floor
/// division, a signed -1 divisor wrapping) and the scans (`cumsum`, `cumprod`) against host
/// references.
fn selection_predicates_rounded_division_and_scans_match_references() {
    let cond = [true, false, false, true, true, false, true, false, true];
    let n = cond.len();
    fn select_and_fill<T: Suffix>(cond: &[bool]) {
        let n = cond.len();
        let a: Vec<T> = (0..n).map(|i| T::from_i64(i as i64 + 1)).collect();
        let b: Vec<T> = (0..n).map(|i| T::from_i64(-(i as i64) * 3)).collect();
        let (bc, ba, bb) = (Buf::from(cond), Buf::from(&a), Buf::from(&b));
        // `b` broadcast from its first element: a zero stride.
        let strides: [&[i64]; 4] = [&[1], &[1], &[1], &[0]];
        let g = geometry::elementwise(&[n as i64], &strides).unwrap();
        let out = Buf::<T>::zeroed(n);
        let name = format!("where_{}", T::SFX);
        launch(&name, &cfg(&g), KernelArgs::new().push(g).push(out.ptr).push(bc.ptr).push(ba.ptr).push(bb.ptr))
            .unwrap();
        let want: Vec<T> = cond.iter().zip(&a).map(|(&c, &x)| if c { x } else { b[0] }).collect();
        assert_eq!(out.read(), want, "{name}");
        let g3 = contiguous_geometry(n, 3);
        let name = format!("masked_fill_{}", T::SFX);
        let value = T::from_i64(5);
        let mut args = KernelArgs::new();
        args.push(g3).push(out.ptr).push(ba.ptr).push(bc.ptr).push(value);
        launch(&name, &cfg(&g3), &mut args).unwrap();
        let want: Vec<T> = cond.iter().zip(&a).map(|(&c, &x)| if c { value } else { x }).collect();
        assert_eq!(out.read(), want, "{name}");
        let mut probe = probe_values::<T>();
        probe.truncate(40);
        let (bp, nots) = (Buf::from(&probe), Buf::<bool>::zeroed(probe.len()));
        let g2 = contiguous_geometry(probe.len(), 2);
        let name = format!("logical_not_{}", T::SFX);
        launch(&name, &cfg(&g2), KernelArgs::new().push(g2).push(nots.ptr).push(bp.ptr)).unwrap();
        let want: Vec<bool> = probe.iter().map(|x| x.to_f64() == 0.0).collect();
        assert_eq!(nots.read(), want, "{name}({probe:?})");
    }
    select_and_fill::<f32>(&cond);
    select_and_fill::<f64>(&cond);
    select_and_fill::<f16>(&cond);
    select_and_fill::<bf16>(&cond);
    select_and_fill::<u8>(&cond);
    select_and_fill::<i8>(&cond);
    select_and_fill::<i16>(&cond);
    select_and_fill::<i32>(&cond);
    select_and_fill::<i64>(&cond);
    select_and_fill::<bool>(&cond);

    let other: Vec<bool> = (0..n).map(|i| i % 3 == 0).collect();
    let (bc, bo, g) = (Buf::from(&cond), Buf::from(&other), contiguous_geometry(n, 3));
    type Logic = (&'static str, fn(bool, bool) -> bool);
    let logic: [Logic; 3] =
        [("logical_and", |x, y| x && y), ("logical_or", |x, y| x || y), ("logical_xor", |x, y| x != y)];
    for (op, f) in logic {
        let out = Buf::<bool>::zeroed(n);
        let name = format!("{op}_b8");
        launch(&name, &cfg(&g), KernelArgs::new().push(g).push(out.ptr).push(bc.ptr).push(bo.ptr)).unwrap();
        let want: Vec<bool> = cond.iter().zip(&other).map(|(&x, &y)| f(x, y)).collect();
        assert_eq!(out.read(), want, "{name}");
    }

    fn floats<T: Suffix>(rel: f64) {
        let xs = [0.0, -2.5, 1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 7.0, -0.5, 65504.0];
        let a: Vec<T> = xs.iter().map(|&x| T::from_f64(x)).collect();
        let ba = Buf::from(&a);
        let g2 = contiguous_geometry(a.len(), 2);
        type Pred = (&'static str, fn(f64) -> bool);
        let preds: [Pred; 5] = [
            ("isnan", f64::is_nan),
            ("isinf", f64::is_infinite),
            ("isfinite", f64::is_finite),
            ("isposinf", |x| x == f64::INFINITY),
            ("isneginf", |x| x == f64::NEG_INFINITY),
        ];
        for (op, f) in preds {
            let out = Buf::<bool>::zeroed(a.len());
            let name = format!("{op}_{}", T::SFX);
            launch(&name, &cfg(&g2), KernelArgs::new().push(g2).push(out.ptr).push(ba.ptr)).unwrap();
            let want: Vec<bool> = a.iter().map(|x| f(x.to_f64())).collect();
            assert_eq!(out.read(), want, "{name}");
        }
        let s: Vec<T> = [1.0, -2.0, 0.5, 3.0, 0.0, -1.5].iter().map(|&x| T::from_f64(x)).collect();
        let t1: Vec<T> = [2.0, 0.25, -4.0, 1.5, 8.0, 3.0].iter().map(|&x| T::from_f64(x)).collect();
        let t2: Vec<T> = [0.5, -3.0, 2.0, 4.0, 0.125, -6.0].iter().map(|&x| T::from_f64(x)).collect();
        let (bs, b1, b2, g4) = (Buf::from(&s), Buf::from(&t1), Buf::from(&t2), contiguous_geometry(s.len(), 4));
        for (op, v) in [("addcmul", 0.75), ("addcdiv", -2.0)] {
            let out = Buf::<T>::zeroed(s.len());
            let name = format!("{op}_{}", T::SFX);
            let mut args = KernelArgs::new();
            args.push(g4).push(out.ptr).push(bs.ptr).push(b1.ptr).push(b2.ptr).push(v);
            launch(&name, &cfg(&g4), &mut args).unwrap();
            for (k, got) in out.read().iter().enumerate() {
                let (x, y, z) = (s[k].to_f64(), t1[k].to_f64(), t2[k].to_f64());
                let want = if op == "addcmul" { x + v * y * z } else { x + v * y / z };
                assert!((got.to_f64() - want).abs() <= rel * want.abs().max(1.0), "{name}[{k}] = {got:?}, want {want}");
            }
        }
        // Rounded division: signs, exact quotients, zero divisors (inf, NaN) and a -0 result.
        let xs = [7.0, -7.0, 7.5, -7.5, 6.0, 1.0, 0.0, -1.0, 5.0, -0.25];
        let ys = [2.0, 2.0, -2.0, -2.0, 3.0, 0.0, 0.0, 0.0, -0.5, 4.0];
        let (a, b): (Vec<T>, Vec<T>) =
            (xs.iter().map(|&x| T::from_f64(x)).collect(), ys.iter().map(|&y| T::from_f64(y)).collect());
        let (ba, bb, g3) = (Buf::from(&a), Buf::from(&b), contiguous_geometry(xs.len(), 3));
        type Round = (&'static str, fn(f64, f64) -> f64);
        let rounds: [Round; 2] = [("div_trunc", |x, y| (x / y).trunc()), ("div_floor", |x, y| (x / y).floor())];
        for (op, f) in rounds {
            let out = Buf::<T>::zeroed(xs.len());
            let name = format!("{op}_{}", T::SFX);
            launch(&name, &cfg(&g3), KernelArgs::new().push(g3).push(out.ptr).push(ba.ptr).push(bb.ptr)).unwrap();
            for ((x, y), got) in xs.iter().zip(&ys).zip(out.read()) {
                let (want, got) = (f(*x, *y), got.to_f64());
                let same = (want.is_nan() && got.is_nan())
                    || (want == got && want.is_sign_negative() == got.is_sign_negative());
                assert!(same, "{name}({x}, {y}) = {got}, want {want}");
            }
        }
    }
    floats::<f32>(1e-6);
    floats::<f64>(1e-14);
    floats::<f16>(2e-3);
    floats::<bf16>(1.6e-2);

    fn ints<T: Suffix + IntOps>() {
        let signed = T::from_i64(-1).to_f64() < 0.0;
        let xs: Vec<i64> =
            if signed { vec![7, -7, 7, -7, -128, 6, 0, 100] } else { vec![7, 200, 9, 255, 128, 6, 0, 100] };
        let ys: Vec<i64> = if signed { vec![2, 2, -2, -2, -1, 3, -5, 7] } else { vec![2, 7, 4, 16, 255, 3, 5, 7] };
        let (a, b): (Vec<T>, Vec<T>) =
            (xs.iter().map(|&x| T::from_i64(x)).collect(), ys.iter().map(|&y| T::from_i64(y)).collect());
        let (ba, bb, g3) = (Buf::from(&a), Buf::from(&b), contiguous_geometry(xs.len(), 3));
        for op in ["div_trunc", "div_floor"] {
            let out = Buf::<T>::zeroed(xs.len());
            let name = format!("{op}_{}", T::SFX);
            launch(&name, &cfg(&g3), KernelArgs::new().push(g3).push(out.ptr).push(ba.ptr).push(bb.ptr)).unwrap();
            let want: Vec<T> = a
                .iter()
                .zip(&b)
                .map(|(&x, &y)| {
                    let (p, q) = (x.to_f64() as i128, y.to_f64() as i128);
                    let floor = p / q - i128::from(p % q != 0 && ((p < 0) != (q < 0)));
                    let r = if op == "div_trunc" { p / q } else { floor };
                    // The quotient wraps into the type (-128 / -1 is -128 in int8).
                    T::from_i64(r as i64)
                })
                .collect();
            assert_eq!(out.read(), want, "{name}({xs:?}, {ys:?})");
        }
        let (bs, g4) = (Buf::from(&a), contiguous_geometry(xs.len(), 4));
        let out = Buf::<T>::zeroed(xs.len());
        let name = format!("addcmul_{}", T::SFX);
        let mut args = KernelArgs::new();
        args.push(g4).push(out.ptr).push(bs.ptr).push(ba.ptr).push(bb.ptr).push(3i64);
        launch(&name, &cfg(&g4), &mut args).unwrap();
        let three = T::from_i64(3);
        let want: Vec<T> =
            a.iter().zip(&b).map(|(&x, &y)| x.wrapping_add(three.wrapping_mul(x).wrapping_mul(y))).collect();
        assert_eq!(out.read(), want, "{name}");
    }
    ints::<u8>();
    ints::<i8>();
    ints::<i16>();
    ints::<i32>();
    ints::<i64>();

    // Scans along rows and along columns, more elements per line than threads and fewer.
    fn scans<T: Suffix>(tol: f64) {
        for (rows, cols) in [(3usize, 600usize), (5, 40)] {
            let x = reduction_input::<T>(rows, cols);
            let input = Buf::from(&x);
            for over_cols in [true, false] {
                let r = matrix_reduction(rows as i64, cols as i64, over_cols);
                let at = |o: usize, k: usize| if over_cols { o * cols + k } else { k * cols + o };
                for (op, identity, f) in
                    [("cumsum", 0.0, (|a, b| a + b) as fn(f64, f64) -> f64), ("cumprod", 1.0, |a, b| a * b)]
                {
                    let out = Buf::<T>::zeroed(rows * cols);
                    let name = format!("{op}_{}", T::SFX);
                    launch_reduction(&name, &r, 2, &[out.ptr], input.ptr);
                    let got = out.read();
                    for o in 0..r.outputs as usize {
                        let mut acc = identity;
                        for k in 0..r.reduced as usize {
                            acc = f(acc, x[at(o, k)].to_f64());
                            let g = got[at(o, k)].to_f64();
                            assert!((g - acc).abs() <= tol * acc.abs().max(1.0), "{name}[{o}, {k}] = {g}, want {acc}");
                        }
                    }
                }
            }
        }
    }
    scans::<f32>(1e-4);
    scans::<f64>(1e-12);
    scans::<f16>(3e-2);
    scans::<bf16>(1.5e-1);
    let x: Vec<i64> = vec![i64::MAX, 1, 7, -3, 1 << 40, 1 << 30];
    let input = Buf::from(&x);
    let r = matrix_reduction(2, 3, true);
    let out = Buf::<i64>::zeroed(6);
    launch_reduction("cumsum_i64", &r, 1, &[out.ptr], input.ptr);
    assert_eq!(out.read(), vec![i64::MAX, i64::MIN, i64::MIN + 7, -3, (1 << 40) - 3, (1 << 40) + (1 << 30) - 3]);
    launch_reduction("cumprod_i64", &r, 1, &[out.ptr], input.ptr);
    assert_eq!(
        out.read(),
        vec![i64::MAX, i64::MAX, i64::MAX.wrapping_mul(7), -3, -3 << 40, (-3i64 << 40).wrapping_mul(1 << 30)]
    );
}

mod suite {
    #[test]
    fn casts_between_every_pair_of_dtypes_match_the_cpu() {
        super::casts_between_every_pair_of_dtypes_match_the_cpu();
    }
    #[test]
    fn fill_writes_only_the_strided_positions() {
        super::fill_writes_only_the_strided_positions();
    }
    #[test]
    fn tails_and_grid_stride_loops_cover_every_element() {
        super::tails_and_grid_stride_loops_cover_every_element();
    }
    #[test]
    fn float_binary_ops_broadcast_and_match_the_cpu() {
        super::float_binary_ops_broadcast_and_match_the_cpu();
    }
    #[test]
    fn integer_binary_ops_wrap_like_the_cpu() {
        super::integer_binary_ops_wrap_like_the_cpu();
    }
    #[test]
    fn comparisons_write_bools_and_nan_compares_false() {
        super::comparisons_write_bools_and_nan_compares_false();
    }
    #[test]
    fn unary_float_ops_match_rust_math() {
        super::unary_float_ops_match_rust_math();
    }
    #[test]
    fn unary_integer_ops_wrap_like_the_cpu() {
        super::unary_integer_ops_wrap_like_the_cpu();
    }
    #[test]
    fn launch_errors_are_values() {
        super::launch_errors_are_values();
    }
    #[test]
    fn aligned_and_misaligned_contiguous_operands_agree() {
        super::aligned_and_misaligned_contiguous_operands_agree();
    }
    #[test]
    fn gemm_follows_the_cublas_contract() {
        super::gemm_follows_the_cublas_contract();
    }
    #[test]
    fn arange_computes_start_plus_i_step_in_the_accumulation_type() {
        super::arange_computes_start_plus_i_step_in_the_accumulation_type();
    }
    #[test]
    fn remap_gathers_through_per_dim_maps() {
        super::remap_gathers_through_per_dim_maps();
    }
    #[test]
    fn sort_ranks_lines_stably() {
        super::sort_ranks_lines_stably();
    }
    #[test]
    fn merge_passes_sort_lines_stably() {
        super::merge_passes_sort_lines_stably();
    }
    #[test]
    fn runs_mark_each_run_of_a_sorted_vector() {
        super::runs_mark_each_run_of_a_sorted_vector();
    }
    #[test]
    fn embedding_backward_sums_groups_in_order() {
        super::embedding_backward_sums_groups_in_order();
    }
    #[test]
    fn spmm_sums_each_rows_elements() {
        super::spmm_sums_each_rows_elements();
    }
    #[test]
    fn fused_optimizer_steps_match_closed_forms() {
        super::fused_optimizer_steps_match_closed_forms();
    }
    #[test]
    fn more_float_functions_and_integer_arithmetic_match_references() {
        super::more_float_functions_and_integer_arithmetic_match_references();
    }
    #[test]
    fn selection_predicates_rounded_division_and_scans_match_references() {
        super::selection_predicates_rounded_division_and_scans_match_references();
    }
    #[test]
    fn columns_unfold_and_fold_against_host_loops() {
        super::columns_unfold_and_fold_against_host_loops();
    }
    #[test]
    fn reduction_sums_and_products_match_f64_folds() {
        super::reduction_sums_and_products_match_f64_folds();
    }
    #[test]
    fn reduction_extremes_take_the_first_index_and_propagate_nan() {
        super::reduction_extremes_take_the_first_index_and_propagate_nan();
    }
    #[test]
    fn softmax_rows_sum_to_one_and_match_closed_forms() {
        super::softmax_rows_sum_to_one_and_match_closed_forms();
    }
    #[test]
    fn philox_reference_matches_known_answers() {
        super::philox_reference_matches_known_answers();
    }
    #[test]
    fn random_kernels_follow_the_philox_streams() {
        super::random_kernels_follow_the_philox_streams();
    }
    #[test]
    fn emulated_copies_outside_allocations_are_errors() {
        super::emulated_copies_outside_allocations_are_errors();
    }
}

/// Every kernel the crate ships is launched by the suite above (so a new kernel without a test
/// fails here): runs the whole suite on this thread and compares what it launched with the
/// emulator's table of kernels.
#[test]
fn every_shipped_kernel_is_tested() {
    casts_between_every_pair_of_dtypes_match_the_cpu();
    fill_writes_only_the_strided_positions();
    tails_and_grid_stride_loops_cover_every_element();
    float_binary_ops_broadcast_and_match_the_cpu();
    integer_binary_ops_wrap_like_the_cpu();
    comparisons_write_bools_and_nan_compares_false();
    unary_float_ops_match_rust_math();
    unary_integer_ops_wrap_like_the_cpu();
    launch_errors_are_values();
    arange_computes_start_plus_i_step_in_the_accumulation_type();
    reduction_sums_and_products_match_f64_folds();
    reduction_extremes_take_the_first_index_and_propagate_nan();
    softmax_rows_sum_to_one_and_match_closed_forms();
    random_kernels_follow_the_philox_streams();
    remap_gathers_through_per_dim_maps();
    sort_ranks_lines_stably();
    merge_passes_sort_lines_stably();
    runs_mark_each_run_of_a_sorted_vector();
    embedding_backward_sums_groups_in_order();
    spmm_sums_each_rows_elements();
    columns_unfold_and_fold_against_host_loops();
    pooling_windows_match_host_loops();
    more_float_functions_and_integer_arithmetic_match_references();
    selection_predicates_rounded_division_and_scans_match_references();
    fused_optimizer_steps_match_closed_forms();
    let launched = LAUNCHED.with(|l| l.borrow().clone());
    let untested: Vec<&str> =
        kernels_cuda::emu::kernel_names().into_iter().filter(|k| !launched.contains(*k)).collect();
    assert!(untested.is_empty(), "kernels without a test: {untested:?}");
}

//! Operators on CUDA tensors through the dispatcher, as a user calls them: `to(device)`, the
//! factories with `device=cuda`, copies in every direction, and the elementwise operators, each
//! compared with the same call on the CPU (the reference: aten's CPU kernels, which the parity
//! suite checks against PyTorch). Runs on the device `TORCH_CUDA_DRIVER` names, the emulated
//! one by default (as `kernels.rs`).
#![cfg(feature = "cuda")]

use aten::{ops, Tensor};
use c10::{Device, Error, Scalar, ScalarType};
use kernels_cuda::driver::{self, DriverKind};

/// The global allocator, counting the calling thread's allocations (for
/// `a_warm_launch_allocates_nothing_and_takes_no_lock`).
struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

// SAFETY: every call goes to the system allocator unchanged; the counter is a const-initialised
// thread-local without a destructor, so touching it allocates nothing.
unsafe impl std::alloc::GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract is GlobalAlloc::alloc's.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from `alloc` above, i.e. from the system allocator.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: as `dealloc`.
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn allocations() -> u64 {
    ALLOCATIONS.with(std::cell::Cell::get)
}

fn setup() -> Device {
    if std::env::var_os("TORCH_CUDA_DRIVER").is_none() {
        driver::select(DriverKind::Emulator).unwrap();
    }
    kernels_cuda::runtime::init();
    Device::cuda(0)
}

const GPU: Device = Device::cuda(0);

/// Values with signs, fractions and a zero, as `dtype`, in `shape`.
fn sample(shape: &[i64], dtype: ScalarType, seed: i64) -> Tensor {
    let n: i64 = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| (((i * 7 + seed * 13) % 23) - 11) as f64 * 0.375).collect();
    let t = Tensor::from_vec(v, shape).unwrap();
    ops::_to_copy(&t, Some(dtype), None, None, None, false, None).unwrap()
}

fn values(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

/// Same shape, dtype and values (NaN equal to NaN), `rel` relative tolerance.
fn assert_close(got: &Tensor, want: &Tensor, rel: f64, what: &str) {
    assert_eq!(got.sizes(), want.sizes(), "{what}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    for (i, (g, w)) in values(got).iter().zip(values(want)).enumerate() {
        let ok = g == &w || (g.is_nan() && w.is_nan()) || (g - w).abs() <= rel * w.abs().max(1e-30);
        assert!(ok, "{what}: element {i}: got {g}, want {w}");
    }
}

#[test]
fn to_device_round_trips_every_dtype() {
    setup();
    for dt in [
        ScalarType::F32,
        ScalarType::F64,
        ScalarType::F16,
        ScalarType::BF16,
        ScalarType::U8,
        ScalarType::I8,
        ScalarType::I16,
        ScalarType::I32,
        ScalarType::I64,
        ScalarType::Bool,
    ] {
        let cpu = sample(&[3, 5], dt, 1);
        let gpu = cpu.cuda_on(0).unwrap();
        assert_eq!(gpu.device(), GPU);
        assert_eq!(gpu.dtype(), dt);
        assert_eq!(gpu.sizes(), &[3, 5]);
        let back = gpu.cpu().unwrap();
        assert!(back.device().is_cpu());
        assert_close(&back, &cpu, 0.0, &format!("round trip {dt}"));
        // `to` on the same device is the tensor itself; `to_vec` copies through the device kernel.
        assert!(gpu.to_device(GPU).unwrap().is_same(&gpu));
        assert_eq!(gpu.to_vec::<f64>().unwrap(), values(&cpu));
    }
}

#[test]
fn copies_convert_and_follow_strides_in_every_direction() {
    setup();
    let src = sample(&[4, 6], ScalarType::F64, 2);
    // Host to a transposed device view, with a conversion to f32.
    let dst = ops::zeros(&[6, 4], Some(ScalarType::F32), None, Some(GPU), None).unwrap();
    let dst_t = ops::transpose(&dst, 0, 1).unwrap();
    ops::copy_(&dst_t, &src, false).unwrap();
    let want =
        ops::_to_copy(&ops::transpose(&src, 0, 1).unwrap(), Some(ScalarType::F32), None, None, None, false, None)
            .unwrap();
    assert_close(&dst.cpu().unwrap(), &want, 0.0, "H2D strided");

    // Device (a column slice, non-contiguous) to a strided host view, converting to i32.
    let gsrc = src.cuda_on(0).unwrap();
    let col = ops::slice(&gsrc, 1, Some(1), Some(5), 2).unwrap();
    let host = ops::zeros(&[2, 4], Some(ScalarType::I32), None, None, None).unwrap();
    let host_t = ops::transpose(&host, 0, 1).unwrap();
    ops::copy_(&host_t, &col, false).unwrap();
    let want = ops::_to_copy(
        &ops::slice(&src, 1, Some(1), Some(5), 2).unwrap(),
        Some(ScalarType::I32),
        None,
        None,
        None,
        false,
        None,
    )
    .unwrap();
    assert_close(&ops::transpose(&host, 0, 1).unwrap(), &want, 0.0, "D2H strided");

    // Broadcasting a row into a device matrix, within the device, f64 -> f16.
    let row = ops::slice(&gsrc, 0, Some(2), Some(3), 1).unwrap();
    let m = ops::empty(&[3, 6], Some(ScalarType::F16), None, Some(GPU), None, None).unwrap();
    ops::copy_(&m, &row, false).unwrap();
    let cpu_m = ops::empty(&[3, 6], Some(ScalarType::F16), None, None, None, None).unwrap();
    ops::copy_(&cpu_m, &ops::slice(&src, 0, Some(2), Some(3), 1).unwrap(), false).unwrap();
    assert_close(&m.cpu().unwrap(), &cpu_m, 0.0, "D2D broadcast");

    // Between the two emulated devices.
    if kernels_cuda::runtime::device_count() > 1 {
        let on1 = gsrc.cuda_on(1).unwrap();
        assert_eq!(on1.device(), Device::cuda(1));
        assert_close(&on1.cpu().unwrap(), &src, 0.0, "peer copy");
        let t1 = ops::transpose(&on1, 0, 1).unwrap();
        let back = ops::empty(&[6, 4], Some(ScalarType::I64), None, Some(GPU), None, None).unwrap();
        ops::copy_(&back, &t1, false).unwrap();
        let want =
            ops::_to_copy(&ops::transpose(&src, 0, 1).unwrap(), Some(ScalarType::I64), None, None, None, false, None)
                .unwrap();
        assert_close(&back.cpu().unwrap(), &want, 0.0, "peer strided");
    }

    // A source that partly overlaps the destination is the CPU's error.
    let buf = ops::arange(Scalar::Int(8), Some(ScalarType::F32), None, Some(GPU), None).unwrap();
    let (lo, hi) =
        (ops::slice(&buf, 0, Some(0), Some(6), 1).unwrap(), ops::slice(&buf, 0, Some(2), Some(8), 1).unwrap());
    let cpu = ops::arange(Scalar::Int(8), Some(ScalarType::F32), None, None, None).unwrap();
    let (clo, chi) =
        (ops::slice(&cpu, 0, Some(0), Some(6), 1).unwrap(), ops::slice(&cpu, 0, Some(2), Some(8), 1).unwrap());
    let (ge, ce) = (ops::copy_(&lo, &hi, false).unwrap_err(), ops::copy_(&clo, &chi, false).unwrap_err());
    assert_eq!(ge.to_string(), ce.to_string());
    assert_eq!(buf.to_vec::<f32>().unwrap(), (0..8).map(|i| i as f32).collect::<Vec<_>>());
    // A source that cannot broadcast is an error, and nothing is written.
    let e = ops::copy_(&dst, &ops::zeros(&[5], None, None, None, None).unwrap(), false).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e:?}");
}

#[test]
fn factories_create_on_the_device() {
    setup();
    let z = ops::zeros(&[2, 3], Some(ScalarType::I64), None, Some(GPU), None).unwrap();
    assert_eq!((z.device(), z.dtype()), (GPU, ScalarType::I64));
    assert_eq!(z.to_vec::<i64>().unwrap(), vec![0; 6]);
    let o = ops::ones(&[4], None, None, Some(GPU), None).unwrap();
    assert_eq!((o.device(), o.dtype()), (GPU, ScalarType::F32));
    assert_eq!(o.to_vec::<f32>().unwrap(), vec![1.0; 4]);
    let f = ops::full(&[2, 2], Scalar::Float(2.5), None, None, Some(GPU), None).unwrap();
    assert_eq!(f.to_vec::<f32>().unwrap(), vec![2.5; 4]);
    let fb = ops::full(&[3], Scalar::Bool(true), None, None, Some(GPU), None).unwrap();
    assert_eq!((fb.dtype(), fb.to_vec::<bool>().unwrap()), (ScalarType::Bool, vec![true; 3]));
    let like = ops::full_like(&o, Scalar::Int(-3), Some(ScalarType::I8), None, None, None, None).unwrap();
    assert_eq!((like.device(), like.to_vec::<i8>().unwrap()), (GPU, vec![-3i8; 4]));
    let zl = ops::zeros_like(&sample(&[3], ScalarType::F64, 0), None, None, Some(GPU), None, None).unwrap();
    assert_eq!((zl.device(), zl.to_vec::<f64>().unwrap()), (GPU, vec![0.0; 3]));
    // fill_ on a strided view writes only the view's elements.
    let m = ops::zeros(&[3, 4], None, None, Some(GPU), None).unwrap();
    ops::fill_(&ops::slice(&m, 1, Some(0), Some(4), 2).unwrap(), Scalar::Float(7.0)).unwrap();
    assert_eq!(m.to_vec::<f32>().unwrap(), [7.0, 0.0, 7.0, 0.0].repeat(3));
    // The value must fit the dtype, as on the CPU.
    let e = ops::fill_(&ops::zeros(&[2], Some(ScalarType::U8), None, Some(GPU), None).unwrap(), Scalar::Int(300))
        .unwrap_err();
    let c =
        ops::fill_(&ops::zeros(&[2], Some(ScalarType::U8), None, None, None).unwrap(), Scalar::Int(300)).unwrap_err();
    assert_eq!(e.to_string(), c.to_string());
    // Factories without a CUDA kernel say so instead of touching device memory from the CPU.
    let e = ops::randperm(5, None, None, Some(GPU), None).unwrap_err().to_string();
    assert!(e.contains("CUDA"), "{e}");
    // linspace is composed from device kernels: the values are the CPU's.
    let l = ops::linspace(Scalar::Int(0), Scalar::Int(1), 5, None, None, Some(GPU), None).unwrap();
    assert_eq!((l.device(), l.dtype()), (GPU, ScalarType::F32));
    assert_eq!(l.to_vec::<f32>().unwrap(), [0.0, 0.25, 0.5, 0.75, 1.0]);
    // arange: integer ranges exactly, floating ones as PyTorch's CUDA kernel computes them
    // (start + i * step in float for float32), close to the CPU's double arithmetic.
    let r =
        ops::arange_start_step(Scalar::Int(-3), Scalar::Int(20), Scalar::Int(4), None, None, Some(GPU), None).unwrap();
    assert_eq!((r.device(), r.dtype()), (GPU, ScalarType::I64));
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![-3, 1, 5, 9, 13, 17]);
    for dt in [ScalarType::F32, ScalarType::F64, ScalarType::F16, ScalarType::BF16, ScalarType::I32, ScalarType::U8] {
        let (s, e, st) = if dt.is_floating_point() {
            (Scalar::Float(-1.5), Scalar::Float(7.0), Scalar::Float(0.25))
        } else {
            (Scalar::Int(2), Scalar::Int(200), Scalar::Int(3))
        };
        let w = ops::arange_start_step(s, e, st, Some(dt), None, None, None).unwrap();
        let g = ops::arange_start_step(s, e, st, Some(dt), None, Some(GPU), None).unwrap();
        assert_close(&g.cpu().unwrap(), &w, if dt.is_floating_point() { 1e-6 } else { 0.0 }, &format!("arange {dt}"));
    }
    // The CPU's errors, before any allocation on the device.
    let (ge, ce) = (
        ops::arange_start_step(Scalar::Int(0), Scalar::Int(5), Scalar::Int(0), None, None, Some(GPU), None)
            .unwrap_err(),
        ops::arange_start_step(Scalar::Int(0), Scalar::Int(5), Scalar::Int(0), None, None, None, None).unwrap_err(),
    );
    assert_eq!(ge.to_string(), ce.to_string());
}

type Binary = fn(&Tensor, &Tensor) -> c10::Result<Tensor>;

#[test]
fn binary_operators_broadcast_and_promote_like_the_cpu() {
    setup();
    let ops_: [(&str, Binary); 8] = [
        ("add", |a, b| ops::add(a, b, Scalar::Int(2))),
        ("sub", |a, b| ops::sub(a, b, Scalar::Int(1))),
        ("mul", ops::mul),
        ("div", ops::div),
        ("maximum", ops::maximum),
        ("minimum", ops::minimum),
        ("add_float_alpha", |a, b| ops::add(a, b, Scalar::Float(0.5))),
        ("add_cpu_scalar", |a, _| ops::add_scalar(a, Scalar::Float(1.25), Scalar::Int(1))),
    ];
    let dtypes = [
        (ScalarType::F32, ScalarType::F32),
        (ScalarType::F64, ScalarType::F32),
        (ScalarType::I32, ScalarType::I64),
        (ScalarType::I64, ScalarType::F16),
        (ScalarType::BF16, ScalarType::BF16),
        (ScalarType::U8, ScalarType::I8),
    ];
    for (da, db) in dtypes {
        // a: [4, 1, 3] transposed from [3, 1, 4]; b: [5, 1] broadcast along the other dims.
        let a = ops::permute(&sample(&[3, 1, 4], da, 3), &[2, 1, 0]).unwrap();
        let b = sample(&[5, 1], db, 4);
        let (ga, gb) = (a.cuda_on(0).unwrap(), b.cuda_on(0).unwrap());
        for (name, f) in ops_ {
            let int_alpha_float = name == "add_float_alpha" && !(da.is_floating_point() || db.is_floating_point());
            let want = f(&a, &b);
            let got = f(&ga, &gb);
            match (want, got) {
                (Ok(w), Ok(g)) => {
                    assert_eq!(g.device(), GPU, "{name}");
                    let rel = if w.dtype() == ScalarType::F16 || w.dtype() == ScalarType::BF16 { 1e-2 } else { 1e-6 };
                    assert_close(&g.cpu().unwrap(), &w, rel, &format!("{name}({da}, {db})"));
                }
                (Err(w), Err(g)) => {
                    assert!(int_alpha_float || name == "div", "{name}({da}, {db}) failed on both: {w}");
                    assert_eq!(std::mem::discriminant(&w), std::mem::discriminant(&g), "{name}: {w} vs {g}");
                }
                (w, g) => panic!("{name}({da}, {db}): cpu {w:?}, cuda {g:?}"),
            }
        }
    }
}

#[test]
fn in_place_and_out_variants_write_the_given_tensor() {
    setup();
    let a = sample(&[4, 6], ScalarType::F32, 5);
    let b = sample(&[6], ScalarType::F32, 6);
    let ga = a.cuda_on(0).unwrap();
    // In place on a strided view: only the view changes.
    let view = ops::slice(&ga, 1, Some(0), Some(6), 2).unwrap();
    let cpu_view = ops::slice(&a, 1, Some(0), Some(6), 2).unwrap();
    let bb = ops::slice(&b, 0, Some(0), Some(3), 1).unwrap();
    ops::mul_(&view, &bb.cuda_on(0).unwrap()).unwrap();
    ops::mul_(&cpu_view, &bb).unwrap();
    assert_close(&ga.cpu().unwrap(), &a, 0.0, "mul_ on a view");
    // out= of another dtype: computed in the common dtype, then cast into out.
    let out = ops::empty(&[4, 6], Some(ScalarType::F64), None, Some(GPU), None, None).unwrap();
    ops::add_out(&ga, &b.cuda_on(0).unwrap(), Scalar::Int(1), &out).unwrap();
    let want = ops::add(&a, &b, Scalar::Int(1)).unwrap();
    let want = ops::_to_copy(&want, Some(ScalarType::F64), None, None, None, false, None).unwrap();
    assert_close(&out.cpu().unwrap(), &want, 0.0, "add.out f64");
    // An unsafe cast into out is the CPU's error.
    let iout = ops::empty(&[4, 6], Some(ScalarType::I32), None, Some(GPU), None, None).unwrap();
    let e = ops::add_out(&ga, &ga, Scalar::Int(1), &iout).unwrap_err();
    assert!(matches!(e, Error::UnsafeCast { .. }), "{e:?}");
}

#[test]
fn comparisons_give_bool_tensors() {
    setup();
    let a = sample(&[3, 4], ScalarType::F32, 7);
    let b = sample(&[4], ScalarType::I64, 8);
    let (ga, gb) = (a.cuda_on(0).unwrap(), b.cuda_on(0).unwrap());
    let fs: [(&str, Binary); 6] =
        [("eq", ops::eq), ("ne", ops::ne), ("lt", ops::lt), ("le", ops::le), ("gt", ops::gt), ("ge", ops::ge)];
    for (name, f) in fs {
        let g = f(&ga, &gb).unwrap();
        assert_eq!((g.device(), g.dtype()), (GPU, ScalarType::Bool), "{name}");
        assert_close(&g.cpu().unwrap(), &f(&a, &b).unwrap(), 0.0, name);
    }
    let g = ops::lt_scalar(&ga, Scalar::Float(0.5)).unwrap();
    assert_close(&g.cpu().unwrap(), &ops::lt_scalar(&a, Scalar::Float(0.5)).unwrap(), 0.0, "lt.Scalar");
}

type Unary = fn(&Tensor) -> c10::Result<Tensor>;

#[test]
fn unary_operators_match_the_cpu() {
    setup();
    let fs: [(&str, Unary); 10] = [
        ("neg", ops::neg),
        ("abs", ops::abs),
        ("exp", ops::exp),
        ("log", ops::log),
        ("sqrt", ops::sqrt),
        ("sin", ops::sin),
        ("cos", ops::cos),
        ("tanh", ops::tanh),
        ("sigmoid", ops::sigmoid),
        ("relu", ops::relu),
    ];
    for dt in [ScalarType::F32, ScalarType::F64, ScalarType::F16, ScalarType::BF16, ScalarType::I32, ScalarType::I64] {
        let a = ops::transpose(&sample(&[5, 3], dt, 9), 0, 1).unwrap();
        let ga = a.cuda_on(0).unwrap();
        for (name, f) in fs {
            let (w, g) = (f(&a).unwrap(), f(&ga).unwrap());
            assert_eq!(g.device(), GPU);
            // Transcendentals may differ in the last place between libm implementations.
            let rel = match w.dtype() {
                ScalarType::F16 | ScalarType::BF16 => 1e-2,
                ScalarType::F32 => 1e-6,
                _ => 1e-14,
            };
            assert_close(&g.cpu().unwrap(), &w, rel, &format!("{name}({dt})"));
        }
    }
    // In place.
    let a = sample(&[7], ScalarType::F32, 10);
    let ga = a.cuda_on(0).unwrap();
    ops::relu_(&ga).unwrap();
    assert_close(&ga.cpu().unwrap(), &ops::relu(&a).unwrap(), 0.0, "relu_");
    // The rest of the floating functions and activations; integer inputs of the first group are
    // promoted to float32, as on the CPU.
    let more: [(&str, Unary); 22] = [
        ("exp2", ops::exp2),
        ("expm1", ops::expm1),
        ("log2", ops::log2),
        ("log10", ops::log10),
        ("log1p", ops::log1p),
        ("rsqrt", ops::rsqrt),
        ("reciprocal", ops::reciprocal),
        ("tan", ops::tan),
        ("atan", ops::atan),
        ("sinh", ops::sinh),
        ("cosh", ops::cosh),
        ("asinh", ops::asinh),
        ("erf", ops::erf),
        ("erfc", ops::erfc),
        ("floor", ops::floor),
        ("ceil", ops::ceil),
        ("trunc", ops::trunc),
        ("round", ops::round),
        ("frac", ops::frac),
        ("sign", ops::sign),
        ("silu", ops::silu),
        ("hardswish", ops::hardswish),
    ];
    for dt in [ScalarType::F32, ScalarType::F64, ScalarType::BF16, ScalarType::I64] {
        let a = ops::transpose(&sample(&[5, 3], dt, 4), 0, 1).unwrap();
        let ga = a.cuda_on(0).unwrap();
        for (name, f) in more {
            let what = format!("{name}({dt})");
            if dt == ScalarType::I64 && ["silu", "hardswish"].contains(&name) {
                // Floating-only activations refuse integers on both devices.
                assert!(f(&a).is_err() && f(&ga).is_err(), "{what}");
                continue;
            }
            let (w, g) = (f(&a).unwrap(), f(&ga).unwrap());
            assert_eq!(g.device(), GPU, "{what}");
            let rel = match w.dtype() {
                ScalarType::BF16 => 1e-2,
                ScalarType::F32 => 1e-5,
                _ => 1e-13,
            };
            assert_close(&g.cpu().unwrap(), &w, rel, &what);
        }
    }
    let a = sample(&[6], ScalarType::F64, 3);
    let ga = a.cuda_on(0).unwrap();
    ops::floor_(&ga).unwrap();
    assert_close(&ga.cpu().unwrap(), &ops::floor(&a).unwrap(), 0.0, "floor_");
}

#[test]
fn errors_are_values_with_the_cpus_kinds() {
    setup();
    let ga = sample(&[3], ScalarType::F32, 1).cuda_on(0).unwrap();
    // Tensors on two devices (a CPU tensor with dims is not a scalar).
    let e = ops::add(&ga, &sample(&[3], ScalarType::F32, 2), Scalar::Int(1)).unwrap_err();
    assert!(matches!(e, Error::DeviceMismatch { .. }), "{e:?}");
    if kernels_cuda::runtime::device_count() > 1 {
        let e = ops::mul(&ga, &ga.cuda_on(1).unwrap()).unwrap_err();
        assert!(matches!(e, Error::DeviceMismatch { .. }), "{e:?}");
    }
    // A dtype without a CUDA kernel, an operator without one.
    let gb = ops::full(&[3], Scalar::Bool(true), None, None, Some(GPU), None).unwrap();
    assert!(matches!(ops::relu(&gb).unwrap_err(), Error::UnsupportedDtype { .. }));
    assert!(matches!(ops::cumsum(&gb, 0, Some(ScalarType::Bool)).unwrap_err(), Error::UnsupportedDtype { .. }));
    let e = ops::neg(&gb).unwrap_err().to_string();
    assert!(e.contains("Negation, the `-` operator, on a bool tensor is not supported"), "{e}");
    let e = ops::cummax(&ga, 0).unwrap_err().to_string();
    assert!(e.contains("CUDA"), "{e}");
    // The tensors are intact after the errors.
    assert_eq!(ga.to_vec::<f64>().unwrap(), values(&sample(&[3], ScalarType::F32, 1)));
}

#[test]
fn reductions_over_any_dims_match_the_cpu() {
    setup();
    // [4, 3, 5] seen through a permutation, so the reduced dims are strided.
    for dt in [ScalarType::F32, ScalarType::F64, ScalarType::F16, ScalarType::BF16, ScalarType::I32, ScalarType::I64] {
        let a = ops::permute(&sample(&[5, 4, 3], dt, 11), &[1, 2, 0]).unwrap();
        let ga = a.cuda_on(0).unwrap();
        let rel = match dt {
            ScalarType::F16 | ScalarType::BF16 => 1e-2,
            ScalarType::F32 => 1e-5,
            _ => 1e-12,
        };
        for dims in [vec![], vec![0], vec![1], vec![2], vec![0, 2], vec![-1, -2], vec![0, 1, 2]] {
            for keepdim in [false, true] {
                let what = format!("{dt} dims {dims:?} keepdim {keepdim}");
                let d = if dims.is_empty() { None } else { Some(&dims[..]) };
                let (w, g) = (
                    ops::sum_dim_intlist(&a, d, keepdim, None).unwrap(),
                    ops::sum_dim_intlist(&ga, d, keepdim, None).unwrap(),
                );
                assert_close(&g.cpu().unwrap(), &w, rel, &format!("sum {what}"));
                if dt.is_floating_point() {
                    let (w, g) =
                        (ops::mean_dim(&a, d, keepdim, None).unwrap(), ops::mean_dim(&ga, d, keepdim, None).unwrap());
                    assert_close(&g.cpu().unwrap(), &w, rel, &format!("mean {what}"));
                }
                if dims.len() > 1 {
                    let (w, g) = (ops::amax(&a, &dims, keepdim).unwrap(), ops::amax(&ga, &dims, keepdim).unwrap());
                    assert_close(&g.cpu().unwrap(), &w, 0.0, &format!("amax {what}"));
                }
            }
        }
        for dim in [0i64, 1, 2] {
            let (w, g) = (ops::prod(&a, dim, false, None).unwrap(), ops::prod(&ga, dim, false, None).unwrap());
            assert_close(&g.cpu().unwrap(), &w, rel, &format!("prod {dt} {dim}"));
            let ((wv, wi), (gv, gi)) = (ops::max_dim(&a, dim, true).unwrap(), ops::max_dim(&ga, dim, true).unwrap());
            assert_close(&gv.cpu().unwrap(), &wv, 0.0, &format!("max values {dt} {dim}"));
            assert_close(&gi.cpu().unwrap(), &wi, 0.0, &format!("max indices {dt} {dim}"));
            let ((wv, wi), (gv, gi)) = (ops::min_dim(&a, dim, false).unwrap(), ops::min_dim(&ga, dim, false).unwrap());
            assert_close(&gv.cpu().unwrap(), &wv, 0.0, &format!("min values {dt} {dim}"));
            assert_close(&gi.cpu().unwrap(), &wi, 0.0, &format!("min indices {dt} {dim}"));
            let (w, g) = (ops::argmax(&a, Some(dim), false).unwrap(), ops::argmax(&ga, Some(dim), false).unwrap());
            assert_close(&g.cpu().unwrap(), &w, 0.0, &format!("argmax {dt} {dim}"));
        }
        let (w, g) = (ops::argmin(&a, None, false).unwrap(), ops::argmin(&ga, None, false).unwrap());
        assert_close(&g.cpu().unwrap(), &w, 0.0, &format!("argmin {dt}"));
        let (w, g) = (ops::sum(&a, Some(ScalarType::F64)).unwrap(), ops::sum(&ga, Some(ScalarType::F64)).unwrap());
        assert_close(&g.cpu().unwrap(), &w, 1e-12, &format!("sum to f64 {dt}"));
    }
}

#[test]
fn reductions_handle_ties_nan_large_rows_and_empty_inputs() {
    setup();
    // Ties: the first index; NaN: propagates with the first NaN's index.
    let t = Tensor::from_vec(vec![1.0f32, 3.0, 3.0, -1.0, f32::NAN, 2.0, f32::NAN, 0.0], &[2, 4]).unwrap();
    let (v, i) = ops::max_dim(&t.cuda_on(0).unwrap(), 1, false).unwrap();
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![1, 0]);
    let v = v.to_vec::<f32>().unwrap();
    assert_eq!(v[0], 3.0);
    assert!(v[1].is_nan());
    // A row longer than a block, with a tie between threads far apart.
    let n = 5000;
    let mut x = vec![0.0f64; n];
    x[4321] = 9.0;
    x[300] = 9.0;
    let g = Tensor::from_vec(x, &[n as i64]).unwrap().cuda_on(0).unwrap();
    assert_eq!(ops::argmax(&g, None, false).unwrap().item::<i64>().unwrap(), 300);
    assert_eq!(ops::sum(&g, None).unwrap().item::<f64>().unwrap(), 18.0);
    // Integer sums wrap in int64 and give int64 for narrower inputs.
    let ints = Tensor::from_vec(vec![i32::MAX, i32::MAX, 5], &[3]).unwrap().cuda_on(0).unwrap();
    let s = ops::sum(&ints, None).unwrap();
    assert_eq!((s.dtype(), s.item::<i64>().unwrap()), (ScalarType::I64, 2 * i32::MAX as i64 + 5));
    // Empty reductions: sum 0, prod 1, mean NaN; max over an empty dim is the CPU's error.
    let e = ops::zeros(&[3, 0], None, None, Some(GPU), None).unwrap();
    assert_eq!(ops::sum_dim_intlist(&e, Some(&[1]), false, None).unwrap().to_vec::<f32>().unwrap(), vec![0.0; 3]);
    assert_eq!(ops::prod(&e, 1, false, None).unwrap().to_vec::<f32>().unwrap(), vec![1.0; 3]);
    assert!(ops::mean(&e, None).unwrap().item::<f32>().unwrap().is_nan());
    let (ge, ce) = (ops::max_dim(&e, 1, false).unwrap_err(), ops::max_dim(&e.cpu().unwrap(), 1, false).unwrap_err());
    assert_eq!(ge.to_string(), ce.to_string());
    assert_eq!(ops::sum_dim_intlist(&e, Some(&[0]), false, None).unwrap().sizes(), &[0]);
}

#[test]
fn softmax_and_log_softmax_match_the_cpu() {
    setup();
    for dt in [ScalarType::F32, ScalarType::F64, ScalarType::F16, ScalarType::BF16] {
        let a = ops::transpose(&sample(&[6, 3, 4], dt, 12), 0, 2).unwrap();
        let ga = a.cuda_on(0).unwrap();
        let rel = match dt {
            ScalarType::F16 | ScalarType::BF16 => 2e-2,
            ScalarType::F32 => 1e-5,
            _ => 1e-12,
        };
        for dim in [0i64, 1, -1] {
            let (w, g) = (ops::softmax(&a, dim, None).unwrap(), ops::softmax(&ga, dim, None).unwrap());
            assert_close(&g.cpu().unwrap(), &w, rel, &format!("softmax {dt} {dim}"));
            let (w, g) = (ops::log_softmax(&a, dim, None).unwrap(), ops::log_softmax(&ga, dim, None).unwrap());
            assert_close(&g.cpu().unwrap(), &w, rel, &format!("log_softmax {dt} {dim}"));
        }
    }
    // A row longer than a block; -inf entries; an integer input is the CPU's error.
    let mut x: Vec<f32> = (0..3000).map(|i| (i % 17) as f32 * 0.25).collect();
    x[7] = f32::NEG_INFINITY;
    let t = Tensor::from_vec(x, &[1, 3000]).unwrap();
    let (w, g) = (ops::softmax(&t, 1, None).unwrap(), ops::softmax(&t.cuda_on(0).unwrap(), 1, None).unwrap());
    assert_close(&g.cpu().unwrap(), &w, 1e-5, "long softmax");
    let i = sample(&[3], ScalarType::I64, 0);
    let (ce, ge) = (ops::softmax(&i, 0, None).unwrap_err(), ops::softmax(&i.cuda_on(0).unwrap(), 0, None).unwrap_err());
    assert_eq!(ce.to_string(), ge.to_string());
}

#[test]
fn matrix_products_map_onto_the_column_major_gemm() {
    setup();
    for dt in [ScalarType::F32, ScalarType::F64, ScalarType::F16, ScalarType::BF16] {
        let rel = match dt {
            ScalarType::F16 | ScalarType::BF16 => 2e-2,
            ScalarType::F32 => 1e-5,
            _ => 1e-12,
        };
        let a = sample(&[5, 7], dt, 21);
        let b = sample(&[7, 3], dt, 22);
        // Every layout of each operand: row-major, transposed (column-major) and sliced.
        let layouts = |t: &Tensor| -> Vec<Tensor> {
            let g = t.cuda_on(0).unwrap();
            let tt = ops::transpose(
                &ops::contiguous(&ops::transpose(&g, 0, 1).unwrap(), c10::MemoryFormat::Contiguous).unwrap(),
                0,
                1,
            )
            .unwrap();
            let wide = ops::zeros(&[t.sizes()[0], 2 * t.sizes()[1]], Some(dt), None, Some(GPU), None).unwrap();
            let sliced = ops::slice(&wide, 1, Some(0), None, 2).unwrap();
            ops::copy_(&sliced, &g, false).unwrap();
            vec![g, tt, sliced]
        };
        let want = ops::mm(&a, &b).unwrap();
        for ga in layouts(&a) {
            for gb in layouts(&b) {
                let got = ops::mm(&ga, &gb).unwrap();
                assert_eq!(got.device(), GPU);
                assert_close(
                    &got.cpu().unwrap(),
                    &want,
                    rel,
                    &format!("mm {dt} {:?} {:?}", ga.strides(), gb.strides()),
                );
            }
        }
        // addmm with a broadcast bias, alpha and beta; beta 0 ignores NaN in self.
        let bias = sample(&[3], dt, 23);
        let w = ops::addmm(&bias, &a, &b, Scalar::Float(0.5), Scalar::Float(2.0)).unwrap();
        let g = ops::addmm(
            &bias.cuda_on(0).unwrap(),
            &a.cuda_on(0).unwrap(),
            &b.cuda_on(0).unwrap(),
            Scalar::Float(0.5),
            Scalar::Float(2.0),
        )
        .unwrap();
        assert_close(&g.cpu().unwrap(), &w, rel, &format!("addmm {dt}"));
        let nan = ops::full(&[5, 3], Scalar::Float(f64::NAN), Some(dt), None, Some(GPU), None).unwrap();
        let g =
            ops::addmm(&nan, &a.cuda_on(0).unwrap(), &b.cuda_on(0).unwrap(), Scalar::Int(0), Scalar::Int(1)).unwrap();
        assert_close(&g.cpu().unwrap(), &want, rel, &format!("addmm beta=0 {dt}"));
        // bmm and matmul with a broadcast batch.
        let x = sample(&[4, 2, 6], dt, 24);
        let y = sample(&[4, 6, 5], dt, 25);
        let (w, g) = (ops::bmm(&x, &y).unwrap(), ops::bmm(&x.cuda_on(0).unwrap(), &y.cuda_on(0).unwrap()).unwrap());
        assert_close(&g.cpu().unwrap(), &w, rel, &format!("bmm {dt}"));
        let y2 = sample(&[6, 5], dt, 26);
        let (w, g) =
            (ops::matmul(&x, &y2).unwrap(), ops::matmul(&x.cuda_on(0).unwrap(), &y2.cuda_on(0).unwrap()).unwrap());
        assert_close(&g.cpu().unwrap(), &w, rel, &format!("matmul {dt}"));
    }
    // An empty inner dimension gives zeros (and beta * self for addmm).
    let e = ops::mm(
        &ops::zeros(&[2, 0], None, None, Some(GPU), None).unwrap(),
        &ops::zeros(&[0, 3], None, None, Some(GPU), None).unwrap(),
    )
    .unwrap();
    assert_eq!(e.to_vec::<f32>().unwrap(), vec![0.0; 6]);
    // Integer products have no CUDA kernel (as in PyTorch), and devices must match.
    let i = sample(&[2, 2], ScalarType::I64, 0).cuda_on(0).unwrap();
    assert!(matches!(ops::mm(&i, &i).unwrap_err(), Error::UnsupportedDtype { .. }));
    let f = sample(&[2, 2], ScalarType::F32, 0);
    assert!(matches!(ops::mm(&f.cuda_on(0).unwrap(), &f).unwrap_err(), Error::DeviceMismatch { .. }));
}

#[test]
fn pinned_host_memory_holds_cpu_tensors_that_copy_to_the_device() {
    setup();
    let t = sample(&[3, 4], ScalarType::F32, 30);
    assert!(!t.is_pinned());
    let p = ops::transpose(&t, 0, 1).unwrap().pin_memory().unwrap();
    assert!(p.is_pinned() && p.device().is_cpu() && p.is_contiguous());
    assert_close(&p, &ops::transpose(&t, 0, 1).unwrap(), 0.0, "pinned copy");
    // Pinning a pinned tensor is the tensor itself; views of it are pinned too.
    assert!(p.pin_memory().unwrap().is_same(&p));
    assert!(ops::select(&p, 0, 1).unwrap().is_pinned());
    // A non-blocking copy from pinned memory, and back into pinned memory.
    let g = ops::empty(&[4, 3], Some(ScalarType::F32), None, Some(GPU), None, None).unwrap();
    ops::copy_(&g, &p, true).unwrap();
    let back = ops::zeros(&[4, 3], None, None, None, None).unwrap().pin_memory().unwrap();
    ops::copy_(&back, &g, true).unwrap();
    kernels_cuda::runtime::synchronize(GPU).unwrap();
    assert_close(&back, &p, 0.0, "round trip through pinned memory");
    // Only CPU tensors can be pinned.
    let e = g.pin_memory().unwrap_err().to_string();
    assert!(e.contains("only dense CPU tensors can be pinned"), "{e}");
    // The memory goes back when the last tensor using it is dropped.
    let addr = p.storage().data_ptr();
    drop((p, back));
    assert!(!c10::allocator::pinned_memory().unwrap().is_pinned(addr));
}

/// Mean and (population) variance of a tensor's values.
fn moments(t: &Tensor) -> (f64, f64) {
    let v = values(t);
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    (mean, v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n)
}

/// The random operators on the device, each drawing from an explicit CUDA generator (the
/// default generator is the next test's): the samples' range and moments against the
/// distributions' closed forms (tolerances of at least 5 standard errors), reproducibility
/// under a seed, fresh numbers on the next call, the CPU's memory order for strided outputs,
/// and the generator's device checked.
#[test]
fn random_operators_sample_on_the_device_from_a_cuda_generator() {
    setup();
    let g = aten::Generator::new(GPU);
    g.manual_seed(7);
    let n = 20_000i64;
    let a = ops::rand_generator(&[n], Some(&g), None, None, Some(GPU), None).unwrap();
    assert_eq!((a.device(), a.dtype(), a.sizes()), (GPU, ScalarType::F32, &[n][..]));
    assert!(values(&a).iter().all(|x| (0.0..1.0).contains(x)));
    let (mean, var) = moments(&a);
    assert!((mean - 0.5).abs() < 0.011 && (var - 1.0 / 12.0).abs() < 0.004, "uniform moments {mean} {var}");
    let next = ops::rand_generator(&[n], Some(&g), None, None, Some(GPU), None).unwrap();
    assert_ne!(values(&a), values(&next), "the generator moves on");
    g.manual_seed(7);
    let again = ops::rand_generator(&[n], Some(&g), None, None, Some(GPU), None).unwrap();
    assert_eq!(values(&a), values(&again), "a seed gives the same numbers");

    for dt in [ScalarType::F32, ScalarType::F64, ScalarType::F16, ScalarType::BF16] {
        let z = ops::randn_generator(&[n], Some(&g), Some(dt), None, Some(GPU), None).unwrap();
        assert_eq!((z.device(), z.dtype()), (GPU, dt));
        let (mean, var) = moments(&z);
        assert!(mean.abs() < 0.04 && (var - 1.0).abs() < 0.06, "randn {dt}: moments {mean} {var}");
        let u = ops::empty(&[n], Some(dt), None, Some(GPU), None, None).unwrap();
        ops::uniform_(&u, -2.0, 3.0, Some(&g)).unwrap();
        assert!(values(&u).iter().all(|x| (-2.0..3.0).contains(x)), "uniform_ {dt} in [-2, 3)");
        let (mean, _) = moments(&u);
        assert!((mean - 0.5).abs() < 0.06, "uniform_ {dt}: mean {mean}");
        let e = ops::empty(&[n], Some(dt), None, Some(GPU), None, None).unwrap();
        ops::exponential_(&e, 2.0, Some(&g)).unwrap();
        let (mean, var) = moments(&e);
        assert!((mean - 0.5).abs() < 0.02 && (var - 0.25).abs() < 0.04, "exponential_ {dt}: moments {mean} {var}");
    }
    let t = ops::normal_float_float(3.0, 0.5, &[n], Some(&g), Some(ScalarType::F64), None, Some(GPU), None).unwrap();
    let (mean, var) = moments(&t);
    assert!((mean - 3.0).abs() < 0.02 && (var - 0.25).abs() < 0.015, "normal(3, 0.5): moments {mean} {var}");

    // A transposed output is filled in memory order, as on the CPU: its storage holds what a
    // contiguous fill from the same seed holds.
    g.manual_seed(11);
    let contiguous = ops::empty(&[40, 25], None, None, Some(GPU), None, None).unwrap();
    ops::normal_(&contiguous, 0.0, 1.0, Some(&g)).unwrap();
    g.manual_seed(11);
    let transposed = ops::t(&ops::empty(&[40, 25], None, None, Some(GPU), None, None).unwrap()).unwrap();
    ops::normal_(&transposed, 0.0, 1.0, Some(&g)).unwrap();
    assert_eq!(values(&ops::t(&transposed).unwrap()), values(&contiguous));

    // Integers: randint in [low, high), random_ over a dtype's range and over all of int64.
    let r = ops::randint_low_generator(-5, 5, &[n], Some(&g), None, None, Some(GPU), None).unwrap();
    assert_eq!((r.device(), r.dtype()), (GPU, ScalarType::I64));
    let ints = values(&r);
    for k in -5..5 {
        let count = ints.iter().filter(|&&x| x == k as f64).count() as f64;
        assert!((count - n as f64 / 10.0).abs() < 5.0 * (n as f64 * 0.09).sqrt(), "randint: {k} drawn {count} times");
    }
    assert!(ints.iter().all(|x| (-5.0..5.0).contains(x)));
    let bytes = ops::empty(&[n], Some(ScalarType::U8), None, Some(GPU), None, None).unwrap();
    ops::random_op_(&bytes, Some(&g)).unwrap();
    let b = values(&bytes);
    assert!(b.contains(&0.0) && b.contains(&255.0), "random_ on uint8 covers 0..=255");
    let wide = ops::empty(&[1000], Some(ScalarType::I64), None, Some(GPU), None, None).unwrap();
    ops::random_(&wide, i64::MIN, None, Some(&g)).unwrap();
    let w = wide.to_vec::<i64>().unwrap();
    assert!(w.iter().any(|&x| x < -(1 << 62)) && w.iter().any(|&x| x > 1 << 62), "the full int64 range");

    // Bernoulli with a probability and with a tensor of them (in a narrower output dtype).
    let m = ops::empty(&[n], None, None, Some(GPU), None, None).unwrap();
    ops::bernoulli_(&m, 0.25, Some(&g)).unwrap();
    let ones = values(&m).iter().filter(|&&x| x == 1.0).count() as f64;
    assert!(values(&m).iter().all(|&x| x == 0.0 || x == 1.0));
    assert!((ones / n as f64 - 0.25).abs() < 0.016, "bernoulli_(0.25): {ones} ones");
    let p = Tensor::from_vec((0..n).map(|i| [0.0, 1.0, 0.5][i as usize % 3]).collect::<Vec<f64>>(), &[n])
        .unwrap()
        .cuda_on(0)
        .unwrap();
    let draws = ops::bernoulli(&p, Some(&g)).unwrap();
    assert_eq!((draws.device(), draws.dtype()), (GPU, ScalarType::F64));
    let d = values(&draws);
    assert!(d.iter().step_by(3).all(|&x| x == 0.0) && d.iter().skip(1).step_by(3).all(|&x| x == 1.0));
    let half: f64 = d.iter().skip(2).step_by(3).sum::<f64>() / (n / 3) as f64;
    assert!((half - 0.5).abs() < 0.03, "bernoulli(p = 0.5): mean {half}");
    let narrow = ops::empty(&[n], Some(ScalarType::U8), None, Some(GPU), None, None).unwrap();
    ops::bernoulli_tensor_(&narrow, &p, Some(&g)).unwrap();
    assert!(values(&narrow).iter().step_by(3).all(|&x| x == 0.0));

    // Errors leave the output as it was.
    let kept = ops::zeros(&[3], None, None, Some(GPU), None).unwrap();
    let bad_p = Tensor::from_vec(vec![0.5f32, 1.5, 0.0], &[3]).unwrap().cuda_on(0).unwrap();
    let err = ops::bernoulli_tensor_(&kept, &bad_p, Some(&g)).unwrap_err();
    assert!(err.to_string().contains("Expected p_in >= 0 && p_in <= 1"), "{err}");
    let nan_p = Tensor::from_vec(vec![f32::NAN; 3], &[3]).unwrap().cuda_on(0).unwrap();
    assert!(matches!(ops::bernoulli_tensor_(&kept, &nan_p, Some(&g)), Err(Error::InvalidArgument { .. })));
    let cpu_p = Tensor::from_vec(vec![0.5f32; 3], &[3]).unwrap();
    assert!(matches!(ops::bernoulli_tensor_(&kept, &cpu_p, Some(&g)), Err(Error::DeviceMismatch { .. })));
    assert_eq!(values(&kept), vec![0.0; 3]);
    let cpu_gen = aten::Generator::new(Device::CPU);
    let err = ops::uniform_(&kept, 0.0, 1.0, Some(&cpu_gen)).unwrap_err();
    assert!(err.to_string().contains("Expected a 'cuda' device type for generator but found 'cpu'"), "{err}");
    let err =
        ops::uniform_(&Tensor::zeros(&[3]).dtype(ScalarType::F32).call().unwrap(), 0.0, 1.0, Some(&g)).unwrap_err();
    assert!(err.to_string().contains("Expected a 'cpu' device type for generator but found 'cuda'"), "{err}");
    assert!(matches!(ops::normal_(&kept, 0.0, -1.0, Some(&g)), Err(Error::InvalidArgument { .. })));
    assert_eq!(values(&kept), vec![0.0; 3]);
}

/// The default CUDA generators: `manual_seed` seeds the CPU and every CUDA device,
/// `cuda_manual_seed` only the current CUDA device; `rand_like`, `randn` and dropout draw from
/// the default generator of their tensor's device. (The only test of this binary that uses the
/// default CUDA generator, so no other test draws from it in between.)
#[test]
fn default_cuda_generators_follow_manual_seed_and_drive_dropout() {
    setup();
    aten::manual_seed(3);
    let a = ops::rand(&[100], None, None, Some(GPU), None).unwrap();
    assert_eq!(aten::default_generator(GPU).unwrap().initial_seed(), 3);
    aten::manual_seed(3);
    let b = ops::rand(&[100], None, None, Some(GPU), None).unwrap();
    assert_eq!(values(&a), values(&b));
    aten::cuda_manual_seed(3);
    let c = ops::rand_like(&a, None, None, None, None, None).unwrap();
    assert_eq!((c.device(), values(&c)), (GPU, values(&a)));
    // cuda_manual_seed leaves the CPU generator alone.
    aten::manual_seed(5);
    let x1 = ops::rand(&[8], None, None, None, None).unwrap();
    aten::manual_seed(5);
    aten::cuda_manual_seed(9);
    let x2 = ops::rand(&[8], None, None, None, None).unwrap();
    assert_eq!(values(&x1), values(&x2));
    assert_eq!(aten::default_generator(GPU).unwrap().initial_seed(), 9);

    // Dropout on the device: zeros and scaled survivors, about p of them dropped.
    let x = ops::ones(&[10_000], None, None, Some(GPU), None).unwrap();
    let y = ops::dropout(&x, 0.2, true).unwrap();
    assert_eq!(y.device(), GPU);
    let v = values(&y);
    assert!(v.iter().all(|&e| e == 0.0 || e == 1.25), "dropout keeps x / (1 - p)");
    let dropped = v.iter().filter(|&&e| e == 0.0).count() as f64 / 10_000.0;
    assert!((dropped - 0.2).abs() < 0.02, "dropped {dropped}");
    let (out, mask) = ops::native_dropout(&x, 0.5, Some(true)).unwrap();
    assert_eq!((out.device(), mask.device(), mask.dtype()), (GPU, GPU, ScalarType::Bool));
    let kept: Vec<f64> = values(&mask);
    for (o, k) in values(&out).iter().zip(&kept) {
        assert_eq!(*o, if *k == 1.0 { 2.0 } else { 0.0 });
    }
}

/// `got` lives on the device and equals `want` (a CPU result) exactly.
fn assert_on_device_eq(got: &Tensor, want: &Tensor, what: &str) {
    assert_eq!(got.device(), GPU, "{what}: device");
    assert_close(&got.cpu().unwrap(), want, 0.0, what);
}

/// Gathers (Note [Device gathers]): flip, roll, rot90, repeat, repeat_interleave, every pad
/// mode, diag_embed and index_select run on the device and equal the CPU's results; a bad
/// index is the CPU's error.
#[test]
fn gathers_run_on_the_device_and_match_the_cpu() {
    setup();
    for dtype in [ScalarType::F32, ScalarType::F16, ScalarType::I64, ScalarType::Bool] {
        let x = sample(&[3, 4, 5], dtype, 3);
        let g = x.cuda_on(0).unwrap();
        let both = |what: &str, f: &dyn Fn(&Tensor) -> c10::Result<Tensor>| {
            assert_on_device_eq(&f(&g).unwrap(), &f(&x).unwrap(), &format!("{what} {dtype}"));
        };
        both("flip", &|t| ops::flip(t, &[0, 2]));
        both("roll", &|t| ops::roll(t, &[1, -2], &[0, 2]));
        both("roll flat", &|t| ops::roll(t, &[7], &[]));
        for k in [1, 2, 3, -1] {
            both("rot90", &|t| ops::rot90(t, k, &[1, 2]));
        }
        both("repeat", &|t| ops::repeat(t, &[2, 1, 1, 2]));
        both("repeat_interleave", &|t| ops::repeat_interleave_self_int(t, 2, Some(1), None));
        both("constant pad", &|t| ops::constant_pad_nd(t, &[1, 2, 0, 1], Scalar::Int(1)));
        both("cropping pad", &|t| ops::constant_pad_nd(t, &[-1, 1], Scalar::Int(0)));
        both("diag_embed", &|t| ops::diag_embed(t, 1, 0, 2));
        let idx = Tensor::from_vec(vec![3i64, 0, 3, 1], &[4]).unwrap();
        let gi = idx.cuda_on(0).unwrap();
        assert_on_device_eq(
            &ops::index_select(&g, 1, &gi).unwrap(),
            &ops::index_select(&x, 1, &idx).unwrap(),
            "index_select",
        );
        let idx32 = idx.to(ScalarType::I32).call().unwrap();
        assert_on_device_eq(
            &ops::index_select(&g, 2, &idx32.cuda_on(0).unwrap()).unwrap(),
            &ops::index_select(&x, 2, &idx32).unwrap(),
            "index_select int32",
        );
    }
    let x = sample(&[2, 3, 5], ScalarType::F32, 5);
    let g = x.cuda_on(0).unwrap();
    for mode in ["constant", "reflect", "replicate", "circular"] {
        let pad = |t: &Tensor| ops::pad(t, &[2, 1, 1, 2], mode, None);
        assert_on_device_eq(&pad(&g).unwrap(), &pad(&x).unwrap(), mode);
    }
    // Empty results stay on the device.
    let e = ops::flip(&ops::narrow(&g, 1, 0, 0).unwrap(), &[1]).unwrap();
    assert_eq!((e.device(), e.sizes()), (GPU, &[2, 0, 5][..]));
    // An index past the end, and indices on another device, are errors as on the CPU.
    let bad = Tensor::from_vec(vec![0i64, 5], &[2]).unwrap();
    let want = ops::index_select(&x, 1, &bad).unwrap_err();
    let got = ops::index_select(&g, 1, &bad.cuda_on(0).unwrap()).unwrap_err();
    assert!(matches!(got, Error::IndexOutOfRange { index: 5, size: 3, .. }), "{got:?}");
    assert_eq!(got.to_string(), want.to_string());
    assert!(matches!(ops::index_select(&g, 1, &bad).unwrap_err(), Error::DeviceMismatch { .. }));
}

/// sort and argsort on the device: stable, NaN last ascending and first descending, along any
/// dim, equal to the CPU's values and indices.
#[test]
fn sort_and_argsort_run_on_the_device_and_match_the_cpu() {
    setup();
    let v = vec![3.0f32, f32::NAN, -1.0, 3.0, 0.0, -1.0, 2.5, f32::NAN, 3.0, -7.0, 0.0, 1.0];
    let base = Tensor::from_vec(v, &[3, 4]).unwrap();
    for dtype in [ScalarType::F32, ScalarType::F64, ScalarType::BF16, ScalarType::I32, ScalarType::U8] {
        let x = base.to(dtype).call().unwrap();
        let g = x.cuda_on(0).unwrap();
        for (dim, descending) in [(-1, false), (-1, true), (0, false), (0, true)] {
            let what = format!("sort {dtype} dim {dim} descending {descending}");
            let (gv, gi) = ops::sort(&g, dim, descending).unwrap();
            let (cv, ci) = ops::sort(&x, dim, descending).unwrap();
            assert_on_device_eq(&gv, &cv, &what);
            assert_on_device_eq(&gi, &ci, &what);
            assert_on_device_eq(&ops::argsort(&g, dim, descending).unwrap(), &ci, &what);
        }
    }
    // Closed form: the stable ascending order of the first row [3, NaN, -1, 3].
    let (_, i) = ops::sort(&base.cuda_on(0).unwrap(), -1, false).unwrap();
    assert_eq!(i.to_vec::<i64>().unwrap()[..4], [2, 0, 3, 1]);
    // A zero-dim tensor and an empty one.
    let s = Tensor::from_vec(vec![4.0f32], &[]).unwrap().cuda_on(0).unwrap();
    let (sv, si) = ops::sort(&s, 0, false).unwrap();
    assert_eq!((sv.device(), sv.dim(), si.item::<i64>().unwrap()), (GPU, 0, 0));
    let (ev, _) = ops::sort(&ops::narrow(&base.cuda_on(0).unwrap(), 1, 0, 0).unwrap(), 1, false).unwrap();
    assert_eq!((ev.device(), ev.sizes()), (GPU, &[3, 0][..]));
}

/// embedding, its dense gradient (padding_idx, scale_grad_by_freq) and one_hot on the device.
#[test]
fn embedding_and_one_hot_run_on_the_device_and_match_the_cpu() {
    setup();
    let w = sample(&[10, 4], ScalarType::F32, 2);
    let idx = Tensor::from_vec(vec![1i64, 3, 3, 0, 9, 1, 3, 3], &[2, 4]).unwrap();
    let (gw, gidx) = (w.cuda_on(0).unwrap(), idx.cuda_on(0).unwrap());
    assert_on_device_eq(
        &ops::embedding(&gw, &gidx, -1, false, false).unwrap(),
        &ops::embedding(&w, &idx, -1, false, false).unwrap(),
        "embedding",
    );
    let grad = sample(&[2, 4, 4], ScalarType::F32, 4);
    let ggrad = grad.cuda_on(0).unwrap();
    for (padding_idx, scale) in [(-1, false), (3, false), (1, true), (-1, true)] {
        let what = format!("embedding_dense_backward padding {padding_idx} scale {scale}");
        let got = ops::embedding_dense_backward(&ggrad, &gidx, 10, padding_idx, scale).unwrap();
        let want = ops::embedding_dense_backward(&grad, &idx, 10, padding_idx, scale).unwrap();
        assert_on_device_eq(&got, &want, &what);
    }
    // Closed form on the CPU: row 3 is looked up at positions 1, 2, 6, 7; scaled by 1/4.
    let want = ops::embedding_dense_backward(&grad, &idx, 10, -1, true).unwrap();
    let g = values(&grad);
    let row3: Vec<f64> = (0..4).map(|c| [1, 2, 6, 7].iter().map(|p| g[p * 4 + c]).sum::<f64>() / 4.0).collect();
    let got = values(&want);
    for c in 0..4 {
        assert!((got[12 + c] - row3[c]).abs() <= 1e-6 * row3[c].abs().max(1.0), "row 3 col {c}");
    }
    assert!(got[8..12].iter().all(|&x| x == 0.0), "row 2 was never looked up");
    let classes = Tensor::from_vec(vec![2i64, 0, 5, 2], &[2, 2]).unwrap();
    let gc = classes.cuda_on(0).unwrap();
    for n in [-1, 7] {
        assert_on_device_eq(&ops::one_hot(&gc, n).unwrap(), &ops::one_hot(&classes, n).unwrap(), "one_hot");
    }
    let e = ops::one_hot(&gc, 4).unwrap_err().to_string();
    assert!(e.contains("Class values must be smaller than num_classes."), "{e}");
}

#[test]
fn sparse_tensors_run_on_the_device_and_match_the_cpu() {
    // Note [Sparse kernels from dense operators]: the SparseCUDA kernels are aten's, their values
    // on the device through the dense CUDA kernels. Each result must stay on the device.
    setup();
    let one = Scalar::Int(1);
    let idx = Tensor::from_vec(vec![0i64, 1, 1, 0, 2, 2, 0, 2, 2, 3], &[2, 5]).unwrap();
    let vals = sample(&[5], ScalarType::F32, 3);
    let s = ops::sparse_coo_tensor(&idx, &vals, &[3, 4], None, None, None, None, None).unwrap();
    let g = ops::_to_copy(&s, None, None, Some(GPU), None, false, None).unwrap();
    assert_eq!((g.device(), g.layout()), (GPU, c10::Layout::SparseCoo));
    assert!(g.key_set().has(c10::DispatchKey::SparseCUDA));
    assert_eq!(ops::_values(&g).unwrap().device(), GPU);
    assert_eq!(ops::_indices(&g).unwrap().device(), GPU);
    let c = ops::coalesce(&g).unwrap();
    assert_eq!(ops::_values(&c).unwrap().device(), GPU);
    assert_eq!(ops::_nnz(&c).unwrap(), 4);
    assert_close(
        &ops::_values(&c).unwrap().cpu().unwrap(),
        &ops::_values(&ops::coalesce(&s).unwrap()).unwrap(),
        1e-6,
        "coalesce",
    );
    let dense = ops::to_dense(&g, None, None).unwrap();
    assert_eq!(dense.device(), GPU);
    assert_close(&dense.cpu().unwrap(), &ops::to_dense(&s, None, None).unwrap(), 1e-6, "to_dense");
    let d = sample(&[3, 4], ScalarType::F32, 5);
    let sum = ops::add(&d.cuda_on(0).unwrap(), &g, one).unwrap();
    assert_eq!(sum.device(), GPU);
    assert_close(&sum.cpu().unwrap(), &ops::add(&d, &s, one).unwrap(), 1e-6, "dense + sparse");
    let m = sample(&[4, 6], ScalarType::F32, 7);
    let p = ops::mm(&g, &m.cuda_on(0).unwrap()).unwrap();
    assert_eq!(p.device(), GPU);
    assert_close(&p.cpu().unwrap(), &ops::mm(&s, &m).unwrap(), 1e-5, "sparse @ dense");
    let csr = ops::to_sparse_csr(&g, None).unwrap();
    assert_eq!((csr.device(), ops::crow_indices(&csr).unwrap().device()), (GPU, GPU));
    let pc = ops::mm(&csr, &m.cuda_on(0).unwrap()).unwrap();
    assert_eq!(pc.device(), GPU);
    assert_close(&pc.cpu().unwrap(), &ops::mm(&s, &m).unwrap(), 1e-5, "csr @ dense");
    // A mixed-device call is an error, not a silent copy.
    assert!(ops::add(&d, &g, one).is_err());
}

#[test]
fn index_add_runs_on_the_device_and_matches_the_cpu() {
    setup();
    for (dim, shape, src_shape) in [(0i64, [4i64, 3], [5i64, 3]), (1, [3, 4], [3, 5]), (-1, [2, 4], [2, 5])] {
        let base = sample(&shape, ScalarType::F32, 1);
        let src = sample(&src_shape, ScalarType::F32, 2);
        let idx = Tensor::from_slice(&[3i64, 0, 3, 1, 3]);
        let want = ops::index_add(&base, dim, &idx, &src, Scalar::Float(0.5)).unwrap();
        let g = base.cuda_on(0).unwrap();
        let got =
            ops::index_add(&g, dim, &idx.cuda_on(0).unwrap(), &src.cuda_on(0).unwrap(), Scalar::Float(0.5)).unwrap();
        assert_eq!(got.device(), GPU);
        assert_close(&got.cpu().unwrap(), &want, 1e-6, &format!("index_add dim {dim}"));
        ops::index_add_(&g, dim, &idx.cuda_on(0).unwrap(), &src.cuda_on(0).unwrap(), Scalar::Float(0.5)).unwrap();
        assert_close(&g.cpu().unwrap(), &want, 1e-6, &format!("index_add_ dim {dim}"));
    }
    // An index past the rows is an error on the device too.
    let g = sample(&[2, 3], ScalarType::F32, 1).cuda_on(0).unwrap();
    let bad = Tensor::from_slice(&[5i64]).cuda_on(0).unwrap();
    assert!(
        ops::index_add(&g, 0, &bad, &sample(&[1, 3], ScalarType::F32, 2).cuda_on(0).unwrap(), Scalar::Int(1)).is_err()
    );
}

#[test]
fn sparse_operands_on_two_devices_are_an_error() {
    setup();
    let idx = Tensor::from_vec(vec![0i64, 1, 1, 0], &[2, 2]).unwrap();
    let s =
        ops::sparse_coo_tensor(&idx, &sample(&[2], ScalarType::F32, 1), &[2, 2], None, None, None, None, None).unwrap();
    let g = ops::_to_copy(&s, None, None, Some(GPU), None, false, None).unwrap();
    // A CPU self with a device mask (and the reverse) would mix devices in one sparse tensor.
    assert!(ops::sparse_mask(&sample(&[2, 2], ScalarType::F32, 2), &g).is_err());
    assert!(ops::sparse_mask(&sample(&[2, 2], ScalarType::F32, 2).cuda_on(0).unwrap(), &s).is_err());
    let m = ops::sparse_mask(&sample(&[2, 2], ScalarType::F32, 2).cuda_on(0).unwrap(), &g).unwrap();
    assert_eq!((ops::_values(&m).unwrap().device(), ops::_indices(&m).unwrap().device()), (GPU, GPU));
}

#[test]
fn sparse_dense_products_run_the_row_loop_and_match_the_cpu() {
    // Note [Row-wise sparse products]: COO (uncoalesced, with duplicates, and coalesced) and CSR
    // (with empty rows) @ dense on the device, every float dtype, nnz = 0, and addmm.
    setup();
    let idx = Tensor::from_vec(vec![3i64, 0, 3, 0, 3, 1, 2, 0, 2, 2, 4, 1], &[2, 6]).unwrap();
    for (dt, rel) in
        [(ScalarType::F32, 1e-6), (ScalarType::F64, 1e-12), (ScalarType::F16, 1e-3), (ScalarType::BF16, 1e-2)]
    {
        let s = ops::sparse_coo_tensor(&idx, &sample(&[6], dt, 3), &[5, 5], None, None, None, None, None).unwrap();
        let m = sample(&[5, 7], dt, 7);
        // The reference: the CPU's product in float64, rounded to the dtype.
        let want = |s: &Tensor| {
            let s64 = ops::_to_copy(s, Some(ScalarType::F64), None, None, None, false, None).unwrap();
            let m64 = ops::_to_copy(&m, Some(ScalarType::F64), None, None, None, false, None).unwrap();
            ops::_to_copy(&ops::mm(&s64, &m64).unwrap(), Some(dt), None, None, None, false, None).unwrap()
        };
        let g = ops::_to_copy(&s, None, None, Some(GPU), None, false, None).unwrap();
        let gm = m.cuda_on(0).unwrap();
        let p = ops::mm(&g, &gm).unwrap();
        assert_eq!((p.device(), p.dtype()), (GPU, dt));
        assert_close(&p.cpu().unwrap(), &want(&s), rel, &format!("uncoalesced coo @ dense, {dt}"));
        let coalesced = ops::coalesce(&g).unwrap();
        assert_close(&ops::mm(&coalesced, &gm).unwrap().cpu().unwrap(), &want(&s), rel, &format!("coo @ dense, {dt}"));
        let csr = ops::to_sparse_csr(&coalesced, None).unwrap();
        assert_close(&ops::mm(&csr, &gm).unwrap().cpu().unwrap(), &want(&s), rel, &format!("csr @ dense, {dt}"));
        let bias = sample(&[5, 7], dt, 11);
        let got = ops::addmm(&bias.cuda_on(0).unwrap(), &g, &gm, Scalar::Float(0.5), Scalar::Int(2)).unwrap();
        let cpu = ops::addmm(&bias, &s, &m, Scalar::Float(0.5), Scalar::Int(2)).unwrap();
        assert_eq!(got.device(), GPU);
        assert_close(&got.cpu().unwrap(), &cpu, rel * 4.0, &format!("addmm, {dt}"));
    }
    // No stored elements: zeros, on the device.
    let empty = ops::sparse_coo_tensor(
        &Tensor::from_vec(Vec::<i64>::new(), &[2, 0]).unwrap(),
        &sample(&[0], ScalarType::F32, 1),
        &[3, 5],
        None,
        None,
        None,
        None,
        None,
    )
    .unwrap();
    let g = ops::_to_copy(&empty, None, None, Some(GPU), None, false, None).unwrap();
    let p = ops::mm(&g, &sample(&[5, 2], ScalarType::F32, 2).cuda_on(0).unwrap()).unwrap();
    assert_eq!((p.device(), p.sizes()), (GPU, &[3i64, 2][..]));
    assert!(values(&p.cpu().unwrap()).iter().all(|&v| v == 0.0));
    let pc = ops::mm(&ops::to_sparse_csr(&g, None).unwrap(), &sample(&[5, 2], ScalarType::F32, 2).cuda_on(0).unwrap())
        .unwrap();
    assert!(values(&pc.cpu().unwrap()).iter().all(|&v| v == 0.0));
}

/// Note [Grouping on the device]: long sorts (merge passes), sparse coalescing, densifying and
/// dense + sparse, embedding's gradient and index_add over hundreds of positions, each matching
/// the CPU, with only a handful of numbers copied back to the host (the emulator counts them;
/// on a GPU the count stays 0).
#[test]
fn grouping_runs_on_the_device_and_matches_the_cpu() {
    setup();
    let copied = kernels_cuda::emu::host_bytes_copied;
    // Keys with many ties, NaN, in lines longer than the rank sort takes.
    let keys: Vec<f64> =
        (0..1200).map(|i| if i % 97 == 5 { f64::NAN } else { ((i * 37) % 61) as f64 - 30.0 }).collect();
    let base = Tensor::from_vec(keys, &[2, 600]).unwrap();
    for dtype in [ScalarType::F32, ScalarType::F64, ScalarType::I64] {
        let x = base.to(dtype).call().unwrap();
        let g = x.cuda_on(0).unwrap();
        for (dim, descending) in [(-1, false), (-1, true), (0, false)] {
            let what = format!("long sort {dtype} dim {dim} descending {descending}");
            let (gv, gi) = ops::sort(&g, dim, descending).unwrap();
            let (cv, ci) = ops::sort(&x, dim, descending).unwrap();
            assert_on_device_eq(&gv, &cv, &what);
            assert_on_device_eq(&gi, &ci, &what);
        }
    }
    // 3000 stored elements of a [50, 40, 3] hybrid tensor, most positions repeated.
    let nnz = 3000i64;
    let rows: Vec<i64> = (0..nnz).map(|k| (k * 31 + k / 7) % 50).collect();
    let cols: Vec<i64> = (0..nnz).map(|k| (k * 17) % 40).collect();
    let idx = Tensor::from_vec([rows, cols].concat(), &[2, nnz]).unwrap();
    for (dt, rel) in [(ScalarType::F32, 1e-5), (ScalarType::F64, 1e-12)] {
        let s = ops::sparse_coo_tensor(&idx, &sample(&[nnz, 3], dt, 5), &[50, 40, 3], None, None, None, None, None)
            .unwrap();
        let g = ops::_to_copy(&s, None, None, Some(GPU), None, false, None).unwrap();
        let before = copied();
        let c = ops::coalesce(&g).unwrap();
        // Each index row's minimum and maximum, the number of groups and the two gathers' index
        // bounds: numbers, where a host grouping would copy the 48000 bytes of indices.
        assert!(copied() - before <= 10 * 8, "coalesce copied {} bytes to the host", copied() - before);
        let want = ops::coalesce(&s).unwrap();
        assert!(ops::is_coalesced(&c).unwrap());
        assert_eq!(ops::_nnz(&c).unwrap(), ops::_nnz(&want).unwrap());
        assert_on_device_eq(&ops::_indices(&c).unwrap(), &ops::_indices(&want).unwrap(), "coalesced indices");
        assert_eq!(ops::_values(&c).unwrap().device(), GPU);
        assert_close(&ops::_values(&c).unwrap().cpu().unwrap(), &ops::_values(&want).unwrap(), rel, "coalesced values");
        let before = copied();
        let dense = ops::to_dense(&g, None, None).unwrap();
        assert!(copied() - before <= 5 * 8, "to_dense copied {} bytes to the host", copied() - before);
        assert_eq!(dense.device(), GPU);
        assert_close(&dense.cpu().unwrap(), &ops::to_dense(&s, None, None).unwrap(), rel, "to_dense");
        let d = sample(&[50, 40, 3], dt, 9);
        let sum = ops::add(&d.cuda_on(0).unwrap(), &g, Scalar::Float(0.5)).unwrap();
        assert_close(&sum.cpu().unwrap(), &ops::add(&d, &s, Scalar::Float(0.5)).unwrap(), rel, "dense + sparse");
    }
    // Embedding's gradient over 2000 positions of a 300-row table, with padding and scaling.
    let idx = Tensor::from_vec((0..2000i64).map(|p| (p * 53 + p / 3) % 300).collect(), &[40, 50]).unwrap();
    let grad = sample(&[40, 50, 6], ScalarType::F32, 4);
    let (gidx, ggrad) = (idx.cuda_on(0).unwrap(), grad.cuda_on(0).unwrap());
    for (padding_idx, scale) in [(-1, false), (299, true), (7, false)] {
        let before = copied();
        let got = ops::embedding_dense_backward(&ggrad, &gidx, 300, padding_idx, scale).unwrap();
        assert!(copied() - before <= 4 * 8, "embedding_dense_backward copied {} bytes", copied() - before);
        let want = ops::embedding_dense_backward(&grad, &idx, 300, padding_idx, scale).unwrap();
        assert_close(&got.cpu().unwrap(), &want, 1e-5, &format!("embedding backward padding {padding_idx}"));
    }
    // Out-of-range indices are errors in PyTorch's words, found on the device.
    let bad = Tensor::from_slice(&[1i64, 300]).cuda_on(0).unwrap();
    let e =
        ops::embedding_dense_backward(&sample(&[2, 6], ScalarType::F32, 1).cuda_on(0).unwrap(), &bad, 300, -1, false)
            .unwrap_err();
    assert!(matches!(e, Error::IndexOutOfRange { index: 300, .. }), "{e}");
    let neg = Tensor::from_vec(vec![0i64, 1, -1, 2], &[2, 2]).unwrap();
    // Built on the device without the constructor's checks: the kernel's own check finds it.
    let g = ops::_sparse_coo_tensor_with_dims_and_tensors(
        2,
        0,
        &[3, 3],
        &neg.cuda_on(0).unwrap(),
        &sample(&[2], ScalarType::F32, 1).cuda_on(0).unwrap(),
        None,
        None,
        Some(GPU),
        None,
        None,
    )
    .unwrap();
    let e = ops::to_dense(&g, None, None).unwrap_err().to_string();
    assert!(e.contains("found negative index -1 for dim 1"), "{e}");
    // index_add over 500 indices.
    let base = sample(&[40, 6], ScalarType::F32, 1);
    let src = sample(&[500, 6], ScalarType::F32, 2);
    let ix = Tensor::from_vec((0..500i64).map(|p| (p * 13) % 40).collect(), &[500]).unwrap();
    let got =
        ops::index_add(&base.cuda_on(0).unwrap(), 0, &ix.cuda_on(0).unwrap(), &src.cuda_on(0).unwrap(), Scalar::Int(2))
            .unwrap();
    assert_close(&got.cpu().unwrap(), &ops::index_add(&base, 0, &ix, &src, Scalar::Int(2)).unwrap(), 1e-5, "index_add");
}

/// Norms on the device (`norm`, `linalg.vector_norm`) from the device's operators, every order
/// PyTorch's kernels special-case and a general one, over all dims and some, against the CPU's
/// float64 rows; the 16-bit floats accumulate in float32.
#[test]
fn norms_run_on_the_device_and_match_the_cpu() {
    setup();
    for (dt, rel) in
        [(ScalarType::F32, 1e-5), (ScalarType::F64, 1e-12), (ScalarType::F16, 2e-3), (ScalarType::BF16, 1e-2)]
    {
        let x = sample(&[3, 4, 5], dt, 3);
        let g = x.cuda_on(0).unwrap();
        for p in [2.0, 1.0, 3.0, 0.5, f64::INFINITY, f64::NEG_INFINITY, 0.0] {
            for (dims, keepdim) in [(vec![], false), (vec![1], false), (vec![0, -1], true)] {
                let what = format!("norm {dt} p {p} dims {dims:?} keepdim {keepdim}");
                let got = ops::norm_scalaropt_dim(&g, Some(Scalar::Float(p)), &dims, keepdim).unwrap();
                let want = ops::norm_scalaropt_dim(&x, Some(Scalar::Float(p)), &dims, keepdim).unwrap();
                assert_eq!(got.device(), GPU, "{what}");
                assert_close(&got.cpu().unwrap(), &want, rel, &what);
            }
        }
        let got = ops::linalg_vector_norm(&g, Scalar::Float(2.0), None, false, Some(ScalarType::F64)).unwrap();
        assert_eq!((got.device(), got.dtype()), (GPU, ScalarType::F64));
        let want = ops::linalg_vector_norm(&x, Scalar::Float(2.0), None, false, Some(ScalarType::F64)).unwrap();
        assert_close(&got.cpu().unwrap(), &want, rel, &format!("vector_norm {dt} as float64"));
    }
    // Closed forms: [3, -4] has 2-norm 5, 1-norm 7, inf-norm 4, 0-norm 2.
    let v = Tensor::from_slice(&[3.0f32, -4.0, 0.0]).cuda_on(0).unwrap();
    for (p, want) in [(2.0, 5.0), (1.0, 7.0), (f64::INFINITY, 4.0), (0.0, 2.0), (f64::NEG_INFINITY, 0.0)] {
        let got = ops::norm(&v, Scalar::Float(p)).unwrap().cpu().unwrap().item::<f64>().unwrap();
        assert!((got - want).abs() <= 1e-5 * want.max(1.0), "p {p}: {got} vs {want}");
    }
    let scalar = Tensor::from_vec(vec![-2.5f32], &[]).unwrap().cuda_on(0).unwrap();
    let n = ops::norm_scalaropt_dim(&scalar, None, &[0], false).unwrap();
    assert_eq!((n.dim(), n.cpu().unwrap().item::<f32>().unwrap()), (0, 2.5));
    let empty = ops::narrow(&v, 0, 0, 0).unwrap();
    let e = ops::norm(&empty, Scalar::Float(f64::NEG_INFINITY)).unwrap_err().to_string();
    assert!(e.contains("cannot compute the -inf norm on an empty tensor"), "{e}");
}

/// `cat` and `stack` on the device: slices of one new device tensor written by the device's
/// copies, with PyTorch's dtype promotion and the legacy empty `[0]` operands skipped.
#[test]
fn cat_and_stack_run_on_the_device_and_match_the_cpu() {
    setup();
    let a = sample(&[2, 3], ScalarType::F32, 1);
    let b = sample(&[2, 2], ScalarType::F64, 2);
    let c = sample(&[1, 3], ScalarType::F32, 3);
    let (ga, gb, gc) = (a.cuda_on(0).unwrap(), b.cuda_on(0).unwrap(), c.cuda_on(0).unwrap());
    assert_on_device_eq(
        &ops::cat(&[ga.clone(), gb.clone()], 1).unwrap(),
        &ops::cat(&[a.clone(), b.clone()], 1).unwrap(),
        "cat dim 1, promoted",
    );
    assert_on_device_eq(
        &ops::cat(&[ga.clone(), gc.clone()], -2).unwrap(),
        &ops::cat(&[a.clone(), c.clone()], -2).unwrap(),
        "cat dim 0",
    );
    let legacy = Tensor::from_vec(Vec::<f32>::new(), &[0]).unwrap().cuda_on(0).unwrap();
    assert_on_device_eq(&ops::cat(&[legacy, ga.clone()], 0).unwrap(), &a, "an empty [0] operand is skipped");
    let t = ops::t(&ga).unwrap();
    assert_on_device_eq(
        &ops::stack(&[t.clone(), t], 1).unwrap(),
        &ops::stack(&[ops::t(&a).unwrap(), ops::t(&a).unwrap()], 1).unwrap(),
        "stack of transposed views",
    );
    let out = ops::empty(&[3, 3], Some(ScalarType::F32), None, Some(GPU), None, None).unwrap();
    ops::cat_out(&[ga.clone(), gc.clone()], 0, &out).unwrap();
    assert_on_device_eq(&out, &ops::cat(&[a.clone(), c.clone()], 0).unwrap(), "cat.out");
    assert!(matches!(ops::cat(&[ga, c], 0).unwrap_err(), Error::DeviceMismatch { .. }));
}

/// `clamp`, `clamp_min` and `clamp_max` (scalar and tensor bounds, in place and out=) on the
/// device from its `maximum`/`minimum` kernels, against the CPU; NaN propagates.
#[test]
fn clamps_run_on_the_device_and_match_the_cpu() {
    setup();
    let mut v = values(&sample(&[4, 5], ScalarType::F64, 2));
    v[3] = f64::NAN;
    let x = ops::_to_copy(&Tensor::from_vec(v, &[4, 5]).unwrap(), Some(ScalarType::F32), None, None, None, false, None)
        .unwrap();
    let g = x.cuda_on(0).unwrap();
    let (lo, hi) = (Scalar::Float(-1.5), Scalar::Float(2.0));
    assert_on_device_eq(
        &ops::clamp(&g, Some(lo), Some(hi)).unwrap(),
        &ops::clamp(&x, Some(lo), Some(hi)).unwrap(),
        "clamp",
    );
    assert_on_device_eq(&ops::clamp_min(&g, lo).unwrap(), &ops::clamp_min(&x, lo).unwrap(), "clamp_min");
    assert_on_device_eq(&ops::clamp_max(&g, hi).unwrap(), &ops::clamp_max(&x, hi).unwrap(), "clamp_max");
    let (tl, th) = (sample(&[5], ScalarType::F32, 7), sample(&[4, 1], ScalarType::F32, 9));
    assert_on_device_eq(
        &ops::clamp_tensor(&g, Some(&tl.cuda_on(0).unwrap()), Some(&th.cuda_on(0).unwrap())).unwrap(),
        &ops::clamp_tensor(&x, Some(&tl), Some(&th)).unwrap(),
        "clamp with broadcast tensor bounds",
    );
    let h = ops::clone(&g, None).unwrap();
    ops::clamp_(&h, None, Some(hi)).unwrap();
    assert_on_device_eq(&h, &ops::clamp_max(&x, hi).unwrap(), "clamp_ in place");
    let y = ops::clamp(&g, Some(hi), Some(lo)).unwrap().cpu().unwrap();
    let got = values(&y);
    assert!(got[3].is_nan(), "NaN propagates");
    assert!(got.iter().enumerate().all(|(i, &v)| i == 3 || v == -1.5), "min > max gives max everywhere");
    // A bound outside an integer dtype converts as on the CPU (hardtanh of uint8 clamps by -1).
    let u = Tensor::from_vec(vec![0u8, 1, 2, 5, 9, 200], &[6]).unwrap();
    let gu = u.cuda_on(0).unwrap();
    let (lo, hi) = (Scalar::Int(-1), Scalar::Int(1));
    assert_on_device_eq(
        &ops::clamp(&gu, Some(lo), Some(hi)).unwrap(),
        &ops::clamp(&u, Some(lo), Some(hi)).unwrap(),
        "uint8 clamp",
    );
    assert_on_device_eq(&ops::hardtanh(&gu, lo, hi).unwrap(), &ops::hardtanh(&u, lo, hi).unwrap(), "uint8 hardtanh");
}

/// Note [Convolution on a device]: 1-d, 2-d and 3-d convolutions, plain and transposed, with
/// groups, strides, padding, dilation, output padding and bias, and the weight gradient, run on
/// the device (no copy to the host) and match the CPU; integer inputs are an error, as on
/// PyTorch's CUDA.
#[test]
fn convolutions_run_on_the_device_and_match_the_cpu() {
    setup();
    let copied = kernels_cuda::emu::host_bytes_copied;
    // (input, weight, stride, padding, dilation, transposed, output_padding, groups)
    type Case =
        (&'static [i64], &'static [i64], &'static [i64], &'static [i64], &'static [i64], bool, &'static [i64], i64);
    let cases: [Case; 7] = [
        (&[2, 3, 9], &[4, 3, 3], &[2], &[1], &[1], false, &[0], 1),
        (&[2, 4, 7, 6], &[6, 2, 3, 2], &[1, 2], &[1, 0], &[2, 1], false, &[0, 0], 2),
        (&[3, 2, 5, 5], &[4, 2, 1, 1], &[1, 1], &[0, 0], &[1, 1], false, &[0, 0], 1),
        (&[1, 2, 4, 5, 4], &[3, 2, 2, 3, 2], &[1, 2, 1], &[1, 1, 0], &[1, 1, 2], false, &[0, 0, 0], 1),
        (&[2, 4, 5], &[4, 3, 3], &[2], &[1], &[1], true, &[1], 2),
        (&[2, 3, 4, 3], &[3, 2, 3, 2], &[2, 1], &[1, 0], &[1, 2], true, &[1, 0], 1),
        (&[1, 2, 3, 3, 2], &[2, 2, 2, 2, 2], &[2, 1, 1], &[0, 1, 0], &[1, 1, 1], true, &[0, 0, 0], 1),
    ];
    for (dt, rel) in [(ScalarType::F32, 1e-4), (ScalarType::F64, 1e-10), (ScalarType::F16, 1e-2)] {
        for (i, &(is, ws, stride, padding, dilation, transposed, output_padding, groups)) in cases.iter().enumerate() {
            let (x, w) = (sample(is, dt, i as i64), sample(ws, dt, 3 + i as i64));
            let cout = if transposed { ws[1] * groups } else { ws[0] };
            let b = sample(&[cout], dt, 5);
            let (gx, gw, gb) = (x.cuda_on(0).unwrap(), w.cuda_on(0).unwrap(), b.cuda_on(0).unwrap());
            let what = format!("{dt} case {i}");
            let before = copied();
            let got =
                ops::convolution(&gx, &gw, Some(&gb), stride, padding, dilation, transposed, output_padding, groups)
                    .unwrap();
            assert_eq!(copied(), before, "{what}: copied to the host");
            assert_eq!(got.device(), GPU, "{what}");
            let want =
                ops::convolution(&x, &w, Some(&b), stride, padding, dilation, transposed, output_padding, groups)
                    .unwrap();
            assert_close(&got.cpu().unwrap(), &want, rel, &what);
            let unbiased =
                ops::convolution(&gx, &gw, None, stride, padding, dilation, transposed, output_padding, groups)
                    .unwrap();
            let want =
                ops::convolution(&x, &w, None, stride, padding, dilation, transposed, output_padding, groups).unwrap();
            assert_close(&unbiased.cpu().unwrap(), &want, rel, &format!("{what} without bias"));
            if !transposed {
                let gy = sample(want.sizes(), dt, 11);
                let before = copied();
                let got = ops::_convolution_weight_backward(
                    &gy.cuda_on(0).unwrap(),
                    &gx,
                    ws,
                    stride,
                    padding,
                    dilation,
                    groups,
                )
                .unwrap();
                assert_eq!(copied(), before, "{what}: weight gradient copied to the host");
                let want = ops::_convolution_weight_backward(&gy, &x, ws, stride, padding, dilation, groups).unwrap();
                assert_close(&got.cpu().unwrap(), &want, rel, &format!("{what} weight gradient"));
            }
        }
    }
    // A batch larger than one column block (2^22 elements, 2 of these images): the images are
    // unfolded a range at a time.
    let (x, w) = (sample(&[3, 32, 48, 48], ScalarType::F32, 1), sample(&[4, 32, 5, 5], ScalarType::F32, 2));
    let got = ops::convolution(
        &x.cuda_on(0).unwrap(),
        &w.cuda_on(0).unwrap(),
        None,
        &[1, 1],
        &[2, 2],
        &[1, 1],
        false,
        &[0, 0],
        1,
    )
    .unwrap();
    let want = ops::convolution(&x, &w, None, &[1, 1], &[2, 2], &[1, 1], false, &[0, 0], 1).unwrap();
    assert_close(&got.cpu().unwrap(), &want, 1e-4, "blocked batch");
    let xi = sample(&[1, 1, 4], ScalarType::I64, 1).cuda_on(0).unwrap();
    let wi = sample(&[1, 1, 2], ScalarType::I64, 1).cuda_on(0).unwrap();
    let err = ops::convolution(&xi, &wi, None, &[1], &[0], &[1], false, &[0], 1).unwrap_err();
    assert!(matches!(err, Error::UnsupportedDtype { dtype: ScalarType::I64, .. }), "{err}");
}

type Activation = Box<dyn Fn(&Tensor) -> c10::Result<Tensor>>;

/// `atan2`, `pow` (tensor and scalar exponents, integers too), `fmod`, `remainder`, `lerp` and
/// the parameterised activations run on the device with broadcasting and match the CPU; an
/// integer zero divisor and an integer base to a negative Scalar power are errors there too.
#[test]
fn binary_functions_and_parameterised_activations_match_the_cpu() {
    setup();
    for dt in [ScalarType::F32, ScalarType::F64, ScalarType::I64] {
        let a = sample(&[4, 3], dt, 2);
        let b = ops::add(
            &ops::abs(&sample(&[3], dt, 5)).unwrap(),
            &Tensor::from_vec(vec![1i64], &[]).unwrap(),
            Scalar::Int(1),
        )
        .unwrap();
        let b = ops::_to_copy(&b, Some(dt), None, None, None, false, None).unwrap();
        let (ga, gb) = (a.cuda_on(0).unwrap(), b.cuda_on(0).unwrap());
        let rel = if dt == ScalarType::F32 { 1e-5 } else { 1e-13 };
        let binaries: [(&str, Binary); 4] =
            [("atan2", ops::atan2), ("pow", ops::pow), ("fmod", ops::fmod), ("remainder", ops::remainder)];
        for (name, f) in binaries {
            let what = format!("{name}({dt})");
            let (w, g) = (f(&a, &b).unwrap(), f(&ga, &gb).unwrap());
            assert_eq!(g.device(), GPU, "{what}");
            assert_close(&g.cpu().unwrap(), &w, rel, &what);
        }
        let (w, g) =
            (ops::pow_tensor_scalar(&a, Scalar::Int(3)).unwrap(), ops::pow_tensor_scalar(&ga, Scalar::Int(3)).unwrap());
        assert_close(&g.cpu().unwrap(), &w, rel, &format!("pow scalar ({dt})"));
        if dt == ScalarType::I64 {
            let zero = ops::zeros(&[3], Some(dt), None, Some(GPU), None).unwrap();
            assert!(ops::fmod(&ga, &zero).is_err(), "an integer zero divisor");
            assert!(ops::pow_tensor_scalar(&ga, Scalar::Int(-1)).is_err(), "a negative integer power");
            assert!(ops::lerp(&ga, &gb, Scalar::Float(0.5)).is_err(), "lerp refuses integers");
            continue;
        }
        for w in [0.25, 0.75] {
            let what = format!("lerp {w} ({dt})");
            let (c, g) = (ops::lerp(&a, &b, Scalar::Float(w)).unwrap(), ops::lerp(&ga, &gb, Scalar::Float(w)).unwrap());
            assert_close(&g.cpu().unwrap(), &c, rel, &what);
        }
        let acts: [(&str, Activation); 8] = [
            ("leaky_relu", Box::new(|t| ops::leaky_relu(t, Scalar::Float(0.1)))),
            ("hardtanh", Box::new(|t| ops::hardtanh(t, Scalar::Float(-1.5), Scalar::Float(2.0)))),
            ("elu", Box::new(|t| ops::elu(t, Scalar::Float(1.2), Scalar::Float(1.0), Scalar::Float(0.5)))),
            ("softplus", Box::new(|t| ops::softplus(t, Scalar::Float(2.0), Scalar::Float(5.0)))),
            ("gelu", Box::new(|t| ops::gelu(t, "none"))),
            ("gelu tanh", Box::new(|t| ops::gelu(t, "tanh"))),
            ("logit", Box::new(|t| ops::logit(&ops::sigmoid(t)?, None))),
            ("logit eps", Box::new(|t| ops::logit(&ops::sigmoid(t)?, Some(0.3)))),
        ];
        for (name, f) in &acts {
            let what = format!("{name}({dt})");
            let (w, g) = (f(&a).unwrap(), f(&ga).unwrap());
            assert_eq!(g.device(), GPU, "{what}");
            assert_close(&g.cpu().unwrap(), &w, if dt == ScalarType::F32 { 1e-4 } else { 1e-12 }, &what);
        }
    }
}

/// Selection, masks, logical operators, predicates, `addcmul`/`addcdiv`, rounded division,
/// the reductions composed on the device (Note [Reductions composed on a device]: `all`, `any`,
/// `var`, `std`, `logsumexp`), the scans, `tril`/`triu` and `dot` run on the device with no copy
/// to the host (except integer division's one-flag zero check) and match the CPU; integer
/// division by zero is the CPU's error.
#[test]
fn selection_logic_scans_and_composed_reductions_run_on_the_device() {
    setup();
    let copied = kernels_cuda::emu::host_bytes_copied;
    let mut v = values(&sample(&[4, 6], ScalarType::F64, 5));
    v[2] = f64::NAN;
    v[7] = f64::INFINITY;
    v[11] = f64::NEG_INFINITY;
    let special = Tensor::from_vec(v, &[4, 6]).unwrap();
    for dtype in [ScalarType::F32, ScalarType::F64, ScalarType::F16, ScalarType::I64, ScalarType::U8, ScalarType::Bool]
    {
        let x = sample(&[4, 6], dtype, 3);
        let y = sample(&[6], dtype, 8);
        let c = ops::gt_scalar(&sample(&[4, 1], ScalarType::F32, 1), Scalar::Float(0.0)).unwrap();
        let s = if dtype.is_floating_point() {
            ops::_to_copy(&special, Some(dtype), None, None, None, false, None).unwrap()
        } else {
            x.clone()
        };
        let (gx, gy, gc, gs) =
            (x.cuda_on(0).unwrap(), y.cuda_on(0).unwrap(), c.cuda_on(0).unwrap(), s.cuda_on(0).unwrap());
        type Case<'a> = (&'a str, Box<dyn Fn(&Tensor, &Tensor, &Tensor) -> c10::Result<Tensor> + 'a>, f64);
        let mut cases: Vec<Case> = vec![
            ("where", Box::new(|x, y, c| ops::where_self(c, x, y)), 0.0),
            ("masked_fill", Box::new(|x, _, c| ops::masked_fill(x, c, Scalar::Int(3))), 0.0),
            ("logical_and", Box::new(|x, y, _| ops::logical_and(x, y)), 0.0),
            ("logical_or", Box::new(|x, y, _| ops::logical_or(x, y)), 0.0),
            ("logical_xor", Box::new(|x, y, _| ops::logical_xor(x, y)), 0.0),
            ("logical_not", Box::new(|x, _, _| ops::logical_not(x)), 0.0),
            ("all", Box::new(|x, _, _| ops::all(x)), 0.0),
            ("any.dim", Box::new(|x, _, _| ops::any_dim(x, 1, true)), 0.0),
            ("all.dim", Box::new(|x, _, _| ops::all_dim(x, 0, false)), 0.0),
            ("tril", Box::new(|x, _, _| ops::tril(x, 1)), 0.0),
            ("triu", Box::new(|x, _, _| ops::triu(x, -1)), 0.0),
        ];
        if dtype != ScalarType::Bool {
            let tol = if dtype == ScalarType::F16 { 2e-3 } else { 1e-5 };
            cases.push(("addcmul", Box::new(|x, y, _| ops::addcmul(x, y, x, Scalar::Int(2))), tol));
            cases.push(("cumsum", Box::new(|x, _, _| ops::cumsum(x, 1, None)), tol));
            cases.push(("cumprod", Box::new(|x, _, _| ops::cumprod(x, 0, None)), tol));
        }
        if dtype.is_floating_point() {
            let tol = if dtype == ScalarType::F16 { 2e-3 } else { 1e-5 };
            cases.push(("addcdiv", Box::new(|x, y, _| ops::addcdiv(x, x, y, Scalar::Float(0.5))), tol));
            cases.push(("div floor", Box::new(|x, y, _| ops::div_tensor_mode(x, y, Some("floor"))), tol));
            cases.push(("div trunc", Box::new(|x, y, _| ops::div_tensor_mode(x, y, Some("trunc"))), tol));
            cases.push(("var", Box::new(|x, _, _| ops::var(x, Some(&[1]), None, false)), tol));
            cases.push(("std", Box::new(|x, _, _| ops::std(x, Some(&[0, 1]), Some(Scalar::Int(0)), true)), tol));
            cases.push(("logsumexp", Box::new(|x, _, _| ops::logsumexp(x, &[1], false)), tol));
        }
        for (what, f, tol) in &cases {
            let got = f(&gx, &gy, &gc).unwrap();
            assert_eq!(got.device(), GPU, "{what} {dtype}: device");
            assert_close(&got.cpu().unwrap(), &f(&x, &y, &c).unwrap(), *tol, &format!("{what} {dtype}"));
        }
        // NaN, infinities: the predicates, the reductions and the masks on special values.
        type Unary = (&'static str, fn(&Tensor) -> c10::Result<Tensor>);
        let unaries: [Unary; 8] = [
            ("isnan", ops::isnan),
            ("isinf", ops::isinf),
            ("isfinite", ops::isfinite),
            ("isposinf", ops::isposinf),
            ("isneginf", ops::isneginf),
            ("logical_not", ops::logical_not),
            ("any", ops::any),
            ("cumsum", |t| ops::cumsum(t, 0, Some(ScalarType::F64))),
        ];
        for (what, f) in unaries {
            let got = f(&gs).unwrap();
            assert_eq!(got.device(), GPU, "{what} {dtype}: device");
            assert_close(&got.cpu().unwrap(), &f(&s).unwrap(), 0.0, &format!("{what} {dtype} on special values"));
        }
        if dtype.is_floating_point() {
            let lse = |t: &Tensor| ops::logsumexp(t, &[0], true);
            assert_close(
                &lse(&gs).unwrap().cpu().unwrap(),
                &lse(&s).unwrap(),
                2e-3,
                &format!("logsumexp {dtype} with inf"),
            );
        }
    }
    // Nothing is copied to the host while computing (results stay on the device).
    let g = sample(&[5, 7], ScalarType::F32, 4).cuda_on(0).unwrap();
    let before = copied();
    let outs = [
        ops::where_self(&ops::gt_scalar(&g, Scalar::Int(0)).unwrap(), &g, &ops::neg(&g).unwrap()).unwrap(),
        ops::var(&g, Some(&[0]), None, true).unwrap(),
        ops::logsumexp(&g, &[1], false).unwrap(),
        ops::_to_copy(&ops::any_dim(&g, 1, false).unwrap(), Some(ScalarType::F32), None, None, None, false, None)
            .unwrap(),
        ops::cumsum(&g, 1, None).unwrap(),
        ops::tril(&g, 0).unwrap(),
        ops::dot(&ops::select(&g, 0, 1).unwrap(), &ops::select(&g, 0, 2).unwrap()).unwrap(),
        ops::addcdiv(&g, &g, &ops::add_scalar(&g, Scalar::Int(10), Scalar::Int(1)).unwrap(), Scalar::Int(1)).unwrap(),
    ];
    assert_eq!(copied(), before, "computing on the device copied to the host");
    assert!(outs.iter().all(|t| t.device() == GPU));
    let x = sample(&[7], ScalarType::F64, 2);
    let y = sample(&[7], ScalarType::F64, 6);
    assert_close(
        &ops::dot(&x.cuda_on(0).unwrap(), &y.cuda_on(0).unwrap()).unwrap().cpu().unwrap(),
        &ops::dot(&x, &y).unwrap(),
        1e-12,
        "dot",
    );
    // Integer division by zero is an error on the device too; by nonzero it matches the CPU.
    let a = Tensor::from_vec(vec![7i64, -7, 7, -7, 0], &[5]).unwrap();
    let b = Tensor::from_vec(vec![2i64, 2, -2, -2, 3], &[5]).unwrap();
    let z = Tensor::from_vec(vec![2i64, 0, 1, 1, 1], &[5]).unwrap();
    let (ga, gb, gz) = (a.cuda_on(0).unwrap(), b.cuda_on(0).unwrap(), z.cuda_on(0).unwrap());
    for mode in ["floor", "trunc"] {
        assert_on_device_eq(
            &ops::div_tensor_mode(&ga, &gb, Some(mode)).unwrap(),
            &ops::div_tensor_mode(&a, &b, Some(mode)).unwrap(),
            mode,
        );
        let e = ops::div_tensor_mode(&ga, &gz, Some(mode)).unwrap_err();
        assert!(e.to_string().contains("ZeroDivisionError"), "{mode}: {e}");
    }
}

/// Note [Gather and scatter on a device]: `gather`, `scatter` (source and value, duplicate
/// positions keeping the last index's value, as the CPU), `scatter_add` (duplicates summed),
/// `topk` and `nonzero` run on the device and match the CPU; an index out of range is the CPU's error, and
/// `reduce='multiply'` is refused as having no CUDA kernel.
#[test]
fn gathers_and_scatters_along_a_dim_run_on_the_device() {
    setup();
    for dtype in [ScalarType::F32, ScalarType::F64, ScalarType::F16] {
        let x = sample(&[3, 5, 4], dtype, 2);
        let src = sample(&[3, 5, 4], dtype, 7);
        let g = x.cuda_on(0).unwrap();
        let gs = src.cuda_on(0).unwrap();
        // Repeated positions along every dim, an index smaller than self outside `dim`.
        for (dim, idx) in [
            (0i64, vec![2i64, 0, 2, 1, 1, 0, 0, 2, 2, 1, 0, 0]),
            (1, vec![4, 4, 0, 3, 1, 1, 2, 0, 3, 3, 4, 0]),
            (2, vec![3, 0, 0, 1, 2, 3, 3, 3, 1, 0, 2, 2]),
        ] {
            let index = Tensor::from_vec(idx, &[2, 3, 2]).unwrap();
            let gi = index.cuda_on(0).unwrap();
            let what = |op: &str| format!("{op} dim {dim} {dtype}");
            assert_on_device_eq(
                &ops::gather(&g, dim, &gi, false).unwrap(),
                &ops::gather(&x, dim, &index, false).unwrap(),
                &what("gather"),
            );
            assert_on_device_eq(
                &ops::scatter(&g, dim, &gi, &gs).unwrap(),
                &ops::scatter(&x, dim, &index, &src).unwrap(),
                &what("scatter"),
            );
            let v = Scalar::Float(-2.5);
            assert_on_device_eq(
                &ops::scatter_value(&g, dim, &gi, v).unwrap(),
                &ops::scatter_value(&x, dim, &index, v).unwrap(),
                &what("scatter.value"),
            );
            let got = ops::scatter_add(&g, dim, &gi, &gs).unwrap();
            assert_eq!(got.device(), GPU);
            let tol = if dtype == ScalarType::F16 { 1e-3 } else { 1e-6 };
            assert_close(
                &got.cpu().unwrap(),
                &ops::scatter_add(&x, dim, &index, &src).unwrap(),
                tol,
                &what("scatter_add"),
            );
            let e = ops::scatter_reduce(&g, dim, &gi, &gs, "multiply").unwrap_err().to_string();
            assert!(e.contains("no cuda kernel"), "{e}");
        }
        let (v, i) = ops::topk(&g, 3, 1, true, true).unwrap();
        let (cv, ci) = ops::topk(&x, 3, 1, true, true).unwrap();
        assert_on_device_eq(&v, &cv, &format!("topk values {dtype}"));
        assert_on_device_eq(&i, &ci, &format!("topk indices {dtype}"));
    }
    // nonzero: every dtype's zeros (NaN counts as nonzero), ranks 0 to 3, none at all.
    let mut v = values(&sample(&[2, 3, 4], ScalarType::F64, 4));
    v[5] = f64::NAN;
    let special = Tensor::from_vec(v, &[2, 3, 4]).unwrap();
    for dtype in [ScalarType::F32, ScalarType::F16, ScalarType::I64, ScalarType::U8, ScalarType::Bool] {
        let x = ops::_to_copy(&special, Some(dtype), None, None, None, false, None).unwrap();
        for t in [
            x.clone(),
            ops::select(&x, 0, 1).unwrap(),
            ops::reshape(&x, &[-1]).unwrap(),
            ops::zeros_like(&x, None, None, None, None, None).unwrap(),
        ] {
            let got = ops::nonzero(&t.cuda_on(0).unwrap()).unwrap();
            assert_on_device_eq(&got, &ops::nonzero(&t).unwrap(), &format!("nonzero {dtype} {:?}", t.sizes()));
        }
    }
    for s in [1.0f32, 0.0] {
        let t = Tensor::from_vec(vec![s], &[]).unwrap();
        assert_on_device_eq(&ops::nonzero(&t.cuda_on(0).unwrap()).unwrap(), &ops::nonzero(&t).unwrap(), "nonzero 0-d");
    }
    let g = sample(&[3, 4], ScalarType::F32, 1).cuda_on(0).unwrap();
    let bad = Tensor::from_vec(vec![0i64, 4], &[1, 2]).unwrap().cuda_on(0).unwrap();
    let cpu = ops::gather(&sample(&[3, 4], ScalarType::F32, 1), 1, &bad.cpu().unwrap(), false).unwrap_err();
    let dev = ops::gather(&g, 1, &bad, false).unwrap_err();
    assert_eq!(dev.to_string(), cpu.to_string());
    assert!(ops::scatter_add(&g, 0, &bad, &g).is_err());
    // The tensor is intact after the errors.
    assert_close(&g.cpu().unwrap(), &sample(&[3, 4], ScalarType::F32, 1), 0.0, "intact");
}

/// Note [Pointwise losses on a device], Note [Normalisation on a device], the class losses and
/// attention: computed on the device from its operators (no copy to the host except the target
/// range check) and equal to the CPU within the rounding of float32 steps.
#[test]
fn losses_normalisation_and_attention_run_on_the_device() {
    setup();
    let copied = kernels_cuda::emu::host_bytes_copied;
    for dtype in [ScalarType::F32, ScalarType::F64, ScalarType::F16] {
        let tol = if dtype == ScalarType::F16 {
            4e-3
        } else if dtype == ScalarType::F32 {
            2e-5
        } else {
            1e-12
        };
        let x = sample(&[4, 6, 3], dtype, 3);
        let y = ops::mul_scalar(&sample(&[4, 6, 3], dtype, 11), Scalar::Float(0.25)).unwrap();
        let w = ops::add_scalar(&sample(&[6], dtype, 5), Scalar::Int(5), Scalar::Int(1)).unwrap();
        let b = sample(&[6], dtype, 9);
        let (gx, gy, gw, gb) =
            (x.cuda_on(0).unwrap(), y.cuda_on(0).unwrap(), w.cuda_on(0).unwrap(), b.cuda_on(0).unwrap());
        type Case<'a> = (String, Box<dyn Fn(&[&Tensor]) -> c10::Result<Tensor> + 'a>);
        let mut cases: Vec<Case> = Vec::new();
        for r in [0, 1, 2] {
            cases.push((format!("mse {r}"), Box::new(move |t| ops::mse_loss(t[0], t[1], r))));
            cases.push((format!("smooth_l1 {r}"), Box::new(move |t| ops::smooth_l1_loss(t[0], t[1], r, 0.75))));
            cases.push((format!("huber {r}"), Box::new(move |t| ops::huber_loss(t[0], t[1], r, 1.5))));
            cases.push((format!("kl_div {r}"), Box::new(move |t| ops::kl_div(t[0], &ops::abs(t[1])?, r, false))));
            cases.push((format!("kl_div log {r}"), Box::new(move |t| ops::kl_div(t[0], t[1], r, true))));
            cases.push((
                format!("bce_with_logits {r}"),
                Box::new(move |t| {
                    let target = ops::sigmoid(t[1])?;
                    let pw = ops::reshape(&ops::abs(t[2])?, &[6, 1])?;
                    ops::binary_cross_entropy_with_logits(t[0], &target, None, Some(&pw), r)
                }),
            ));
        }
        cases.push(("log_sigmoid".into(), Box::new(|t| ops::log_sigmoid(t[0]))));
        cases.push(("layer_norm".into(), Box::new(|t| Ok(ops::native_layer_norm(t[0], &[3], None, None, 1e-5)?.1))));
        cases.push((
            "layer_norm affine".into(),
            Box::new(|t| {
                let w = ops::reshape(&ops::narrow(t[2], 0, 0, 3)?, &[3])?;
                Ok(ops::native_layer_norm(t[0], &[3], Some(&w), Some(&ops::narrow(t[3], 0, 0, 3)?), 1e-5)?.0)
            }),
        ));
        cases.push((
            "group_norm".into(),
            Box::new(|t| Ok(ops::native_group_norm(t[0], Some(t[2]), Some(t[3]), 4, 6, 3, 3, 1e-5)?.0)),
        ));
        cases.push((
            "group_norm rstd".into(),
            Box::new(|t| Ok(ops::native_group_norm(t[0], None, None, 4, 6, 3, 2, 1e-5)?.2)),
        ));
        cases.push((
            "batch_norm eval".into(),
            Box::new(|t| {
                let rv = ops::abs(t[2])?;
                Ok(ops::native_batch_norm(t[0], Some(t[2]), Some(t[3]), Some(t[3]), Some(&rv), false, 0.1, 1e-5)?.0)
            }),
        ));
        for (what, f) in &cases {
            let got = f(&[&gx, &gy, &gw, &gb]).unwrap();
            assert_eq!(got.device(), GPU, "{what} {dtype}: device");
            assert_close(&got.cpu().unwrap(), &f(&[&x, &y, &w, &b]).unwrap(), tol, &format!("{what} {dtype}"));
        }
        // Training batch norm: output, saved statistics and the running statistics it updates.
        let (rm, rv) = (sample(&[6], dtype, 1), ops::abs(&sample(&[6], dtype, 4)).unwrap());
        let (grm, grv) = (rm.cuda_on(0).unwrap(), rv.cuda_on(0).unwrap());
        let cpu = ops::native_batch_norm(&x, Some(&w), Some(&b), Some(&rm), Some(&rv), true, 0.2, 1e-5).unwrap();
        let dev = ops::native_batch_norm(&gx, Some(&gw), Some(&gb), Some(&grm), Some(&grv), true, 0.2, 1e-5).unwrap();
        for (k, (d, c)) in
            [(&dev.0, &cpu.0), (&dev.1, &cpu.1), (&dev.2, &cpu.2), (&grm, &rm), (&grv, &rv)].into_iter().enumerate()
        {
            assert_eq!(d.device(), GPU);
            assert_close(&d.cpu().unwrap(), c, tol, &format!("batch_norm training output {k} {dtype}"));
        }
        // Class losses: index targets (ignored ones, weights, smoothing, spatial) and
        // probability targets; then attention with causal and boolean masks.
        let logits = sample(&[5, 4], dtype, 6);
        let target = Tensor::from_vec(vec![1i64, 3, -100, 0, 3], &[5]).unwrap();
        let cw = ops::narrow(&w, 0, 0, 4).unwrap();
        let (gl, gt, gcw) = (logits.cuda_on(0).unwrap(), target.cuda_on(0).unwrap(), cw.cuda_on(0).unwrap());
        for r in [0, 1, 2] {
            for ls in [0.0, 0.2] {
                let ce = |l: &Tensor, t: &Tensor, w: &Tensor| ops::cross_entropy_loss(l, t, Some(w), r, -100, ls);
                let got = ce(&gl, &gt, &gcw).unwrap();
                assert_eq!(got.device(), GPU);
                assert_close(
                    &got.cpu().unwrap(),
                    &ce(&logits, &target, &cw).unwrap(),
                    tol,
                    &format!("cross_entropy {r} {ls} {dtype}"),
                );
            }
            let probs = ops::softmax(&sample(&[5, 4], dtype, 2), 1, None).unwrap();
            let ce = |l: &Tensor, p: &Tensor| ops::cross_entropy_loss(l, p, None, r, -100, 0.1);
            let got = ce(&gl, &probs.cuda_on(0).unwrap()).unwrap();
            assert_close(
                &got.cpu().unwrap(),
                &ce(&logits, &probs).unwrap(),
                tol,
                &format!("cross_entropy probs {r} {dtype}"),
            );
            let nll = |l: &Tensor, t: &Tensor| ops::nll_loss(l, t, None, r, -100);
            let got = nll(&gl, &gt).unwrap();
            assert_close(&got.cpu().unwrap(), &nll(&logits, &target).unwrap(), tol, &format!("nll_loss {r} {dtype}"));
        }
        // Probability targets refuse `ignore_index` and a wrong weight with the CPU's errors.
        let probs = ops::softmax(&logits, 1, None).unwrap();
        let gp = probs.cuda_on(0).unwrap();
        let short = ops::narrow(&w, 0, 0, 3).unwrap();
        let gshort = short.cuda_on(0).unwrap();
        for (what, dev, cpu) in [
            (
                "ignore_index",
                ops::cross_entropy_loss(&gl, &gp, None, 1, 0, 0.0),
                ops::cross_entropy_loss(&logits, &probs, None, 1, 0, 0.0),
            ),
            (
                "weight",
                ops::cross_entropy_loss(&gl, &gp, Some(&gshort), 1, -100, 0.0),
                ops::cross_entropy_loss(&logits, &probs, Some(&short), 1, -100, 0.0),
            ),
        ] {
            assert_eq!(dev.unwrap_err().to_string(), cpu.unwrap_err().to_string(), "{what} {dtype}");
        }
        let spatial = sample(&[2, 3, 2, 2], dtype, 8);
        let st = Tensor::from_vec(vec![0i64, 2, 1, 1, 2, 0, 0, 1], &[2, 2, 2]).unwrap();
        let ce = |l: &Tensor, t: &Tensor| ops::cross_entropy_loss(l, t, None, 1, -100, 0.0);
        let got = ce(&spatial.cuda_on(0).unwrap(), &st.cuda_on(0).unwrap()).unwrap();
        assert_close(&got.cpu().unwrap(), &ce(&spatial, &st).unwrap(), tol, &format!("cross_entropy spatial {dtype}"));
        let bad = Tensor::from_vec(vec![1i64, 4, 0, 0, 0], &[5]).unwrap().cuda_on(0).unwrap();
        let e = ops::nll_loss(&gl, &bad, None, 1, -100).unwrap_err().to_string();
        assert!(e.contains("Target 4 is out of bounds."), "{e}");
        let (q, k, v) = (sample(&[2, 3, 4], dtype, 1), sample(&[2, 5, 4], dtype, 2), sample(&[2, 5, 3], dtype, 3));
        let (gq, gk, gv) = (q.cuda_on(0).unwrap(), k.cuda_on(0).unwrap(), v.cuda_on(0).unwrap());
        let mut mask_v = vec![true; 15];
        mask_v[3..5].iter_mut().for_each(|m| *m = false);
        mask_v[5..10].iter_mut().for_each(|m| *m = false);
        let mask = Tensor::from_vec(mask_v, &[3, 5]).unwrap();
        let gm = mask.cuda_on(0).unwrap();
        let before = copied();
        let causal = ops::scaled_dot_product_attention(&gq, &gk, &gv, None, 0.0, true, None, false).unwrap();
        let masked = ops::scaled_dot_product_attention(&gq, &gk, &gv, Some(&gm), 0.0, false, Some(0.3), false).unwrap();
        assert_eq!(copied(), before, "attention copied to the host");
        let sdpa = |m: Option<&Tensor>, c: bool, s: Option<f64>| {
            ops::scaled_dot_product_attention(&q, &k, &v, m, 0.0, c, s, false).unwrap()
        };
        assert_close(&causal.cpu().unwrap(), &sdpa(None, true, None), tol, &format!("sdpa causal {dtype}"));
        // Row 1 of the mask allows nothing: zeros, as PyTorch's safe softmax.
        assert_close(
            &masked.cpu().unwrap(),
            &sdpa(Some(&mask), false, Some(0.3)),
            tol,
            &format!("sdpa masked {dtype}"),
        );
    }
}

/// Pooling (max with indices, average with every divisor rule, adaptive, 1-d to 3-d, strides,
/// padding, dilation and ceil mode), max pooling's backward and nearest upsampling
/// run on the device and equal the CPU's results; maxima and their indices exactly, with NaN
/// and ties in the windows. No call copies anything from the device to the host.
#[test]
fn pooling_and_upsampling_run_on_the_device_and_match_the_cpu() {
    setup();
    let copied = kernels_cuda::emu::host_bytes_copied;
    for dtype in [ScalarType::F32, ScalarType::F64, ScalarType::F16] {
        let tol = if dtype == ScalarType::F16 { 4e-3 } else { 1e-6 };
        let x2 = sample(&[2, 3, 7, 6], dtype, 2);
        // A NaN in one window (the CPU keeps it and its index).
        let x2 = ops::index_put(
            &x2,
            &[Some(Tensor::from_vec(vec![1i64], &[1]).unwrap()), None, None, None],
            &ops::full(&[1], Scalar::Float(f64::NAN), Some(dtype), None, None, None).unwrap(),
            false,
        )
        .unwrap();
        let x1 = sample(&[2, 3, 11], dtype, 5);
        let x3 = sample(&[1, 2, 5, 4, 6], dtype, 7);
        let (g1, g2, g3) = (x1.cuda_on(0).unwrap(), x2.cuda_on(0).unwrap(), x3.cuda_on(0).unwrap());
        // (what, values, indices) on both devices.
        type Pool<'a> = (String, Box<dyn Fn(&Tensor, &Tensor, &Tensor) -> c10::Result<(Tensor, Option<Tensor>)> + 'a>);
        let mut cases: Vec<Pool> = Vec::new();
        for (k, s, p, d, ceil) in [
            ([2, 2], [2, 2], [0, 0], [1, 1], false),
            ([3, 2], [2, 1], [1, 1], [1, 2], true),
            ([3, 3], [1, 2], [1, 0], [2, 1], false),
        ] {
            cases.push((
                format!("max_pool2d {k:?} {s:?} {p:?} {d:?} {ceil}"),
                Box::new(move |_, x, _| {
                    let (v, i) = ops::max_pool2d_with_indices(x, &k, &s, &p, &d, ceil)?;
                    Ok((v, Some(i)))
                }),
            ));
            for (pad, div) in [(true, None), (false, None), (false, Some(-4))] {
                cases.push((
                    format!("avg_pool2d {k:?} {s:?} {p:?} {ceil} {pad} {div:?}"),
                    Box::new(move |_, x, _| Ok((ops::avg_pool2d(x, &k, &s, &p, ceil, pad, div)?, None))),
                ));
            }
        }
        cases.push((
            "max_pool1d".into(),
            Box::new(|x, _, _| Ok((ops::max_pool1d(x, &[3], &[2], &[1], &[2], true)?, None))),
        ));
        cases.push((
            "max_pool3d".into(),
            Box::new(|_, _, x| {
                let (v, i) = ops::max_pool3d_with_indices(x, &[2, 3, 2], &[1, 2, 2], &[1, 1, 0], &[2, 1, 1], false)?;
                Ok((v, Some(i)))
            }),
        ));
        cases.push((
            "avg_pool3d".into(),
            Box::new(|_, _, x| Ok((ops::avg_pool3d(x, &[2, 2, 3], &[2, 1, 2], &[1, 0, 1], true, false, None)?, None))),
        ));
        for o in [[1, 1], [3, 4], [5, 2], [7, 6]] {
            cases.push((
                format!("adaptive_avg_pool2d {o:?}"),
                Box::new(move |_, x, _| Ok((ops::adaptive_avg_pool2d(x, &o)?, None))),
            ));
            cases.push((
                format!("adaptive_max_pool2d {o:?}"),
                Box::new(move |_, x, _| {
                    let (v, i) = ops::adaptive_max_pool2d(x, &o)?;
                    Ok((v, Some(i)))
                }),
            ));
        }
        cases.push((
            "adaptive_avg_pool3d".into(),
            Box::new(|_, _, x| Ok((ops::adaptive_avg_pool3d(x, &[3, 2, 4])?, None))),
        ));
        cases.push((
            "upsample_nearest2d size".into(),
            Box::new(|_, x, _| Ok((ops::upsample_nearest2d(x, Some(&[10, 13]), None)?, None))),
        ));
        cases.push((
            "upsample_nearest2d scale".into(),
            Box::new(|_, x, _| Ok((ops::upsample_nearest2d(x, None, Some(&[2.0, 0.5]))?, None))),
        ));
        cases.push((
            "upsample_nearest1d".into(),
            Box::new(|x, _, _| Ok((ops::upsample_nearest1d(x, Some(&[17]), None)?, None))),
        ));
        cases.push((
            "upsample_nearest3d".into(),
            Box::new(|_, _, x| Ok((ops::upsample_nearest3d(x, None, Some(&[1.5, 2.0, 0.5]))?, None))),
        ));
        for (what, f) in &cases {
            let what = format!("{what} {dtype}");
            let at = copied();
            let (v, i) = f(&g1, &g2, &g3).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(copied(), at, "{what}: copied to the host");
            let (cv, ci) = f(&x1, &x2, &x3).unwrap();
            assert_eq!(v.device(), GPU, "{what}: device");
            assert_close(&v.cpu().unwrap(), &cv, if what.contains("avg") { tol } else { 0.0 }, &what);
            if let (Some(i), Some(ci)) = (i, ci) {
                assert_on_device_eq(&i, &ci, &format!("{what} indices"));
            }
        }
        // Max pooling's backward: each gradient added at its maximum's index (windows overlap).
        let (v, i) = ops::max_pool2d_with_indices(&x2, &[3, 2], &[1, 1], &[1, 0], &[1, 1], false).unwrap();
        let (_, gi) = ops::max_pool2d_with_indices(&g2, &[3, 2], &[1, 1], &[1, 0], &[1, 1], false).unwrap();
        let grad = sample(v.sizes(), dtype, 4);
        let back = |g: &Tensor, x: &Tensor, i: &Tensor| {
            ops::max_pool2d_with_indices_backward(g, x, &[3, 2], &[1, 1], &[1, 0], &[1, 1], false, i)
        };
        let got = back(&grad.cuda_on(0).unwrap(), &g2, &gi).unwrap();
        assert_eq!(got.device(), GPU);
        assert_close(&got.cpu().unwrap(), &back(&grad, &x2, &i).unwrap(), tol, &format!("max_pool2d backward {dtype}"));
    }
    // Integer max pooling runs on the device; integer average pooling has no CUDA kernel (as
    // PyTorch's) and says so.
    let xi =
        ops::_to_copy(&sample(&[2, 5, 6], ScalarType::F32, 3), Some(ScalarType::I64), None, None, None, false, None)
            .unwrap();
    let gi = xi.cuda_on(0).unwrap();
    let (v, i) = ops::max_pool2d_with_indices(&gi, &[2, 3], &[2, 1], &[1, 1], &[1, 1], true).unwrap();
    let (cv, ci) = ops::max_pool2d_with_indices(&xi, &[2, 3], &[2, 1], &[1, 1], &[1, 1], true).unwrap();
    assert_on_device_eq(&v, &cv, "max_pool2d int64");
    assert_on_device_eq(&i, &ci, "max_pool2d int64 indices");
    let e = ops::avg_pool2d(&gi, &[2, 2], &[], &[0, 0], false, true, None).unwrap_err();
    assert!(matches!(e, Error::UnsupportedDtype { .. } | Error::NotImplemented { .. }), "{e}");
    // divisor_override=0: the CPU's error.
    let x = sample(&[1, 1, 4, 4], ScalarType::F32, 1);
    let avg0 = |x: &Tensor| ops::avg_pool2d(x, &[2, 2], &[], &[0, 0], false, true, Some(0)).unwrap_err().to_string();
    assert_eq!(avg0(&x.cuda_on(0).unwrap()), avg0(&x));
}

/// `glu`, `prelu` (one weight and one per channel) and `instance_norm` (input statistics with
/// running statistics updated, and running statistics used) run on the device as compositions
/// and match the CPU's kernels.
#[test]
fn glu_prelu_and_instance_norm_run_on_the_device() {
    setup();
    for dtype in [ScalarType::F32, ScalarType::F64] {
        let tol = if dtype == ScalarType::F32 { 2e-5 } else { 1e-12 };
        let x = sample(&[3, 4, 5], dtype, 2);
        let gx = x.cuda_on(0).unwrap();
        let got = ops::glu(&gx, 1).unwrap();
        assert_eq!(got.device(), GPU);
        assert_close(&got.cpu().unwrap(), &ops::glu(&x, 1).unwrap(), tol, &format!("glu {dtype}"));
        for w in [sample(&[1], dtype, 3), sample(&[4], dtype, 5)] {
            let got = ops::prelu(&gx, &w.cuda_on(0).unwrap()).unwrap();
            assert_eq!(got.device(), GPU);
            assert_close(&got.cpu().unwrap(), &ops::prelu(&x, &w).unwrap(), tol, &format!("prelu {dtype}"));
        }
        let (w, b) = (sample(&[4], dtype, 7), sample(&[4], dtype, 8));
        for use_input_stats in [true, false] {
            let (rm, rv) = (sample(&[4], dtype, 1), ops::abs(&sample(&[4], dtype, 4)).unwrap());
            let (grm, grv) = (rm.cuda_on(0).unwrap(), rv.cuda_on(0).unwrap());
            let norm = |x: &Tensor, w: &Tensor, b: &Tensor, rm: &Tensor, rv: &Tensor| {
                ops::instance_norm(x, Some(w), Some(b), Some(rm), Some(rv), use_input_stats, 0.3, 1e-5, false).unwrap()
            };
            let got = norm(&gx, &w.cuda_on(0).unwrap(), &b.cuda_on(0).unwrap(), &grm, &grv);
            let want = norm(&x, &w, &b, &rm, &rv);
            let what = format!("instance_norm {use_input_stats} {dtype}");
            assert_eq!(got.device(), GPU);
            assert_close(&got.cpu().unwrap(), &want, tol, &what);
            assert_close(&grm.cpu().unwrap(), &rm, tol, &format!("{what} running mean"));
            assert_close(&grv.cpu().unwrap(), &rv, tol, &format!("{what} running var"));
        }
    }
}

/// Advanced indexing on the device (Note [Advanced indexing on a device]): integer indices (on
/// the device or on the CPU, negative, broadcast, adjacent or not) and boolean masks read and
/// write `self` on the device, equal to the CPU's loops; `index_put` keeps the last value
/// written to a repeated position, or sums them with `accumulate`; an index out of range is the
/// CPU's error.
#[test]
fn advanced_indexing_runs_on_the_device_and_matches_the_cpu() {
    setup();
    let long = |v: Vec<i64>, shape: &[i64]| Tensor::from_vec(v, shape).unwrap();
    let mask = Tensor::from_vec((0..20).map(|i| i % 3 == 1).collect::<Vec<bool>>(), &[4, 5]).unwrap();
    let cases: Vec<Vec<Option<Tensor>>> = vec![
        vec![Some(long(vec![3, -1, 0, 3], &[2, 2]))],
        vec![None, Some(long(vec![4, 0, -5], &[3]))],
        vec![Some(long(vec![1, 2], &[2, 1])), None, Some(long(vec![0, 2, 1], &[3]))],
        vec![Some(long(vec![0, 3], &[2])), Some(long(vec![1, 1], &[2]))],
        vec![Some(mask.clone())],
    ];
    for dtype in [ScalarType::F32, ScalarType::F64, ScalarType::I64] {
        let x = sample(&[4, 5, 3], dtype, 3);
        let gx = x.cuda_on(0).unwrap();
        for (k, idx) in cases.iter().enumerate() {
            let on_gpu: Vec<Option<Tensor>> = idx.iter().map(|i| i.as_ref().map(|t| t.cuda_on(0).unwrap())).collect();
            let want = ops::index(&x, idx).unwrap();
            for gidx in [&on_gpu, idx] {
                let what = format!("index case {k} {dtype}");
                let got = ops::index(&gx, gidx).unwrap();
                assert_eq!(got.device(), GPU, "{what}");
                assert_close(&got.cpu().unwrap(), &want, 0.0, &what);
            }
            let v = sample(want.sizes(), dtype, 11);
            let accumulates: &[bool] = if dtype.is_floating_point() { &[false, true] } else { &[false] };
            for &acc in accumulates {
                let what = format!("index_put case {k} accumulate={acc} {dtype}");
                let got = ops::index_put(&gx, &on_gpu, &v.cuda_on(0).unwrap(), acc).unwrap();
                assert_eq!(got.device(), GPU, "{what}");
                let tol = if dtype == ScalarType::F32 { 1e-6 } else { 1e-12 };
                assert_close(&got.cpu().unwrap(), &ops::index_put(&x, idx, &v, acc).unwrap(), tol, &what);
            }
        }
        // A zero-dim value on the CPU is a scalar; the in-place variant writes `self`.
        let g = ops::clone(&gx, None).unwrap();
        let seven = ops::full(&[], Scalar::Int(7), Some(dtype), None, None, None).unwrap();
        ops::index_put_(&g, &cases[0], &seven, false).unwrap();
        assert_eq!(g.device(), GPU);
        assert_close(&g.cpu().unwrap(), &ops::index_put(&x, &cases[0], &seven, false).unwrap(), 0.0, "index_put_");
        // Out of range: the CPU's error, on either device.
        let bad = vec![Some(long(vec![0, 4], &[2]))];
        let want = ops::index(&x, &bad).unwrap_err().to_string();
        assert_eq!(ops::index(&gx, &bad).unwrap_err().to_string(), want);
    }
    // Integers have no device grouped sums: accumulating into them is an error, not a fallback.
    let gi = sample(&[4, 5, 3], ScalarType::I64, 1).cuda_on(0).unwrap();
    let v = ops::ones(&[2, 2, 5, 3], Some(ScalarType::I64), None, Some(GPU), None).unwrap();
    assert!(matches!(ops::index_put(&gi, &cases[0], &v, true).unwrap_err(), Error::UnsupportedDtype { .. }));
}

/// `celu` (as `elu` with `input_scale = 1 / alpha`) and `threshold` run on the device for
/// every variant and match the CPU.
#[test]
fn celu_and_threshold_run_on_the_device() {
    setup();
    for dtype in [ScalarType::F32, ScalarType::F64] {
        let tol = if dtype == ScalarType::F32 { 2e-6 } else { 1e-13 };
        let x = sample(&[3, 7], dtype, 4);
        let gx = x.cuda_on(0).unwrap();
        let got = ops::celu(&gx, Scalar::Float(0.5)).unwrap();
        assert_eq!(got.device(), GPU);
        assert_close(&got.cpu().unwrap(), &ops::celu(&x, Scalar::Float(0.5)).unwrap(), tol, "celu");
        let g = ops::clone(&gx, None).unwrap();
        ops::celu_(&g, Scalar::Float(2.0)).unwrap();
        assert_close(&g.cpu().unwrap(), &ops::celu(&x, Scalar::Float(2.0)).unwrap(), tol, "celu_");
    }
    for dtype in [ScalarType::F32, ScalarType::I64] {
        let x = sample(&[3, 7], dtype, 6);
        let gx = x.cuda_on(0).unwrap();
        // A fractional threshold converts to the dtype first (for int64, -0.5 is 0).
        for th in [Scalar::Float(-0.5), Scalar::Float(0.5)] {
            let v = Scalar::Float(-2.5);
            let got = ops::threshold(&gx, th, v).unwrap();
            assert_eq!(got.device(), GPU);
            let want = ops::threshold(&x, th, v).unwrap();
            assert_close(&got.cpu().unwrap(), &want, 0.0, &format!("threshold {th:?} {dtype}"));
        }
        let (th, v) = (Scalar::Float(0.5), Scalar::Float(-2.5));
        let want = ops::threshold(&x, th, v).unwrap();
        let g = ops::clone(&gx, None).unwrap();
        ops::threshold_(&g, th, v).unwrap();
        assert_close(&g.cpu().unwrap(), &want, 0.0, &format!("threshold_ {dtype}"));
        let out = ops::empty(&[3, 7], Some(dtype), None, Some(GPU), None, None).unwrap();
        ops::threshold_out(&gx, th, v, &out).unwrap();
        assert_close(&out.cpu().unwrap(), &want, 0.0, &format!("threshold.out {dtype}"));
    }
}

/// Note [Kernel handles]: once a kernel ran, launching it again resolves nothing by name. The
/// launch path (the handle's loop, the dtype's `.cu` kernel, the argument array, the stream,
/// the driver) allocates nothing and takes none of the counted locks (Note [Counted locks]:
/// those of the CUDA backend, its allocator and the loop registry). The iterator and the
/// output are built before, as an operator builds them.
#[test]
fn a_warm_launch_allocates_nothing_and_takes_no_lock() {
    use aten::native::stub;
    use aten::native::tensor_iterator::TensorIteratorConfig;
    setup();
    let (a, b) = (
        sample(&[1], ScalarType::F32, 1).to_device(GPU).unwrap(),
        sample(&[1], ScalarType::F32, 2).to_device(GPU).unwrap(),
    );
    let out = ops::empty(&[1], Some(ScalarType::F32), None, Some(GPU), None, None).unwrap();
    let iter = TensorIteratorConfig::binary_op("add", Some(&out), &a, &b).build().unwrap();
    let add = aten::device_kernel!("add");
    let src = sample(&[4, 3], ScalarType::F32, 3).to_device(GPU).unwrap();
    let sums = ops::empty(&[1, 3], Some(ScalarType::F32), None, Some(GPU), None, None).unwrap();
    let sum = aten::device_kernel!(reduce "sum");
    let launch = || {
        stub::run(add, &iter, &[Scalar::Float(2.0)]).unwrap();
        stub::run_reduction("sum", sum, &src, &[true, false], &[&sums]).unwrap();
    };
    // The first launch resolves the handles: the registry's lock, the kernel's name.
    let (allocs, locks) = (allocations(), c10::sync::lock_acquisitions());
    launch();
    assert!(allocations() > allocs && c10::sync::lock_acquisitions() > locks, "the first launch resolves by name");
    let (allocs, locks) = (allocations(), c10::sync::lock_acquisitions());
    for _ in 0..100 {
        launch();
    }
    assert_eq!(allocations() - allocs, 0, "allocations in 100 warm launches");
    assert_eq!(c10::sync::lock_acquisitions() - locks, 0, "counted locks in 100 warm launches");
    // The launches computed: out = a + 2 b, and the column sums.
    let want =
        ops::add(&sample(&[1], ScalarType::F32, 1), &sample(&[1], ScalarType::F32, 2), Scalar::Float(2.0)).unwrap();
    assert_close(&out.to_device(Device::CPU).unwrap(), &want, 0.0, "add");
    let want = ops::sum_dim_intlist(&sample(&[4, 3], ScalarType::F32, 3), Some(&[0]), true, None).unwrap();
    assert_close(&sums.to_device(Device::CPU).unwrap(), &want, 1e-6, "sum");
}

/// Note [Foreach operators]: the foreach operators run their per-tensor operators on the
/// tensors' device.
#[test]
fn foreach_operators_run_on_the_device() {
    setup();
    let cpu = [sample(&[3], ScalarType::F32, 1), sample(&[2, 2], ScalarType::F32, 2)];
    let other = [sample(&[3], ScalarType::F32, 3), sample(&[2, 2], ScalarType::F32, 4)];
    let gpu: Vec<Tensor> = cpu.iter().map(|t| t.to_device(GPU).unwrap()).collect();
    let gpu_other: Vec<Tensor> = other.iter().map(|t| t.to_device(GPU).unwrap()).collect();
    let got = ops::_foreach_add_list(&gpu, &gpu_other, Scalar::Float(0.5)).unwrap();
    let want = ops::_foreach_add_list(&cpu, &other, Scalar::Float(0.5)).unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.device(), GPU);
        assert_close(&g.to_device(Device::CPU).unwrap(), w, 0.0, "_foreach_add.List");
    }
    ops::_foreach_lerp_(&gpu, &gpu_other, Scalar::Float(0.25)).unwrap();
    ops::_foreach_lerp_(&cpu, &other, Scalar::Float(0.25)).unwrap();
    let norms = ops::_foreach_norm(&gpu, Scalar::Int(2), None).unwrap();
    let want = ops::_foreach_norm(&cpu, Scalar::Int(2), None).unwrap();
    for (i, (g, c)) in gpu.iter().zip(&cpu).enumerate() {
        assert_eq!((g.device(), norms[i].device()), (GPU, GPU));
        assert_close(&g.to_device(Device::CPU).unwrap(), c, 1e-6, "_foreach_lerp_");
        assert_close(&norms[i].to_device(Device::CPU).unwrap(), &want[i], 1e-6, "_foreach_norm");
    }
}

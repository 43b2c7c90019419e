//! gradcheck and gradgradcheck (f64, PyTorch's tolerances) for the operators the autograd issue
//! lists, through the same entry points users call.

use aten::{ops, Tensor};
use autograd::{gradcheck, gradgradcheck, GradcheckOptions, TensorAutograd};
use c10::{Result, Scalar};

fn leaf(shape: &[i64], seed: u64, lo: f64, hi: f64) -> Tensor {
    let g = aten::Generator::new(c10::Device::CPU);
    g.manual_seed(seed);
    let t = ops::rand_generator(shape, Some(&g), Some(c10::ScalarType::F64), None, None, None).unwrap();
    let t = t.mul(Scalar::Float(hi - lo)).unwrap().add(Scalar::Float(lo)).call().unwrap();
    t.requires_grad_(true).unwrap()
}

fn both(name: &str, f: &dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>, inputs: &[Tensor]) {
    let o = GradcheckOptions::default();
    gradcheck(f, inputs, o).unwrap_or_else(|e| panic!("{name}: gradcheck: {e}"));
    gradgradcheck(f, inputs, o).unwrap_or_else(|e| panic!("{name}: gradgradcheck: {e}"));
}

#[test]
fn elementwise() {
    let a = leaf(&[2, 3], 1, -1.0, 1.0);
    let b = leaf(&[3], 2, 0.5, 1.5);
    let p = leaf(&[2, 3], 3, 0.5, 2.0);
    both("add", &|t| Ok(vec![t[0].add(&t[1]).call()?]), &[a.clone(), b.clone()]);
    both("mul", &|t| Ok(vec![t[0].mul(&t[1])?]), &[a.clone(), b.clone()]);
    both("div", &|t| Ok(vec![t[0].div(&t[1]).call()?]), &[a.clone(), b.clone()]);
    both("pow", &|t| Ok(vec![ops::pow(&t[0], &t[1])?]), &[p.clone(), b.clone()]);
    both("pow scalar", &|t| Ok(vec![t[0].pow(Scalar::Float(2.5))?]), std::slice::from_ref(&p));
    both("exp", &|t| Ok(vec![t[0].exp()?]), std::slice::from_ref(&a));
    both("log", &|t| Ok(vec![t[0].log()?]), std::slice::from_ref(&p));
    both("tanh", &|t| Ok(vec![t[0].tanh()?]), std::slice::from_ref(&a));
    both("sigmoid", &|t| Ok(vec![t[0].sigmoid()?]), std::slice::from_ref(&a));
    both("relu", &|t| Ok(vec![t[0].relu()?]), std::slice::from_ref(&a));
    both("softplus", &|t| Ok(vec![ops::softplus(&t[0], Scalar::Int(1), Scalar::Int(20))?]), std::slice::from_ref(&a));
}

#[test]
fn reductions_and_softmax() {
    let a = leaf(&[3, 4], 4, -2.0, 2.0);
    both("sum", &|t| Ok(vec![t[0].sum().call()?]), std::slice::from_ref(&a));
    both("sum dim", &|t| Ok(vec![ops::sum_dim_intlist(&t[0], Some(&[1]), false, None)?]), std::slice::from_ref(&a));
    both("mean", &|t| Ok(vec![t[0].mean().call()?]), std::slice::from_ref(&a));
    both("softmax", &|t| Ok(vec![t[0].softmax(1).call()?]), std::slice::from_ref(&a));
    both("log_softmax", &|t| Ok(vec![t[0].log_softmax(0).call()?]), std::slice::from_ref(&a));
}

#[test]
fn matmul_conv_pool_norm() {
    let a = leaf(&[2, 3], 5, -1.0, 1.0);
    let b = leaf(&[3, 2], 6, -1.0, 1.0);
    both("matmul", &|t| Ok(vec![t[0].matmul(&t[1])?]), &[a, b]);
    let x = leaf(&[1, 2, 5, 5], 7, -1.0, 1.0);
    let w = leaf(&[3, 2, 3, 3], 8, -1.0, 1.0);
    let bias = leaf(&[3], 9, -1.0, 1.0);
    both(
        "conv2d",
        &|t| Ok(vec![ops::conv2d(&t[0], &t[1], Some(&t[2]), &[2, 1], &[1, 0], &[1, 1], 1)?]),
        &[x.clone(), w, bias],
    );
    let wg = leaf(&[4, 1, 2, 2], 10, -1.0, 1.0);
    both(
        "conv2d groups",
        &|t| Ok(vec![ops::conv2d(&t[0], &t[1], None, &[1, 1], &[0, 0], &[2, 2], 2)?]),
        &[x.clone(), wg],
    );
    both(
        "max_pool2d",
        &|t| Ok(vec![ops::max_pool2d(&t[0], &[2, 2], &[2, 2], &[0, 0], &[1, 1], false)?]),
        std::slice::from_ref(&x),
    );
    let ln_w = leaf(&[5], 11, 0.5, 1.5);
    let ln_b = leaf(&[5], 12, -0.5, 0.5);
    both(
        "layer_norm",
        &|t| Ok(vec![ops::layer_norm(&t[0], &[5], Some(&t[1]), Some(&t[2]), 1e-5, true)?]),
        &[x, ln_w, ln_b],
    );
}

#[test]
fn losses() {
    let p = leaf(&[4, 3], 13, -1.0, 1.0);
    let y = leaf(&[4, 3], 14, -1.0, 1.0).detach();
    both("mse_loss", &|t| Ok(vec![ops::mse_loss(&t[0], &t[1], 1)?]), &[p.clone(), y]);
    let target = Tensor::from_vec(vec![0i64, 2, 1, 2], &[4]).unwrap();
    both(
        "cross_entropy",
        &move |t| Ok(vec![ops::cross_entropy_loss(&t[0], &target, None, 1, -100, 0.1)?]),
        std::slice::from_ref(&p),
    );
}

/// gradcheck only (first derivatives), for functions whose second derivative is zero almost
/// everywhere or not defined by PyTorch either.
fn first(name: &str, f: &dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>, inputs: &[Tensor]) {
    gradcheck(f, inputs, GradcheckOptions::default()).unwrap_or_else(|e| panic!("{name}: gradcheck: {e}"));
}

/// `len` distinct values spread over (-1, 1), shuffled by `seed`: no ties, so max-pooling and
/// sorting have one derivative.
fn distinct(shape: &[i64], seed: u64) -> Tensor {
    let len: i64 = shape.iter().product();
    let mut v: Vec<f64> = (0..len).map(|i| -1.0 + 2.0 * (i as f64 + 0.5) / len as f64).collect();
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    for i in (1..v.len()).rev() {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        v.swap(i, (s >> 33) as usize % (i + 1));
    }
    Tensor::from_vec(v, shape).unwrap().requires_grad_(true).unwrap()
}

fn index(v: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len() as i64]).unwrap()
}

/// The derivatives of the view, linear-algebra, clamping, indexing and sorting operators that
/// had none (issue 19's list), against finite differences.
#[test]
fn views_products_clamps_indexing_and_sorting() {
    let m = leaf(&[3, 4], 20, -1.0, 1.0);
    both("diagonal", &|t| Ok(vec![ops::diagonal(&t[0], 1, 0, 1)?]), std::slice::from_ref(&m));
    both("diagonal of a wide matrix", &|t| Ok(vec![ops::diagonal(&t[0], -1, 1, 0)?]), &[leaf(&[2, 5], 19, -1.0, 1.0)]);
    both("diag_embed", &|t| Ok(vec![ops::diag_embed(&t[0], 1, -2, -1)?]), &[leaf(&[2, 3], 21, -1.0, 1.0)]);
    both("movedim", &|t| Ok(vec![ops::movedim(&t[0], &[0, 1], &[2, 0])?]), &[leaf(&[2, 3, 4], 22, -1.0, 1.0)]);
    let (s, b1, b2) =
        (leaf(&[2, 3, 4], 23, -1.0, 1.0), leaf(&[2, 3, 5], 24, -1.0, 1.0), leaf(&[2, 5, 4], 25, -1.0, 1.0));
    both(
        "baddbmm",
        &|t| Ok(vec![ops::baddbmm(&t[0], &t[1], &t[2], Scalar::Float(0.5), Scalar::Float(2.0))?]),
        &[s, b1.clone(), b2.clone()],
    );
    both(
        "addbmm",
        &|t| Ok(vec![ops::addbmm(&t[0], &t[1], &t[2], Scalar::Float(0.5), Scalar::Float(2.0))?]),
        &[leaf(&[3, 4], 26, -1.0, 1.0), b1, b2],
    );
    both("vdot", &|t| Ok(vec![ops::vdot(&t[0], &t[1])?]), &[leaf(&[5], 27, -1.0, 1.0), leaf(&[5], 28, -1.0, 1.0)]);
    both("norm p=3", &|t| Ok(vec![ops::norm(&t[0], Scalar::Float(3.0))?]), &[leaf(&[2, 3], 29, 0.5, 1.5)]);
    let x = distinct(&[3, 4], 30);
    let lo = leaf(&[4], 31, -0.6, -0.4);
    let hi = leaf(&[3, 1], 32, 0.3, 0.5);
    first(
        "clamp.Tensor",
        &|t| Ok(vec![ops::clamp_tensor(&t[0], Some(&t[1]), Some(&t[2]))?]),
        &[x.clone(), lo.clone(), hi.clone()],
    );
    first("clamp_min.Tensor", &|t| Ok(vec![ops::clamp_min_tensor(&t[0], &t[1])?]), &[x.clone(), lo]);
    first("clamp_max.Tensor", &|t| Ok(vec![ops::clamp_max_tensor(&t[0], &t[1])?]), &[x.clone(), hi]);
    let (num, den) = (leaf(&[2, 3], 33, -2.0, 2.0), leaf(&[2, 3], 34, 0.5, 1.5));
    both("div no rounding", &|t| Ok(vec![ops::div_tensor_mode(&t[0], &t[1], None)?]), &[num.clone(), den.clone()]);
    first("div floor", &|t| Ok(vec![ops::div_tensor_mode(&t[0], &t[1], Some("floor"))?]), &[num.clone(), den]);
    first(
        "div.Scalar trunc",
        &|t| Ok(vec![ops::div_scalar_mode(&t[0], Scalar::Float(0.7), Some("trunc"))?]),
        std::slice::from_ref(&num),
    );
    first("round decimals", &|t| Ok(vec![ops::round_decimals(&t[0], 1)?]), &[num]);
    both(
        "copysign.Scalar",
        &|t| Ok(vec![ops::copysign_scalar(&t[0], Scalar::Float(-1.0))?]),
        &[leaf(&[4], 35, 0.5, 1.5)],
    );
    both("log_sigmoid", &|t| Ok(vec![ops::log_sigmoid(&t[0])?]), &[leaf(&[2, 3], 36, -3.0, 3.0)]);

    let base = leaf(&[4, 3], 37, -1.0, 1.0);
    let src = leaf(&[2, 3], 38, -1.0, 1.0);
    both("index_copy", &|t| Ok(vec![ops::index_copy(&t[0], 0, &index(&[2, 0]), &t[1])?]), &[base.clone(), src]);
    let value = leaf(&[], 39, -1.0, 1.0);
    both(
        "index_fill.int_Tensor",
        &|t| Ok(vec![ops::index_fill_int_tensor(&t[0], 1, &index(&[0, 2]), &t[1])?]),
        &[base.clone(), value],
    );
    let scatter_index = Tensor::from_vec(vec![1i64, 0, 3, 2, 2, 1], &[2, 3]).unwrap();
    both(
        "scatter.value",
        &|t| Ok(vec![ops::scatter_value(&t[0], 0, &scatter_index, Scalar::Float(2.0))?]),
        std::slice::from_ref(&base),
    );
    let mask = Tensor::from_vec(vec![true, false, true, true, false, false], &[2, 3]).unwrap();
    both(
        "masked_scatter",
        &|t| Ok(vec![ops::masked_scatter(&t[0], &mask, &t[1])?]),
        &[leaf(&[2, 3], 40, -1.0, 1.0), leaf(&[5], 41, -1.0, 1.0)],
    );
    both("sort.stable", &|t| Ok(vec![ops::sort_stable(&t[0], Some(true), 1, true)?.0]), &[distinct(&[3, 4], 42)]);
    both("split_with_sizes", &|t| ops::split_with_sizes(&t[0], &[1, 3], 1), std::slice::from_ref(&m));
    both(
        "unfold, overlapping windows",
        &|t| Ok(vec![ops::unfold(&t[0], 1, 3, 2)?]),
        &[leaf(&[2, 7, 3], 43, -1.0, 1.0)],
    );
    both("unfold, gaps", &|t| Ok(vec![ops::unfold(&t[0], -1, 2, 3)?]), &[leaf(&[3, 8], 44, -1.0, 1.0)]);
    let reps = Tensor::from_vec(vec![2i64, 0, 3], &[3]).unwrap();
    both(
        "repeat_interleave tensor repeats",
        &|t| Ok(vec![ops::repeat_interleave_self_tensor(&t[0], &reps, Some(1), None)?]),
        &[leaf(&[2, 3], 45, -1.0, 1.0)],
    );
    let flat_reps = Tensor::from_vec(vec![1i64, 2, 0, 1, 3, 1], &[6]).unwrap();
    both(
        "repeat_interleave tensor repeats, flattened",
        &|t| Ok(vec![ops::repeat_interleave_self_tensor(&t[0], &flat_reps, None, None)?]),
        &[leaf(&[2, 3], 46, -1.0, 1.0)],
    );
    first(
        "native_dropout",
        &|t| {
            aten::manual_seed(7);
            Ok(vec![ops::native_dropout(&t[0], 0.4, Some(true))?.0])
        },
        std::slice::from_ref(&m),
    );
}

/// The derivatives of the 1-D and 3-D pooling and resampling operators and of the ones the
/// module parity cases found missing, against finite differences.
#[test]
fn pooling_resampling_and_module_ops() {
    let v = distinct(&[1, 2, 4, 4, 4], 50);
    first(
        "max_pool3d",
        &|t| Ok(vec![ops::max_pool3d(&t[0], &[2, 2, 2], &[], &[0, 0, 0], &[1, 1, 1], false)?]),
        std::slice::from_ref(&v),
    );
    first(
        "adaptive_max_pool3d",
        &|t| Ok(vec![ops::adaptive_max_pool3d(&t[0], &[2, 3, 2])?.0]),
        std::slice::from_ref(&v),
    );
    first("adaptive_max_pool1d", &|t| Ok(vec![ops::adaptive_max_pool1d(&t[0], &[3])?.0]), &[distinct(&[2, 3, 7], 51)]);
    first(
        "adaptive_max_pool2d",
        &|t| Ok(vec![ops::adaptive_max_pool2d(&t[0], &[3, 2])?.0]),
        &[distinct(&[2, 3, 5], 52)],
    );
    let smooth = leaf(&[1, 2, 5, 4, 5], 53, -1.0, 1.0);
    both(
        "avg_pool3d ceil, no pad count",
        &|t| Ok(vec![ops::avg_pool3d(&t[0], &[2, 3, 2], &[2, 2, 2], &[1, 1, 0], true, false, None)?]),
        std::slice::from_ref(&smooth),
    );
    both(
        "adaptive_avg_pool3d",
        &|t| Ok(vec![ops::adaptive_avg_pool3d(&t[0], &[2, 3, 2])?]),
        std::slice::from_ref(&smooth),
    );
    let img = leaf(&[2, 3, 7, 6], 54, -1.0, 1.0);
    both(
        "avg_pool2d ceil",
        &|t| Ok(vec![ops::avg_pool2d(&t[0], &[3, 2], &[2, 1], &[1, 0], true, true, None)?]),
        std::slice::from_ref(&img),
    );
    both(
        "avg_pool1d",
        &|t| Ok(vec![ops::avg_pool1d(&t[0], &[3], &[2], &[1], false, false)?]),
        &[leaf(&[2, 3, 9], 55, -1.0, 1.0)],
    );
    both(
        "adaptive_avg_pool1d",
        &|t| Ok(vec![ops::adaptive_avg_pool1d(&t[0], &[4])?]),
        &[leaf(&[2, 10], 56, -1.0, 1.0)],
    );
    both(
        "upsample_nearest1d",
        &|t| Ok(vec![ops::upsample_nearest1d(&t[0], Some(&[7]), None)?]),
        &[leaf(&[1, 2, 3], 57, -1.0, 1.0)],
    );
    both(
        "upsample_nearest3d",
        &|t| Ok(vec![ops::upsample_nearest3d(&t[0], None, Some(&[2.0, 1.5, 1.0]))?]),
        &[leaf(&[1, 1, 2, 2, 3], 58, -1.0, 1.0)],
    );
    both(
        "upsample_bilinear2d",
        &|t| Ok(vec![ops::upsample_bilinear2d(&t[0], Some(&[5, 7]), false, None)?]),
        &[leaf(&[1, 2, 3, 4], 59, -1.0, 1.0)],
    );
    both(
        "upsample_bilinear2d align_corners",
        &|t| Ok(vec![ops::upsample_bilinear2d(&t[0], None, true, Some(&[2.0, 1.5]))?]),
        &[leaf(&[1, 1, 3, 4], 60, -1.0, 1.0)],
    );
    first("prelu", &|t| Ok(vec![ops::prelu(&t[0], &t[1])?]), &[distinct(&[2, 3, 4], 61), leaf(&[3], 62, 0.1, 0.3)]);
    both(
        "binary_cross_entropy",
        &|t| Ok(vec![ops::binary_cross_entropy(&t[0], &t[1], Some(&t[2]), 1)?]),
        &[leaf(&[3, 4], 63, 0.1, 0.9), leaf(&[3, 4], 64, 0.1, 0.9), leaf(&[4], 65, 0.5, 1.5)],
    );
    both(
        "instance_norm",
        &|t| Ok(vec![ops::instance_norm(&t[0], Some(&t[1]), Some(&t[2]), None, None, true, 0.1, 1e-5, false)?]),
        &[leaf(&[2, 3, 4, 3], 66, -1.0, 1.0), leaf(&[3], 67, 0.5, 1.5), leaf(&[3], 68, -0.5, 0.5)],
    );
    both(
        "margin_ranking_loss",
        &|t| Ok(vec![ops::margin_ranking_loss(&t[0], &t[1], &index_f64(&[1.0, -1.0, 1.0, -1.0, 1.0]), 0.1, 1)?]),
        &[distinct(&[5], 69), leaf(&[5], 70, -0.05, 0.05)],
    );
    both(
        "cosine_embedding_loss",
        &|t| Ok(vec![ops::cosine_embedding_loss(&t[0], &t[1], &index_f64(&[1.0, -1.0, 1.0]), 0.0, 2)?]),
        &[leaf(&[3, 4], 71, -1.0, 1.0), leaf(&[3, 4], 72, -1.0, 1.0)],
    );
    both(
        "triplet_margin_loss swap",
        &|t| Ok(vec![ops::triplet_margin_loss(&t[0], &t[1], &t[2], 1.0, 2.0, 1e-6, true, 1)?]),
        &[leaf(&[3, 4], 73, -1.0, 1.0), leaf(&[3, 4], 74, -1.0, 1.0), leaf(&[3, 4], 75, -1.0, 1.0)],
    );
}

fn index_f64(v: &[f64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len() as i64]).unwrap()
}

/// `scatter_reduce.two` and `index_reduce`: every reduction with and without `self`, including
/// a repeated index (several sources into one position) and, for `prod`, a zero factor.
#[test]
fn scatter_and_index_reduce() {
    let idx = Tensor::from_vec(vec![0i64, 2, 0, 1, 2, 2], &[2, 3]).unwrap();
    for reduce in ["sum", "mean", "prod", "amax", "amin"] {
        for include_self in [true, false] {
            let name = format!("scatter_reduce {reduce} include_self={include_self}");
            let f = |t: &[Tensor]| Ok(vec![ops::scatter_reduce_two(&t[0], 1, &idx, &t[1], reduce, include_self)?]);
            let inputs = [distinct(&[2, 4], 3), distinct(&[2, 3], 4)];
            if reduce == "prod" {
                both(&name, &f, &inputs);
            } else {
                first(&name, &f, &inputs);
            }
        }
    }
    // A zero factor: the product's derivative there is the product of the others.
    let zero = Tensor::from_vec(vec![0.5f64, 0.0, -1.5], &[3]).unwrap().requires_grad_(true).unwrap();
    let base = Tensor::from_vec(vec![2.0f64, 3.0], &[2]).unwrap().requires_grad_(true).unwrap();
    let to = Tensor::from_vec(vec![0i64, 0, 1], &[3]).unwrap();
    let f = |t: &[Tensor]| Ok(vec![ops::scatter_reduce_two(&t[0], 0, &to, &t[1], "prod", true)?]);
    both("scatter_reduce prod with a zero", &f, &[base, zero]);
    let ix = Tensor::from_vec(vec![2i64, 0, 2], &[3]).unwrap();
    for reduce in ["mean", "prod", "amax", "amin"] {
        let f = |t: &[Tensor]| Ok(vec![ops::index_reduce(&t[0], 0, &ix, &t[1], reduce, true)?]);
        first(&format!("index_reduce {reduce}"), &f, &[distinct(&[3, 2], 5), distinct(&[3, 2], 6)]);
    }
}

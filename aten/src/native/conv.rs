//! Convolutions: `convolution` and its front ends `conv1d/2d/3d` (with the `padding='same'` /
//! `'valid'` overloads) and `conv_transpose1d/2d/3d`.
//!
//! Note [Convolution as GEMM]: every convolution runs on 3 spatial dimensions (1-d and 2-d
//! inputs get leading size-1 spatial dims). A forward convolution unfolds each image into a
//! column matrix (`im2col`: one row per input channel and kernel offset, one column per output
//! position) and multiplies each group's weight matrix `[O/g, C/g * k]` by it with `gemm`,
//! writing the image's `[O, L]` output block in place; a 1x1, stride-1, unpadded convolution
//! multiplies the input directly. The batch is split into one contiguous range per rayon
//! thread, each with its own column buffer from the caching allocator (no page faults after the
//! first call) and single-threaded GEMMs; a batch smaller than the thread count runs image by
//! image with a parallel GEMM instead. A transposed convolution multiplies the transposed weight
//! by the input (`[O/g * k, C/g] @ [C/g, L_in]`) and scatters the columns back (`col2im`).
//! f16/bf16 compute in f32 and round once.

use gemm::Parallelism;

use c10::{Error, Result, ScalarType};

use crate::native::linalg::{gemm_one, gemm_parallelism, GemmFloat, MatMut, MatRef};
use crate::{ops, Tensor};

/// Geometry of one convolution on 3 spatial dims.
#[derive(Clone, Copy, Debug)]
struct Geom {
    n: usize,
    c: usize,
    o: usize,
    groups: usize,
    input: [usize; 3],
    kernel: [usize; 3],
    out: [usize; 3],
    stride: [usize; 3],
    pad: [usize; 3],
    dil: [usize; 3],
}

impl Geom {
    fn in_len(&self) -> usize {
        self.input.iter().product()
    }
    fn out_len(&self) -> usize {
        self.out.iter().product()
    }
    fn k_len(&self) -> usize {
        self.kernel.iter().product()
    }
    fn is_pointwise(&self) -> bool {
        self.kernel == [1, 1, 1] && self.stride == [1, 1, 1] && self.pad == [0, 0, 0]
    }
}

// Buffers handed to workers that touch disjoint images (or only read): Note [Sharing raw
// pointers with workers].
use crate::parallel::SendPtr;

/// One worker's column buffer: `[C * k, width]` (from the caching allocator) for the output
/// positions of one block of columns (Note [Blocked convolution columns]), or none for a
/// pointwise convolution, whose input is already the column matrix.
struct Columns {
    scratch: Option<Tensor>,
    width: usize,
}

impl Columns {
    /// A buffer for whole images (`width` = L).
    fn new<T: GemmFloat>(g: &Geom, dtype: ScalarType) -> Result<Columns> {
        Columns::blocks::<T>(g, dtype, g.out_len(), false)
    }

    /// A buffer for blocks of `width` output positions; with `ones_row` (one group and a bias,
    /// not pointwise) it has one more row, all ones, which `unfold` leaves as it is (Note [Bias
    /// as a column of the weights]).
    fn blocks<T: GemmFloat>(g: &Geom, dtype: ScalarType, width: usize, ones_row: bool) -> Result<Columns> {
        if g.is_pointwise() {
            return Ok(Columns { scratch: None, width: g.out_len() });
        }
        let rows = g.c * g.k_len() + usize::from(ones_row);
        let buf = Tensor::empty_uninit(&[(rows * width) as i64], dtype, c10::Device::CPU)?;
        if ones_row {
            // SAFETY: the buffer holds rows * width elements of T (the caller's dtype).
            unsafe { std::slice::from_raw_parts_mut((buf.data_ptr() as *mut T).add((rows - 1) * width), width) }
                .fill(T::one());
        }
        Ok(Columns { scratch: Some(buf), width })
    }

    /// Unfolds output positions `range` (at most `width` of them) of the image at `xi` and
    /// returns the column matrix to multiply and its row stride (the image itself, from the
    /// block's first position, for a pointwise convolution).
    ///
    /// # Safety
    /// `xi` holds one contiguous `[C, *in]` image of `g`, the buffer was made for `g` with the
    /// element type `T`, and `range` lies inside `0..L`; the result is valid until the next
    /// call or the drop of `self`.
    unsafe fn unfold<T: Copy + num_traits::Zero>(
        &self,
        g: &Geom,
        xi: *const T,
        range: std::ops::Range<usize>,
    ) -> (*const T, usize) {
        debug_assert!(range.len() <= self.width && range.end <= g.out_len());
        match &self.scratch {
            Some(buf) => {
                let cb = buf.data_ptr() as *mut T;
                // SAFETY: the caller's contract: xi holds the image; cb holds C*k rows of
                // `width` elements.
                unsafe { im2col(g, xi, cb, self.width, range) };
                (cb, self.width)
            }
            // SAFETY: range.start < L, inside the image's first channel.
            None => (unsafe { xi.add(range.start) }, g.out_len()),
        }
    }
}

/// Note [Blocked convolution columns]: a forward convolution multiplies the weights `[O, C*k]`
/// by the unfolded image `[C*k, L]`. Unfolded whole, that matrix outgrows the caches (7 MiB
/// for a 64-channel 3 x 3 convolution of a 56 x 56 image): the unfolding writes it to memory
/// and the product reads it back, and a product whose `b` comes from memory ran at 79 GFLOP/s
/// where the same rows against 512 of its columns ran at 100 (Intel Xeon, AVX-512, one thread).
/// So each image is unfolded a block of output positions at a time, as many as fill half the
/// L2 cache (read at run time), and each block is multiplied while it is still there, into its
/// columns of the output. The (image, block) pairs are the units of work that threads share;
/// every output element comes from one block's product, with the same order of sums whatever
/// the number of threads.
///
/// Blocks are at least [`MIN_BLOCK_WIDTH`] wide: each block's product packs its share of the
/// weights again, and a product with more rows than `sgemm`'s `DIRECT_B_MAX_ROWS` packs `b`
/// in L2-sized pieces anyway (a 256-channel 3 x 3 convolution of 14 x 14 images ran at 77
/// GFLOP/s in two blocks of 112 positions and at 80-85 as one of 196).
fn block_width(rows: usize, l: usize, elem: usize) -> usize {
    let fit = (crate::native::cpu::l2_cache_bytes() / 2) / (rows.max(1) * elem);
    if fit >= l {
        return l;
    }
    // Blocks of equal width (a multiple of the micro-kernels' 16 or 32 columns), so the last
    // one is not a sliver.
    let blocks = l.div_ceil(fit.max(MIN_BLOCK_WIDTH));
    l.div_ceil(blocks).next_multiple_of(16).min(l)
}

/// The narrowest block of output positions that [`block_width`] chooses (unless the image has
/// fewer).
const MIN_BLOCK_WIDTH: usize = 256;

/// Unfolds output positions `range` of one image `x` (`[C, D, H, W]`, contiguous) into `cols`
/// (`[C * k, ld]`: row `r` holds the `range` of row `r` of the full `[C * k, L]` matrix).
///
/// # Safety
/// `x` holds `g.c * g.in_len()` elements, `cols` `g.c * g.k_len()` rows of `ld >=
/// range.len()` elements, and `range` lies inside `0..L`.
unsafe fn im2col<T: Copy + num_traits::Zero>(
    g: &Geom,
    x: *const T,
    cols: *mut T,
    ld: usize,
    range: std::ops::Range<usize>,
) {
    let [id, ih, iw] = g.input;
    let [_, oh, ow] = g.out;
    let [kd, kh, kw] = g.kernel;
    let [sd, sh, sw] = g.stride;
    let [pd, ph, pw] = g.pad;
    let [dd, dh, dw] = g.dil;
    if range.is_empty() || ow == 0 {
        return;
    }
    let zero = |dst: *mut T, n: usize| {
        // SAFETY: the callers pass n elements inside this row of `cols`.
        unsafe { std::slice::from_raw_parts_mut(dst, n) }.fill(T::zero())
    };
    // Note [Unfolding by shifted copies]
    let shifted = sw == 1 && sh == 1 && ow == iw;
    let mut row = 0usize;
    for c in 0..g.c {
        // SAFETY: channel c is inside the image.
        let xc = unsafe { x.add(c * g.in_len()) };
        for a in 0..kd {
            for b in 0..kh {
                for e in 0..kw {
                    // SAFETY: row < C * k.
                    let dst_row = unsafe { cols.add(row * ld) };
                    row += 1;
                    // Output columns whose input column is in range: ow*sw + e*dw - pw in [0, iw).
                    let off = (e * dw) as isize - pw as isize;
                    let lo = if off >= 0 { 0 } else { ((-off) as usize).div_ceil(sw) }.min(ow);
                    let hi = if (iw as isize) <= off { 0 } else { ((iw as isize - off) as usize).div_ceil(sw).min(ow) }
                        .max(lo);
                    if shifted {
                        // SAFETY: as for the general case below (Note [Unfolding by shifted copies]).
                        unsafe { unfold_shifted(g, xc, dst_row, range.clone(), [a, b], off, [lo, hi]) };
                        continue;
                    }
                    // Output rows t = z * oh + y that meet the range, each from column xa to xb.
                    for t in range.start / ow..range.end.div_ceil(ow) {
                        let (z, y) = (t / oh, t % oh);
                        let xa = range.start.saturating_sub(t * ow);
                        let xb = ow.min(range.end - t * ow);
                        // SAFETY: output position t * ow + xa is inside the range.
                        let dst = unsafe { dst_row.add(t * ow + xa - range.start) };
                        let zi = (z * sd + a * dd) as isize - pd as isize;
                        let yi = (y * sh + b * dh) as isize - ph as isize;
                        if zi < 0 || zi >= id as isize || yi < 0 || yi >= ih as isize {
                            zero(dst, xb - xa);
                            continue;
                        }
                        // SAFETY: (zi, yi) is a valid input row.
                        let src = unsafe { xc.add((zi as usize * ih + yi as usize) * iw) };
                        let (cl, ch) = (lo.clamp(xa, xb), hi.clamp(xa, xb));
                        zero(dst, cl - xa);
                        // SAFETY: columns ch..xb of this output row lie inside the range.
                        zero(unsafe { dst.add(ch - xa) }, xb - ch);
                        // SAFETY: for q in cl..ch, the input column q * sw + off is in [0, iw)
                        // by the choice of lo/hi, and the destinations are distinct.
                        unsafe {
                            if sw == 1 {
                                std::ptr::copy_nonoverlapping(src.offset(cl as isize + off), dst.add(cl - xa), ch - cl);
                            } else {
                                for q in cl..ch {
                                    *dst.add(q - xa) = *src.offset((q * sw) as isize + off);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Note [Unfolding by shifted copies]: with stride 1 along H and W and an output as wide as the
/// input (a "same" padding: `2 * pad = dil * (kernel - 1)`, the 3 x 3 padding-1 convolutions of
/// residual networks), the row of the column matrix for one kernel offset is the input plane
/// itself shifted by a constant, `dy * W + dx`: output position `y * W + x` reads input position
/// `(y + dy) * W + x + dx`. So each plane's block of the row is one copy, and only the positions
/// whose input column fell outside the image (`x` outside `lo..hi`, wrapped around to a
/// neighbouring row by the shift) and whose input row does are zeroed afterwards. Copied row by
/// row of the output instead, a 28-wide image took one 112-byte `memmove` call per output row and
/// kernel offset: half of the unfolding's time, and the unfolding was a third of
/// `W7.export_resnet_block`'s convolutions.
///
/// # Safety
/// As [`im2col`]'s for one row: `xc` is one channel's `[D, H, W]` input, `dst` the column
/// matrix row for kernel offset (`a`, `b`, the W offset's input shift `off`), holding
/// `range.len()` elements; `lo..hi` are the output columns whose input column is inside the image.
#[allow(clippy::too_many_arguments)]
unsafe fn unfold_shifted<T: Copy + num_traits::Zero>(
    g: &Geom,
    xc: *const T,
    dst: *mut T,
    range: std::ops::Range<usize>,
    [a, b]: [usize; 2],
    off: isize,
    [lo, hi]: [usize; 2],
) {
    let [id, ih, iw] = g.input;
    let [_, oh, ow] = g.out;
    let (sd, pd, dd) = (g.stride[0], g.pad[0], g.dil[0]);
    let plane_len = ih * iw;
    // Zeroes output positions p0..p1 (inside the range) of this row.
    let zero = |p0: usize, p1: usize| {
        if p1 > p0 {
            // SAFETY: the callers pass positions inside the range, so inside this row.
            unsafe { std::slice::from_raw_parts_mut(dst.add(p0 - range.start), p1 - p0) }.fill(T::zero())
        }
    };
    let dy = (b * g.dil[1]) as isize - g.pad[1] as isize;
    // Output rows y whose input row y + dy is inside the image.
    let ya = (-dy).clamp(0, oh as isize) as usize;
    let yb = (ih as isize - dy).clamp(ya as isize, oh as isize) as usize;
    let mut t = range.start / ow;
    let t_end = range.end.div_ceil(ow);
    while t < t_end {
        // The output rows of plane z in the range.
        let z = t / oh;
        let plane_end = ((z + 1) * oh).min(t_end);
        let base = z * oh * ow;
        let (p_lo, p_hi) = ((t * ow).max(range.start), (plane_end * ow).min(range.end));
        t = plane_end;
        let zi = (z * sd + a * dd) as isize - pd as isize;
        if zi < 0 || zi >= id as isize {
            zero(p_lo, p_hi);
            continue;
        }
        // Positions whose input row is inside the image, then those whose shifted input
        // position is inside the plane (the rest of them read past its first or last row).
        let (v_lo, v_hi) = ((base + ya * ow).clamp(p_lo, p_hi), (base + yb * ow).clamp(p_lo, p_hi));
        let shift = dy * iw as isize + off;
        let c_lo = ((base as isize - shift).max(0) as usize).clamp(v_lo, v_hi);
        let c_hi = ((base as isize - shift + plane_len as isize).max(0) as usize).clamp(c_lo, v_hi);
        zero(p_lo, c_lo);
        zero(c_hi, p_hi);
        if c_hi > c_lo {
            // SAFETY: for p in c_lo..c_hi the input position p - base + shift is inside the
            // plane zi (by the clamps above), and the destinations are inside the range.
            unsafe {
                let src = xc.add(zi as usize * plane_len).offset((c_lo - base) as isize + shift);
                std::ptr::copy_nonoverlapping(src, dst.add(c_lo - range.start), c_hi - c_lo);
            }
        }
        // Copied positions whose input column is outside the image wrapped around to a
        // neighbouring input row: zeroed.
        // Element by element: a few per row, where a `memset` call each cost more than the copy
        // (the zero goes through `black_box` so that the loop is not turned into one).
        let z = std::hint::black_box(T::zero());
        let zero_each = |p0: usize, p1: usize| {
            for p in p0..p1 {
                // SAFETY: positions inside c_lo..c_hi, inside the range.
                unsafe { *dst.add(p - range.start) = z };
            }
        };
        if (lo > 0 || hi < ow) && c_hi > c_lo {
            let (first, last) = (c_lo / ow, (c_hi - 1) / ow);
            for row in first..=last {
                let rs = row * ow;
                if row == first || row == last {
                    zero_each(rs.clamp(c_lo, c_hi), (rs + lo).clamp(c_lo, c_hi));
                    zero_each((rs + hi).clamp(c_lo, c_hi), (rs + ow).clamp(c_lo, c_hi));
                } else {
                    // A whole output row inside the copy.
                    zero_each(rs, rs + lo);
                    zero_each(rs + hi, rs + ow);
                }
            }
        }
    }
}

/// Adds the columns `cols` (`[O * k, L_in]`, L_in over the *input* positions) into one image of
/// a transposed convolution's output `y` (`[O, D, H, W]`, zeroed). Here `g.input` is the output
/// image's spatial size and `g.out` the input's: the roles of `im2col` reversed.
///
/// # Safety
/// `y` holds `g.o * g.in_len()` elements, `cols` `g.o * g.k_len() * g.out_len()`.
unsafe fn col2im<T: GemmFloat>(g: &Geom, cols: *const T, y: *mut T) {
    let [yd, yh, yw] = g.input;
    let [xd, xh, xw] = g.out;
    let [kd, kh, kw] = g.kernel;
    let [sd, sh, sw] = g.stride;
    let [pd, ph, pw] = g.pad;
    let [dd, dh, dw] = g.dil;
    let l = g.out_len();
    let plane = yd * yh * yw;
    let mut row = 0usize;
    for o in 0..g.o {
        // SAFETY: channel o of the output image.
        let yo = unsafe { y.add(o * plane) };
        for a in 0..kd {
            for b in 0..kh {
                for e in 0..kw {
                    // SAFETY: row < O * k.
                    let src_row = unsafe { cols.add(row * l) };
                    row += 1;
                    for z in 0..xd {
                        let zo = (z * sd + a * dd) as isize - pd as isize;
                        if zo < 0 || zo >= yd as isize {
                            continue;
                        }
                        for r in 0..xh {
                            let ro = (r * sh + b * dh) as isize - ph as isize;
                            if ro < 0 || ro >= yh as isize {
                                continue;
                            }
                            // SAFETY: (zo, ro) is a valid output row; (z, r) a valid column row.
                            let dst = unsafe { yo.add((zo as usize * yh + ro as usize) * yw) };
                            // SAFETY: as above.
                            let src = unsafe { src_row.add((z * xh + r) * xw) };
                            for q in 0..xw {
                                let qo = (q * sw + e * dw) as isize - pw as isize;
                                if qo >= 0 && (qo as usize) < yw {
                                    // SAFETY: qo in [0, yw), q < xw.
                                    unsafe { *dst.offset(qo) = *dst.offset(qo) + *src.add(q) };
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The geometry of an integer convolution (see [`int_convolution`]).
struct IntConv<'a> {
    stride: &'a [i64],
    padding: &'a [i64],
    dilation: &'a [i64],
    transposed: bool,
    groups: i64,
}

/// Convolution (or transposed convolution) of integer tensors, exactly: a direct loop in i64
/// with wrapping arithmetic, cast back to the dtype (the same result as PyTorch's
/// accumulation in the dtype itself, modulo its width). Integer tensors have no gradient.
fn int_convolution(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    p: &IntConv<'_>,
    out_shape: &[i64],
) -> Result<Tensor> {
    let nsp = out_shape.len() - 2;
    let pad3 = |v: &[i64], fill: i64| -> [i64; 3] {
        let mut r = [fill; 3];
        r[3 - v.len()..].copy_from_slice(v);
        r
    };
    let (is, ws) = (input.sizes(), weight.sizes());
    let (isp, ksp, osp) = (pad3(&is[2..], 1), pad3(&ws[2..], 1), pad3(&out_shape[2..], 1));
    let (st, pa, di) = (pad3(p.stride, 1), pad3(&p.padding[..nsp], 0), pad3(p.dilation, 1));
    let x = input.to_vec::<i64>()?;
    let wv = weight.to_vec::<i64>()?;
    let bv = bias.map(|b| b.to_vec::<i64>()).transpose()?;
    let (n, cout) = (out_shape[0] as usize, out_shape[1] as usize);
    let cin = is[1] as usize;
    let g = p.groups as usize;
    let in_len = (isp[0] * isp[1] * isp[2]) as usize;
    let out_len = (osp[0] * osp[1] * osp[2]) as usize;
    let k_len = (ksp[0] * ksp[1] * ksp[2]) as usize;
    let total = out_shape.iter().try_fold(1usize, |a, &b| a.checked_mul(b.max(0) as usize));
    let mut y = c10::size::try_vec_filled(0i64, total.unwrap_or(usize::MAX))?;
    if let Some(b) = &bv {
        for img in 0..n {
            for (o, &bo) in b.iter().enumerate() {
                y[(img * cout + o) * out_len..(img * cout + o + 1) * out_len].fill(bo);
            }
        }
    }
    if x.is_empty() || wv.is_empty() || y.is_empty() {
        // Nothing to accumulate: the bias (or zeros) is the result. The loops below would still
        // walk every channel of an empty input, which the sizes alone can make 2^40 long.
        return crate::native::copy::to_dtype(&Tensor::from_vec(y, out_shape)?, input.dtype());
    }
    let (cg_in, cg_out) = (cin / g, cout / g);
    // Every (input position, kernel position) pair: the output position it feeds (forward
    // convolution reads input at out * stride - pad + k * dil; the transposed one writes there).
    let offsets = |a: [i64; 3], k: [i64; 3], to_len: [i64; 3]| -> Option<usize> {
        let mut flat = 0i64;
        for d in 0..3 {
            let v = a[d] * st[d] - pa[d] + k[d] * di[d];
            if v < 0 || v >= to_len[d] {
                return None;
            }
            flat = flat * to_len[d] + v;
        }
        Some(flat as usize)
    };
    let unflat = |mut i: usize, len: [i64; 3]| -> [i64; 3] {
        let c = i % len[2] as usize;
        i /= len[2] as usize;
        let b = i % len[1] as usize;
        [(i / len[1] as usize) as i64, b as i64, c as i64]
    };
    for img in 0..n {
        for gi in 0..g {
            if !p.transposed {
                for oc in 0..cg_out {
                    let o = gi * cg_out + oc;
                    for op_ in 0..out_len {
                        let at = unflat(op_, osp);
                        let mut acc = 0i64;
                        for ic in 0..cg_in {
                            let c = gi * cg_in + ic;
                            for kk in 0..k_len {
                                if let Some(xi) = offsets(at, unflat(kk, ksp), isp) {
                                    let xv = x[(img * cin + c) * in_len + xi];
                                    let wvv = wv[(o * cg_in + ic) * k_len + kk];
                                    acc = acc.wrapping_add(xv.wrapping_mul(wvv));
                                }
                            }
                        }
                        let yi = (img * cout + o) * out_len + op_;
                        y[yi] = y[yi].wrapping_add(acc);
                    }
                }
            } else {
                // weight [C_in, C_out / g, *k]: input position i feeds output i * s - p + k * d.
                for ic in 0..cg_in {
                    let c = gi * cg_in + ic;
                    for ip in 0..in_len {
                        let xv = x[(img * cin + c) * in_len + ip];
                        let at = unflat(ip, isp);
                        for oc in 0..cg_out {
                            let o = gi * cg_out + oc;
                            for kk in 0..k_len {
                                if let Some(yo) = offsets(at, unflat(kk, ksp), osp) {
                                    let wvv = wv[(c * cg_out + oc) * k_len + kk];
                                    let yi = (img * cout + o) * out_len + yo;
                                    y[yi] = y[yi].wrapping_add(xv.wrapping_mul(wvv));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    crate::native::copy::to_dtype(&Tensor::from_vec(y, out_shape)?, input.dtype())
}

/// Forward convolution of contiguous `x` `[N, C, *in]` by contiguous `w` `[O, C/g, *k]` into
/// the fresh contiguous `y` `[N, O, *out]`, with `bias` (`[O]`, contiguous) when given.
fn conv_forward<T: GemmFloat>(g: &Geom, x: &Tensor, w: &Tensor, bias: Option<&Tensor>, y: &Tensor) -> Result<()> {
    let cg = g.c / g.groups;
    let og = g.o / g.groups;
    let kg = cg * g.k_len();
    let l = g.out_len();
    let (xp, wp, yp) =
        (SendPtr(x.data_ptr() as *mut T), SendPtr(w.data_ptr() as *mut T), SendPtr(y.data_ptr() as *mut T));
    let threads = rayon::current_num_threads();
    // Note [Bias as a column of the weights]: with one group and a column buffer, the bias is
    // the last column of the weights `[O, C * k + 1]` and the buffer's last row is all ones,
    // so the product writes `W x + b` in one pass. Filling the output with the bias first and
    // accumulating onto it (beta = 1) cost an extra write and read of the whole output: about
    // 0.8 of `W5.conv_large`'s 34 ms at one thread.
    let folded = match bias {
        Some(b) if g.groups == 1 && !g.is_pointwise() && kg > 0 => {
            let wb = Tensor::empty_uninit(&[(g.o * (kg + 1)) as i64], x.dtype(), c10::Device::CPU)?;
            // SAFETY: w is [O, kg] contiguous, b [O], wb [O, kg + 1]; all of element type T.
            let (ws, bs, dst) = unsafe {
                (
                    std::slice::from_raw_parts(w.data_ptr() as *const T, g.o * kg),
                    std::slice::from_raw_parts(b.data_ptr() as *const T, g.o),
                    std::slice::from_raw_parts_mut(wb.data_ptr() as *mut T, g.o * (kg + 1)),
                )
            };
            for ((row, src), bv) in dst.chunks_exact_mut(kg + 1).zip(ws.chunks_exact(kg)).zip(bs) {
                row[..kg].copy_from_slice(src);
                row[kg] = *bv;
            }
            Some(wb)
        }
        _ => None,
    };
    let (wp, kg_used) = match &folded {
        Some(wb) => (SendPtr(wb.data_ptr() as *mut T), kg + 1),
        None => (wp, kg),
    };
    let bp = if folded.is_some() { None } else { bias.map(|b| SendPtr(b.data_ptr() as *mut T)) };
    // Note [Blocked convolution columns]: units of work are (image, block of output positions).
    let width = if g.is_pointwise() { l } else { block_width(g.c * g.k_len() + 1, l, std::mem::size_of::<T>()) };
    let blocks = l.div_ceil(width.max(1));
    let items = g.n * blocks;
    let buffer = || Columns::blocks::<T>(g, x.dtype(), width, folded.is_some());
    // Runs item `it` with the column buffer `columns`; `par` is the GEMM's parallelism.
    let run = |columns: &Columns, it: usize, par: Parallelism| {
        let (img, l0) = (it / blocks, (it % blocks) * width);
        let cols = l0..(l0 + width).min(l);
        // SAFETY: img < N, so the image offsets are inside x and y.
        let xi = unsafe { xp.get().add(img * g.c * g.in_len()) };
        // SAFETY: as above; column l0 of the image's first output row.
        let yi = unsafe { yp.get().add(img * g.o * l + l0) };
        // SAFETY: xi holds one [C, *in] image of the contiguous input; the range is inside L
        // and at most the buffer's width.
        let (cp, ld) = unsafe { columns.unfold(g, xi, cols.clone()) };
        let beta = if let Some(b) = bp {
            for o in 0..g.o {
                // SAFETY: o < O.
                let v = unsafe { *b.get().add(o) };
                // SAFETY: rows of y are L long and this block's columns lie inside them.
                unsafe { std::slice::from_raw_parts_mut(yi.add(o * l), cols.len()) }.fill(v);
            }
            Some(T::one())
        } else {
            None
        };
        for gi in 0..g.groups {
            // SAFETY: group gi's blocks of y, w and the columns are in range; this item alone
            // writes these columns of y.
            unsafe {
                gemm_one(
                    og,
                    cols.len(),
                    kg_used,
                    MatMut { ptr: yi.add(gi * og * l), rs: l as isize, cs: 1 },
                    MatRef { ptr: wp.get().add(gi * og * kg_used), rs: kg_used as isize, cs: 1 },
                    MatRef { ptr: cp.add(gi * kg * ld), rs: ld as isize, cs: 1 },
                    T::one(),
                    beta,
                    par,
                )
            };
        }
    };
    if threads > 1 && items >= threads {
        crate::parallel::try_for_each_init(items, buffer, |columns, it| {
            let columns = columns.as_ref().map_err(Clone::clone)?;
            run(columns, it, Parallelism::None);
            Ok(())
        })
    } else {
        let columns = buffer()?;
        let par = gemm_parallelism(og, width, kg);
        (0..items).for_each(|it| run(&columns, it, par));
        Ok(())
    }
}

/// Transposed convolution of contiguous `x` `[N, C, *in]` by contiguous `w` `[C, O/g, *k]`
/// into the fresh `y` `[N, O, *out]`. `g` is in forward terms of the *output*: `g.input` = the
/// output size, `g.out` = the input size, `g.c` = O, `g.o` = C (See Note [Convolution as GEMM]).
fn conv_transpose_forward<T: GemmFloat>(
    g: &Geom,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    y: &Tensor,
) -> Result<()> {
    // In this function: cin = channels of x, cout = channels of y.
    let (cin, cout) = (g.o, g.c);
    let cg_in = cin / g.groups;
    let og = cout / g.groups;
    let k = g.k_len();
    let l_in = g.out_len();
    let y_plane = g.in_len();
    let (xp, wp, yp) =
        (SendPtr(x.data_ptr() as *mut T), SendPtr(w.data_ptr() as *mut T), SendPtr(y.data_ptr() as *mut T));
    let bp = bias.map(|b| SendPtr(b.data_ptr() as *mut T));
    // col2im's view: `o` output channels of one group.
    let gg = Geom { o: og, ..*g };
    let threads = rayon::current_num_threads();
    let by_batch = threads > 1 && g.n >= threads;
    let run = |lo: usize, hi: usize, par: Parallelism| -> Result<()> {
        let scratch = Tensor::empty_uninit(&[(og * k * l_in) as i64], x.dtype(), x.device())?;
        let cols = scratch.data_ptr() as *mut T;
        for img in lo..hi {
            // SAFETY: img < N.
            let xi = unsafe { xp.get().add(img * cin * l_in) };
            // SAFETY: as above.
            let yi = unsafe { yp.get().add(img * cout * y_plane) };
            // SAFETY: the image's output block.
            let out = unsafe { std::slice::from_raw_parts_mut(yi, cout * y_plane) };
            match bp {
                Some(b) => {
                    for (o, row) in out.chunks_mut(y_plane.max(1)).enumerate().take(cout) {
                        // SAFETY: o < cout.
                        row.fill(unsafe { *b.get().add(o) });
                    }
                }
                None => out.fill(T::zero()),
            }
            for gi in 0..g.groups {
                // cols[og*k, l_in] = W_g^T [og*k, cg_in] @ x_g [cg_in, l_in]; W_g is
                // [cg_in, og*k] row-major, read transposed through its strides.
                // SAFETY: group blocks are inside w, x and the scratch buffer.
                unsafe {
                    gemm_one(
                        og * k,
                        l_in,
                        cg_in,
                        MatMut { ptr: cols, rs: l_in as isize, cs: 1 },
                        MatRef { ptr: wp.get().add(gi * cg_in * og * k), rs: 1, cs: (og * k) as isize },
                        MatRef { ptr: xi.add(gi * cg_in * l_in), rs: l_in as isize, cs: 1 },
                        T::one(),
                        None,
                        par,
                    );
                    col2im(&gg, cols, yi.add(gi * og * y_plane));
                }
            }
        }
        Ok(())
    };
    if by_batch {
        let chunk = g.n.div_ceil(threads);
        crate::parallel::try_for_each_init(
            threads,
            || (),
            |_, t| run((t * chunk).min(g.n), ((t + 1) * chunk).min(g.n), Parallelism::None),
        )
    } else {
        run(0, g.n, gemm_parallelism(og * k, l_in, cg_in))
    }
}

/// Expands a per-dimension parameter to `n` values (a single value repeats, as `int[2]`).
fn expand_param(op: &str, name: &str, v: &[i64], n: usize) -> Result<Vec<i64>> {
    match v.len() {
        1 => Ok(vec![v[0]; n]),
        l if l == n => Ok(v.to_vec()),
        l => Err(Error::invalid(op, format!("expected {name} to be a single integer value or a list of {n} values to match the convolution dimensions, but got {name}={v:?} (length {l})"))),
    }
}

/// Pads a spatial parameter list of length `n` to 3 values, the missing leading ones `fill`.
fn to3(v: &[i64], fill: usize) -> [usize; 3] {
    let mut out = [fill; 3];
    let off = 3 - v.len();
    for (i, &x) in v.iter().enumerate() {
        out[off + i] = x as usize;
    }
    out
}

fn shape_str(s: &[i64]) -> String {
    format!("{s:?}")
}

/// `convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding,
/// SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor`
#[allow(clippy::too_many_arguments)]
pub fn convolution(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
) -> Result<Tensor> {
    let op = "convolution";
    let device = input.device();
    crate::native::check_device(op, device, std::iter::once(weight).chain(bias))?;
    let wdim = weight.dim();
    if !(3..=5).contains(&wdim) {
        return Err(Error::shape(
            op,
            format!(
                "weight should have at least three dimensions (and at most five), but got {wdim}D weight of size {}",
                shape_str(weight.sizes())
            ),
        ));
    }
    let nsp = wdim - 2;
    if input.dim() != wdim {
        return Err(Error::shape(
            op,
            format!(
                "Expected {wdim}-dimensional input for {wdim}-dimensional weight {}, but got {}-dimensional input of size {} instead",
                shape_str(weight.sizes()),
                input.dim(),
                shape_str(input.sizes())
            ),
        ));
    }
    let stride = expand_param(op, "stride", stride, nsp)?;
    let padding = expand_param(op, "padding", padding, nsp)?;
    let dilation = expand_param(op, "dilation", dilation, nsp)?;
    let output_padding = expand_param(op, "output_padding", output_padding, nsp)?;
    if stride.iter().any(|&s| s <= 0) {
        return Err(Error::invalid(op, "non-positive stride is not supported"));
    }
    if padding.iter().any(|&s| s < 0) {
        return Err(Error::invalid(op, "negative padding is not supported"));
    }
    if output_padding.iter().any(|&s| s < 0) {
        return Err(Error::invalid(op, "negative output_padding is not supported"));
    }
    if dilation.iter().any(|&s| s <= 0) {
        return Err(Error::invalid(op, "dilation should be greater than zero"));
    }
    if groups <= 0 {
        return Err(Error::invalid(op, "non-positive groups is not supported"));
    }
    if input.dtype() != weight.dtype() {
        return Err(Error::invalid(
            op,
            format!(
                "Input type ({}) and weight type ({}) should be the same",
                input.dtype().cpp_name(),
                weight.dtype().cpp_name()
            ),
        ));
    }
    if let Some(b) = bias {
        if b.dtype() != input.dtype() {
            return Err(Error::invalid(
                op,
                format!(
                    "Input type ({}) and bias type ({}) should be the same",
                    input.dtype().cpp_name(),
                    b.dtype().cpp_name()
                ),
            ));
        }
    }
    if input.dtype() == ScalarType::Bool {
        return Err(Error::UnsupportedDtype { op: "slow_conv2d_cpu".into(), dtype: input.dtype() });
    }
    let ws = weight.sizes();
    let is = input.sizes();
    let g = groups;
    let (cin, cout) = if transposed {
        if ws[0] % g != 0 || is[1] != ws[0] {
            return Err(Error::shape(
                op,
                format!(
                    "Given transposed=1, weight of size {}, expected input{} to have {} channels, but got {} channels instead",
                    shape_str(ws),
                    shape_str(is),
                    ws[0],
                    is[1]
                ),
            ));
        }
        (ws[0], ws[1] * g)
    } else {
        if ws[0] % g != 0 {
            return Err(Error::shape(
                op,
                format!("Given groups={g}, expected weight to be divisible by {g} at dimension 0, but got weight of size {} instead", shape_str(ws)),
            ));
        }
        if is[1] != ws[1] * g {
            return Err(Error::shape(
                op,
                format!(
                    "Given groups={g}, weight of size {}, expected input{} to have {} channels, but got {} channels instead",
                    shape_str(ws),
                    shape_str(is),
                    ws[1] * g,
                    is[1]
                ),
            ));
        }
        (is[1], ws[0])
    };
    if let Some(b) = bias {
        if b.dim() != 1 || b.numel() != cout {
            return Err(Error::shape(
                op,
                format!(
                    "Given weight of size {}, expected bias to be 1-dimensional with {cout} elements, but got bias of size {} instead",
                    shape_str(ws),
                    shape_str(b.sizes())
                ),
            ));
        }
    }
    let ksz = &ws[2..];
    let isp = &is[2..];
    let mut osp = Vec::with_capacity(nsp);
    // The output-size arithmetic in i128: sizes, strides, paddings and dilations are arbitrary
    // int64 values, and their products overflow int64 (a panic in debug builds).
    let w = i128::from;
    for i in 0..nsp {
        let o = if transposed {
            if output_padding[i] >= stride[i] && output_padding[i] >= dilation[i] {
                return Err(Error::invalid(
                    op,
                    format!(
                        "output padding must be smaller than either stride or dilation, but got output_padding={:?} stride={:?} dilation={:?}",
                        output_padding, stride, dilation
                    ),
                ));
            }
            w(isp[i] - 1) * w(stride[i]) - 2 * w(padding[i]) + w(dilation[i]) * w(ksz[i] - 1) + w(output_padding[i]) + 1
        } else {
            let padded = w(isp[i]) + 2 * w(padding[i]);
            let eff = w(dilation[i]) * w(ksz[i] - 1) + 1;
            if padded < eff {
                let p: Vec<String> = (0..nsp).map(|j| (w(isp[j]) + 2 * w(padding[j])).to_string()).collect();
                let k: Vec<String> = ksz.iter().map(|v| v.to_string()).collect();
                return Err(Error::shape(
                    op,
                    format!(
                        "Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't be greater than actual input size",
                        p.join(" x "),
                        k.join(" x ")
                    ),
                ));
            }
            (padded - eff) / w(stride[i]) + 1
        };
        let o = i64::try_from(o).map_err(|_| {
            Error::shape(
                op,
                format!("Given input size per channel: {isp:?}. Calculated output size per channel ({o}) does not fit in int64"),
            )
        })?;
        if o < 0 || (transposed && o == 0) {
            return Err(Error::shape(
                op,
                format!("Given input size per channel: {:?}. Calculated output size per channel: ({o}). Output size is too small", isp),
            ));
        }
        osp.push(o);
    }
    let mut out_shape = vec![is[0], cout];
    out_shape.extend(&osp);
    let dtype = input.dtype();
    if device.is_meta() {
        // Every check above ran; there is nothing to compute (Note [Meta loops]).
        return Tensor::empty_uninit(&out_shape, dtype, device);
    }
    if !device.is_cpu() && !dtype.is_floating_point() {
        // PyTorch's CUDA convolutions take floating types only.
        return Err(Error::UnsupportedDtype { op: op.into(), dtype });
    }
    if !dtype.is_floating_point() {
        let p = IntConv { stride: &stride, padding: &padding, dilation: &dilation, transposed, groups: g };
        return int_convolution(input, weight, bias, &p, &out_shape);
    }
    // Reduced precision: compute in f32, round once.
    let compute = if matches!(dtype, ScalarType::F16 | ScalarType::BF16) { ScalarType::F32 } else { dtype };
    let prep = |t: &Tensor| -> Result<Tensor> {
        let c = ops::contiguous(t, c10::MemoryFormat::Contiguous)?;
        if c.dtype() == compute {
            Ok(c)
        } else {
            crate::native::copy::to_dtype(&c, compute)
        }
    };
    let (x, w) = (prep(input)?, prep(weight)?);
    let b = bias.map(prep).transpose()?;
    let geom = if transposed {
        // In forward terms of the output (See conv_transpose_forward).
        Geom {
            n: is[0] as usize,
            c: cout as usize,
            o: cin as usize,
            groups: g as usize,
            input: to3(&osp, 1),
            kernel: to3(ksz, 1),
            out: to3(isp, 1),
            stride: to3(&stride, 1),
            pad: to3(&padding, 0),
            dil: to3(&dilation, 1),
        }
    } else {
        Geom {
            n: is[0] as usize,
            c: cin as usize,
            o: cout as usize,
            groups: g as usize,
            input: to3(isp, 1),
            kernel: to3(ksz, 1),
            out: to3(&osp, 1),
            stride: to3(&stride, 1),
            pad: to3(&padding, 0),
            dil: to3(&dilation, 1),
        }
    };
    if !device.is_cpu() {
        let y = if out_shape.iter().product::<i64>() == 0 {
            Tensor::empty_uninit(&out_shape, compute, device)?
        } else {
            device_convolution(&geom, transposed, &x, &w, b.as_ref(), &out_shape)?
        };
        return if compute != dtype { crate::native::copy::to_dtype(&y, dtype) } else { Ok(y) };
    }
    let y = Tensor::empty_uninit(&out_shape, compute, device)?;
    if y.numel() > 0 {
        match compute {
            ScalarType::F32 if transposed => conv_transpose_forward::<f32>(&geom, &x, &w, b.as_ref(), &y)?,
            ScalarType::F32 => conv_forward::<f32>(&geom, &x, &w, b.as_ref(), &y)?,
            ScalarType::F64 if transposed => conv_transpose_forward::<f64>(&geom, &x, &w, b.as_ref(), &y)?,
            _ => conv_forward::<f64>(&geom, &x, &w, b.as_ref(), &y)?,
        }
    }
    if compute != dtype {
        crate::native::copy::to_dtype(&y, dtype)
    } else {
        Ok(y)
    }
}

/// Column matrices of at most this many elements are built at once on a device: a larger batch
/// is unfolded a range of images at a time (Note [Convolution on a device]).
const DEVICE_COLUMN_ELEMENTS: i64 = 1 << 22;

/// The images per column matrix of `per_image` elements (at least one).
fn images_per_block(per_image: usize) -> i64 {
    (DEVICE_COLUMN_ELEMENTS / (per_image.max(1) as i64)).max(1)
}

/// The column geometry of `g` (its `c` channels over its `input` size).
fn column_geometry(g: &Geom) -> crate::native::stub::ColumnGeometry {
    let wide = |v: [usize; 3]| v.map(|x| x as i64);
    crate::native::stub::ColumnGeometry {
        channels: g.c as i64,
        input: wide(g.input),
        kernel: wide(g.kernel),
        out: wide(g.out),
        stride: wide(g.stride),
        padding: wide(g.pad),
        dilation: wide(g.dil),
    }
}

/// The column matrix of the images `x` (`[nb, C, *in]`, contiguous) as `[nb, groups, C/g * k,
/// L]`: `x` itself for a pointwise convolution, else unfolded by the device's loop.
fn device_columns(op: &str, g: &Geom, x: &Tensor) -> Result<Tensor> {
    let nb = x.sizes()[0];
    let (groups, kg, l) = ((g.groups) as i64, (g.c / g.groups * g.k_len()) as i64, g.out_len() as i64);
    if g.is_pointwise() {
        return ops::reshape(x, &[nb, groups, kg, l]);
    }
    let cols = Tensor::empty_uninit(&[nb, groups, kg, l], x.dtype(), x.device())?;
    crate::native::stub::run_columns(op, x, &cols, &column_geometry(g), false)?;
    Ok(cols)
}

/// Note [Convolution on a device]: on a device the convolution is the same GEMM formulation as
/// on the CPU (Note [Convolution as GEMM]) built from device operators. A range of images is
/// unfolded at once by the device's `im2col` loop (`[nb, groups, C/g * k, L]`, at most
/// [`DEVICE_COLUMN_ELEMENTS`] elements), and one batched product per range,
/// `[groups, O/g, C/g * k] @ columns`, gives the range's output. A transposed convolution multiplies the
/// transposed weight by the input and folds the columns with the adjoint loop (`col2im`, a
/// gather: Note [Folding columns without atomics] in kernels-cuda). The weight gradient is the
/// output gradient times the transposed columns, summed over the images. The matrix products are
/// the device's (cuBLAS on a GPU), so the sums' order differs from the CPU's by rounding only.
fn device_convolution(
    g: &Geom,
    transposed: bool,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    out_shape: &[i64],
) -> Result<Tensor> {
    let op = "convolution";
    let groups = g.groups as i64;
    let k = g.k_len() as i64;
    let mut parts = Vec::new();
    if transposed {
        // In forward terms of the output: g.c = output channels, g.o = input channels.
        let (cin, cout, lin) = (g.o as i64, g.c as i64, g.out_len() as i64);
        let wt = ops::transpose(&ops::reshape(w, &[groups, cin / groups, cout / groups * k])?, 1, 2)?;
        let out_image: i64 = out_shape[1..].iter().product();
        let nb = images_per_block((cout * k * lin).max(out_image) as usize);
        for n0 in (0..g.n as i64).step_by(nb as usize) {
            let xb = ops::narrow(x, 0, n0, nb.min(g.n as i64 - n0))?;
            let rows = xb.sizes()[0];
            let xg = ops::reshape(&xb, &[rows, groups, cin / groups, lin])?;
            let cols = ops::contiguous(&ops::matmul(&wt, &xg)?, c10::MemoryFormat::Contiguous)?;
            let mut shape = out_shape.to_vec();
            shape[0] = rows;
            let y = Tensor::empty_uninit(&shape, x.dtype(), x.device())?;
            crate::native::stub::run_columns(op, &y, &cols, &column_geometry(g), true)?;
            parts.push(y);
        }
    } else {
        let (c, o, l) = (g.c as i64, g.o as i64, g.out_len() as i64);
        let wg = ops::reshape(w, &[groups, o / groups, c / groups * k])?;
        let nb = images_per_block((c * k * l) as usize);
        for n0 in (0..g.n as i64).step_by(nb as usize) {
            let xb = ops::narrow(x, 0, n0, nb.min(g.n as i64 - n0))?;
            let rows = xb.sizes()[0];
            let y = ops::matmul(&wg, &device_columns(op, g, &xb)?)?;
            let mut shape = out_shape.to_vec();
            shape[0] = rows;
            parts.push(ops::reshape(&y, &shape)?);
        }
    }
    let y = if parts.len() == 1 { parts.pop().expect("one block") } else { ops::cat(&parts, 0)? };
    match bias {
        Some(b) => {
            let mut shape = vec![1; out_shape.len()];
            shape[1] = out_shape[1];
            ops::add(&y, &ops::reshape(b, &shape)?, c10::Scalar::from(1))
        }
        None => Ok(y),
    }
}

/// The weight gradient `[groups, O/g, C/g * k]` of a convolution on a device (Note
/// [Convolution on a device]): per range of images, the output gradient times the transposed
/// columns, summed over the images.
fn device_weight_backward(g: &Geom, x: &Tensor, gy: &Tensor) -> Result<Tensor> {
    let op = "_convolution_weight_backward";
    let (groups, og, l) = (g.groups as i64, (g.o / g.groups) as i64, g.out_len() as i64);
    let kg = (g.c / g.groups * g.k_len()) as i64;
    let nb = images_per_block((g.c * g.k_len() * g.out_len()).max(g.o * (g.c / g.groups) * g.k_len()));
    let mut acc: Option<Tensor> = None;
    for n0 in (0..g.n as i64).step_by(nb as usize) {
        let rows = nb.min(g.n as i64 - n0);
        let cols = device_columns(op, g, &ops::narrow(x, 0, n0, rows)?)?;
        let gyb = ops::reshape(&ops::narrow(gy, 0, n0, rows)?, &[rows, groups, og, l])?;
        let part = ops::matmul(&gyb, &ops::transpose(&cols, 2, 3)?)?;
        let part = ops::sum_dim_intlist(&part, Some(&[0]), false, None)?;
        acc = Some(match acc {
            Some(a) => ops::add(&a, &part, c10::Scalar::from(1))?,
            None => part,
        });
    }
    match acc {
        Some(a) => Ok(a),
        None => ops::zeros(&[groups, og, kg], Some(x.dtype()), None, Some(x.device()), None),
    }
}

/// Accumulates one range of images' weight gradient into `gw` (`[O, C/g * k]`, f32/f64):
/// `gw_g += grad_g [O/g, L] @ cols_g^T [L, C/g * k]` per image and group (See Note
/// [Convolution weight gradient]).
#[allow(clippy::too_many_arguments)]
fn conv_weight_backward_range<T: GemmFloat>(
    g: &Geom,
    dtype: ScalarType,
    x: SendPtr<*mut T>,
    gy: SendPtr<*mut T>,
    gw: *mut T,
    lo: usize,
    hi: usize,
    par: Parallelism,
) -> Result<()> {
    let cg = g.c / g.groups;
    let og = g.o / g.groups;
    let kg = cg * g.k_len();
    let l = g.out_len();
    let columns = Columns::new::<T>(g, dtype)?;
    for img in lo..hi {
        // SAFETY: img < N, so the image offsets are inside the input and the gradient.
        let xi = unsafe { x.get().add(img * g.c * g.in_len()) };
        // SAFETY: as above.
        let gi = unsafe { gy.get().add(img * g.o * l) };
        // SAFETY: xi holds one [C, *in] image of the contiguous input; the buffer is L wide.
        let (cols, _) = unsafe { columns.unfold(g, xi, 0..l) };
        for gr in 0..g.groups {
            // SAFETY: group gr's blocks of gw, grad and cols are in range; gw is this range's
            // own accumulator.
            unsafe {
                gemm_one(
                    og,
                    kg,
                    l,
                    MatMut { ptr: gw.add(gr * og * kg), rs: kg as isize, cs: 1 },
                    MatRef { ptr: gi.add(gr * og * l), rs: l as isize, cs: 1 },
                    MatRef { ptr: cols.add(gr * kg * l), rs: 1, cs: l as isize },
                    T::one(),
                    Some(T::one()),
                    par,
                )
            };
        }
    }
    Ok(())
}

/// `_convolution_weight_backward(Tensor grad_output, Tensor input, SymInt[] weight_size,
/// SymInt[] stride, SymInt[] padding, SymInt[] dilation, SymInt groups) -> Tensor`: the weight
/// gradient of a (non-transposed) convolution.
///
/// Note [Convolution weight gradient]: each image is unfolded once (`im2col`, as in the
/// forward) and its output gradient multiplied by the transposed columns, accumulating into
/// the weight gradient; the batch is split into one range per thread, each with its own
/// accumulator, summed at the end. The differentiable formula (a convolution of the input by
/// the gradient) unfolds windows as large as the output, which is far slower; it is still what
/// runs when the backward pass records a graph (`create_graph`), since this kernel has no
/// derivative.
#[allow(clippy::too_many_arguments)]
pub fn convolution_weight_backward(
    grad_output: &Tensor,
    input: &Tensor,
    weight_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    let op = "_convolution_weight_backward";
    let nsp = weight_size.len().saturating_sub(2);
    if !(1..=3).contains(&nsp) || input.dim() != nsp + 2 || grad_output.dim() != nsp + 2 || groups <= 0 {
        return Err(Error::shape(
            op,
            format!(
                "weight size {weight_size:?}, input {:?} and grad_output {:?} do not describe a convolution",
                input.sizes(),
                grad_output.sizes()
            ),
        ));
    }
    let (is, gs) = (input.sizes(), grad_output.sizes());
    if is[0] != gs[0] || gs[1] != weight_size[0] || is[1] != weight_size[1] * groups || weight_size[0] % groups != 0 {
        return Err(Error::shape(
            op,
            format!(
                "weight size {weight_size:?} with groups={groups} does not fit input {is:?} and grad_output {gs:?}"
            ),
        ));
    }
    if input.dtype() != grad_output.dtype() || !input.dtype().is_floating_point() {
        return Err(Error::UnsupportedDtype { op: op.into(), dtype: input.dtype() });
    }
    let stride = expand_param(op, "stride", stride, nsp)?;
    let padding = expand_param(op, "padding", padding, nsp)?;
    let dilation = expand_param(op, "dilation", dilation, nsp)?;
    crate::native::check_device(op, input.device(), std::iter::once(grad_output))?;
    if stride.iter().chain(&dilation).any(|&v| v <= 0) || padding.iter().any(|&v| v < 0) {
        return Err(Error::invalid(
            op,
            format!(
                "stride {stride:?} and dilation {dilation:?} must be positive and padding {padding:?} non-negative"
            ),
        ));
    }
    for i in 0..nsp {
        let expect = (is[2 + i] + 2 * padding[i] - dilation[i] * (weight_size[2 + i] - 1) - 1) / stride[i] + 1;
        if expect != gs[2 + i] {
            return Err(Error::shape(
                op,
                format!("grad_output {gs:?} is not the output size of input {is:?} for weight {weight_size:?}"),
            ));
        }
    }
    let dtype = input.dtype();
    let compute = if matches!(dtype, ScalarType::F16 | ScalarType::BF16) { ScalarType::F32 } else { dtype };
    let prep = |t: &Tensor| -> Result<Tensor> {
        let c = ops::contiguous(t, c10::MemoryFormat::Contiguous)?;
        if c.dtype() == compute {
            Ok(c)
        } else {
            crate::native::copy::to_dtype(&c, compute)
        }
    };
    let (x, gy) = (prep(input)?, prep(grad_output)?);
    let geom = Geom {
        n: is[0] as usize,
        c: is[1] as usize,
        o: gs[1] as usize,
        groups: groups as usize,
        input: to3(&is[2..], 1),
        kernel: to3(&weight_size[2..], 1),
        out: to3(&gs[2..], 1),
        stride: to3(&stride, 1),
        pad: to3(&padding, 0),
        dil: to3(&dilation, 1),
    };
    let wlen = weight_size.iter().product::<i64>();
    if !input.device().is_cpu() {
        let gw = if geom.n > 0 && wlen > 0 && geom.out_len() > 0 {
            device_weight_backward(&geom, &x, &gy)?
        } else {
            ops::zeros(&[wlen], Some(compute), None, Some(input.device()), None)?
        };
        let gw = ops::reshape(&gw, weight_size)?;
        return if compute != dtype { crate::native::copy::to_dtype(&gw, dtype) } else { Ok(gw) };
    }
    let threads = rayon::current_num_threads();
    let parts = if threads > 1 && geom.n >= threads { threads } else { 1 };
    let acc = ops::zeros(&[parts as i64, wlen], Some(compute), None, None, None)?;
    if geom.n > 0 && wlen > 0 && geom.out_len() > 0 {
        fn run<T: GemmFloat>(g: &Geom, x: &Tensor, gy: &Tensor, acc: &Tensor, parts: usize, wlen: usize) -> Result<()> {
            let (xp, gp, ap) =
                (SendPtr(x.data_ptr() as *mut T), SendPtr(gy.data_ptr() as *mut T), SendPtr(acc.data_ptr() as *mut T));
            if parts == 1 {
                return conv_weight_backward_range(
                    g,
                    x.dtype(),
                    xp,
                    gp,
                    ap.get(),
                    0,
                    g.n,
                    gemm_parallelism(g.o / g.groups, g.c / g.groups * g.k_len(), g.out_len()),
                );
            }
            let chunk = g.n.div_ceil(parts);
            crate::parallel::try_for_each_init(
                parts,
                || (),
                |_, t| {
                    // SAFETY: row t of the [parts, wlen] accumulator belongs to this worker.
                    let gw = unsafe { ap.get().add(t * wlen) };
                    conv_weight_backward_range(
                        g,
                        x.dtype(),
                        xp,
                        gp,
                        gw,
                        (t * chunk).min(g.n),
                        ((t + 1) * chunk).min(g.n),
                        Parallelism::None,
                    )
                },
            )
        }
        match compute {
            ScalarType::F32 => run::<f32>(&geom, &x, &gy, &acc, parts, wlen as usize)?,
            _ => run::<f64>(&geom, &x, &gy, &acc, parts, wlen as usize)?,
        }
    }
    let gw = if parts == 1 { acc } else { ops::sum_dim_intlist(&acc, Some(&[0]), false, None)? };
    let gw = ops::reshape(&gw, weight_size)?;
    if compute != dtype {
        crate::native::copy::to_dtype(&gw, dtype)
    } else {
        Ok(gw)
    }
}

/// Adds a batch dimension to an unbatched input (`dim == nsp + 1`), checking the rank.
fn batchify(op: &str, input: &Tensor, nsp: usize) -> Result<(Tensor, bool)> {
    match input.dim() {
        d if d == nsp + 2 => Ok((input.clone(), false)),
        d if d == nsp + 1 => Ok((ops::unsqueeze(input, 0)?, true)),
        _ => Err(Error::shape(
            op,
            format!(
                "Expected {}D (unbatched) or {}D (batched) input to {op}, but got input of size: {}",
                nsp + 1,
                nsp + 2,
                shape_str(input.sizes())
            ),
        )),
    }
}

fn unbatch(t: Tensor, was_unbatched: bool) -> Result<Tensor> {
    if was_unbatched {
        ops::squeeze_dim(&t, 0)
    } else {
        Ok(t)
    }
}

#[allow(clippy::too_many_arguments)]
fn conv_nd(
    op: &str,
    nsp: usize,
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    let (x, unb) = batchify(op, input, nsp)?;
    let r = ops::convolution(&x, weight, bias, stride, padding, dilation, false, &[0], groups)?;
    unbatch(r, unb)
}

/// `conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, SymInt[1] padding=0, SymInt[1] dilation=1, SymInt groups=1) -> Tensor`
pub fn conv1d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)
}

/// `conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] dilation=1, SymInt groups=1) -> Tensor`
pub fn conv2d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    conv_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)
}

/// `conv3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=1, SymInt[3] padding=0, SymInt[3] dilation=1, SymInt groups=1) -> Tensor`
pub fn conv3d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    conv_nd("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)
}

/// The `padding='same'|'valid'` front end: `same` pads `total = d * (k - 1)` per dim, split
/// with the extra element at the end (applied as an explicit asymmetric pad when odd).
#[allow(clippy::too_many_arguments)]
fn conv_padding_str(
    op: &str,
    nsp: usize,
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &str,
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    match padding {
        "valid" => conv_nd(op, nsp, input, weight, bias, stride, &[0], dilation, groups),
        "same" => {
            let st = expand_param(op, "stride", stride, nsp)?;
            if st.iter().any(|&s| s != 1) {
                return Err(Error::invalid(op, "padding='same' is not supported for strided convolutions"));
            }
            let dil = expand_param(op, "dilation", dilation, nsp)?;
            let (x, unb) = batchify(op, input, nsp)?;
            if weight.dim() != nsp + 2 {
                return Err(Error::shape(
                    op,
                    format!(
                        "Expected {}-dimensional weight for {op}, but got weight of size {}",
                        nsp + 2,
                        shape_str(weight.sizes())
                    ),
                ));
            }
            let ks = &weight.sizes()[2..];
            // `d * (k - 1)` per dim, checked: a huge dilation overflows it.
            let totals: Vec<i64> = (0..nsp)
                .map(|i| {
                    dil[i].checked_mul(ks[i] - 1).ok_or_else(|| {
                        Error::invalid(
                            op,
                            format!(
                                "padding='same': dilation {} times kernel size {} minus 1 overflows",
                                dil[i], ks[i]
                            ),
                        )
                    })
                })
                .collect::<Result<_>>()?;
            let mut sym = vec![0i64; nsp];
            let mut pad_args = Vec::new(); // F.pad order: last dim first, (left, right).
            let mut asym = false;
            for i in 0..nsp {
                let total = totals[i];
                sym[i] = total / 2;
                if total % 2 != 0 {
                    asym = true;
                }
            }
            for i in (0..nsp).rev() {
                let total = totals[i];
                pad_args.push(0);
                pad_args.push(total - 2 * (total / 2));
            }
            let x = if asym { constant_pad(&x, &pad_args)? } else { x };
            let r = ops::convolution(&x, weight, bias, &st, &sym, &dil, false, &[0], groups)?;
            unbatch(r, unb)
        }
        other => Err(Error::invalid(op, format!("Invalid padding string: '{other}'"))),
    }
}

/// Zero padding at the end of the trailing dims (`pads` in `F.pad` order: last dim first,
/// (before, after) pairs; only `after` may be non-zero here).
fn constant_pad(x: &Tensor, pads: &[i64]) -> Result<Tensor> {
    let n = x.dim();
    let mut shape = x.sizes().to_vec();
    for (j, pair) in pads.chunks(2).enumerate() {
        shape[n - 1 - j] += pair[0] + pair[1];
    }
    let out = ops::zeros(&shape, Some(x.dtype()), None, None, None)?;
    let mut view = out.clone();
    for (j, pair) in pads.chunks(2).enumerate() {
        let d = (n - 1 - j) as i64;
        view = ops::narrow(&view, d, pair[0], x.sizes()[n - 1 - j])?;
    }
    crate::native::copy::copy_into(&view, x)?;
    Ok(out)
}

/// `conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, str padding="valid", SymInt[1] dilation=1, SymInt groups=1) -> Tensor`
pub fn conv1d_padding(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &str,
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    conv_padding_str("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)
}

/// `conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, str padding="valid", SymInt[2] dilation=1, SymInt groups=1) -> Tensor`
pub fn conv2d_padding(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &str,
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    conv_padding_str("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)
}

/// `conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=1, str padding="valid", SymInt[3] dilation=1, SymInt groups=1) -> Tensor`
pub fn conv3d_padding(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &str,
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    conv_padding_str("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)
}

#[allow(clippy::too_many_arguments)]
fn conv_transpose_nd(
    op: &str,
    nsp: usize,
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    output_padding: &[i64],
    groups: i64,
    dilation: &[i64],
) -> Result<Tensor> {
    let (x, unb) = batchify(op, input, nsp)?;
    let r = ops::convolution(&x, weight, bias, stride, padding, dilation, true, output_padding, groups)?;
    unbatch(r, unb)
}

/// `conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, SymInt[1] padding=0, SymInt[1] output_padding=0, SymInt groups=1, SymInt[1] dilation=1) -> Tensor`
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose1d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    output_padding: &[i64],
    groups: i64,
    dilation: &[i64],
) -> Result<Tensor> {
    conv_transpose_nd("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups, dilation)
}

/// `conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] output_padding=0, SymInt groups=1, SymInt[2] dilation=1) -> Tensor`
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose2d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    output_padding: &[i64],
    groups: i64,
    dilation: &[i64],
) -> Result<Tensor> {
    conv_transpose_nd("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups, dilation)
}

/// `conv_transpose3d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=1, SymInt[3] padding=0, SymInt[3] output_padding=0, SymInt groups=1, SymInt[3] dilation=1) -> Tensor`
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose3d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    output_padding: &[i64],
    groups: i64,
    dilation: &[i64],
) -> Result<Tensor> {
    conv_transpose_nd("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups, dilation)
}

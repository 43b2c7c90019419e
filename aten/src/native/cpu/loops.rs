//! The CPU's loops: the typed elementwise loops over a built [`TensorIterator`] (the CPU half
//! of every device-generic elementwise operator, Note [Device-generic operators]) and strided
//! iteration helpers (visiting every element offset of a strided tensor in row-major logical
//! order without allocating per element).

use crate::native::tensor_iterator::TensorIterator;

/// Calls `f(offset)` for every element of a tensor with these sizes and strides (both in
/// elements), in row-major logical order. Offsets are relative to element 0.
pub fn for_each_offset(sizes: &[i64], strides: &[i64], mut f: impl FnMut(isize)) {
    if sizes.contains(&0) {
        return;
    }
    let nd = sizes.len();
    if nd == 0 {
        f(0);
        return;
    }
    let inner = sizes[nd - 1];
    let inner_stride = strides[nd - 1] as isize;
    let mut idx = smallvec::SmallVec::<[i64; 6]>::from_elem(0, nd);
    let mut base: isize = 0;
    loop {
        let mut off = base;
        for _ in 0..inner {
            f(off);
            off += inner_stride;
        }
        // Advance the outer index (dims 0..nd-1) like an odometer.
        let mut d = nd - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            base += strides[d] as isize;
            if idx[d] < sizes[d] {
                break;
            }
            base -= strides[d] as isize * sizes[d] as isize;
            idx[d] = 0;
        }
    }
}

// ---- typed loops over a TensorIterator ------------------------------------------------------------------------------

/// The function a unary loop applies. Every `Fn(A) -> O + Copy` closure is one; a kernel type
/// of its own is for bodies too large for LLVM to inline as a closure (Note [Always-inlined
/// kernels]).
pub trait Kernel1<A, O>: Copy {
    /// `f(a)`.
    fn call(&self, a: A) -> O;
    /// Whether the contiguous runs go by chunks of [`CHUNK`] elements, each through
    /// [`Kernel1::call_near`] when [`Kernel1::near`] accepts all of it (Note [Chunked
    /// kernels]).
    const CHUNKED: bool = false;
    /// Whether [`Kernel1::call_near`] gives `call`'s result for `a`.
    #[inline(always)]
    fn near(&self, _a: A) -> bool {
        false
    }
    /// A cheaper body that equals `call` wherever [`Kernel1::near`] holds.
    #[inline(always)]
    fn call_near(&self, a: A) -> O {
        self.call(a)
    }
}

/// The chunk of Note [Chunked kernels]: one AVX-512 vector of f32.
pub const CHUNK: usize = 16;

// Note [Chunked kernels]
// ~~~~~~~~~~~~~~~~~~~~~~
// A branch-free vectorised body computes every piece of its function for every element and
// selects: the exact GELU evaluates both of erfc's polynomials and the reciprocal the far one
// needs, though on activations nearly every element is near zero. A kernel may name a cheaper
// body and the arguments it is exact for (`near`, `call_near`); the contiguous runs then take
// CHUNK elements at a time, test them all (a vectorised and-reduction), and run the cheap body
// on the chunk when every element passes, the full one otherwise. The cheap body must give the
// full body's bits on its arguments, so the result does not depend on where a chunk starts.

impl<A, O, F: Fn(A) -> O + Copy> Kernel1<A, O> for F {
    #[inline(always)]
    fn call(&self, a: A) -> O {
        self(a)
    }
}

// Note [Always-inlined kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The AVX2 runs below (`run1`'s `avx2`) vectorise the kernel only if it is inlined into them:
// called, it is compiled for the baseline, where a fused multiply-add is a libm call. LLVM
// inlines a closure by its size, and the erf-based bodies (two polynomials, an exponential and
// the selects) are over the limit: the first eager `erfc` ran a software `fmaf` per
// multiply-add, 1.9 s for 16M floats. A kernel type whose `call` is `#[inline(always)]` (as
// `unary::FastF32`) is inlined whatever its size.

/// Whether the contiguous runs below take their AVX2+FMA instantiation (asked once, then a
/// load).
#[inline]
fn use_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

// Note [In-place runs]
// ~~~~~~~~~~~~~~~~~~~~
// A contiguous run reads and writes through raw pointers, so LLVM vectorises it behind a
// run-time check that the output does not overlap an input, and runs the scalar loop when it
// does. An in-place operation (`a.mul_(0.9)`, `add(a, b, out=a)`) has the output *equal* to an
// input, which that check counts as overlap: every in-place run was scalar, 4-5x slower than
// PyTorch's (`buf.mul_(0.9)` on 401,408 f32 took 167 us against 44 us, one Zen 3 core). Equal
// pointers to elements of the same size are safe to vectorise (element i is read, then written,
// by the same iteration), so the runs below read such an input through the output's pointer:
// with one pointer there is nothing for LLVM to check.

/// Whether an input of element type `A` at `a` is the output at `o`, element for element.
#[inline(always)]
fn same_slot<O, A>(o: *mut O, a: *const A) -> bool {
    size_of::<O>() == size_of::<A>() && std::ptr::eq(o.cast_const().cast::<u8>(), a.cast::<u8>())
}

/// Note [AVX2 elementwise runs]: the crate is compiled for baseline x86-64, so a kernel
/// closure's contiguous run vectorises to 4-wide SSE. Each contiguous run of the loops below is
/// also instantiated inside an `avx2` target-feature function, into which the closure
/// inlines, and taken when the CPU has AVX2: 8-wide f32 (measured: `W2.add_1M`, an in-cache
/// add, 130 µs before on one Zen 4 core). Only plain vector instructions change; LLVM does not
/// contract `a * b + c` into an FMA without being allowed to, so results are bit for bit the
/// same. The instantiation also enables FMA, so that an explicit `mul_add` (the fast
/// transcendental bodies of Note [Vectorised transcendentals] in `vec.rs`) is one instruction
/// there instead of a libm call. `out[i] = f(a[i])` for `i < n`.
///
/// # Safety
/// `o` and `a` address `n` elements each (the output may alias the input).
#[inline(always)]
unsafe fn run1<O: Copy, A: Copy, K: Kernel1<A, O>>(o: *mut O, a: *const A, n: usize, kernel: K) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2<O: Copy, A: Copy, K: Kernel1<A, O>>(o: *mut O, a: *const A, n: usize, kernel: K) {
            // SAFETY: the caller's contract.
            unsafe { run1_body(o, a, n, kernel) }
        }
        if use_avx2() {
            // SAFETY: the CPU has AVX2; the pointers are the caller's.
            return unsafe { avx2(o, a, n, kernel) };
        }
    }
    // SAFETY: the caller's contract.
    unsafe { run1_body(o, a, n, kernel) }
}

/// The loop of [`run1`] and [`run1_wide`], inlined into each instantiation.
///
/// # Safety
/// As [`run1`].
#[inline(always)]
unsafe fn run1_body<O: Copy, A: Copy, K: Kernel1<A, O>>(o: *mut O, a: *const A, n: usize, kernel: K) {
    #[inline(always)]
    unsafe fn each<O: Copy, A: Copy, K: Kernel1<A, O>>(o: *mut O, a: *const A, n: usize, kernel: K) {
        let mut done = 0;
        if K::CHUNKED {
            // Note [Chunked kernels].
            while done + CHUNK <= n {
                // SAFETY: the caller's contract; the chunk is read whole before it is written.
                let x: [A; CHUNK] = unsafe { std::ptr::read_unaligned(a.add(done).cast::<[A; CHUNK]>()) };
                let mut near = true;
                for &v in &x {
                    near &= kernel.near(v);
                }
                if near {
                    for (j, &v) in x.iter().enumerate() {
                        // SAFETY: as above.
                        unsafe { *o.add(done + j) = kernel.call_near(v) };
                    }
                } else {
                    for (j, &v) in x.iter().enumerate() {
                        // SAFETY: as above.
                        unsafe { *o.add(done + j) = kernel.call(v) };
                    }
                }
                done += CHUNK;
            }
        }
        for i in done..n {
            // SAFETY: the caller's contract; element i is read before it is written.
            unsafe { *o.add(i) = kernel.call(*a.add(i)) };
        }
    }
    // Note [In-place runs]: an aliased input is read through the output's own pointer.
    // SAFETY: the caller's contract.
    unsafe {
        if same_slot(o, a) {
            each(o, o.cast::<A>(), n, kernel)
        } else {
            each(o, a, n, kernel)
        }
    }
}

// Note [AVX-512 runs for heavy kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The vectorised transcendental bodies (Note [Vectorised transcendentals] in `vec.rs`) hold a
// dozen polynomial coefficients and intermediate vectors at once. In the AVX2 runs they have
// 16 ymm registers, so the coefficients are broadcast again from memory on every iteration and
// values spill; with AVX-512 each iteration covers 16 floats in 32 zmm registers. The exact
// GELU over 2^24 floats took 93 ms in the AVX2 run on an Intel Xeon with AVX-512 (PyTorch: 67
// ms). Only the f32 fast kernels take this instantiation (`unary_wide_loop`): for a simple
// kernel the run is bound by memory, and one more instantiation of every elementwise loop
// would cost compile time for nothing. The instructions are the same operations on wider
// vectors, with multiply-adds fused only where the body asks for `mul_add`, so the results are
// the bits of the AVX2 run, except for the sign and payload of a NaN (softplus of a signalling
// NaN gives the default NaN here); the accuracy test compares the runs.

/// Whether the CPU runs [`run1_wide`]'s AVX-512 instantiation (asked once, then a load).
#[inline]
pub fn use_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("avx512dq")
            && std::is_x86_feature_detected!("avx512bw")
            && use_avx2()
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// [`run1`] with an AVX-512 instantiation taken where the CPU has it (Note [AVX-512 runs for
/// heavy kernels]).
///
/// # Safety
/// As [`run1`].
unsafe fn run1_wide<O: Copy, A: Copy, K: Kernel1<A, O>>(o: *mut O, a: *const A, n: usize, kernel: K) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
        unsafe fn avx512<O: Copy, A: Copy, K: Kernel1<A, O>>(o: *mut O, a: *const A, n: usize, kernel: K) {
            // SAFETY: the caller's contract.
            unsafe { run1_body(o, a, n, kernel) }
        }
        if use_avx512() {
            // SAFETY: the CPU has the features; the pointers are the caller's.
            return unsafe { avx512(o, a, n, kernel) };
        }
    }
    // SAFETY: the caller's contract.
    unsafe { run1(o, a, n, kernel) }
}

/// `out[i] = f(a[i], b[i])` for `i < n`, as [`run1`] (Note [AVX2 elementwise runs]).
///
/// # Safety
/// `o`, `a` and `b` address `n` elements each (the output may alias an input).
#[inline(always)]
unsafe fn run2<O: Copy, A: Copy, B: Copy>(
    o: *mut O,
    a: *const A,
    b: *const B,
    n: usize,
    kernel: impl Fn(A, B) -> O + Copy,
) {
    #[inline(always)]
    unsafe fn body<O: Copy, A: Copy, B: Copy>(
        o: *mut O,
        a: *const A,
        b: *const B,
        n: usize,
        kernel: impl Fn(A, B) -> O + Copy,
    ) {
        #[inline(always)]
        unsafe fn each<O: Copy, A: Copy, B: Copy>(
            o: *mut O,
            a: *const A,
            b: *const B,
            n: usize,
            kernel: impl Fn(A, B) -> O + Copy,
        ) {
            for i in 0..n {
                // SAFETY: the caller's contract; element i is read before it is written.
                unsafe { *o.add(i) = kernel(*a.add(i), *b.add(i)) };
            }
        }
        // Note [In-place runs]: an aliased input is read through the output's own pointer.
        // SAFETY: the caller's contract.
        unsafe {
            match (same_slot(o, a), same_slot(o, b)) {
                (true, true) => each(o, o.cast::<A>(), o.cast::<B>(), n, kernel),
                (true, false) => each(o, o.cast::<A>(), b, n, kernel),
                (false, true) => each(o, a, o.cast::<B>(), n, kernel),
                (false, false) => each(o, a, b, n, kernel),
            }
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2<O: Copy, A: Copy, B: Copy>(
            o: *mut O,
            a: *const A,
            b: *const B,
            n: usize,
            kernel: impl Fn(A, B) -> O + Copy,
        ) {
            // SAFETY: the caller's contract.
            unsafe { body(o, a, b, n, kernel) }
        }
        if use_avx2() {
            // SAFETY: the CPU has AVX2; the pointers are the caller's.
            return unsafe { avx2(o, a, b, n, kernel) };
        }
    }
    // SAFETY: the caller's contract.
    unsafe { body(o, a, b, n, kernel) }
}

/// `out[i] = f(a[i], b[i], c[i])` for `i < n`, as [`run1`] (Note [AVX2 elementwise runs]); the
/// in-place form (`addcmul_`, `lerp_`: the output is the first input) reads it through the
/// output's pointer (Note [In-place runs]).
///
/// # Safety
/// `o`, `a`, `b` and `c` address `n` elements each (the output may alias an input).
#[inline(always)]
unsafe fn run3<O: Copy, A: Copy, B: Copy, C: Copy>(
    o: *mut O,
    a: *const A,
    b: *const B,
    c: *const C,
    n: usize,
    kernel: impl Fn(A, B, C) -> O + Copy,
) {
    #[inline(always)]
    unsafe fn body<O: Copy, A: Copy, B: Copy, C: Copy>(
        o: *mut O,
        a: *const A,
        b: *const B,
        c: *const C,
        n: usize,
        kernel: impl Fn(A, B, C) -> O + Copy,
    ) {
        #[inline(always)]
        unsafe fn each<O: Copy, A: Copy, B: Copy, C: Copy>(
            o: *mut O,
            a: *const A,
            b: *const B,
            c: *const C,
            n: usize,
            kernel: impl Fn(A, B, C) -> O + Copy,
        ) {
            for i in 0..n {
                // SAFETY: the caller's contract; element i is read before it is written.
                unsafe { *o.add(i) = kernel(*a.add(i), *b.add(i), *c.add(i)) };
            }
        }
        // Note [In-place runs]: an aliased first input is read through the output's pointer.
        // SAFETY: the caller's contract.
        unsafe {
            if same_slot(o, a) {
                each(o, o.cast::<A>(), b, c, n, kernel)
            } else {
                each(o, a, b, c, n, kernel)
            }
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2<O: Copy, A: Copy, B: Copy, C: Copy>(
            o: *mut O,
            a: *const A,
            b: *const B,
            c: *const C,
            n: usize,
            kernel: impl Fn(A, B, C) -> O + Copy,
        ) {
            // SAFETY: the caller's contract.
            unsafe { body(o, a, b, c, n, kernel) }
        }
        if use_avx2() {
            // SAFETY: the CPU has AVX2; the pointers are the caller's.
            return unsafe { avx2(o, a, b, c, n, kernel) };
        }
    }
    // SAFETY: the caller's contract.
    unsafe { body(o, a, b, c, n, kernel) }
}

/// `out = f(a)` over an iterator with one output and one input of element types `O` and `A`.
pub fn unary_loop<O: Copy, A: Copy>(iter: &TensorIterator, f: impl Fn(A) -> O + Sync + Copy) {
    unary_kernel_loop(iter, f)
}

/// [`unary_loop`] with a [`Kernel1`]: a kernel type of its own is always inlined into the
/// vectorised runs (Note [Always-inlined kernels]).
pub fn unary_kernel_loop<O: Copy, A: Copy, K: Kernel1<A, O> + Sync>(iter: &TensorIterator, f: K) {
    unary_loop_runs(iter, f, run1::<O, A, K>)
}

/// [`unary_kernel_loop`] whose contiguous runs also have an AVX-512 instantiation (Note
/// [AVX-512 runs for heavy kernels]).
pub fn unary_wide_loop<O: Copy, A: Copy, K: Kernel1<A, O> + Sync>(iter: &TensorIterator, f: K) {
    unary_loop_runs(iter, f, run1_wide::<O, A, K>)
}

/// The loop of [`unary_kernel_loop`], with `run` for its contiguous runs (called once per run).
fn unary_loop_runs<O: Copy, A: Copy, K: Kernel1<A, O> + Sync>(
    iter: &TensorIterator,
    f: K,
    run: unsafe fn(*mut O, *const A, usize, K),
) {
    let (so, sa) = (size_of::<O>() as isize, size_of::<A>() as isize);
    iter.for_each(|p, s, n| {
        // Note [Kernel closures in registers]: a local copy of the kernel closure `f`. Its captured
        // scalars (an `alpha`, a threshold) otherwise stay behind a pointer that the output
        // stores might alias, so they are reloaded per element and the loop is not vectorised.
        let kernel = f;
        let (o, a) = (p[0] as *mut O, p[1] as *const A);
        // SAFETY: the iterator hands out pointers to n elements along byte strides s[0], s[1]
        // inside live storage of the right dtypes (Note [Iteration order]); raw-pointer access
        // allows the output to alias the input (in-place ops).
        unsafe {
            if n == 1 {
                // Note [One-element runs]: a one-element operation would otherwise run the
                // set-up of the vectorised loop below (overlap checks, a remainder loop), a tenth
                // of all its instructions.
                *o = kernel.call(*a);
            } else if s[0] == so && s[1] == sa {
                run(o, a, n, kernel);
            } else if s[0] == so && s[1] == 0 {
                let v = kernel.call(*a);
                for i in 0..n {
                    *o.add(i) = v;
                }
            } else {
                for i in 0..n as isize {
                    *(o as *mut u8).offset(i * s[0]).cast::<O>() =
                        kernel.call(*(a as *const u8).offset(i * s[1]).cast::<A>());
                }
            }
        }
    });
}

/// `out = f(a, b)` over an iterator with one output and two inputs.
pub fn binary_loop<O: Copy, A: Copy, B: Copy>(iter: &TensorIterator, f: impl Fn(A, B) -> O + Sync + Copy) {
    let (so, sa, sb) = (size_of::<O>() as isize, size_of::<A>() as isize, size_of::<B>() as isize);
    iter.for_each(|p, s, n| {
        let kernel = f; // Note [Kernel closures in registers]
        let (o, a, b) = (p[0] as *mut O, p[1] as *const A, p[2] as *const B);
        // SAFETY: as in `unary_loop`: n elements along the given byte strides of live storage.
        unsafe {
            if n == 1 {
                // Note [One-element runs].
                *o = kernel(*a, *b);
            } else if s[0] == so && s[1] == sa && s[2] == sb {
                run2(o, a, b, n, kernel);
            } else if s[0] == so && s[1] == sa && s[2] == 0 {
                let bv = *b;
                run1(o, a, n, move |x| kernel(x, bv));
            } else if s[0] == so && s[1] == 0 && s[2] == sb {
                let av = *a;
                run1(o, b, n, move |y| kernel(av, y));
            } else {
                for i in 0..n as isize {
                    let x = *(a as *const u8).offset(i * s[1]).cast::<A>();
                    let y = *(b as *const u8).offset(i * s[2]).cast::<B>();
                    *(o as *mut u8).offset(i * s[0]).cast::<O>() = kernel(x, y);
                }
            }
        }
    });
}

/// `out = f(a, b, c)` over an iterator with one output and three inputs.
pub fn ternary_loop<O: Copy, A: Copy, B: Copy, C: Copy>(iter: &TensorIterator, f: impl Fn(A, B, C) -> O + Sync + Copy) {
    let sizes = [size_of::<O>(), size_of::<A>(), size_of::<B>(), size_of::<C>()].map(|z| z as isize);
    iter.for_each(|p, s, n| {
        // Note [Kernel closures in registers]
        let kernel = f;
        // SAFETY: as in `unary_loop`: n elements along the given byte strides of live storage.
        unsafe {
            if n > 1 && s[..4] == sizes {
                let (o, a, b, c) = (p[0] as *mut O, p[1] as *const A, p[2] as *const B, p[3] as *const C);
                run3(o, a, b, c, n, kernel);
                return;
            }
            for i in 0..n as isize {
                let x = *p[1].offset(i * s[1]).cast::<A>();
                let y = *p[2].offset(i * s[2]).cast::<B>();
                let z = *p[3].offset(i * s[3]).cast::<C>();
                *p[0].offset(i * s[0]).cast::<O>() = kernel(x, y, z);
            }
        }
    });
}

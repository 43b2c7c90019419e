//! The CUDA loop of convolutions' column matrices (`kernels/conv.cu`, Note [Convolution as
//! GEMM] in aten's `native::conv`): `im2col` and its adjoint `col2im`.

use aten::native::stub::ColumnGeometry;
use aten::Tensor;
use c10::{Error, Result};

use crate::args::KcColumns;
use crate::driver::{KernelArgs, StreamId};
use crate::geometry::elementwise_launch;
use crate::loops::family;

/// `im2col_<T>(KcColumns, cols, images)` or `col2im_<T>(KcColumns, images, cols)`
/// (`aten::native::stub::ColumnsLoop`): one thread per element written.
pub(crate) fn columns(images: &Tensor, cols: &Tensor, g: &ColumnGeometry, fold: bool) -> Result<()> {
    let op = if fold { "col2im" } else { "im2col" };
    let id = if fold { family!("col2im") } else { family!("im2col") }.get(op, images.dtype())?;
    let sizes = [&[g.channels][..], &g.input, &g.kernel, &g.out, &g.padding];
    if sizes.iter().any(|v| v.iter().any(|&x| x < 0)) || g.stride.iter().chain(&g.dilation).any(|&x| x < 1) {
        return Err(Error::Cuda(format!("{op}: not a convolution's geometry: {g:?}")));
    }
    let n = images.sizes().first().copied().unwrap_or(0);
    let k: i64 = g.kernel.iter().product();
    let l: i64 = g.out.iter().product();
    let image_shape = [n, g.channels, g.input[0], g.input[1], g.input[2]];
    let cols_numel = [n, g.channels, k, l].iter().try_fold(1i64, |acc, &v| acc.checked_mul(v));
    let fits = images.is_contiguous()
        && cols.is_contiguous()
        && images.dtype() == cols.dtype()
        && images.numel() == image_shape.iter().product::<i64>()
        && images.sizes().first() == Some(&n)
        && Some(cols.numel()) == cols_numel;
    if !fits {
        return Err(Error::Cuda(format!(
            "{op}: the loop takes contiguous images {image_shape:?} and columns [{n}, {} * {k}, {l}] of one dtype \
             (got {:?} and {:?})",
            g.channels,
            images.sizes(),
            cols.sizes()
        )));
    }
    let work = if fold { images.numel() } else { cols.numel() };
    if work == 0 {
        return Ok(());
    }
    let kc = KcColumns {
        n,
        channels: g.channels,
        input: g.input,
        kernel: g.kernel,
        out: g.out,
        stride: g.stride,
        padding: g.padding,
        dilation: g.dilation,
    };
    let device = images.device();
    let mut args = KernelArgs::new();
    args.push(kc);
    if fold {
        args.push(images.data_ptr() as u64).push(cols.data_ptr() as u64);
    } else {
        args.push(cols.data_ptr() as u64).push(images.data_ptr() as u64);
    }
    let stream = StreamId(crate::runtime::current_stream(device)?.id);
    let mut params = args.params();
    // SAFETY: im2col_<T> takes (KcColumns, T* cols, const T* images) and col2im_<T> (KcColumns, T*
    // images, const T* cols); both tensors are live, contiguous, of dtype T and hold exactly the
    // element counts of the geometry checked above (no size negative, strides and dilations
    // positive); im2col reads an image element only at coordinates inside `input` and col2im a
    // column only at positions inside `out`, so every index the kernels form lies inside them.
    unsafe { crate::driver::launch(device.index as usize, id, &elementwise_launch(work, stream), &mut params) }
}

//! `copy_` for every copy that involves a CUDA tensor (host to device, device to host, within a
//! device and between devices, strided and converting), and the device-generic `_to_copy`.

use aten::Tensor;
use c10::Result;

pub use aten::native::copy::to_copy;

/// `copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)` when either tensor
/// is on a CUDA device. `non_blocking` is accepted; copies with the host finish before the call
/// returns (there is no pinned host memory yet), which is what a blocking copy promises.
pub fn copy_(self_: &Tensor, src: &Tensor, non_blocking: bool) -> Result<Tensor> {
    #[cfg(feature = "cuda")]
    {
        crate::copies::copy_(self_, src, non_blocking)?;
        Ok(self_.clone())
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (self_, src, non_blocking);
        Err(c10::Error::Cuda("copy_: kernels-cuda was built without its `cuda` feature".into()))
    }
}

//! The tensors of a parity directory: safetensors entries decoded into `aten::Tensor`s, and the
//! non-contiguous copies that `"noncontig": true` asks for.
//!
//! Note [Decoding safetensors bytes]: the data of an entry is little-endian and need not be
//! aligned for its dtype (entries are packed back to back after a JSON header), so elements are
//! decoded with `from_le_bytes` into a fresh `Vec` rather than reinterpreting the bytes.

use std::path::{Path, PathBuf};

use aten::{IValue, Tensor};
use c10::MemoryFormat;
use safetensors::{Dtype, SafeTensors};

use super::args::call_op_tensor;
use super::compare::{compare_tensors, Tolerance};

/// Read access to the tensors of a `tensors.safetensors` file held in memory.
pub struct TensorStore<'a> {
    path: PathBuf,
    file: SafeTensors<'a>,
    /// Keys of complex tensors, stored as their `view_as_real` (the file's `complex` metadata).
    complex: std::collections::HashSet<String>,
}

impl<'a> TensorStore<'a> {
    /// Parses the header of a safetensors file; `path` names the file in errors.
    pub fn new(path: &Path, bytes: &'a [u8]) -> Result<Self, String> {
        let file = SafeTensors::deserialize(bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let (_, meta) = SafeTensors::read_metadata(bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let complex = match meta.metadata().as_ref().and_then(|m| m.get("complex")) {
            Some(list) => serde_json::from_str::<Vec<String>>(list)
                .map_err(|e| format!("{}: the complex metadata is not a list of keys: {e}", path.display()))?
                .into_iter()
                .collect(),
            None => Default::default(),
        };
        Ok(TensorStore { path: path.to_path_buf(), file, complex })
    }

    /// The tensor stored under `key`, contiguous, or (with `noncontig`) a non-contiguous tensor
    /// with the same values.
    pub fn tensor(&self, key: &str, noncontig: bool) -> Result<Tensor, String> {
        let view = self.file.tensor(key).map_err(|e| format!("{}: tensor '{key}': {e}", self.path.display()))?;
        let shape: Vec<i64> = view.shape().iter().map(|&s| s as i64).collect();
        let t = decode(view.dtype(), &shape, view.data())
            .map_err(|e| format!("{}: tensor '{key}': {e}", self.path.display()))?;
        if self.complex.contains(key) {
            let z = aten::ops::view_as_complex(&t).map_err(|e| format!("complex tensor '{key}': {e}"))?;
            if !noncontig {
                return Ok(z);
            }
            // A non-contiguous complex tensor: every other element of a doubled copy.
            let mut doubled = z.sizes().to_vec();
            let last = doubled.len().saturating_sub(1);
            if doubled.is_empty() {
                return Ok(z);
            }
            doubled[last] *= 2;
            let wide = aten::ops::zeros(&doubled, Some(z.dtype()), None, None, None).map_err(|e| e.to_string())?;
            let nc = aten::ops::slice(&wide, last as i64, Some(0), None, 2).map_err(|e| e.to_string())?;
            aten::ops::copy_(&nc, &z, false).map_err(|e| e.to_string())?;
            return Ok(nc);
        }
        if !noncontig {
            return Ok(t);
        }
        let nc = make_noncontiguous(&t, view.dtype(), view.data())
            .map_err(|e| format!("non-contiguous copy of '{key}': {e}"))?;
        compare_tensors(&nc, &t, Tolerance::EXACT)
            .map_err(|e| format!("non-contiguous copy of '{key}' has other values than the original: {e}"))?;
        Ok(nc)
    }
}

/// Decodes the bytes of a safetensors entry into a contiguous CPU tensor of the same dtype
/// (`nn::serialize::decode`; see Note [Decoding safetensors bytes]).
pub fn decode(dtype: Dtype, shape: &[i64], data: &[u8]) -> Result<Tensor, String> {
    let shape: Vec<usize> = shape.iter().map(|&s| s.max(0) as usize).collect();
    nn::serialize::decode(dtype, &shape, data).map_err(|e| e.to_string())
}

/// A non-contiguous tensor with the values of `t` (whose raw contiguous bytes are `data`).
///
/// For two or more dimensions: `t.transpose(-1, -2).contiguous().transpose(-1, -2)`, the layout
/// PyTorch's tests use, built by calling `transpose.int` and `clone` through the dispatcher.
/// Where that is still contiguous (a size-1 dimension among the last two) and for 1-d tensors:
/// every element followed by a zero in a tensor with a doubled last dimension, then
/// `slice.Tensor(dim=-1, step=2)`, so every stride is doubled. A kernel that ignores strides
/// reads the zeros and fails.
fn make_noncontiguous(t: &Tensor, dtype: Dtype, data: &[u8]) -> Result<Tensor, String> {
    if t.dim() >= 2 {
        let tr = |x: Tensor| {
            call_op_tensor("transpose.int", vec![IValue::Tensor(x), IValue::Int(-1), IValue::Int(-2)], vec![])
        };
        let contiguous_t = call_op_tensor(
            "clone",
            vec![IValue::Tensor(tr(t.clone())?)],
            vec![("memory_format", IValue::MemoryFormat(MemoryFormat::Contiguous))],
        )?;
        let nc = tr(contiguous_t)?;
        if !nc.is_contiguous() {
            return Ok(nc);
        }
    }
    if t.dim() >= 1 {
        let elem = data.len().checked_div(t.numel() as usize).unwrap_or(0);
        if elem > 0 {
            let mut doubled = Vec::with_capacity(2 * data.len());
            for c in data.chunks_exact(elem) {
                doubled.extend_from_slice(c);
                doubled.extend(std::iter::repeat_n(0u8, elem));
            }
            let mut shape = t.sizes().to_vec();
            if let Some(last) = shape.last_mut() {
                *last *= 2;
            }
            let wide = decode(dtype, &shape, &doubled)?;
            let args = vec![IValue::Tensor(wide), IValue::Int(-1), IValue::Int(0), IValue::None, IValue::Int(2)];
            let nc = call_op_tensor("slice.Tensor", args, vec![])?;
            if !nc.is_contiguous() {
                return Ok(nc);
            }
        }
    }
    Err(format!("a tensor of shape {:?} has no non-contiguous layout (it needs at least two elements)", t.sizes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use c10::{bf16, f16, ScalarType};

    #[test]
    fn decodes_every_dtype_from_unaligned_bytes() {
        // An odd offset makes every multi-byte element unaligned.
        let mut buf = vec![0u8];
        buf.extend(1.5f32.to_le_bytes());
        buf.extend((-2.25f32).to_le_bytes());
        let t = decode(Dtype::F32, &[2], &buf[1..]).unwrap();
        assert_eq!(t.dtype(), ScalarType::F32);
        assert_eq!(t.to_vec::<f32>().unwrap(), [1.5, -2.25]);

        let big = (1i64 << 60) + 1;
        let t = decode(Dtype::I64, &[1, 1], &big.to_le_bytes()).unwrap();
        assert_eq!((t.sizes(), t.to_vec::<i64>().unwrap()), (&[1i64, 1][..], vec![big]));

        let cases: [(Dtype, Vec<u8>, ScalarType, f64); 8] = [
            (Dtype::F64, 0.1f64.to_le_bytes().to_vec(), ScalarType::F64, 0.1),
            (Dtype::F16, f16::from_f64(0.5).to_le_bytes().to_vec(), ScalarType::F16, 0.5),
            (Dtype::BF16, bf16::from_f64(-3.0).to_le_bytes().to_vec(), ScalarType::BF16, -3.0),
            (Dtype::I32, (-7i32).to_le_bytes().to_vec(), ScalarType::I32, -7.0),
            (Dtype::I16, 300i16.to_le_bytes().to_vec(), ScalarType::I16, 300.0),
            (Dtype::I8, vec![0xff], ScalarType::I8, -1.0),
            (Dtype::U8, vec![0xff], ScalarType::U8, 255.0),
            (Dtype::BOOL, vec![1], ScalarType::Bool, 1.0),
        ];
        for (dt, bytes, st, v) in cases {
            let t = decode(dt, &[], &bytes).unwrap();
            assert_eq!(t.dtype(), st, "{dt:?}");
            assert_eq!(t.to_vec::<f64>().unwrap(), [v], "{dt:?}");
        }
        assert!(decode(Dtype::F32, &[2], &[0u8; 7]).is_err());
        assert!(decode(Dtype::F32, &[3], &[0u8; 8]).is_err());
        assert!(decode(Dtype::U64, &[1], &[0u8; 8]).unwrap_err().contains("not supported"));
    }
}

//! Readers for MNIST-style digit datasets: the IDX files of MNIST and Fashion-MNIST (gzipped or
//! raw), and the CSV layout of the digits shipped in `data/mnist_5k.csv.gz`.
//!
//! Images come back as `u8` tensors `[N, 1, 28, 28]` and labels as `int64` tensors `[N]`;
//! [`Mnist::images_f32`] gives torchvision's `ToTensor()` + `Normalize(mean, std)` floats.
//! A malformed file is an [`Error::Io`] naming the file and what is wrong.

use std::io::Read;
use std::path::{Path, PathBuf};

use aten::Tensor;
use c10::{Error, Result};

use super::dataset::TensorDataset;

/// The mean pixel of the MNIST training images, scaled to `[0, 1]` (torchvision's usual
/// `Normalize((0.1307,), (0.3081,))`).
pub const MNIST_MEAN: f32 = 0.1307;
/// The standard deviation of the MNIST training pixels, scaled to `[0, 1]`.
pub const MNIST_STD: f32 = 0.3081;
/// The mean pixel of the Fashion-MNIST training images, scaled to `[0, 1]`.
pub const FASHION_MNIST_MEAN: f32 = 0.2860;
/// The standard deviation of the Fashion-MNIST training pixels, scaled to `[0, 1]`.
pub const FASHION_MNIST_STD: f32 = 0.3530;

/// The IDX magic number of an image file (`u8` data, 3 dimensions).
const IDX_IMAGES_MAGIC: u32 = 0x0000_0803;
/// The IDX magic number of a label file (`u8` data, 1 dimension).
const IDX_LABELS_MAGIC: u32 = 0x0000_0801;
/// Pixels per side of an MNIST image.
const SIDE: usize = 28;

/// An error about the file at `path`.
fn file_error(path: &Path, msg: impl std::fmt::Display) -> Error {
    Error::Io(format!("{}: {msg}", path.display()))
}

/// The bytes of a file as stored (the `*_bytes` readers gunzip them).
fn read_raw(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| file_error(path, format!("cannot read: {e}")))
}

/// `raw` gunzipped when it starts with the gzip magic (whatever the file's name), else `raw`
/// itself; `path` names the source in errors.
fn gunzip_if_gz<'a>(raw: std::borrow::Cow<'a, [u8]>, path: &Path) -> Result<std::borrow::Cow<'a, [u8]>> {
    if !raw.starts_with(&[0x1f, 0x8b]) {
        return Ok(raw);
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(&*raw)
        .read_to_end(&mut out)
        .map_err(|e| file_error(path, format!("bad gzip data: {e}")))?;
    Ok(out.into())
}

// ---- IDX --------------------------------------------------------------------------------------

/// The parsed header of an IDX file.
struct IdxHeader {
    magic: u32,
    type_code: u8,
    dims: Vec<usize>,
    /// Where the data starts.
    offset: usize,
}

/// Parses and checks the header of `bytes`, the content of `path`, and checks that exactly
/// the data it announces follows.
fn idx_header(path: &Path, bytes: &[u8]) -> Result<IdxHeader> {
    let Some(magic) = bytes.get(..4) else {
        return Err(file_error(
            path,
            format!("truncated: {} bytes, shorter than the 4-byte IDX magic number", bytes.len()),
        ));
    };
    let magic = u32::from_be_bytes([magic[0], magic[1], magic[2], magic[3]]);
    let (type_code, ndim) = (bytes[2], bytes[3] as usize);
    if bytes[0] != 0 || bytes[1] != 0 || idx_elem_size(type_code).is_none() {
        return Err(file_error(
            path,
            format!(
                "bad magic number 0x{magic:08x}: not an IDX file (expected two zero bytes, a type code among \
                 0x08, 0x09, 0x0b, 0x0c, 0x0d, 0x0e and the number of dimensions)"
            ),
        ));
    }
    let offset = 4 + 4 * ndim;
    let Some(header) = bytes.get(4..offset) else {
        return Err(file_error(path, format!("truncated: the header of {ndim} dimension sizes ends early")));
    };
    let dims: Vec<usize> =
        header.chunks_exact(4).map(|d| u32::from_be_bytes([d[0], d[1], d[2], d[3]]) as usize).collect();
    let count = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    let expected = count.and_then(|n| n.checked_mul(idx_elem_size(type_code).unwrap_or(1)));
    let Some(expected) = expected else {
        return Err(file_error(path, format!("the dimensions {dims:?} are too large")));
    };
    let found = bytes.len() - offset;
    if found < expected {
        return Err(file_error(
            path,
            format!(
                "truncated: the header announces dimensions {dims:?} ({expected} bytes of data), found {found} bytes"
            ),
        ));
    }
    if found > expected {
        return Err(file_error(
            path,
            format!("{} unexpected bytes after the {expected} bytes of data of dimensions {dims:?}", found - expected),
        ));
    }
    Ok(IdxHeader { magic, type_code, dims, offset })
}

/// Bytes per element of an IDX type code.
fn idx_elem_size(type_code: u8) -> Option<usize> {
    match type_code {
        0x08 | 0x09 => Some(1),
        0x0b => Some(2),
        0x0c | 0x0d => Some(4),
        0x0e => Some(8),
        _ => None,
    }
}

/// Reads any IDX file (the format of MNIST's files: a big-endian header with the element type
/// and the dimensions, then the data), gzipped or raw, into a tensor of the file's dimensions
/// and element type (`u8`, `i8`, `i16`, `i32`, `f32` or `f64`).
pub fn read_idx(path: impl AsRef<Path>) -> Result<Tensor> {
    let path = path.as_ref();
    read_idx_bytes(&read_raw(path)?, path)
}

/// [`read_idx`] on the bytes of a file already in memory (gzipped or raw); `path` names the
/// source in errors.
pub fn read_idx_bytes(bytes: &[u8], path: &Path) -> Result<Tensor> {
    let bytes = gunzip_if_gz(bytes.into(), path)?;
    let h = idx_header(path, &bytes)?;
    let shape: Vec<i64> = h.dims.iter().map(|&d| d as i64).collect();
    let data = &bytes[h.offset..];
    /// Decodes big-endian elements of `$t`.
    macro_rules! be {
        ($t:ty) => {{
            const N: usize = std::mem::size_of::<$t>();
            let v: Vec<$t> =
                data.chunks_exact(N).map(|c| <$t>::from_be_bytes(c.try_into().expect("chunk of N bytes"))).collect();
            Tensor::from_vec(v, &shape)
        }};
    }
    match h.type_code {
        0x08 => Tensor::from_vec(data.to_vec(), &shape),
        0x09 => be!(i8),
        0x0b => be!(i16),
        0x0c => be!(i32),
        0x0d => be!(f32),
        _ => be!(f64),
    }
}

/// Reads an IDX image file (magic number 2051, e.g. `train-images-idx3-ubyte[.gz]`) as a `u8`
/// tensor `[N, 1, rows, cols]`.
pub fn read_idx_images(path: impl AsRef<Path>) -> Result<Tensor> {
    let path = path.as_ref();
    read_idx_images_bytes(&read_raw(path)?, path)
}

/// [`read_idx_images`] on the bytes of a file already in memory (gzipped or raw); `path` names
/// the source in errors.
pub fn read_idx_images_bytes(bytes: &[u8], path: &Path) -> Result<Tensor> {
    let bytes = gunzip_if_gz(bytes.into(), path)?;
    let h = idx_header(path, &bytes)?;
    if h.magic != IDX_IMAGES_MAGIC {
        return Err(file_error(
            path,
            format!(
                "bad magic number 0x{:08x}, expected 0x{IDX_IMAGES_MAGIC:08x} (2051) for an IDX image file",
                h.magic
            ),
        ));
    }
    let [n, rows, cols] = [h.dims[0], h.dims[1], h.dims[2]].map(|d| d as i64);
    Tensor::from_vec(bytes[h.offset..].to_vec(), &[n, 1, rows, cols])
}

/// Reads an IDX label file (magic number 2049, e.g. `train-labels-idx1-ubyte[.gz]`) as an
/// `int64` tensor `[N]`.
pub fn read_idx_labels(path: impl AsRef<Path>) -> Result<Tensor> {
    let path = path.as_ref();
    read_idx_labels_bytes(&read_raw(path)?, path)
}

/// [`read_idx_labels`] on the bytes of a file already in memory (gzipped or raw); `path` names
/// the source in errors.
pub fn read_idx_labels_bytes(bytes: &[u8], path: &Path) -> Result<Tensor> {
    let bytes = gunzip_if_gz(bytes.into(), path)?;
    let h = idx_header(path, &bytes)?;
    if h.magic != IDX_LABELS_MAGIC {
        return Err(file_error(
            path,
            format!(
                "bad magic number 0x{:08x}, expected 0x{IDX_LABELS_MAGIC:08x} (2049) for an IDX label file",
                h.magic
            ),
        ));
    }
    let labels: Vec<i64> = bytes[h.offset..].iter().map(|&b| b as i64).collect();
    Tensor::from_vec(labels, &[h.dims[0] as i64])
}

// ---- CSV --------------------------------------------------------------------------------------

/// Reads digits in CSV form, gzipped or raw: one image per line, `28 * 28` pixel values in
/// `0..=255` then the label in `0..=9`, comma-separated, no header (the layout of
/// `data/mnist_5k.csv.gz`). Blank lines are skipped.
pub fn read_mnist_csv(path: impl AsRef<Path>) -> Result<Mnist> {
    let path = path.as_ref();
    parse_mnist_csv(read_raw(path)?.as_slice(), path)
}

/// [`read_mnist_csv`] from any reader (gzipped or raw text); `path` names the source in errors.
pub fn parse_mnist_csv(mut reader: impl Read, path: &Path) -> Result<Mnist> {
    let mut raw = Vec::new();
    reader.read_to_end(&mut raw).map_err(|e| file_error(path, format!("cannot read: {e}")))?;
    let bytes = gunzip_if_gz(raw.into(), path)?;
    let text = std::str::from_utf8(&bytes).map_err(|e| file_error(path, format!("not UTF-8 text: {e}")))?;
    const PIXELS: usize = SIDE * SIDE;
    let mut pixels: Vec<u8> = Vec::new();
    let mut labels: Vec<i64> = Vec::new();
    let mut fields: Vec<&str> = Vec::with_capacity(PIXELS + 1);
    for (line_no, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())) {
        if line.is_empty() {
            continue;
        }
        fields.clear();
        fields.extend(line.split(',').map(str::trim));
        if fields.len() != PIXELS + 1 {
            return Err(file_error(
                path,
                format!(
                    "line {line_no}: expected {} comma-separated values ({PIXELS} pixels then the label), found {}",
                    PIXELS + 1,
                    fields.len()
                ),
            ));
        }
        for (col, field) in fields[..PIXELS].iter().enumerate() {
            let v = field.parse::<u8>().map_err(|_| {
                file_error(
                    path,
                    format!(
                        "line {line_no}, column {}: `{field}` is not a pixel value (an integer in 0..=255)",
                        col + 1
                    ),
                )
            })?;
            pixels.push(v);
        }
        match fields[PIXELS].parse::<u8>() {
            Ok(l) if l <= 9 => labels.push(l as i64),
            _ => {
                return Err(file_error(
                    path,
                    format!("line {line_no}, column {}: `{}` is not a digit label (0..=9)", PIXELS + 1, fields[PIXELS]),
                ));
            }
        }
    }
    if labels.is_empty() {
        return Err(file_error(path, "no samples"));
    }
    let n = labels.len() as i64;
    Mnist::new(Tensor::from_vec(pixels, &[n, 1, SIDE as i64, SIDE as i64])?, Tensor::from_vec(labels, &[n])?)
}

// ---- Mnist ------------------------------------------------------------------------------------

/// MNIST-style images with their labels (torchvision's `MNIST` / `FashionMNIST` without the
/// download): `u8` images `[N, 1, rows, cols]` and `int64` labels `[N]`.
///
/// ```no_run
/// use nn::data::{DataLoader, Mnist, MNIST_MEAN, MNIST_STD};
/// let train = Mnist::load("/usr/share/datasets/fashion-mnist", true).unwrap();
/// let loader = DataLoader::builder(train.dataset(MNIST_MEAN, MNIST_STD).unwrap())
///     .batch_size(64)
///     .shuffle(true)
///     .build()
///     .unwrap();
/// for batch in &loader {
///     let (images, labels) = batch.unwrap();
///     assert_eq!((images.sizes()[1..].to_vec(), labels.dim()), (vec![1, 28, 28], 1)); // f32, i64
/// }
/// ```
#[derive(Clone, Debug)]
pub struct Mnist {
    images: Tensor,
    labels: Tensor,
}

impl Mnist {
    /// Pairs `u8` images `[N, 1, rows, cols]` with `int64` labels `[N]`.
    pub fn new(images: Tensor, labels: Tensor) -> Result<Self> {
        const OP: &str = "Mnist";
        if images.dtype() != c10::ScalarType::U8 || images.dim() != 4 || images.sizes()[1] != 1 {
            return Err(Error::invalid(
                OP,
                format!(
                    "images must be uint8 of shape [N, 1, rows, cols], got {} {:?}",
                    images.dtype(),
                    images.sizes()
                ),
            ));
        }
        if labels.dtype() != c10::ScalarType::I64 || labels.dim() != 1 {
            return Err(Error::invalid(
                OP,
                format!("labels must be int64 of shape [N], got {} {:?}", labels.dtype(), labels.sizes()),
            ));
        }
        if images.sizes()[0] != labels.sizes()[0] {
            return Err(Error::invalid(OP, format!("{} images but {} labels", images.sizes()[0], labels.sizes()[0])));
        }
        Ok(Mnist { images, labels })
    }

    /// Reads the training (`train = true`: `train-images-idx3-ubyte`, `train-labels-idx1-ubyte`)
    /// or test (`t10k-*`) split from the IDX files in `root`, each gzipped (`.gz`) or raw. Serves
    /// MNIST and Fashion-MNIST (`/usr/share/datasets/fashion-mnist` from Debian's
    /// `dataset-fashion-mnist`).
    pub fn load(root: impl AsRef<Path>, train: bool) -> Result<Self> {
        let root = root.as_ref();
        let split = if train { "train" } else { "t10k" };
        let images_path = find_file(root, &format!("{split}-images-idx3-ubyte"))?;
        let labels_path = find_file(root, &format!("{split}-labels-idx1-ubyte"))?;
        let images = read_idx_images(&images_path)?;
        let labels = read_idx_labels(&labels_path)?;
        if images.sizes()[0] != labels.sizes()[0] {
            return Err(file_error(
                &images_path,
                format!("{} images, but {} has {} labels", images.sizes()[0], labels_path.display(), labels.sizes()[0]),
            ));
        }
        Mnist::new(images, labels)
    }

    /// Reads digits in the CSV layout of [`read_mnist_csv`].
    pub fn from_csv(path: impl AsRef<Path>) -> Result<Self> {
        read_mnist_csv(path)
    }

    /// The number of images.
    pub fn len(&self) -> usize {
        self.labels.sizes()[0] as usize
    }

    /// Whether there are no images.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The images, `u8` `[N, 1, rows, cols]`.
    pub fn images(&self) -> &Tensor {
        &self.images
    }

    /// The labels, `int64` `[N]`.
    pub fn labels(&self) -> &Tensor {
        &self.labels
    }

    /// The images as `f32` `(pixel / 255 - mean) / std`, in that order of `f32` operations
    /// (torchvision's `ToTensor()` then `Normalize((mean,), (std,))`); `mean = 0, std = 1` gives
    /// pixels in `[0, 1]`.
    pub fn images_f32(&self, mean: f32, std: f32) -> Result<Tensor> {
        let v: Vec<f32> = self.images.to_vec::<u8>()?.into_iter().map(|p| (p as f32 / 255.0 - mean) / std).collect();
        Tensor::from_vec(v, self.images.sizes())
    }

    /// A dataset of `(image, label)` samples with images from [`images_f32`](Self::images_f32).
    pub fn dataset(&self, mean: f32, std: f32) -> Result<TensorDataset<(Tensor, Tensor)>> {
        TensorDataset::new((self.images_f32(mean, std)?, self.labels.clone()))
    }
}

/// `root/stem`, else `root/stem.gz`.
fn find_file(root: &Path, stem: &str) -> Result<PathBuf> {
    let raw = root.join(stem);
    let gz = root.join(format!("{stem}.gz"));
    [raw, gz]
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| file_error(root, format!("found neither {stem} nor {stem}.gz")))
}

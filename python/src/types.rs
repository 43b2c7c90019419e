//! `torch.dtype`, `torch.device`, `torch.layout`, `torch.memory_format` and `torch.Generator`
//! as Python objects. dtypes, layouts and memory formats are singletons, as in PyTorch
//! (`x.dtype is torch.float32`).

use aten::Generator;
use c10::{Device, Layout, MemoryFormat, ScalarType};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyFloat, PyInt, PyString, PyType};

use crate::errors::IntoPy;

/// PyTorch's name of a dtype (`float32`).
pub fn dtype_name(st: ScalarType) -> &'static str {
    st.name()
}

/// `torch.dtype`.
#[pyclass(name = "dtype", module = "torchrs", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash)]
pub struct PyDtype {
    /// The dtype.
    pub st: ScalarType,
}

#[pymethods]
impl PyDtype {
    fn __repr__(&self) -> String {
        format!("torch.{}", dtype_name(self.st))
    }
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.st.is_floating_point()
    }
    #[getter]
    fn is_complex(&self) -> bool {
        self.st.is_complex()
    }
    #[getter]
    fn is_signed(&self) -> bool {
        self.st.is_signed()
    }
    #[getter]
    fn itemsize(&self) -> usize {
        self.st.size()
    }
    fn to_real(&self, py: Python<'_>) -> Py<PyAny> {
        dtype_object(py, self.st.to_real())
    }
    fn to_complex(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.st.to_complex() {
            Some(c) => Ok(dtype_object(py, c)),
            None => {
                Err(PyRuntimeError::new_err(format!("to_complex is not supported for torch.{}", dtype_name(self.st))))
            }
        }
    }
    fn __reduce__(&self) -> String {
        dtype_name(self.st).to_string()
    }
}

static DTYPES: PyOnceLock<Vec<(ScalarType, Py<PyDtype>)>> = PyOnceLock::new();

fn dtypes(py: Python<'_>) -> &Vec<(ScalarType, Py<PyDtype>)> {
    DTYPES.get_or_init(py, || {
        ScalarType::ALL.iter().map(|&st| (st, Py::new(py, PyDtype { st }).expect("a dtype object"))).collect()
    })
}

/// The one `torch.dtype` object of `st`.
pub fn dtype_object(py: Python<'_>, st: ScalarType) -> Py<PyAny> {
    dtypes(py)
        .iter()
        .find(|(s, _)| *s == st)
        .map(|(_, o)| o.clone_ref(py).into_any())
        .expect("every dtype has an object")
}

/// A dtype given as `torch.float32` or as Python's `float`, `int`, `bool`, `complex`.
pub fn dtype_of(v: &Bound<'_, PyAny>) -> Option<ScalarType> {
    if let Ok(d) = v.cast::<PyDtype>() {
        return Some(d.get().st);
    }
    let t = v.cast::<PyType>().ok()?;
    let py = v.py();
    if t.is(py.get_type::<PyFloat>()) {
        Some(ScalarType::F64)
    } else if t.is(py.get_type::<pyo3::types::PyBool>()) {
        Some(ScalarType::Bool)
    } else if t.is(py.get_type::<PyInt>()) {
        Some(ScalarType::I64)
    } else if t.is(py.get_type::<pyo3::types::PyComplex>()) {
        Some(ScalarType::C128)
    } else {
        None
    }
}

/// `torch.device`.
#[pyclass(name = "device", module = "torchrs", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash, Clone, Copy)]
pub struct PyDevice {
    /// The device.
    pub device: Device,
}

#[pymethods]
impl PyDevice {
    /// `torch.device("cuda:0")`, `torch.device("cuda", 0)`, `torch.device(0)` (CUDA device 0).
    #[new]
    #[pyo3(signature = (kind, index = None))]
    fn new(kind: &Bound<'_, PyAny>, index: Option<i64>) -> PyResult<Self> {
        if let Ok(d) = kind.cast::<PyDevice>() {
            return Ok(*d.get());
        }
        if let Ok(i) = kind.extract::<i64>() {
            return Ok(PyDevice { device: Device::cuda(i as i8) });
        }
        let s: String = kind.extract()?;
        let mut device: Device = s.parse().py()?;
        if let Some(i) = index {
            if device.index >= 0 {
                return Err(PyRuntimeError::new_err(format!(
                    "type (string) must not include an index because index was passed explicitly: {s}"
                )));
            }
            device.index = i as i8;
        }
        Ok(PyDevice { device })
    }
    #[getter]
    fn r#type(&self) -> String {
        self.device.ty.to_string()
    }
    #[getter]
    fn index(&self) -> Option<i64> {
        (self.device.index >= 0).then_some(self.device.index as i64)
    }
    fn __repr__(&self) -> String {
        match self.index() {
            Some(i) => format!("device(type='{}', index={i})", self.device.ty),
            None => format!("device(type='{}')", self.device.ty),
        }
    }
    fn __str__(&self) -> String {
        self.device.to_string()
    }
}

/// A new `torch.device` object.
pub fn device_object(py: Python<'_>, d: Device) -> PyResult<Py<PyAny>> {
    Ok(Py::new(py, PyDevice { device: d })?.into_any())
}

/// A device given as `torch.device`, a string (`"cuda:1"`) or a CUDA index.
pub fn device_of(v: &Bound<'_, PyAny>) -> Option<Device> {
    if let Ok(d) = v.cast::<PyDevice>() {
        return Some(d.get().device);
    }
    if let Ok(s) = v.cast::<PyString>() {
        return s.to_string().parse().ok();
    }
    if v.is_instance_of::<PyInt>() && !v.is_instance_of::<pyo3::types::PyBool>() {
        return v.extract::<i8>().ok().map(Device::cuda);
    }
    None
}

/// `torch.layout` (`torch.strided`, `torch.sparse_coo`, `torch.sparse_csr`).
#[pyclass(name = "layout", module = "torchrs", frozen)]
pub struct PyLayout {
    /// The layout.
    pub layout: Layout,
}

#[pymethods]
impl PyLayout {
    fn __repr__(&self) -> &'static str {
        self.layout.name()
    }
}

static STRIDED: PyOnceLock<Py<PyLayout>> = PyOnceLock::new();
static SPARSE_COO: PyOnceLock<Py<PyLayout>> = PyOnceLock::new();
static SPARSE_CSR: PyOnceLock<Py<PyLayout>> = PyOnceLock::new();

/// The one object of each layout (`torch.strided`, ...), so `t.layout is torch.sparse_coo`.
pub fn layout_object(py: Python<'_>, layout: Layout) -> Py<PyAny> {
    let slot = match layout {
        Layout::Strided => &STRIDED,
        Layout::SparseCoo => &SPARSE_COO,
        Layout::SparseCsr => &SPARSE_CSR,
    };
    slot.get_or_init(py, || Py::new(py, PyLayout { layout }).expect("the layout object")).clone_ref(py).into_any()
}

/// `torch.strided`.
pub fn strided(py: Python<'_>) -> Py<PyAny> {
    layout_object(py, Layout::Strided)
}

/// A layout argument.
pub fn layout_of(v: &Bound<'_, PyAny>) -> Option<Layout> {
    v.cast::<PyLayout>().ok().map(|l| l.get().layout)
}

/// `torch.memory_format`.
#[pyclass(name = "memory_format", module = "torchrs", frozen)]
pub struct PyMemoryFormat {
    /// The format.
    pub format: MemoryFormat,
}

fn memory_format_name(m: MemoryFormat) -> &'static str {
    match m {
        MemoryFormat::Contiguous => "contiguous_format",
        MemoryFormat::Preserve => "preserve_format",
        MemoryFormat::ChannelsLast => "channels_last",
        MemoryFormat::ChannelsLast3d => "channels_last_3d",
    }
}

#[pymethods]
impl PyMemoryFormat {
    fn __repr__(&self) -> String {
        format!("torch.{}", memory_format_name(self.format))
    }
}

/// Every memory format, in the order of [`memory_format_object`]'s table.
pub const MEMORY_FORMATS: [MemoryFormat; 4] =
    [MemoryFormat::Contiguous, MemoryFormat::Preserve, MemoryFormat::ChannelsLast, MemoryFormat::ChannelsLast3d];

static FORMATS: PyOnceLock<Vec<Py<PyMemoryFormat>>> = PyOnceLock::new();

/// The one `torch.memory_format` object of `m`, and its name.
pub fn memory_format_object(py: Python<'_>, m: MemoryFormat) -> Py<PyAny> {
    let all = FORMATS.get_or_init(py, || {
        MEMORY_FORMATS.iter().map(|&format| Py::new(py, PyMemoryFormat { format }).expect("a format object")).collect()
    });
    let i = MEMORY_FORMATS.iter().position(|&f| f == m).expect("every format is listed");
    all[i].clone_ref(py).into_any()
}

/// A memory format argument.
pub fn memory_format_of(v: &Bound<'_, PyAny>) -> Option<MemoryFormat> {
    v.cast::<PyMemoryFormat>().ok().map(|m| m.get().format)
}

/// The module attributes for the singletons: (`float32`, object), (`strided`, ...), ...
pub fn module_constants(py: Python<'_>) -> Vec<(&'static str, Py<PyAny>)> {
    let mut v: Vec<(&'static str, Py<PyAny>)> =
        ScalarType::ALL.iter().map(|&st| (dtype_name(st), dtype_object(py, st))).collect();
    v.push(("strided", strided(py)));
    v.push(("sparse_coo", layout_object(py, Layout::SparseCoo)));
    v.push(("sparse_csr", layout_object(py, Layout::SparseCsr)));
    for m in MEMORY_FORMATS {
        v.push((memory_format_name(m), memory_format_object(py, m)));
    }
    v
}

/// `torch.Generator`.
#[pyclass(name = "Generator", module = "torchrs", frozen)]
pub struct PyGenerator {
    /// The generator (a handle: copies share the state).
    pub g: Generator,
}

#[pymethods]
impl PyGenerator {
    #[new]
    #[pyo3(signature = (device = None))]
    fn new(device: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let device = match device {
            None => Device::CPU,
            Some(d) => {
                device_of(d).ok_or_else(|| PyRuntimeError::new_err("Generator: device must be a torch.device"))?
            }
        };
        Ok(PyGenerator { g: Generator::new(device) })
    }
    /// Seeds the generator and returns it, as PyTorch's does.
    fn manual_seed(slf: Bound<'_, Self>, seed: u64) -> Bound<'_, Self> {
        slf.get().g.manual_seed(seed);
        slf
    }
    fn initial_seed(&self) -> u64 {
        self.g.initial_seed()
    }
    #[getter]
    fn device(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        device_object(py, self.g.device())
    }
}

/// A generator argument.
pub fn generator_of(v: &Bound<'_, PyAny>) -> Option<Generator> {
    v.cast::<PyGenerator>().ok().map(|g| g.get().g.clone())
}

/// A generator as a Python object.
pub fn generator_object(py: Python<'_>, g: Generator) -> PyResult<Py<PyAny>> {
    Ok(Py::new(py, PyGenerator { g })?.into_any())
}

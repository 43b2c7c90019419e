//! `Device` and `DeviceType`: where a tensor's memory lives.

use std::fmt;
use std::str::FromStr;

use crate::{Error, Result};

/// The kind of device. `PrivateUse1` is the slot for an out-of-tree backend.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum DeviceType {
    /// Host memory.
    Cpu = 0,
    /// An NVIDIA GPU.
    Cuda = 1,
    /// Tensors with shapes and dtypes but no data.
    Meta = 2,
    /// An out-of-tree backend registered at run time.
    PrivateUse1 = 3,
}

impl DeviceType {
    /// Number of device types (size of per-device-type registries).
    pub const COUNT: usize = 4;

    /// Every device type.
    pub const ALL: [DeviceType; 4] = [DeviceType::Cpu, DeviceType::Cuda, DeviceType::Meta, DeviceType::PrivateUse1];

    /// PyTorch's lowercase name.
    pub const fn name(self) -> &'static str {
        match self {
            DeviceType::Cpu => "cpu",
            DeviceType::Cuda => "cuda",
            DeviceType::Meta => "meta",
            DeviceType::PrivateUse1 => "privateuseone",
        }
    }
}

impl fmt::Display for DeviceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A device type plus an optional index (`cuda:1`). `index == -1` means "the current device".
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    /// The kind of device.
    pub ty: DeviceType,
    /// Device ordinal, or -1 for "current".
    pub index: i8,
}

impl Device {
    /// The CPU.
    pub const CPU: Device = Device { ty: DeviceType::Cpu, index: -1 };

    /// The meta device: tensors with shapes and dtypes but no data (Note [Meta storage]).
    pub const META: Device = Device { ty: DeviceType::Meta, index: -1 };

    /// A device with an explicit index.
    pub const fn new(ty: DeviceType, index: i8) -> Device {
        Device { ty, index }
    }

    /// CUDA device `i`.
    pub const fn cuda(i: i8) -> Device {
        Device { ty: DeviceType::Cuda, index: i }
    }

    /// True for the CPU.
    pub const fn is_cpu(&self) -> bool {
        matches!(self.ty, DeviceType::Cpu)
    }

    /// True for the meta device.
    pub const fn is_meta(&self) -> bool {
        matches!(self.ty, DeviceType::Meta)
    }
}

impl Default for Device {
    fn default() -> Self {
        Device::CPU
    }
}

impl From<DeviceType> for Device {
    fn from(ty: DeviceType) -> Self {
        Device { ty, index: -1 }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.index >= 0 {
            write!(f, "{}:{}", self.ty, self.index)
        } else {
            write!(f, "{}", self.ty)
        }
    }
}

/// The device types PyTorch's device strings name, in the order its error lists them.
const PYTORCH_DEVICE_TYPES: [&str; 20] = [
    "cpu",
    "cuda",
    "ipu",
    "xpu",
    "mkldnn",
    "opengl",
    "opencl",
    "ideep",
    "hip",
    "ve",
    "fpga",
    "maia",
    "xla",
    "lazy",
    "vulkan",
    "mps",
    "meta",
    "hpu",
    "mtia",
    "privateuseone",
];

impl FromStr for Device {
    type Err = Error;
    fn from_str(s: &str) -> Result<Device> {
        // PyTorch's grammar: a type of letters and underscores, then optionally `:` and an
        // index without leading zeros.
        let invalid = || Error::invalid("device", format!("Invalid device string: '{s}'"));
        let (ty, idx) = match s.split_once(':') {
            Some((t, i)) => {
                let digits =
                    !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()) && (i == "0" || !i.starts_with('0'));
                (t, if digits { i.parse::<i8>().map_err(|_| invalid())? } else { return Err(invalid()) })
            }
            None => (s, -1),
        };
        if ty.is_empty() || !ty.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_') {
            return Err(invalid());
        }
        let ty = match ty {
            "cpu" => DeviceType::Cpu,
            "cuda" => DeviceType::Cuda,
            "meta" => DeviceType::Meta,
            "privateuseone" => DeviceType::PrivateUse1,
            other if PYTORCH_DEVICE_TYPES.contains(&other) => {
                return Err(Error::invalid("device", format!("device type '{other}' is not supported by this build")));
            }
            other => {
                return Err(Error::invalid(
                    "device",
                    format!(
                        "Expected one of {} device type at start of device string: {other}",
                        PYTORCH_DEVICE_TYPES.join(", ")
                    ),
                ))
            }
        };
        Ok(Device { ty, index: idx })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print() {
        assert_eq!("cpu".parse::<Device>().unwrap(), Device::CPU);
        assert_eq!("cuda:1".parse::<Device>().unwrap(), Device::cuda(1));
        assert_eq!(Device::cuda(0).to_string(), "cuda:0");
        assert!("tpu".parse::<Device>().is_err());
        assert!("cuda:x".parse::<Device>().is_err());
    }
}

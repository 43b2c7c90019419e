//! `Generator`: a seeded random-number engine per device, shared by handle, with `manual_seed`
//! and a process-wide default generator per device.
//!
//! A CPU generator is PyTorch's `CPUGeneratorImpl`: an mt19937 engine drawn from in order. A
//! device generator is its `CUDAGeneratorImpl`: a seed and a Philox offset. Device kernels are
//! counter-based (Note [Philox streams] in `kernels-cuda/kernels/random.cu`): each launch
//! reserves the counters it will use ([`Generator::philox_reserve`]) and every element derives
//! its numbers from `(seed, counter)` alone, so results do not depend on the launch shape or
//! on the order threads run in.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use c10::{Device, DeviceType, Error, Result};

/// PyTorch's default seed for the CPU generator.
pub const DEFAULT_SEED: u64 = 67280421310721;

const MT_N: usize = 624;
const MT_M: usize = 397;

/// The mt19937 engine (the engine of PyTorch's CPU generator).
#[derive(Clone, Debug)]
pub struct Mt19937 {
    state: Box<[u32; MT_N]>,
    index: usize,
}

impl Mt19937 {
    /// An engine seeded like `std::mt19937(seed)` (PyTorch seeds with the low 32 bits).
    pub fn new(seed: u64) -> Self {
        let mut state = Box::new([0u32; MT_N]);
        state[0] = (seed & 0xffff_ffff) as u32;
        for i in 1..MT_N {
            let prev = state[i - 1];
            state[i] = 1812433253u32.wrapping_mul(prev ^ (prev >> 30)).wrapping_add(i as u32);
        }
        Mt19937 { state, index: MT_N }
    }

    fn twist(&mut self) {
        for i in 0..MT_N {
            let y = (self.state[i] & 0x8000_0000) | (self.state[(i + 1) % MT_N] & 0x7fff_ffff);
            let mut v = self.state[(i + MT_M) % MT_N] ^ (y >> 1);
            if y & 1 != 0 {
                v ^= 0x9908_b0df;
            }
            self.state[i] = v;
        }
        self.index = 0;
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= MT_N {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }
}

/// The state behind a generator handle.
#[derive(Debug)]
pub struct GeneratorState {
    /// The seed last set.
    pub seed: u64,
    /// The engine.
    pub engine: Mt19937,
    /// Box-Muller keeps its second sample for the next call (as PyTorch's generator does).
    pub next_normal: Option<f64>,
    /// A device generator's next unused Philox counter (PyTorch's `philox_offset_per_thread`).
    pub philox_offset: u64,
}

impl GeneratorState {
    /// The next 32 random bits.
    pub fn random(&mut self) -> u32 {
        self.engine.next_u32()
    }
    /// The next 64 random bits (two 32-bit draws, high word first... as PyTorch's `random64`).
    pub fn random64(&mut self) -> u64 {
        let hi = self.engine.next_u32() as u64;
        let lo = self.engine.next_u32() as u64;
        (hi << 32) | lo
    }
}

/// A random-number generator handle. Clones share the state (like PyTorch's `Generator`).
#[derive(Clone, Debug)]
pub struct Generator {
    device: Device,
    state: Arc<Mutex<GeneratorState>>,
}

/// `torch.Generator()`: a CPU generator with PyTorch's default seed.
impl Default for Generator {
    fn default() -> Generator {
        Generator::new(Device::CPU)
    }
}

impl Generator {
    /// A new generator for `device` with PyTorch's default seed.
    pub fn new(device: Device) -> Self {
        Generator {
            device,
            state: Arc::new(Mutex::new(GeneratorState {
                seed: DEFAULT_SEED,
                engine: Mt19937::new(DEFAULT_SEED),
                next_normal: None,
                philox_offset: 0,
            })),
        }
    }

    /// The device the generator serves.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Re-seeds the generator (`Generator.manual_seed`).
    pub fn manual_seed(&self, seed: u64) {
        let mut s = self.lock();
        s.seed = seed;
        s.engine = Mt19937::new(seed);
        s.next_normal = None;
        s.philox_offset = 0;
    }

    /// For a device kernel that uses `counters` Philox blocks: the seed and the first counter
    /// it owns; the next launch starts after them (PyTorch's `philox_cuda_state(increment)`).
    pub fn philox_reserve(&self, counters: u64) -> (u64, u64) {
        let mut s = self.lock();
        let offset = s.philox_offset;
        s.philox_offset = offset.wrapping_add(counters);
        (s.seed, offset)
    }

    /// The seed last set (`initial_seed`).
    pub fn initial_seed(&self) -> u64 {
        self.lock().seed
    }

    /// Exclusive access to the state for a kernel that draws numbers.
    pub fn lock(&self) -> MutexGuard<'_, GeneratorState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The CUDA default generators made so far, by device index, and the seed a new one starts
/// with (PyTorch's default seed until [`manual_seed`] or [`cuda_manual_seed_all`] sets another,
/// as PyTorch queues `manual_seed_all` until CUDA initialises).
struct DeviceGenerators {
    made: Vec<Option<Generator>>,
    seed: u64,
}

fn cuda_generators() -> MutexGuard<'static, DeviceGenerators> {
    static CUDA: OnceLock<Mutex<DeviceGenerators>> = OnceLock::new();
    CUDA.get_or_init(|| Mutex::new(DeviceGenerators { made: Vec::new(), seed: DEFAULT_SEED }))
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// The explicit index of a CUDA device: `cuda` (index -1) is the current device, device 0 while
/// no CUDA backend is linked (seeding works before and without CUDA, as in PyTorch).
fn cuda_index(device: Device) -> usize {
    if device.index >= 0 {
        return device.index as usize;
    }
    c10::stream::device_guard_impl(DeviceType::Cuda)
        .and_then(|g| g.current_device())
        .map_or(0, |d| d.index.max(0) as usize)
}

/// The default generator of a device: one for the CPU, one per CUDA device index (made on
/// first use; `cuda` without an index is the current device's).
pub fn default_generator(device: Device) -> Result<Generator> {
    static CPU: OnceLock<Generator> = OnceLock::new();
    match device.ty {
        DeviceType::Cpu => Ok(CPU.get_or_init(|| Generator::new(Device::CPU)).clone()),
        DeviceType::Cuda => {
            let index = cuda_index(device);
            let mut gens = cuda_generators();
            let seed = gens.seed;
            if gens.made.len() <= index {
                gens.made.resize(index + 1, None);
            }
            let g = gens.made[index].get_or_insert_with(|| {
                let g = Generator::new(Device::cuda(index as i8));
                g.manual_seed(seed);
                g
            });
            Ok(g.clone())
        }
        other => {
            Err(Error::NotImplemented { op: "default_generator".into(), msg: format!("no generator for {other}") })
        }
    }
}

/// Seeds the default generator of every device, the CPU's and every CUDA device's
/// (`torch.manual_seed`).
pub fn manual_seed(seed: u64) {
    default_generator(Device::CPU).expect("the CPU always has a generator").manual_seed(seed);
    cuda_manual_seed_all(seed);
}

/// Seeds the default generator of the current CUDA device (`torch.cuda.manual_seed`).
pub fn cuda_manual_seed(seed: u64) {
    default_generator(Device::cuda(-1)).expect("every CUDA index has a generator").manual_seed(seed);
}

/// Seeds the default generators of all CUDA devices, including those not used yet
/// (`torch.cuda.manual_seed_all`).
pub fn cuda_manual_seed_all(seed: u64) {
    let mut gens = cuda_generators();
    gens.seed = seed;
    for g in gens.made.iter().flatten() {
        g.manual_seed(seed);
    }
}

//! `torch.set_num_threads` / `torch.get_num_threads`: the size of the thread pool the CPU
//! kernels split their work over (rayon's global pool).

use c10::{Error, Result};

/// The number of threads the CPU kernels use.
pub fn get_num_threads() -> usize {
    rayon::current_num_threads()
}

/// Sets the number of threads the CPU kernels use. The pool is created once, so this must run
/// before the first parallel operation (as early in `main` as possible); asking again for the
/// size the pool already has is accepted.
pub fn set_num_threads(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::invalid("set_num_threads", "Expected a positive number of threads"));
    }
    match rayon::ThreadPoolBuilder::new().num_threads(n).build_global() {
        Ok(()) => Ok(()),
        Err(_) if rayon::current_num_threads() == n => Ok(()),
        Err(_) => Err(Error::invalid(
            "set_num_threads",
            format!(
                "the CPU thread pool already runs {} threads; call set_num_threads({n}) before the first operation",
                rayon::current_num_threads()
            ),
        )),
    }
}

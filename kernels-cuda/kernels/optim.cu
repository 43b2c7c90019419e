// Fused optimizer steps: SGD with a momentum buffer (plain and Nesterov) and Adam/AdamW (with
// amsgrad), PyTorch's `_fused_sgd_` / `_fused_adam_` / `_fused_adamw_` on CUDA.
//
// Note [Fused optimizer kernels]: an optimizer step written with tensor operators launches a
// kernel per operator (SGD with momentum three, Adam about ten) and reads and writes every state
// tensor each time. Here one thread per element reads the parameter, its gradient and its state
// once, updates them in registers and writes them once. The arithmetic is nn's CPU loop's
// (Note [Fused updates] in nn/src/optim/fused.rs) in the parameter's dtype, with the same
// operations in the same order, from constants the host computed in double and the kernel
// rounds to the dtype (aten's `FusedSgd` / `FusedAdam`), so on the emulated device the
// results are the CPU's bit for bit. nvcc may contract a multiply and an add into one FMA,
// so on a GPU the last bit can differ, within what PyTorch's own fused and for-loop paths
// differ by. Every element is written by exactly one thread: no atomics, deterministic.
#include "scalar.cuh"

namespace {

__device__ __forceinline__ int64_t first_index() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_stride() { return (int64_t)blockDim.x * gridDim.x; }

template <typename T>
__device__ void sgd_step(int64_t n, T* param, const T* grad, T* buf, double weight_decay, double momentum,
                         double keep, double neg_lr, bool nesterov, bool maximize) {
    const T wd = (T)weight_decay, m = (T)momentum, k = (T)keep, nl = (T)neg_lr;
    const bool decay = weight_decay != 0.0;
    for (int64_t i = first_index(); i < n; i += grid_stride()) {
        const T p = param[i];
        T g = maximize ? -grad[i] : grad[i];
        if (decay) {
            g = g + wd * p;
        }
        const T b = buf[i] * m + k * g;
        buf[i] = b;
        const T step = nesterov ? g + m * b : b;
        param[i] = p + nl * step;
    }
}

template <typename T>
__device__ void adam_step(int64_t n, T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq,
                          double w1_, bool lerp_low, double beta2_, double c2_, double eps_, double bc2_,
                          double neg_step_, double decay_, bool decoupled, bool coupled, bool maximize) {
    const T w1 = (T)w1_, b2 = (T)beta2_, c2 = (T)c2_, eps = (T)eps_, bc2 = (T)bc2_;
    const T neg_step = (T)neg_step_, decay = (T)decay_, one = (T)1.0;
    for (int64_t i = first_index(); i < n; i += grid_stride()) {
        T p = param[i];
        T g = maximize ? -grad[i] : grad[i];
        if (decoupled) {
            p = p * decay;
        } else if (coupled) {
            g = g + decay * p;
        }
        // torch.lerp's two-sided formula, as the operator path computes it.
        T m = exp_avg[i];
        m = lerp_low ? m + w1 * (g - m) : g - (g - m) * (one - w1);
        // addcmul's `self + value * t1 * t2`, left to right.
        const T v = exp_avg_sq[i] * b2 + c2 * g * g;
        exp_avg[i] = m;
        exp_avg_sq[i] = v;
        T second = v;
        if (max_exp_avg_sq) {
            // torch.maximum: NaN propagates.
            T mx = max_exp_avg_sq[i];
            if (v != v || v > mx) {
                mx = v;
            }
            max_exp_avg_sq[i] = mx;
            second = mx;
        }
        const T denom = sqrt(second) / bc2 + eps;
        param[i] = p + neg_step * m / denom;
    }
}

}  // namespace

// ---- entry points ------------------------------------------------------------------------------

#define KC_FUSED_SGD(sfx, T)                                                                             \
    extern "C" __global__ void fused_sgd_##sfx(int64_t n, T* param, const T* grad, T* buf,               \
                                               double weight_decay, double momentum, double keep,        \
                                               double neg_lr, bool nesterov, bool maximize) {            \
        sgd_step<T>(n, param, grad, buf, weight_decay, momentum, keep, neg_lr, nesterov, maximize);      \
    }
#define KC_FUSED_ADAM(sfx, T)                                                                            \
    extern "C" __global__ void fused_adam_##sfx(int64_t n, T* param, const T* grad, T* exp_avg,          \
                                                T* exp_avg_sq, T* max_exp_avg_sq, double w1,             \
                                                bool lerp_low, double beta2, double c2, double eps,      \
                                                double bc2, double neg_step, double decay,               \
                                                bool decoupled, bool coupled, bool maximize) {           \
        adam_step<T>(n, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, w1, lerp_low, beta2, c2, eps,  \
                     bc2, neg_step, decay, decoupled, coupled, maximize);                                \
    }
// float32 and float64: half-precision parameters take the operator path, as on the CPU.
KC_FUSED_SGD(f32, float)
KC_FUSED_SGD(f64, double)
KC_FUSED_ADAM(f32, float)
KC_FUSED_ADAM(f64, double)

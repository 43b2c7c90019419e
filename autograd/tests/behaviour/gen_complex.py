"""Expected values for complex tensors and torch.fft (autograd/tests/behaviour/complex.rs).

Run by hand with PyTorch installed:  python autograd/tests/behaviour/gen_complex.py
Writes complex_expected.json beside this file. Complex tensors are stored as their
view_as_real, flattened; every case records its inputs, PyTorch's output and, for the
differentiable ones, the gradients of sum(view_as_real(out) * w) for a fixed w.
"""
import json
import os

import torch

torch.manual_seed(0)


def enc(t):
    t = t.detach()
    d = {"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape)}
    v = torch.view_as_real(t.resolve_conj()) if t.is_complex() else t
    d["data"] = [float(x) for x in v.reshape(-1).tolist()]
    return d


def cplx(*shape, dtype=torch.complex128):
    return torch.randn(*shape, dtype=dtype)


def real(*shape, dtype=torch.float64):
    return torch.randn(*shape, dtype=dtype)


cases = {}


def case(name, fn, *inputs, grad=False):
    ins = [x.clone().requires_grad_(grad) for x in inputs]
    out = fn(*ins)
    c = {"inputs": [enc(x) for x in inputs], "output": enc(out)}
    if grad:
        outr = torch.view_as_real(out.resolve_conj()) if out.is_complex() else out
        w = torch.linspace(-1.0, 2.0, outr.numel(), dtype=outr.dtype).reshape(outr.shape)
        (outr * w).sum().backward()
        c["grads"] = [enc(x.grad) for x in ins]
    cases[name] = c


a, b = cplx(2, 3), cplx(2, 3)
case("add", lambda x, y: x + y, a, b, grad=True)
case("add_alpha", lambda x, y: torch.add(x, y, alpha=2.5), a, b)
case("sub", lambda x, y: x - y, a, b, grad=True)
case("mul", lambda x, y: x * y, a, b, grad=True)
case("div", lambda x, y: x / y, a, b, grad=True)
case("mul_real_broadcast", lambda x, y: x * y, a, real(3), grad=True)
case("mul_scalar", lambda x: x * 2.0, a)
case("neg", lambda x: -x, a, grad=True)
case("abs", torch.abs, a, grad=True)
case("angle", torch.angle, a, grad=True)
case("sgn", torch.sgn, torch.tensor([3 + 4j, 0j, -2j], dtype=torch.complex128))
case("conj", lambda x: torch.conj_physical(x), a, grad=True)
case("real", lambda x: torch.real(x).contiguous(), a, grad=True)
case("imag", lambda x: torch.imag(x).contiguous(), a, grad=True)
case("sum_all", torch.sum, a, grad=True)
case("sum_dim0", lambda x: x.sum(0), a, grad=True)
case("mean_dim1_keepdim", lambda x: x.mean(1, keepdim=True), a, grad=True)
case("complex", torch.complex, real(2, 3), real(3), grad=True)
case("polar", torch.polar, real(4).abs(), real(4))
case("to_complex64", lambda x: x.to(torch.complex64), real(5), grad=True)
case("to_float", lambda x: x.real.to(torch.float32), a)
case("c64_times_f64_scalar_tensor", lambda x, y: x * y, cplx(3, dtype=torch.complex64), torch.tensor(2.0, dtype=torch.float64))

x8, x6 = real(8), real(2, 6)
case("fft_real", lambda x: torch.fft.fft(x), x8, grad=True)
case("fft_ortho_n10", lambda x: torch.fft.fft(x, n=10, norm="ortho"), cplx(7), grad=True)
case("ifft_forward_norm", lambda x: torch.fft.ifft(x, norm="forward"), cplx(5), grad=True)
case("fft_dim0", lambda x: torch.fft.fft(x, dim=0), cplx(4, 3), grad=True)
case("rfft_pad", lambda x: torch.fft.rfft(x, n=8), x6, grad=True)
case("rfft_odd", lambda x: torch.fft.rfft(x), real(7), grad=True)
case("irfft_default", lambda x: torch.fft.irfft(x), cplx(2, 5), grad=True)
case("irfft_n7", lambda x: torch.fft.irfft(x, n=7), cplx(4), grad=True)
case("hfft", lambda x: torch.fft.hfft(x), cplx(5), grad=True)
case("ihfft", lambda x: torch.fft.ihfft(x), real(6), grad=True)
case("fft2", lambda x: torch.fft.fft2(x), cplx(3, 4), grad=True)
case("ifft2_s", lambda x: torch.fft.ifft2(x, s=(4, 2)), cplx(3, 4), grad=True)
case("fftn_dims", lambda x: torch.fft.fftn(x, dim=(0, 2)), cplx(3, 2, 5), grad=True)
case("rfftn", lambda x: torch.fft.rfftn(x), real(2, 3, 4), grad=True)
case("rfft2_f32", lambda x: torch.fft.rfft2(x), real(3, 5, dtype=torch.float32))
case("irfftn_s", lambda x: torch.fft.irfftn(x, s=(3, 6)), cplx(3, 4), grad=True)
case("hfft2", lambda x: torch.fft.hfft2(x), cplx(2, 3), grad=True)
case("ihfftn", lambda x: torch.fft.ihfftn(x), real(3, 4), grad=True)
case("fft_long_1000", lambda x: torch.fft.fft(x), real(1000))
case("fft_prime_97", lambda x: torch.fft.fft(x), cplx(97, dtype=torch.complex64))
case("fft_int", lambda x: torch.fft.fft(x), torch.arange(6))

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "complex_expected.json")
with open(out, "w") as f:
    json.dump({"torch": torch.__version__, "cases": cases}, f, separators=(",", ":"))
print(f"wrote {len(cases)} cases to {out}")

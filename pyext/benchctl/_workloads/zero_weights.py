"""Seed 2: are all-zero conv weights faster than uniform ones (fast on GPU, not on CPU)?

The user's net (``../shared/seeds/zero_weights_gpu_vs_cpu.txt``): conv 3→64,
then 10 × (conv 64→64 + ReLU), 3×3, padding 1, no bias, on a 1×3×32×32
input, weights set by ``nn.init.uniform_`` (``init=uniform``, the seed's
``init_normal``) or ``nn.init.zeros_`` (``init=zero``), model in eval mode.

Two measurements per cell, side by side:

* the seed's own method, run first and cold as the seed ran it: a host timer
  (``timeit.default_timer``) around ``naive_trials`` calls, no warm-up, no
  device synchronisation, and its "forward + backward" loop exactly as
  written, where ``output.backward`` lacks parentheses and so never runs;
* per-iteration timing of phase ``forward`` and phase ``forward_backward``,
  where backward is really called, with each iteration recorded.

Notes carry the gradients (proof that backward ran), each layer's activation
magnitude and subnormal census, and the weights' census: the values that
could make the speed data-dependent.
"""

from __future__ import annotations

import timeit
from collections import OrderedDict
from typing import Any

from .. import _validate
from . import register
from .device import DEVICES, check_device, cuda_event_ms, gpu_info, synchronizer
from ..denormals import layer_census, weights_census

__all__ = ["INITS", "N_CONV", "INPUT_SHAPE", "SEED_BACKWARD_BUG", "PARAMS", "check_args", "build_net",
           "init_weights", "naive_seed_timing", "zero_weights", "value_census"]

INITS = ("uniform", "zero")
N_CONV = 10  # the seed's n_conv: conv_0 plus 10 conv+ReLU blocks
INPUT_SHAPE = (1, 3, 32, 32)
SEED_BACKWARD_BUG = (
    "the seed's forward+backward loop writes `output.backward` without parentheses: "
    "it reads the bound method and never calls it, so its 'forward + backward' time is "
    "a second forward time; here phase forward_backward calls output.sum().backward()"
)

PARAMS: dict[str, Any] = {
    "init": "uniform",
    "device": "cpu",
    "iterations": 100,
    "naive_trials": 200,
    "seed": 0,
}


def check_args(args: dict[str, Any]) -> None:
    if args["init"] not in INITS:
        raise ValueError(f"init must be one of {', '.join(INITS)}; got {args['init']!r}")
    if args["device"] not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}; got {args['device']!r}")
    for key in ("iterations", "naive_trials"):
        _validate.count(key, args[key], 1)


def build_net():
    """The seed's network, with the seed's layer names."""
    from torch import nn

    modules: OrderedDict[str, nn.Module] = OrderedDict()
    modules["conv_0"] = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
    for i in range(1, N_CONV + 1):
        modules[f"conv_{i}"] = nn.Conv2d(64, 64, kernel_size=3, stride=1, padding=1, bias=False)
        modules[f"relu_{i}"] = nn.ReLU()
    return nn.Sequential(modules)


def init_weights(net, init: str) -> None:
    """The seed's init_normal (uniform_, despite its name) or init_zero, on every conv."""
    from torch import nn

    fill = nn.init.uniform_ if init == "uniform" else nn.init.zeros_
    for module in net.modules():
        if isinstance(module, nn.Conv2d):
            fill(module.weight)


def naive_seed_timing(net, x, trials: int) -> dict[str, Any]:
    """The seed's measurement, unchanged: per-call seconds from a host timer
    around ``trials`` calls, no warm-up, no synchronisation, and the
    never-called ``output.backward``."""
    start = timeit.default_timer()
    for _ in range(trials):
        _ = net(x)
    forward_s = (timeit.default_timer() - start) / trials

    start = timeit.default_timer()
    for _ in range(trials):
        output = net(x)
        output.backward  # noqa: B018 -- the seed's bug, reproduced on purpose
    seed_forward_backward_s = (timeit.default_timer() - start) / trials
    return {
        "method": "timeit.default_timer around the loop / trials; no warm-up; no device sync",
        "trials": trials,
        "forward_ms": forward_s * 1e3,
        "seed_forward_backward_ms": seed_forward_backward_s * 1e3,
        "seed_backward_called": False,
    }


def _gradient_summary(net) -> dict[str, Any]:
    """Per conv weight: is there a gradient, its largest magnitude, how many entries are non-zero."""
    from torch import nn

    summary = {}
    for name, module in net.named_children():
        if isinstance(module, nn.Conv2d):
            grad = module.weight.grad
            summary[f"{name}.weight"] = (
                {"exists": False}
                if grad is None
                else {
                    "exists": True,
                    "max_abs": float(grad.abs().max()),
                    "nonzero": int((grad != 0).sum()),
                    "numel": grad.numel(),
                }
            )
    return summary


@register("zero_weights", params=PARAMS, help=__doc__.splitlines()[0], check=check_args, preload=("torch",),
          phases=("forward", "forward_backward"))
def zero_weights(args: dict[str, Any], rec) -> None:
    import torch

    check_args(args)
    check_device(args["device"])
    torch.manual_seed(args["seed"])
    net = build_net()
    init_weights(net, args["init"])
    net.eval()  # as the seed; autograd stays on, as in the seed (no torch.no_grad)
    x = torch.randn(INPUT_SHAPE)
    device = torch.device(args["device"])
    net.to(device)
    x = x.to(device)
    sync = synchronizer(args["device"])
    if args["device"] == "cuda":
        rec.note("gpu", gpu_info())

    rec.note("naive_seed_timing", naive_seed_timing(net, x, args["naive_trials"]))
    rec.note("seed_backward_bug", SEED_BACKWARD_BUG)

    def forward():
        net(x)

    def forward_backward():
        net(x).sum().backward()

    for _ in range(args["iterations"]):
        sync()
        with rec.iteration("forward"):
            forward()
            sync()
    for _ in range(args["iterations"]):
        net.zero_grad(set_to_none=True)  # untimed: gradients must not accumulate
        sync()
        with rec.iteration("forward_backward"):
            forward_backward()
            sync()
    rec.note("gradients", _gradient_summary(net))

    if args["device"] == "cuda":
        rec.note("cuda_event_ms", {
            "forward": cuda_event_ms(forward, args["iterations"]),
            # Gradients accumulate across these calls; the work per call is the same.
            "forward_backward": cuda_event_ms(forward_backward, args["iterations"]),
        })
    rec.note("activations", [r for r in layer_census(net, x) if r["calls"]])
    rec.note("weights_census", weights_census(net))


def value_census(inits: tuple[str, ...] = INITS, seed: int = 0) -> dict[str, dict]:
    """``{"weights", "activations"}``: the subnormal census of the seed's net over ``inits``, summed, taken
    in this process on the seed's input: cheap evidence for ruling FTZ out before any cell runs."""
    import torch

    weights_total: dict[str, Any] = {"values": 0, "subnormal": 0}
    activations = {"values": 0, "subnormal": 0}
    for init in inits:
        torch.manual_seed(seed)
        net = build_net()
        init_weights(net, init)
        census = weights_census(net.eval())
        weights_total["values"] += census["values"]
        weights_total["subnormal"] += census["subnormal"]
        layers = layer_census(net, torch.randn(INPUT_SHAPE))
        activations["values"] += sum(r["numel"] for r in layers)
        activations["subnormal"] += sum(r["subnormal"] for r in layers)
    return {"weights": weights_total, "activations": activations}

"""What values a model computes with: subnormal counts of weights, and the
magnitude and subnormal census of each layer's output.

Data-dependent speed on a CPU comes from special values reaching slow paths,
so a timing is explained only together with the values behind it. The counts
come from :mod:`benchctl.denormals` (``model_census``, ``count_subnormal``);
where that module is not installed the census says so instead of guessing.
"""

from __future__ import annotations

import math
from typing import Any


def _denormals():
    """The benchctl.denormals module, or (None, reason) when it is missing."""
    try:
        from .. import denormals
    except ImportError as exc:
        return None, f"benchctl.denormals is not available ({exc})"
    return denormals, ""


def _count_subnormal():
    denormals, reason = _denormals()
    return (denormals.count_subnormal, "") if denormals else (None, reason)


def weights_census(model) -> dict[str, Any]:
    """Subnormal values among the model's floating-point parameters and buffers.

    Returns {"available", "values", "subnormal", "fraction", "by_tensor"}, where
    by_tensor lists only the tensors that hold any; or {"available": False,
    "reason"}.
    """
    denormals, reason = _denormals()
    if denormals is None:
        return {"available": False, "reason": reason}
    census = denormals.model_census(model)
    entries = {**census["parameters"], **census["buffers"]}
    values = sum(e["numel"] for e in entries.values())
    found = sum(e["subnormal"] for e in entries.values())
    return {
        "available": True,
        "values": values,
        "subnormal": found,
        "fraction": found / values if values else 0.0,
        "by_tensor": {name: e["subnormal"] for name, e in entries.items() if e["subnormal"]},
    }


def _finite_or_none(x: float):
    # Overflowed activations are facts worth reporting, but JSON has no inf.
    return x if math.isfinite(x) else None


def activation_profile(model, example_input) -> list[dict[str, Any]]:
    """Run ``model(example_input)`` once (no grad) and describe each leaf layer's output.

    One record per leaf module, in call order: layer name, kind, numel,
    max_abs and mean_abs (None when not finite, with "nonfinite" counting
    inf/nan), zero fraction, and subnormal count (None with the reason when
    :mod:`benchctl.denormals` is missing). Hooks are removed afterwards, also
    when the forward raises.
    """
    import torch

    count, reason = _count_subnormal()
    records: list[dict[str, Any]] = []

    def describe(name):
        def hook(module, inputs, output):
            if not isinstance(output, torch.Tensor) or not output.is_floating_point():
                return
            out = output.detach()
            magnitude = out.abs().double()
            finite = torch.isfinite(magnitude)
            records.append({
                "layer": name,
                "kind": type(module).__name__,
                "numel": out.numel(),
                "max_abs": _finite_or_none(float(magnitude.max())),
                "mean_abs": _finite_or_none(float(magnitude.mean())),
                "nonfinite": int((~finite).sum()),
                "zero_fraction": float((out == 0).double().mean()),
                "subnormal": int(count(out)) if count else None,
            })
        return hook

    handles = [
        module.register_forward_hook(describe(name))
        for name, module in model.named_modules()
        if not list(module.children())
    ]
    try:
        with torch.no_grad():
            model(example_input)
    finally:
        for handle in handles:
            handle.remove()
    if count is None:
        for record in records:
            record["subnormal_unavailable"] = reason
    return records


def activation_census(model, example_input) -> dict[str, Any]:
    """Subnormal values in every layer's output for one forward of ``example_input``:
    {"available", "values", "subnormal", "by_layer" (layers holding any)}."""
    denormals, reason = _denormals()
    if denormals is None:
        return {"available": False, "reason": reason}
    layers = denormals.model_census(model, example_input)["activations"]
    return {
        "available": True,
        "values": sum(e["numel"] for e in layers.values()),
        "subnormal": sum(e["subnormal"] for e in layers.values()),
        "by_layer": {name: e["subnormal"] for name, e in layers.items() if e["subnormal"]},
    }

"""Where the subnormal numbers are: in a tensor, a model's weights, its activations.

Counting works on the bit patterns (exponent field all zeros, fraction not),
never on float comparisons: with DAZ on, ``x != 0`` reads a subnormal as zero
and would count nothing.

:func:`penalty_profile` (what they cost on this CPU) lives in
:mod:`benchctl.penalty` and is re-exported here.
"""

from __future__ import annotations

from typing import Any

# dtype name -> (integer dtype name of the same width, exponent mask, fraction mask)
_LAYOUTS = {
    "float16": ("int16", 0x7C00, 0x03FF),
    "bfloat16": ("int16", 0x7F80, 0x007F),
    "float32": ("int32", 0x7F800000, 0x007FFFFF),
    "float64": ("int64", 0x7FF0000000000000, 0x000FFFFFFFFFFFFF),
}


def _layout(tensor):
    import torch

    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor, got {type(tensor).__name__}")
    name = str(tensor.dtype).replace("torch.", "")
    if name not in _LAYOUTS:
        raise TypeError(f"count_subnormal supports {', '.join(_LAYOUTS)}; got {tensor.dtype}")
    int_name, exponent, fraction = _LAYOUTS[name]
    return getattr(torch, int_name), exponent, fraction


def count_subnormal(tensor) -> int:
    """Number of subnormal (denormal) elements of a float16/bfloat16/float32/float64 tensor."""
    int_dtype, exponent, fraction = _layout(tensor)
    if tensor.numel() == 0:
        return 0
    bits = tensor.detach().view(int_dtype)
    return int((((bits & exponent) == 0) & ((bits & fraction) != 0)).sum().item())


def _countable(tensor) -> bool:
    import torch

    return isinstance(tensor, torch.Tensor) and str(tensor.dtype).replace("torch.", "") in _LAYOUTS


def _tensor_census(tensor) -> dict:
    n = tensor.numel()
    k = count_subnormal(tensor)
    return {"dtype": str(tensor.dtype).replace("torch.", ""), "numel": n, "subnormal": k, "fraction": k / n if n else 0.0}


def _total(entries: dict) -> dict:
    n = sum(e["numel"] for e in entries.values())
    k = sum(e["subnormal"] for e in entries.values())
    return {"numel": n, "subnormal": k, "fraction": k / n if n else 0.0}


def _output_tensors(value):
    """Every countable tensor in a module's output (tensors, tuples, lists, dicts)."""
    if _countable(value):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _output_tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _output_tensors(v)


def _activation_census(model, example_input) -> dict:
    import torch

    # Leaf modules (no children) are the layers; a model that is itself a
    # leaf is reported under the name "".
    layers = [(name, m) for name, m in model.named_modules() if not any(True for _ in m.children())]
    counts: dict[str, dict[str, Any]] = {
        name: {"type": type(m).__name__, "calls": 0, "numel": 0, "subnormal": 0} for name, m in layers
    }

    def hook_for(name):
        def hook(module, inputs, output):
            entry = counts[name]
            entry["calls"] += 1
            for t in _output_tensors(output):
                entry["numel"] += t.numel()
                entry["subnormal"] += count_subnormal(t)

        return hook

    handles = []
    try:
        for name, m in layers:
            handles.append(m.register_forward_hook(hook_for(name)))
        with torch.no_grad():
            if isinstance(example_input, tuple):
                model(*example_input)
            elif isinstance(example_input, dict):
                model(**example_input)
            else:
                model(example_input)
    finally:
        for h in handles:
            h.remove()
    for entry in counts.values():
        entry["fraction"] = entry["subnormal"] / entry["numel"] if entry["numel"] else 0.0
    return counts


def model_census(model, example_input=None) -> dict:
    """Subnormal counts in a model, and with ``example_input`` in its layers' outputs.

    Returns ``{"parameters": {name: entry}, "buffers": {name: entry},
    "activations": {layer name: entry} (only with an input), "totals":
    {"parameters", "buffers"[, "activations"]}}``; an entry has ``numel``,
    ``subnormal`` and ``fraction`` (plus ``dtype`` for tensors, ``type`` and
    ``calls`` for layers). Integer buffers (``num_batches_tracked``) are left
    out. The forward pass runs under ``torch.no_grad()`` in the model's current
    train/eval mode; ``example_input`` is one argument, a tuple of arguments or
    a dict of keyword arguments. Hooks are removed afterwards, also on error.
    """
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    params = {name: _tensor_census(p) for name, p in model.named_parameters() if _countable(p)}
    buffers = {name: _tensor_census(b) for name, b in model.named_buffers() if _countable(b)}
    out: dict[str, Any] = {"parameters": params, "buffers": buffers}
    totals = {"parameters": _total(params), "buffers": _total(buffers)}
    if example_input is not None:
        out["activations"] = _activation_census(model, example_input)
        totals["activations"] = _total(out["activations"])
    out["totals"] = totals
    return out


def penalty_profile(threads=None, **options) -> dict:
    """This CPU's and this torch build's cost of subnormals, per op: see :func:`benchctl.penalty.profile`."""
    from .penalty import profile

    return profile(threads, **options)

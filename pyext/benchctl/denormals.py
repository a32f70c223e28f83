"""Where the subnormal numbers are: in a tensor, a model's weights, its activations.

Counting works on the bit patterns (exponent field all zeros, fraction not),
never on float comparisons: with DAZ on, ``x != 0`` reads a subnormal as zero
and would count nothing. What subnormals cost on this CPU is a study:
:mod:`benchctl._studies.penalty`.
"""

from __future__ import annotations

import contextlib
import math
import weakref
from typing import Any, Iterator

__all__ = ["CENSUS_SCOPE", "count_subnormal", "tensors_in", "values_census", "op_inputs_census", "layer_watch",
           "layer_census", "layers_census", "model_census", "weights_census", "activation_census"]

#: The profiler scope the census of :func:`layer_watch` runs in: a profiled call's op table leaves it out
#: (its ops are benchctl's, not the workload's).
CENSUS_SCOPE = "benchctl::census"

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
    return {"dtype": _dtype(tensor), "numel": n, "subnormal": k,
            "fraction": k / n if n else 0.0}


class _Tally:
    """Subnormal counts over tensors: ``values``, ``subnormal``, ``float16_subnormal`` (those in float16 tensors) and
    ``densest``, the largest share of subnormals in one tensor of another dtype. A slow path is paid per operation
    on a subnormal, and a tensor is read as often as the ops need it (a conv's weights by every output), so a share
    over all values can hide a tensor that every multiply-add of a layer reads; a share per tensor cannot. float16's
    subnormals (below 6.1e-5) are normal numbers in float32, in which the penalty profile times its ops and torch's
    kernels that widen float16 compute; on an Intel Xeon with avx512_fp16 a float16 conv2d and multiply of
    subnormal inputs ran as fast as of normal ones (0.98x, 0.95x): they are counted apart."""

    def __init__(self) -> None:
        self.values = self.subnormal = self.float16_subnormal = 0
        self.densest = 0.0

    def add(self, dtype: str, numel: int, subnormal: int) -> None:
        self.values += numel
        self.subnormal += subnormal
        if dtype == "float16":
            self.float16_subnormal += subnormal
        elif numel:
            self.densest = max(self.densest, subnormal / numel)

    def to_json(self) -> dict[str, Any]:
        return {"values": self.values, "subnormal": self.subnormal, "float16_subnormal": self.float16_subnormal,
                "densest": self.densest}


def _total(entries: dict) -> dict:
    tally = _Tally()
    for e in entries.values():
        tally.add(e["dtype"], e["numel"], e["subnormal"])
    return {"numel": tally.values, "subnormal": tally.subnormal, "fraction": tally.subnormal / tally.values
            if tally.values else 0.0, "float16_subnormal": tally.float16_subnormal, "densest": tally.densest}


def _dtype(tensor) -> str:
    return str(tensor.dtype).replace("torch.", "")


def tensors_in(value):
    """Every countable tensor in ``value`` (a tensor, or tuples, lists and dicts of them)."""
    if _countable(value):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from tensors_in(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from tensors_in(v)


def values_census(value) -> dict[str, Any]:
    """``{"values", "subnormal", "float16_subnormal", "densest"}`` (:class:`_Tally`) over every countable tensor in
    ``value`` (e.g. what a call returned)."""
    tally = _Tally()
    for t in tensors_in(value):
        tally.add(_dtype(t), t.numel(), count_subnormal(t))
    return tally.to_json()


def _version(tensor) -> int:
    """The tensor's version counter (bumped by each in-place op on its data); -1 for an inference tensor, which
    has none."""
    try:
        return tensor._version
    except RuntimeError:
        return -1


#: Tensor methods that write their tensor without reading its values (a fill, a random draw, a copy into it): that
#: tensor is not an input of their arithmetic. torch.nn.init's functions, all of this kind, are told by their module.
_OVERWRITES = frozenset({"fill_", "zero_", "uniform_", "normal_", "random_", "bernoulli_", "exponential_",
                         "geometric_", "cauchy_", "log_normal_", "copy_", "set_", "resize_", "resize_as_"})
#: Tensor methods and properties (``__get__``) that read a tensor's shape, strides or type, or make a view of its
#: memory, none of its values: an op on the view counts them.
_NO_VALUES = frozenset({"dim", "ndimension", "size", "numel", "nelement", "stride", "is_contiguous", "element_size",
                        "data_ptr", "storage_offset", "is_floating_point", "is_complex", "get_device", "__len__",
                        "__get__", "view", "view_as", "t", "transpose", "permute", "unsqueeze", "squeeze", "expand",
                        "expand_as", "narrow", "as_strided", "unflatten", "detach", "requires_grad_"})


def _read_by(func, args: tuple, kwargs: dict) -> tuple:
    """The arguments of a torch function whose values it reads: none for one that reads only shapes and types or
    makes a view (:data:`_NO_VALUES`); all but an ``out=`` tensor, and but the tensor of one that only overwrites it
    (:data:`_OVERWRITES`; torch.nn.init's functions, which take it as ``tensor``), whose values there are whatever
    memory held (``torch.empty`` before an init reads as garbage, subnormals included)."""
    name = getattr(func, "__name__", None)
    if name in _NO_VALUES:
        return ()
    read_kwargs = {k: v for k, v in kwargs.items() if k != "out"}
    if getattr(func, "__module__", None) == "torch.nn.init":
        read_kwargs.pop("tensor", None)
        return args[1:], read_kwargs
    return (args[1:] if name in _OVERWRITES else args), read_kwargs


def op_inputs_census(call) -> dict[str, Any]:
    """``{"values", "subnormal", "float16_subnormal", "densest"}`` (:class:`_Tally`) over the float tensors on the CPU
    that the torch functions called from Python read in one call of ``call()``, whether they came from a module, a
    global, the call's arguments or an earlier op. A tensor read again unchanged is
    counted once; one changed in place since (its version counter), or a new tensor in memory a freed one held
    (``y = y * 0.7`` in a loop reuses two blocks), is counted again. A census of outputs and weights alone misses
    subnormal *inputs*: a conv2d of a global holding 1e-39s returns normal values (its bias) while it runs 70x
    slow on them. What an op only writes is not its input (:func:`_read_by`). The CPU only: FTZ/DAZ acts on the
    CPU's arithmetic. The call's exceptions propagate."""
    import torch
    from torch.overrides import TorchFunctionMode

    seen: dict = {}  # (data, shape, strides, dtype, version) -> a weak reference to the tensor counted
    tally = _Tally()

    def count(value) -> None:
        for t in tensors_in(value):
            if type(t) not in (torch.Tensor, torch.nn.Parameter) or t.layout != torch.strided or t.device.type != "cpu":
                continue  # subclasses (fake, distributed), sparse, meta and other devices: not the CPU's values
            key = (t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.dtype, _version(t))
            earlier = seen.get(key)
            if earlier is not None and earlier() is t:
                continue
            seen[key] = weakref.ref(t)  # weak: the census keeps no intermediate alive
            tally.add(_dtype(t), t.numel(), count_subnormal(t))

    class _Count(TorchFunctionMode):
        # Inside this handler the mode is off: the counting's own ops are not counted.
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            count(_read_by(func, args, kwargs))
            return func(*args, **kwargs)

    with _Count():
        call()
    return tally.to_json()


def _call(model, example_input) -> None:
    import torch

    with torch.no_grad():
        if isinstance(example_input, tuple):
            model(*example_input)
        elif isinstance(example_input, dict):
            model(**example_input)
        else:
            model(example_input)


class _LayerTally:
    """What one layer's outputs held, summed over its calls."""

    def __init__(self, name: str, module) -> None:
        self.name, self.type = name, type(module).__name__
        self.calls = self.numel = self.subnormal = self.zero = self.nonfinite = 0
        self.dtype: str | None = None  # of its outputs ("mixed" where they differ)
        self.abs_sum = 0.0
        self.peak = -math.inf  # largest magnitude seen; inf once anything overflowed

    def add(self, tensor) -> None:
        import torch

        out = tensor.detach()
        self.dtype = _dtype(out) if self.dtype in (None, _dtype(out)) else "mixed"
        magnitude = out.abs().double()
        finite = torch.isfinite(magnitude)
        self.numel += out.numel()
        self.subnormal += count_subnormal(out)
        self.zero += int((out == 0).sum())
        self.nonfinite += int((~finite).sum())
        if out.numel():
            self.peak = max(self.peak, float(magnitude.max()))
            self.abs_sum += float(magnitude[finite].sum())

    def record(self) -> dict[str, Any]:
        n = self.numel
        return {"layer": self.name, "type": self.type, "dtype": self.dtype, "calls": self.calls, "numel": n,
                "subnormal": self.subnormal, "fraction": self.subnormal / n if n else 0.0,
                "zero_fraction": self.zero / n if n else 0.0, "nonfinite": self.nonfinite,
                # Overflowed activations are facts worth reporting (nonfinite), but JSON has no inf.
                "max_abs": self.peak if math.isfinite(self.peak) else None,
                "mean_abs": self.abs_sum / n if n else None}


@contextlib.contextmanager
def layer_watch(model) -> Iterator[list[dict[str, Any]]]:
    """Forward hooks on every leaf layer of ``model`` while the block runs.

    Yields a list that is filled on exit, also after an exception, with one
    record per leaf layer (see :func:`layer_census`); the hooks are removed.
    """
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    tallies = {name: _LayerTally(name, m) for name, m in model.named_modules()
               if not any(True for _ in m.children())}
    order: list[str] = []

    def hook_for(tally: _LayerTally):
        def hook(module, inputs, output):
            with torch.profiler.record_function(CENSUS_SCOPE):
                if not tally.calls:
                    order.append(tally.name)
                tally.calls += 1
                for t in tensors_in(output):
                    tally.add(t)

        return hook

    modules = dict(model.named_modules())
    handles = []
    records: list[dict[str, Any]] = []
    try:
        for name, tally in tallies.items():
            handles.append(modules[name].register_forward_hook(hook_for(tally)))
        yield records
    finally:
        for h in handles:
            h.remove()
        names = order + [n for n in tallies if n not in order]
        records.extend(tallies[n].record() for n in names)


def layer_census(model, example_input) -> list[dict[str, Any]]:
    """Run ``model`` once on ``example_input`` (no grad) and describe each leaf layer's outputs.

    One record per leaf module (a model that is itself a leaf is named ""),
    layers that ran first in the order they first ran, then those that did
    not run (``calls`` 0): ``layer``, ``type``, ``dtype`` (of its outputs), ``calls``, ``numel``,
    ``subnormal`` (by bit pattern) and its ``fraction``, ``zero_fraction``,
    ``nonfinite``, ``max_abs`` (None when not finite or nothing ran) and
    ``mean_abs`` (of the finite values). The forward runs in the model's
    current train/eval mode; ``example_input`` is one argument, a tuple of
    arguments or a dict of keyword arguments. Hooks are removed afterwards,
    also on error.
    """
    with layer_watch(model) as records:
        _call(model, example_input)
    return records


def model_census(model, example_input=None) -> dict:
    """Subnormal counts in a model, and with ``example_input`` in its layers' outputs.

    Returns ``{"parameters": {name: entry}, "buffers": {name: entry},
    "activations": {layer name: record} (only with an input, records of
    :func:`layer_census`), "totals": {"parameters", "buffers"[, "activations"]}}``;
    a parameter or buffer entry has ``dtype``, ``numel``, ``subnormal`` and
    ``fraction``. Integer buffers (``num_batches_tracked``) are left out.
    """
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    params = {name: _tensor_census(p) for name, p in model.named_parameters() if _countable(p)}
    buffers = {name: _tensor_census(b) for name, b in model.named_buffers() if _countable(b)}
    out: dict[str, Any] = {"parameters": params, "buffers": buffers}
    totals = {"parameters": _total(params), "buffers": _total(buffers)}
    if example_input is not None:
        out["activations"] = {r["layer"]: r for r in layer_census(model, example_input)}
        totals["activations"] = _total(out["activations"])
    out["totals"] = totals
    return out


def weights_census(model) -> dict[str, Any]:
    """Subnormal values among the model's floating-point parameters and buffers:
    ``{"values", "subnormal", "fraction", "float16_subnormal", "densest", "by_tensor"}`` (:class:`_Tally`;
    by_tensor lists the tensors holding any)."""
    census = model_census(model)
    entries = {**census["parameters"], **census["buffers"]}
    total = _total(entries)
    return {"values": total["numel"], "subnormal": total["subnormal"], "fraction": total["fraction"],
            "float16_subnormal": total["float16_subnormal"], "densest": total["densest"],
            "by_tensor": {name: e["subnormal"] for name, e in entries.items() if e["subnormal"]}}


def layers_census(records) -> dict[str, Any]:
    """``{"values", "subnormal", "float16_subnormal", "densest"}`` (:class:`_Tally`, a layer's outputs as one
    tensor) over layer records (:func:`layer_census`'s; those of layers that ran)."""
    tally = _Tally()
    for r in records:
        tally.add(r["dtype"], r["numel"], r["subnormal"])
    return tally.to_json()


def activation_census(model, example_input) -> dict[str, Any]:
    """Subnormal values in every layer's output for one forward of ``example_input``:
    ``{"values", "subnormal", "float16_subnormal", "densest", "by_layer"}`` (by_layer lists the layers holding
    any)."""
    layers = layer_census(model, example_input)
    return {**layers_census(layers), "by_layer": {r["layer"]: r["subnormal"] for r in layers if r["subnormal"]}}

"""Which weights a vision workload runs with, chosen by a one-word spec.

Seed 1 used ``resnet50(pretrained=True)``; on Intel cores trained weights with
subnormal values are the classic cause of a slow forward pass, so the weights
are a setting to vary, not a detail. Specs:

* ``imagenet``    torchvision's ImageNet weights (``IMAGENET1K_V1``, what
  ``pretrained=True`` meant), from the ``TORCH_HOME`` cache or downloaded into
  it. Offline (or with ``BENCHCTL_OFFLINE=1``) a missing file is an error
  that names the exact file to place in the cache.
* ``random``      the architecture's own initialisation, under the caller's seed.
* ``subnormal:F`` ``random`` with a fraction F of every conv weight replaced
  by subnormal float32 values, to emulate trained weights with denormals.
* ``auto``        ``imagenet`` if its file is already cached, else ``random``.
* anything else   a path to a state dict, loaded with ``torch.load(...,
  weights_only=True)`` (never pickle code).

:func:`apply_weights` returns what was used and why, for the result's notes.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlparse

from .._validate import ArgumentError
from ..errors import UnavailableError, require_package

__all__ = ["OFFLINE_ENV", "KINDS", "WeightsUnavailable", "torchvision", "parse_spec", "imagenet_cache_file", "prefetch",
           "apply_weights"]

OFFLINE_ENV = "BENCHCTL_OFFLINE"
KINDS = ("auto", "imagenet", "random", "subnormal:F", "PATH")

# Smallest and largest positive float32 subnormal bit patterns.
_SUBNORMAL_MIN_BITS = 0x00000001
_SUBNORMAL_MAX_BITS = 0x007FFFFF
_SIGN_BIT = -0x80000000  # 0x80000000 as a signed int32


class WeightsUnavailable(UnavailableError, RuntimeError):
    """The requested weights cannot be obtained (e.g. offline and not cached)."""


def torchvision(load: bool = True):
    """torchvision (``load``: imported; else only found installed), which only the seed workloads need: an
    extra of benchctl, whose pip command a MissingPackage names when it is not installed."""
    return require_package("torchvision", "seeds", "the resnet_order seed workload", load=load)


def parse_spec(spec: str) -> tuple[str, Any]:
    """``spec`` -> (kind, value): ('auto'|'imagenet'|'random', None),
    ('subnormal', fraction) or ('path', path). Bad specs raise ArgumentError (a ValueError)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ArgumentError(f"weights must be one of {', '.join(KINDS)}; got {spec!r}")
    spec = spec.strip()
    if spec in ("auto", "imagenet", "random"):
        return spec, None
    if spec.startswith("subnormal:"):
        text = spec.split(":", 1)[1]
        try:
            fraction = float(text)
        except ValueError:
            said = f"weights {spec!r}: the fraction {text!r} is not a number (e.g. subnormal:0.1)"
            raise ArgumentError(said) from None
        if not 0.0 < fraction <= 1.0:
            raise ArgumentError(f"weights {spec!r}: the fraction must be in (0, 1], got {fraction}")
        return "subnormal", fraction
    if os.path.isfile(spec):
        return "path", spec
    raise ArgumentError(
        f"weights {spec!r} is neither one of auto, imagenet, random, subnormal:F "
        f"nor an existing state-dict file"
    )


def _imagenet_weights_enum(arch: str):
    """The torchvision weights entry that ``pretrained=True`` meant for ``arch``."""
    models = torchvision().models
    try:
        enum = models.get_model_weights(arch)
    except ValueError as exc:
        raise ArgumentError(f"torchvision has no weights for architecture {arch!r}: {exc}") from None
    # IMAGENET1K_V1 is the entry the deprecated pretrained=True selected.
    return getattr(enum, "IMAGENET1K_V1", None) or enum.DEFAULT


def imagenet_cache_file(arch: str) -> str:
    """Where torchvision's loader looks for (and would download) ``arch``'s ImageNet file."""
    import torch

    url = _imagenet_weights_enum(arch).url
    return os.path.join(torch.hub.get_dir(), "checkpoints", os.path.basename(urlparse(url).path))


def _load_imagenet(arch: str) -> tuple[dict, str]:
    enum = _imagenet_weights_enum(arch)
    path = imagenet_cache_file(arch)
    cached = os.path.isfile(path)
    if not cached and os.environ.get(OFFLINE_ENV, "") not in ("", "0"):
        raise WeightsUnavailable(_missing_message(arch, enum.url, path, f"{OFFLINE_ENV} is set"))
    try:
        # check_hash verifies a download against the hash in its file name;
        # weights_only keeps a tampered cache file from running code.
        state = enum.get_state_dict(progress=False, check_hash=True, weights_only=True)
    except Exception as exc:  # network errors come as URLError, OSError, HTTPError...
        if cached:
            raise WeightsUnavailable(f"the cached ImageNet weights {path} could not be loaded: {exc}") from exc
        raise WeightsUnavailable(_missing_message(arch, enum.url, path, f"download failed: {exc}")) from exc
    return state, ("cache " if cached else "download into ") + path


def _missing_message(arch: str, url: str, path: str, why: str) -> str:
    return (
        f"ImageNet weights for {arch} are not cached and cannot be downloaded ({why}). "
        f"Place the file {os.path.basename(path)} (from {url}) at {path} "
        f"(the cache under TORCH_HOME={os.environ.get('TORCH_HOME', '(unset: ~/.cache/torch)')}), "
        f"or run with --weights random, --weights subnormal:F or --weights PATH."
    )


def prefetch(arch: str, spec: str) -> None:
    """Check ``spec`` and, for ``imagenet``, download the file into the cache now:
    once here rather than in every worker, and failing before any worker starts."""
    kind, _ = parse_spec(spec)
    if kind == "imagenet":
        _load_imagenet(arch)


def _plant_subnormals(model, fraction: float, generator) -> dict[str, int]:
    """Overwrite ``fraction`` of each float32 Conv2d weight with subnormal values.

    The values are written as int32 bit patterns through an integer view of the
    weight: making them by converting small floats would be flushed to zero
    whenever FTZ is on, silently planting nothing. Each planted value keeps the
    sign of the weight it replaces. Returns {parameter name: values planted}.
    """
    import torch

    planted: dict[str, int] = {}
    for module_name, module in model.named_modules():
        if not isinstance(module, torch.nn.Conv2d):
            continue
        weight = module.weight
        if weight.dtype != torch.float32:
            raise ValueError(f"{module_name}.weight is {weight.dtype}; subnormal planting is for float32 weights")
        with torch.no_grad():
            bits = weight.data.view(torch.int32).view(-1)
            count = round(fraction * bits.numel())
            chosen = torch.randperm(bits.numel(), generator=generator)[:count]
            mantissas = torch.randint(
                _SUBNORMAL_MIN_BITS, _SUBNORMAL_MAX_BITS + 1, (count,), generator=generator, dtype=torch.int32
            )
            bits[chosen] = mantissas | (bits[chosen] & _SIGN_BIT)
        planted[f"{module_name}.weight"] = count
    if not planted:
        raise ValueError("the model has no Conv2d layer to plant subnormal weights in")
    return planted


def apply_weights(model, arch: str, spec: str, seed: int) -> dict[str, Any]:
    """Load or make the weights ``spec`` names into ``model`` (already built under ``seed``).

    Returns {"requested", "used", "source", "why"} (plus "planted" for
    subnormal:F) for the result's notes.
    """
    import torch

    kind, value = parse_spec(spec)
    if kind == "auto":
        path = imagenet_cache_file(arch)
        if os.path.isfile(path):
            kind, why = "imagenet", f"auto: ImageNet weights are cached at {path}"
        else:
            kind, why = "random", f"auto: no cached ImageNet weights at {path}; using seeded random init"
    else:
        why = f"requested {spec}"
    info: dict[str, Any] = {"requested": spec, "used": kind, "why": why}

    if kind == "imagenet":
        state, source = _load_imagenet(arch)
        model.load_state_dict(state)
        info["source"] = source
    elif kind == "path":
        state = torch.load(value, map_location="cpu", weights_only=True)
        if not isinstance(state, dict):
            raise ArgumentError(f"{value} holds a {type(state).__name__}, not a state dict")
        model.load_state_dict(state)
        info["source"] = os.path.abspath(value)
    elif kind == "random":
        info["source"] = f"{type(model).__name__} default initialisation, torch.manual_seed({seed})"
    else:  # subnormal
        generator = torch.Generator().manual_seed(seed)
        info["planted"] = _plant_subnormals(model, value, generator)
        info["fraction"] = value
        info["source"] = (
            f"{type(model).__name__} default initialisation, torch.manual_seed({seed}), "
            f"then {value:g} of each conv weight set to subnormal bit patterns"
        )
    return info

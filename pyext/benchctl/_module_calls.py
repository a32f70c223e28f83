"""Every module call inside a block, seen before torch runs it: the probe worker's watches of modules (their training
mode, their hooks, the weights autocast casts) share this one wrapper of ``torch.nn.Module._call_impl``.

``module(x)`` goes through ``Module._call_impl``, looked up on the class at call time, so replacing it for a block
reaches every module the code calls; torch's own is back after the block, also on an exception. Two watches nest
(each wraps what it found). Modules inside a ``torch.compile``d module run in its graph and are not seen.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

__all__ = ["seeing_module_calls"]


@contextlib.contextmanager
def seeing_module_calls(see: Callable[[Any], None]) -> Iterator[None]:
    """Call ``see(module)`` before each module call made inside the block."""
    import torch

    own = torch.nn.Module._call_impl

    def seen(module: Any, *args: Any, **kwargs: Any) -> Any:
        see(module)
        return own(module, *args, **kwargs)

    torch.nn.Module._call_impl = seen
    try:
        yield
    finally:
        torch.nn.Module._call_impl = own

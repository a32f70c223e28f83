"""What the probe worker learnt of how its memory is paged: the evidence of the transparent-huge-pages
cause (:mod:`benchctl.huge_pages`), read through :class:`~.facts.Facts`."""

from __future__ import annotations

from dataclasses import dataclass

from ..huge_pages import torch_enabled

__all__ = ["HugePageFacts"]


@dataclass(frozen=True)
class HugePageFacts:
    """The kernel's transparent-huge-page ``mode`` in the probe worker ("always", "madvise", "never"; None:
    unreadable) and the ``THP_MEM_ALLOC_ENABLE`` value it started with (``torch_env``; None: unset)."""

    mode: str | None
    torch_env: str | None = None

    @classmethod
    def from_probe(cls, probe: dict) -> "HugePageFacts | None":
        """From the probe note's keys (:func:`benchctl.huge_pages.evidence`); None where they are missing."""
        if "thp_kernel_mode" not in probe:
            return None
        return cls(probe["thp_kernel_mode"], probe.get("thp_env"))

    @property
    def torch_on(self) -> bool:
        """Whether torch already puts its large buffers on huge pages."""
        return torch_enabled(self.torch_env)

"""What the probe worker learns of how its memory is paged: the kernel's transparent-huge-page mode and
torch's switch for it, as the process started, read back as :class:`HugePageFacts`."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..._probe import Probe, ProbedCall
from . import control

__all__ = ["HugePageFacts", "HugePagesProbe", "PROBE", "PROBES"]

# The probe note's keys, written and read here only.
_MODE, _ENV = "thp_kernel_mode", "thp_env"


@dataclass(frozen=True)
class HugePageFacts:
    """The kernel's transparent-huge-page ``mode`` in the probe worker ("always", "madvise", "never"; None:
    unreadable) and the ``THP_MEM_ALLOC_ENABLE`` value it started with (``torch_env``; None: unset)."""

    mode: str | None
    torch_env: str | None = None

    @property
    def torch_on(self) -> bool:
        """Whether torch already puts its large buffers on huge pages."""
        return control.torch_enabled(self.torch_env)


class HugePagesProbe(Probe):
    key = "huge_pages"
    fact = HugePageFacts

    def record(self, probed: ProbedCall) -> dict:
        return {_MODE: control.kernel_mode(), _ENV: os.environ.get(control.TORCH_ENV)}

    def read(self, note: dict) -> HugePageFacts | None:
        if _MODE not in note:
            return None
        return HugePageFacts(note[_MODE], note.get(_ENV))


PROBE = HugePagesProbe()
PROBES = (PROBE,)

"""Transparent huge pages for torch's large CPU buffers: the kernel's mode, torch's switch, and
what a large buffer is backed by, read back from this process's own mappings.

torch's CPU allocator aligns buffers of 2 MiB or more to 2 MiB and advises the kernel to back
them with huge pages (``madvise(MADV_HUGEPAGE)``) when ``THP_MEM_ALLOC_ENABLE=1`` is set as it
first allocates (it reads the variable once). A buffer that is mapped and freed every
iteration then costs one page fault per 2 MiB instead of one per 4 KiB. The kernel decides
whether huge pages can be used at all: ``/sys/kernel/mm/transparent_hugepage/enabled`` reads
``always``, ``madvise`` (only advised regions) or ``never``.
"""

from __future__ import annotations

import os

from ... import _procfs

__all__ = ["TORCH_ENV", "KERNEL_MODE_PATH", "PROBE_BYTES", "kernel_mode", "torch_enabled", "huge_bytes_at",
           "observe"]

#: The variable torch's CPU allocator reads, once, to put large buffers on huge pages.
TORCH_ENV = "THP_MEM_ALLOC_ENABLE"
KERNEL_MODE_PATH = "/sys/kernel/mm/transparent_hugepage/enabled"
#: The buffer the readback allocates: twice torch's 2 MiB threshold, so that one aligned huge page fits.
PROBE_BYTES = 4 << 20


def kernel_mode(text: str | None = None) -> str | None:
    """The kernel's THP mode, the bracketed word of ``always [madvise] never``; None where unreadable."""
    text = _procfs.read_text(KERNEL_MODE_PATH) if text is None else text
    for word in (text or "").split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return None


def torch_enabled(value: str | None) -> bool:
    """Whether ``THP_MEM_ALLOC_ENABLE`` set to ``value`` (None: unset) tells torch's allocator to use huge pages:
    torch's boolean variables take "1" and "0"; it ignores any other value with a warning."""
    return value == "1"


def huge_bytes_at(address: int, smaps: str | None = None) -> int | None:
    """The bytes of huge pages (``AnonHugePages``) in the mapping of this process that holds ``address``;
    None where no mapping holds it or smaps cannot be read."""
    text = _procfs.read_text("/proc/self/smaps") if smaps is None else smaps
    inside = False
    for line in (text or "").splitlines():
        head = line.split(None, 1)[0] if line.strip() else ""
        if "-" in head and not head.endswith(":"):  # a mapping's first line: "start-end perms ..."
            start, _, end = head.partition("-")
            try:
                inside = int(start, 16) <= address < int(end, 16)
            except ValueError:
                inside = False
        elif inside and head == "AnonHugePages:":
            return int(line.split()[1]) * 1024
    return None


def observe() -> dict:
    """What this process gets: the kernel's mode, torch's switch as the process saw it, and the huge-page
    bytes backing a freshly written :data:`PROBE_BYTES` torch buffer (torch must be importable)."""
    import torch  # the readback asks torch's own allocator

    buffer = torch.empty(PROBE_BYTES, dtype=torch.uint8)
    buffer.fill_(1)  # fault every page in
    return {"kernel_mode": kernel_mode(), TORCH_ENV: os.environ.get(TORCH_ENV),
            "probe_bytes": PROBE_BYTES, "huge_bytes": huge_bytes_at(buffer.data_ptr())}

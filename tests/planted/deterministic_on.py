"""Planted cause: torch's deterministic mode left on. A collate step builds each padded batch in a buffer
from ``torch.empty``, sized for the longest sequence the model takes, and copies only the sequences' own
lengths into it (the padding is masked, never read), with ``torch.use_deterministic_algorithms(True)``
switched on in its setup, as a reproducibility setting left in: the mode fills every new tensor
(``torch.utils.deterministic.fill_uninitialized_memory``, on by default), so each batch writes its whole
buffer where the code writes a few sequences. The fix is the mode off after the setup; what it measured
in fresh processes is ``bench/plant_toggles.py --only deterministic_on``'s to say."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Collate", "cause": "deterministic",
         "fixed": {"after_setup": "torch.use_deterministic_algorithms(False)"}}

MAX_LEN, DIM = 2048, 64  # the buffer a batch is padded to (the model's longest sequence)
SEQS, BATCHES = 8, 16  # sequences per batch, batches per iteration


class Collate:
    @staticmethod
    def setup():
        torch.set_num_threads(1)  # copies of a few hundred KiB: a second thread only waits beside other work
        torch.use_deterministic_algorithms(True)  # left on from a run that had to reproduce bit for bit
        g = torch.Generator().manual_seed(0)
        lengths = torch.randint(MAX_LEN // 16, MAX_LEN // 8, (BATCHES, SEQS), generator=g).tolist()
        return [[torch.randn(n, DIM, generator=g) for n in batch] for batch in lengths]

    @staticmethod
    def run(batches):
        total = torch.zeros(())
        for seqs in batches:
            total += _collate(seqs)[0, : len(seqs[0])].sum()
        return total


def _collate(seqs):
    # One batch's buffer, freed before the next is made (two alive at once would let glibc trim and fault them).
    padded = torch.empty(len(seqs), MAX_LEN, DIM)  # every row past a sequence's length stays unread
    for i, seq in enumerate(seqs):
        padded[i, : len(seq)] = seq
    return padded

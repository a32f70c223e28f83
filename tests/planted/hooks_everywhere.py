"""Planted cause: module hooks run on every call. A small MLP gets a forward hook on every submodule that
logs a statistic of its output (``output.detach().abs().mean().item()`` appended to a list, as activation
monitoring is written): every call of every module takes torch.nn.Module's slow path, runs a reduction
and syncs for the ``.item()``. The fix is the same model without the hooks (``Plain``); what it measured
in fresh processes is ``bench/plant_toggles.py --only hooks_everywhere``'s to say."""

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Hooked", "cause": "hooks", "fixed": {"target": "Plain"}}

WIDTH, DEPTH, BATCH = 64, 8, 32
CALLS = 4  # forward passes per iteration


def _model():
    torch.set_num_threads(1)  # small ops: a second thread only waits (and beside other work oversubscribes)
    torch.manual_seed(0)
    layers = [m for _ in range(DEPTH) for m in (torch.nn.Linear(WIDTH, WIDTH), torch.nn.LayerNorm(WIDTH),
                                                torch.nn.GELU())]
    return torch.nn.Sequential(*layers).eval(), torch.randn(BATCH, WIDTH)


def _forward(state):
    model, x, _ = state
    with torch.no_grad():
        for _ in range(CALLS):
            out = model(x)
    return out


class Hooked:
    @staticmethod
    def setup():
        model, x = _model()
        stats = {}

        def log_stats(module, inputs, output):  # activation monitoring, left on
            stats.setdefault(id(module), []).append(output.detach().abs().mean().item())

        for module in model.modules():
            module.register_forward_hook(log_stats)
        return model, x, stats

    run = staticmethod(_forward)


class Plain:
    @staticmethod
    def setup():
        model, x = _model()
        return model, x, {}

    run = staticmethod(_forward)

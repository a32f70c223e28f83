"""Seed 1: is ResNet-50's evaluation forward pass slower when the process did not train first?

The user's experiment (``../shared/seeds/eval_slower_than_train.txt``),
reproduced faithfully: torchvision ResNet-50, ``FakeData`` images through a
``DataLoader(batch_size, num_workers=1, pin_memory=True)``, SGD lr 0.01,
CrossEntropyLoss. Two orders, each meant to run in its own fresh process:

* ``eval_only``        model.eval(), no_grad, forward over the test loader;
* ``train_then_eval``  model.train(): zero_grad / forward / backward / step
  over the train loader, then the same evaluation loop.

As in the seed only the forward call is timed, per batch: phase ``train``
and phase ``eval``. ``arch`` and ``image_size`` exist so that tests and smoke
runs can use a smaller torchvision model; the defaults are the seed's.
``train_batches`` stops the training loop early (None: all batches, as the
seed), since training dominates a cell's cost. ``load_first`` (default) reads
each loop's batches through that loader before the loop, so its worker has
exited when the forward passes are timed; ``False`` streams them as the seed
does. Streamed on 2 cores, the worker making the next batches competed with
the timed forward passes: on the development VM (AMD EPYC guest), iterations
it overlapped had ~2,500 page faults (a batch arriving) and 2-4x the context
switches, and some ran ~1.5x slower, more in some processes than in others.

:data:`PARAMS` holds the defaults of ``benchctl run resnet_order`` and of
``bench/resnet_order.py`` alike: batch 16, 80 images (5 eval batches) and 3
training batches, enough to leave most processes in their after-training
state (on the development machine eval page faults fell from ~300k to ~1-3k
per iteration after 3 training batches, not after 1; some processes still
fault ~100k times) while a whole matrix fits five minutes on 2 cores. ``--batch-size 128 --num-data 1024`` with every
training batch and ``load_first=False`` is the seed's exact experiment.
"""

from __future__ import annotations

import itertools
import time
import warnings
from typing import Any

from .. import _validate
from . import register
from .device import DEVICES, check_device, gpu_info, synchronizer
from ..denormals import activation_census, weights_census
from .weights import apply_weights, parse_spec, torchvision

__all__ = ["ORDERS", "NUM_CLASSES", "PARAMS", "check_args", "build_model", "resnet_order", "value_census"]

ORDERS = ("eval_only", "train_then_eval")
NUM_CLASSES = 1000  # FakeData's class count in the seed, and ImageNet's

PARAMS: dict[str, Any] = {
    "order": "eval_only",
    "batch_size": 16,
    "num_data": 80,
    "weights": "auto",
    "device": "cpu",
    "seed": 0,
    "arch": "resnet50",
    "image_size": 224,
    "train_batches": 3,
    "load_first": True,
}


def check_args(args: dict[str, Any]) -> None:
    """Reject bad arguments before any work, naming the valid values (and a missing torchvision)."""
    torchvision(load=False)
    if args["order"] not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}; got {args['order']!r}")
    if args["device"] not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}; got {args['device']!r}")
    for key in ("batch_size", "num_data", "image_size"):
        _validate.count(key, args[key], 1)
    _validate.optional_count("train_batches", args["train_batches"], 1)  # None: every batch
    if not isinstance(args["load_first"], bool):
        raise ValueError(f"load_first must be true or false; got {args['load_first']!r}")
    if args["num_data"] < args["batch_size"]:
        raise ValueError(f"num_data ({args['num_data']}) must be at least batch_size ({args['batch_size']})")
    parse_spec(args["weights"])


def build_model(args: dict[str, Any]):
    """The architecture under ``torch.manual_seed(seed)``, with the requested weights.

    Returns (model, weights_info)."""
    import torch

    models = torchvision().models
    torch.manual_seed(args["seed"])
    model = models.get_model(args["arch"], weights=None, num_classes=NUM_CLASSES)
    info = apply_weights(model, args["arch"], args["weights"], args["seed"])
    return model, info


def _make_loader(args: dict[str, Any]):
    """The seed's FakeData + DataLoader (num_workers=1, pin_memory=True)."""
    import torch

    datasets, transforms = torchvision().datasets, torchvision().transforms
    size = args["image_size"]
    dataset = datasets.FakeData(args["num_data"], (3, size, size), NUM_CLASSES, transforms.ToTensor())
    return torch.utils.data.DataLoader(dataset, batch_size=args["batch_size"], num_workers=1, pin_memory=True)


def _batches(args: dict[str, Any], most: int | None = None):
    """The loop's batches (the first ``most``): streamed from the loader as the seed does, or with
    ``load_first`` all read before the loop, whose loader worker has then exited: streamed, that worker
    makes the next batches while the forward passes are timed, and on 2 cores it takes a CPU from them."""
    loader = itertools.islice(_make_loader(args), most)
    return list(loader) if args["load_first"] else loader


@register("resnet_order", params=PARAMS, help=__doc__.splitlines()[0], check=check_args,
          preload=("torch", "torchvision"), phases=("train", "eval"))
def resnet_order(args: dict[str, Any], rec) -> None:
    import torch

    check_args(args)
    check_device(args["device"])
    device = torch.device(args["device"])
    sync = synchronizer(args["device"])
    if args["device"] == "cuda":
        rec.note("gpu", gpu_info())
    model, weights_info = build_model(args)
    rec.note("weights", weights_info)
    rec.note("weights_census", weights_census(model))
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    criterion = torch.nn.CrossEntropyLoss()
    # Kept as the seed wrote it; without an accelerator DataLoader ignores it
    # (with a warning we silence, since the note below records the fact).
    rec.note("pin_memory", {"requested": True, "effective": args["device"] == "cuda"})
    batches = -(-args["num_data"] // args["batch_size"])
    rec.note("batches", {"eval": batches, "train": 0 if args["order"] == "eval_only" else
                         min(batches, args["train_batches"] or batches)})

    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*pin_memory.*")
        if args["order"] == "train_then_eval":
            model.train()
            for images, target in _batches(args, args["train_batches"]):
                images, target = images.to(device, non_blocking=True), target.to(device, non_blocking=True)
                optimizer.zero_grad()
                sync()
                with rec.iteration("train"):
                    outputs = model(images)
                    sync()
                loss = criterion(outputs, target)
                loss.backward()
                optimizer.step()

        model.eval()
        for images, _target in _batches(args):
            images = images.to(device, non_blocking=True)
            with torch.no_grad():
                sync()
                with rec.iteration("eval"):
                    # Kept until the next batch replaces it, as the seed's `outputs = model(images)`:
                    # what stays allocated between iterations is part of the allocator story.
                    outputs = model(images)  # noqa: F841
                    sync()
    rec.note("loops_wall_s", time.perf_counter() - started)
    # After the timed loops, on one image: the values the eval forward computed with.
    census = activation_census(model, images[:1])
    rec.note("activation_census", {**census, "input": "first image of the last eval batch"})


def value_census(args: dict[str, Any]) -> dict[str, dict]:
    """``{"weights", "activations"}``: the subnormal census of the model a cell would build and of one
    forward's activations, taken in this process: cheap evidence for ruling FTZ out before any cell runs."""
    import torch

    model, _ = build_model({**PARAMS, **args})
    size = args.get("image_size", PARAMS["image_size"])
    image = torch.rand(1, 3, size, size, generator=torch.Generator().manual_seed(args.get("seed", 0)))
    model.eval()
    activations = activation_census(model, image)
    return {"weights": weights_census(model),
            "activations": {"values": activations["values"], "subnormal": activations["subnormal"]}}

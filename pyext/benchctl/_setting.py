"""What a setting of a matrix cell is: the :class:`Setting` every setting subclasses, and its errors.

A setting is a small class with these duties:

* ``canonical(value)``: validate a value (from the CLI's text or from Python)
  and return its canonical JSON form, or raise :class:`SettingError`;
* ``check_available()``: runner side, before any worker: raise
  :class:`SettingUnavailable` if this build or machine cannot apply it at all;
* ``environment(value, env, cell)``: runner side, before the worker starts:
  edit the worker's environment (thread-pool sizes, allocator, extra vars);
* ``apply(value)``: worker side, after ``import torch``: change process
  state and return what was observed right after the change;
* ``readback(value)``: worker side, after the workload: the state the
  workload actually ran under (threads created during the run included);
* ``during(value)``: worker side, between timed iterations (at least every 2 ms): a cheap
  check of what the process runs under now, in the setting's own values, so that
  a probe the workload's own code undoes (``torch.set_num_threads(2)`` in its
  ``setup()``) is seen and never judged;
* ``phase_ended(phase, last)``: worker side, where each phase ends, for every registered
  setting whatever the cell's: what the setting reads of the process there (glibc malloc's
  state), kept in the worker's result under the phase's ``phase_key``.

It also declares ``in_process``: whether it can be applied and undone inside a running process
(FTZ/DAZ, a thread count) or needs a fresh one (an allocator preloaded, a variable read once at
start); ``carries_over``: whether its effect outlasts a switch by more than a few milliseconds
(another pool's threads that spin on after their last call), so that a paired cell's blocks would
mix the two arms; and ``switch_undoes_environment``: whether a switch also sets what its environment set at
start (a thread count), so that a baseline value given there can still be switched away from.
An ``in_process`` setting has ``switch(value)``:
worker side, between timed iterations of a paired cell, move the running process to ``value`` from
whichever value it holds, undoing what that one changed, and return what was observed right after
(as ``apply`` does); a switch that fails midway puts back what it changed and raises. For a ``code``
value (the state the workload's code left), the setting remembers that state the first time the
process leaves it and restores it on every switch back.

The settings themselves live with the causes they probe (``benchctl._causes.<name>.setting``)
or, for those no cause owns, in :mod:`benchctl.settings`, which gathers them all.
"""

from __future__ import annotations

import abc
from typing import Any, Callable

from . import _validate
from .errors import UnavailableError

__all__ = ["SettingError", "SettingUnavailable", "Setting", "KeptOff", "AroundCalls", "split_values", "format_value"]


class SettingError(_validate.ArgumentError):
    """A setting value that is invalid (a user error), or, as :class:`SettingUnavailable`, cannot be applied here."""


class SettingUnavailable(UnavailableError, SettingError):
    """A valid setting this machine or build cannot apply (no FP control, an allocator not installed):
    the environment's kind of error, still a SettingError for callers that refuse any bad setting."""


class Setting(abc.ABC):
    name = ""
    #: "VALUES: what it does", the setting's one description: ``python -m benchctl run --help`` lists it.
    help = ""
    #: Worker applies settings in increasing ``order`` (threads before pin: pin pins the sized team).
    order = 0
    #: Whether ``apply``/``readback`` need torch imported first (its thread pools must exist).
    needs_torch = False
    #: Whether a running process can apply and undo it (:meth:`switch`: paired cells), or it needs a fresh process.
    in_process = False
    #: Whether its effect outlasts a switch by more than a few ms: an ``in_process`` setting that is never paired.
    carries_over = False
    #: Whether what :meth:`during` reads is what the timed calls since a switch held (a setting applied around each
    #: call: ``hooks``, ``inference``, ...): a paired worker does not read it at the switch, before any call ran.
    held_by_calls = False
    #: Whether :meth:`switch` also sets all that :meth:`environment` set when the process started, so that a
    #: paired worker, which starts in the baseline's environment, may start with this setting's baseline value
    #: there and switch away from it (``threads``: every pool resized whatever it was sized to at start; not
    #: ``pin``: the team bound at start, which no switch undoes).
    switch_undoes_environment = False
    #: Whether its values run the workload on different numbers of CPUs (a thread count): a paired worker that
    #: switches it goes through the contention gate as a fresh one does, since a neighbour that takes a CPU
    #: falls on the arm that uses it, not on both arms alike.
    changes_cpus_used = False
    #: An ``in_process`` setting's value that stands for "never applied": what a paired cell's baseline arm
    #: switches back to where the baseline cell does not name the setting. A property where it must be read
    #: of the running process (``threads``: torch's count as the workload's code left it).
    unapplied: Any = None

    @abc.abstractmethod
    def canonical(self, value: Any) -> Any:
        """The value's canonical JSON form; SettingError when it is not one this setting takes."""

    def check_available(self) -> None:
        """Raise SettingUnavailable when this machine or build cannot apply the setting at all."""

    def environment(self, value: Any, env: dict[str, str], cell: dict) -> dict[str, str]:
        return env

    def owns(self, value: Any) -> tuple[str, ...]:
        """Variables this value decides even when it leaves them as they were (conflict checks)."""
        return ()

    def apply(self, value: Any) -> Any:
        return None

    def readback(self, value: Any) -> Any:
        return None

    def switch(self, value: Any) -> Any:
        """Worker side, in a paired cell (``in_process`` settings only): move the running process to ``value``
        from whichever value of this setting it holds now, undoing what that one changed, and return what was
        observed right after (as :meth:`apply` does). Called between timed iterations, never inside one."""
        raise NotImplementedError(f"{self.name} cannot be switched in a running process")

    def clock_wait(self) -> Callable[[], None] | None:
        """Worker side: a function every timed iteration calls before each of its clock reads (``sync=cuda``: wait
        for the GPU there, so that work lands in the iteration that queued it), or None for none. Asked of every
        setting, whatever the cell: the function itself knows whether its setting was applied."""
        return None

    def during(self, value: Any) -> Any:
        """This setting's value as the process runs now (cheap: sampled between timed iterations, at least every
        2 ms), or None where it has no in-run check; a value other than ``value`` means the workload changed it."""
        return None

    #: The key under which :meth:`phase_ended`'s reading is kept in each phase of a worker's result (its
    #: error, where the reading raised, under ``KEY_error``); None: the setting's name.
    phase_key: str | None = None

    def phase_ended(self, phase: str, last: bool) -> Any:
        """Worker side, where ``phase`` ends, called for every registered setting whatever the cell's (the
        baseline cell is read too): what this setting reads of the process there, or None where it reads
        nothing. ``last``: the phase that ran last, read after the timed work (a costly reading belongs there);
        otherwise the phase ended as another's first iteration started, outside its time."""
        return None

    #: The value that probes this setting's cause against the unchanged workload, if any.
    probe: Any = None
    #: Per-iteration counter (summary field) that moves when this setting is the cause, if any.
    evidence_counter: str | None = None
    #: What the slowdown is when this setting closes a gap (completes "the slowdown is ...");
    #: the verdict names it only when ``evidence_counter`` moved with the gap.
    mechanism: str | None = None

    def facts(self, observed: Any) -> Any:
        """The part of a readback that evidence needs (the full readback stays in the run)."""
        return observed

    def facts_phrase(self, facts: Any) -> str:
        """A few words proving the setting took effect, e.g. "FTZ/DAZ read back on 4/4 threads"."""
        return ""

    def _pairs(self, value: Any, example: str) -> dict[str, Any]:
        """``NAME=VALUE``, ``[A=1,B=2]``, ``none`` (or a dict) as {name: value text}."""
        if isinstance(value, dict):
            return value
        text = str(value).strip()
        if text.lower() in ("", "none", "{}"):
            return {}
        pairs = {}
        for item in _bracketed_items(self.name, value, text):
            name, sep, inner = item.partition("=")
            if not sep:
                raise SettingError(f"{self.name}={value!r}: write {example}")
            pairs[name.strip()] = inner
        return pairs

    def _choice(self, value: Any, choices: tuple[str, ...]) -> str:
        text = str(value).strip().lower()
        if text not in choices:
            raise SettingError(f"{self.name}={value!r}: choose one of {', '.join(choices)}")
        return text


def _bracketed_items(name: str, value: Any, text: str) -> list[str]:
    """The items of ``[A,B,...]`` (or ``[text]`` alone); a bracket error names the setting."""
    if not (text.startswith("[") and text.endswith("]")):
        return [text]
    try:
        return split_values(text[1:-1])
    except SettingError as e:
        raise SettingError(f"{name}={value!r}: {e}") from None


def format_value(value: Any) -> str:
    """A setting's value as ``--set`` writes it: ``"[0,1]"``, ``"[A=1,B=2]"``, ``"none"``, ``"compact"``."""
    if isinstance(value, dict):
        return "[" + ",".join(f"{k}={format_value(v)}" for k, v in value.items()) + "]" if value else "none"
    if isinstance(value, list):
        return "[" + ",".join(str(v) for v in value) + "]"
    return str(value)


class KeptOff(Setting):
    """A process-wide switch of torch's as the workload's code sets it (``code``), or kept off against the
    code's own calls (``off``) by a ``control`` module that offers ``keep_off()``, ``release()``, ``state()``
    (``{"enabled", "kept_off", "refused"}``) and ``is_on()``. A subclass names it, says what it removes
    (``mechanism``) and what one refused call is (``refused_call``, e.g. "call of the code that turned it on").

    :meth:`switch` puts the guard in (``off``) and takes it out again (``code``: ``release()``). Where
    ``keep_off()`` also turns the switch off now, a subclass says what it found there with :meth:`code_state`
    and puts that back with :meth:`restore_code_state`: remembered as the guard goes in, restored as it
    comes out."""

    order = 50  # after torch is imported and the thread settings applied; nothing else depends on it
    needs_torch = True
    in_process = True  # the guard is put in and taken out again in a running process
    unapplied = "code"
    probe = "off"
    control: Any = None
    refused_call = ("call", "of the code that turned it on")
    _saved: Any = None  # code_state() as the guard last went in

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("code", "off"))

    def apply(self, value: str) -> Any:
        return self.switch(value)

    def code_state(self) -> Any:
        """What ``keep_off()`` changes besides putting its guard in, as the code left it (None: nothing)."""
        return None

    def restore_code_state(self, saved: Any) -> None:
        """Put back what :meth:`code_state` read (the guard already taken out)."""

    def switch(self, value: str) -> Any:
        # ``code``: the guard taken out and what keep_off() turned off put back; ``off``: the guard put in.
        # The guard's own state says which value the process holds, so switching to it again changes nothing.
        if value == "off":
            if self.control.state()["kept_off"]:
                return self.control.state()
            self._saved = self.code_state()
            try:
                return self.control.keep_off()
            except BaseException:  # nothing half-applied: the guard out again, the switch as the code left it
                self.control.release()
                self.restore_code_state(self._saved)
                raise
        if self.control.state()["kept_off"]:
            self.control.release()
            self.restore_code_state(self._saved)
        return self.control.state()

    def facts(self, observed: dict) -> dict:
        return {"enabled": observed.get("enabled"), "refused": observed.get("refused")}

    def facts_phrase(self, facts: dict) -> str:
        refused = facts.get("refused")
        if facts.get("enabled") is not False or refused is None:
            return ""
        if not refused:
            return "read back off after the run"
        noun, rest = self.refused_call
        return f"kept off against {refused} {noun}{'s' * (refused != 1)} {rest}"

    def during(self, value: str) -> str | None:
        # Sampled during the timed iterations: "on" if the code switched it on by a way around the guard.
        if value == "code":
            return None
        return "on" if self.control.is_on() else "off"

    def readback(self, value: str) -> dict:
        return self.control.state()


class AroundCalls(Setting):
    """A setting put around each timed call of a user workload (its ``probe`` value) or left as the workload's
    code has it (``code``), by a ``control`` module that offers ``held()`` (whether the calls since the switch
    ended with it holding) and ``state()`` (its readback, counting ``calls`` and those ``held``). A subclass names
    it, its probe, what a held call reads back (``held_words``: "with them detached") and :meth:`switch`."""

    in_process = True  # the context is put around the timed calls and taken out in a running process
    held_by_calls = True  # during() reads the calls since the switch
    unapplied = "code"
    control: Any = None
    held_words = ""

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("code", self.probe))

    def apply(self, value: str) -> Any:
        return self.switch(value)

    def facts(self, observed: dict) -> dict:
        # Whether every timed call held, not how many ran: a time target runs a different count in each process.
        calls = observed.get("calls")
        return {"held": bool(calls) and observed.get("held") == calls}

    def facts_phrase(self, facts: dict) -> str:
        return f"every timed call read back {self.held_words}" if facts.get("held") else ""

    def during(self, value: str) -> str | None:
        # Sampled after every timed iteration: "code" once a call ended without it holding (the code undid it, or
        # nothing wrapped the call: a workload that times itself).
        if value == "code":
            return None
        return self.probe if self.control.held() else "code"

    def readback(self, value: str) -> dict:
        return self.control.state()


def split_values(text: str) -> list[str]:
    """Split on commas that are not inside [...] (so ``pin=[0,1],compact`` is two values)."""
    values, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise SettingError(f"unbalanced ']' in {text!r}")
        elif ch == "," and depth == 0:
            values.append(text[start:i])
            start = i + 1
    if depth:
        raise SettingError(f"unbalanced '[' in {text!r}")
    values.append(text[start:])
    return [v.strip() for v in values]

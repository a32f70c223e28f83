"""Workers forked from an interpreter that has already imported torch: one server per worker environment and round.

Starting a worker from nothing costs its interpreter's start and the import of torch (and
torchvision): 2-4.5 s on the 2-core development machine, 30-40% of a ResNet-50 eval-only
worker, none of it the experiment. A :class:`ForkServer` is an interpreter started once, with
the cell's environment, that imports a workload's :attr:`~benchctl._workloads.Workload.preload`
modules and the worker, and then forks one child per worker; the child runs the job exactly as
``python -m benchctl._run.worker`` would (:func:`benchctl._run.worker.main`).

What keeps each child a fresh process for the experiment:

* the server imports and does nothing else: no torch op runs in it, so no thread pool,
  tensor or allocator state beyond what the import leaves, which every exec'd worker also has
  before its workload starts; glibc's mmap threshold, heap and mapped blocks in a child
  equal an exec'd worker's after the same import (checked by the tests);
* everything a cell sets through the environment, ``LD_PRELOAD`` or the allocator's tunables
  is read when an interpreter starts, so each distinct environment gets its own server
  (:class:`ForkServers`), started with that environment;
* every in-process setting (threads, pinning, FTZ) is applied in the child, as in a worker.

What children of one server share, that exec'd workers would not: the server's address layout
(the heap's, the libraries', the stack's) and Python's hash seed; their page-fault counts come
out identical. That layout moves a process's time as much as anything between processes: with
one server per environment for a whole run, the A/A calibration (``bench/aa_calibration.py``,
two cells that differ only in an unused variable, so two servers) called a difference between
identical cells in 6 of 20 runs (0.72× to 1.10×). So the runner starts new servers for every
round (:meth:`ForkServers.close` after each): the rounds sample layouts as exec'd workers do,
and the workers of one round that share a server are cells of one environment, whose
comparisons that shared layout can only make more alike.

A child is in its own session (its DataLoader workers are killed with it as one group) and dies
with the server, which dies with the runner. The server speaks one JSON line per message on its
stdin and stdout: the runner sends ``{"job", "stdout", "stderr"}``, the server answers
``{"pid"}`` when the child has started and ``{"status"}`` (as :attr:`subprocess.Popen.returncode`)
when it has ended.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time

from ..errors import ExitCode, UnavailableError

__all__ = ["ForkServerError", "ForkServer", "ForkServers", "python_main", "serve", "main"]

# How long a server may take to import its modules before the runner gives up on it.
_READY_TIMEOUT_S = 300.0


def python_main(module: str, *args: str) -> list[str]:
    """The command that runs ``module``'s ``main()`` with ``args`` in a fresh interpreter of this Python.

    Not ``python -m module``: this package's ``__init__`` imports the module before runpy runs it, and runpy
    then warns ("found in sys.modules after import of package ...") on the first line of every worker's
    stderr, the tail a failed worker is reported with."""
    return [sys.executable, "-c", f"import sys; from {module} import main; sys.exit(main())", *args]


class ForkServerError(UnavailableError, RuntimeError):
    """The server died, or never became ready: what it wrote to stderr is in the message. The runner catches it
    (the worker fails, or the run's workers start their own interpreters): it is this machine's, not the request's."""


class ForkServer:
    """One server process, started with ``env``, preloading ``modules``; :meth:`start` forks a worker."""

    def __init__(self, modules: tuple[str, ...], env: dict[str, str], stderr_path: str) -> None:
        self.modules, self.stderr_path = tuple(modules), stderr_path
        self.workers = 0  # forked so far
        started = time.perf_counter()
        with open(stderr_path, "wb") as err:
            # Its own session: a terminal's Ctrl-C reaches the runner only, which then closes it.
            # Unbuffered: a message read ahead into a buffer would be invisible to select() in _message.
            self.proc = subprocess.Popen(python_main(__name__, *self.modules), env=env,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, bufsize=0,
                                         start_new_session=True)
        self.ready = self._message(_READY_TIMEOUT_S, "become ready")
        if self.ready is None:
            raise self._died(f"become ready within {_READY_TIMEOUT_S:.0f} s")
        self.start_s = time.perf_counter() - started

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _died(self, doing: str) -> ForkServerError:
        self.close()
        try:
            with open(self.stderr_path, "rb") as f:
                tail = f.read()[-2000:].decode("utf-8", "replace").strip()
        except OSError:
            tail = ""
        return ForkServerError(f"the fork server ({', '.join(self.modules)}) did not {doing}: exit status "
                               f"{self.proc.returncode}" + (f"; its stderr ends: {tail}" if tail else ""))

    def _message(self, timeout_s: float | None, doing: str) -> dict | None:
        """The server's next message; None when ``timeout_s`` passed first. A dead server raises."""
        if timeout_s is not None:
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, timeout_s))
            if not ready:
                return None
        line = self.proc.stdout.readline()
        if not line:
            raise self._died(doing)
        return json.loads(line)

    def start(self, job: str, stdout: str, stderr: str) -> int:
        """Fork a worker on the job file ``job``, its output going to the two paths; its pid."""
        try:
            self.proc.stdin.write((json.dumps({"job": job, "stdout": stdout, "stderr": stderr}) + "\n").encode())
        except (BrokenPipeError, ValueError):
            raise self._died("take a job") from None
        self.workers += 1
        return int(self._message(None, "fork a worker")["pid"])

    def wait(self, timeout_s: float | None) -> int | None:
        """The worker's exit status (as Popen's returncode); None when ``timeout_s`` passed first."""
        message = self._message(timeout_s, "report its worker's exit")
        return None if message is None else int(message["status"])

    def close(self) -> None:
        """End the server (its children die with it)."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                stream.close()


class ForkServers:
    """The servers of one run, one per distinct environment, started at their first worker; closed together."""

    def __init__(self, workdir: str) -> None:
        self.workdir = workdir
        self._servers: dict[tuple, ForkServer] = {}

    def get(self, modules: tuple[str, ...], env: dict[str, str]) -> ForkServer:
        key = (tuple(modules), tuple(sorted(env.items())))
        if key in self._servers and self._servers[key].proc.poll() is not None:
            del self._servers[key]  # it died (and failed its worker): the next worker gets a new one
        if key not in self._servers:
            path = os.path.join(self.workdir, f"forkserver-{len(self._servers)}.stderr.txt")
            self._servers[key] = ForkServer(modules, env, path)
        return self._servers[key]

    def close(self) -> None:
        for server in self._servers.values():
            server.close()
        self._servers.clear()

    def __enter__(self) -> "ForkServers":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --- the server's side ------------------------------------------------------------


def _child(request: dict, protocol: tuple[int, int]) -> None:
    """In the forked child: become a worker on ``request``'s job, as an exec'd one would be; never returns."""
    status = int(ExitCode.INTERNAL_ERROR)
    try:
        os.setsid()
        for fd in protocol:
            os.close(fd)
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for fd, target in ((null, 0), (out, 1), (err, 2)):
            os.dup2(fd, target)
            os.close(fd)
        from . import worker

        status = worker.main([request["job"]])
    except BaseException:  # noqa: BLE001  (whatever it was, the child must not return into the server's loop)
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(status)


def serve(modules: list[str], inbox: int, outbox: int) -> int:
    """Import ``modules``, say ready on ``outbox``, then fork a worker per request read from ``inbox``."""
    from . import worker

    worker.die_with_parent()
    started = time.perf_counter()
    for module in modules:
        __import__(module)
    from .. import _workloads as workloads

    workloads.names()  # the built-in workloads' modules, as each exec'd worker imports them
    reader = os.fdopen(inbox, "rb")

    def say(message: dict) -> None:
        os.write(outbox, (json.dumps(message) + "\n").encode())

    say({"ready": True, "pid": os.getpid(), "import_s": time.perf_counter() - started})
    while True:
        line = reader.readline()
        if not line:
            return 0  # the runner closed its end: the run is over
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request, (inbox, outbox))
        say({"pid": pid})
        _, status = os.waitpid(pid, 0)
        say({"status": os.waitstatus_to_exitcode(status)})


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # The protocol gets the pipes; fd 0 and 1 then point elsewhere, so that nothing an import prints
    # can corrupt it (the children redirect their own).
    inbox, outbox = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    return serve(argv, inbox, outbox)


if __name__ == "__main__":
    sys.exit(main())

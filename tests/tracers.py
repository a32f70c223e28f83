"""A Python function and a trace function that counts its calls: what the tracing tests trace."""

import threading


def marker():
    """A Python function whose calls :func:`counting_tracer` counts."""
    return 1


def counting_tracer():
    """A trace function counting the calls of :func:`marker` (by thread), and the list it counts them in."""
    seen = []

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code is marker.__code__:
            seen.append(threading.get_ident())
        return None

    return tracer, seen

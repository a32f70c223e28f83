from ._cli import run

run()

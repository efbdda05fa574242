from devicelint import collector

collector.start_up()  # before the command line's imports too (click, dataclasses, typing)

from devicelint.cli import run  # noqa: E402

run()

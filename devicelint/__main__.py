from devicelint.cli import run

run()

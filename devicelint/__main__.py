"""The program: `python -m devicelint` and the `devicelint` console script."""

from devicelint import collector


def main() -> None:
    collector.start_up()  # before the command line's imports too (click, dataclasses, typing)
    from devicelint.cli import run

    run()


if __name__ == "__main__":
    main()

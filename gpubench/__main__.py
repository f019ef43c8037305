"""Entry point for `python -m gpubench`."""

from gpubench.cli import main

if __name__ == "__main__":
    main()

"""Plays of Shakespeare as one text (public domain, under 1 MB), shipped inside the package.

Source, licence and how ``shakespeare.txt`` was cut: ``SHAKESPEARE_LICENSE.txt`` next to it.
"""

from __future__ import annotations

from importlib import resources


def load_shakespeare() -> str:
    """The text of ``shakespeare.txt``: 999,985 characters of dialogue, 65 distinct ones.

    >>> text = load_shakespeare()
    >>> len(text), text[:14]
    (999985, 'First Citizen:')
    """
    return resources.files(__package__).joinpath("shakespeare.txt").read_text(encoding="utf-8")

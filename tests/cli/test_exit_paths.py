"""How the CLI ends when something outside it fails: a closed pipe is quiet, a refused write is one error."""

from __future__ import annotations

import os
import sys

from zocrates_nb.cli import main


def test_a_closed_pipe_ends_quietly_and_is_not_blamed_on_the_disk(demo_home, monkeypatch, capsys):
    read_end, write_end = os.pipe()
    os.close(read_end)  # `zocrates-nb search … | head` after head has exited
    closed = os.fdopen(write_end, "w", buffering=1)
    monkeypatch.setattr(sys, "stdout", closed)
    assert main(["--data-dir", str(demo_home), "search", "Harmony", "--mode", "lexical", "--k", "50"]) == 0
    assert "cannot be written" not in capsys.readouterr().err
    try:
        closed.close()
    except BrokenPipeError:
        pass  # its buffer could not be flushed either: that is the point

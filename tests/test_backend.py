"""The backend: no global side effect on import; the malloc opt-in."""

import subprocess
import sys
import textwrap


def test_import_leaves_malloc_alone():
    # Record every mallopt call made through ctypes while scratchgrad (and all it imports) loads.
    probe = textwrap.dedent(
        """
        import ctypes
        calls = []
        real_cdll = ctypes.CDLL

        class Recording(real_cdll):
            def __getattr__(self, name):
                if name == "mallopt":
                    return lambda *args: calls.append(args) or 1
                return super().__getattr__(name)

        ctypes.CDLL = Recording
        import scratchgrad, scratchgrad.nn, scratchgrad.optim, scratchgrad.train
        print(len(calls))
        from scratchgrad.backend import keep_freed_memory
        keep_freed_memory()
        print(len(calls))
        """
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "2"]  # none on import; the opt-in sets both thresholds


def test_the_examples_in_the_doc_strings_run():
    # in a process of their own: keep_freed_memory's example changes malloc for the process
    probe = "import doctest, sys; from scratchgrad import backend; print(doctest.testmod(backend))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert "failed=0" in out.stdout and "attempted=0" not in out.stdout, out.stdout

"""The compile worker process (run by ``compiler.py``, at idle priority from its first
instruction).

Reads pickled jobs ``(id, cache_dir, module name, source, signature)`` from stdin until it
closes, compiles each kernel into the disk cache, and answers ``(id, error, seconds, compiled)``
on stdout; ``seconds`` is the compile's CPU time, since this process runs only on idle cores and
its wall time says more about the parent's load than about the compile. It keeps compiling
after its parent has gone (answers then go nowhere), so a later process finds the kernels on disk.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
import time


def main() -> None:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not corrupt answers
    from fusedml._config import config
    from fusedml.codegen.cache import load_module
    from fusedml.codegen.compiler import compile_now

    jobs = sys.stdin.buffer
    while True:
        try:
            jid, cache_dir, _name, source, sig = pickle.load(jobs)
        except EOFError:
            return
        start = time.process_time()
        try:
            with config(cache_dir=cache_dir):
                compiled = compile_now(load_module(source).chunk, sig)
            answer = (jid, None, time.process_time() - start, compiled)
        except Exception as exc:  # the parent compiles it itself and reports the failure
            answer = (jid, f"{type(exc).__name__}: {exc}", time.process_time() - start, False)
        with contextlib.suppress(OSError, ValueError):
            pickle.dump(answer, answers)
            answers.flush()


if __name__ == "__main__":
    main()

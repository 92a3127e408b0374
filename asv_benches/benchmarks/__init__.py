import os

# benchmarks time kernels: they compile in-process before the timing (the background tier, a
# user's default, is measured by coldstart.py, which asks for it)
os.environ.setdefault("FUSEDML_COMPILE", "eager")

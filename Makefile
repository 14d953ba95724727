# Two commands set everything up on a fresh machine: `make demo` and `make test`.
VENV := .venv
PY := $(VENV)/bin/python

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.core: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e ".[plot,viz]"  # the demo draws its curves
	touch $@

$(VENV)/.test: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e ".[test]"
	touch $@

$(VENV)/.bench: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e ".[test,bench]"
	touch $@

.PHONY: demo test lint bench
demo: $(VENV)/.core
	$(VENV)/bin/scratchgrad train --jit  # the step recorded, then replayed: less CPU, same accuracy

lint: $(VENV)/.test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# One worker per core (pytest-xdist), each with one BLAS and one OpenMP thread: idle BLAS and
# PyTorch threads spin, so two threaded workers on two cores took as long as one (869 s
# against 537 s for the suite).
test: lint
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $(PY) -m pytest -n auto --dist worksteal

bench: $(VENV)/.bench
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(PY) benchmarks/run.py
	cd benchmarks && env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ../$(PY) amp.py
